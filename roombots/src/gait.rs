//! Roombot robots that walk: a robot description of the Roombot module
//! family, and a gait walked in the engine, measured as a YaMoR gait is
//! (thesis 6.2.1), so the organizer, the hosts and the optimizers treat
//! both families alike.
//!
//! A robot is `world.xml` of the Roombot family:
//!
//! ```xml
//! <morphology family="roombots">
//!   <module id="0"/>
//!   <module id="1" angles="0 1.5708 0"/>
//!   <connect idfrom="1" connfrom="C0X" idto="0" connto="C3X" turns="1"/>
//! </morphology>
//! ```
//!
//! The first module is the root; every other module hangs by one
//! `<connect>` (its connector `connfrom` locked onto `connto` of an earlier
//! module, turned `turns` quarter-turns, as in [`crate::chain::joined`]).
//! `angles` are the joints' start angles (rad, default 0).
//!
//! The gait is YaMoR's `yamorconfig` with one oscillator per joint: joint
//! `j` (0, 1, 2) of module `m` is oscillator `3·m + j` ([`oscillator_id`]).
//! An oscillating joint swings about its start angle plus the offset,
//! within its limit angles; a rotating one (`motion="rotate"`) turns round
//! from its start angle, its limits ignored, and may not turn faster than
//! the servo can ([`MAX_SPEED`]: such a gait is refused, since the joint
//! could not follow its oscillator's phase). Either follows its oscillator
//! no faster than the servo turns. The walk starts lying on the
//! floor at rest, the oscillators' phases drawn from the spec's seed like a
//! YaMoR walk's; its velocity is that of the mean of the cube centres.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use nalgebra::{Isometry3, Point3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_core::cpg::{Coupling, CpgNetwork, OscillatorParams, OscillatorState};
use yamor_core::evaluation::{EvaluationSpec, Sample, Walk};
use yamor_core::measure::WalkMeter;
use yamor_core::{Motion, RobotConfig};

use crate::chain::{Link, Tree};
use crate::module::{Connector, Joints};
use crate::physics::{MAX_SPEED, PhysicsError, Robot, RobotSettings};

/// A Roombot robot: its modules' ids, how they hang together, and the
/// joints' start angles.
#[derive(Debug, Clone, PartialEq)]
pub struct RoombotRobot {
    /// Module ids, the root first, in the order of `tree`'s modules.
    pub ids: Vec<u32>,
    /// The modules joined; `root_pose` is ignored (the walk lays the robot
    /// on the floor).
    pub tree: Tree,
    pub start: Vec<Joints>,
}

/// What is wrong with a robot description.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptionError {
    #[error("{file}: not XML: {message}")]
    Xml { file: String, message: String },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

/// Why a walk did not give a velocity.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WalkError {
    #[error(transparent)]
    Physics(#[from] PhysicsError),
    #[error(
        "the gait drives oscillator {0}, which is no joint of the robot (joint j of module m is 3·m + j)"
    )]
    UnknownOscillator(u32),
    #[error(
        "oscillator {oscillator} rotates at {omega} rad/s, faster than a joint turns ({max:.3} rad/s): it could not follow its oscillator"
    )]
    TooFast {
        oscillator: u32,
        omega: f64,
        max: f64,
    },
    #[error("a cpglink of oscillator {from} names oscillator {to}, which is no joint of the robot")]
    UnknownCoupling { from: u32, to: u32 },
    #[error("a Roombot walk does not take {0} yet")]
    Unsupported(&'static str),
    #[error("the spec is not valid: {0}")]
    Spec(String),
    #[error("the simulation blew up at t = {0:.2} s")]
    Unstable(f64),
    #[error("cancelled at t = {0:.2} s")]
    Cancelled(f64),
}

/// The gait oscillator of joint `j` of the module with id `module`.
#[must_use]
pub fn oscillator_id(module: u32, j: usize) -> u32 {
    module * 3 + j as u32
}

impl RoombotRobot {
    /// Whether `text` is a Roombot robot description (`family="roombots"`).
    #[must_use]
    pub fn is_roombots(text: &str) -> bool {
        roxmltree::Document::parse(text)
            .is_ok_and(|d| d.root_element().attribute("family") == Some("roombots"))
    }

    pub fn from_xml_str(file: &str, text: &str) -> Result<Self, DescriptionError> {
        let invalid = |message: String| DescriptionError::Invalid {
            file: file.to_owned(),
            message,
        };
        let doc = roxmltree::Document::parse(text).map_err(|e| DescriptionError::Xml {
            file: file.to_owned(),
            message: e.to_string(),
        })?;
        let root = doc.root_element();
        if root.tag_name().name() != "morphology" || root.attribute("family") != Some("roombots") {
            return Err(invalid(
                "expected <morphology family=\"roombots\"> as the root element".to_owned(),
            ));
        }
        let mut ids = Vec::new();
        let mut start = Vec::new();
        let mut connects = Vec::new();
        for node in root.children().filter(roxmltree::Node::is_element) {
            let line = doc.text_pos_at(node.range().start).row;
            let at = |m: String| invalid(format!("line {line}: {m}"));
            match node.tag_name().name() {
                "module" => {
                    let id: u32 = node
                        .attribute("id")
                        .ok_or_else(|| at("<module> needs an id".to_owned()))?
                        .trim()
                        .parse()
                        .map_err(|_| at("a module id is a whole number".to_owned()))?;
                    if ids.contains(&id) {
                        return Err(at(format!("module {id} is declared twice")));
                    }
                    if id > 80 {
                        return Err(at(format!(
                            "module id {id} is above 80: its joints' oscillators (3·id + j) would not fit the gait's ids"
                        )));
                    }
                    let angles = match node.attribute("angles") {
                        None => [0.0; 3],
                        Some(text) => {
                            let values: Vec<f64> = text
                                .split_whitespace()
                                .map(str::parse)
                                .collect::<Result<_, _>>()
                                .map_err(|_| at(format!("angles {text:?} are not numbers")))?;
                            match values[..] {
                                [a, b, c] if values.iter().all(|v| v.is_finite()) => [a, b, c],
                                _ => {
                                    return Err(at(format!(
                                        "angles {text:?}: three finite radians, one per joint"
                                    )));
                                }
                            }
                        }
                    };
                    ids.push(id);
                    start.push(angles);
                }
                "connect" => connects.push((node, line)),
                other => return Err(at(format!("unexpected element <{other}>"))),
            }
        }
        if ids.is_empty() {
            return Err(invalid("a robot needs at least one <module>".to_owned()));
        }
        // Modules are placed root first, each after the module it hangs from.
        let mut placed = vec![ids[0]];
        let mut links: Vec<(u32, Link)> = Vec::new();
        let mut used: Vec<(u32, Connector)> = Vec::new();
        let mut pending = connects;
        while !pending.is_empty() {
            let before = pending.len();
            let mut rest = Vec::new();
            for (node, line) in pending {
                let at = |m: String| invalid(format!("line {line}: {m}"));
                let attr = |name: &str| {
                    node.attribute(name)
                        .ok_or_else(|| at(format!("<connect> needs {name}")))
                };
                let id = |name: &str| -> Result<u32, DescriptionError> {
                    let value = attr(name)?;
                    let id: u32 = value
                        .trim()
                        .parse()
                        .map_err(|_| at(format!("{name} {value:?} is not a module id")))?;
                    if ids.contains(&id) {
                        Ok(id)
                    } else {
                        Err(at(format!(
                            "{name} names module {id}, which is not declared"
                        )))
                    }
                };
                // Only the ten connectors that exist parse (not C1X, C2X).
                let connector = |name: &str| -> Result<Connector, DescriptionError> {
                    attr(name)?.parse().map_err(|e| at(format!("{e}")))
                };
                let (from, to) = (id("idfrom")?, id("idto")?);
                let (from_c, to_c) = (connector("connfrom")?, connector("connto")?);
                let turns: u8 = node
                    .attribute("turns")
                    .unwrap_or("0")
                    .trim()
                    .parse()
                    .ok()
                    .filter(|t| *t < 4)
                    .ok_or_else(|| at("turns is 0, 1, 2 or 3 quarter-turns".to_owned()))?;
                if from == to {
                    return Err(at(format!("module {from} cannot lock onto itself")));
                }
                if placed.contains(&from) && placed.contains(&to) {
                    return Err(at(format!(
                        "modules {from} and {to} are already joined: a second <connect> would close a loop"
                    )));
                }
                let (child, child_c, parent, parent_c) = if placed.contains(&to) {
                    (from, from_c, to, to_c)
                } else if placed.contains(&from) {
                    (to, to_c, from, from_c)
                } else {
                    rest.push((node, line));
                    continue;
                };
                for (m, c) in [(child, child_c), (parent, parent_c)] {
                    if used.contains(&(m, c)) {
                        return Err(at(format!("connector {c} of module {m} is already in use")));
                    }
                    used.push((m, c));
                }
                let parent_index = placed.iter().position(|p| *p == parent).expect("placed");
                placed.push(child);
                links.push((
                    child,
                    Link {
                        parent: parent_index,
                        parent_connector: parent_c,
                        connector: child_c,
                        quarter_turns: turns,
                    },
                ));
            }
            if rest.len() == before {
                return Err(invalid(
                    "some <connect> joins modules not connected to the first module".to_owned(),
                ));
            }
            pending = rest;
        }
        if let Some(alone) = ids.iter().find(|id| !placed.contains(id)) {
            return Err(invalid(format!(
                "module {alone} is not connected to the first module"
            )));
        }
        let start = placed
            .iter()
            .map(|id| start[ids.iter().position(|i| i == id).expect("declared")])
            .collect();
        Ok(RoombotRobot {
            ids: placed,
            tree: Tree {
                root_submodule: 0,
                root_pose: Isometry3::identity(),
                links: links.into_iter().map(|(_, l)| l).collect(),
            },
            start,
        })
    }

    /// Every joint's oscillator id, module by module.
    #[must_use]
    pub fn oscillators(&self) -> Vec<u32> {
        self.ids
            .iter()
            .flat_map(|&m| (0..3).map(move |j| oscillator_id(m, j)))
            .collect()
    }

    /// The robot at its start angles, lying on the floor (its root's `M0`
    /// axes along the world's, its lowest point on the floor).
    pub fn on_floor(&self, settings: &RobotSettings) -> Result<Robot, PhysicsError> {
        let probe = Robot::build(&self.tree, &self.start, settings)?;
        let lift = 1e-3 - probe.lowest_point();
        let mut tree = self.tree.clone();
        tree.root_pose = Isometry3::translation(0.0, 0.0, lift);
        Robot::build(&tree, &self.start, settings)
    }
}

/// Where the robot is: the mean of its cube centres.
fn position(robot: &Robot, t: f64) -> Sample {
    let poses = robot.module_poses();
    let mut sum = Point3::origin().coords;
    for m in &poses {
        sum += m.cube_centre(0).coords + m.cube_centre(1).coords;
    }
    let c = sum / (2 * poses.len()) as f64;
    Sample {
        t,
        x: c.x,
        y: c.y,
        z: c.z,
    }
}

/// How a joint follows its oscillator: its limit angles and its motion.
type JointLaw = (f64, f64, Motion);

/// The CPG of `gait` over the robot's joints, phases drawn from `seed`.
fn network(
    robot: &RoombotRobot,
    gait: &RobotConfig,
    seed: u64,
) -> Result<(CpgNetwork, Vec<JointLaw>), WalkError> {
    let oscillators = robot.oscillators();
    for m in &gait.modules {
        if !oscillators.contains(&m.id) {
            return Err(WalkError::UnknownOscillator(m.id));
        }
        if let Some(l) = m.cpg_links.iter().find(|l| !oscillators.contains(&l.to)) {
            return Err(WalkError::UnknownCoupling {
                from: m.id,
                to: l.to,
            });
        }
        if m.motion == Motion::Rotate && m.speed.abs() > MAX_SPEED {
            return Err(WalkError::TooFast {
                oscillator: m.id,
                omega: m.speed,
                max: MAX_SPEED,
            });
        }
    }
    let mut net = CpgNetwork::new(oscillators.len());
    let mut limits = Vec::with_capacity(oscillators.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (i, id) in oscillators.iter().enumerate() {
        net.states[i] = OscillatorState {
            phase: rng.random_range(0.0..std::f64::consts::TAU),
            ..OscillatorState::default()
        };
        match gait.module(*id) {
            Some(m) => {
                net.params[i] = OscillatorParams {
                    amplitude: m.amplitude,
                    offset: m.offset,
                    omega: m.speed,
                    motion: m.motion,
                };
                net.couplings[i] = m
                    .cpg_links
                    .iter()
                    .filter_map(|l| {
                        oscillators
                            .iter()
                            .position(|o| *o == l.to)
                            .map(|from| Coupling {
                                from,
                                weight: l.weight,
                                phase_bias: l.phase,
                            })
                    })
                    .collect();
                limits.push((m.min_angle, m.max_angle, m.motion));
            }
            // A joint the gait leaves out holds its start angle.
            None => {
                net.running[i] = false;
                limits.push((0.0, 0.0, Motion::Oscillate));
            }
        }
    }
    Ok((net, limits))
}

/// Walks `gait` on `robot` as `spec` says: its warm-up, its measured
/// window, its seed, its checkpoints; gives up soon after `cancel` is set.
pub fn walk(
    robot: &RoombotRobot,
    gait: &RobotConfig,
    spec: &EvaluationSpec,
    cancel: &AtomicBool,
) -> Result<Walk, WalkError> {
    walk_observed(robot, gait, spec, cancel, &mut |_, _| ())
}

/// [`walk`] that shows the simulated robot to `on_step` after every step,
/// with the time: for pictures and recordings.
pub fn walk_observed(
    robot: &RoombotRobot,
    gait: &RobotConfig,
    spec: &EvaluationSpec,
    cancel: &AtomicBool,
    on_step: &mut dyn FnMut(f64, &Robot),
) -> Result<Walk, WalkError> {
    spec.check().map_err(|e| WalkError::Spec(e.to_string()))?;
    let s = &spec.situation;
    if s.upside_down || !s.defects.is_empty() || !s.dead_cpg.is_empty() || s.lead_in.is_some() {
        return Err(WalkError::Unsupported(
            "a situation (upside down, defects, dead CPGs, a lead-in)",
        ));
    }
    if spec.repeats > 1 {
        return Err(WalkError::Unsupported("repeats (walk more seeds instead)"));
    }
    let started = Instant::now();
    let mut settings = RobotSettings::default();
    if let Some(mu) = spec.ground_friction {
        settings.friction = mu;
    }
    let mut sim = robot.on_floor(&settings)?;
    let (mut net, limits) = network(robot, gait, spec.seed)?;
    let modules = robot.ids.len();
    let initial: Vec<f64> = (0..net.len()).map(|i| net.output(i)).collect();
    let dt = settings.dt;
    let mut t = 0.0;
    let mut steps = 0u64;
    let mut meter = WalkMeter::new(spec, position(&sim, 0.0), dt);
    let mut last_command: Vec<f64> = robot.start.iter().flatten().copied().collect();
    while meter.walking() {
        if steps.is_multiple_of(24) && cancel.load(Ordering::Relaxed) {
            return Err(WalkError::Cancelled(t));
        }
        net.step(dt);
        for m in 0..modules {
            for j in 0..3 {
                let i = 3 * m + j;
                let base = robot.start[m][j];
                let (min, max, motion) = limits[i];
                let target = if !net.running[i] {
                    base
                } else {
                    match motion {
                        Motion::Rotate => base + net.output(i) - initial[i],
                        Motion::Oscillate => base + net.output(i).clamp(min, max),
                    }
                };
                // A servo turns no faster than its motor: the set-point
                // follows the oscillator at most at MAX_SPEED.
                let reach = MAX_SPEED * dt;
                let command = last_command[i] + (target - last_command[i]).clamp(-reach, reach);
                let rate = (command - last_command[i]) / dt;
                last_command[i] = command;
                sim.command(m, j, command, rate);
            }
        }
        sim.step();
        steps += 1;
        t += dt;
        on_step(t, &sim);
        let here = position(&sim, t);
        if !(here.x.is_finite() && here.y.is_finite() && here.z.is_finite()) {
            return Err(WalkError::Unstable(t));
        }
        meter.observe(here);
    }
    let mut outcome = meter.finish();
    outcome.simulated = t;
    outcome.wall = started.elapsed();
    outcome.physics_steps = steps;
    outcome.engine = "articulated (roombots)".to_owned();
    Ok(outcome)
}

/// One embedded Roombot example robot.
#[derive(Debug, Clone, Copy)]
pub struct RoombotExample {
    pub name: &'static str,
    pub world_xml: &'static str,
    pub gait_xml: &'static str,
    /// Its optimization problem, when it has its own; else the generic one
    /// over its gait.
    pub optimize_xml: Option<&'static str>,
}

/// The Roombot examples of `examples/robots/`, embedded.
pub const EXAMPLES: [RoombotExample; 2] = [
    RoombotExample {
        name: "roombots-meta",
        world_xml: include_str!("../../examples/robots/roombots-meta/world.xml"),
        gait_xml: include_str!("../../examples/robots/roombots-meta/gait.xml"),
        optimize_xml: None,
    },
    RoombotExample {
        name: "roombots-quadruped",
        world_xml: include_str!("../../examples/robots/roombots-quadruped/world.xml"),
        gait_xml: include_str!("../../examples/robots/roombots-quadruped/gait.xml"),
        optimize_xml: Some(include_str!(
            "../../examples/robots/roombots-quadruped/optimize.xml"
        )),
    },
];

impl RoombotExample {
    #[must_use]
    pub fn named(name: &str) -> Option<RoombotExample> {
        EXAMPLES.into_iter().find(|e| e.name == name)
    }

    #[must_use]
    pub fn names() -> Vec<&'static str> {
        EXAMPLES.iter().map(|e| e.name).collect()
    }

    pub fn robot(&self) -> Result<RoombotRobot, DescriptionError> {
        RoombotRobot::from_xml_str(&format!("{}/world.xml", self.name), self.world_xml)
    }

    pub fn gait(&self) -> Result<RobotConfig, yamor_core::XmlError> {
        RobotConfig::from_xml_str(&format!("{}/gait.xml", self.name), self.gait_xml)
    }
}
