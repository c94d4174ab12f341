//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written out.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use yamor_local::{LocalCluster, write_outputs};

use crate::cluster::{RunOptions, print_run};

#[derive(Args)]
pub struct RunArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    #[command(flatten)]
    spec: RunOptions,
    /// Simulation hosts to start (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Output directory for best_gait.xml, evaluations.csv, progress.png and yamor.db.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

pub async fn run(args: RunArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let hosts = yamor_local::default_hosts(args.hosts);
    let mut spec = args.spec.spec(&args.robot, yamor_local::GAIT_RUN_BUDGET)?;
    if matches!(
        spec.problem,
        yamor_organizer::model::Problem::OptimizationXml(_)
    ) {
        yamor_local::gait_run_settings(&spec.optimizer, &mut spec.settings);
    }
    let db = args.out.join("yamor.db");
    let cluster = LocalCluster::start(&args.robot, hosts, &db).await?;
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
    write_outputs(&organizer, &final_run, &args.out)?;
    cluster.shutdown().await;
    Ok(())
}
