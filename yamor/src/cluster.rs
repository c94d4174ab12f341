//! The cluster subcommands: `organizer`, `host`, `hosts`, `optimize`, `jobs`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use tokio_stream::StreamExt;
use yamor_core::evaluation::{BackendKind, EvaluationSpec, RobotSource};
use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::sim::SimBackend;
use yamor_host_agent::{Backend, HostService, Registration};
use yamor_organizer::model::{Problem, Run, RunSpec};
use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::v1 as pb;

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
    #[command(flatten)]
    security: ServerOpts,
}

impl OrganizerArgs {
    pub fn config(&self) -> Result<SchedulerConfig> {
        for (name, v) in [
            ("heartbeat", self.heartbeat),
            ("lease", self.lease),
            ("job-timeout", self.job_timeout),
        ] {
            if !(v.is_finite() && v > 0.0) {
                bail!("--{name} must be a positive number of seconds, got {v}");
            }
        }
        if self.lease <= self.heartbeat {
            bail!(
                "--lease ({}) must be longer than --heartbeat ({})",
                self.lease,
                self.heartbeat
            );
        }
        Ok(SchedulerConfig {
            heartbeat_interval: Duration::from_secs_f64(self.heartbeat),
            lease: Duration::from_secs_f64(self.lease),
            default_attempts: self.attempts.max(1),
            default_timeout: Duration::from_secs_f64(self.job_timeout),
        })
    }
}

pub async fn organizer(args: OrganizerArgs) -> Result<()> {
    let security = args.security.server()?;
    yamor_proto::transport::check_exposure(args.listen, &security)?;
    let organizer = Organizer::open(
        &args.db,
        args.config()?,
        args.security.client()?,
        yamor_local::optimizers(),
    )
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
    let runs = organizer.runs.clone();
    yamor_organizer::serve(listener, organizer, security, async move {
        shutdown_signal().await;
        runs.stop_all();
    })
    .await?;
    Ok(())
}

#[derive(Args)]
pub struct HostArgs {
    /// Simulate this robot (an embedded example: quadruped, snake, ...).
    #[arg(long, conflicts_with = "expr")]
    sim: Option<String>,
    /// Evaluate this MathEval expression of the parameters instead of a robot.
    #[arg(long, allow_hyphen_values = true)]
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
    serial: crate::robot::SerialOpts,
}

pub fn backend_for(
    sim: Option<&str>,
    expr: Option<&str>,
    delay: Duration,
) -> Result<Arc<dyn Backend>> {
    Ok(match (sim, expr) {
        (Some(robot), None) => Arc::new(SimBackend::example(robot, Default::default())?),
        (None, Some(text)) => Arc::new(ExprBackend::new(text, delay)?),
        _ => bail!("give exactly one of --sim <robot>, --expr '<expression>' or --serial <port>"),
    })
}

pub async fn host(args: HostArgs) -> Result<()> {
    let backend: Arc<dyn Backend> = match args.serial.backend()? {
        Some(serial) => Arc::new(serial),
        None => backend_for(
            args.sim.as_deref(),
            args.expr.as_deref(),
            Duration::from_millis(args.delay_ms),
        )?,
    };
    let security = args.security.server()?;
    yamor_proto::transport::check_exposure(args.listen, &security)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let local = listener.local_addr()?;
    let scheme = if security.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let address = args
        .advertise
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{local}"));
    let name = args.name.clone().unwrap_or_else(|| address.clone());
    let service = Arc::new(HostService::new(name.clone(), backend.clone()));
    // Printed on stdout so scripts and tests can pick up the address.
    println!(
        "host {name} listening on {address} ({})",
        backend.describe()
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let registration = args.organizer.clone().map(|organizer| {
        let registration = Registration {
            organizer,
            security: args.security.client().unwrap_or_default(),
            name: name.clone(),
            address: address.clone(),
        };
        let mut stop = stop_rx.clone();
        let service = service.clone();
        // A real robot must not walk on when nobody is in charge.
        tokio::spawn(yamor_host_agent::keep_registered_or(
            registration,
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
            move || {
                let service = service.clone();
                tokio::spawn(async move { service.halt().await });
            },
        ))
    });
    yamor_host_agent::serve(listener, service, security, async move {
        shutdown_signal().await;
    })
    .await?;
    let _ = stop_tx.send(true);
    if let Some(task) = registration {
        let _ = task.await;
    }
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

fn host_state(s: i32) -> &'static str {
    match pb::HostState::try_from(s) {
        Ok(pb::HostState::Free) => "free",
        Ok(pb::HostState::Busy) => "busy",
        Ok(pb::HostState::Down) => "down",
        _ => "?",
    }
}

fn backend_name(b: i32) -> &'static str {
    match pb::Backend::try_from(b) {
        Ok(pb::Backend::Simulation) => "sim",
        Ok(pb::Backend::Real) => "real",
        Ok(pb::Backend::Expression) => "expr",
        _ => "?",
    }
}

pub async fn hosts(client: ClientOpts, command: HostsCommand) -> Result<()> {
    let mut organizer = client.organizer()?;
    match command {
        HostsCommand::List => {
            let hosts = organizer
                .list_hosts(pb::ListHostsRequest {})
                .await?
                .into_inner()
                .hosts;
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
                    host_state(h.state),
                    if h.current_job == 0 {
                        "-".to_owned()
                    } else {
                        h.current_job.to_string()
                    },
                    h.last_seen_s,
                    h.evaluations,
                    h.failures,
                    h.robot
                );
            }
        }
        HostsCommand::Add { address, name } => {
            let host = organizer
                .register_host(pb::RegisterHostRequest { name, address })
                .await?
                .into_inner()
                .host
                .unwrap_or_default();
            println!(
                "added host {} ({}) as id {}",
                host.name, host.address, host.id
            );
        }
        HostsCommand::Remove { host } => {
            let (host_id, name) = match host.parse::<u64>() {
                Ok(id) => (id, String::new()),
                Err(_) => (0, host),
            };
            organizer
                .deregister_host(pb::DeregisterHostRequest { host_id, name })
                .await?;
            println!("removed");
        }
    }
    Ok(())
}

#[derive(Args, Clone)]
pub struct RunSpecArgs {
    /// Optimizer plugin (see `yamor optimize list-optimizers`).
    #[arg(long, default_value = "pso")]
    pub optimizer: String,
    /// Robot simulation hosts build (an embedded example).
    #[arg(long, default_value = "quadruped")]
    pub robot: String,
    /// Optimization configuration: yamorconfig with <optimize> rules (thesis 5.7.2).
    /// Defaults to the robot's own.
    #[arg(long, conflicts_with = "param")]
    pub config: Option<PathBuf>,
    /// Bare parameters for expression hosts: name=min:max[:start] (repeatable).
    #[arg(long)]
    pub param: Vec<String>,
    /// Optimizer setting name=value (repeatable).
    #[arg(long = "set")]
    pub settings: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Maximum evaluations (0: the optimizer's own schedule).
    #[arg(long, default_value_t = 0)]
    pub budget: u64,
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
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .with_context(|| format!("--set expects name=value, got {p:?}"))
        })
        .collect()
}

impl RunSpecArgs {
    pub fn spec(&self) -> Result<RunSpec> {
        let problem = if self.param.is_empty() {
            Problem::OptimizationXml(match &self.config {
                // The thesis' own files are Windows-1252: read in the declared encoding.
                Some(path) => yamor_core::read_xml_file(path)?,
                None => yamor_local::default_optimization(&self.robot)?,
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
            robot: RobotSource::Example(self.robot.clone()),
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
            max_evaluations: self.budget,
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

fn run_from_pb(run: pb::Run) -> Result<Run> {
    yamor_organizer::grpc::run_from_pb(run).map_err(anyhow::Error::msg)
}

pub async fn optimize(client: ClientOpts, command: OptimizeCommand) -> Result<()> {
    let mut organizer = client.organizer()?;
    match command {
        OptimizeCommand::Start(spec) => {
            let request = yamor_organizer::grpc::run_spec_to_pb(&spec.spec()?);
            let run = organizer.start_run(request).await?.into_inner();
            println!("started run {} ({})", run.id, run.name);
        }
        OptimizeCommand::Batch { spec, variant } => {
            let base = yamor_organizer::grpc::run_spec_to_pb(&spec.spec()?);
            let variants = variant
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let pairs: Vec<String> = v
                        .split(',')
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned)
                        .collect();
                    Ok(pb::RunVariant {
                        // Unnamed batches get "<optimizer>-<run id>" from the organizer.
                        name: spec
                            .name
                            .as_ref()
                            .map_or(String::new(), |n| format!("{n}-{}", i + 1)),
                        settings: parse_settings(&pairs)?.into_iter().collect(),
                        seed: spec.seed + i as u64,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let runs = organizer
                .batch_start_runs(pb::BatchStartRunsRequest {
                    base: Some(base),
                    variants,
                })
                .await?
                .into_inner()
                .runs;
            for r in runs {
                println!("started run {} ({})", r.id, r.name);
            }
        }
        OptimizeCommand::List => {
            println!(
                "{:>4}  {:<20} {:<8} {:<9} {:>7} {:>12} {:>9}",
                "id", "name", "plugin", "state", "evals", "best (m/s)", "time"
            );
            for r in organizer
                .list_runs(pb::ListRunsRequest {})
                .await?
                .into_inner()
                .runs
            {
                print_run(&run_from_pb(r)?);
            }
        }
        OptimizeCommand::Optimizers => {
            for o in organizer
                .list_optimizers(pb::ListOptimizersRequest {})
                .await?
                .into_inner()
                .optimizers
            {
                println!(
                    "{} {} by {}: {}",
                    o.name, o.version, o.author, o.description
                );
                for s in o.settings {
                    println!(
                        "    {:<16} default {:<10} {}",
                        s.name, s.default_value, s.description
                    );
                }
            }
        }
        OptimizeCommand::Stop { run } => {
            organizer
                .stop_run(pb::StopRunRequest { run_id: run })
                .await?;
            println!("stopping run {run}");
        }
        OptimizeCommand::Watch { run } => {
            let stream = organizer
                .watch_run(pb::WatchRunRequest { run_id: run })
                .await?
                .into_inner();
            let events = stream.map(|event| {
                yamor_organizer::grpc::run_event_from_pb(event?)
                    .map_err(yamor_local::LocalError::Problem)
            });
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

fn job_state(s: i32) -> &'static str {
    match pb::JobState::try_from(s) {
        Ok(pb::JobState::Queued) => "queued",
        Ok(pb::JobState::Running) => "running",
        Ok(pb::JobState::Done) => "done",
        Ok(pb::JobState::Failed) => "failed",
        Ok(pb::JobState::Cancelled) => "cancelled",
        _ => "?",
    }
}

fn print_job(j: &pb::Job) {
    println!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  {}",
        j.id,
        j.run_id,
        job_state(j.state),
        j.attempts,
        j.host,
        j.result
            .as_ref()
            .map_or("-".to_owned(), |r| format!("{:.5}", r.velocity_m_s)),
        j.error
    );
}

pub async fn jobs(client: ClientOpts, command: JobsCommand) -> Result<()> {
    let mut organizer = client.organizer()?;
    println!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  error",
        "id", "run", "state", "try", "host", "value"
    );
    match command {
        JobsCommand::List { run, limit, after } => {
            let jobs = organizer
                .list_jobs(pb::ListJobsRequest {
                    run_id: run,
                    states: vec![],
                    limit,
                    after_id: after,
                    brief: true,
                })
                .await?
                .into_inner()
                .jobs;
            for j in &jobs {
                print_job(j);
            }
        }
        JobsCommand::Watch { run, job } => {
            let mut stream = organizer
                .watch_jobs(pb::WatchJobsRequest {
                    job_ids: job,
                    run_id: run,
                    brief: true,
                })
                .await?
                .into_inner();
            while let Some(j) = stream.next().await {
                print_job(&j?);
            }
        }
    }
    Ok(())
}
