//! `yamor`: the command line of the yamor cluster. Thin glue over the
//! library crates; see `yamor --help`.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use yamor_core::evaluation::EvaluationSpec;
use yamor_core::{Morphology, RobotConfig};
use yamor_sim::robots::EXAMPLES;
use yamor_sim::{SimSettings, evaluate, write_trajectory_csv};

#[derive(Parser)]
#[command(name = "yamor", version, about = "Teach modular YaMoR robots to walk")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

mod camera;
mod cluster;
mod net;
mod robot;
mod run;

#[derive(Subcommand)]
enum ExperimentCommand {
    /// Figs 6.3 and 6.5-6.7: velocity over outer offset x inner-outer phase lag, with Powell paths.
    Surface(yamor_experiments::surface::SurfaceArgs),
    /// Fig 6.8: a seven-parameter Powell timeline (parameters and velocity per evaluation).
    Timeline(yamor_experiments::powell::TimelineArgs),
    /// Fig 6.12: classic against regular-interval Powell from ten starting points.
    Compare(yamor_experiments::powell::CompareArgs),
    /// Experiment 5: wall-clock time to a good quadruped gait over several seeds.
    GaitTime(yamor_experiments::gait_time::GaitTimeArgs),
}

#[derive(Subcommand)]
enum LifelongCommand {
    /// Fig 7.4: the 7.5.1 transformation, a new CPG network, relearning.
    Transform(yamor_lifelong::scenarios::ScenarioArgs),
    /// 7.5.2: a fall onto the back, learning to walk upside down, and back.
    UpsideDown(yamor_lifelong::scenarios::ScenarioArgs),
    /// Slippery ground and back, twice: the second time, stored gaits.
    Ground {
        #[command(flatten)]
        args: yamor_lifelong::scenarios::ScenarioArgs,
        /// The slippery ground's friction coefficient (the floor's is 0.8).
        #[arg(long, default_value_t = 0.02)]
        slippery: f64,
    },
    /// The gaits database of an organizer's SQLite file (thesis 7.8.2).
    Gaits(yamor_lifelong::scenarios::GaitsArgs),
}

#[derive(Subcommand)]
enum Command {
    /// Optimize a gait on this machine: organizer, SQLite file and one simulation host per core in one process.
    Run(run::RunArgs),
    /// Serve the organizer: hosts, job queue, optimizer runs, persistence.
    Organizer(cluster::OrganizerArgs),
    /// Serve one host (a simulated robot or an expression) and register with an organizer.
    Host(cluster::HostArgs),
    /// Lifelong learning scenarios (thesis chapter 7).
    #[command(subcommand)]
    Lifelong(LifelongCommand),
    /// Reproduce thesis experiments on this machine.
    #[command(subcommand)]
    Experiment(ExperimentCommand),
    /// Measure the scheduler: throughput and PSO speed-up with expression hosts.
    BenchCluster(yamor_experiments::bench_cluster::BenchClusterArgs),
    /// The LED tracker: watch, calibrate, or emulate a CamApp.
    #[command(subcommand)]
    Camera(camera::CameraCommand),
    /// An emulated robot behind a pseudo-terminal, for `yamor host --serial`.
    Emulate(robot::EmulateArgs),
    /// Our optimizers on sphere, Rosenbrock and Rastrigin through expression hosts (for bench/peers).
    BenchPeers(yamor_experiments::bench_peers::BenchPeersArgs),
    /// Time ConnectRobot (thesis 5.2.1) on an emulated robot with real timing.
    BenchSerial(yamor_experiments::bench_serial::BenchSerialArgs),
    /// Manage the organizer's hosts.
    Hosts {
        #[command(flatten)]
        client: net::ClientOpts,
        #[command(subcommand)]
        command: cluster::HostsCommand,
    },
    /// Start, batch-start, list, stop and watch optimizer runs.
    Optimize {
        #[command(flatten)]
        client: net::ClientOpts,
        #[command(subcommand)]
        command: cluster::OptimizeCommand,
    },
    /// List and watch jobs.
    Jobs {
        #[command(flatten)]
        client: net::ClientOpts,
        #[command(subcommand)]
        command: cluster::JobsCommand,
    },
    /// Walk a robot with a gait, print its velocity (thesis 6.2.1) and write the trajectory as CSV.
    Sim(SimArgs),
    /// Serve the simulated robot as a YaMoR Webots Bridge over TCP (thesis 5.4).
    Bridge(BridgeArgs),
    /// Measure simulation speed on the quadruped: steps per second and real-time factor.
    Bench(yamor_experiments::bench_sim::BenchSimArgs),
    /// List the embedded example robots.
    Robots,
}

#[derive(Args)]
struct RobotArgs {
    /// An embedded example (quadruped, snake, trebuchet, dog, wheel) or a morphology XML file.
    #[arg(default_value = "quadruped")]
    robot: String,
    /// Gait (yamorconfig XML); defaults to the example's gait or `gait.xml` beside the morphology file.
    #[arg(long)]
    gait: Option<PathBuf>,
    /// Physics step and firmware tick in seconds.
    #[arg(long, default_value_t = yamor_sim::sim::DEFAULT_DT)]
    dt: f64,
    /// Ground friction coefficient.
    #[arg(long, default_value_t = 0.8)]
    friction: f64,
    /// Seed of the oscillators' initial phases.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

impl RobotArgs {
    fn settings(&self) -> SimSettings {
        SimSettings {
            dt: self.dt,
            ground_friction: self.friction,
            seed: self.seed,
            ..SimSettings::default()
        }
    }

    fn load(&self) -> Result<(Morphology, RobotConfig)> {
        Ok(yamor_sim::robots::load(&self.robot, self.gait.as_deref())?)
    }
}

#[derive(Args)]
struct SimArgs {
    #[command(flatten)]
    robot: RobotArgs,
    /// Length of the walk in seconds; the velocity is measured from 8 s to the end.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Where to write the trajectory of the central module.
    #[arg(long, default_value = "trajectory.csv")]
    csv: PathBuf,
}

#[derive(Args)]
struct BridgeArgs {
    #[command(flatten)]
    robot: RobotArgs,
    /// Address to listen on (the thesis' bridge used port 2223).
    #[arg(long, default_value = "127.0.0.1:2223")]
    listen: String,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // The one-process run draws a progress bar; routine logs would tear it.
    let default_filter = match cli.command {
        Command::Run(_)
        | Command::BenchCluster(_)
        | Command::Experiment(_)
        | Command::BenchSerial(_)
        | Command::BenchPeers(_)
        | Command::Lifelong(_) => "warn",
        _ => "info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let async_main = |f: std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>>>>| {
        tokio::runtime::Runtime::new()?.block_on(f)
    };
    match cli.command {
        Command::Run(args) => async_main(Box::pin(run::run(args))),
        Command::Experiment(command) => async_main(match command {
            ExperimentCommand::Surface(args) => Box::pin(yamor_experiments::surface::surface(args)),
            ExperimentCommand::Timeline(args) => {
                Box::pin(yamor_experiments::powell::timeline(args))
            }
            ExperimentCommand::Compare(args) => Box::pin(yamor_experiments::powell::compare(args)),
            ExperimentCommand::GaitTime(args) => {
                Box::pin(yamor_experiments::gait_time::gait_time(args))
            }
        }),
        Command::Organizer(args) => async_main(Box::pin(cluster::organizer(args))),
        Command::Camera(command) => camera::camera(command),
        Command::Lifelong(command) => async_main(match command {
            LifelongCommand::Transform(args) => {
                Box::pin(yamor_lifelong::scenarios::transform(args))
            }
            LifelongCommand::UpsideDown(args) => {
                Box::pin(yamor_lifelong::scenarios::upside_down(args))
            }
            LifelongCommand::Ground { args, slippery } => {
                Box::pin(yamor_lifelong::scenarios::ground(args, slippery))
            }
            LifelongCommand::Gaits(args) => Box::pin(yamor_lifelong::scenarios::gaits(args)),
        }),
        Command::Emulate(args) => robot::emulate(args),
        Command::BenchSerial(args) => yamor_experiments::bench_serial::bench_serial(args),
        Command::BenchPeers(args) => {
            async_main(Box::pin(yamor_experiments::bench_peers::bench_peers(args)))
        }
        Command::Host(args) => async_main(Box::pin(cluster::host(args))),
        Command::BenchCluster(args) => async_main(Box::pin(
            yamor_experiments::bench_cluster::bench_cluster(args),
        )),
        Command::Hosts { client, command } => async_main(Box::pin(cluster::hosts(client, command))),
        Command::Optimize { client, command } => {
            async_main(Box::pin(cluster::optimize(client, command)))
        }
        Command::Jobs { client, command } => async_main(Box::pin(cluster::jobs(client, command))),
        Command::Sim(args) => sim(args),
        Command::Bridge(args) => bridge(args),
        Command::Bench(args) => yamor_experiments::bench_sim::bench_sim(args),
        Command::Robots => {
            for example in EXAMPLES {
                let morphology = example.morphology()?;
                println!(
                    "{:<10} {} modules, central {}",
                    example.name,
                    morphology.modules.len(),
                    morphology.central
                );
            }
            Ok(())
        }
    }
}

fn sim(args: SimArgs) -> Result<()> {
    let (morphology, gait) = args.robot.load()?;
    let settings = args.robot.settings();
    let spec = EvaluationSpec {
        seed: settings.seed,
        sample_interval: 0.01,
        full_trajectory: true,
        ..EvaluationSpec::lasting(args.seconds)?
    };
    let evaluation = evaluate(&morphology, &gait, settings, &spec)?;
    let file = std::fs::File::create(&args.csv)
        .with_context(|| format!("creating {}", args.csv.display()))?;
    write_trajectory_csv(&evaluation.samples, std::io::BufWriter::new(file))?;
    println!(
        "velocity {:.4} m/s ({:.2} cm/s): {:.3} m from t={:.1}s to t={:.1}s",
        evaluation.velocity,
        evaluation.velocity * 100.0,
        evaluation.distance,
        evaluation.start.t,
        evaluation.end.t
    );
    println!(
        "{} physics steps in {:.3} s wall: {:.0}x real time; trajectory in {}",
        evaluation.physics_steps,
        evaluation.wall.as_secs_f64(),
        evaluation.real_time_factor(),
        args.csv.display()
    );
    Ok(())
}

fn bridge(args: BridgeArgs) -> Result<()> {
    let (morphology, _) = args.robot.load()?;
    let settings = args.robot.settings();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("binding {}", args.listen))?;
        tracing::info!(address = %listener.local_addr()?, "bridge listening");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        yamor_sim::bridge::serve(listener, morphology, settings, shutdown).await?;
        anyhow::Ok(())
    })
}
