//! The scheduler's [`HostClient`] over a host's `HostAgent` service, and
//! which status codes are whose fault.

use std::error::Error as _;
use std::sync::Arc;

use tonic::{Code, Status};
use yamor_core::evaluation::{EvaluationJob, Outcome};
use yamor_proto::evaluation::{evaluation_job_to_pb, outcome};
use yamor_proto::transport::{AuthChannel, ClientSecurity, TransportError};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;

use crate::convert::backend;
use crate::model::HostInfo;
use crate::scheduler::{BoxFuture, HostCallError, HostClient, HostConnector};

/// Dials hosts' `HostAgent` services.
pub struct GrpcConnector {
    pub security: ClientSecurity,
}

impl HostConnector for GrpcConnector {
    fn connect(&self, address: &str) -> Result<Arc<dyn HostClient>, TransportError> {
        let channel = yamor_proto::transport::channel(address, &self.security)?;
        Ok(Arc::new(GrpcHost {
            client: HostAgentClient::new(channel)
                .max_decoding_message_size(yamor_proto::MAX_MESSAGE_BYTES),
        }))
    }
}

struct GrpcHost {
    client: HostAgentClient<AuthChannel>,
}

impl HostClient for GrpcHost {
    fn info(&self) -> BoxFuture<'static, Result<HostInfo, HostCallError>> {
        let mut client = self.client.clone();
        Box::pin(async move {
            let info = client
                .get_info(pb::GetInfoRequest {})
                .await
                .map_err(host_error)?
                .into_inner();
            Ok(HostInfo {
                backend: backend(info.backend).ok().flatten(),
                robot: info.robot,
                objectives: info.objectives,
                busy: info.busy,
            })
        })
    }

    fn evaluate(
        &self,
        job_id: u64,
        attempt: u32,
        job: &EvaluationJob,
    ) -> BoxFuture<'static, Result<Outcome, HostCallError>> {
        let mut client = self.client.clone();
        let request = pb::EvaluateRequest {
            job: Some(evaluation_job_to_pb(job)),
            job_id,
            attempt,
        };
        Box::pin(async move {
            let response = client.evaluate(request).await.map_err(host_error)?;
            // A reply without a result is the host's fault, not a fitness of 0.
            outcome(response.into_inner().result)
                .map_err(|e| HostCallError::Failed(format!("the host's reply: {e}")))
        })
    }
}

/// Whose fault a failed call is, by its status code (docs/api.md, "Status
/// codes"). The host is marked down only when the call did not reach it;
/// an evaluation that raised (UNKNOWN from an uncaught exception, INTERNAL)
/// is this attempt's fault, retried elsewhere.
fn host_error(status: Status) -> HostCallError {
    let message = format!("{:?}: {}", status.code(), status.message());
    // Transport failures carry their cause; application errors do not.
    let transport = status.source().is_some();
    match status.code() {
        Code::InvalidArgument | Code::OutOfRange => HostCallError::InvalidJob(message),
        Code::Unavailable | Code::DeadlineExceeded | Code::Unauthenticated => {
            HostCallError::Unavailable(message)
        }
        Code::Unknown if transport => HostCallError::Unavailable(message),
        // Busy only when the host says so: a message too large or a quota
        // is RESOURCE_EXHAUSTED too, and retrying it uncounted never ends.
        Code::ResourceExhausted
            if !transport && status.metadata().contains_key(yamor_proto::BUSY_METADATA) =>
        {
            HostCallError::Busy(message)
        }
        // FAILED_PRECONDITION: not an objective this host serves; UNIMPLEMENTED:
        // a host without Evaluate. Others may serve it.
        _ => HostCallError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exception_in_an_evaluation_is_the_jobs_fault_not_a_dead_host() {
        // An uncaught exception in a Python handler arrives as UNKNOWN.
        let raised = host_error(Status::unknown("Exception calling application: boom"));
        assert!(matches!(raised, HostCallError::Failed(_)), "{raised:?}");
        let not_served = host_error(Status::failed_precondition("does not serve"));
        assert!(
            matches!(not_served, HostCallError::Failed(_)),
            "{not_served:?}"
        );
        let bad = host_error(Status::invalid_argument("job.gait_xml"));
        assert!(matches!(bad, HostCallError::InvalidJob(_)), "{bad:?}");
        let gone = host_error(Status::unavailable("connection refused"));
        assert!(matches!(gone, HostCallError::Unavailable(_)), "{gone:?}");
        let mut marked = tonic::metadata::MetadataMap::new();
        marked.insert(
            yamor_proto::BUSY_METADATA,
            tonic::metadata::MetadataValue::from_static("1"),
        );
        let busy = host_error(Status::with_metadata(
            Code::ResourceExhausted,
            "host is busy",
            marked,
        ));
        assert!(matches!(busy, HostCallError::Busy(_)), "{busy:?}");
        // Unmarked, it is an attempt that failed (a message too large).
        let too_large = host_error(Status::resource_exhausted("message too large"));
        assert!(
            matches!(too_large, HostCallError::Failed(_)),
            "{too_large:?}"
        );
        let late = host_error(Status::deadline_exceeded("timeout"));
        assert!(matches!(late, HostCallError::Unavailable(_)), "{late:?}");
    }
}
