//! The organizer: the central service of a yamor cluster (thesis 5.7,
//! YaMoR Optimizer). Hosts register and heartbeat, jobs queue until a free
//! host takes them, optimizer runs turn proposals into jobs, and everything
//! is kept in one SQLite file so a restart loses nothing.
//!
//! # Layout
//! - [`model`]: the domain: jobs, hosts, runs as plain Rust types over
//!   core's evaluation types. Everything below speaks it.
//! - [`store`]: SQLite with a single writer thread and group commit; its own
//!   columns, a schema version, and the migration of older files (the
//!   handle, `schema`, `reads`, `columns`, `writer`, `v0`).
//! - [`scheduler`]: hosts (behind the [`scheduler::HostClient`] trait),
//!   leases, the fair queue, one manager per running job, retries,
//!   exactly-once results.
//! - [`runs`]: the optimizer runtime (budget, termination, replay-based
//!   resume, best-so-far events) over the plugin API: the `Runs` service,
//!   and apart from it a run's preparation, its executor, the held-out
//!   re-walk, early stopping and naming.
//! - [`http`]: the dashboard and `/metrics` over HTTP (axum): the router
//!   and shared page helpers, the access guards, one file per page or
//!   family of pages, and [`http::views`], the seam through which a robot
//!   family draws pages of its own jobs (a planning job's build) in the
//!   dashboard's frame.
//! - [`metrics`]: the Prometheus registry the scheduler, store and runs feed.
//! - [`text`]: hosts, runs and jobs as table rows and JSON documents.
//! - [`grpc`]: the `Organizer` gRPC service and the gRPC host client; with
//!   [`convert`] (every conversion between protobuf and the domain, which
//!   the store's migration of version-0 files also uses) the only place
//!   that knows the wire.
//! - [`Organizer`] and [`serve`]: wiring and serving with token, health and
//!   reflection; graceful shutdown by an injected future (which also stops
//!   the scheduler sending jobs, at once).
//! - [`server`]: [`server::OrganizerServer`], a whole organizer as `yamor
//!   organizer` runs it: both ports bound before the database is opened,
//!   the API and the dashboard served, open streams cut after a grace.

#[cfg(feature = "clap")]
pub mod cli;
pub mod convert;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod model;
pub mod runs;
pub mod scheduler;
pub mod server;
pub mod store;
pub mod text;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use yamor_optimizer_api::Plugin;
use yamor_proto::transport::{self, ClientSecurity, ServerSecurity, TransportError};
use yamor_proto::v1::organizer_server::OrganizerServer;

pub use grpc::{ClientError, OrganizerClient};
pub use runs::{RunError, Runs};
pub use scheduler::{
    HostCallError, HostClient, HostConnector, ScheduleError, Scheduler, SchedulerConfig,
};
pub use store::Store;

pub use model::now_ms;

/// A loaded organizer: scheduler and runs over one database file.
#[derive(Clone)]
pub struct Organizer {
    pub scheduler: Arc<Scheduler>,
    pub runs: Arc<Runs>,
}

impl Organizer {
    /// Opens the database, restores hosts, queued jobs and running runs, and
    /// starts scheduling. Must be called inside a tokio runtime.
    pub fn open(
        database: &Path,
        config: SchedulerConfig,
        host_security: ClientSecurity,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> Result<Organizer, ScheduleError> {
        let store = Store::open(database)?;
        let connector = Arc::new(grpc::GrpcConnector {
            security: host_security,
        });
        Organizer::with_hosts(store, config, connector, plugins)
    }

    /// [`Organizer::open`] on a blocking thread: reading a large database
    /// back must not stall the async workers of a server that is starting.
    pub async fn start(
        database: &Path,
        config: SchedulerConfig,
        host_security: ClientSecurity,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> Result<Organizer, ScheduleError> {
        let database = database.to_owned();
        tokio::task::spawn_blocking(move || {
            Organizer::open(&database, config, host_security, plugins)
        })
        .await
        .map_err(|e| ScheduleError::Invalid(format!("opening the organizer panicked: {e}")))?
    }

    /// The database at `path` as it stands, for a dashboard that changes
    /// nothing (`yamor dashboard`): its runs, jobs, hosts and gaits read
    /// back, no run resumed, nothing dispatched, every start, stop and
    /// write refused ([`Store::open_view`]). Another process may own the
    /// database meanwhile; this view shows what it had recorded when opened.
    pub fn view(path: &Path, plugins: Vec<Arc<dyn Plugin>>) -> Result<Organizer, ScheduleError> {
        let store = Store::open_view(path)?;
        let connector = Arc::new(grpc::GrpcConnector {
            security: ClientSecurity::default(),
        });
        let scheduler = Scheduler::load(store, SchedulerConfig::default(), connector)?;
        let runs = Runs::load_view(scheduler.clone(), plugins)?;
        Ok(Organizer { scheduler, runs })
    }

    /// Like [`Organizer::open`], over `store` and hosts reached through
    /// `connector` (a fake one in tests).
    pub fn with_hosts(
        store: Store,
        config: SchedulerConfig,
        connector: Arc<dyn HostConnector>,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> Result<Organizer, ScheduleError> {
        let scheduler = Scheduler::load(store, config, connector)?;
        // Runs attach to the scheduler before it dispatches restored jobs,
        // so no completion finds nobody to tell.
        let runs = Runs::load(scheduler.clone(), plugins)?;
        scheduler.start();
        Ok(Organizer { scheduler, runs })
    }

    #[must_use]
    pub fn service(&self) -> grpc::OrganizerService {
        grpc::OrganizerService {
            scheduler: self.scheduler.clone(),
            runs: self.runs.clone(),
        }
    }
}

/// Serves the organizer on `listener` until `shutdown` resolves; then runs
/// are stopped (keeping what they found) and the database is synced.
pub async fn serve(
    listener: TcpListener,
    organizer: Organizer,
    security: ServerSecurity,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), TransportError> {
    let api = OrganizerServer::new(organizer.service())
        .max_decoding_message_size(yamor_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(yamor_proto::MAX_MESSAGE_BYTES);
    let scheduler = organizer.scheduler.clone();
    let shutdown = async move {
        shutdown.await;
        // At once, not after the grace for open streams: a job started now
        // would be cut off by the exit and run again after the restart.
        scheduler.stop_dispatching();
    };
    transport::serve(listener, &security, api, shutdown).await?;
    // On a full disk this would wait for space; what is not saved was never
    // told to a run, so its jobs simply run again after the restart.
    let store = organizer.scheduler.store();
    if let Err(e) = store.sync_within(std::time::Duration::from_secs(5)).await {
        tracing::error!(
            "stopping with writes the database could not take ({e}): their jobs run again at the next start"
        );
    }
    Ok(())
}
