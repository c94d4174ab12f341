//! The simulation backend: every evaluation builds a fresh rapier world of
//! the job's robot on a blocking thread and walks it in virtual time.

use std::sync::atomic::Ordering;

use yamor_core::Morphology;
use yamor_firmware_sim::robots::ExampleRobot;
use yamor_firmware_sim::{EvaluationSpec, SimError, SimSettings, evaluate_cancellable};

use crate::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, HostError, Job, Outcome, Point, RobotSource,
};

/// A simulated robot: a default morphology and gait, and simulator settings.
pub struct SimBackend {
    name: String,
    morphology: Morphology,
    gait: yamor_core::RobotConfig,
    settings: SimSettings,
}

impl SimBackend {
    /// The embedded example robot `name` (see `yamor robots`).
    pub fn example(name: &str, settings: SimSettings) -> Result<Self, HostError> {
        let robot = ExampleRobot::named(name).ok_or_else(|| {
            HostError::InvalidJob(format!(
                "unknown robot {name:?}; known: {}",
                ExampleRobot::names().join(", ")
            ))
        })?;
        Ok(SimBackend {
            name: name.to_owned(),
            morphology: robot
                .morphology()
                .map_err(|e| HostError::Failed(e.to_string()))?,
            gait: robot.gait().map_err(|e| HostError::Failed(e.to_string()))?,
            settings,
        })
    }

    /// A robot given as documents.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        morphology: Morphology,
        gait: yamor_core::RobotConfig,
        settings: SimSettings,
    ) -> Self {
        SimBackend {
            name: name.into(),
            morphology,
            gait,
            settings,
        }
    }

    #[must_use]
    pub fn settings(&self) -> SimSettings {
        self.settings
    }

    /// Resolves a job's robot to a morphology.
    pub fn morphology_for(&self, source: &RobotSource) -> Result<Morphology, HostError> {
        match source {
            RobotSource::Default => Ok(self.morphology.clone()),
            other => resolve(other),
        }
    }
}

fn point(s: yamor_firmware_sim::evaluate::Sample) -> Point {
    Point {
        t: s.t,
        x: s.x,
        y: s.y,
        z: s.z,
    }
}

/// Builds session worlds from the backend's default robot and settings.
struct SimSessions {
    morphology: Morphology,
    settings: SimSettings,
}

impl crate::session::SessionFactory for SimSessions {
    fn open(
        &self,
        robot: &RobotSource,
        seed: u64,
        ground_friction: Option<f64>,
    ) -> Result<yamor_firmware_sim::Simulation, tonic::Status> {
        let morphology = match robot {
            RobotSource::Default => self.morphology.clone(),
            other => resolve(other).map_err(|e| tonic::Status::invalid_argument(e.to_string()))?,
        };
        let mut settings = self.settings;
        settings.seed = seed;
        if let Some(mu) = ground_friction {
            settings.ground_friction = mu;
        }
        yamor_firmware_sim::Simulation::new(&morphology, settings)
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))
    }
}

/// A non-default robot source as a morphology.
fn resolve(source: &RobotSource) -> Result<Morphology, HostError> {
    match source {
        RobotSource::Default => Err(HostError::InvalidJob("no default robot here".into())),
        RobotSource::Example(name) => ExampleRobot::named(name)
            .ok_or_else(|| HostError::InvalidJob(format!("job.robot: unknown example {name:?}")))?
            .morphology()
            .map_err(|e| HostError::Failed(e.to_string())),
        RobotSource::Morphology(xml) => Morphology::from_xml_str("job.robot.morphology_xml", xml)
            .map_err(|e| HostError::InvalidJob(e.to_string())),
    }
}

impl Backend for SimBackend {
    fn session(&self) -> Option<std::sync::Arc<dyn crate::session::SessionFactory>> {
        Some(std::sync::Arc::new(SimSessions {
            morphology: self.morphology.clone(),
            settings: self.settings,
        }))
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Simulation
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn evaluate(&self, job: Job, cancel: CancelFlag) -> BoxFuture<'_, Result<Outcome, HostError>> {
        Box::pin(async move {
            let morphology = self.morphology_for(&job.robot)?;
            let gait = job.gait.unwrap_or_else(|| self.gait.clone());
            let mut settings = self.settings;
            settings.seed = job.spec.seed;
            if let Some(mu) = job.spec.ground_friction {
                settings.ground_friction = mu;
            }
            let spec = EvaluationSpec {
                warmup: job.spec.warmup,
                measure: job.spec.measure,
                sample_interval: job.spec.sample_interval,
            };
            let keep = job.spec.full_trajectory;
            let flag = cancel.clone();
            // Physics never runs on the async runtime.
            let evaluation = tokio::task::spawn_blocking(move || {
                evaluate_cancellable(&morphology, &gait, settings, spec, &flag)
            })
            .await
            .map_err(|e| HostError::Failed(format!("simulation thread: {e}")))?;
            let evaluation = match evaluation {
                Ok(e) => e,
                Err(SimError::Cancelled(_)) => return Err(HostError::Cancelled),
                Err(
                    e @ (SimError::UnknownModule(_)
                    | SimError::IdOutOfRange(_)
                    | SimError::GaitModuleNotInMorphology(_)
                    | SimError::OutOfRange { .. }
                    | SimError::Refused { .. }),
                ) => return Err(HostError::InvalidJob(e.to_string())),
                Err(e) => return Err(HostError::Failed(e.to_string())),
            };
            if cancel.load(Ordering::Relaxed) {
                return Err(HostError::Cancelled);
            }
            let samples = evaluation.trajectory.iter().copied().map(point).collect();
            let mut outcome = Outcome::from_samples(
                evaluation.velocity,
                point(evaluation.start),
                point(evaluation.end),
                samples,
                keep,
            );
            outcome.simulated = evaluation.end.t;
            outcome.wall = evaluation.wall_time;
            outcome.physics_steps = evaluation.physics_steps;
            Ok(outcome)
        })
    }
}
