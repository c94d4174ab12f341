//! The stateful IYaMoRHost3 surface (thesis 5.5.3): a session opens a robot,
//! keeps the host-side copy of every module parameter, queues changes until
//! `Flush`, and drives the robot with SNP messages, as YaMoR Host 3 drove
//! Webots or the real robot.
//!
//! All the logic lives here and reaches the robot only through a
//! [`RobotLink`], so the serial robot reuses it unchanged; the simulator's
//! link is in [`crate::sim`]. A link with a physical world behind it also
//! offers a [`Supervisor`] for what only a simulator can do (thesis 5.4.1,
//! C.2.6, C.2.7).
//!
//! Choices where the thesis is silent:
//! - Ids in requests and replies are *real* ids and the host copy is kept in
//!   real ids. The C.1 mapping (identity for unmapped ids) translates them on
//!   the way to the link, and only in simulation mode, as YaMoR Host 3 did.
//!   The mapping is a setting made before opening (C.1) and cannot change
//!   while a session is open: configured modules and defect marks would
//!   silently change identity.
//! - Values are checked against the limits the module firmware enforces
//!   before anything is stored or sent, so a refused value never leaves the
//!   host copy and the robot out of step; the error names the field.
//! - `Flush` sends only the messages whose content changed (limit angles,
//!   CPG structure, CPG parameters, per module); `Refresh` resends all three
//!   for every module and leaves the control flags alone.
//! - Defect motors (C.2.6) are host marks: marking sends motor-off and strips
//!   motor-on from every later control message to that module; the simulator
//!   also makes the joint limp or stuck. Healing lifts the mark and switches
//!   the motor back on. Marks survive `ResetSimulation` (they are the
//!   experiment, not the world) but not `OpenSimulation`.
//! - Every call runs on a blocking thread; long ones (sleeping, pauses in
//!   scripts) stop soon after the caller goes away.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use yamor_core::script::{Script, ScriptStep, Step};
use yamor_core::{Connection, CpgLink, ModuleConfig, ModuleId, RobotConfig};
use yamor_snp::configuration_messages;
use yamor_snp::limits::{HANDLE_RANGE, MAX_ANGLE_PARAMETER, MAX_SPEED};
use yamor_snp::{DefectMode, MAX_LINKS, SnpMessage, flags};

use crate::backend::CancelOnDrop;
pub use crate::backend::{RobotLink, SessionFactory, Supervisor};
use crate::model::{
    ControlFlags, Coupling, CouplingChange, IdMapping, ModuleChange, ModuleView, OpenRequest,
    SessionError, SessionState, SleepClock,
};

/// Which of a module's three parameter messages must be sent again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Changes {
    limits: bool,
    structure: bool,
    params: bool,
}

impl Changes {
    const ALL: Changes = Changes {
        limits: true,
        structure: true,
        params: true,
    };

    fn count(self) -> u32 {
        u32::from(self.limits) + u32::from(self.structure) + u32::from(self.params)
    }

    fn merge(&mut self, other: Changes) {
        self.limits |= other.limits;
        self.structure |= other.structure;
        self.params |= other.params;
    }

    fn wants(self, message: &SnpMessage) -> bool {
        match message {
            SnpMessage::LimitAngles { .. } => self.limits,
            SnpMessage::CpgStructure { .. } => self.structure,
            SnpMessage::CpgParams { .. } => self.params,
            _ => false,
        }
    }
}

/// An open robot.
struct Session {
    link: Box<dyn RobotLink>,
    /// The host-side copy of the configuration, in real ids; `None` until
    /// `ConnectRobot`.
    robot: Option<RobotConfig>,
    /// Real id → what changed since the last flush.
    pending: BTreeMap<ModuleId, Changes>,
    /// Real id → defect mode (never `Healthy`).
    defects: BTreeMap<ModuleId, DefectMode>,
}

struct Shared {
    /// Of the backend, reported while no session is open.
    simulation_mode: bool,
    session: Option<Session>,
    /// real id → simulation id (C.1).
    mapping: HashMap<u32, u32>,
}

/// The session calls of one host.
pub struct SessionHost {
    factory: Arc<dyn SessionFactory>,
    shared: Arc<Mutex<Shared>>,
    clock: Arc<dyn Clock>,
}

/// The wall clock a `Sleep` on the real clock keeps pace with. A seam so
/// that tests can check the pacing without waiting for it or measuring it.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
    /// Blocks for about `duration`; the caller checks for cancellation
    /// between calls, so long waits come as short ones.
    fn sleep(&self, duration: Duration);
}

/// The machine's own clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Largest SNP module address; 254 and 255 are the host and broadcast.
const MAX_WIRE_ID: u8 = 253;
/// Longest sleep or script pause (s).
const MAX_SLEEP: f64 = 3600.0;
/// Virtual time between two wall-clock checks of a paced sleep (s).
const PACE_STEP: f64 = 0.05;

fn no_robot() -> SessionError {
    SessionError::NotReady("no robot is connected: call ConnectRobot first".to_owned())
}

impl SessionHost {
    /// The session surface of `backend`, or `None` when it has no robot;
    /// real-clock sleeps keep pace with `clock`.
    #[must_use]
    pub fn for_backend(backend: &Arc<dyn crate::Backend>, clock: Arc<dyn Clock>) -> Option<Self> {
        backend.session().map(|factory| SessionHost {
            shared: Arc::new(Mutex::new(Shared {
                simulation_mode: factory.simulation_mode(),
                session: None,
                mapping: HashMap::new(),
            })),
            factory,
            clock,
        })
    }

    /// Runs `f` on the shared state on a blocking thread: sessions do
    /// physics or serial I/O, never on the async runtime.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Shared, &AtomicBool) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, SessionError> {
        let shared = self.shared.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        tokio::task::spawn_blocking(move || {
            let mut shared = shared.lock();
            f(&mut shared, &cancel)
        })
        .await
        .map_err(|e| SessionError::Failed(format!("session thread: {e}")))?
    }

    /// Opens the robot, replacing any open one; on failure the open one stays.
    pub async fn open_simulation(
        &self,
        request: OpenRequest,
    ) -> Result<SessionState, SessionError> {
        if let Some(f) = request.ground_friction
            && !(f.is_finite() && f > 0.0 && f <= 10.0)
        {
            return Err(SessionError::Invalid(format!(
                "ground_friction must be in (0, 10] (0 for the default), got {f}"
            )));
        }
        let factory = self.factory.clone();
        self.with(move |shared, _| {
            let link = factory.open(&request.robot, request.seed, request.ground_friction)?;
            shared.session = Some(Session {
                link,
                robot: None,
                pending: BTreeMap::new(),
                defects: BTreeMap::new(),
            });
            Ok(shared.state())
        })
        .await
    }

    /// Drops the robot; closing twice is harmless.
    pub async fn close_simulation(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            shared.session = None;
            Ok(shared.state())
        })
        .await
    }

    /// Sends all of a configuration: Bluetooth network, limit angles, CPG
    /// structure and parameters, then UART, CPG and motors on (C.2.2–C.2.4).
    /// Everything is checked before the first message goes out.
    pub async fn connect_robot(&self, config: RobotConfig) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.connect(&ids, config)?;
            Ok(shared.state())
        })
        .await
    }

    /// Sends the pending changes only.
    pub async fn flush(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.connected()?;
            let pending: Vec<(ModuleId, Changes)> =
                session.pending.iter().map(|(&id, &c)| (id, c)).collect();
            for (id, changes) in pending {
                session.send_parameters(&ids, id, changes)?;
                session.pending.remove(&id);
            }
            Ok(shared.state())
        })
        .await
    }

    /// Resends every parameter of every module (C.2.3 "Full CPG Refresh").
    pub async fn refresh(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.connected()?;
            for id in session.module_ids() {
                session.send_parameters(&ids, id, Changes::ALL)?;
                session.pending.remove(&id);
            }
            Ok(shared.state())
        })
        .await
    }

    /// Tristate control flags (C.2.4) to one module or to every module of the
    /// connected robot; motor-on never reaches a defect module (C.2.6).
    pub async fn send_control_message(
        &self,
        request: ControlFlags,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.connected()?;
            let mut on = 0;
            let mut off = 0;
            for (flag, wanted) in [
                (flags::UART, request.uart),
                (flags::CPG, request.cpg),
                (flags::MOTOR, request.motor),
            ] {
                match wanted {
                    Some(true) => on |= flag,
                    Some(false) => off |= flag,
                    None => {}
                }
            }
            let targets = match request.module_id {
                Some(id) => {
                    session.configured(id)?;
                    vec![id]
                }
                None => session.module_ids(),
            };
            for id in targets {
                session.control(&ids, id, on, off)?;
            }
            Ok(shared.state())
        })
        .await
    }

    /// ElapsedTime, SimulationModeEnabled and RobotPosition; works closed too.
    pub async fn get_state(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| Ok(shared.state())).await
    }

    /// Lets time pass. Host and virtual clocks advance the simulation as
    /// fast as it goes; the real clock paces it to the wall clock. On a real
    /// robot every clock is the wall clock.
    pub async fn sleep(
        &self,
        seconds: f64,
        clock: SleepClock,
    ) -> Result<SessionState, SessionError> {
        if !(seconds.is_finite() && (0.0..=MAX_SLEEP).contains(&seconds)) {
            return Err(SessionError::Invalid(format!(
                "seconds must be in [0, {MAX_SLEEP}], got {seconds}"
            )));
        }
        let wall = self.clock.clone();
        self.with(move |shared, cancel| {
            let (session, _) = shared.open()?;
            let link = session.link.as_mut();
            if clock == SleepClock::Real && link.simulation_mode() {
                paced(link, wall.as_ref(), seconds, cancel)?;
            } else {
                link.advance(seconds, cancel)?;
            }
            Ok(shared.state())
        })
        .await
    }

    /// GetAllModulesId and every module's parameters, in configuration order.
    pub async fn list_modules(&self) -> Result<Vec<ModuleView>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            Ok(session
                .config()?
                .modules
                .iter()
                .map(|m| session.module_view(m))
                .collect())
        })
        .await
    }

    pub async fn get_module(&self, id: ModuleId) -> Result<ModuleView, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            let module = session.configured(id)?;
            Ok(session.module_view(module))
        })
        .await
    }

    /// Changes the fields present in the host copy; pending until `Flush`.
    /// A bad value changes nothing.
    pub async fn set_module(&self, request: ModuleChange) -> Result<ModuleView, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            let current = session.configured(request.id)?.clone();
            let mut next = current.clone();
            next.amplitude = request.amplitude.unwrap_or(next.amplitude);
            next.offset = request.offset.unwrap_or(next.offset);
            next.speed = request.speed.unwrap_or(next.speed);
            next.min_angle = request.min_angle.unwrap_or(next.min_angle);
            next.max_angle = request.max_angle.unwrap_or(next.max_angle);
            check_module(&next)?;
            let changes = Changes {
                limits: (next.min_angle, next.max_angle) != (current.min_angle, current.max_angle),
                structure: false,
                params: (next.amplitude, next.offset, next.speed)
                    != (current.amplitude, current.offset, current.speed),
            };
            let view = session.module_view(&next);
            session.store(next, changes)?;
            Ok(view)
        })
        .await
    }

    /// Couplings as `from` → `to` pairs (the `cpglink` of `from`).
    pub async fn list_couplings(&self) -> Result<Vec<Coupling>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            Ok(couplings(session.config()?))
        })
        .await
    }

    /// Sets phase and/or weight of a coupling, adding it (phase 0, weight 1)
    /// when it does not exist; pending until `Flush`.
    pub async fn set_coupling(&self, request: CouplingChange) -> Result<Coupling, SessionError> {
        for (name, v) in [("phase", request.phase), ("weight", request.weight)] {
            if let Some(v) = v
                && !v.is_finite()
            {
                return Err(SessionError::Invalid(format!(
                    "{name} must be finite, got {v}"
                )));
            }
        }
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            session.configured(request.to)?;
            let mut module = session.configured(request.from)?.clone();
            let index = match module.cpg_links.iter().position(|l| l.to == request.to) {
                Some(i) => i,
                None if module.cpg_links.len() >= MAX_LINKS => {
                    return Err(SessionError::Invalid(format!(
                        "module {} already has {MAX_LINKS} couplings, the most one SNP message carries",
                        request.from
                    )));
                }
                None => {
                    module.cpg_links.push(CpgLink {
                        to: request.to,
                        phase: 0.0,
                        weight: 1.0,
                    });
                    module.cpg_links.len() - 1
                }
            };
            let link = &mut module.cpg_links[index];
            link.phase = request.phase.unwrap_or(link.phase);
            link.weight = request.weight.unwrap_or(link.weight);
            let view = Coupling {
                from: request.from,
                to: request.to,
                phase: link.phase,
                weight: link.weight,
            };
            let changed = session.configured(request.from)?.cpg_links != module.cpg_links;
            session.store(
                module,
                Changes {
                    structure: changed,
                    ..Changes::default()
                },
            )?;
            Ok(view)
        })
        .await
    }

    /// RemoveAllCoupling; pending until `Flush`.
    pub async fn remove_all_couplings(&self) -> Result<Vec<Coupling>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            let coupled: Vec<ModuleConfig> = session
                .config()?
                .modules
                .iter()
                .filter(|m| !m.cpg_links.is_empty())
                .cloned()
                .collect();
            for mut module in coupled {
                module.cpg_links.clear();
                session.store(
                    module,
                    Changes {
                        structure: true,
                        ..Changes::default()
                    },
                )?;
            }
            Ok(couplings(session.config()?))
        })
        .await
    }

    /// Marks a motor defect (C.2.6) or heals it.
    pub async fn set_defect(
        &self,
        id: ModuleId,
        mode: DefectMode,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            let sim = session.known(&ids, id)?;
            if let Some(supervisor) = session.link.supervisor() {
                supervisor.set_defect(sim, mode)?;
            }
            let connected = session.robot.is_some();
            if mode == DefectMode::Healthy {
                session.defects.remove(&id);
                if connected {
                    session.control(&ids, id, flags::MOTOR, 0)?;
                }
            } else {
                session.defects.insert(id, mode);
                if connected {
                    session.control(&ids, id, 0, flags::MOTOR)?;
                }
            }
            Ok(shared.state())
        })
        .await
    }

    pub async fn connect_modules(
        &self,
        connection: Connection,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.run_step(&ids, &Step::Connect(connection), &AtomicBool::new(false))?;
            Ok(shared.state())
        })
        .await
    }

    pub async fn disconnect_module(&self, id: ModuleId) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.run_step(&ids, &Step::Disconnect(id), &AtomicBool::new(false))?;
            Ok(shared.state())
        })
        .await
    }

    /// Runs a C.2.7 transformation script. A step that fails stops the
    /// script, with the steps before it applied, and the error names its line.
    pub async fn run_script(&self, script: Script) -> Result<SessionState, SessionError> {
        self.with(move |shared, cancel| {
            check_pauses(&script)?;
            let (session, ids) = shared.open()?;
            session.supervisor()?;
            for ScriptStep { line, step } in &script.steps {
                session.run_step(&ids, step, cancel).map_err(|e| {
                    e.context(&format!("script_xml:{line}: <{}>: ", step.element()))
                })?;
            }
            Ok(shared.state())
        })
        .await
    }

    pub async fn set_ground_friction(&self, friction: f64) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.open()?;
            session.supervisor()?.set_ground_friction(friction)?;
            Ok(shared.state())
        })
        .await
    }

    /// Lifts the robot to `height` m and lets it fall.
    pub async fn drop_robot(
        &self,
        height: f64,
        upside_down: bool,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.open()?;
            session.supervisor()?.drop_robot(height, upside_down)?;
            Ok(shared.state())
        })
        .await
    }

    /// The world as opened, every module powered on but idle: the modules
    /// forgot their configuration, so the robot must be connected again.
    /// Defect marks stay, and their physical side is applied again.
    pub async fn reset_simulation(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.open()?;
            session.supervisor()?.reset()?;
            session.robot = None;
            session.pending.clear();
            let defects: Vec<(ModuleId, DefectMode)> =
                session.defects.iter().map(|(&id, &d)| (id, d)).collect();
            for (id, mode) in defects {
                let sim = ids.robot(id)?;
                session.supervisor()?.set_defect(sim, mode)?;
            }
            Ok(shared.state())
        })
        .await
    }

    /// Sets the C.1 mapping. Refused while a session is open.
    pub async fn set_id_mapping(&self, mapping: IdMapping) -> Result<IdMapping, SessionError> {
        let mut owner = BTreeMap::new();
        for (&real, &sim) in &mapping {
            if sim > u32::from(MAX_WIRE_ID) {
                return Err(SessionError::Invalid(format!(
                    "real id {real} maps to simulation id {sim}, beyond the SNP wire's 0..={MAX_WIRE_ID}"
                )));
            }
            if let Some(other) = owner.insert(sim, real) {
                let (a, b) = (other.min(real), other.max(real));
                return Err(SessionError::Invalid(format!(
                    "real ids {a} and {b} both map to simulation id {sim}"
                )));
            }
        }
        self.with(move |shared, _| {
            if shared.session.is_some() {
                return Err(SessionError::NotReady(
                    "the id mapping cannot change while a simulation is open: \
                     CloseSimulation first"
                        .to_owned(),
                ));
            }
            shared.mapping = mapping.clone();
            Ok(mapping)
        })
        .await
    }

    pub async fn get_id_mapping(&self) -> Result<IdMapping, SessionError> {
        self.with(|shared, _| Ok(shared.mapping.clone())).await
    }
}

impl Shared {
    fn open(&mut self) -> Result<(&mut Session, Ids<'_>), SessionError> {
        let session = self.session.as_mut().ok_or_else(|| {
            SessionError::NotReady("no simulation is open: call OpenSimulation first".to_owned())
        })?;
        let ids = Ids {
            mapping: &self.mapping,
            active: session.link.simulation_mode(),
        };
        Ok((session, ids))
    }

    fn connected(&mut self) -> Result<(&mut Session, Ids<'_>), SessionError> {
        let (session, ids) = self.open()?;
        session.config()?;
        Ok((session, ids))
    }

    fn state(&self) -> SessionState {
        match &self.session {
            None => SessionState {
                simulation_mode: self.simulation_mode,
                ..SessionState::default()
            },
            Some(s) => SessionState {
                open: true,
                connected: s.robot.is_some(),
                simulation_mode: s.link.simulation_mode(),
                elapsed: s.link.elapsed(),
                position: Some(s.link.position()),
                pending_changes: s.pending.values().map(|c| c.count()).sum(),
                up: s.link.up(),
            },
        }
    }
}

/// The C.1 translation as it applies to one link.
struct Ids<'a> {
    mapping: &'a HashMap<u32, u32>,
    /// Only simulation links translate.
    active: bool,
}

impl Ids<'_> {
    /// The robot's id for real id `real`.
    fn robot(&self, real: ModuleId) -> Result<ModuleId, SessionError> {
        if !self.active {
            return Ok(real);
        }
        if let Some(&sim) = self.mapping.get(&real) {
            return Ok(sim);
        }
        // Unmapped ids map to themselves, unless another real id took that place.
        match self.mapping.iter().find(|&(_, &sim)| sim == real) {
            Some((other, _)) => Err(SessionError::Invalid(format!(
                "real id {real} is not mapped, and simulation id {real} belongs to real id {other}"
            ))),
            None => Ok(real),
        }
    }

    /// The SNP address of real id `real`.
    fn wire(&self, real: ModuleId) -> Result<u8, SessionError> {
        let id = self.robot(real)?;
        u8::try_from(id)
            .ok()
            .filter(|&b| b <= MAX_WIRE_ID)
            .ok_or_else(|| {
                SessionError::Invalid(format!(
                    "module id {real} does not fit the SNP wire (ids 0..={MAX_WIRE_ID})"
                ))
            })
    }

    /// `module` with every id it carries translated.
    fn wire_config(&self, module: &ModuleConfig) -> Result<ModuleConfig, SessionError> {
        let mut out = module.clone();
        out.id = ModuleId::from(self.wire(module.id)?);
        out.bluetooth_to = module
            .bluetooth_to
            .map(|to| self.wire(to).map(ModuleId::from))
            .transpose()?;
        for link in &mut out.cpg_links {
            link.to = ModuleId::from(self.wire(link.to)?);
        }
        Ok(out)
    }
}

impl Session {
    fn config(&self) -> Result<&RobotConfig, SessionError> {
        self.robot.as_ref().ok_or_else(no_robot)
    }

    fn module_ids(&self) -> Vec<ModuleId> {
        self.robot
            .as_ref()
            .map(|r| r.modules.iter().map(|m| m.id).collect())
            .unwrap_or_default()
    }

    /// Module `real` of the connected configuration.
    fn configured(&self, real: ModuleId) -> Result<&ModuleConfig, SessionError> {
        let robot = self.config()?;
        robot.module(real).ok_or_else(|| {
            let known: Vec<String> = robot.modules.iter().map(|m| m.id.to_string()).collect();
            SessionError::Invalid(format!(
                "unknown module id {real}: the connected robot has modules {}",
                known.join(", ")
            ))
        })
    }

    fn supervisor(&mut self) -> Result<&mut dyn Supervisor, SessionError> {
        self.link.supervisor().ok_or_else(|| {
            SessionError::Unsupported(
                "this robot has no supervisor: only a simulation can do that".to_owned(),
            )
        })
    }

    /// The robot's id for `real`, checked against the world when the link
    /// can tell, otherwise against the configuration when one is connected.
    fn known(&mut self, ids: &Ids<'_>, real: ModuleId) -> Result<ModuleId, SessionError> {
        let id = ids.robot(real)?;
        let world = self.link.supervisor().map(|s| s.modules());
        match world {
            Some(world) if !world.contains(&id) => Err(not_in_world(real, id, &world)),
            Some(_) => Ok(id),
            None if self.robot.is_some() => self.configured(real).map(|_| id),
            None => Ok(id),
        }
    }

    fn is_defect(&self, real: ModuleId) -> bool {
        self.defects.contains_key(&real)
    }

    fn module_view(&self, m: &ModuleConfig) -> ModuleView {
        ModuleView::of(m, self.is_defect(m.id))
    }

    /// Replaces a module of the host copy and queues `changes`.
    fn store(&mut self, module: ModuleConfig, changes: Changes) -> Result<(), SessionError> {
        let id = module.id;
        let robot = self.robot.as_mut().ok_or_else(no_robot)?;
        if let Some(slot) = robot.module_mut(id) {
            *slot = module;
        }
        if changes.count() > 0 {
            self.pending.entry(id).or_default().merge(changes);
        }
        Ok(())
    }

    /// Sends one request to module `real`; a `Nack` is a bad request (`SessionError::Invalid`).
    fn send(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        message: &SnpMessage,
    ) -> Result<(), SessionError> {
        let dst = ids.wire(real)?;
        match self.link.send(dst, message)? {
            SnpMessage::Nack { code, .. } => Err(SessionError::Invalid(format!(
                "module {real} refused the {} message: {}",
                message.name(),
                nack_reason(code)
            ))),
            _ => Ok(()),
        }
    }

    /// A control message to module `real`, with motor-on stripped for a
    /// defect motor (C.2.6).
    fn control(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        on: u8,
        off: u8,
    ) -> Result<(), SessionError> {
        let on = if self.is_defect(real) {
            on & !flags::MOTOR
        } else {
            on
        };
        if on == 0 && off == 0 {
            return Ok(());
        }
        self.send(ids, real, &SnpMessage::Control { on, off })
    }

    /// The parameter messages of module `real` selected by `changes`.
    fn send_parameters(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        changes: Changes,
    ) -> Result<(), SessionError> {
        let Ok(module) = self.configured(real) else {
            return Ok(());
        };
        let wire = ids.wire_config(module)?;
        for message in configuration_messages(&wire) {
            if changes.wants(&message) {
                self.send(ids, real, &message)?;
            }
        }
        Ok(())
    }

    /// ConnectRobot: checks everything, then sends the whole configuration.
    fn connect(&mut self, ids: &Ids<'_>, config: RobotConfig) -> Result<(), SessionError> {
        let world = self.link.supervisor().map(|s| s.modules());
        let mut owner = HashMap::new();
        for module in &config.modules {
            check_module(module)?;
            if module.cpg_links.len() > MAX_LINKS {
                return Err(SessionError::Invalid(format!(
                    "module {} has {} couplings, more than the {MAX_LINKS} one SNP message carries",
                    module.id,
                    module.cpg_links.len()
                )));
            }
            let id = ids.robot(module.id)?;
            ids.wire(module.id)?;
            if let Some(other) = owner.insert(id, module.id) {
                return Err(SessionError::Invalid(format!(
                    "real ids {other} and {} both map to simulation id {id}",
                    module.id
                )));
            }
            if let Some(world) = &world
                && !world.contains(&id)
            {
                return Err(not_in_world(module.id, id, world));
            }
        }
        // Modules of the previous robot that are not in this one leave the network.
        for id in self.module_ids() {
            if config.module(id).is_none() {
                self.send(
                    ids,
                    id,
                    &SnpMessage::Control {
                        on: 0,
                        off: flags::UART | flags::CPG | flags::MOTOR,
                    },
                )?;
            }
        }
        self.robot = None;
        self.pending.clear();
        // Thesis 5.2.1, in the order its user typed it: B (the Bluetooth
        // network, in file order, which C.2.1 makes a walk from the master),
        // L, U and C, N, O, and M last so that nothing moves before its
        // parameters are in.
        let mut messages = Vec::new();
        for module in &config.modules {
            messages.push((module.id, configuration_messages(&ids.wire_config(module)?)));
        }
        use yamor_snp::snp_kind::{BLUETOOTH_CONNECT, CPG_PARAMS, CPG_STRUCTURE, LIMIT_ANGLES};
        let phase = |session: &mut Self, kind: u8| -> Result<(), SessionError> {
            for (id, list) in &messages {
                for message in list.iter().filter(|m| m.kind() == kind) {
                    session.send(ids, *id, message)?;
                }
            }
            Ok(())
        };
        phase(self, BLUETOOTH_CONNECT)?;
        phase(self, LIMIT_ANGLES)?;
        for module in &config.modules {
            self.control(ids, module.id, flags::UART | flags::CPG, 0)?;
        }
        phase(self, CPG_STRUCTURE)?;
        phase(self, CPG_PARAMS)?;
        for module in &config.modules {
            if self.is_defect(module.id) {
                self.control(ids, module.id, 0, flags::MOTOR)?;
            } else {
                self.control(ids, module.id, flags::MOTOR, 0)?;
            }
        }
        self.robot = Some(config);
        Ok(())
    }

    /// One connect, disconnect or pause, ids translated.
    fn run_step(
        &mut self,
        ids: &Ids<'_>,
        step: &Step,
        cancel: &AtomicBool,
    ) -> Result<(), SessionError> {
        match *step {
            Step::Connect(c) => {
                self.supervisor()?;
                let connection = Connection {
                    id_from: self.known(ids, c.id_from)?,
                    id_to: self.known(ids, c.id_to)?,
                    ..c
                };
                self.supervisor()?.connect(connection)?;
            }
            Step::Disconnect(real) => {
                self.supervisor()?;
                let id = self.known(ids, real)?;
                self.supervisor()?.disconnect(id)?;
            }
            Step::Pause(seconds) => self.link.advance(seconds, cancel)?,
        }
        Ok(())
    }
}

fn not_in_world(real: ModuleId, id: ModuleId, world: &[ModuleId]) -> SessionError {
    let mut known = world.to_vec();
    known.sort_unstable();
    let known: Vec<String> = known.iter().map(ToString::to_string).collect();
    let via = if id == real {
        String::new()
    } else {
        format!(" (simulation id {id})")
    };
    SessionError::Invalid(format!(
        "unknown module id {real}{via}: the simulated robot has modules {}",
        known.join(", ")
    ))
}

/// A module's configuration outside what its firmware accepts
/// ([`check_module`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum ModuleError {
    #[error("module {module}: {field} must be {expected}, got {value}")]
    OutOfRange {
        module: ModuleId,
        field: &'static str,
        value: f64,
        expected: String,
    },
    #[error("module {module}: min_angle {min_angle} is greater than max_angle {max_angle}")]
    LimitsCrossed {
        module: ModuleId,
        min_angle: f64,
        max_angle: f64,
    },
    #[error("module {module}: the coupling to {to} must have a finite phase and weight")]
    NonFiniteCoupling { module: ModuleId, to: ModuleId },
}

impl From<ModuleError> for SessionError {
    fn from(e: ModuleError) -> Self {
        SessionError::Invalid(e.to_string())
    }
}

/// The limits the module firmware enforces (`ModuleFirmware::handle`), with
/// amplitude and speed also non-negative; the error names the field.
fn check_module(m: &ModuleConfig) -> Result<(), ModuleError> {
    let range = HANDLE_RANGE + 1e-6;
    let checks: [(&str, f64, bool, String); 5] = [
        (
            "amplitude",
            m.amplitude,
            (0.0..=MAX_ANGLE_PARAMETER).contains(&m.amplitude),
            format!("in [0, {MAX_ANGLE_PARAMETER:.4}] rad"),
        ),
        (
            "offset",
            m.offset,
            m.offset.abs() <= MAX_ANGLE_PARAMETER,
            format!("within ±{MAX_ANGLE_PARAMETER:.4} rad"),
        ),
        (
            "speed",
            m.speed,
            (0.0..=MAX_SPEED).contains(&m.speed),
            format!("in [0, {MAX_SPEED}] rad/s"),
        ),
        (
            "min_angle",
            m.min_angle,
            m.min_angle.abs() <= range,
            format!("within the servo range ±{HANDLE_RANGE:.4} rad"),
        ),
        (
            "max_angle",
            m.max_angle,
            m.max_angle.abs() <= range,
            format!("within the servo range ±{HANDLE_RANGE:.4} rad"),
        ),
    ];
    for (name, value, ok, expected) in checks {
        if !(value.is_finite() && ok) {
            return Err(ModuleError::OutOfRange {
                module: m.id,
                field: name,
                value,
                expected,
            });
        }
    }
    if m.min_angle > m.max_angle {
        return Err(ModuleError::LimitsCrossed {
            module: m.id,
            min_angle: m.min_angle,
            max_angle: m.max_angle,
        });
    }
    for link in &m.cpg_links {
        if !(link.phase.is_finite() && link.weight.is_finite()) {
            return Err(ModuleError::NonFiniteCoupling {
                module: m.id,
                to: link.to,
            });
        }
    }
    Ok(())
}

/// The firmware's `NackCode`s in words.
fn nack_reason(code: u8) -> String {
    match code {
        1 => "limit angles inverted or beyond the servo range".to_owned(),
        2 => "a CPG parameter is out of range".to_owned(),
        3 => "a link points at a module it does not know".to_owned(),
        4 => "not a request".to_owned(),
        code => format!("nack code {code}"),
    }
}

fn couplings(robot: &RobotConfig) -> Vec<Coupling> {
    robot
        .modules
        .iter()
        .flat_map(|m| {
            m.cpg_links.iter().map(move |l| Coupling {
                from: m.id,
                to: l.to,
                phase: l.phase,
                weight: l.weight,
            })
        })
        .collect()
}

/// Advances `link` by `seconds` of virtual time, never ahead of the wall
/// clock. Chunks are sized from the link's own clock so tick rounding does
/// not accumulate.
fn paced(
    link: &mut dyn RobotLink,
    clock: &dyn Clock,
    seconds: f64,
    cancel: &AtomicBool,
) -> Result<(), SessionError> {
    let start = link.elapsed();
    let started = clock.now();
    loop {
        let before = link.elapsed();
        let left = start + seconds - before;
        if left <= 0.0 {
            return Ok(());
        }
        link.advance(left.min(PACE_STEP), cancel)?;
        if link.elapsed() <= before {
            // Less than a tick was left.
            return Ok(());
        }
        let now = clock.now();
        let ahead = (link.elapsed() - start) - now.duration_since(started).as_secs_f64();
        let until = now + Duration::from_secs_f64(ahead.max(0.0));
        while let Some(wait) = until.checked_duration_since(clock.now()) {
            if cancel.load(Ordering::Relaxed) {
                return Err(SessionError::Cancelled);
            }
            if wait.is_zero() {
                break;
            }
            clock.sleep(wait.min(Duration::from_millis(20)));
        }
    }
}

/// A script may not sleep longer than one `Sleep` call; the error names the
/// pause that goes over.
fn check_pauses(script: &Script) -> Result<(), SessionError> {
    match script.pauses_exceed(MAX_SLEEP) {
        Some(line) => Err(SessionError::Invalid(format!(
            "script_xml:{line}: <pause>: the pauses add up to more than {MAX_SLEEP} s"
        ))),
        None => Ok(()),
    }
}
