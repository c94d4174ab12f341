//! [`OrganizerClient`]: the organizer's API as the domain sees it. The CLI,
//! the experiments and scripts call this; protobuf and `Status` stay here,
//! and a failure reads as one sentence a user can act on.

use std::error::Error as _;
use std::pin::Pin;

use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Status};
use yamor_optimizer_api::PluginInfo;
use yamor_proto::transport::{self, AuthChannel, ClientSecurity, TransportError};
use yamor_proto::v1 as pb;
use yamor_proto::v1::organizer_client::OrganizerClient as PbClient;

use crate::convert::{
    ConvertError, host_from_pb, job_from_pb, job_request_to_pb, optimizer_from_pb,
    run_event_from_pb, run_from_pb, run_spec_to_pb,
};
use crate::model::{Host, Job, JobFilter, JobRequest, Run, RunEvent, RunSpec, RunVariant};

/// A failed call, said so that the user knows what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "cannot reach the organizer at {url}: {reason}; start one with `yamor organizer` or pass --organizer"
    )]
    Unreachable { url: String, reason: String },
    /// Something answers, but the TLS handshake failed: an organizer is
    /// there, so starting one is the wrong advice.
    #[error(
        "{reason} with {url}: an organizer serving plain http needs an http:// URL, \
         one serving TLS a --tls-ca that trusts its certificate"
    )]
    TlsFailed { url: String, reason: String },
    #[error("{url} answers, but not as a yamor organizer (is it a host's address?)")]
    NotAnOrganizer { url: String },
    #[error("the organizer at {url} refused the token: {message}")]
    Unauthenticated { url: String, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    /// The organizer answered that it cannot take this now (its database
    /// cannot be written); trying again later may succeed.
    #[error("the organizer cannot take this now: {0}")]
    NotNow(String),
    #[error("the organizer failed: {0}")]
    Organizer(String),
    #[error("the organizer's reply: {0}")]
    BadReply(String),
    #[error("the organizer's reply: {0}")]
    Reply(#[from] ConvertError),
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// A typed client of one organizer. Cheap to clone; connects lazily and
/// reconnects by itself.
#[derive(Clone)]
pub struct OrganizerClient {
    url: String,
    inner: PbClient<AuthChannel>,
}

/// A stream of domain values from a server-streaming call.
pub type ClientStream<T> = Pin<Box<dyn Stream<Item = Result<T, ClientError>> + Send>>;

impl OrganizerClient {
    /// A client of the organizer at `url` (`http://host:port`, `https://…`;
    /// a bare `host:port` means http).
    pub fn new(url: &str, security: &ClientSecurity) -> Result<Self, ClientError> {
        Ok(OrganizerClient {
            url: url.to_owned(),
            inner: PbClient::new(transport::channel(url, security)?)
                .max_decoding_message_size(yamor_proto::MAX_MESSAGE_BYTES),
        })
    }

    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, status: Status) -> ClientError {
        explain(&self.url, status)
    }

    pub async fn list_hosts(&self) -> Result<Vec<Host>, ClientError> {
        let reply = self
            .inner
            .clone()
            .list_hosts(pb::ListHostsRequest {})
            .await
            .map_err(|s| self.error(s))?;
        Ok(reply
            .into_inner()
            .hosts
            .into_iter()
            .map(host_from_pb)
            .collect())
    }

    /// Adds a host by address; the organizer probes it before answering.
    pub async fn register_host(&self, name: &str, address: &str) -> Result<Host, ClientError> {
        let reply = self
            .inner
            .clone()
            .register_host(pb::RegisterHostRequest {
                name: name.to_owned(),
                address: address.to_owned(),
            })
            .await
            .map_err(|s| self.error(s))?;
        reply
            .into_inner()
            .host
            .map(host_from_pb)
            .ok_or_else(|| ClientError::BadReply("no host in the registration".into()))
    }

    /// Queues `jobs` outside any run, fairly shared as `owner`'s; returns
    /// their ids, in order, once they are durable.
    pub async fn submit_jobs(
        &self,
        owner: &str,
        jobs: &[JobRequest],
    ) -> Result<Vec<u64>, ClientError> {
        let reply = self
            .inner
            .clone()
            .submit_jobs(pb::SubmitJobsRequest {
                jobs: jobs.iter().map(job_request_to_pb).collect(),
                owner: owner.to_owned(),
            })
            .await
            .map_err(|s| self.error(s))?;
        Ok(reply.into_inner().job_ids)
    }

    /// Removes a host by id or, when `host` is not a number, by name.
    pub async fn deregister_host(&self, host: &str) -> Result<(), ClientError> {
        let (host_id, name) = match host.parse::<u64>() {
            Ok(id) => (id, String::new()),
            Err(_) => (0, host.to_owned()),
        };
        self.inner
            .clone()
            .deregister_host(pb::DeregisterHostRequest {
                host_id,
                name,
                keep_id: false,
            })
            .await
            .map_err(|s| self.error(s))?;
        Ok(())
    }

    pub async fn start_run(&self, spec: &RunSpec) -> Result<Run, ClientError> {
        let reply = self
            .inner
            .clone()
            .start_run(run_spec_to_pb(spec))
            .await
            .map_err(|s| self.error(s))?;
        run_from_pb(reply.into_inner()).map_err(ClientError::Reply)
    }

    /// One run per variant of `base`, started together.
    pub async fn batch_start_runs(
        &self,
        base: &RunSpec,
        variants: &[RunVariant],
    ) -> Result<Vec<Run>, ClientError> {
        let request = pb::BatchStartRunsRequest {
            base: Some(run_spec_to_pb(base)),
            variants: variants
                .iter()
                .map(|v| pb::RunVariant {
                    name: v.name.clone(),
                    settings: v.settings.clone().into_iter().collect(),
                    seed: v.seed,
                })
                .collect(),
        };
        let reply = self
            .inner
            .clone()
            .batch_start_runs(request)
            .await
            .map_err(|s| self.error(s))?;
        runs(reply.into_inner().runs)
    }

    pub async fn list_runs(&self) -> Result<Vec<Run>, ClientError> {
        let reply = self
            .inner
            .clone()
            .list_runs(pb::ListRunsRequest {})
            .await
            .map_err(|s| self.error(s))?;
        runs(reply.into_inner().runs)
    }

    pub async fn list_optimizers(&self) -> Result<Vec<PluginInfo>, ClientError> {
        let reply = self
            .inner
            .clone()
            .list_optimizers(pb::ListOptimizersRequest {})
            .await
            .map_err(|s| self.error(s))?;
        Ok(reply
            .into_inner()
            .optimizers
            .into_iter()
            .map(optimizer_from_pb)
            .collect())
    }

    /// Asks a run to stop; it keeps what it found. Returns the run as it
    /// was asked: a run no longer running had nothing to stop.
    pub async fn stop_run(&self, run_id: u64) -> Result<Run, ClientError> {
        let reply = self
            .inner
            .clone()
            .stop_run(pb::StopRunRequest { run_id })
            .await
            .map_err(|s| self.error(s))?;
        run_from_pb(reply.into_inner()).map_err(ClientError::Reply)
    }

    pub async fn get_run(&self, run_id: u64) -> Result<Run, ClientError> {
        let reply = self
            .inner
            .clone()
            .get_run(pb::GetRunRequest { run_id })
            .await
            .map_err(|s| self.error(s))?;
        run_from_pb(reply.into_inner()).map_err(ClientError::Reply)
    }

    /// The run's state now, then after every change until it ends.
    pub async fn watch_run(&self, run_id: u64) -> Result<ClientStream<RunEvent>, ClientError> {
        let stream = self
            .inner
            .clone()
            .watch_run(pb::WatchRunRequest { run_id })
            .await
            .map_err(|s| self.error(s))?
            .into_inner();
        let url = self.url.clone();
        Ok(Box::pin(stream.map(move |event| {
            run_event_from_pb(event.map_err(|s| explain(&url, s))?).map_err(ClientError::Reply)
        })))
    }

    /// Jobs oldest first, or newest first with `filter.before_id`; `brief`
    /// leaves out robots, gaits and trajectories.
    pub async fn list_jobs(
        &self,
        filter: &JobFilter,
        brief: bool,
    ) -> Result<Vec<Job>, ClientError> {
        let reply = self
            .inner
            .clone()
            .list_jobs(pb::ListJobsRequest {
                run_id: filter.run_id.unwrap_or(0),
                states: filter
                    .states
                    .iter()
                    .map(|s| crate::convert::job_state_to_pb(*s) as i32)
                    .collect(),
                limit: filter.limit.unwrap_or(0),
                after_id: filter.after_id,
                newest_first: filter.before_id.is_some(),
                before_id: filter.before_id.filter(|&b| b != u64::MAX).unwrap_or(0),
                brief,
            })
            .await
            .map_err(|s| self.error(s))?;
        reply
            .into_inner()
            .jobs
            .into_iter()
            .map(|j| job_from_pb(j).map_err(ClientError::Reply))
            .collect()
    }

    /// Job state changes as they happen, of a run (`run_id` > 0) or of the
    /// given jobs.
    pub async fn watch_jobs(
        &self,
        run_id: u64,
        job_ids: Vec<u64>,
        brief: bool,
    ) -> Result<ClientStream<Job>, ClientError> {
        let stream = self
            .inner
            .clone()
            .watch_jobs(pb::WatchJobsRequest {
                job_ids,
                run_id,
                brief,
            })
            .await
            .map_err(|s| self.error(s))?
            .into_inner();
        let url = self.url.clone();
        Ok(Box::pin(stream.map(move |job| {
            job_from_pb(job.map_err(|s| explain(&url, s))?).map_err(ClientError::Reply)
        })))
    }
}

fn runs(runs: Vec<pb::Run>) -> Result<Vec<Run>, ClientError> {
    runs.into_iter()
        .map(|r| run_from_pb(r).map_err(ClientError::Reply))
        .collect()
}

/// One sentence for a failed call: what went wrong and for whom.
fn explain(url: &str, status: Status) -> ClientError {
    let url = url.to_owned();
    match status.code() {
        Code::Unavailable | Code::Unknown if is_transport(&status) => {
            let reason = transport_reason(&status);
            if reason.starts_with(TLS_FAILED) {
                ClientError::TlsFailed { url, reason }
            } else {
                ClientError::Unreachable { reason, url }
            }
        }
        Code::Unimplemented => ClientError::NotAnOrganizer { url },
        Code::Unauthenticated | Code::PermissionDenied => ClientError::Unauthenticated {
            url,
            message: status.message().to_owned(),
        },
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            ClientError::Invalid(status.message().to_owned())
        }
        Code::NotFound => ClientError::NotFound(status.message().to_owned()),
        Code::Unavailable => ClientError::NotNow(status.message().to_owned()),
        code => ClientError::Organizer(format!("{code:?}: {}", status.message())),
    }
}

/// Whether the call failed below gRPC (no connection, no HTTP/2): such a
/// status carries its cause; one the organizer answered itself does not.
fn is_transport(status: &Status) -> bool {
    status.source().is_some()
}

/// The innermost cause of a transport failure, in words.
/// How [`transport_reason`] begins a failed TLS handshake.
const TLS_FAILED: &str = "the TLS handshake failed";

fn transport_reason(status: &Status) -> String {
    let mut causes: Vec<String> = Vec::new();
    let mut source = status.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused".into(),
                std::io::ErrorKind::TimedOut => return "connection timed out".into(),
                _ => {}
            }
        }
        causes.push(e.to_string());
        source = e.source();
    }
    let all = causes.join(": ").to_lowercase();
    if all.contains("dns error") || all.contains("failed to lookup") {
        "the host name does not resolve".into()
    } else if all.contains("invalidcontenttype")
        || all.contains("corrupt message")
        || all.contains("tls")
        || all.contains("certificate")
    {
        format!(
            "{TLS_FAILED} ({})",
            causes.last().map_or("", |c| c.as_str())
        )
    } else if all.contains("http2") || all.contains("frame") || all.contains("h2 protocol") {
        "it does not speak gRPC over HTTP/2 (plain http against https, or another service?)".into()
    } else {
        causes
            .last()
            .cloned()
            .unwrap_or_else(|| status.message().to_owned())
    }
}
