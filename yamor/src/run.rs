//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written to the run's directory.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_local::shared::Claim;
use yamor_local::{RunRobot, write_outputs};
use yamor_organizer::model::RunState;

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
    let made_out = !out.exists();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let claim = match hold_database(args.db.as_deref(), &out).await {
        Ok(claim) => claim,
        Err(e) => {
            if made_out {
                let _ = std::fs::remove_dir_all(&out);
            }
            return Err(e);
        }
    };
    let started = start(&robot, hosts, &claim.path, spec).await;
    let (cluster, run) = match started {
        Ok(started) => started,
        Err(e) => {
            if made_out {
                let _ = std::fs::remove_dir_all(&out);
            }
            return Err(e);
        }
    };
    eprintln!(
        "run {} ({}) on {hosts} local simulation host(s); Ctrl-C stops and keeps what was found\nwatch it at {}/runs/{}",
        run.id, run.optimizer, cluster.dashboard, run.id
    );
    let organizer = cluster.organizer.clone();
    let run_id = run.id;
    let runs = organizer.runs.clone();
    let (interrupted_tx, interrupted) = tokio::sync::oneshot::channel();
    let interrupt = tokio::spawn(async move {
        crate::net::shutdown_signal().await;
        eprintln!("\nstopping; keeping what was found");
        let _ = interrupted_tx.send(());
        let _ = runs.stop(run_id);
    });
    let final_run = cluster.follow(run_id).await?;
    interrupt.abort();
    print_run(&final_run);
    let failures = yamor_local::failures(&organizer, run_id).await?;
    if final_run.state == RunState::Failed {
        cluster.shutdown().await;
        if made_out {
            let _ = std::fs::remove_dir_all(&out);
        }
        bail!("run {run_id} failed: {}", final_run.error);
    }
    if let Some(first) = &failures.first {
        eprintln!(
            "{} of {} evaluations failed; the first: {first}",
            failures.count, final_run.evaluations
        );
    }
    let walks = yamor_local::Walks {
        robot: &args.robot,
        warmup: args.spec.warmup,
        measure: args.spec.measure,
        worlds: args.spec.worlds,
        direction: args.spec.direction,
    };
    write_outputs(&organizer, &final_run, &out, walks)?;
    yamor_local::write_map(&organizer, &final_run, &out).await?;
    eprintln!("outputs in {}", out.display());
    cluster.shutdown().await;
    let stopped = final_run.state == RunState::Stopped && interrupted.await.is_ok();
    Ok(stopped.then_some(EXIT_STOPPED))
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

/// The local cluster and the run started on it.
async fn start(
    robot: &RunRobot,
    hosts: usize,
    db: &std::path::Path,
    spec: yamor_organizer::model::RunSpec,
) -> Result<(yamor_local::LocalCluster, yamor_organizer::model::Run)> {
    let cluster = robot.start_cluster(hosts, db).await?;
    match cluster.organizer.runs.start(spec).await {
        Ok(run) => Ok((cluster, run)),
        Err(e) => {
            cluster.shutdown().await;
            Err(e.into())
        }
    }
}
