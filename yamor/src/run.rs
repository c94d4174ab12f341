//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written to the run's directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use yamor_core::evaluation::RobotSource;
use yamor_host_agent::sim::SimBackend;
use yamor_local::{LocalCluster, write_outputs};
use yamor_sim::robots::ExampleRobot;

use crate::cluster::{RunOptions, print_run};

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
    /// Directory for best_gait.xml, evaluations.csv, progress.png and
    /// yamor.db (default: a new one under $YAMOR_RUNS, else
    /// ~/.local/share/yamor/runs).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Where runs go when no --out is given: never the current directory,
/// which is often a checkout.
fn runs_home() -> PathBuf {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = env("YAMOR_RUNS") {
        return dir.into();
    }
    if let Some(data) = env("XDG_DATA_HOME") {
        return PathBuf::from(data).join("yamor/runs");
    }
    match env("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/yamor/runs"),
        None => PathBuf::from("yamor-runs"),
    }
}

/// A fresh directory named after the robot and the time (UTC).
fn new_run_dir(robot: &str) -> Result<PathBuf> {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .context("formatting the time")?;
    let label: String = Path::new(robot)
        .file_stem()
        .map_or_else(|| "robot".into(), |s| s.to_string_lossy().into_owned())
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let base = runs_home().join(format!("{label}-{stamp}"));
    let mut dir = base.clone();
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = PathBuf::from(format!("{}-{n}", base.display()));
    }
    Ok(dir)
}

pub async fn run(args: RunArgs) -> Result<()> {
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => new_run_dir(&args.robot)?,
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let hosts = yamor_local::default_hosts(args.hosts);
    let db = out.join("yamor.db");
    let (cluster, mut spec) = if ExampleRobot::named(&args.robot).is_some() {
        let spec = args.spec.spec(&args.robot, yamor_local::GAIT_RUN_BUDGET)?;
        (LocalCluster::start(&args.robot, hosts, &db).await?, spec)
    } else {
        // The user's own robot: every local host walks it, so jobs name
        // the host's robot rather than carry the document.
        let (morphology, gait) = yamor_sim::robots::load(&args.robot, None)
            .with_context(|| format!("loading the robot {}", args.robot))?;
        let beside = robot_dir(&args.robot).join("optimize.xml");
        let spec = args.spec.spec_on(
            RobotSource::Default,
            || {
                if beside.exists() {
                    Ok(yamor_core::read_xml_file(&beside)?)
                } else {
                    Ok(yamor_local::generic_optimization(
                        &args.robot,
                        gait.clone(),
                    )?)
                }
            },
            yamor_local::GAIT_RUN_BUDGET,
        )?;
        let name = args.robot.clone();
        let cluster = LocalCluster::start_with(hosts, &db, |_| {
            Ok(Arc::new(SimBackend::new(
                name.clone(),
                morphology.clone(),
                gait.clone(),
                Default::default(),
            )))
        })
        .await?;
        (cluster, spec)
    };
    if matches!(
        spec.problem,
        yamor_organizer::model::Problem::OptimizationXml(_)
    ) {
        yamor_local::gait_run_settings(&spec.optimizer, &mut spec.settings);
    }
    let organizer = cluster.organizer.clone();
    let run = organizer.runs.start(spec).await?;
    eprintln!(
        "run {} ({}) on {hosts} local simulation host(s); Ctrl-C stops and keeps what was found\nwatch it at {}/runs/{}",
        run.id, run.optimizer, cluster.dashboard, run.id
    );
    let run_id = run.id;
    let runs = organizer.runs.clone();
    let interrupt = tokio::spawn(async move {
        crate::net::shutdown_signal().await;
        eprintln!("\nstopping; keeping what was found");
        let _ = runs.stop(run_id);
    });
    let final_run = cluster.follow(run_id).await?;
    interrupt.abort();
    print_run(&final_run);
    write_outputs(&organizer, &final_run, &out)?;
    eprintln!("outputs in {}", out.display());
    cluster.shutdown().await;
    Ok(())
}

/// The directory a user's robot lives in.
fn robot_dir(robot: &str) -> PathBuf {
    let path = Path::new(robot);
    if path.is_dir() {
        path.to_owned()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_owned()
    }
}
