//! The stateful IYaMoRHost3 surface (thesis 5.5.3): a session opens a robot
//! world, keeps the host-side copy of every module parameter, queues changes
//! until `Flush`, and drives the robot over SNP messages, exactly as the
//! thesis' host drove Webots.
//!
//! Ids in requests are *real* ids, translated to simulation ids by the C.1
//! mapping (identity by default); replies use real ids too. Every operation
//! runs on a blocking thread: building a world and sleeping in virtual time
//! are physics.
//!
//! Defect motors follow C.2.6: marking a module defect sends it motor-off and
//! suppresses later motor-on messages to it; the simulator also applies the
//! physical defect (limp or stuck).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::Status;
use yamor_core::{Connection, Connector, CpgLink, ModuleId, RobotConfig};
use yamor_firmware_sim::firmware::configuration_messages;
use yamor_firmware_sim::snp::{BROADCAST, DefectMode, SnpMessage, flags};
use yamor_firmware_sim::{SimError, Simulation};
use yamor_proto::v1 as pb;

use crate::backend::RobotSource;

/// Builds robot worlds for sessions; implemented by backends that have one.
pub trait SessionFactory: Send + Sync {
    fn open(
        &self,
        robot: &RobotSource,
        seed: u64,
        ground_friction: Option<f64>,
    ) -> Result<Simulation, Status>;
}

struct Session {
    sim: Simulation,
    /// The host-side copy of the configuration, in simulation ids.
    robot: Option<RobotConfig>,
    /// Modules whose parameters changed since the last flush.
    pending: BTreeSet<ModuleId>,
    defects: HashMap<ModuleId, DefectMode>,
}

#[derive(Default)]
struct Shared {
    session: Option<Session>,
    /// real id → simulation id (C.1).
    mapping: HashMap<u32, u32>,
}

/// The session RPCs of one host.
pub struct SessionHost {
    factory: Arc<dyn SessionFactory>,
    shared: Arc<Mutex<Shared>>,
}

/// Largest servo deflection the module allows (rad).
const SERVO_RANGE: f64 = std::f64::consts::FRAC_PI_2 + 1e-3;

fn sim_error(e: SimError) -> Status {
    match e {
        SimError::Cancelled(_) => Status::cancelled(e.to_string()),
        e => Status::invalid_argument(e.to_string()),
    }
}

/// Sets the flag when the RPC future is dropped (client gone or cancelled).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl SessionHost {
    /// The session surface of `backend`, or `None` when it has no robot.
    #[must_use]
    pub fn for_backend(backend: &Arc<dyn crate::Backend>) -> Option<Self> {
        backend.session().map(|factory| SessionHost {
            factory,
            shared: Arc::new(Mutex::new(Shared::default())),
        })
    }

    /// Runs `f` on the shared state on a blocking thread.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Shared, &AtomicBool) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let shared = self.shared.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        tokio::task::spawn_blocking(move || {
            let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut shared, &cancel)
        })
        .await
        .map_err(|e| Status::internal(format!("session thread: {e}")))?
    }

    pub async fn open_simulation(
        &self,
        request: pb::OpenSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        let robot = match request.robot.and_then(|r| r.source) {
            None => RobotSource::Default,
            Some(pb::robot::Source::Example(name)) => RobotSource::Example(name),
            Some(pb::robot::Source::MorphologyXml(xml)) => RobotSource::Morphology(xml),
        };
        let friction = match request.ground_friction {
            0.0 => None,
            f if f.is_finite() && f > 0.0 => Some(f),
            f => {
                return Err(Status::invalid_argument(format!(
                    "ground_friction must be positive, got {f}"
                )));
            }
        };
        let factory = self.factory.clone();
        self.with(move |shared, _| {
            let sim = factory.open(&robot, request.seed, friction)?;
            shared.session = Some(Session {
                sim,
                robot: None,
                pending: BTreeSet::new(),
                defects: HashMap::new(),
            });
            Ok(state(shared))
        })
        .await
    }

    pub async fn close_simulation(
        &self,
        _request: pb::CloseSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(|shared, _| {
            shared.session = None;
            Ok(state(shared))
        })
        .await
    }

    pub async fn connect_robot(
        &self,
        request: pb::ConnectRobotRequest,
    ) -> Result<pb::SessionState, Status> {
        let config = RobotConfig::from_xml_str("config_xml", &request.config_xml)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.with(move |shared, _| {
            let mapping = shared.mapping.clone();
            let session = open(shared)?;
            let config = translate(&config, &mapping);
            session.sim.configure(&config).map_err(sim_error)?;
            for (&id, _) in session
                .defects
                .iter()
                .filter(|(_, d)| **d != DefectMode::Healthy)
            {
                send(&mut session.sim, id, &control(0, flags::MOTOR))?;
            }
            session.robot = Some(config);
            session.pending.clear();
            Ok(state(shared))
        })
        .await
    }

    pub async fn flush(&self, _request: pb::FlushRequest) -> Result<pb::SessionState, Status> {
        self.with(|shared, _| {
            let session = connected(shared)?;
            let pending: Vec<ModuleId> = session.pending.iter().copied().collect();
            send_parameters(session, &pending)?;
            session.pending.clear();
            Ok(state(shared))
        })
        .await
    }

    pub async fn refresh(&self, _request: pb::RefreshRequest) -> Result<pb::SessionState, Status> {
        self.with(|shared, _| {
            let session = connected(shared)?;
            let all: Vec<ModuleId> = session
                .robot
                .as_ref()
                .map(|r| r.modules.iter().map(|m| m.id).collect())
                .unwrap_or_default();
            send_parameters(session, &all)?;
            for id in all {
                let motor_on = !is_defect(session, id);
                let on = flags::UART | flags::CPG | if motor_on { flags::MOTOR } else { 0 };
                send(&mut session.sim, id, &control(on, 0))?;
            }
            session.pending.clear();
            Ok(state(shared))
        })
        .await
    }

    pub async fn send_control_message(
        &self,
        request: pb::ControlMessageRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, _| {
            let target = request.module_id.map(|id| sim_id(&shared.mapping, id));
            let session = open(shared)?;
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
            let targets: Vec<ModuleId> = match target {
                Some(id) => {
                    session.sim.module_index(id).map_err(sim_error)?;
                    vec![id]
                }
                None => session.sim.modules().iter().map(|m| m.id).collect(),
            };
            for id in targets {
                // C.2.6: motor-on never reaches a defect module.
                let on = if is_defect(session, id) {
                    on & !flags::MOTOR
                } else {
                    on
                };
                send(&mut session.sim, id, &control(on, off))?;
            }
            Ok(state(shared))
        })
        .await
    }

    pub async fn get_state(
        &self,
        _request: pb::GetStateRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(|shared, _| Ok(state(shared))).await
    }

    pub async fn sleep(&self, request: pb::SleepRequest) -> Result<pb::SessionState, Status> {
        if !(request.seconds.is_finite() && (0.0..=3600.0).contains(&request.seconds)) {
            return Err(Status::invalid_argument(format!(
                "seconds must be in [0, 3600], got {}",
                request.seconds
            )));
        }
        let real = request.clock == pb::Clock::Real as i32;
        self.with(move |shared, cancel| {
            let session = open(shared)?;
            advance(&mut session.sim, request.seconds, real, cancel)?;
            Ok(state(shared))
        })
        .await
    }

    pub async fn list_modules(
        &self,
        _request: pb::ListModulesRequest,
    ) -> Result<pb::ListModulesResponse, Status> {
        self.with(|shared, _| {
            let mapping = shared.mapping.clone();
            let session = connected(shared)?;
            let robot = session.robot.as_ref().expect("connected");
            Ok(pb::ListModulesResponse {
                modules: robot
                    .modules
                    .iter()
                    .map(|m| module_view(m, &mapping, is_defect(session, m.id)))
                    .collect(),
            })
        })
        .await
    }

    pub async fn get_module(
        &self,
        request: pb::GetModuleRequest,
    ) -> Result<pb::ModuleParameters, Status> {
        self.with(move |shared, _| {
            let mapping = shared.mapping.clone();
            let id = sim_id(&mapping, request.id);
            let session = connected(shared)?;
            let module = session
                .robot
                .as_ref()
                .and_then(|r| r.module(id))
                .ok_or_else(|| unknown(request.id))?;
            Ok(module_view(module, &mapping, is_defect(session, id)))
        })
        .await
    }

    pub async fn set_module(
        &self,
        request: pb::SetModuleRequest,
    ) -> Result<pb::ModuleParameters, Status> {
        self.with(move |shared, _| {
            let mapping = shared.mapping.clone();
            let id = sim_id(&mapping, request.id);
            let session = connected(shared)?;
            let robot = session.robot.as_mut().expect("connected");
            let current = robot.module(id).ok_or_else(|| unknown(request.id))?.clone();
            let mut next = current.clone();
            let field = |name: &str, v: Option<f64>, ok: &dyn Fn(f64) -> bool, why: &str| match v {
                Some(v) if !(v.is_finite() && ok(v)) => Err(Status::invalid_argument(format!(
                    "module {}: {name} = {v} {why}",
                    request.id
                ))),
                _ => Ok(()),
            };
            field(
                "amplitude",
                request.amplitude,
                &|v| (0.0..=SERVO_RANGE * 2.0).contains(&v),
                "must be in [0, π]",
            )?;
            field(
                "offset",
                request.offset,
                &|v| v.abs() <= SERVO_RANGE,
                "must be within ±π/2",
            )?;
            field(
                "speed",
                request.speed,
                &|v| (0.0..=100.0).contains(&v),
                "must be in [0, 100]",
            )?;
            field(
                "min_angle",
                request.min_angle,
                &|v| v.abs() <= SERVO_RANGE,
                "must be within ±π/2",
            )?;
            field(
                "max_angle",
                request.max_angle,
                &|v| v.abs() <= SERVO_RANGE,
                "must be within ±π/2",
            )?;
            next.amplitude = request.amplitude.unwrap_or(next.amplitude);
            next.offset = request.offset.unwrap_or(next.offset);
            next.speed = request.speed.unwrap_or(next.speed);
            next.min_angle = request.min_angle.unwrap_or(next.min_angle);
            next.max_angle = request.max_angle.unwrap_or(next.max_angle);
            if next.min_angle > next.max_angle {
                return Err(Status::invalid_argument(format!(
                    "module {}: min_angle {} is greater than max_angle {}",
                    request.id, next.min_angle, next.max_angle
                )));
            }
            if next != current {
                *robot.module_mut(id).expect("present") = next.clone();
                session.pending.insert(id);
            }
            Ok(module_view(&next, &mapping, is_defect(session, id)))
        })
        .await
    }

    pub async fn list_couplings(
        &self,
        _request: pb::ListCouplingsRequest,
    ) -> Result<pb::ListCouplingsResponse, Status> {
        self.with(|shared, _| {
            let mapping = shared.mapping.clone();
            let session = connected(shared)?;
            Ok(couplings(
                session.robot.as_ref().expect("connected"),
                &mapping,
            ))
        })
        .await
    }

    pub async fn set_coupling(
        &self,
        request: pb::SetCouplingRequest,
    ) -> Result<pb::Coupling, Status> {
        for (name, v) in [("phase", request.phase), ("weight", request.weight)] {
            if let Some(v) = v
                && !v.is_finite()
            {
                return Err(Status::invalid_argument(format!(
                    "{name} must be finite, got {v}"
                )));
            }
        }
        self.with(move |shared, _| {
            let mapping = shared.mapping.clone();
            let (from, to) = (sim_id(&mapping, request.from), sim_id(&mapping, request.to));
            let session = connected(shared)?;
            let robot = session.robot.as_mut().expect("connected");
            if robot.module(to).is_none() {
                return Err(unknown(request.to));
            }
            let module = robot
                .module_mut(from)
                .ok_or_else(|| unknown(request.from))?;
            let link = match module.cpg_links.iter().position(|l| l.to == to) {
                Some(i) => &mut module.cpg_links[i],
                None => {
                    module.cpg_links.push(CpgLink {
                        to,
                        phase: 0.0,
                        weight: 1.0,
                    });
                    module.cpg_links.last_mut().expect("just pushed")
                }
            };
            link.phase = request.phase.unwrap_or(link.phase);
            link.weight = request.weight.unwrap_or(link.weight);
            let view = pb::Coupling {
                from: request.from,
                to: request.to,
                phase: link.phase,
                weight: link.weight,
            };
            session.pending.insert(from);
            Ok(view)
        })
        .await
    }

    pub async fn remove_all_couplings(
        &self,
        _request: pb::RemoveAllCouplingsRequest,
    ) -> Result<pb::ListCouplingsResponse, Status> {
        self.with(|shared, _| {
            let mapping = shared.mapping.clone();
            let session = connected(shared)?;
            let robot = session.robot.as_mut().expect("connected");
            for m in &mut robot.modules {
                if !m.cpg_links.is_empty() {
                    m.cpg_links.clear();
                    session.pending.insert(m.id);
                }
            }
            Ok(couplings(robot, &mapping))
        })
        .await
    }

    pub async fn set_defect(
        &self,
        request: pb::SetDefectRequest,
    ) -> Result<pb::SessionState, Status> {
        let mode = match pb::DefectMode::try_from(request.mode) {
            Ok(pb::DefectMode::None) => DefectMode::Healthy,
            Ok(pb::DefectMode::Limp) => DefectMode::Limp,
            Ok(pb::DefectMode::Stuck) => DefectMode::Stuck,
            _ => return Err(Status::invalid_argument("mode: give NONE, LIMP or STUCK")),
        };
        self.with(move |shared, _| {
            let id = sim_id(&shared.mapping, request.module_id);
            let session = open(shared)?;
            session.sim.set_defect(id, mode).map_err(sim_error)?;
            if mode == DefectMode::Healthy {
                session.defects.remove(&id);
                send(&mut session.sim, id, &control(flags::MOTOR, 0))?;
            } else {
                session.defects.insert(id, mode);
                send(&mut session.sim, id, &control(0, flags::MOTOR))?;
            }
            Ok(state(shared))
        })
        .await
    }

    pub async fn connect_modules(
        &self,
        request: pb::ConnectModulesRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, _| {
            let connection = connection(
                &shared.mapping,
                request.id_from,
                &request.conn_from,
                request.id_to,
                &request.conn_to,
                f64::from(request.angle_deg),
            )
            .map_err(Status::invalid_argument)?;
            let session = open(shared)?;
            session.sim.connect(connection).map_err(sim_error)?;
            Ok(state(shared))
        })
        .await
    }

    pub async fn disconnect_module(
        &self,
        request: pb::DisconnectModuleRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, _| {
            let id = sim_id(&shared.mapping, request.module_id);
            let session = open(shared)?;
            session.sim.disconnect(id).map_err(sim_error)?;
            Ok(state(shared))
        })
        .await
    }

    pub async fn run_script(
        &self,
        request: pb::RunScriptRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, cancel| {
            let steps = parse_script(&request.script_xml, &shared.mapping)
                .map_err(Status::invalid_argument)?;
            let session = open(shared)?;
            for step in steps {
                match step {
                    ScriptStep::Connect(c) => session.sim.connect(c).map_err(sim_error)?,
                    ScriptStep::Disconnect(id) => session.sim.disconnect(id).map_err(sim_error)?,
                    ScriptStep::Pause(seconds) => {
                        advance(&mut session.sim, seconds, false, cancel)?
                    }
                }
            }
            Ok(state(shared))
        })
        .await
    }

    pub async fn set_ground_friction(
        &self,
        request: pb::SetGroundFrictionRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, _| {
            open(shared)?
                .sim
                .set_ground_friction(request.friction)
                .map_err(sim_error)?;
            Ok(state(shared))
        })
        .await
    }

    pub async fn drop_robot(
        &self,
        request: pb::DropRobotRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(move |shared, _| {
            open(shared)?
                .sim
                .drop_robot(request.height_m, request.upside_down)
                .map_err(sim_error)?;
            Ok(state(shared))
        })
        .await
    }

    pub async fn reset_simulation(
        &self,
        _request: pb::ResetSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        self.with(|shared, _| {
            let session = open(shared)?;
            // Back to power-on: the modules forgot their configuration.
            session.sim.reset();
            session.robot = None;
            session.pending.clear();
            session.defects.clear();
            Ok(state(shared))
        })
        .await
    }

    pub async fn set_id_mapping(&self, request: pb::IdMapping) -> Result<pb::IdMapping, Status> {
        let mut seen = HashMap::new();
        for (real, sim) in &request.real_to_sim {
            if let Some(other) = seen.insert(*sim, *real) {
                return Err(Status::invalid_argument(format!(
                    "real ids {other} and {real} both map to simulation id {sim}"
                )));
            }
        }
        self.with(move |shared, _| {
            shared.mapping = request.real_to_sim.clone();
            Ok(request)
        })
        .await
    }

    pub async fn get_id_mapping(
        &self,
        _request: pb::GetIdMappingRequest,
    ) -> Result<pb::IdMapping, Status> {
        self.with(|shared, _| {
            Ok(pb::IdMapping {
                real_to_sim: shared.mapping.clone(),
            })
        })
        .await
    }
}

fn open(shared: &mut Shared) -> Result<&mut Session, Status> {
    shared.session.as_mut().ok_or_else(|| {
        Status::failed_precondition("no simulation is open: call OpenSimulation first")
    })
}

fn connected(shared: &mut Shared) -> Result<&mut Session, Status> {
    let session = open(shared)?;
    if session.robot.is_none() {
        return Err(Status::failed_precondition(
            "no robot is connected: call ConnectRobot first",
        ));
    }
    Ok(session)
}

fn unknown(real: u32) -> Status {
    Status::invalid_argument(format!("unknown module id {real}"))
}

fn sim_id(mapping: &HashMap<u32, u32>, real: u32) -> ModuleId {
    mapping.get(&real).copied().unwrap_or(real)
}

fn real_id(mapping: &HashMap<u32, u32>, sim: ModuleId) -> u32 {
    mapping
        .iter()
        .find(|(_, s)| **s == sim)
        .map_or(sim, |(r, _)| *r)
}

fn is_defect(session: &Session, id: ModuleId) -> bool {
    session
        .defects
        .get(&id)
        .is_some_and(|d| *d != DefectMode::Healthy)
}

fn control(on: u8, off: u8) -> SnpMessage {
    SnpMessage::Control { on, off }
}

/// Sends one message; a refusal becomes `InvalidArgument`.
fn send(sim: &mut Simulation, id: ModuleId, message: &SnpMessage) -> Result<(), Status> {
    let dst = if id == ModuleId::from(BROADCAST) {
        BROADCAST
    } else {
        u8::try_from(id).map_err(|_| unknown(id))?
    };
    match sim.deliver(dst, message).map_err(sim_error)? {
        SnpMessage::Nack { code, .. } => Err(Status::invalid_argument(format!(
            "module {id} refused {message:?} (nack code {code})"
        ))),
        _ => Ok(()),
    }
}

/// Limit angles, CPG structure and parameters of `ids` (no network set-up).
fn send_parameters(session: &mut Session, ids: &[ModuleId]) -> Result<(), Status> {
    let robot = session.robot.as_ref().expect("connected").clone();
    for &id in ids {
        let Some(module) = robot.module(id) else {
            continue;
        };
        for message in configuration_messages(module) {
            if !matches!(message, SnpMessage::BluetoothConnect { .. }) {
                send(&mut session.sim, id, &message)?;
            }
        }
    }
    Ok(())
}

/// The configuration with real ids replaced by simulation ids.
fn translate(config: &RobotConfig, mapping: &HashMap<u32, u32>) -> RobotConfig {
    let mut out = config.clone();
    for m in &mut out.modules {
        m.id = sim_id(mapping, m.id);
        m.bluetooth_to = m.bluetooth_to.map(|t| sim_id(mapping, t));
        for l in &mut m.cpg_links {
            l.to = sim_id(mapping, l.to);
        }
    }
    out
}

fn module_view(
    m: &yamor_core::ModuleConfig,
    mapping: &HashMap<u32, u32>,
    defect: bool,
) -> pb::ModuleParameters {
    pb::ModuleParameters {
        id: real_id(mapping, m.id),
        amplitude: m.amplitude,
        offset: m.offset,
        speed: m.speed,
        min_angle: m.min_angle,
        max_angle: m.max_angle,
        defect,
    }
}

fn couplings(robot: &RobotConfig, mapping: &HashMap<u32, u32>) -> pb::ListCouplingsResponse {
    pb::ListCouplingsResponse {
        couplings: robot
            .modules
            .iter()
            .flat_map(|m| {
                m.cpg_links.iter().map(move |l| pb::Coupling {
                    from: real_id(mapping, m.id),
                    to: real_id(mapping, l.to),
                    phase: l.phase,
                    weight: l.weight,
                })
            })
            .collect(),
    }
}

fn state(shared: &Shared) -> pb::SessionState {
    match &shared.session {
        None => pb::SessionState {
            simulation_mode: true,
            ..Default::default()
        },
        Some(s) => {
            let p = s.sim.robot_position();
            pb::SessionState {
                open: true,
                connected: s.robot.is_some(),
                simulation_mode: true,
                elapsed_s: s.sim.time(),
                position: Some(pb::Position {
                    t: s.sim.time(),
                    x: f64::from(p.x),
                    y: f64::from(p.y),
                    z: f64::from(p.z),
                }),
                pending_changes: u32::try_from(s.pending.len()).unwrap_or(u32::MAX),
            }
        }
    }
}

/// Advances the simulation by `seconds`: as fast as possible, or paced to
/// the wall clock. Stops early with `Cancelled` when the caller went away.
fn advance(
    sim: &mut Simulation,
    seconds: f64,
    real: bool,
    cancel: &AtomicBool,
) -> Result<(), Status> {
    let start_sim = sim.time();
    let started = Instant::now();
    let end = start_sim + seconds;
    while sim.time() + sim.settings().dt / 2.0 < end {
        if cancel.load(Ordering::Relaxed) {
            return Err(Status::cancelled("sleep cancelled"));
        }
        let chunk_end = (sim.time() + 0.1).min(end);
        sim.run_until(chunk_end);
        if real {
            let ahead = (sim.time() - start_sim) - started.elapsed().as_secs_f64();
            if ahead > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ahead));
            }
        }
    }
    Ok(())
}

enum ScriptStep {
    Connect(Connection),
    Disconnect(ModuleId),
    Pause(f64),
}

fn connection(
    mapping: &HashMap<u32, u32>,
    id_from: u32,
    conn_from: &str,
    id_to: u32,
    conn_to: &str,
    angle_deg: f64,
) -> Result<Connection, String> {
    let connector = |name: &str, text: &str| -> Result<Connector, String> {
        text.parse().map_err(|_| {
            format!("{name}: unknown connector {text:?} (front, rear, left, right, top or bottom)")
        })
    };
    Ok(Connection {
        id_from: sim_id(mapping, id_from),
        conn_from: connector("connfrom", conn_from)?,
        id_to: sim_id(mapping, id_to),
        conn_to: connector("connto", conn_to)?,
        angle_deg: Connection::check_angle(angle_deg).map_err(|p| p.to_string())?,
    })
}

/// Parses a C.2.7 transformation script; errors name the line and element.
fn parse_script(text: &str, mapping: &HashMap<u32, u32>) -> Result<Vec<ScriptStep>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("script_xml: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "script" {
        return Err(format!(
            "script_xml: the root element must be <script>, got <{}>",
            root.tag_name().name()
        ));
    }
    let mut steps = Vec::new();
    for node in root.children().filter(roxmltree::Node::is_element) {
        let line = doc.text_pos_at(node.range().start).row;
        let name = node.tag_name().name();
        let at = |why: String| format!("script_xml:{line}: <{name}>: {why}");
        let attr = |key: &str| {
            node.attribute(key)
                .ok_or_else(|| at(format!("missing attribute `{key}`")))
        };
        let number = |key: &str| -> Result<f64, String> {
            let text = attr(key)?;
            text.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| at(format!("attribute `{key}`: {text:?} is not a number")))
        };
        let id = |key: &str| -> Result<u32, String> {
            let text = attr(key)?;
            text.trim()
                .parse::<u32>()
                .map_err(|_| at(format!("attribute `{key}`: {text:?} is not a module id")))
        };
        steps.push(match name {
            "connect" => ScriptStep::Connect(
                connection(
                    mapping,
                    id("idfrom")?,
                    attr("connfrom")?,
                    id("idto")?,
                    attr("connto")?,
                    if node.has_attribute("angle") {
                        number("angle")?
                    } else {
                        0.0
                    },
                )
                .map_err(at)?,
            ),
            "disconnect" => ScriptStep::Disconnect(sim_id(mapping, id("id")?)),
            "pause" => {
                let ms = number("delay")?;
                if !(0.0..=3_600_000.0).contains(&ms) {
                    return Err(at(format!("delay {ms} ms is out of range")));
                }
                ScriptStep::Pause(ms / 1000.0)
            }
            other => {
                return Err(at(format!(
                    "unknown command <{other}> (connect, disconnect or pause)"
                )));
            }
        });
    }
    Ok(steps)
}
