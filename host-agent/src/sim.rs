//! The simulation backend: every evaluation builds a fresh rapier world of
//! the job's robot on a blocking thread and walks it in virtual time.
//! Sessions keep one world open and drive it through [`SimLink`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use yamor_core::{Connection, ModuleId, Morphology};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimError, SimSettings, Simulation, evaluate_cancellable};
use yamor_snp::{DefectMode, SnpMessage};

use crate::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, EvaluationJob, HostError, Outcome, RobotSource,
    Sample,
};
use crate::session::{RobotLink, SessionFactory, Supervisor};

/// A simulated robot: a default morphology and gait, and simulator settings.
pub struct SimBackend {
    name: String,
    morphology: Morphology,
    gait: yamor_core::RobotConfig,
    settings: SimSettings,
    /// The robot the last job brought (an example, or a run's own
    /// morphology document) and its parsed form: a run's jobs all bring
    /// the same one, parsed once.
    brought: Arc<parking_lot::Mutex<Option<(RobotSource, Morphology)>>>,
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
            brought: Arc::default(),
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
            brought: Arc::default(),
        }
    }

    #[must_use]
    pub fn settings(&self) -> SimSettings {
        self.settings
    }
}

/// The simulated robot as a session drives it: SNP messages go to the
/// module firmware, time is the simulation's, and the supervisor commands
/// change the world.
pub struct SimLink {
    sim: Simulation,
}

impl SimLink {
    #[must_use]
    pub fn new(sim: Simulation) -> Self {
        SimLink { sim }
    }

    #[must_use]
    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }
}

/// Virtual time between two looks at the cancel flag (s).
const CANCEL_CHECK: f64 = 0.1;

/// Every simulator error is about the request (an unknown module, a value
/// out of range, a refused message, a connection that does not fit) except
/// a cancellation: retrying it on another host is pointless. The match is
/// exhaustive so a new kind must be placed. Evaluations and sessions share
/// it.
fn sim_error(e: SimError) -> HostError {
    match e {
        SimError::Cancelled(_) => HostError::Cancelled,
        e @ (SimError::UnknownModule(_)
        | SimError::IdOutOfRange(_)
        | SimError::GaitModuleNotInMorphology(_)
        | SimError::Connection(_)
        | SimError::SourceStillConnected(_)
        | SimError::NoRoom(..)
        | SimError::LoopDoesNotClose(..)
        | SimError::Physics(_)
        | SimError::OutOfRange { .. }
        | SimError::Refused { .. }
        | SimError::Rotating(_)) => HostError::InvalidJob(e.to_string()),
    }
}

impl RobotLink for SimLink {
    fn simulation_mode(&self) -> bool {
        true
    }

    fn elapsed(&self) -> f64 {
        self.sim.time()
    }

    fn position(&self) -> Sample {
        let p = self.sim.robot_position();
        Sample {
            t: self.sim.time(),
            x: f64::from(p.x),
            y: f64::from(p.y),
            z: f64::from(p.z),
        }
    }

    fn up(&self) -> Option<f64> {
        Some(self.sim.robot_up())
    }

    fn send(&mut self, dst: u8, message: &SnpMessage) -> Result<SnpMessage, HostError> {
        self.sim.deliver(dst, message).map_err(sim_error)
    }

    fn advance(&mut self, seconds: f64, cancel: &AtomicBool) -> Result<(), HostError> {
        let end = self.sim.time() + seconds;
        let half_tick = self.sim.settings().dt / 2.0;
        while self.sim.time() + half_tick <= end {
            if cancel.load(Ordering::Relaxed) {
                return Err(HostError::Cancelled);
            }
            self.sim
                .run_until((self.sim.time() + CANCEL_CHECK).min(end));
        }
        Ok(())
    }

    fn supervisor(&mut self) -> Option<&mut dyn Supervisor> {
        Some(self)
    }
}

impl Supervisor for SimLink {
    fn modules(&self) -> Vec<ModuleId> {
        self.sim.modules().iter().map(|m| m.id).collect()
    }

    fn connect(&mut self, connection: Connection) -> Result<(), HostError> {
        self.sim.connect(connection).map_err(sim_error)
    }

    fn disconnect(&mut self, id: ModuleId) -> Result<(), HostError> {
        self.sim.disconnect(id).map_err(sim_error)
    }

    fn set_defect(&mut self, id: ModuleId, mode: DefectMode) -> Result<(), HostError> {
        self.sim.set_defect(id, mode).map_err(sim_error)
    }

    fn set_ground_friction(&mut self, mu: f64) -> Result<(), HostError> {
        self.sim.set_ground_friction(mu).map_err(sim_error)
    }

    fn drop_robot(&mut self, height: f64, upside_down: bool) -> Result<(), HostError> {
        self.sim.drop_robot(height, upside_down).map_err(sim_error)
    }

    fn reset(&mut self) -> Result<(), HostError> {
        self.sim.reset();
        Ok(())
    }
}

/// Opens session worlds: the backend's robot unless the request names one.
struct SimSessions {
    morphology: Morphology,
    settings: SimSettings,
}

impl SessionFactory for SimSessions {
    fn simulation_mode(&self) -> bool {
        true
    }

    fn open(
        &self,
        robot: &RobotSource,
        seed: u64,
        ground_friction: Option<f64>,
    ) -> Result<Box<dyn RobotLink>, HostError> {
        let morphology = match robot {
            RobotSource::Default => self.morphology.clone(),
            RobotSource::Example(name) => ExampleRobot::named(name)
                .ok_or_else(|| {
                    HostError::InvalidJob(format!(
                        "robot.example: unknown robot {name:?}; known: {}",
                        ExampleRobot::names().join(", ")
                    ))
                })?
                .morphology()
                .map_err(|e| HostError::Failed(e.to_string()))?,
            RobotSource::Morphology(xml) => Morphology::from_xml_str("robot.morphology_xml", xml)
                .map_err(|e| HostError::InvalidJob(e.to_string()))?,
        };
        let mut settings = self.settings;
        settings.seed = seed;
        if let Some(mu) = ground_friction {
            settings.ground_friction = mu;
        }
        let sim = Simulation::new(&morphology, settings).map_err(sim_error)?;
        Ok(Box::new(SimLink::new(sim)))
    }
}

/// A job's robot, parsed once per run: the robot of `cache` when it is the
/// same source, else `source` resolved (and kept).
fn brought(
    cache: &parking_lot::Mutex<Option<(RobotSource, Morphology)>>,
    source: &RobotSource,
) -> Result<Morphology, HostError> {
    if let Some((known, morphology)) = cache.lock().as_ref()
        && known == source
    {
        return Ok(morphology.clone());
    }
    let morphology = resolve(source)?;
    *cache.lock() = Some((source.clone(), morphology.clone()));
    Ok(morphology)
}

/// A job for a Roombot robot landed here: another host may walk it, so the
/// error is one the organizer retries elsewhere.
fn other_family(source: &RobotSource) -> Result<(), HostError> {
    let roombot = match source {
        RobotSource::Example(name) => yamor_roombots::gait::RoombotExample::named(name).is_some(),
        RobotSource::Morphology(xml) => yamor_roombots::gait::RoombotRobot::is_roombots(xml),
        RobotSource::Default => false,
    };
    if roombot {
        return Err(HostError::Failed(
            "the job's robot is a Roombot; this host walks YaMoR robots (another host may walk it)"
                .into(),
        ));
    }
    Ok(())
}

/// A non-default robot source as a morphology.
fn resolve(source: &RobotSource) -> Result<Morphology, HostError> {
    other_family(source)?;
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
    fn session(&self) -> Option<Arc<dyn SessionFactory>> {
        Some(Arc::new(SimSessions {
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

    fn evaluate(
        &self,
        mut job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        Box::pin(async move {
            let own = matches!(job.robot, RobotSource::Default).then(|| self.morphology.clone());
            let gait = job.gait.take().unwrap_or_else(|| self.gait.clone());
            let settings = self.settings;
            let flag = cancel.clone();
            let cache = self.brought.clone();
            // Physics, and the parsing of a job's own robot, never run on the
            // async runtime: heartbeats and GetInfo answer during a walk.
            let outcome = tokio::task::spawn_blocking(move || {
                let morphology = match own {
                    Some(morphology) => morphology,
                    None => brought(&cache, &job.robot)?,
                };
                evaluate_cancellable(&morphology, &gait, settings, &job.spec, &flag)
                    .map_err(sim_error)
            })
            .await
            .map_err(|e| HostError::Failed(format!("simulation thread: {e}")))??;
            if cancel.load(Ordering::Relaxed) {
                return Err(HostError::Cancelled);
            }
            Ok(outcome)
        })
    }
}
