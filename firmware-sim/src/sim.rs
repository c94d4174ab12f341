//! One simulated robot: module firmware, the CPG network and the physics
//! world, advanced by the classic device loop, plus the supervisor commands
//! of the Webots bridge (thesis 5.4).

use crate::firmware::ModuleFirmware;
use crate::geometry::{self, Part, SERVO_MAX_SPEED, SERVO_STALL_TORQUE};
use crate::hardware::ServoPath;
use crate::physics::{
    self, Engine, PartState, Physics, PhysicsSettings, ServoCommand, Topology, part_index,
};
use rand::{Rng, SeedableRng};
use rapier3d::math::{Pose, Rotation, Vector};
use std::collections::HashMap;
use yamor_core::ModuleId;
use yamor_core::cpg::{Coupling, CpgNetwork, OscillatorState};
use yamor_core::evaluation::WEAK_TORQUE_SHARE;
use yamor_core::world::Hardware;
use yamor_core::{Connection, Morphology, Problem, RobotConfig};
use yamor_snp::configuration_messages;
use yamor_snp::{DefectMode, SnpMessage, flags};

/// Errors of the simulator: each names the module or value at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("unknown module id {0}")]
    UnknownModule(ModuleId),
    #[error(transparent)]
    Physics(#[from] physics::BuildError),
    /// The job's world names an engine this simulator does not have.
    #[error("world.engine: {0}")]
    Engine(#[from] physics::UnknownEngine),
    #[error("module id {0} does not fit the SNP wire (ids must be 0..=253)")]
    IdOutOfRange(ModuleId),
    #[error("gait configures module {0}, which is not in the morphology")]
    GaitModuleNotInMorphology(ModuleId),
    #[error("invalid connection: {0}")]
    Connection(#[from] Problem),
    #[error("module {0} must be disconnected from every other module before it is connected")]
    SourceStillConnected(ModuleId),
    #[error("no room to connect module {0}: it would end {1:.3} m below the ground")]
    NoRoom(ModuleId, f32),
    #[error("the loop closed by {0:?} does not meet: connectors {1:.4} m apart")]
    LoopDoesNotClose(Connection, f32),
    #[error("{name} must be {expected}, got {value}")]
    OutOfRange {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
    #[error("module {module} refused the configuration message (nack code {code})")]
    Refused { module: ModuleId, code: u8 },
    #[error("cancelled at t = {0:.2} s")]
    Cancelled(f64),
    #[error(
        "the gait makes module {0} rotate, but a YaMoR servo only swings within its limit angles (motion=\"rotate\" is for the Roombots' continuous joints)"
    )]
    Rotating(ModuleId),
}

/// Settings of a simulation; everything an evaluation depends on besides
/// the robot and the gait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimSettings {
    /// Physics step and firmware tick (s).
    pub dt: f64,
    pub ground_friction: f64,
    /// Solver substeps per tick; `None` takes the engine's own
    /// ([`Engine::default_substeps`]).
    pub substeps: Option<usize>,
    /// Seeds the oscillators' initial phases.
    pub seed: u64,
    pub engine: Engine,
    /// How the robot as built differs from the model (masses, servo torque,
    /// speed, lag and play); the default is the model itself.
    pub hardware: Hardware,
}

impl Default for SimSettings {
    fn default() -> Self {
        Self {
            dt: DEFAULT_DT,
            ground_friction: 0.8,
            substeps: None,
            seed: 0,
            engine: Engine::default(),
            hardware: Hardware::default(),
        }
    }
}

/// The default firmware tick and physics step: 60 Hz, close to the 50 Hz
/// servo pulse of a hobby servo, with 4 solver substeps (4.17 ms each). The
/// reference gait walks within 1% of the same speed at half this step; see
/// `docs/benchmarks.md`.
pub const DEFAULT_DT: f64 = 1.0 / 60.0;
/// Position gain of the servo (N·m/rad): full torque at 0.05 rad of error,
/// as a hobby servo's proportional loop.
const SERVO_STIFFNESS: f32 = 20.0;
/// Velocity gain of the servo (N·m·s/rad).
const SERVO_DAMPING: f32 = 0.5;
/// Viscous friction of the gearbox of an unpowered or limp servo (N·m·s/rad),
/// and the most it resists (N·m).
const LIMP_DAMPING: f32 = 0.05;
const LIMP_FRICTION_TORQUE: f32 = 0.02;
/// A stuck gearbox holds far beyond the servo's own torque.
const STUCK_TORQUE: f32 = 50.0 * SERVO_STALL_TORQUE;
/// Clearance between the lowest point of a new robot and the ground (m).
const DROP_CLEARANCE: f32 = 0.002;

/// One module of the simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimModule {
    pub id: ModuleId,
    pub passive: bool,
    pub firmware: ModuleFirmware,
    pub defect: DefectMode,
}

/// What the firmware reads at the start of a tick (the device buffer).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SensorReading {
    pub angle: f32,
    pub velocity: f32,
}

/// A simulated YaMoR robot in its world.
pub struct Simulation {
    settings: SimSettings,
    initial: Morphology,
    morphology: Morphology,
    modules: Vec<SimModule>,
    index_of: HashMap<ModuleId, usize>,
    cpg: CpgNetwork,
    physics: Box<dyn Physics>,
    sensors: Vec<SensorReading>,
    setpoints: Vec<f32>,
    /// The servo's internal reference, slewed towards the set-point at no
    /// more than the servo's no-load speed.
    references: Vec<f32>,
    servo_path: ServoPath,
    commands: Vec<ServoCommand>,
    time: f64,
    ticks: u64,
    master: Option<ModuleId>,
}

impl Simulation {
    /// Assembles the robot of `morphology` at rest on the ground, every
    /// module powered on but idle (flags off), as a real robot after power-up.
    pub fn new(morphology: &Morphology, settings: SimSettings) -> Result<Self, SimError> {
        if !(settings.dt > 0.0 && settings.dt <= 0.05) {
            return Err(SimError::OutOfRange {
                name: "dt",
                value: settings.dt,
                expected: "in (0, 0.05] s",
            });
        }
        if !(settings.ground_friction >= 0.0 && settings.ground_friction <= 10.0) {
            return Err(SimError::OutOfRange {
                name: "ground friction",
                value: settings.ground_friction,
                expected: "in [0, 10]",
            });
        }
        if let Err(e) = settings.hardware.check() {
            return Err(SimError::OutOfRange {
                name: e.field,
                value: e.value,
                expected: e.expected,
            });
        }
        let mut index_of = HashMap::new();
        let mut modules = Vec::new();
        for (i, m) in morphology.modules.iter().enumerate() {
            if m.id > 253 {
                return Err(SimError::IdOutOfRange(m.id));
            }
            index_of.insert(m.id, i);
            modules.push(SimModule {
                id: m.id,
                passive: m.passive,
                firmware: ModuleFirmware::power_on(m.id),
                defect: DefectMode::Healthy,
            });
        }
        let parts = assemble(morphology, &index_of)?;
        let physics = build_physics(&settings, morphology, &modules, &index_of, &parts)?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(settings.seed);
        let mut cpg = CpgNetwork::new(modules.len());
        for (state, running) in cpg.states.iter_mut().zip(&mut cpg.running) {
            *state = OscillatorState {
                phase: rng.random_range(0.0..std::f64::consts::TAU),
                ..OscillatorState::default()
            };
            *running = false;
        }
        let n = modules.len();
        let commands = modules_idle(&modules, &settings.hardware);
        let mut sim = Self {
            settings,
            initial: morphology.clone(),
            morphology: morphology.clone(),
            modules,
            index_of,
            cpg,
            physics,
            sensors: vec![SensorReading::default(); n],
            setpoints: vec![0.0; n],
            references: vec![0.0; n],
            servo_path: ServoPath::new(n, &settings.hardware, settings.dt),
            commands,
            time: 0.0,
            ticks: 0,
            master: None,
        };
        sim.read_sensors();
        Ok(sim)
    }

    /// Sends every module its configuration over SNP and switches UART, CPG
    /// and motors on, as YaMoR Host 3 does after connecting (C.2.3, C.2.4).
    pub fn configure(&mut self, gait: &RobotConfig) -> Result<(), SimError> {
        for module in &gait.modules {
            if !self.index_of.contains_key(&module.id) {
                return Err(SimError::GaitModuleNotInMorphology(module.id));
            }
            if module.motion == yamor_core::Motion::Rotate {
                return Err(SimError::Rotating(module.id));
            }
        }
        for module in &gait.modules {
            for message in configuration_messages(module) {
                match self.deliver(module.id as u8, &message)? {
                    SnpMessage::Nack { code, .. } => {
                        return Err(SimError::Refused {
                            module: module.id,
                            code,
                        });
                    }
                    _ => continue,
                }
            }
        }
        self.deliver(
            yamor_snp::BROADCAST,
            &SnpMessage::Control {
                on: flags::UART | flags::CPG | flags::MOTOR,
                off: 0,
            },
        )?;
        Ok(())
    }

    /// Delivers one SNP message to module `dst` (or every module on
    /// [`yamor_snp::BROADCAST`]) and returns the reply of the (last) module.
    pub fn deliver(&mut self, dst: u8, message: &SnpMessage) -> Result<SnpMessage, SimError> {
        let targets: Vec<usize> = if dst == yamor_snp::BROADCAST {
            (0..self.modules.len()).collect()
        } else {
            vec![self.module_index(ModuleId::from(dst))?]
        };
        let known: Vec<ModuleId> = self.modules.iter().map(|m| m.id).collect();
        let mut reply = SnpMessage::Ack {
            of_kind: message.kind(),
        };
        for i in targets {
            let module = &mut self.modules[i];
            reply = if let SnpMessage::QueryState = message {
                SnpMessage::State {
                    flags: module.firmware.flags,
                    angle: self.sensors[i].angle,
                    setpoint: self.setpoints[i],
                    phase: self.cpg.states[i].phase as f32,
                }
            } else {
                module
                    .firmware
                    .handle(message, |id| known.contains(&ModuleId::from(id)))
            };
        }
        self.sync_cpg();
        Ok(reply)
    }

    /// Copies firmware parameters and links into the CPG network.
    fn sync_cpg(&mut self) {
        for (i, module) in self.modules.iter().enumerate() {
            let fw = &module.firmware;
            self.cpg.params[i] = fw.params;
            self.cpg.running[i] = !module.passive && fw.cpg_on();
            self.cpg.couplings[i] = fw
                .links
                .iter()
                .filter_map(|link| {
                    self.index_of.get(&link.to).map(|&from| Coupling {
                        from,
                        weight: link.weight,
                        phase_bias: link.phase,
                    })
                })
                .collect();
        }
    }

    /// One firmware tick and physics step: read every sensor into the
    /// buffer, integrate the oscillators, write every servo, step the world.
    pub fn tick(&mut self) {
        self.read_sensors();
        self.cpg.step(self.settings.dt);
        let hardware = self.settings.hardware;
        let max_slew = SERVO_MAX_SPEED * (hardware.speed_scale * self.settings.dt) as f32;
        for i in 0..self.modules.len() {
            let module = &self.modules[i];
            let setpoint = module.firmware.limit(self.cpg.output(i)) as f32;
            self.setpoints[i] = setpoint;
            let acted_on = self.servo_path.lagged(i, setpoint);
            let reference = &mut self.references[i];
            // A jammed gearbox keeps the reference where it jammed.
            let slew = match module.defect {
                DefectMode::Stuck => 0.0,
                _ => (acted_on - *reference).clamp(-max_slew, max_slew),
            };
            *reference += slew;
            let held = self.servo_path.through_play(i, *reference);
            let joint_speed = self.sensors[i].velocity;
            let command = servo_command(
                module,
                (held, slew / self.settings.dt as f32),
                joint_speed,
                &hardware,
            );
            self.commands[i] = command;
            self.physics.command_servo(i, command);
        }
        self.physics.step();
        self.ticks += 1;
        self.time = self.ticks as f64 * self.settings.dt;
    }

    /// Runs until the virtual clock reaches `t` seconds.
    pub fn run_until(&mut self, t: f64) {
        while self.time + self.settings.dt / 2.0 <= t {
            self.tick();
        }
    }

    fn read_sensors(&mut self) {
        for (i, reading) in self.sensors.iter_mut().enumerate() {
            let (angle, velocity) = self.physics.servo_reading(i);
            *reading = SensorReading { angle, velocity };
        }
    }

    /// Virtual time (s).
    #[must_use]
    pub fn time(&self) -> f64 {
        self.time
    }

    #[must_use]
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    #[must_use]
    pub fn settings(&self) -> &SimSettings {
        &self.settings
    }

    #[must_use]
    pub fn morphology(&self) -> &Morphology {
        &self.morphology
    }

    #[must_use]
    pub fn modules(&self) -> &[SimModule] {
        &self.modules
    }

    #[must_use]
    pub fn sensors(&self) -> &[SensorReading] {
        &self.sensors
    }

    #[must_use]
    pub fn setpoints(&self) -> &[f32] {
        &self.setpoints
    }

    #[must_use]
    pub fn physics(&self) -> &dyn Physics {
        self.physics.as_ref()
    }

    /// The rigid clusters and hinges of the robot as it stands now.
    #[must_use]
    pub fn topology(&self) -> Topology {
        topology_of(
            &self.morphology,
            &self.modules,
            &self.index_of,
            &self.physics.part_states(),
        )
    }

    /// What every servo was told at the last tick.
    #[must_use]
    pub fn servo_commands(&self) -> &[ServoCommand] {
        &self.commands
    }

    /// The PD gains and torque of a healthy servo.
    #[must_use]
    pub fn healthy_servo_gains() -> crate::mjcf::ActuatorGains {
        crate::mjcf::ActuatorGains {
            stiffness: SERVO_STIFFNESS,
            damping: SERVO_DAMPING,
            max_torque: SERVO_STALL_TORQUE,
        }
    }

    #[must_use]
    pub fn master(&self) -> Option<ModuleId> {
        self.master
    }

    pub fn module_index(&self, id: ModuleId) -> Result<usize, SimError> {
        self.index_of
            .get(&id)
            .copied()
            .ok_or(SimError::UnknownModule(id))
    }

    /// Position of a module's body centre (m).
    pub fn module_position(&self, id: ModuleId) -> Result<Vector, SimError> {
        let i = self.module_index(id)?;
        Ok(self
            .physics
            .part_state(part_index(i, Part::Body))
            .pose
            .translation)
    }

    /// The robot position: the central module's body centre (thesis 5.4.1).
    #[must_use]
    pub fn robot_position(&self) -> Vector {
        self.module_position(self.morphology.central)
            .expect("the central module always exists")
    }

    /// Where the robot is now, as an evaluation records it (time and
    /// metres, z up).
    #[must_use]
    pub fn robot_sample(&self) -> yamor_core::evaluation::Sample {
        let p = self.robot_position();
        yamor_core::evaluation::Sample {
            t: self.time(),
            x: f64::from(p.x),
            y: f64::from(p.y),
            z: f64::from(p.z),
        }
    }

    /// How upright the robot is: the world z component of the central
    /// module's own up axis, 1 as assembled, −1 upside down. The gaits
    /// database keys gaits on it (thesis 7.8.2).
    #[must_use]
    pub fn robot_up(&self) -> f64 {
        let i = self
            .module_index(self.morphology.central)
            .expect("the central module always exists");
        let pose = self.physics.part_state(part_index(i, Part::Body)).pose;
        f64::from((pose.rotation * Vector::Z).z)
    }

    // ---- supervisor commands (thesis 5.4.1) ----

    /// Sets the master node, the module the host's Bluetooth link goes to.
    pub fn set_master(&mut self, id: ModuleId) -> Result<(), SimError> {
        self.module_index(id)?;
        self.master = Some(id);
        Ok(())
    }

    pub fn set_ground_friction(&mut self, mu: f64) -> Result<(), SimError> {
        if !(0.0..=10.0).contains(&mu) {
            return Err(SimError::OutOfRange {
                name: "ground friction",
                value: mu,
                expected: "in [0, 10]",
            });
        }
        self.settings.ground_friction = mu;
        self.physics.set_ground_friction(mu as f32);
        Ok(())
    }

    /// Makes a motor limp or stuck (at its current angle), or heals it.
    pub fn set_defect(&mut self, id: ModuleId, defect: DefectMode) -> Result<(), SimError> {
        let i = self.module_index(id)?;
        self.modules[i].defect = defect;
        self.references[i] = self.sensors[i].angle;
        Ok(())
    }

    /// Back to the state right after [`Simulation::new`]: initial morphology,
    /// poses, oscillators, firmware and time (thesis 5.4.5, without restart).
    pub fn reset(&mut self) {
        let fresh = Simulation::new(&self.initial, self.settings)
            .expect("the initial morphology was valid once");
        *self = fresh;
    }

    /// Lifts the robot to `height` (m, lowest point above ground), optionally
    /// upside down, at rest, keeping its shape and its position in the plane.
    pub fn drop_robot(&mut self, height: f64, upside_down: bool) -> Result<(), SimError> {
        if !(0.0..=10.0).contains(&height) {
            return Err(SimError::OutOfRange {
                name: "drop height",
                value: height,
                expected: "in [0, 10] m",
            });
        }
        let centre = self.robot_position();
        let flip = if upside_down {
            Rotation::from_rotation_x(std::f32::consts::PI)
        } else {
            Rotation::IDENTITY
        };
        let about_centre = Pose::from_translation(centre)
            * Pose::from_rotation(flip)
            * Pose::from_translation(-centre);
        let mut parts: Vec<PartState> = self
            .physics
            .part_states()
            .into_iter()
            .map(|s| PartState::at_rest(about_centre * s.pose))
            .collect();
        lift_to(&mut parts, height as f32);
        self.rebuild(&parts)?;
        Ok(())
    }

    /// Connects a free module to the robot (C.2.7 `connect`): `idfrom` is
    /// moved so its connector mates `connto` of `idto` at `angle` degrees.
    /// Unlike the thesis' bridge the current servo angles are known, so the
    /// servos need not be zeroed first.
    pub fn connect(&mut self, connection: Connection) -> Result<(), SimError> {
        self.morphology.check_connection(&connection)?;
        let source = connection.id_from;
        if self
            .morphology
            .connections
            .iter()
            .any(|c| c.involves(source))
        {
            return Err(SimError::SourceStillConnected(source));
        }
        let (si, di) = (
            self.module_index(source)?,
            self.module_index(connection.id_to)?,
        );
        let mut parts = self.physics.part_states();
        let destination_part = parts[part_index(di, Part::of(connection.conn_to))].pose;
        let placed = geometry::place_against(
            destination_part,
            connection.conn_to,
            connection.conn_from,
            connection.angle_deg,
        );
        let angle = self.sensors[si].angle;
        let (body, handle) = match Part::of(connection.conn_from) {
            Part::Body => (placed, placed * geometry::handle_in_body(angle)),
            Part::Handle => (placed * geometry::handle_in_body(angle).inverse(), placed),
        };
        let lowest = physics::lowest_corner(body, handle);
        if lowest < -0.001 {
            return Err(SimError::NoRoom(source, -lowest));
        }
        // The new module moves with the part it is screwed onto.
        let carrier = parts[part_index(di, Part::of(connection.conn_to))];
        for (part, pose) in [(Part::Body, body), (Part::Handle, handle)] {
            parts[part_index(si, part)] = PartState {
                pose,
                linvel: carrier.linvel,
                angvel: carrier.angvel,
            };
        }
        self.morphology.connections.push(connection);
        if let Err(e) = self.rebuild(&parts) {
            self.morphology.connections.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Disconnects a module from all its neighbours and puts it away beside
    /// the robot, at rest on the ground (C.2.7 `disconnect`).
    pub fn disconnect(&mut self, id: ModuleId) -> Result<(), SimError> {
        let i = self.module_index(id)?;
        if id == self.morphology.central {
            return Err(SimError::OutOfRange {
                name: "module to disconnect",
                value: f64::from(id),
                expected: "any module but the central one",
            });
        }
        let before = self.morphology.connections.clone();
        self.morphology.connections.retain(|c| !c.involves(id));
        let mut parts = self.physics.part_states();
        let angle = self.sensors[i].angle;
        // Park it 2 m to the side, spread by index so parked modules never overlap.
        let centre = self.robot_position();
        let body = Pose::from_translation(Vector::new(
            centre.x + 0.2 * i as f32,
            centre.y + 2.0,
            geometry::BODY_HALF[2] + DROP_CLEARANCE + 0.06,
        ));
        parts[part_index(i, Part::Body)] = PartState::at_rest(body);
        parts[part_index(i, Part::Handle)] =
            PartState::at_rest(body * geometry::handle_in_body(angle));
        if let Err(e) = self.rebuild(&parts) {
            self.morphology.connections = before;
            return Err(e);
        }
        Ok(())
    }

    /// A new world from `parts`; on failure the old one stays.
    fn rebuild(&mut self, parts: &[PartState]) -> Result<(), SimError> {
        self.physics = build_physics(
            &self.settings,
            &self.morphology,
            &self.modules,
            &self.index_of,
            parts,
        )?;
        self.read_sensors();
        Ok(())
    }
}

/// The commands of modules that have not ticked yet.
fn modules_idle(modules: &[SimModule], hardware: &Hardware) -> Vec<ServoCommand> {
    modules
        .iter()
        .map(|m| servo_command(m, (0.0, 0.0), 0.0, hardware))
        .collect()
}

/// What module `module`'s servo is told: follow `(reference,
/// reference_speed)` with the torque the hardware has at `joint_speed`.
fn servo_command(
    module: &SimModule,
    (reference, reference_speed): (f32, f32),
    joint_speed: f32,
    hardware: &Hardware,
) -> ServoCommand {
    let limp = ServoCommand {
        angle: 0.0,
        velocity: 0.0,
        stiffness: 0.0,
        damping: LIMP_DAMPING,
        max_torque: LIMP_FRICTION_TORQUE,
    };
    match module.defect {
        // The reference was frozen at the angle where the gearbox jammed.
        DefectMode::Stuck => ServoCommand {
            angle: reference,
            velocity: 0.0,
            stiffness: 50.0 * SERVO_STIFFNESS,
            damping: 50.0 * SERVO_DAMPING,
            max_torque: STUCK_TORQUE,
        },
        DefectMode::Limp => limp,
        DefectMode::Healthy | DefectMode::Weak if !module.firmware.motor_on() || module.passive => {
            limp
        }
        DefectMode::Healthy | DefectMode::Weak => ServoCommand {
            angle: reference,
            velocity: reference_speed,
            stiffness: SERVO_STIFFNESS,
            damping: SERVO_DAMPING,
            max_torque: SERVO_STALL_TORQUE
                * hardware.torque_scale as f32
                * sag(joint_speed, hardware)
                * if module.defect == DefectMode::Weak {
                    WEAK_TORQUE_SHARE as f32
                } else {
                    1.0
                },
        },
    }
}

/// The share of its stall torque a servo turning at `joint_speed` has: all
/// of it, unless the hardware's torque sags, when it falls linearly to
/// nothing at the no-load speed (a DC motor's curve; a twentieth is kept so
/// a servo driven past its speed still brakes).
fn sag(joint_speed: f32, hardware: &Hardware) -> f32 {
    if !hardware.torque_sags {
        return 1.0;
    }
    let top = SERVO_MAX_SPEED * hardware.speed_scale as f32;
    (1.0 - joint_speed.abs() / top).clamp(0.05, 1.0)
}

/// The rigid clusters and hinges of `morphology` with its parts as `parts`.
fn topology_of(
    morphology: &Morphology,
    modules: &[SimModule],
    index_of: &HashMap<ModuleId, usize>,
    parts: &[PartState],
) -> Topology {
    let passive: Vec<bool> = modules.iter().map(|m| m.passive).collect();
    let connections = physics::connected_parts(&morphology.connections, |id| index_of[&id]);
    Topology::new(&passive, &connections, parts)
}

fn build_physics(
    settings: &SimSettings,
    morphology: &Morphology,
    modules: &[SimModule],
    index_of: &HashMap<ModuleId, usize>,
    parts: &[PartState],
) -> Result<Box<dyn Physics>, SimError> {
    let mut topology = topology_of(morphology, modules, index_of, parts);
    if !settings.hardware.is_nominal() {
        // A box's inertia follows from its mass and shape in both engines,
        // so scaling the mass scales the inertia with it.
        for part in topology.clusters.iter_mut().flat_map(|c| &mut c.boxes) {
            part.mass *= settings.hardware.mass_factor(part.part / 2) as f32;
        }
    }
    settings
        .engine
        .build(
            &PhysicsSettings {
                dt: settings.dt as f32,
                ground_friction: settings.ground_friction as f32,
                substeps: settings
                    .substeps
                    .unwrap_or(settings.engine.default_substeps()),
            },
            &topology,
        )
        .map_err(SimError::Physics)
}

/// Places every module through the connections, starting from the central
/// module, with all servos at 0 rad, then lifts the robot onto the ground.
fn assemble(
    morphology: &Morphology,
    index_of: &HashMap<ModuleId, usize>,
) -> Result<Vec<PartState>, SimError> {
    let n = morphology.modules.len();
    let mut body: Vec<Option<Pose>> = vec![None; n];
    body[index_of[&morphology.central]] = Some(Pose::IDENTITY);
    let part_pose = |body: Pose, part: Part| match part {
        Part::Body => body,
        Part::Handle => body * geometry::handle_in_body(0.0),
    };
    let mut placed_by = vec![false; morphology.connections.len()];
    loop {
        let mut progress = false;
        for (k, c) in morphology.connections.iter().enumerate() {
            let (a, b) = (index_of[&c.id_from], index_of[&c.id_to]);
            let (dest, dest_conn, src, src_conn) = match (body[a], body[b]) {
                (None, Some(_)) => (b, c.conn_to, a, c.conn_from),
                (Some(_), None) => (a, c.conn_from, b, c.conn_to),
                _ => continue,
            };
            let dest_part = part_pose(body[dest].expect("placed"), Part::of(dest_conn));
            let src_part = geometry::place_against(dest_part, dest_conn, src_conn, c.angle_deg);
            body[src] = Some(match Part::of(src_conn) {
                Part::Body => src_part,
                Part::Handle => src_part * geometry::handle_in_body(0.0).inverse(),
            });
            placed_by[k] = true;
            progress = true;
        }
        if !progress {
            break;
        }
    }
    let body: Vec<Pose> = body
        .into_iter()
        .enumerate()
        .map(|(i, b)| b.ok_or(SimError::UnknownModule(morphology.modules[i].id)))
        .collect::<Result<_, _>>()?;
    // Connections that close a loop must meet where the tree placed them.
    for (k, c) in morphology.connections.iter().enumerate() {
        if placed_by[k] {
            continue;
        }
        let (a, b) = (index_of[&c.id_from], index_of[&c.id_to]);
        let from =
            part_pose(body[a], Part::of(c.conn_from)) * geometry::connector_in_part(c.conn_from);
        let to = part_pose(body[b], Part::of(c.conn_to)) * geometry::connector_in_part(c.conn_to);
        let gap = (from.translation - to.translation).length();
        if gap > 1e-3 {
            return Err(SimError::LoopDoesNotClose(*c, gap));
        }
    }
    let mut parts: Vec<PartState> = body
        .iter()
        .flat_map(|&b| {
            [
                PartState::at_rest(part_pose(b, Part::Body)),
                PartState::at_rest(part_pose(b, Part::Handle)),
            ]
        })
        .collect();
    lift_to(&mut parts, 0.0);
    Ok(parts)
}

/// Translates all parts so the lowest corner is `height` + clearance above the ground.
fn lift_to(parts: &mut [PartState], height: f32) {
    let lowest = parts
        .chunks(2)
        .map(|pair| physics::lowest_corner(pair[0].pose, pair[1].pose))
        .fold(f32::INFINITY, f32::min);
    let shift = Vector::new(0.0, 0.0, height + DROP_CLEARANCE - lowest);
    for part in parts {
        part.pose.translation += shift;
    }
}
