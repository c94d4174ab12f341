//! The servers' subcommands: `organizer`, `host`, `dashboard`, `health`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::serial::SerialSettings;
use yamor_host_agent::{Backend, HostOptions, HostServer};
use yamor_organizer::SchedulerConfig;
use yamor_organizer::server::{OrganizerServer, ServerOptions, Stopped};

use crate::net::{ServerOpts, shutdown_signal};

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
