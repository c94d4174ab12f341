//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written out.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use yamor_local::{LocalCluster, write_outputs};

use crate::cluster::{RunSpecArgs, print_run};

#[derive(Args)]
pub struct RunArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    #[command(flatten)]
    spec: RunSpecOverrides,
    /// Simulation hosts to start (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Output directory for best_gait.xml, evaluations.csv, progress.png and yamor.db.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// The run options of `optimize start`, minus the robot (given positionally).
#[derive(Args)]
pub struct RunSpecOverrides {
    #[arg(long, default_value = "pso")]
    optimizer: String,
    #[arg(
        long,
        help = "Optimization configuration (yamorconfig with <optimize> rules)"
    )]
    config: Option<PathBuf>,
    #[arg(long = "set", help = "Optimizer setting name=value (repeatable)")]
    settings: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Maximum evaluations; the default finishes in about a minute on two cores.
    #[arg(long, default_value_t = 480)]
    budget: u64,
    /// Maximum seconds (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    time: f64,
}

pub async fn run(args: RunArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let hosts = yamor_local::default_hosts(args.hosts);
    let spec = RunSpecArgs {
        optimizer: args.spec.optimizer.clone(),
        robot: args.robot.clone(),
        config: args.spec.config.clone(),
        param: vec![],
        settings: args.spec.settings.clone(),
        seed: args.spec.seed,
        budget: args.spec.budget,
        time: args.spec.time,
        warmup: 8.0,
        measure: 12.0,
        name: None,
        on: None,
    };
    let spec = spec.spec()?;
    let db = args.out.join("yamor.db");
    let cluster = LocalCluster::start(&args.robot, hosts, &db).await?;
    let organizer = cluster.organizer.clone();
    let run = organizer.runs.start(spec).await?;
    eprintln!(
        "run {} ({}) on {hosts} local simulation host(s); Ctrl-C stops and keeps what was found",
        run.id, run.optimizer
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
