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
use yamor_organizer::model::{JobFilter, Problem, Run, RunSpec, RunState, RunVariant};
use yamor_organizer::{Organizer, SchedulerConfig, text};

use crate::net::{ClientOpts, ServerOpts, shutdown_signal};

/// How long an organizer told to stop waits for open streams to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

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
    /// A name the dashboard is reached by besides IP addresses and
    /// localhost (`server` or `server:7080`, e.g. behind a proxy); others are
    /// refused, so a web page cannot reach it through a name it controls (repeatable).
    #[arg(long = "http-host", value_name = "NAME")]
    http_hosts: Vec<String>,
    #[command(flatten)]
    security: ServerOpts,
}

pub async fn organizer(args: OrganizerArgs) -> Result<()> {
    let security = args.security.server()?;
    yamor_proto::transport::check_exposure(args.listen, &security)?;
    let config =
        SchedulerConfig::from_seconds(args.heartbeat, args.lease, args.attempts, args.job_timeout)?;
    // Both ports are taken before anything is served or announced: a busy
    // dashboard port ends the organizer here, not after hosts and clients
    // were told it serves (and before runs resume and jobs go out).
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| {
            format!(
                "binding the gRPC API to {} (is another organizer running?)",
                args.listen
            )
        })?;
    let http = if args.no_http {
        None
    } else {
        yamor_proto::transport::check_exposure(args.http, &security)?;
        Some(
            tokio::net::TcpListener::bind(args.http)
                .await
                .with_context(|| {
                    format!(
                        "binding the dashboard to {} (choose another with --http ADDR, or --no-http)",
                        args.http
                    )
                })?,
        )
    };
    let organizer = Organizer::start(
        &args.db,
        config,
        args.security.client()?,
        yamor_local::optimizers(),
    )
    .await
    .with_context(|| format!("opening {}", args.db.display()))?;
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
    let dashboard = match http {
        None => None,
        Some(http) => {
            eprintln!("dashboard and /metrics on http://{}", http.local_addr()?);
            // The token guards the dashboard only where the network can reach it.
            let token = (!args.http.ip().is_loopback())
                .then(|| security.token.clone())
                .flatten();
            Some(tokio::spawn(yamor_organizer::http::serve(
                http,
                organizer.clone(),
                yamor_organizer::http::Options {
                    allowed_hosts: args.http_hosts.clone(),
                    ..yamor_local::dashboard_options(token)
                },
                shutdown_signal(),
            )))
        }
    };
    // An orderly shutdown (Ctrl-C, SIGTERM from docker stop or a reboot)
    // leaves running runs running: the job log is on disk, and the next
    // start resumes them. Stopping a run is `yamor optimize stop`.
    let store = organizer.scheduler.store().clone();
    let (stopping, mut stopping_seen) = tokio::sync::watch::channel(false);
    let serving = yamor_organizer::serve(listener, organizer, security, async move {
        shutdown_signal().await;
        let _ = stopping.send(true);
    });
    // Open watch streams (`optimize watch`, a dashboard) would hold a
    // graceful shutdown forever: they get a moment, then the exit ends them.
    let drained = async move {
        let _ = stopping_seen.wait_for(|s| *s).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        // `serve` flushes the database itself once it has stopped serving.
        served = serving => served?,
        () = drained => {
            eprintln!("closing the streams still open");
            // A full disk must not hold the way out (what is unsaved runs again).
            if let Err(e) = store.sync_within(Duration::from_secs(5)).await {
                eprintln!("{e}");
            }
        }
    }
    eprintln!("organizer stopped; running runs resume at the next start");
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
    /// Address the organizer dials (defaults to the listening address; when
    /// listening on every interface, this machine's address towards the organizer).
    #[arg(long)]
    advertise: Option<String>,
    /// Unique host name, kept across restarts (defaults to the advertised
    /// address; when listening on every interface, the machine's host name).
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
    // Listening on every interface (a container, a lab machine): the
    // organizer needs a real address, and a name that survives a restart.
    let everywhere = args.listen.ip().is_unspecified();
    // Chosen here, the advertised address follows the route to the organizer.
    let follow_route = everywhere && args.advertise.is_none() && args.organizer.is_some();
    let advertise = match (&args.advertise, &args.organizer) {
        (None, Some(organizer)) if everywhere => {
            let scheme = if args.security.tls_cert.is_some() {
                "https"
            } else {
                "http"
            };
            let listening = format!("{scheme}://{}", listener.local_addr()?);
            // The organizer's name may not resolve yet (a swarm starts
            // services in no order): wait for it as registration would.
            let mut wait = Duration::from_millis(100);
            loop {
                match yamor_host_agent::server::outward_address(organizer, &listening).await {
                    Ok(address) => break Some(address),
                    Err(e) => {
                        tracing::warn!(
                            "finding this machine's address towards {organizer}: {e}; trying again"
                        );
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(Duration::from_secs(2));
                    }
                }
            }
        }
        _ => args.advertise,
    };
    let name = args.name.or_else(|| {
        everywhere
            .then(yamor_host_agent::server::machine_name)
            .flatten()
    });
    let options = HostOptions {
        name,
        advertise,
        organizer: args.organizer,
        server: args.security.server()?,
        client: args.security.client()?,
        follow_route,
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
        /// The host's gRPC address, e.g. http://10.0.0.5:7071.
        address: String,
        /// Its unique name (default: the address).
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Remove a host by name or id; its running job is re-queued.
    Remove {
        /// The host's name or id.
        host: String,
    },
}

/// Prints `value` as pretty JSON on stdout.
fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON values serialise")
    );
}

pub async fn hosts(client: ClientOpts, command: HostsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        HostsCommand::List => {
            // Asked first, so that an organizer that cannot be reached
            // leaves its one-line error and no table header.
            let hosts = organizer.list_hosts().await?;
            if client.json {
                print_json(&hosts.iter().map(text::host_json).collect());
                return Ok(());
            }
            println!("{}", text::host_header());
            for h in &hosts {
                println!("{}", text::host_row(h));
            }
        }
        HostsCommand::Add { address, name } => {
            let host = organizer.register_host(&name, &address).await?;
            if client.json {
                print_json(&text::host_json(&host));
            } else {
                println!(
                    "added host {} ({}) as id {}",
                    host.name, host.address, host.id
                );
            }
        }
        HostsCommand::Remove { host } => {
            organizer.deregister_host(&host).await?;
            println!("removed {host}");
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
    /// Seed of the optimizer and of the walks (batch: the first run's).
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
    /// A label for the run (default: <optimizer>-<id>; a batch: after its settings).
    #[arg(long)]
    pub name: Option<String>,
    /// Which hosts evaluate: sim (default for gaits), real (robots on a
    /// serial line) or expr (default for bare parameters).
    #[arg(long, value_parser = host_kind())]
    pub on: Option<BackendKind>,
}

/// `--on`'s values: the kinds' short names.
fn host_kind() -> impl clap::builder::TypedValueParser<Value = BackendKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(BackendKind::ALL.map(BackendKind::short))
        .map(|text| BackendKind::from_short(&text).expect("one of the possible values"))
}

fn parse_settings(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| yamor_local::parse_setting(p).map_err(|e| anyhow::anyhow!("--set: {e}")))
        .collect()
}

impl RunOptions {
    /// The run on the example `robot`, with `budget` unless one was given.
    pub fn spec(&self, robot: &str, budget: u64) -> Result<RunSpec> {
        self.spec_on(
            RobotSource::Example(robot.to_owned()),
            || Ok(yamor_local::default_optimization(robot)?),
            budget,
        )
    }

    /// The run on `robot`; without --config its problem is `default_problem`.
    pub fn spec_on(
        &self,
        robot: RobotSource,
        default_problem: impl FnOnce() -> Result<String>,
        budget: u64,
    ) -> Result<RunSpec> {
        let problem = if self.param.is_empty() {
            Problem::OptimizationXml(match &self.config {
                // The thesis' own files are Windows-1252: read in the declared encoding.
                Some(path) => yamor_core::read_xml_file(path)?,
                None => default_problem()?,
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
            robot,
            spec: EvaluationSpec {
                warmup: self.warmup,
                measure: self.measure,
                seed: self.seed,
                ..EvaluationSpec::default()
            },
            backend: self.on,
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
    /// Start one run per variant, each named after its settings; seeds count up from --seed.
    Batch {
        #[command(flatten)]
        spec: RunSpecArgs,
        /// One run's settings, e.g. 'particles=10,inertia=0.6' (repeatable).
        #[arg(long, required = true)]
        variant: Vec<String>,
    },
    /// List runs.
    List,
    /// One run: state, settings, best value and parameters.
    Show {
        /// The run's id.
        run: u64,
    },
    /// Print a run's best gait as yamorconfig XML (or its parameters).
    Best {
        /// The run's id.
        run: u64,
        /// Print the best parameters (name value per line) instead of XML.
        #[arg(long)]
        params: bool,
    },
    /// List optimizers and their settings.
    Optimizers,
    /// Stop a run; it keeps what it found.
    Stop {
        /// The run's id.
        run: u64,
    },
    /// Follow a run: progress and best so far; Ctrl-C stops watching, not the run.
    Watch {
        /// The run's id.
        run: u64,
    },
}

pub fn print_run(r: &Run) {
    println!("{}", text::run_row(r));
}

fn started(client: &ClientOpts, runs: &[Run]) {
    if client.json {
        print_json(&runs.iter().map(text::run_json).collect());
    } else {
        for r in runs {
            println!("started run {} ({})", r.id, r.name);
        }
    }
}

pub async fn optimize(client: ClientOpts, command: OptimizeCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        OptimizeCommand::Start(spec) => {
            let run = organizer
                .start_run(&spec.options.spec(&spec.robot, 0)?)
                .await?;
            started(&client, &[run]);
        }
        OptimizeCommand::Batch { spec, variant } => {
            let base = spec.options.spec(&spec.robot, 0)?;
            let variants = batch_variants(&variant, spec.options.seed)?;
            started(
                &client,
                &organizer.batch_start_runs(&base, &variants).await?,
            );
        }
        OptimizeCommand::List => list_runs(&client, &organizer.list_runs().await?),
        OptimizeCommand::Show { run } => show_run(&client, &organizer.get_run(run).await?),
        OptimizeCommand::Best { run, params } => {
            best(&client, &organizer.get_run(run).await?, params)?
        }
        OptimizeCommand::Optimizers => list_optimizers(&client, &organizer).await?,
        OptimizeCommand::Stop { run } => {
            let r = organizer.stop_run(run).await?;
            if r.state == RunState::Running {
                println!("stopping run {run}; it keeps what it found");
            } else {
                println!(
                    "run {run} is already {} ({} evaluations): nothing to stop",
                    r.state.as_str(),
                    r.evaluations
                );
            }
        }
        OptimizeCommand::Watch { run } => watch(&organizer, run).await?,
    }
    Ok(())
}

/// One variant per `--variant`, named by the organizer after its settings;
/// seeds count up from `seed`.
fn batch_variants(variants: &[String], seed: u64) -> Result<Vec<RunVariant>> {
    variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Ok(RunVariant {
                name: String::new(),
                settings: yamor_organizer::model::parse_setting_list(v)
                    .map_err(|e| anyhow::anyhow!("--variant {v:?}: {e}"))?,
                seed: seed + i as u64,
            })
        })
        .collect()
}

fn list_runs(client: &ClientOpts, runs: &[Run]) {
    if client.json {
        print_json(&runs.iter().map(text::run_json).collect());
        return;
    }
    println!("{}", text::run_header());
    for r in runs {
        print_run(r);
    }
}

fn show_run(client: &ClientOpts, r: &Run) {
    if client.json {
        print_json(&text::run_json(r));
        return;
    }
    for line in text::run_details(r) {
        println!("{line}");
    }
}

/// The best gait's XML, or with `params` its parameters.
fn best(client: &ClientOpts, r: &Run, params: bool) -> Result<()> {
    if r.best_velocity.is_none() {
        bail!("run {} has no result yet", r.id);
    }
    if client.json {
        print_json(&text::run_json(r)["best_parameters"]);
    } else if params {
        for (name, value) in &r.best_parameters {
            println!("{name} {value}");
        }
    } else if r.best_gait_xml.is_empty() {
        bail!(
            "run {} optimizes bare parameters, not a gait: use --params",
            r.id
        );
    } else {
        print!("{}", r.best_gait_xml);
    }
    Ok(())
}

async fn list_optimizers(
    client: &ClientOpts,
    organizer: &yamor_organizer::OrganizerClient,
) -> Result<()> {
    let optimizers = organizer.list_optimizers().await?;
    if client.json {
        print_json(&serde_json::to_value(&optimizers)?);
        return Ok(());
    }
    for o in optimizers {
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
    Ok(())
}

/// Follows a run until it ends or Ctrl-C; an interrupted watch leaves the
/// run going and shows where it is.
async fn watch(organizer: &yamor_organizer::OrganizerClient, run: u64) -> Result<()> {
    let interrupt = crate::net::interrupt()?;
    let events = organizer
        .watch_run(run)
        .await?
        .map(|event| event.map_err(yamor_local::LocalError::from));
    let seen = yamor_local::progress::follow_run(Box::pin(events), interrupt).await?;
    if seen.state == RunState::Running {
        eprintln!("stopped watching; run {run} goes on (`yamor optimize stop {run}` stops it)");
        print_run(&organizer.get_run(run).await.unwrap_or(seen));
    } else {
        print_run(&seen);
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum JobsCommand {
    /// List jobs, newest first.
    List {
        /// Only this run's jobs (0: every job).
        #[arg(long, default_value_t = 0)]
        run: u64,
        /// Jobs per page.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Only jobs older than this id (the next page).
        #[arg(long)]
        before: Option<u64>,
    },
    /// Follow job state changes as they happen.
    Watch {
        /// Only this run's jobs (0: the jobs named, or every job).
        #[arg(long, default_value_t = 0)]
        run: u64,
        /// Job ids to follow.
        job: Vec<u64>,
    },
}

pub async fn jobs(client: ClientOpts, command: JobsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        JobsCommand::List { run, limit, before } => {
            let limit = limit.max(1);
            // One more than asked tells whether older jobs remain.
            let filter = JobFilter {
                run_id: (run > 0).then_some(run),
                before_id: Some(before.unwrap_or(u64::MAX)),
                limit: Some(limit + 1),
                ..JobFilter::default()
            };
            let mut jobs = organizer.list_jobs(&filter, true).await?;
            let more = jobs.len() > limit as usize;
            jobs.truncate(limit as usize);
            if client.json {
                print_json(&jobs.iter().map(text::job_json).collect());
            } else {
                println!("{}", text::job_header());
                for j in &jobs {
                    println!("{}", text::job_row(j));
                }
            }
            if let (true, Some(oldest)) = (more, jobs.last()) {
                let run = if run > 0 {
                    format!(" --run {run}")
                } else {
                    String::new()
                };
                eprintln!(
                    "older jobs remain: yamor jobs list{run} --before {}",
                    oldest.id
                );
            }
        }
        JobsCommand::Watch { run, job } => {
            let mut stream = organizer.watch_jobs(run, job, true).await?;
            if !client.json {
                println!("{}", text::job_header());
            }
            while let Some(j) = stream.next().await {
                let j = j?;
                if client.json {
                    // One object per line: a stream has no end to close an array.
                    println!("{}", text::job_json(&j));
                } else {
                    println!("{}", text::job_row(&j));
                }
            }
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct HealthArgs {
    /// The server's URL: an organizer or a host.
    #[arg(default_value = "http://127.0.0.1:7070")]
    url: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 3.0)]
    timeout: f64,
    /// CA certificate (PEM) for https:// URLs.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
}

/// `yamor health`: exit 0 when the server serves (the health service needs
/// no token), an error otherwise; what container health checks run.
pub async fn health(args: HealthArgs) -> Result<()> {
    let security = yamor_proto::transport::ClientSecurity {
        token: None,
        tls_ca: args.tls_ca,
        tls_domain: None,
    };
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .map_err(|_| anyhow::anyhow!("--timeout: {} is not a duration", args.timeout))?;
    yamor_proto::transport::check_health(&args.url, &security, timeout).await?;
    println!("{} serves", args.url);
    Ok(())
}
