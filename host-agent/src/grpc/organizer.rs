//! [`OrganizerLink`]: the host's own calls to its organizer (register,
//! heartbeat, leave) in domain types, so that the registration loop in
//! [`crate::server`] never sees a protobuf message or a status code.

use std::time::Duration;

use tonic::{Code, Status};
use yamor_proto::transport::{self, AuthChannel, ClientSecurity, TransportError};
use yamor_proto::v1 as pb;
use yamor_proto::v1::organizer_client::OrganizerClient;

/// What the organizer answered a registration with.
#[derive(Debug, Clone, Copy)]
pub struct Registered {
    pub host_id: u64,
    /// How often to heartbeat, bounded so that a wild value neither floods
    /// the organizer nor lets the lease lapse.
    pub heartbeat_interval: Duration,
}

/// How the organizer sees a host that heartbeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Admitted: up, busy or being probed.
    Known,
    /// Marked down: the organizer cannot reach the address it was given.
    Down,
}

/// A failed call to the organizer; each reads as the organizer's message.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// A wrong token or address: retrying unchanged will not help.
    #[error("{0}")]
    Refused(String),
    /// The organizer does not know this host (it restarted on a fresh file,
    /// or the host was removed).
    #[error("{0}")]
    UnknownHost(String),
    /// Unreachable, or failed for a reason that may pass.
    #[error("{0}")]
    Failed(String),
}

impl From<Status> for LinkError {
    fn from(status: Status) -> Self {
        let message = status.message().to_owned();
        match status.code() {
            Code::Unauthenticated | Code::InvalidArgument => LinkError::Refused(message),
            Code::NotFound => LinkError::UnknownHost(message),
            _ => LinkError::Failed(message),
        }
    }
}

/// The organizer as one host calls it. Cheap to clone.
#[derive(Clone)]
pub struct OrganizerLink {
    inner: OrganizerClient<AuthChannel>,
}

impl OrganizerLink {
    /// Connects lazily: an organizer that is not up yet fails the first
    /// call, not this.
    pub fn new(url: &str, security: &ClientSecurity) -> Result<Self, TransportError> {
        Ok(OrganizerLink {
            inner: OrganizerClient::new(transport::channel(url, security)?),
        })
    }

    /// Registers (idempotent by name) this host as reached at `address`.
    pub async fn register(&mut self, name: &str, address: &str) -> Result<Registered, LinkError> {
        let request = pb::RegisterHostRequest {
            name: name.to_owned(),
            address: address.to_owned(),
        };
        let response = self.inner.register_host(request).await?.into_inner();
        Ok(Registered {
            host_id: response.host.map_or(0, |h| h.id),
            heartbeat_interval: Duration::from_secs_f64(
                response.heartbeat_interval_s.clamp(0.05, 60.0),
            ),
        })
    }

    pub async fn heartbeat(&mut self, host_id: u64) -> Result<Standing, LinkError> {
        let reply = self
            .inner
            .heartbeat(pb::HeartbeatRequest { host_id })
            .await?;
        Ok(match reply.into_inner().state() {
            pb::HostState::Down => Standing::Down,
            _ => Standing::Known,
        })
    }

    /// Leaving for now, not removed: the host's job moves on at once, and it
    /// gets its id back when it registers again.
    pub async fn leave(&mut self, host_id: u64) -> Result<(), LinkError> {
        let request = pb::DeregisterHostRequest {
            host_id,
            name: String::new(),
            keep_id: true,
        };
        self.inner.deregister_host(request).await?;
        Ok(())
    }
}
