//! The seam between the gRPC service and whatever stands behind it.
//!
//! A [`Backend`] evaluates jobs; the service knows nothing of physics,
//! serial ports or expressions. Jobs and outcomes are
//! `yamor_core::evaluation`'s types: the gRPC edge converts to and from them.
//! A backend with a robot session also opens [`RobotLink`]s through its
//! [`SessionFactory`]; the session logic over them is `crate::session`'s,
//! which depends on this seam and not the other way round.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::{Connection, ModuleId};
use yamor_snp::{DefectMode, SnpMessage};

pub use yamor_core::evaluation::{
    BackendKind, EvaluationJob, EvaluationSpec, Outcome, RobotSource, Sample, Walk,
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
    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>>;
    /// The session surface of IYaMoRHost3, if this backend has one.
    fn session(&self) -> Option<Arc<dyn SessionFactory>> {
        None
    }
    /// Brings the robot to a safe stop (every motor off). Called when the
    /// host stops or loses its organizer; blocks, so call it off the runtime.
    fn halt(&self) {}
}

/// One robot as a session drives it: SNP messages out, replies back, and
/// time passing. The simulator implements it over `Simulation`, the serial
/// robot over its port.
pub trait RobotLink: Send {
    /// Whether time is virtual (a simulator). The C.1 id mapping applies
    /// only then.
    fn simulation_mode(&self) -> bool;
    /// Seconds since the link opened: virtual in simulation mode.
    fn elapsed(&self) -> f64;
    /// The robot position: the centre module in a simulator, the LED tracker
    /// on the real robot.
    fn position(&self) -> Sample;
    /// How upright the robot is (1 as built, −1 upside down), where known.
    fn up(&self) -> Option<f64> {
        None
    }
    /// Sends one SNP request to module `dst` (a wire id, already translated)
    /// and returns the module's reply, an `Ack`, a `Nack` or a `State`.
    fn send(&mut self, dst: u8, message: &SnpMessage) -> Result<SnpMessage, HostError>;
    /// Lets `seconds` of robot time pass (as fast as possible in a
    /// simulator); returns [`HostError::Cancelled`] soon after `cancel` is set.
    fn advance(&mut self, seconds: f64, cancel: &AtomicBool) -> Result<(), HostError>;
    /// The physical world's controls, when there is a simulator behind the link.
    fn supervisor(&mut self) -> Option<&mut dyn Supervisor> {
        None
    }
}

/// The supervisor commands of a simulated world (thesis 5.4.1). Ids here are
/// simulation ids.
pub trait Supervisor {
    /// Every module of the world.
    fn modules(&self) -> Vec<ModuleId>;
    /// Mates a free module to the robot (C.2.7 `connect`).
    fn connect(&mut self, connection: Connection) -> Result<(), HostError>;
    /// Detaches a module and puts it away (C.2.7 `disconnect`).
    fn disconnect(&mut self, id: ModuleId) -> Result<(), HostError>;
    /// The physical side of a defect motor (C.2.6).
    fn set_defect(&mut self, id: ModuleId, mode: DefectMode) -> Result<(), HostError>;
    fn set_ground_friction(&mut self, mu: f64) -> Result<(), HostError>;
    /// Lifts the robot to `height` m and lets it fall (thesis 7.5.2).
    fn drop_robot(&mut self, height: f64, upside_down: bool) -> Result<(), HostError>;
    /// Back to the world as it was opened, modules powered on but idle.
    fn reset(&mut self) -> Result<(), HostError>;
}

/// Opens robots for sessions; implemented by backends that have one.
pub trait SessionFactory: Send + Sync {
    /// Whether the links it opens are simulations.
    fn simulation_mode(&self) -> bool;
    /// Builds (or connects to) the robot. `ground_friction` `None` means the
    /// backend's default.
    fn open(
        &self,
        robot: &RobotSource,
        seed: u64,
        ground_friction: Option<f64>,
    ) -> Result<Box<dyn RobotLink>, HostError>;
}
