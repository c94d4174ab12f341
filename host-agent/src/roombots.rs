//! The Roombot backend: a simulation host whose robot is of the Roombot
//! module family (`yamor_roombots::gait`). Every evaluation lays a fresh
//! robot on the floor on a blocking thread and walks it; the gRPC service
//! sees a simulation host like any other.

use std::sync::Arc;

use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome, RobotSource};
use yamor_roombots::gait::{RoombotExample, RoombotRobot, WalkError, walk};

use crate::backend::{Backend, BoxFuture, CancelFlag, HostError};

/// A simulated Roombot robot.
pub struct RoombotBackend {
    name: String,
    robot: Arc<RoombotRobot>,
}

impl RoombotBackend {
    /// The embedded Roombot example `name`.
    pub fn example(name: &str) -> Result<Self, HostError> {
        let example = RoombotExample::named(name).ok_or_else(|| {
            HostError::InvalidJob(format!(
                "unknown Roombot robot {name:?}; known: {}",
                RoombotExample::names().join(", ")
            ))
        })?;
        let robot = example
            .robot()
            .map_err(|e| HostError::Failed(e.to_string()))?;
        Ok(RoombotBackend {
            name: name.to_owned(),
            robot: Arc::new(robot),
        })
    }

    /// The robot a job names: this host's, another embedded example, or a
    /// Roombot description the job carries.
    fn robot_of(&self, source: &RobotSource) -> Result<Arc<RoombotRobot>, HostError> {
        match source {
            RobotSource::Default => Ok(self.robot.clone()),
            RobotSource::Example(name) if *name == self.name => Ok(self.robot.clone()),
            RobotSource::Example(name) => {
                let example = RoombotExample::named(name).ok_or_else(|| {
                    HostError::InvalidJob(format!(
                        "{name:?} is not a Roombot robot this host can walk (known: {})",
                        RoombotExample::names().join(", ")
                    ))
                })?;
                let robot = example
                    .robot()
                    .map_err(|e| HostError::InvalidJob(e.to_string()))?;
                Ok(Arc::new(robot))
            }
            RobotSource::Morphology(xml) => {
                if !RoombotRobot::is_roombots(xml) {
                    return Err(HostError::InvalidJob(
                        "the job's robot is a YaMoR morphology; this host walks Roombots".into(),
                    ));
                }
                let robot = RoombotRobot::from_xml_str("the job's morphology", xml)
                    .map_err(|e| HostError::InvalidJob(e.to_string()))?;
                Ok(Arc::new(robot))
            }
        }
    }
}

impl Backend for RoombotBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Simulation
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        Box::pin(async move {
            let robot = self.robot_of(&job.robot)?;
            let gait = job
                .gait
                .ok_or_else(|| HostError::InvalidJob("a Roombot walk needs a gait".into()))?;
            let spec = job.spec;
            tokio::task::spawn_blocking(move || walk(&robot, &gait, &spec, &cancel))
                .await
                .map_err(|e| HostError::Failed(format!("the walk panicked: {e}")))?
                .map_err(|e| match e {
                    WalkError::Cancelled(_) => HostError::Cancelled,
                    // Deterministic: the same job fails on every host.
                    e => HostError::InvalidJob(e.to_string()),
                })
        })
    }
}

/// A simulation backend for the embedded example `name` of either module
/// family.
pub fn example_backend(
    name: &str,
    settings: yamor_sim::SimSettings,
) -> Result<Arc<dyn Backend>, HostError> {
    if RoombotExample::named(name).is_some() {
        Ok(Arc::new(RoombotBackend::example(name)?))
    } else {
        Ok(Arc::new(crate::sim::SimBackend::example(name, settings)?))
    }
}
