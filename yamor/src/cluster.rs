//! The cluster subcommands: `organizer`, `host`, `hosts`, `optimize`, `jobs`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use tokio_stream::StreamExt;
use yamor_core::evaluation::{BackendKind, EvaluationSpec, Objective};
use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::serial::SerialSettings;
use yamor_host_agent::{Backend, HostOptions, HostServer};
use yamor_organizer::model::{HeldOut, JobFilter, Run, RunSpec, RunState, Starts};
use yamor_organizer::server::{OrganizerServer, ServerOptions, Stopped};
use yamor_organizer::{SchedulerConfig, text};

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
    /// A name the dashboard is reached by besides IP addresses and
    /// localhost (`server` or `server:7080`, e.g. behind a proxy); others are
    /// refused, so a web page cannot reach it through a name it controls (repeatable).
    #[arg(long = "http-host", value_name = "NAME")]
    http_hosts: Vec<String>,
    #[command(flatten)]
    security: ServerOpts,
}

pub async fn organizer(args: OrganizerArgs) -> Result<()> {
    // Two organizers over one file would hand out the same ids.
    let _claim = yamor_local::shared::Claim::try_hold(&args.db)?.with_context(|| {
        format!(
            "{} is in use by another yamor process (an organizer or yamor run); pass another --db",
            args.db.display()
        )
    })?;
    let security = args.security.server()?;
    let host_security = args.security.client()?;
    let scheduler =
        SchedulerConfig::from_seconds(args.heartbeat, args.lease, args.attempts, args.job_timeout)?;
    let dashboard = (!args.no_http).then(|| {
        let options = yamor_organizer::http::Options {
            allowed_hosts: args.http_hosts,
            ..yamor_local::dashboard_options(None)
        };
        (args.http, options)
    });
    let server = OrganizerServer::bind(ServerOptions {
        listen: args.listen,
        database: args.db.clone(),
        scheduler,
        security,
        host_security,
        plugins: yamor_local::optimizers(),
        dashboard,
    })
    .await?;
    eprintln!(
        "organizer listening on {} (database {})",
        server.url,
        args.db.display()
    );
    if let Some(address) = server.dashboard_address {
        eprintln!("dashboard and /metrics on http://{address}");
    }
    if let Stopped::StreamsCut { unsaved } = server.run(shutdown_signal()).await? {
        eprintln!("closing the streams still open");
        if let Some(e) = unsaved {
            eprintln!("{e}");
        }
    }
    eprintln!("organizer stopped; running runs resume at the next start");
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
    /// Plan Roombot self-reconfigurations (`reconfig:` jobs, seed 003) instead of walking a robot.
    #[arg(long, conflicts_with_all = ["sim", "expr", "serial"])]
    plan: bool,
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
        (Some(robot), None) => yamor_families::example_backend(
            robot,
            yamor_sim::SimSettings {
                engine,
                ..Default::default()
            },
        )?,
        (None, Some(text)) => Arc::new(ExprBackend::new(text, delay)?),
        _ => bail!(
            "give exactly one of --sim <robot>, --expr '<expression>', --plan or --serial <port>"
        ),
    })
}

pub async fn host(args: HostArgs) -> Result<()> {
    let backend: Arc<dyn Backend> = match args.serial {
        Some(settings) => Arc::new(crate::robot::serial_backend(settings, &args.tracker)?),
        None if args.tracker.camapp.is_some() => {
            bail!("--camapp measures a real robot: give --serial")
        }
        None if args.plan => Arc::new(yamor_families::planning::PlanningBackend::new(
            std::thread::available_parallelism().map_or(1, usize::from),
        )),
        None => backend_for(
            args.sim.as_deref(),
            args.engine,
            args.expr.as_deref(),
            Duration::from_millis(args.delay_ms),
        )?,
    };
    let options = HostOptions {
        name: args.name,
        advertise: args.advertise,
        organizer: args.organizer,
        server: args.security.server()?,
        client: args.security.client()?,
        follow_route: false,
    };
    let host = HostServer::bind(args.listen, backend.clone(), options).await?;
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

pub async fn hosts(client: ClientOpts, command: HostsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    let answer = match command {
        HostsCommand::List => text::hosts(&organizer.list_hosts().await?, client.format()),
        HostsCommand::Add { address, name } => {
            let host = organizer.register_host(&name, &address).await?;
            text::host_added(&host, client.format())
        }
        HostsCommand::Remove { host } => {
            organizer.deregister_host(&host).await?;
            format!("removed {host}\n")
        }
    };
    print!("{answer}");
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

/// `--budget`: a count of evaluations, said so when it is not one (clap
/// would take `-5` for a flag and suggest `-- -5`).
fn budget(text: &str) -> Result<u64, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n as u64),
        _ => Err(format!(
            "budget must be a positive number of evaluations (0: the optimizer's own schedule), got {text}"
        )),
    }
}

/// `--time`: seconds, none negative.
fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s >= 0.0 && s.is_finite() => Ok(s),
        _ => Err(format!(
            "time must be a positive number of seconds (0: unlimited), got {text}"
        )),
    }
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
    #[arg(long, allow_negative_numbers = true, value_parser = budget)]
    pub budget: Option<u64>,
    /// Maximum seconds (0: unlimited).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = seconds)]
    pub time: f64,
    /// Seconds walked before the measurement starts.
    #[arg(long, default_value_t = 8.0)]
    pub warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 12.0)]
    pub measure: f64,
    /// A label for the run (default: <robot>-<optimizer>-<id>, or <optimizer>-<id> over bare parameters; a batch: after its settings).
    #[arg(long)]
    pub name: Option<String>,
    /// Which hosts evaluate: sim (default for gaits), real (robots on a
    /// serial line) or expr (default for bare parameters).
    #[arg(long, value_parser = host_kind())]
    pub on: Option<BackendKind>,
    /// Walk every candidate from the start --seed (the thesis' protocol), not a fresh start each.
    #[arg(long)]
    pub fixed_start: bool,
    /// Held-out starts the finalists are re-walked from; the best mean is
    /// reported (0: none). Default: 20 for a gait in simulation; 0 on a
    /// real robot and for bare parameters (--param), whose run then reports
    /// its best single value (give a number for a noisy objective).
    #[arg(long)]
    pub held_out: Option<u32>,
    /// Finalists re-walked from the held-out starts.
    #[arg(long, default_value_t = HeldOut::DEFAULT.candidates)]
    pub finalists: u32,
    /// Ask for a straight gait: walks turning faster than this many degrees
    /// per second (either way) rank below every walk that does not, and the
    /// reported gait keeps it over the held-out starts when a finalist does.
    #[arg(long, value_name = "DEG_PER_S")]
    pub max_turn: Option<f64>,
    /// Stop hopeless walks early: a walk slower, a quarter or half way
    /// through its measured window, than every walk of the run's best
    /// quarter was at that point ends there (told as its velocity so far).
    #[arg(long)]
    pub early_stop: bool,
}

/// `--on`'s values: the kinds' short names.
fn host_kind() -> impl clap::builder::TypedValueParser<Value = BackendKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(BackendKind::ALL.map(BackendKind::short))
        .map(|text| BackendKind::from_short(&text).expect("one of the possible values"))
}

impl RunOptions {
    /// The run on `robot`: an embedded example, which every simulation
    /// host knows, or the user's own files (a directory with world.xml and
    /// gait.xml, or a morphology file with gait.xml beside it), which the
    /// run carries to the organizer so that any simulation host walks it;
    /// `budget` unless one was given.
    pub fn spec(&self, robot: &str, budget: u64) -> Result<RunSpec> {
        let robot = yamor_local::RunRobot::load(robot)?;
        self.spec_on(&robot, budget)
    }

    /// The run on `robot`; without --config its problem is the robot's
    /// default one.
    pub fn spec_on(&self, robot: &yamor_local::RunRobot, budget: u64) -> Result<RunSpec> {
        let problem = yamor_local::run_problem(self.config.as_deref(), &self.param, || {
            robot.default_problem()
        })?;
        let spec = RunSpec {
            name: self.name.clone().unwrap_or_default(),
            settings: yamor_local::parse_settings(&self.settings)?,
            seed: self.seed,
            robot: robot.source(),
            robot_name: robot.name(),
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
            starts: Starts::fixed_when(self.fixed_start),
            held_out: HeldOut::asked(self.finalists, self.held_out, &problem, self.on),
            max_turn_deg_s: self.max_turn,
            early_stop: self.early_stop,
            ..RunSpec::new(self.optimizer.clone(), problem)
        };
        yamor_local::check_walk(&spec.spec)?;
        Ok(spec)
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

pub async fn optimize(client: ClientOpts, command: OptimizeCommand) -> Result<()> {
    let organizer = client.organizer()?;
    let format = client.format();
    let answer = match command {
        OptimizeCommand::Start(spec) => {
            let run = spec.options.spec(&spec.robot, 0)?;
            text::runs_started(&[organizer.start_run(&run).await?], format)
        }
        OptimizeCommand::Batch { spec, variant } => {
            let base = spec.options.spec(&spec.robot, 0)?;
            let variants = yamor_local::batch_variants(&variant, spec.options.seed)?;
            let runs = organizer.batch_start_runs(&base, &variants).await?;
            text::runs_started(&runs, format)
        }
        OptimizeCommand::List => text::runs(&organizer.list_runs().await?, format),
        OptimizeCommand::Show { run } => text::run(&organizer.get_run(run).await?, format),
        OptimizeCommand::Best { run, params } => {
            text::best(&organizer.get_run(run).await?, format, params)?
        }
        OptimizeCommand::Optimizers => {
            text::optimizers(&organizer.list_optimizers().await?, format)
        }
        OptimizeCommand::Stop { run } => text::run_stopping(&organizer.stop_run(run).await?),
        OptimizeCommand::Watch { run } => return watch(&organizer, run).await,
    };
    print!("{answer}");
    Ok(())
}

/// Follows a run until it ends or Ctrl-C; an interrupted watch leaves the
/// run going and shows where it is.
async fn watch(organizer: &yamor_organizer::OrganizerClient, run: u64) -> Result<()> {
    let interrupt = crate::net::interrupt()?;
    let seen = yamor_local::progress::watch(organizer, run, interrupt).await?;
    if seen.state == RunState::Running {
        eprintln!("stopped watching; run {run} goes on (`yamor optimize stop {run}` stops it)");
    }
    print_run(&seen);
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
            print!("{}", text::jobs(&jobs, client.format()));
            if let (true, Some(oldest)) = (more, jobs.last()) {
                eprintln!(
                    "{}",
                    text::older_jobs(run, oldest.id, limit, client.format())
                );
            }
        }
        JobsCommand::Watch { run, job } => {
            let mut stream = organizer.watch_jobs(run, job, true).await?;
            if !client.json {
                println!("{}", text::job_header());
            }
            while let Some(j) = stream.next().await {
                println!("{}", text::job_line(&j?, client.format()));
            }
        }
    }
    Ok(())
}

#[derive(Args)]
pub struct DashboardArgs {
    /// The database to show (default: the one every `yamor run` records
    /// into, yamor.db under $YAMOR_RUNS or ~/.local/share/yamor/runs).
    db: Option<PathBuf>,
    /// Address to serve the dashboard on (loopback).
    #[arg(long, default_value = "127.0.0.1:7080")]
    http: SocketAddr,
}

/// `yamor dashboard`: a database's dashboard, read-only, without a cluster:
/// its runs, jobs, hosts and gaits as recorded when it was opened. Another
/// process may be writing the database meanwhile; nothing here writes it.
pub async fn dashboard(args: DashboardArgs) -> Result<()> {
    let db = args.db.unwrap_or_else(yamor_local::shared::shared_database);
    if !db.is_file() {
        bail!(
            "{} does not exist: no run has recorded there yet (yamor run records into the shared \
             database; pass a database file to show another)",
            db.display()
        );
    }
    let organizer = {
        let db = db.clone();
        tokio::task::spawn_blocking(move || {
            yamor_organizer::Organizer::view(&db, yamor_local::optimizers())
        })
        .await??
    };
    let listener = tokio::net::TcpListener::bind(args.http)
        .await
        .with_context(|| {
            format!(
                "serving the dashboard on {}: choose another with --http 127.0.0.1:PORT",
                args.http
            )
        })?;
    let address = listener.local_addr()?;
    eprintln!(
        "dashboard of {} (read-only, {} runs) on http://{address}; Ctrl-C ends it",
        db.display(),
        organizer.runs.list().len()
    );
    let options = yamor_organizer::http::Options {
        read_only: true,
        ..yamor_local::dashboard_options(None)
    };
    let store = organizer.scheduler.store().clone();
    yamor_organizer::http::serve(listener, organizer, options, shutdown_signal()).await?;
    tokio::task::spawn_blocking(move || store.close_view()).await?;
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
