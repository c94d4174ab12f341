//! The Roombot backend: a simulation host whose robot is of the Roombot
//! module family (`yamor_roombots::gait`). Every evaluation lays a fresh
//! robot on the floor on a blocking thread and walks it; the gRPC service
//! sees a simulation host like any other.

use std::sync::Arc;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome, RobotSource};
use yamor_roombots::gait::{RoombotExample, RoombotRobot, WalkError, walk};

use crate::backend::{Backend, BoxFuture, CancelFlag, HostError};

/// A simulated Roombot robot and its own gait (for jobs that bring none).
pub struct RoombotBackend {
    name: String,
    robot: Arc<RoombotRobot>,
    gait: Arc<RobotConfig>,
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
        let gait = example
            .gait()
            .map_err(|e| HostError::Failed(e.to_string()))?;
        Ok(RoombotBackend {
            name: name.to_owned(),
            robot: Arc::new(robot),
            gait: Arc::new(gait),
        })
    }
}

/// The robot a job names: the host's own (`name`, `robot`), another
/// embedded example, or a Roombot description the job carries. A YaMoR
/// robot is another host's: the error is one the organizer retries
/// elsewhere.
fn robot_of(
    name: &str,
    robot: &Arc<RoombotRobot>,
    source: &RobotSource,
) -> Result<Arc<RoombotRobot>, HostError> {
    let elsewhere = || {
        HostError::Failed(
            "the job's robot is a YaMoR robot; this host walks Roombots (another host may walk it)"
                .into(),
        )
    };
    match source {
        RobotSource::Default => Ok(robot.clone()),
        RobotSource::Example(n) if n == name => Ok(robot.clone()),
        RobotSource::Example(n) => {
            let example = RoombotExample::named(n).ok_or_else(elsewhere)?;
            let robot = example
                .robot()
                .map_err(|e| HostError::InvalidJob(e.to_string()))?;
            Ok(Arc::new(robot))
        }
        RobotSource::Morphology(xml) => {
            if !RoombotRobot::is_roombots(xml) {
                return Err(elsewhere());
            }
            let robot = RoombotRobot::from_xml_str("the job's morphology", xml)
                .map_err(|e| HostError::InvalidJob(e.to_string()))?;
            Ok(Arc::new(robot))
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
        let (name, robot, own_gait) = (self.name.clone(), self.robot.clone(), self.gait.clone());
        Box::pin(async move {
            // Parsing a carried robot and walking both stay off the runtime.
            tokio::task::spawn_blocking(move || {
                let robot = robot_of(&name, &robot, &job.robot)?;
                let gait = job.gait.unwrap_or_else(|| (*own_gait).clone());
                walk(&robot, &gait, &job.spec, &cancel).map_err(|e| match e {
                    WalkError::Cancelled(_) => HostError::Cancelled,
                    // Deterministic: the same job fails on every host.
                    e => HostError::InvalidJob(e.to_string()),
                })
            })
            .await
            .map_err(|e| HostError::Failed(format!("the walk panicked: {e}")))?
        })
    }
}

/// A simulation backend for the embedded example `name` of either module
/// family. Roombots walk on the articulated engine only; asking for
/// another is an error rather than ignored.
pub fn example_backend(
    name: &str,
    settings: yamor_sim::SimSettings,
) -> Result<Arc<dyn Backend>, HostError> {
    if RoombotExample::named(name).is_some() {
        if settings.engine != yamor_sim::physics::Engine::Articulated {
            return Err(HostError::InvalidJob(format!(
                "{name} is a Roombot robot: it walks on the articulated engine only, not {}",
                settings.engine
            )));
        }
        Ok(Arc::new(RoombotBackend::example(name)?))
    } else {
        Ok(Arc::new(crate::sim::SimBackend::example(name, settings)?))
    }
}
