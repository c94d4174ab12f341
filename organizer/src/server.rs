//! [`OrganizerServer`]: a whole organizer as `yamor organizer` runs it. Both
//! ports are bound before the database is opened, so a taken port ends it
//! before anything is served or announced, runs resume or jobs go out; on
//! the way out, open streams get a grace before the exit ends them.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use yamor_optimizer_api::Plugin;
use yamor_proto::transport::{self, ClientSecurity, ServerSecurity, TransportError};

use crate::store::StoreError;
use crate::{Organizer, ScheduleError, SchedulerConfig, http};

/// How long an organizer told to stop waits for open streams to end.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Why an organizer could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("binding the gRPC API to {address} (is another organizer running?)")]
    BindApi {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("binding the dashboard to {address} (choose another with --http ADDR, or --no-http)")]
    BindDashboard {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("opening {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: ScheduleError,
    },
}

/// What an organizer serves, and where.
pub struct ServerOptions {
    /// The gRPC API's address.
    pub listen: SocketAddr,
    /// The SQLite file (created if missing).
    pub database: PathBuf,
    pub scheduler: SchedulerConfig,
    /// The API's token and TLS; the token also guards a dashboard beyond
    /// loopback.
    pub security: ServerSecurity,
    /// Token and CA for the calls to hosts.
    pub host_security: ClientSecurity,
    pub plugins: Vec<Arc<dyn Plugin>>,
    /// The dashboard and `/metrics`: their address and options (whose
    /// token is set from `security`); `None` serves neither.
    pub dashboard: Option<(SocketAddr, http::Options)>,
}

/// How serving ended.
#[derive(Debug)]
pub enum Stopped {
    /// Every stream had ended; the database is synced.
    Drained,
    /// Streams were still open when the grace ran out; the exit ends them.
    /// The database is synced unless `unsaved` says why not (what is
    /// unsaved runs again at the next start).
    StreamsCut { unsaved: Option<StoreError> },
}

/// An organizer bound to its ports with its database open, ready to serve.
pub struct OrganizerServer {
    organizer: Organizer,
    api: TcpListener,
    dashboard: Option<(TcpListener, http::Options)>,
    security: ServerSecurity,
    /// The API's URL.
    pub url: String,
    /// Where the dashboard listens.
    pub dashboard_address: Option<SocketAddr>,
}

impl OrganizerServer {
    /// Refuses to listen beyond loopback without a token, binds both ports,
    /// then opens the database (restoring hosts, queued jobs and running
    /// runs, which start again).
    pub async fn bind(options: ServerOptions) -> Result<Self, ServerError> {
        let security = options.security;
        transport::check_exposure(options.listen, &security)?;
        let api =
            TcpListener::bind(options.listen)
                .await
                .map_err(|source| ServerError::BindApi {
                    address: options.listen,
                    source,
                })?;
        let dashboard = match options.dashboard {
            None => None,
            Some((address, http_options)) => {
                let listener = bind_dashboard(address, &security).await?;
                Some((listener, guarded(address, http_options, &security)))
            }
        };
        let organizer = Organizer::start(
            &options.database,
            options.scheduler,
            options.host_security,
            options.plugins,
        )
        .await
        .map_err(|source| ServerError::Open {
            path: options.database,
            source,
        })?;
        let scheme = if security.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{}", local_address(&api)?);
        let dashboard_address = match &dashboard {
            Some((listener, _)) => Some(local_address(listener)?),
            None => None,
        };
        Ok(OrganizerServer {
            organizer,
            api,
            dashboard,
            security,
            url,
            dashboard_address,
        })
    }

    /// Serves until `shutdown` resolves. An orderly shutdown (Ctrl-C,
    /// SIGTERM from docker stop or a reboot) leaves running runs running:
    /// the job log is on disk, and the next start resumes them. Open watch
    /// streams (`optimize watch`, a dashboard) would hold a graceful
    /// shutdown forever: they get [`SHUTDOWN_GRACE`], then this returns.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<Stopped, ServerError> {
        let (stopping, stopping_seen) = watch::channel(false);
        let dashboard = self.dashboard.map(|(listener, options)| {
            tokio::spawn(http::serve(
                listener,
                self.organizer.clone(),
                options,
                stopped(stopping_seen.clone()),
            ))
        });
        let store = self.organizer.scheduler.store().clone();
        let serving = crate::serve(self.api, self.organizer, self.security, async move {
            shutdown.await;
            let _ = stopping.send(true);
        });
        let drained = async move {
            stopped(stopping_seen).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        let ended = tokio::select! {
            // `serve` syncs the database itself once it has stopped serving.
            served = serving => {
                served?;
                Stopped::Drained
            }
            // A full disk must not hold the way out.
            () = drained => Stopped::StreamsCut {
                unsaved: store.sync_within(Duration::from_secs(5)).await.err(),
            },
        };
        if let Some(dashboard) = dashboard {
            dashboard.abort();
        }
        Ok(ended)
    }
}

async fn bind_dashboard(
    address: SocketAddr,
    security: &ServerSecurity,
) -> Result<TcpListener, ServerError> {
    transport::check_exposure(address, security)?;
    TcpListener::bind(address)
        .await
        .map_err(|source| ServerError::BindDashboard { address, source })
}

/// `options` with the token where the network can reach the dashboard.
fn guarded(
    address: SocketAddr,
    options: http::Options,
    security: &ServerSecurity,
) -> http::Options {
    let token = (!address.ip().is_loopback())
        .then(|| security.token.clone())
        .flatten();
    http::Options { token, ..options }
}

fn local_address(listener: &TcpListener) -> Result<SocketAddr, ServerError> {
    Ok(listener.local_addr().map_err(TransportError::from)?)
}

/// Resolves once `seen` turns true (or its sender is gone).
async fn stopped(mut seen: watch::Receiver<bool>) {
    let _ = seen.wait_for(|s| *s).await;
}
