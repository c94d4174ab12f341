//! The session's domain: what a [`crate::session::SessionHost`] takes and
//! returns, as plain Rust types. Robots, configurations, connections,
//! scripts and defect modes are `yamor_core`'s; the gRPC edge
//! ([`crate::grpc`]) converts to and from these, so neither a protobuf
//! change nor a status code reaches the session logic.

use std::collections::HashMap;

use yamor_core::evaluation::{RobotSource, Sample};
use yamor_core::{ModuleConfig, ModuleId};

use crate::backend::HostError;

/// Why a session call did nothing (or stopped part way, for scripts).
/// Messages name the offending field or value; the gRPC edge passes them on
/// unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    /// The request is wrong: a value out of range, an unknown module, a
    /// refused message.
    #[error("{0}")]
    Invalid(String),
    /// The call is fine but comes too early or too late (no open
    /// simulation, no connected robot, a session in the way).
    #[error("{0}")]
    NotReady(String),
    /// This robot cannot do that (e.g. a supervisor command on a real robot).
    #[error("{0}")]
    Unsupported(String),
    /// The caller went away.
    #[error("cancelled: the caller went away")]
    Cancelled,
    /// The robot, the simulator or the host failed.
    #[error("{0}")]
    Failed(String),
}

impl SessionError {
    /// The same error with `prefix` before its message, e.g. the script line
    /// that failed. A cancellation has no reader, so it stays as it is.
    #[must_use]
    pub fn context(self, prefix: &str) -> Self {
        match self {
            SessionError::Invalid(m) => SessionError::Invalid(format!("{prefix}{m}")),
            SessionError::NotReady(m) => SessionError::NotReady(format!("{prefix}{m}")),
            SessionError::Unsupported(m) => SessionError::Unsupported(format!("{prefix}{m}")),
            SessionError::Cancelled => SessionError::Cancelled,
            SessionError::Failed(m) => SessionError::Failed(format!("{prefix}{m}")),
        }
    }
}

impl From<HostError> for SessionError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::InvalidJob(m) => SessionError::Invalid(m),
            e @ HostError::Unsupported { .. } => SessionError::Unsupported(e.to_string()),
            HostError::Cancelled => SessionError::Cancelled,
            HostError::Failed(m) => SessionError::Failed(m),
        }
    }
}

/// What `OpenSimulation` opens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenRequest {
    pub robot: RobotSource,
    pub seed: u64,
    /// `None`: the backend's default.
    pub ground_friction: Option<f64>,
}

/// The session as a client sees it after every call.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SessionState {
    pub open: bool,
    pub connected: bool,
    pub simulation_mode: bool,
    /// Seconds since the robot was opened: virtual in simulation mode.
    pub elapsed: f64,
    /// `None` while no robot is open.
    pub position: Option<Sample>,
    /// Parameter messages waiting for `Flush`.
    pub pending_changes: u32,
    /// How upright the robot is, where known.
    pub up: Option<f64>,
}

/// One module as `GetModule` shows it: the oscillator fields of its
/// [`ModuleConfig`] in the host copy (its couplings are listed on their
/// own, as [`Coupling`]s) and whether it is marked defect, which the
/// configuration does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModuleView {
    pub id: ModuleId,
    pub amplitude: f64,
    pub offset: f64,
    pub speed: f64,
    pub min_angle: f64,
    pub max_angle: f64,
    /// Marked as a defect motor (C.2.6).
    pub defect: bool,
}

impl ModuleView {
    #[must_use]
    pub fn of(module: &ModuleConfig, defect: bool) -> Self {
        ModuleView {
            id: module.id,
            amplitude: module.amplitude,
            offset: module.offset,
            speed: module.speed,
            min_angle: module.min_angle,
            max_angle: module.max_angle,
            defect,
        }
    }
}

/// `SetModule`: the fields present change, the others stay.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModuleChange {
    pub id: ModuleId,
    pub amplitude: Option<f64>,
    pub offset: Option<f64>,
    pub speed: Option<f64>,
    pub min_angle: Option<f64>,
    pub max_angle: Option<f64>,
}

/// A CPG coupling `from` → `to` (the `cpglink` of `from`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Coupling {
    pub from: ModuleId,
    pub to: ModuleId,
    pub phase: f64,
    pub weight: f64,
}

/// `SetCoupling`: the fields present change; a missing coupling is added.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CouplingChange {
    pub from: ModuleId,
    pub to: ModuleId,
    pub phase: Option<f64>,
    pub weight: Option<f64>,
}

/// Tristate control flags (C.2.4): `Some(true)` on, `Some(false)` off,
/// `None` unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControlFlags {
    /// `None`: every module of the connected robot.
    pub module_id: Option<ModuleId>,
    pub uart: Option<bool>,
    pub cpg: Option<bool>,
    pub motor: Option<bool>,
}

/// The clock a `Sleep` counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SleepClock {
    /// Virtual in simulation mode, the wall clock otherwise.
    #[default]
    Host,
    Virtual,
    /// The wall clock, even in a simulation.
    Real,
}

/// The C.1 mapping: real id → simulation id; unmapped ids map to themselves.
pub type IdMapping = HashMap<ModuleId, ModuleId>;
