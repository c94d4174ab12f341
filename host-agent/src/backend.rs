//! The seam between the gRPC service and whatever stands behind it.
//!
//! A [`Backend`] evaluates jobs; the service knows nothing of physics,
//! serial ports or expressions. The types here are the domain side of the
//! proto messages: the service converts at its boundary.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use yamor_core::RobotConfig;
use yamor_sim::Situation;

/// Which robot to build.
#[derive(Debug, Clone, PartialEq)]
pub enum RobotSource {
    /// The host's own robot.
    Default,
    /// An embedded example by name.
    Example(String),
    /// A morphology document.
    Morphology(String),
}

/// How to walk and measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub warmup: f64,
    pub measure: f64,
    pub sample_interval: f64,
    pub seed: u64,
    /// `None`: the backend's default.
    pub ground_friction: Option<f64>,
    pub full_trajectory: bool,
    /// Where the walk starts (upside down, defects); simulation only.
    pub situation: Situation,
    /// Walks averaged, from seeds `seed`, `seed + 1`, …; at least 1.
    pub repeats: u32,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            warmup: 8.0,
            measure: 12.0,
            sample_interval: 0.5,
            seed: 0,
            ground_friction: None,
            full_trajectory: false,
            situation: Situation::default(),
            repeats: 1,
        }
    }
}

/// One evaluation request, already parsed and validated.
#[derive(Debug, Clone)]
pub struct Job {
    pub robot: RobotSource,
    /// `None` when the job carries no gait (expression hosts need none).
    pub gait: Option<RobotConfig>,
    pub parameters: Vec<(String, f64)>,
    pub spec: Spec,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    pub t: f64,
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// What one evaluation measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// The fitness: m/s for robots, the value for expressions.
    pub velocity: f64,
    pub start: Point,
    pub end: Point,
    pub distance: f64,
    pub path_length: f64,
    pub min_height: f64,
    pub max_height: f64,
    pub sample_count: u32,
    /// Every sample, when the spec asked for them.
    pub samples: Vec<Point>,
    pub simulated: f64,
    pub wall: Duration,
    pub physics_steps: u64,
}

impl Outcome {
    /// The summary of a sampled walk between `start` and `end`.
    #[must_use]
    pub fn from_samples(
        velocity: f64,
        start: Point,
        end: Point,
        samples: Vec<Point>,
        keep_samples: bool,
    ) -> Self {
        let window: Vec<&Point> = samples
            .iter()
            .filter(|p| p.t >= start.t && p.t <= end.t)
            .collect();
        let path_length = window
            .windows(2)
            .map(|w| (w[1].x - w[0].x).hypot(w[1].y - w[0].y))
            .sum();
        let (min_height, max_height) = samples
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.z), hi.max(p.z))
            });
        Outcome {
            velocity,
            start,
            end,
            distance: (end.x - start.x).hypot(end.y - start.y),
            path_length,
            min_height: if samples.is_empty() { 0.0 } else { min_height },
            max_height: if samples.is_empty() { 0.0 } else { max_height },
            sample_count: u32::try_from(samples.len()).unwrap_or(u32::MAX),
            samples: if keep_samples { samples } else { Vec::new() },
            ..Outcome::default()
        }
    }
}

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

/// What kind of backend this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Simulation,
    Real,
    Expression,
}

impl BackendKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Simulation => "simulation",
            BackendKind::Real => "real",
            BackendKind::Expression => "expression",
        }
    }
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
    fn evaluate(&self, job: Job, cancel: CancelFlag) -> BoxFuture<'_, Result<Outcome, HostError>>;
    /// The session surface of IYaMoRHost3, if this backend has one.
    fn session(&self) -> Option<Arc<dyn crate::session::SessionFactory>> {
        None
    }
    /// Brings the robot to a safe stop (every motor off). Called when the
    /// host stops or loses its organizer; blocks, so call it off the runtime.
    fn halt(&self) {}
}
