//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written to the run's directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use yamor_local::{RunRobot, write_outputs};

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

pub async fn run(args: RunArgs) -> Result<()> {
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => yamor_local::new_run_dir(&args.robot)?,
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let hosts = yamor_local::default_hosts(args.hosts);
    let robot = RunRobot::load(&args.robot)?;
    let mut spec = args.spec.spec_on(
        robot.source(),
        || robot.default_problem(),
        yamor_local::GAIT_RUN_BUDGET,
    )?;
    let cluster = robot.start_cluster(hosts, &out.join("yamor.db")).await?;
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
    let walks = yamor_local::Walks {
        robot: &args.robot,
        warmup: args.spec.warmup,
        measure: args.spec.measure,
    };
    write_outputs(&organizer, &final_run, &out, walks)?;
    eprintln!("outputs in {}", out.display());
    cluster.shutdown().await;
    Ok(())
}
