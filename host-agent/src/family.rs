//! Any robot family as a host's backend: [`FamilyBackend`] walks the robots
//! a [`RobotFamily`] builds, each job on a blocking thread, and refuses a
//! job whose robot is another family's with an error the organizer retries
//! on another host. The host agent knows no family: the binary (or a test)
//! hands one in.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use yamor_core::RobotConfig;
use yamor_core::family::{FamilyError, RobotFamily, Walker};

use crate::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, EvaluationJob, HostError, Outcome, RobotSource,
};
use crate::session::SessionFactory;

/// A family's error as a host reports it: a robot of another family, or a
/// failure that may not recur, is retried elsewhere; a wrong robot or gait
/// fails the same way everywhere.
#[must_use]
pub fn host_error(e: FamilyError) -> HostError {
    match e {
        FamilyError::Cancelled => HostError::Cancelled,
        e @ (FamilyError::NotOurs { .. } | FamilyError::Failed(_)) => {
            HostError::Failed(e.to_string())
        }
        e @ (FamilyError::UnknownExample { .. }
        | FamilyError::Invalid(_)
        | FamilyError::Unsupported(_)) => HostError::InvalidJob(e.to_string()),
    }
}

/// The robot this host stands for and the gait it walks unless a job
/// brings another.
struct Own {
    source: RobotSource,
    walker: Arc<dyn Walker>,
    gait: RobotConfig,
}

/// The robot the last job brought and its built form.
type Brought = parking_lot::Mutex<Option<(RobotSource, Arc<dyn Walker>)>>;

/// A simulated robot of one family.
pub struct FamilyBackend {
    family: Arc<dyn RobotFamily>,
    name: String,
    engine: Option<String>,
    own: Arc<Own>,
    /// The robot the last job brought and its built form: a run's jobs
    /// all bring the same one, built once.
    brought: Arc<Brought>,
    sessions: Option<Arc<dyn SessionFactory>>,
}

impl FamilyBackend {
    /// A host of `family`'s embedded example `name` on `engine` (the
    /// family's default when `None`).
    pub fn example(
        family: Arc<dyn RobotFamily>,
        name: &str,
        engine: Option<&str>,
    ) -> Result<Self, HostError> {
        let source = RobotSource::Example(name.to_owned());
        if !family.owns(&source) {
            return Err(HostError::InvalidJob(format!(
                "unknown {} robot {name:?}; known: {}",
                family.name(),
                family.examples().join(", ")
            )));
        }
        let gait = family.example_gait(name).map_err(host_error)?;
        Self::new(family, name, source, gait, engine)
    }

    /// A host of the robot `source` (an example or a document of
    /// `family`), called `name`, walking `gait` unless a job brings one.
    pub fn new(
        family: Arc<dyn RobotFamily>,
        name: &str,
        source: RobotSource,
        gait: RobotConfig,
        engine: Option<&str>,
    ) -> Result<Self, HostError> {
        let walker = family.walker(&source, engine).map_err(host_error)?;
        Ok(FamilyBackend {
            family,
            name: name.to_owned(),
            engine: engine.map(str::to_owned),
            own: Arc::new(Own {
                source,
                walker,
                gait,
            }),
            brought: Arc::default(),
            sessions: None,
        })
    }

    /// The same host, also opening robot sessions through `sessions`.
    #[must_use]
    pub fn with_sessions(mut self, sessions: Arc<dyn SessionFactory>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The family this host walks.
    #[must_use]
    pub fn family(&self) -> &Arc<dyn RobotFamily> {
        &self.family
    }
}

/// The walker for a job's robot: the host's own, the one built for the
/// previous job when it is the same robot, or a fresh one.
fn walker_for(
    family: &dyn RobotFamily,
    engine: Option<&str>,
    own: &Own,
    brought: &Brought,
    robot: &RobotSource,
) -> Result<Arc<dyn Walker>, HostError> {
    if matches!(robot, RobotSource::Default) || *robot == own.source {
        return Ok(own.walker.clone());
    }
    if let Some((known, walker)) = brought.lock().as_ref()
        && known == robot
    {
        return Ok(walker.clone());
    }
    if !family.owns(robot) {
        return Err(host_error(FamilyError::NotOurs {
            family: family.name(),
        }));
    }
    let walker = family.walker(robot, engine).map_err(host_error)?;
    *brought.lock() = Some((robot.clone(), walker.clone()));
    Ok(walker)
}

impl Backend for FamilyBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Simulation
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn session(&self) -> Option<Arc<dyn SessionFactory>> {
        self.sessions.clone()
    }

    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        let family = self.family.clone();
        let engine = self.engine.clone();
        let own = self.own.clone();
        let brought = self.brought.clone();
        Box::pin(async move {
            let flag = cancel.clone();
            // Building a job's robot and walking it never run on the async
            // runtime: heartbeats and GetInfo answer during a walk.
            let outcome = tokio::task::spawn_blocking(move || {
                let walker = walker_for(&*family, engine.as_deref(), &own, &brought, &job.robot)?;
                // Checked once the robot is known to be ours: another
                // family's robot is still retried on its own hosts.
                if !job.spec.world.is_nominal() && !family.builds_worlds() {
                    return Err(host_error(FamilyError::Unsupported(format!(
                        "a {} walk has no drawn worlds (engine, masses, servos): use --worlds single",
                        family.name()
                    ))));
                }
                let gait = job.gait.as_ref().unwrap_or(&own.gait);
                walker.walk(gait, &job.spec, &flag).map_err(host_error)
            })
            .await
            .map_err(|e| HostError::Failed(format!("the walk panicked: {e}")))??;
            if cancel.load(Ordering::Relaxed) {
                return Err(HostError::Cancelled);
            }
            Ok(Outcome::Walk(outcome))
        })
    }
}
