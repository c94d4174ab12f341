//! `yamor`: the command line of the yamor cluster. Thin glue over the
//! library crates; see `yamor --help`.

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "yamor", version, about = "Teach modular YaMoR robots to walk")]
struct Cli {
    /// Log lines as text or as one JSON object per line (for log shippers). Filter with RUST_LOG, e.g. RUST_LOG=yamor_organizer=debug.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

mod cluster;
mod net;
mod plan;
mod robot;
mod roombots;
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
    Transform(yamor_experiments::lifelong::ScenarioArgs),
    /// 7.5.2: a fall onto the back, learning to walk upside down, and back.
    UpsideDown(yamor_experiments::lifelong::ScenarioArgs),
    /// Slippery ground and back, twice: the second time, stored gaits.
    Ground {
        #[command(flatten)]
        args: yamor_experiments::lifelong::ScenarioArgs,
        /// The slippery ground's friction coefficient (the floor's is 0.8).
        #[arg(long, default_value_t = 0.02)]
        slippery: f64,
    },
    /// The gaits database of an organizer's SQLite file (thesis 7.8.2).
    Gaits(yamor_experiments::lifelong::GaitsArgs),
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
    /// Roombot modules (seeds 002 and 003): kinematics experiments.
    #[command(subcommand)]
    Roombots(roombots::RoombotsCommand),
    /// Measure the scheduler: throughput and PSO speed-up with expression hosts.
    BenchCluster(yamor_experiments::bench_cluster::BenchClusterArgs),
    /// The LED tracker: watch, calibrate, or emulate a CamApp.
    #[command(subcommand)]
    Camera(yamor_camera::cli::CameraCommand),
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
    /// Walk a robot with a gait from held-out starts and print its velocity (thesis 6.2.1); --csv writes the trajectory.
    Sim(yamor_sim::cli::WalkArgs),
    /// Serve the simulated robot as a YaMoR Webots Bridge over TCP (thesis 5.4).
    Bridge(yamor_sim::cli::BridgeArgs),
    /// Measure simulation speed on the quadruped: steps per second and real-time factor.
    Bench(yamor_experiments::bench_sim::BenchSimArgs),
    /// Speed and fidelity of every physics engine, and the quadruped as a MuJoCo model (for bench/peers/engines.py).
    BenchEngines(yamor_experiments::bench_engines::BenchEnginesArgs),
    /// List the embedded example robots.
    Robots,
    /// Serve the dashboard of a database read-only, without a cluster (default: the database every yamor run records into).
    Dashboard(cluster::DashboardArgs),
    /// Ask a yamor server whether it serves (exit 0) or not: for container health checks.
    Health(cluster::HealthArgs),
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
        | Command::Lifelong(_)
        | Command::Roombots(_) => "warn",
        _ => "info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter.into());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => logs.json().init(),
        // Colour codes only where a person reads them.
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    use yamor_experiments as ex;
    use yamor_experiments::lifelong as life;
    match cli.command {
        Command::Run(args) => match block_on(run::run(args))? {
            // Everything is written and shut down; only the code is left.
            Some(code) => std::process::exit(code),
            None => Ok(()),
        },
        Command::Experiment(ExperimentCommand::Surface(a)) => block_on(ex::surface::surface(a)),
        Command::Experiment(ExperimentCommand::Timeline(a)) => block_on(ex::powell::timeline(a)),
        Command::Experiment(ExperimentCommand::Compare(a)) => block_on(ex::powell::compare(a)),
        Command::Experiment(ExperimentCommand::GaitTime(a)) => {
            block_on(ex::gait_time::gait_time(a))
        }
        Command::Organizer(args) => block_on(cluster::organizer(args)),
        Command::Camera(command) => Ok(yamor_camera::cli::camera(command, net::shutdown_signal())?),
        Command::Lifelong(LifelongCommand::Transform(a)) => block_on(life::transform(a)),
        Command::Lifelong(LifelongCommand::UpsideDown(a)) => block_on(life::upside_down(a)),
        Command::Lifelong(LifelongCommand::Ground { args, slippery }) => {
            block_on(life::ground(args, slippery))
        }
        Command::Lifelong(LifelongCommand::Gaits(a)) => block_on(life::gaits(a)),
        Command::Emulate(args) => robot::emulate(args),
        Command::Roombots(command) => roombots::roombots(command),
        Command::BenchSerial(args) => ex::bench_serial::bench_serial(args),
        Command::BenchEngines(args) => ex::bench_engines::bench_engines(args),
        Command::BenchPeers(args) => block_on(ex::bench_peers::bench_peers(args)),
        Command::Host(args) => block_on(cluster::host(args)),
        Command::BenchCluster(args) => block_on(ex::bench_cluster::bench_cluster(args)),
        Command::Hosts { client, command } => block_on(cluster::hosts(client, command)),
        Command::Optimize { client, command } => block_on(cluster::optimize(client, command)),
        Command::Jobs { client, command } => block_on(cluster::jobs(client, command)),
        Command::Sim(args) => Ok(yamor_sim::cli::walk(args)?),
        Command::Bridge(args) => {
            block_on(async { Ok(yamor_sim::cli::bridge(args, net::shutdown_signal()).await?) })
        }
        Command::Bench(args) => ex::bench_sim::bench_sim(args),
        Command::Robots => {
            yamor_sim::cli::robots()?;
            roombots::list_robots()
        }
        Command::Health(args) => block_on(cluster::health(args)),
        Command::Dashboard(args) => block_on(cluster::dashboard(args)),
    }
}

/// Runs an async command on a multi-threaded runtime.
fn block_on<T>(command: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Runtime::new()?.block_on(command)
}
