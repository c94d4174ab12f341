//! The cluster subcommands: `organizer`, `host`, `hosts`, `optimize`, `jobs`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use tokio_stream::StreamExt;
use yamor_core::evaluation::{BackendKind, EvaluationSpec, Objective, RobotSource};
use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::serial::SerialSettings;
use yamor_host_agent::sim::SimBackend;
use yamor_host_agent::{Backend, HostOptions, HostServer};
use yamor_organizer::model::{Job, JobFilter, Problem, Run, RunSpec, RunVariant};
use yamor_organizer::{Organizer, SchedulerConfig};

use crate::net::{ClientOpts, ServerOpts, shutdown_signal};

#[derive(Args)]
pub struct OrganizerArgs {
    /// Address to listen on (loopback unless a token is set).
    #[arg(long, default_value = crate::net::ORGANIZER_ADDR)]
    listen: SocketAddr,
    /// The SQLite database (created if missing).
    #[arg(long, default_value = "yamor.db")]
    db: PathBuf,
    /// Seconds between host heartbeats.
    #[arg(long, default_value_t = 1.0)]
    heartbeat: f64,
    /// Seconds without a heartbeat before a host is marked down and its job re-queued.
    #[arg(long, default_value_t = 5.0)]
    lease: f64,
    /// Attempts per job before it fails for good.
    #[arg(long, default_value_t = 3)]
    attempts: u32,
    /// Default per-attempt timeout in seconds.
    #[arg(long, default_value_t = 600.0)]
    job_timeout: f64,
    /// Address of the dashboard and /metrics (HTTP); beyond loopback it needs the token.
    #[arg(long, default_value = "127.0.0.1:7080")]
    http: SocketAddr,
    /// Serve no dashboard and no /metrics.
    #[arg(long)]
    no_http: bool,
    #[command(flatten)]
    security: ServerOpts,
}

pub async fn organizer(args: OrganizerArgs) -> Result<()> {
    let security = args.security.server()?;
    yamor_proto::transport::check_exposure(args.listen, &security)?;
    let config =
        SchedulerConfig::from_seconds(args.heartbeat, args.lease, args.attempts, args.job_timeout)?;
    let organizer = Organizer::start(
        &args.db,
        config,
        args.security.client()?,
        yamor_local::optimizers(),
    )
    .await
    .with_context(|| format!("opening {}", args.db.display()))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let scheme = if security.tls.is_some() {
        "https"
    } else {
        "http"
    };
    eprintln!(
        "organizer listening on {scheme}://{} (database {})",
        listener.local_addr()?,
        args.db.display()
    );
    let dashboard = if args.no_http {
        None
    } else {
        yamor_proto::transport::check_exposure(args.http, &security)?;
        let http = tokio::net::TcpListener::bind(args.http)
            .await
            .with_context(|| format!("binding the dashboard to {}", args.http))?;
        eprintln!("dashboard and /metrics on http://{}", http.local_addr()?);
        // The token guards the dashboard only where the network can reach it.
        let token = (!args.http.ip().is_loopback())
            .then(|| security.token.clone())
            .flatten();
        Some(tokio::spawn(yamor_organizer::http::serve(
            http,
            organizer.clone(),
            token,
            shutdown_signal(),
        )))
    };
    let runs = organizer.runs.clone();
    yamor_organizer::serve(listener, organizer, security, async move {
        shutdown_signal().await;
        runs.stop_all();
    })
    .await?;
    if let Some(dashboard) = dashboard {
        dashboard.abort();
    }
    Ok(())
}

#[derive(Args)]
pub struct HostArgs {
    /// Simulate this robot (an embedded example: quadruped, snake, ...).
    #[arg(long, conflicts_with_all = ["expr", "serial"])]
    sim: Option<String>,
    /// Physics engine of the simulated robot.
    #[arg(long, default_value_t, requires = "sim")]
    engine: yamor_sim::physics::Engine,
    /// Evaluate this MathEval expression of the parameters instead of a robot.
    #[arg(long, allow_hyphen_values = true, conflicts_with = "serial")]
    expr: Option<String>,
    /// Artificial delay per expression evaluation, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Address the organizer dials (defaults to the listening address).
    #[arg(long)]
    advertise: Option<String>,
    /// Unique host name (defaults to the advertised address).
    #[arg(long)]
    name: Option<String>,
    /// Register with this organizer; without it the host only serves.
    #[arg(long, env = "YAMOR_ORGANIZER")]
    organizer: Option<String>,
    #[command(flatten)]
    security: ServerOpts,
    #[command(flatten)]
    serial: Option<SerialSettings>,
    #[command(flatten)]
    tracker: crate::robot::TrackerOpts,
}

pub fn backend_for(
    sim: Option<&str>,
    engine: yamor_sim::physics::Engine,
    expr: Option<&str>,
    delay: Duration,
) -> Result<Arc<dyn Backend>> {
    Ok(match (sim, expr) {
        (Some(robot), None) => Arc::new(SimBackend::example(
            robot,
            yamor_sim::SimSettings {
                engine,
                ..Default::default()
            },
        )?),
        (None, Some(text)) => Arc::new(ExprBackend::new(text, delay)?),
        _ => bail!("give exactly one of --sim <robot>, --expr '<expression>' or --serial <port>"),
    })
}

pub async fn host(args: HostArgs) -> Result<()> {
    let backend: Arc<dyn Backend> = match args.serial {
        Some(settings) => Arc::new(crate::robot::serial_backend(settings, &args.tracker)?),
        None if args.tracker.camapp.is_some() => {
            bail!("--camapp measures a real robot: give --serial")
        }
        None => backend_for(
            args.sim.as_deref(),
            args.engine,
            args.expr.as_deref(),
            Duration::from_millis(args.delay_ms),
        )?,
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let options = HostOptions {
        name: args.name,
        advertise: args.advertise,
        organizer: args.organizer,
        server: args.security.server()?,
        client: args.security.client()?,
    };
    let host = HostServer::new(listener, backend.clone(), options)?;
    // Printed on stdout so scripts and tests can pick up the address.
    println!(
        "host {} listening on {} ({})",
        host.name,
        host.address,
        backend.describe()
    );
    host.run(shutdown_signal()).await?;
    Ok(())
}

#[derive(Subcommand)]
pub enum HostsCommand {
    /// List hosts: state, current job, last heartbeat.
    List,
    /// Add a host by address (it is probed first).
    Add {
        address: String,
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Remove a host by name or id; its running job is re-queued.
    Remove { host: String },
}

fn backend_name(kind: Option<BackendKind>) -> &'static str {
    match kind {
        Some(BackendKind::Simulation) => "sim",
        Some(BackendKind::Real) => "real",
        Some(BackendKind::Expression) => "expr",
        None => "?",
    }
}

pub async fn hosts(client: ClientOpts, command: HostsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        HostsCommand::List => {
            // Asked first, so that an organizer that cannot be reached
            // leaves its one-line error and no table header.
            let hosts = organizer.list_hosts().await?;
            println!(
                "{:>4}  {:<28} {:<5} {:<6} {:>7} {:>9} {:>8} {:>8}  robot",
                "id", "name", "kind", "state", "job", "seen (s)", "evals", "failures"
            );
            for h in hosts {
                println!(
                    "{:>4}  {:<28} {:<5} {:<6} {:>7} {:>9.1} {:>8} {:>8}  {}",
                    h.id,
                    h.name,
                    backend_name(h.backend),
                    h.state.as_str(),
                    if h.current_job == 0 {
                        "-".to_owned()
                    } else {
                        h.current_job.to_string()
                    },
                    h.last_seen.as_secs_f64(),
                    h.evaluations,
                    h.failures,
                    h.robot
                );
            }
        }
        HostsCommand::Add { address, name } => {
            let host = organizer.register_host(&name, &address).await?;
            println!(
                "added host {} ({}) as id {}",
                host.name, host.address, host.id
            );
        }
        HostsCommand::Remove { host } => {
            organizer.deregister_host(&host).await?;
            println!("removed");
        }
    }
    Ok(())
}

/// `optimize start` and `optimize batch`: a run on the cluster's hosts.
#[derive(Args, Clone)]
pub struct RunSpecArgs {
    /// Robot simulation hosts build (an embedded example).
    #[arg(long, default_value = "quadruped")]
    pub robot: String,
    #[command(flatten)]
    pub options: RunOptions,
}

/// What a run optimizes and how; `yamor run` shares these.
#[derive(Args, Clone)]
pub struct RunOptions {
    /// Optimizer plugin (see `yamor optimize optimizers`). CMA-ES is the
    /// default: on the quadruped it reached 95 % of the best known gait
    /// sooner and more often than PSO (docs/benchmarks.md, time to a gait).
    #[arg(long, default_value = "cmaes")]
    pub optimizer: String,
    /// Optimization configuration: yamorconfig with <optimize> rules (thesis 5.7.2).
    /// Defaults to the robot's own.
    #[arg(long, conflicts_with = "param")]
    pub config: Option<PathBuf>,
    /// Bare parameters: name=min:max[:start] (repeatable); needs --objective.
    #[arg(long, requires = "objective")]
    pub param: Vec<String>,
    /// What a run over --param maximises: expr:<MathEval text> (served by
    /// `yamor host --expr <text>`) or an external objective's name.
    #[arg(long)]
    pub objective: Option<String>,
    /// Optimizer setting name=value (repeatable).
    #[arg(long = "set")]
    pub settings: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Maximum evaluations (0: the optimizer's own schedule; `yamor run`:
    /// 2400, about 30 s on two cores).
    #[arg(long)]
    pub budget: Option<u64>,
    /// Maximum seconds (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    pub time: f64,
    /// Seconds walked before the measurement starts.
    #[arg(long, default_value_t = 8.0)]
    pub warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 12.0)]
    pub measure: f64,
    #[arg(long)]
    pub name: Option<String>,
    /// Which hosts evaluate: sim (default for gaits), real (robots on a
    /// serial line) or expr (default for bare parameters).
    #[arg(long, value_enum)]
    pub on: Option<HostKind>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum HostKind {
    Sim,
    Real,
    Expr,
}

fn parse_settings(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| yamor_local::parse_setting(p).map_err(|e| anyhow::anyhow!("--set: {e}")))
        .collect()
}

impl RunOptions {
    /// The run on `robot`, with `budget` unless one was given.
    pub fn spec(&self, robot: &str, budget: u64) -> Result<RunSpec> {
        let problem = if self.param.is_empty() {
            Problem::OptimizationXml(match &self.config {
                // The thesis' own files are Windows-1252: read in the declared encoding.
                Some(path) => yamor_core::read_xml_file(path)?,
                None => yamor_local::default_optimization(robot)?,
            })
        } else {
            Problem::Space(
                self.param
                    .iter()
                    .map(|p| p.parse().map_err(|e| anyhow::anyhow!("--param: {e}")))
                    .collect::<Result<_>>()?,
            )
        };
        Ok(RunSpec {
            name: self.name.clone().unwrap_or_default(),
            settings: parse_settings(&self.settings)?,
            seed: self.seed,
            robot: RobotSource::Example(robot.to_owned()),
            spec: EvaluationSpec {
                warmup: self.warmup,
                measure: self.measure,
                seed: self.seed,
                ..EvaluationSpec::default()
            },
            backend: self.on.map(|on| match on {
                HostKind::Sim => BackendKind::Simulation,
                HostKind::Real => BackendKind::Real,
                HostKind::Expr => BackendKind::Expression,
            }),
            max_evaluations: self.budget.unwrap_or(budget),
            objective: Objective::parse(self.objective.as_deref().unwrap_or_default()),
            max_seconds: self.time,
            ..RunSpec::new(self.optimizer.clone(), problem)
        })
    }
}

#[derive(Subcommand)]
pub enum OptimizeCommand {
    /// Start one run.
    Start(RunSpecArgs),
    /// Start one run per variant: --variant 'particles=10,inertia=0.6' (repeatable); seeds count up from --seed.
    Batch {
        #[command(flatten)]
        spec: RunSpecArgs,
        #[arg(long, required = true)]
        variant: Vec<String>,
    },
    /// List runs.
    List,
    /// List optimizers and their settings.
    Optimizers,
    /// Stop a run; it keeps what it found.
    Stop { run: u64 },
    /// Follow a run: progress and best so far.
    Watch { run: u64 },
}

pub fn print_run(r: &Run) {
    println!(
        "{:>4}  {:<20} {:<8} {:<9} {:>7} {:>12} {:>8.1}s  {}",
        r.id,
        r.name,
        r.optimizer,
        r.state.as_str(),
        r.evaluations,
        r.best_velocity
            .map_or("-".to_owned(), |v| format!("{:.4}", v)),
        r.elapsed_s,
        r.error
    );
}

pub async fn optimize(client: ClientOpts, command: OptimizeCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        OptimizeCommand::Start(spec) => {
            let run = organizer
                .start_run(&spec.options.spec(&spec.robot, 0)?)
                .await?;
            println!("started run {} ({})", run.id, run.name);
        }
        OptimizeCommand::Batch { spec, variant } => {
            let variants = variant
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let pairs: Vec<String> = v
                        .split(',')
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned)
                        .collect();
                    Ok(RunVariant {
                        // Unnamed batches get "<optimizer>-<run id>" from the organizer.
                        name: spec
                            .options
                            .name
                            .as_ref()
                            .map_or(String::new(), |n| format!("{n}-{}", i + 1)),
                        settings: parse_settings(&pairs)?,
                        seed: spec.options.seed + i as u64,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let base = spec.options.spec(&spec.robot, 0)?;
            for r in organizer.batch_start_runs(&base, &variants).await? {
                println!("started run {} ({})", r.id, r.name);
            }
        }
        OptimizeCommand::List => {
            let runs = organizer.list_runs().await?;
            println!(
                "{:>4}  {:<20} {:<8} {:<9} {:>7} {:>12} {:>9}",
                "id", "name", "plugin", "state", "evals", "best (m/s)", "time"
            );
            for r in runs {
                print_run(&r);
            }
        }
        OptimizeCommand::Optimizers => {
            for o in organizer.list_optimizers().await? {
                println!(
                    "{} {} by {}: {}",
                    o.name, o.version, o.author, o.description
                );
                for s in o.settings {
                    println!(
                        "    {:<16} default {:<10} {}",
                        s.name, s.default, s.description
                    );
                }
            }
        }
        OptimizeCommand::Stop { run } => {
            organizer.stop_run(run).await?;
            println!("stopping run {run}");
        }
        OptimizeCommand::Watch { run } => {
            let events = organizer
                .watch_run(run)
                .await?
                .map(|event| event.map_err(yamor_local::LocalError::from));
            let run = yamor_local::progress::follow_run(Box::pin(events)).await?;
            print_run(&run);
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum JobsCommand {
    /// List jobs (newest last).
    List {
        #[arg(long, default_value_t = 0)]
        run: u64,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long, default_value_t = 0)]
        after: u64,
    },
    /// Follow job state changes as they happen.
    Watch {
        #[arg(long, default_value_t = 0)]
        run: u64,
        job: Vec<u64>,
    },
}

fn print_job(j: &Job) {
    println!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  {}",
        j.id,
        j.run_id,
        j.state.as_str(),
        j.attempts,
        j.host,
        j.velocity().map_or("-".to_owned(), |v| format!("{v:.5}")),
        j.error
    );
}

pub async fn jobs(client: ClientOpts, command: JobsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    println!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  error",
        "id", "run", "state", "try", "host", "value"
    );
    match command {
        JobsCommand::List { run, limit, after } => {
            let filter = JobFilter {
                run_id: (run > 0).then_some(run),
                states: vec![],
                after_id: after,
                limit: Some(limit),
            };
            for j in &organizer.list_jobs(&filter, true).await? {
                print_job(j);
            }
        }
        JobsCommand::Watch { run, job } => {
            let mut stream = organizer.watch_jobs(run, job, true).await?;
            while let Some(j) = stream.next().await {
                print_job(&j?);
            }
        }
    }
    Ok(())
}
