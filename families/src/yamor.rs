//! YaMoR's simulated robot as a host serves it: jobs walk through the
//! family ([`yamor_sim::family::YamorFamily`], a fresh world per
//! evaluation on a blocking thread), and sessions keep one world open and
//! drive it through [`SimLink`] (SNP to the firmware, the supervisor's
//! commands to the world).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use yamor_core::evaluation::{RobotSource, Sample};
use yamor_core::{Connection, ModuleId, Morphology, RobotConfig};
use yamor_host_agent::HostError;
use yamor_host_agent::family::{FamilyBackend, host_error};
use yamor_host_agent::session::{RobotLink, SessionFactory, Supervisor};
use yamor_sim::family::{YamorFamily, family_error};
use yamor_sim::{SimError, SimSettings, Simulation};
use yamor_snp::{DefectMode, SnpMessage};

/// A host of YaMoR's embedded example `name`: walks and sessions on the
/// simulator with `settings`.
pub fn sim_backend(name: &str, settings: SimSettings) -> Result<FamilyBackend, HostError> {
    let morphology =
        YamorFamily::morphology(&RobotSource::Example(name.to_owned())).map_err(host_error)?;
    let family = Arc::new(YamorFamily { settings });
    Ok(
        FamilyBackend::example(family, name, None)?.with_sessions(Arc::new(SimSessions {
            morphology,
            settings,
        })),
    )
}

/// A host of a user's YaMoR robot, called `name`, walking `gait` unless a
/// job brings one.
pub fn own_sim_backend(
    name: &str,
    morphology: &Morphology,
    gait: RobotConfig,
    settings: SimSettings,
) -> Result<FamilyBackend, HostError> {
    let family = Arc::new(YamorFamily { settings });
    let source = RobotSource::Morphology(morphology.to_xml_string());
    Ok(
        FamilyBackend::new(family, name, source, gait, None)?.with_sessions(Arc::new(
            SimSessions {
                morphology: morphology.clone(),
                settings,
            },
        )),
    )
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

/// A simulator error as a session reports it (the family's judgement of
/// which errors another host may not repeat).
fn sim_error(e: SimError) -> HostError {
    host_error(family_error(e))
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
            robot => YamorFamily::morphology(robot).map_err(|e| match e {
                yamor_core::family::FamilyError::UnknownExample { .. } => {
                    HostError::InvalidJob(format!("robot.example: {e}"))
                }
                e => host_error(e),
            })?,
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
