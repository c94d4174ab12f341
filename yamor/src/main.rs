//! `yamor`: the command line of the yamor cluster. Thin glue over the
//! library crates, whose `cli` modules hold their own commands (the
//! Roombots', the experiments', the organizer's client commands); see
//! `yamor --help`.

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
mod robot;
mod run;

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
    Lifelong(yamor_experiments::cli::LifelongCommand),
    /// Reproduce thesis experiments on this machine.
    #[command(subcommand)]
    Experiment(yamor_experiments::cli::ExperimentCommand),
    /// Roombot modules: walk their robots, solve their kinematics, build
    /// structures by self-reconfiguration [seeds 002 and 003].
    #[command(subcommand)]
    Roombots(yamor_roombots_cli::RoombotsCommand),
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
        client: yamor_organizer::cli::ClientOpts,
        #[command(subcommand)]
        command: yamor_organizer::cli::HostsCommand,
    },
    /// Start, batch-start, list, stop and watch optimizer runs.
    Optimize {
        #[command(flatten)]
        client: yamor_organizer::cli::ClientOpts,
        #[command(subcommand)]
        command: yamor_organizer::cli::OptimizeCommand,
    },
    /// List and watch jobs.
    Jobs {
        #[command(flatten)]
        client: yamor_organizer::cli::ClientOpts,
        #[command(subcommand)]
        command: yamor_organizer::cli::JobsCommand,
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
    match cli.command {
        Command::Run(args) => match block_on(run::run(args))? {
            // Everything is written and shut down; only the code is left.
            Some(code) => std::process::exit(code),
            None => Ok(()),
        },
        Command::Experiment(command) => block_on(ex::cli::experiment(command)),
        Command::Organizer(args) => block_on(cluster::organizer(args)),
        Command::Camera(command) => Ok(yamor_camera::cli::camera(command, net::shutdown_signal())?),
        Command::Lifelong(command) => block_on(ex::cli::lifelong(command)),
        Command::Emulate(args) => robot::emulate(args),
        Command::Roombots(command) => yamor_roombots_cli::roombots(command, net::shutdown_signal()),
        Command::BenchSerial(args) => ex::bench_serial::bench_serial(args),
        Command::BenchEngines(args) => ex::bench_engines::bench_engines(args),
        Command::BenchPeers(args) => block_on(ex::bench_peers::bench_peers(args)),
        Command::Host(args) => block_on(cluster::host(args)),
        Command::BenchCluster(args) => block_on(ex::bench_cluster::bench_cluster(args)),
        Command::Hosts { client, command } => {
            block_on(yamor_organizer::cli::hosts(client, command))
        }
        Command::Optimize { client, command } => {
            block_on(yamor_local::cli::optimize(client, command))
        }
        Command::Jobs { client, command } => block_on(yamor_organizer::cli::jobs(client, command)),
        Command::Sim(args) => Ok(yamor_sim::cli::walk(args)?),
        Command::Bridge(args) => {
            block_on(async { Ok(yamor_sim::cli::bridge(args, net::shutdown_signal()).await?) })
        }
        Command::Bench(args) => ex::bench_sim::bench_sim(args),
        Command::Robots => {
            yamor_sim::cli::robots()?;
            yamor_roombots_cli::list_robots()
        }
        Command::Health(args) => block_on(cluster::health(args)),
        Command::Dashboard(args) => block_on(cluster::dashboard(args)),
    }
}

/// Runs an async command on a multi-threaded runtime.
fn block_on<T>(command: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Runtime::new()?.block_on(command)
}
