//! The seam between the gRPC service and whatever stands behind it.
//!
//! A [`Backend`] evaluates jobs; the service knows nothing of physics,
//! serial ports or expressions. Jobs and outcomes are
//! `yamor_core::evaluation`'s types: the gRPC edge converts to and from them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub use yamor_core::evaluation::{
    BackendKind, EvaluationJob as Job, EvaluationSpec as Spec, Outcome, RobotSource, Sample,
};

/// Why an evaluation did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The job itself is wrong: retrying it anywhere is pointless.
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// This backend cannot do that (e.g. a session on an expression host).
    #[error("not supported by the {backend} backend: {what}")]
    Unsupported {
        backend: &'static str,
        what: &'static str,
    },
    #[error("cancelled")]
    Cancelled,
    /// The robot or simulator failed; another host may succeed.
    #[error("backend failure: {0}")]
    Failed(String),
}

/// Set when the caller no longer wants the result; backends poll it.
pub type CancelFlag = Arc<AtomicBool>;

/// Sets its flag when dropped: tonic drops a handler's future when the
/// client cancels or disconnects, and whatever polls the flag stops.
pub(crate) struct CancelOnDrop(pub(crate) CancelFlag);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One robot (or a stand-in) that evaluates jobs, one at a time.
///
/// `evaluate` must not block the async runtime: physics goes to a blocking
/// thread. It should return soon after `cancel` is set.
pub trait Backend: Send + Sync + 'static {
    fn kind(&self) -> BackendKind;
    /// The robot name, the serial port or the expression.
    fn describe(&self) -> String;
    /// Objectives served besides gaits, in `Objective`'s text form (`*`
    /// suffix wildcards allowed); an expression host serves its expression.
    fn objectives(&self) -> Vec<String> {
        Vec::new()
    }
    fn evaluate(&self, job: Job, cancel: CancelFlag) -> BoxFuture<'_, Result<Outcome, HostError>>;
    /// The session surface of IYaMoRHost3, if this backend has one.
    fn session(&self) -> Option<Arc<dyn crate::session::SessionFactory>> {
        None
    }
    /// Brings the robot to a safe stop (every motor off). Called when the
    /// host stops or loses its organizer; blocks, so call it off the runtime.
    fn halt(&self) {}
}
