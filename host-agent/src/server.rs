//! Serving the host agent and keeping it registered with an organizer.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::Code;
use yamor_proto::transport::{self, ClientSecurity, ServerSecurity, TransportError};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_server::HostAgentServer;
use yamor_proto::v1::organizer_client::OrganizerClient;

use crate::Backend;
use crate::grpc::HostService;

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
    let host = HostAgentServer::from_arc(service)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    transport::serve(listener, &security, host, shutdown).await?;
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
    /// [`Registration::follow_route`]).
    pub follow_route: bool,
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
    /// Names the host serving `backend` on `listener`; refuses to listen
    /// beyond loopback without a token.
    pub fn new(
        listener: TcpListener,
        backend: Arc<dyn Backend>,
        options: HostOptions,
    ) -> Result<Self, TransportError> {
        let local = listener.local_addr()?;
        transport::check_exposure(local, &options.server)?;
        let scheme = if options.server.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let address = options
            .advertise
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{local}"));
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
    let mut client = match transport::channel(&registration.organizer, &registration.security) {
        Ok(channel) => OrganizerClient::new(channel),
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
                let request = pb::RegisterHostRequest {
                    name: registration.name.clone(),
                    address: address.clone(),
                };
                match client.register_host(request).await {
                    Ok(response) => {
                        let response = response.into_inner();
                        let id = response.host.map_or(0, |h| h.id);
                        tracing::info!(host_id = id, organizer = %registration.organizer, "registered");
                        host_id = Some(id);
                        interval = Duration::from_secs_f64(
                            response.heartbeat_interval_s.clamp(0.05, 60.0),
                        );
                        backoff = Duration::from_millis(100);
                        interval
                    }
                    Err(status) => {
                        tracing::warn!(
                            "registering with {}: {}",
                            registration.organizer,
                            status.message()
                        );
                        if status.code() == Code::Unauthenticated
                            || status.code() == Code::InvalidArgument
                        {
                            // Retrying will not fix a wrong token or address; keep
                            // trying slowly so a fixed organizer is picked up.
                            backoff = Duration::from_secs(5);
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        backoff
                    }
                }
            }
            Some(id) => match client.heartbeat(pb::HeartbeatRequest { host_id: id }).await {
                Ok(reply) => {
                    let down = reply.into_inner().state() == pb::HostState::Down;
                    down_beats = if down { down_beats + 1 } else { 0 };
                    if registration.follow_route && down_beats >= 3 {
                        tracing::warn!("the organizer cannot reach {address}: registering again");
                        down_beats = 0;
                        host_id = None;
                    }
                    interval
                }
                Err(status) if status.code() == Code::NotFound => {
                    host_id = None;
                    Duration::ZERO
                }
                Err(status) => {
                    tracing::warn!("lost the organizer: {}", status.message());
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
        let request = pb::DeregisterHostRequest {
            host_id: id,
            name: String::new(),
            keep_id: true,
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), client.deregister_host(request)).await;
    }
}

/// `address` (`scheme://ip:port`, e.g. the listening `http://0.0.0.0:7171`)
/// with its IP replaced by the one packets to `organizer` (a URL) leave
/// from: what a host listening on every interface (a container) advertises.
pub async fn outward_address(organizer: &str, address: &str) -> std::io::Result<String> {
    let ip = outward_ip(organizer).await?;
    with_ip(address, ip)
        .ok_or_else(|| std::io::Error::other(format!("{address} is not scheme://ip:port")))
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
#[must_use]
pub fn machine_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}
