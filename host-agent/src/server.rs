//! Serving the host agent and keeping it registered with an organizer.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use yamor_proto::transport::{self, ClientSecurity, ServerSecurity, TransportError};

use crate::Backend;
use crate::grpc::HostService;
use crate::grpc::organizer::{LinkError, OrganizerLink, Standing};

/// Serves `service` on `listener` until `shutdown` resolves: the HostAgent
/// service behind the token, plus health (open) and reflection. On the way
/// out the robot is halted (every motor off).
pub async fn serve(
    listener: TcpListener,
    service: Arc<HostService>,
    security: ServerSecurity,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), TransportError> {
    let halt = service.clone();
    transport::serve(listener, &security, crate::grpc::server(service), shutdown).await?;
    halt.halt().await;
    Ok(())
}

/// How a host is known and whom it registers with.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Unique name; defaults to the advertised address.
    pub name: Option<String>,
    /// The address the organizer dials; defaults to the listening address.
    pub advertise: Option<String>,
    /// The organizer to register with; without one the host only serves.
    pub organizer: Option<String>,
    pub server: ServerSecurity,
    /// Token and CA for the calls to the organizer.
    pub client: ClientSecurity,
    /// Find the advertised IP afresh at every registration (see
    /// [`Registration::follow_route`]); [`HostServer::bind`] sets it for a
    /// host on every interface that was given no address to advertise.
    pub follow_route: bool,
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("binding {address}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// A host bound to its port and named, ready to serve: `yamor host`.
pub struct HostServer {
    listener: TcpListener,
    service: Arc<HostService>,
    options: HostOptions,
    /// The name it registers under.
    pub name: String,
    /// Where the organizer reaches it.
    pub address: String,
}

impl HostServer {
    /// Binds `listen` and names the host serving `backend` there. A host
    /// listening on every interface (a container, a lab machine) needs a
    /// real address and a name that survives a restart: unless given, it
    /// advertises the address packets to its organizer leave from (found
    /// again at each registration) under this machine's name.
    pub async fn bind(
        listen: SocketAddr,
        backend: Arc<dyn Backend>,
        mut options: HostOptions,
    ) -> Result<Self, StartError> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| StartError::Bind {
                address: listen,
                source,
            })?;
        if listen.ip().is_unspecified() {
            if let (None, Some(organizer)) = (&options.advertise, &options.organizer) {
                let local = listener.local_addr().map_err(TransportError::from)?;
                let listening = format!("{}://{local}", scheme(&options.server));
                options.advertise =
                    Some(outward_address_once_resolved(organizer, &listening).await);
                options.follow_route = true;
            }
            options.name = options.name.or_else(machine_name);
        }
        Ok(Self::new(listener, backend, options)?)
    }

    /// Names the host serving `backend` on `listener`; refuses to listen
    /// beyond loopback without a token.
    pub fn new(
        listener: TcpListener,
        backend: Arc<dyn Backend>,
        options: HostOptions,
    ) -> Result<Self, TransportError> {
        let local = listener.local_addr()?;
        transport::check_exposure(local, &options.server)?;
        let address = options
            .advertise
            .clone()
            .unwrap_or_else(|| format!("{}://{local}", scheme(&options.server)));
        let name = options.name.clone().unwrap_or_else(|| address.clone());
        Ok(HostServer {
            service: Arc::new(HostService::new(name.clone(), backend)),
            listener,
            options,
            name,
            address,
        })
    }

    /// Serves until `shutdown`, registered with the organizer (if any) the
    /// whole time; the robot halts whenever the organizer is lost, because
    /// a real robot must not walk on when nobody is in charge.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), TransportError> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let registration = self.options.organizer.clone().map(|organizer| {
            let registration = Registration {
                organizer,
                security: self.options.client.clone(),
                name: self.name.clone(),
                address: self.address.clone(),
                follow_route: self.options.follow_route,
            };
            let mut stop = stop_rx;
            let service = self.service.clone();
            tokio::spawn(keep_registered_or(
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
        let served = serve(self.listener, self.service, self.options.server, shutdown).await;
        let _ = stop_tx.send(true);
        if let Some(task) = registration {
            let _ = task.await;
        }
        served
    }
}

/// How a host finds its organizer and tells it where it is.
#[derive(Debug, Clone)]
pub struct Registration {
    pub organizer: String,
    pub security: ClientSecurity,
    pub name: String,
    /// The address the organizer dials to reach this host.
    pub address: String,
    /// Replace the address's IP, at every registration, by the one packets
    /// to the organizer leave from: a host listening on every interface (a
    /// container) may come back on another address. Such a host also
    /// registers again when the organizer keeps reporting it down (it
    /// cannot reach the address it has).
    pub follow_route: bool,
}

fn scheme(security: &ServerSecurity) -> &'static str {
    if security.tls.is_some() {
        "https"
    } else {
        "http"
    }
}

/// `address` (`scheme://ip:port`) with its IP replaced by `ip`.
fn with_ip(address: &str, ip: std::net::IpAddr) -> Option<String> {
    let (scheme, rest) = address.split_once("://")?;
    let port: u16 = rest
        .rsplit_once(':')?
        .1
        .trim_end_matches('/')
        .parse()
        .ok()?;
    Some(format!(
        "{scheme}://{}",
        std::net::SocketAddr::new(ip, port)
    ))
}

/// Registers, then heartbeats until `shutdown`, re-registering whenever the
/// organizer has forgotten the host or was down; says it is leaving on the
/// way out (it keeps its id for when it comes back).
/// Never returns an error: an unreachable organizer is retried forever,
/// because hosts usually start before (or outlive) it.
pub async fn keep_registered(registration: Registration, shutdown: impl Future<Output = ()>) {
    keep_registered_or(registration, shutdown, || {}).await;
}

/// [`keep_registered`], calling `lost` each time a registered host loses its
/// organizer (a heartbeat fails): a real robot must not walk on unattended.
pub async fn keep_registered_or(
    registration: Registration,
    shutdown: impl Future<Output = ()>,
    mut lost: impl FnMut(),
) {
    tokio::pin!(shutdown);
    let mut link = match OrganizerLink::new(&registration.organizer, &registration.security) {
        Ok(link) => link,
        Err(e) => {
            tracing::error!("organizer address: {e}");
            return;
        }
    };
    let mut host_id = None;
    let mut interval = Duration::from_secs(1);
    let mut backoff = Duration::from_millis(100);
    let mut address = registration.address.clone();
    // Heartbeats in a row answered "down": the organizer cannot reach us.
    let mut down_beats = 0;
    loop {
        let wait = match host_id {
            None => {
                if registration.follow_route {
                    match outward_address(&registration.organizer, &address).await {
                        Ok(fresh) => address = fresh,
                        Err(e) => tracing::warn!("finding this host's address: {e}"),
                    }
                }
                match link.register(&registration.name, &address).await {
                    Ok(registered) => {
                        let id = registered.host_id;
                        tracing::info!(host_id = id, organizer = %registration.organizer, "registered");
                        host_id = Some(id);
                        interval = registered.heartbeat_interval;
                        backoff = Duration::from_millis(100);
                        interval
                    }
                    Err(e) => {
                        tracing::warn!("registering with {}: {e}", registration.organizer);
                        if let LinkError::Refused(_) = e {
                            // Retrying will not fix a wrong token or address; keep
                            // trying slowly so a fixed organizer is picked up.
                            backoff = Duration::from_secs(5);
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        backoff
                    }
                }
            }
            Some(id) => match link.heartbeat(id).await {
                Ok(standing) => {
                    down_beats = if standing == Standing::Down {
                        down_beats + 1
                    } else {
                        0
                    };
                    if registration.follow_route && down_beats >= 3 {
                        tracing::warn!("the organizer cannot reach {address}: registering again");
                        down_beats = 0;
                        host_id = None;
                    }
                    interval
                }
                Err(LinkError::UnknownHost(_)) => {
                    host_id = None;
                    Duration::ZERO
                }
                Err(e) => {
                    tracing::warn!("lost the organizer: {e}");
                    lost();
                    // The organizer may have restarted: register again, which
                    // is idempotent by name.
                    host_id = None;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    backoff
                }
            },
        };
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    if let Some(id) = host_id {
        // Leaving, not removed: its job moves on now, and it gets its id
        // back when it registers again.
        let _ = tokio::time::timeout(Duration::from_secs(2), link.leave(id)).await;
    }
}

/// `address` (`scheme://ip:port`, e.g. the listening `http://0.0.0.0:7171`)
/// with its IP replaced by the one packets to `organizer` (a URL) leave
/// from: what a host listening on every interface (a container) advertises.
async fn outward_address(organizer: &str, address: &str) -> std::io::Result<String> {
    let ip = outward_ip(organizer).await?;
    with_ip(address, ip)
        .ok_or_else(|| std::io::Error::other(format!("{address} is not scheme://ip:port")))
}

/// [`outward_address`], waiting for `organizer`'s name to resolve as
/// registration would: a swarm starts its services in no order.
async fn outward_address_once_resolved(organizer: &str, listening: &str) -> String {
    let mut wait = Duration::from_millis(100);
    loop {
        match outward_address(organizer, listening).await {
            Ok(address) => return address,
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

/// The address of this machine that packets to `organizer` (a URL) leave
/// from. Found by routing alone: a UDP socket "connected" to the organizer
/// sends nothing.
async fn outward_ip(organizer: &str) -> std::io::Result<std::net::IpAddr> {
    let authority = organizer
        .split_once("://")
        .map_or(organizer, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let target = tokio::net::lookup_host(authority)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{authority} resolves to nothing")))?;
    let any: std::net::SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(any).await?;
    socket.connect(target).await?;
    Ok(socket.local_addr()?.ip())
}

/// This machine's host name (a container's is its id): a name that stays
/// when the host restarts, where its address may not.
fn machine_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}
