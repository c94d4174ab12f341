//! The organizer: the central service of a yamor cluster (thesis 5.7,
//! YaMoR Optimizer). Hosts register and heartbeat, jobs queue until a free
//! host takes them, optimizer runs turn proposals into jobs, and everything
//! is kept in one SQLite file so a restart loses nothing.
//!
//! # Layout
//! - [`store`]: SQLite with a single writer thread and group commit.
//! - [`scheduler`]: hosts, leases, the fair queue, one manager per running
//!   job, retries, exactly-once results.
//! - [`runs`]: the optimizer runtime (budget, termination, replay-based
//!   resume, best-so-far events) over the plugin API.
//! - [`service`]: the `Organizer` gRPC service.
//! - [`Organizer`] and [`serve`]: wiring and serving with token, health and
//!   reflection; graceful shutdown by an injected future.

pub mod runs;
pub mod scheduler;
pub mod service;
pub mod store;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use yamor_optimizer_api::Plugin;
use yamor_proto::transport::{self, ClientSecurity, RequireToken, ServerSecurity, TransportError};
use yamor_proto::v1::organizer_server::OrganizerServer;

pub use runs::Runs;
pub use scheduler::{ScheduleError, Scheduler, SchedulerConfig};
pub use store::Store;

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

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
        let scheduler = Scheduler::load(store, config, host_security)?;
        // Runs attach to the scheduler before it dispatches restored jobs,
        // so no completion finds nobody to tell.
        let runs = Runs::load(scheduler.clone(), plugins)?;
        scheduler.start();
        Ok(Organizer { scheduler, runs })
    }

    #[must_use]
    pub fn service(&self) -> service::OrganizerService {
        service::OrganizerService {
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
    transport::check_exposure(listener.local_addr()?, &security)?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<OrganizerServer<service::OrganizerService>>()
        .await;
    let api = OrganizerServer::new(organizer.service())
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    transport::server(&security)?
        .add_service(health_service)
        .add_service(transport::reflection(&security)?)
        .add_service(tonic::service::interceptor::InterceptedService::new(
            api,
            RequireToken::new(security.token.clone()),
        ))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await?;
    let _ = organizer.scheduler.store().sync().await;
    Ok(())
}
