//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written to the run's directory.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_local::shared::Claim;
use yamor_local::{RunRobot, write_outputs};
use yamor_organizer::model::{Run, RunSpec, RunState};

use yamor_organizer::cli::{RunOptions, print_run};

#[derive(Args)]
pub struct RunArgs {
    /// An embedded example (see `yamor robots`), a morphology XML file with
    /// gait.xml beside it, or a directory holding world.xml and gait.xml
    /// (and optimize.xml, used unless --config is given).
    #[arg(default_value = "quadruped")]
    robot: String,
    #[command(flatten)]
    spec: RunOptions,
    /// Runs of the same robot and settings side by side on the hosts,
    /// seeds --seed, --seed+1, …: each writes its outputs to OUT/seed-N,
    /// and the report gives the spread of their held-out figures, whether
    /// one run's answer on this robot depends on its seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: u64,
    /// Simulation hosts to start (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Directory for best_gait.xml, evaluations.csv and progress.png
    /// (default: a new one under $YAMOR_RUNS, else ~/.local/share/yamor/runs).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The database the run is recorded in (default: the one every
    /// `yamor run` shares, yamor.db under $YAMOR_RUNS or
    /// ~/.local/share/yamor/runs; while another `yamor run` holds it, a
    /// yamor.db of the run's own directory).
    #[arg(long)]
    db: Option<PathBuf>,
}

/// The most seeds one `yamor run` takes: each is a live optimizer on the
/// same hosts.
const MAX_SEEDS: u64 = 20;

/// What `yamor run` exits with when Ctrl-C stopped the run (128 + SIGINT,
/// as shells report an interrupted command), after writing what it found.
pub const EXIT_STOPPED: i32 = 130;

/// Runs the optimization; `Ok(Some(code))` asks the process to exit with
/// `code` once everything is written (a run stopped by Ctrl-C).
pub async fn run(args: RunArgs) -> Result<Option<i32>> {
    // Everything that can refuse the run is checked before its directory
    // exists, so a refused start leaves nothing behind.
    let hosts = yamor_local::default_hosts(args.hosts);
    let robot = RunRobot::load(&args.robot)?;
    let mut spec = yamor_local::cli::run_spec_on(&args.spec, &robot, yamor_local::GAIT_RUN_BUDGET)?;
    yamor_local::check_run(&spec)?;
    // The seeds count up as a batch's do, and are refused as a batch's are.
    let seeds: Vec<u64> = yamor_organizer::model::batch_seeds(spec.seed, args.seeds as usize)
        .with_context(|| format!("--seeds {}", args.seeds))?
        .collect();
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => yamor_local::new_run_dir(&args.robot)?,
    };
    if spec.name.is_empty() {
        // The run's name in the shared database is its directory's.
        spec.name = out
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    }
    let direction = spec.direction;
    let specs = seeded(spec, &seeds);
    let made_out = !out.exists();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let forget_out = || {
        if made_out {
            let _ = std::fs::remove_dir_all(&out);
        }
    };
    let claim = match hold_database(args.db.as_deref(), &out).await {
        Ok(claim) => claim,
        Err(e) => {
            forget_out();
            return Err(e);
        }
    };
    let (cluster, runs) = match start(&robot, hosts, &claim.path, specs).await {
        Ok(started) => started,
        Err(e) => {
            forget_out();
            return Err(e);
        }
    };
    let ids: Vec<u64> = runs.iter().map(|r| r.id).collect();
    let listed: Vec<String> = ids.iter().map(u64::to_string).collect();
    eprintln!(
        "run {} ({}) on {hosts} local simulation host(s); Ctrl-C stops and keeps what was found\nwatch it at {}/runs/{}",
        listed.join(", "),
        runs[0].optimizer,
        cluster.dashboard,
        ids[0]
    );
    let organizer = cluster.organizer.clone();
    let (interrupted_tx, interrupted) = tokio::sync::oneshot::channel();
    let interrupt = {
        let runs = organizer.runs.clone();
        let ids = ids.clone();
        tokio::spawn(async move {
            crate::net::shutdown_signal().await;
            eprintln!("\nstopping; keeping what was found");
            let _ = interrupted_tx.send(());
            for id in ids {
                let _ = runs.stop(id);
            }
        })
    };
    let mut ended = Vec::with_capacity(ids.len());
    for &id in &ids {
        ended.push(cluster.follow(id).await?);
    }
    interrupt.abort();
    let walks = yamor_local::Walks {
        robot: &args.robot,
        warmup: args.spec.warmup,
        measure: args.spec.measure,
        worlds: args.spec.worlds,
        direction,
    };
    let mut failed = Vec::new();
    for run in &ended {
        // With one seed the outputs are the directory's own, as always.
        let dir = if ended.len() == 1 {
            out.clone()
        } else {
            out.join(format!("seed-{}", run.seed))
        };
        match report(&organizer, run, &dir, walks).await {
            Ok(()) => {}
            Err(e) if ended.len() == 1 => {
                cluster.shutdown().await;
                forget_out();
                return Err(e);
            }
            Err(e) => {
                eprintln!("seed {}: {e:#}", run.seed);
                failed.push(run.seed);
            }
        }
    }
    if ended.len() > 1 {
        match yamor_local::seeds::SeedSpread::of(&ended) {
            Some(spread) => eprintln!("{spread}"),
            None => eprintln!(
                "fewer than two seeds earned a held-out figure: nothing to say about how the answer depends on the seed"
            ),
        }
    }
    eprintln!("outputs in {}", out.display());
    cluster.shutdown().await;
    if !failed.is_empty() {
        bail!(
            "the runs of seed(s) {failed:?} failed (above); the others' outputs are in {}",
            out.display()
        );
    }
    let stopped = ended.iter().any(|r| r.state == RunState::Stopped) && interrupted.await.is_ok();
    Ok(stopped.then_some(EXIT_STOPPED))
}

/// `spec` once per seed of `seeds` (its own first), each named after its
/// seed when there are several.
fn seeded(spec: RunSpec, seeds: &[u64]) -> Vec<RunSpec> {
    if seeds.len() == 1 {
        return vec![spec];
    }
    seeds
        .iter()
        .map(|&seed| {
            let mut one = spec.clone();
            one.name = format!("{}-seed-{seed}", spec.name);
            one.seed = seed;
            one.spec.seed = seed;
            one
        })
        .collect()
}

/// One ended run's report and files in `dir`: its row, its failures, its
/// best gait, evaluations and plot; a failed run is an error.
async fn report(
    organizer: &yamor_organizer::Organizer,
    run: &Run,
    dir: &std::path::Path,
    walks: yamor_local::Walks<'_>,
) -> Result<()> {
    print_run(run);
    let failures = yamor_local::failures(organizer, run.id).await?;
    if run.state == RunState::Failed {
        bail!("run {} failed: {}", run.id, run.error);
    }
    if let Some(first) = &failures.first {
        eprintln!(
            "{} of {} evaluations failed; the first: {first}",
            failures.count, run.evaluations
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_outputs(organizer, run, dir, walks)?;
    yamor_local::write_map(organizer, run, dir).await?;
    Ok(())
}

/// The database this run records into, held for the run: `--db`, else
/// the shared one, else (another `yamor run` holds that) one in `out`;
/// in those two, what an ended `yamor run` left running is ended first.
async fn hold_database(db: Option<&std::path::Path>, out: &std::path::Path) -> Result<Claim> {
    if let Some(db) = db {
        // A database chosen by name may be an organizer's: what it recorded
        // running resumes when that organizer starts again, so it is left.
        let claim = Claim::try_hold(db)?.with_context(|| {
            format!(
                "{} is in use by another yamor process; pass another --db",
                db.display()
            )
        })?;
        eprintln!("recording into {}", claim.path.display());
        return Ok(claim);
    }
    let claim = {
        let shared = yamor_local::shared::shared_database();
        match Claim::try_hold(&shared)? {
            Some(claim) => claim,
            None => {
                let own = out.join("yamor.db");
                eprintln!(
                    "{} is in use by another yamor run; this run records into {}",
                    shared.display(),
                    own.display()
                );
                Claim::try_hold(&own)?.context("holding the run's own database")?
            }
        }
    };
    // What an earlier `yamor run` left running there ended with it: its
    // hosts are gone, and this process's may walk another robot.
    yamor_local::shared::end_orphans(&claim).await?;
    eprintln!("recording into {}", claim.path.display());
    Ok(claim)
}

/// The local cluster and the runs started on it, one per spec.
async fn start(
    robot: &RunRobot,
    hosts: usize,
    db: &std::path::Path,
    specs: Vec<RunSpec>,
) -> Result<(yamor_local::LocalCluster, Vec<Run>)> {
    let cluster = robot.start_cluster(hosts, db).await?;
    let mut runs = Vec::with_capacity(specs.len());
    for spec in specs {
        match cluster.organizer.runs.start(spec).await {
            Ok(run) => runs.push(run),
            Err(e) => {
                for run in &runs {
                    let _ = cluster.organizer.runs.stop(run.id);
                }
                cluster.shutdown().await;
                return Err(e.into());
            }
        }
    }
    Ok((cluster, runs))
}
