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

/// How a host finds its organizer and tells it where it is.
#[derive(Debug, Clone)]
pub struct Registration {
    pub organizer: String,
    pub security: ClientSecurity,
    pub name: String,
    /// The address the organizer dials to reach this host.
    pub address: String,
}

/// Registers, then heartbeats until `shutdown`, re-registering whenever the
/// organizer has forgotten the host or was down; deregisters on the way out.
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
    loop {
        let wait = match host_id {
            None => {
                let request = pb::RegisterHostRequest {
                    name: registration.name.clone(),
                    address: registration.address.clone(),
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
                Ok(_) => interval,
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
        let request = pb::DeregisterHostRequest {
            host_id: id,
            name: String::new(),
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), client.deregister_host(request)).await;
    }
}
