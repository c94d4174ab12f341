//! One evaluation of a gait, as every part of yamor speaks of it (thesis
//! 6.2.1): the robot walks, a warm-up lets messages arrive and the CPG
//! converge, then the central module's straight-line distance in the ground
//! plane over the measured window, divided by the window's length, is the
//! velocity. Simulator, real robot, expression hosts, organizer and
//! optimizers all use these types; the wire and the database convert to and
//! from them at their edges.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::plan::LatticePlan;
use crate::world::World;
use serde::{Deserialize, Serialize};

use crate::{ModuleId, RobotConfig};

/// Seconds walked before the measurement starts (thesis 6.2.1).
pub const DEFAULT_WARMUP_S: f64 = 8.0;
/// Seconds measured (thesis 6.2.1: a 20-s walk in all).
pub const DEFAULT_MEASURE_S: f64 = 12.0;
/// Spacing of the trajectory samples a result carries (s).
pub const DEFAULT_SAMPLE_INTERVAL_S: f64 = 0.5;
/// Most walks one evaluation may average.
pub const MAX_REPEATS: u32 = 64;

/// What is wrong with a motor (thesis C.2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum DefectMode {
    #[default]
    Healthy,
    /// Servo unpowered: the joint swings freely.
    Limp,
    /// Servo blocked where it is.
    Stuck,
    /// A worn motor or a failing driver: the servo follows its set-point
    /// with a third of its stall torque ([`WEAK_TORQUE_SHARE`]).
    Weak,
}

/// The share of its stall torque a [`DefectMode::Weak`] servo keeps.
pub const WEAK_TORQUE_SHARE: f64 = 1.0 / 3.0;

/// The state of the world a walk starts in, beyond the robot and its gait:
/// what lifelong learning (thesis 7.5) must reproduce on every evaluation
/// host to relearn for the robot as it now is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Situation {
    /// The robot starts upside down (dropped from a few centimetres).
    pub upside_down: bool,
    /// Motor defects (C.2.6).
    pub defects: Vec<(ModuleId, DefectMode)>,
    /// Modules whose CPG node is dead: their oscillators are switched off
    /// and their joints hold the angle the oscillator stopped at.
    pub dead_cpg: Vec<ModuleId>,
    /// The robot is already walking another gait when the evaluated one is
    /// loaded, as a robot under lifelong learning is when it switches: the
    /// body's motion at the switch decides which of a gait's modes it falls
    /// into, and a walk from a standstill does not show that.
    pub lead_in: Option<LeadIn>,
}

/// Walk `gait` for `seconds` before the evaluated gait is loaded; the
/// warm-up and the measurement follow the switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeadIn {
    #[serde(with = "gait_as_xml")]
    pub gait: RobotConfig,
    pub seconds: f64,
}

/// A gait in JSON as its XML document: the one format every part reads.
mod gait_as_xml {
    use crate::RobotConfig;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(gait: &RobotConfig, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&gait.to_xml_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RobotConfig, D::Error> {
        let xml = String::deserialize(d)?;
        RobotConfig::from_xml_str("lead-in gait", &xml).map_err(serde::de::Error::custom)
    }
}

/// How one walk is run and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EvaluationSpec {
    /// Time for messages to arrive and the CPG to converge (s).
    pub warmup: f64,
    /// Length of the measured window (s).
    pub measure: f64,
    /// Trajectory sampling interval (s); 0 records every tick.
    pub sample_interval: f64,
    /// Seeds the initial oscillator phases: same robot, gait and seed give
    /// the same walk.
    pub seed: u64,
    /// Ground friction coefficient; `None`: the host's own.
    pub ground_friction: Option<f64>,
    /// Keep every trajectory sample in the result, not only the summary.
    pub full_trajectory: bool,
    /// Where the walk starts (upside down, defects); simulation only.
    pub situation: Situation,
    /// Walks averaged, from seeds `seed`, `seed + 1`, …; at least 1. Gaits of
    /// some bodies depend on where the oscillators start; an optimizer given
    /// one start learns that start's luck, not a gait.
    pub repeats: u32,
    /// Stop the walk early when it is hopeless (`None`: walk it whole).
    pub early_stop: Option<EarlyStop>,
    /// The physical world it walks in beyond friction (engine, masses,
    /// servos, sensor noise); the default is the nominal world.
    pub world: World,
}

/// Where in the measured window a walk's velocity so far is read
/// ([`Walk::partial_velocities`]), as fractions of the window: early
/// enough to save most of a hopeless walk, late enough for the sway of one
/// stride to have averaged out.
pub const CHECKPOINT_FRACTIONS: [f64; 2] = [0.25, 0.5];

/// A bound on a walk's velocity so far at each checkpoint of
/// [`CHECKPOINT_FRACTIONS`]: a walk below it there ends, its partial
/// velocity its value (a median- or successive-halving-style rule, the
/// bounds set by the organizer from the run's complete walks). `None` at a
/// checkpoint: no bound there.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EarlyStop {
    pub min_velocity: Vec<Option<f64>>,
}

impl EarlyStop {
    /// The bound at checkpoint `k`, when there is one.
    #[must_use]
    pub fn bound(&self, k: usize) -> Option<f64> {
        self.min_velocity.get(k).copied().flatten()
    }
}

/// A walk's way through the checkpoints of [`CHECKPOINT_FRACTIONS`]: the
/// one "stop here?" rule of every walk (simulated or on a robot, through
/// [`crate::measure::WalkMeter`]), so that a walk stopped early means the
/// same wherever it walked.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    bounds: Option<EarlyStop>,
    partial_velocities: Vec<f64>,
    stopped_early: Option<u32>,
}

impl Checkpoints {
    /// The checkpoints of a walk of `spec`, none passed yet.
    #[must_use]
    pub fn of(spec: &EvaluationSpec) -> Self {
        Self {
            bounds: spec.early_stop.clone(),
            ..Self::default()
        }
    }

    /// Where the next checkpoint lies, as seconds into the measured window
    /// of `spec`; `None` once every one is passed or the walk stopped.
    #[must_use]
    pub fn next_into_window(&self, spec: &EvaluationSpec) -> Option<f64> {
        if self.stopped_early.is_some() {
            return None;
        }
        CHECKPOINT_FRACTIONS
            .get(self.partial_velocities.len())
            .map(|f| f * spec.measure)
    }

    /// Records the walk's velocity so far at the next checkpoint; true when
    /// it is below that checkpoint's bound and the walk must stop there.
    pub fn reached(&mut self, velocity_so_far: f64) -> bool {
        let k = self.partial_velocities.len();
        self.partial_velocities.push(velocity_so_far);
        let bound = self.bounds.as_ref().and_then(|e| e.bound(k));
        let stop = bound.is_some_and(|b| velocity_so_far < b);
        if stop {
            self.stopped_early = Some(k as u32);
        }
        stop
    }

    /// Writes what the checkpoints saw into the walk.
    pub fn record(self, walk: &mut Walk) {
        walk.partial_velocities = self.partial_velocities;
        walk.stopped_early = self.stopped_early;
    }
}

impl Default for EvaluationSpec {
    /// The thesis' protocol: 8 s warm-up, 12 s measured.
    fn default() -> Self {
        EvaluationSpec {
            warmup: DEFAULT_WARMUP_S,
            measure: DEFAULT_MEASURE_S,
            sample_interval: DEFAULT_SAMPLE_INTERVAL_S,
            seed: 0,
            ground_friction: None,
            full_trajectory: false,
            situation: Situation::default(),
            repeats: 1,
            early_stop: None,
            world: World::default(),
        }
    }
}

/// A spec value out of its range; names the field as the wire does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("spec.{field} must be {expected}, got {}", readable(*.value))]
pub struct SpecError {
    pub field: &'static str,
    pub value: f64,
    pub expected: &'static str,
}

/// `value` as a person reads it: 1e300, not three hundred digits.
fn readable(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-4..1e6).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// The longest warm-up, measured window or lead-in a walk may have (s).
pub const MAX_WALK_PART_S: f64 = 3600.0;

impl EvaluationSpec {
    /// Walks in `drawn`, a world and its ground friction as
    /// [`crate::world::WorldDistribution::draw`] gives them (a friction of
    /// `None`: the host's own).
    pub fn walk_in(&mut self, (world, friction): (World, Option<f64>)) {
        self.world = world;
        self.ground_friction = friction;
    }

    /// A spec whose walk lasts `seconds` in total, with the default warm-up.
    pub fn lasting(seconds: f64) -> Result<Self, SpecError> {
        EvaluationSpec::lasting_after(DEFAULT_WARMUP_S, seconds)
    }

    /// A walk of `seconds` in all, measured after a warm-up of `warmup`.
    pub fn lasting_after(warmup: f64, seconds: f64) -> Result<Self, SpecError> {
        let spec = EvaluationSpec {
            warmup,
            measure: seconds - warmup,
            ..EvaluationSpec::default()
        };
        spec.check()?;
        Ok(spec)
    }

    /// Seconds walked in all, the lead-in's among them.
    #[must_use]
    pub fn walk_seconds(&self) -> f64 {
        self.lead_in_seconds() + self.warmup + self.measure
    }

    /// Seconds walked with the lead-in gait before the evaluated one.
    #[must_use]
    pub fn lead_in_seconds(&self) -> f64 {
        self.situation.lead_in.as_ref().map_or(0.0, |l| l.seconds)
    }

    /// Every field within what a host can do. The one check of a spec,
    /// whichever way it came in (CLI, form, gRPC): a run starts only with
    /// specs that pass it, so no stored job holds one that does not.
    pub fn check(&self) -> Result<(), SpecError> {
        let bad = |field, value, expected| {
            Err(SpecError {
                field,
                value,
                expected,
            })
        };
        if !(self.warmup >= 0.0 && self.warmup <= MAX_WALK_PART_S) {
            return bad("warmup_s", self.warmup, "in [0, 3600] s");
        }
        if !(self.measure > 0.0 && self.measure <= MAX_WALK_PART_S) {
            return bad(
                "measure_s",
                self.measure,
                "in (0, 3600] s (the walk must last longer than its warm-up)",
            );
        }
        if !(self.sample_interval >= 0.0 && self.sample_interval <= 60.0) {
            return bad("sample_interval_s", self.sample_interval, "in [0, 60] s");
        }
        if let Some(mu) = self.ground_friction
            && !(mu > 0.0 && mu <= 10.0)
        {
            return bad("ground_friction", mu, "in (0, 10]");
        }
        if self.repeats == 0 || self.repeats > MAX_REPEATS {
            return bad("repeats", f64::from(self.repeats), "in [1, 64]");
        }
        if let Some(lead_in) = &self.situation.lead_in
            && !(lead_in.seconds > 0.0 && lead_in.seconds <= MAX_WALK_PART_S)
        {
            return bad("lead_in_s", lead_in.seconds, "in (0, 3600] s");
        }
        if let Some(early) = &self.early_stop {
            if early.min_velocity.len() > CHECKPOINT_FRACTIONS.len() {
                return bad(
                    "early_stop",
                    early.min_velocity.len() as f64,
                    "at most one bound per checkpoint (2)",
                );
            }
            for bound in early.min_velocity.iter().flatten() {
                if !bound.is_finite() {
                    return bad("early_stop.min_velocity_m_s", *bound, "a finite velocity");
                }
            }
        }
        self.world.check().map_err(|e| SpecError {
            field: e.field,
            value: e.value,
            expected: e.expected,
        })?;
        Ok(())
    }
}

/// One position of the central module: time (s) and world metres, z up.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Sample {
    pub t: f64,
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Sample {
    /// Distance to `other` in the ground plane (m).
    #[must_use]
    pub fn planar_distance(&self, other: &Sample) -> f64 {
        (other.x - self.x).hypot(other.y - self.y)
    }
}

/// The velocity of thesis 6.2.1: straight-line distance in the ground plane
/// from `start` to `end`, divided by the time between them (m/s).
#[must_use]
pub fn planar_velocity(start: &Sample, end: &Sample) -> f64 {
    start.planar_distance(end) / (end.t - start.t).max(f64::EPSILON)
}

/// Which robot a simulation host builds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum RobotSource {
    /// The host's own robot.
    #[default]
    Default,
    /// An embedded example by name.
    Example(String),
    /// A morphology document.
    Morphology(String),
}

/// What a job evaluates, beyond its robot and gait. Values are always
/// maximised: a gait's velocity, an expression's value, a named objective's
/// value (hosts of a minimisation problem return its negation).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Objective {
    /// A gait walked by a robot: the robot and the spec's situation say
    /// which. Served by simulation and real-robot hosts.
    #[default]
    Gait,
    /// A MathEval expression of the parameters, served by the expression
    /// hosts running exactly this expression.
    Expression(String),
    /// An external objective (e.g. `bbob/f3/i1/d5`), served by hosts that
    /// list it.
    Named(String),
}

/// The wire and storage form of an expression objective: `expr:<text>`.
const EXPRESSION_PREFIX: &str = "expr:";

impl Objective {
    /// Parses the text form: empty for a gait, `expr:<text>`, or a name.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if text.is_empty() {
            Objective::Gait
        } else if let Some(expression) = text.strip_prefix(EXPRESSION_PREFIX) {
            Objective::Expression(expression.trim().to_owned())
        } else {
            Objective::Named(text.to_owned())
        }
    }

    /// The text form [`Objective::parse`] reads.
    #[must_use]
    pub fn to_text(&self) -> String {
        match self {
            Objective::Gait => String::new(),
            Objective::Expression(e) => format!("{EXPRESSION_PREFIX}{e}"),
            Objective::Named(name) => name.clone(),
        }
    }

    /// Whether a host of kind `backend` that lists `served` (text forms; a
    /// trailing `*` matches any suffix) evaluates this objective. Gaits need
    /// a robot: a simulation or a real one.
    #[must_use]
    pub fn served_by(&self, backend: Option<BackendKind>, served: &[String]) -> bool {
        match self {
            Objective::Gait => matches!(backend, Some(BackendKind::Simulation | BackendKind::Real)),
            // Stored before objectives existed: any expression host.
            Objective::Expression(e) if e.is_empty() => backend == Some(BackendKind::Expression),
            other => {
                let text = other.to_text();
                served.iter().any(|s| match s.strip_suffix('*') {
                    Some(prefix) => text.starts_with(prefix),
                    None => *s == text,
                })
            }
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Objective::Gait => f.write_str("a gait"),
            Objective::Expression(e) => write!(f, "the expression {e:?}"),
            Objective::Named(name) => write!(f, "the objective {name:?}"),
        }
    }
}

/// One evaluation request, parsed and validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvaluationJob {
    /// What is evaluated; hosts refuse objectives they do not serve.
    pub objective: Objective,
    pub robot: RobotSource,
    /// `None` when the job carries no gait (expression hosts need none).
    pub gait: Option<RobotConfig>,
    /// The free parameters' values, named as in thesis 5.7.2.
    pub parameters: Vec<(String, f64)>,
    pub spec: EvaluationSpec,
}

/// What kind of robot (or stand-in) a host evaluates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BackendKind {
    Simulation,
    Real,
    Expression,
    /// Plans Roombot self-reconfigurations (seed 003): serves `reconfig:` objectives.
    Planning,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Simulation,
        BackendKind::Real,
        BackendKind::Expression,
        BackendKind::Planning,
    ];

    /// The kind named `text` by [`BackendKind::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Simulation => "simulation",
            BackendKind::Real => "real",
            BackendKind::Expression => "expression",
            BackendKind::Planning => "planning",
        }
    }

    /// The short name people type and tables show: `sim`, `real`, `expr`.
    #[must_use]
    pub const fn short(self) -> &'static str {
        match self {
            BackendKind::Simulation => "sim",
            BackendKind::Real => "real",
            BackendKind::Expression => "expr",
            BackendKind::Planning => "plan",
        }
    }

    /// The kind whose [`short`](Self::short) name is `text`.
    #[must_use]
    pub fn from_short(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.short() == text)
    }
}

/// The turning of the direction of travel over `window` (degrees per
/// second): the heading of the first third's displacement against the last
/// third's, over the time between their middles. Thirds, not single steps,
/// because a gait sways within each stride; a window too short or a robot
/// that barely moves tells nothing (0).
fn turn_rate(window: &[&Sample]) -> f64 {
    let n = window.len();
    if n < 6 {
        return 0.0;
    }
    let third = n / 3;
    let heading = |a: &Sample, b: &Sample| {
        let (dx, dy) = (b.x - a.x, b.y - a.y);
        (dx.hypot(dy) > 1e-4).then(|| (dy.atan2(dx), (a.t + b.t) / 2.0))
    };
    let (Some((h1, t1)), Some((h3, t3))) = (
        heading(window[0], window[third - 1]),
        heading(window[n - third], window[n - 1]),
    ) else {
        return 0.0;
    };
    let turn =
        (h3 - h1 + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI;
    if t3 > t1 {
        turn.to_degrees() / (t3 - t1)
    } else {
        0.0
    }
}

/// One walk as measured over its window: what a robot host (simulated,
/// emulated or on a serial line) reports for a gait. Its fitness is
/// `velocity` (m/s; thesis 6.2.1), and optimizers maximise it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Walk {
    /// Planar velocity of the centre module over the measured window (m/s).
    pub velocity: f64,
    /// Where the measured window starts and ends.
    pub start: Sample,
    pub end: Sample,
    /// Planar distance over the measured window (m).
    pub distance: f64,
    /// Length of the sampled path over the measured window (m).
    pub path_length: f64,
    /// How fast the direction of travel turns over the measured window
    /// (degrees per second, counter-clockwise positive; 0 when the samples
    /// cannot tell): circling gaits win short windows (thesis 6.2.1), so a
    /// velocity is read beside it.
    pub turn_deg_s: f64,
    /// Lowest and highest centre-module height seen (falls, jumps).
    pub min_height: f64,
    pub max_height: f64,
    pub sample_count: u32,
    /// Every sample, when the spec asked for them.
    pub samples: Vec<Sample>,
    /// The walk's velocity so far at each checkpoint of
    /// [`CHECKPOINT_FRACTIONS`] it reached (m/s): what the organizer sets
    /// early-stopping bounds from.
    pub partial_velocities: Vec<f64>,
    /// The walk was stopped at this checkpoint of [`CHECKPOINT_FRACTIONS`]
    /// as hopeless; its velocity is its velocity so far, never a complete
    /// result.
    pub stopped_early: Option<u32>,
    /// Robot seconds walked.
    pub simulated: f64,
    /// Wall-clock time the evaluation took (not part of its identity).
    pub wall: Duration,
    pub physics_steps: u64,
    /// The physics engine that simulated the walk (`rapier`,
    /// `articulated`); empty for a real robot.
    pub engine: String,
    /// What the walk did besides how far it went, by name (see
    /// [`descriptors`]): what a map of gaits files it under. Empty when
    /// the walker cannot tell (a real robot seen by one camera).
    pub descriptors: Descriptors,
}

/// The names of the behaviour descriptors yamor's walkers measure, so a
/// map's settings, the simulator and the dashboard spell them alike.
/// Which way a walk's velocity counts: what a gait run maximises and
/// what its figures mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The distance the central module covers in any direction over the
    /// window (thesis 6.2.1): a crab gait counts in full.
    #[default]
    Any,
    /// Only the part of it along the robot's long axis, either end first:
    /// the velocity times |cos| of the walk's [`descriptors::HEADING`]; a
    /// gait that walks sideways counts nothing.
    Axis,
}

impl Direction {
    pub const ALL: [Direction; 2] = [Direction::Any, Direction::Axis];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Direction::Any => "any",
            Direction::Axis => "axis",
        }
    }

    /// The direction named `text` (`""` is any direction).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() {
            return Some(Direction::Any);
        }
        Self::ALL.into_iter().find(|d| d.name() == text)
    }

    /// How a figure under it is said in a report.
    #[must_use]
    pub fn phrase(self) -> &'static str {
        match self {
            Direction::Any => "in any direction",
            Direction::Axis => "along the long axis",
        }
    }

    /// `walk`'s velocity counted this way (m/s); `None` when the walk does
    /// not tell which way it went (a walker that reports no heading: a
    /// Roombot walk, a real robot seen with one LED).
    #[must_use]
    pub fn velocity(self, walk: &Walk) -> Option<f64> {
        match self {
            Direction::Any => Some(walk.velocity),
            Direction::Axis => walk
                .descriptors
                .get(descriptors::HEADING)
                .map(|heading| walk.velocity * heading.to_radians().cos().abs()),
        }
    }
}

/// A direction nobody knows by that name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown direction {0:?} (known: any, axis)")]
pub struct UnknownDirection(pub String);

impl std::str::FromStr for Direction {
    type Err = UnknownDirection;

    fn from_str(text: &str) -> Result<Self, UnknownDirection> {
        Direction::parse(text).ok_or_else(|| UnknownDirection(text.to_owned()))
    }
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub mod descriptors {
    /// How fast the direction of travel turns (°/s, counter-clockwise
    /// positive): every walk's [`super::Walk::turn_deg_s`].
    pub const TURN: &str = "turn_deg_s";
    /// The walk's planar velocity (m/s).
    pub const VELOCITY: &str = "velocity_m_s";
    /// Lowest and highest centre-module height over the walk (m).
    pub const MIN_HEIGHT: &str = "min_height_m";
    pub const MAX_HEIGHT: &str = "max_height_m";
    /// Direction of travel against the robot's long axis (°, in
    /// (−180, 180]): 0 walks along it, ±90 sideways, 180 backwards. The
    /// long axis is the assembled robot's; its sign is fixed per robot.
    pub const HEADING: &str = "heading_deg";
    /// Mean centre-module height over the measured window (m).
    pub const HEIGHT: &str = "height_m";
    /// Share of the measured window the modules ahead of (behind) the
    /// centre along the long axis touch the ground: the duty factor of
    /// the robot's front (back) limbs, 0–1.
    pub const FRONT_DUTY: &str = "front_duty";
    pub const BACK_DUTY: &str = "back_duty";
    /// Where the robot's long axis pointed in the world at the measured
    /// window's start and end (°, counter-clockwise from +x, in
    /// (−180, 180]): its pose, not its behaviour, reported by a walker
    /// that sees it (a real robot carrying a second LED along its long
    /// axis) so that whoever walks it next knows which way it faces.
    pub const YAW_START: &str = "yaw_start_deg";
    pub const YAW_END: &str = "yaw_end_deg";

    /// [`HEADING`]: the direction of `travel` against the unit `axis`
    /// (°, (−180, 180], counter-clockwise positive), both in the ground
    /// plane; what a simulator and a robot seen with two LEDs report.
    #[must_use]
    pub fn heading_deg((ax, ay): (f64, f64), (dx, dy): (f64, f64)) -> f64 {
        (ax * dy - ay * dx).atan2(ax * dx + ay * dy).to_degrees()
    }
}

/// Behaviour descriptors by name: the numbers a quality-diversity archive
/// files a result under.
pub type Descriptors = BTreeMap<String, f64>;

/// What one job found, by kind: a walk, a value, or a plan. Each kind keeps
/// its own fields under their own names, so a velocity is always m/s and a
/// plan's figures are never read out of a number that means something
/// else; [`Outcome::fitness`] is the one number optimizers maximise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A robot walked a gait.
    Walk(Walk),
    /// An expression or named objective was evaluated.
    Value {
        value: f64,
        /// Wall-clock time the evaluation took.
        #[serde(default)]
        wall: Duration,
        /// What the objective measured besides its value (a planar arm's
        /// hand position), by name.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        descriptors: Descriptors,
    },
    /// A planner built a structure (a reconfiguration job).
    Plan(PlanResult),
}

/// What a planning host found for a self-reconfiguration job (seed 003):
/// the build's figures and the plan itself.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanResult {
    /// Every seed of the structure was filled.
    pub built: bool,
    pub rounds: u32,
    pub moves: u32,
    /// Moves that swept a cell another meta-module held (0 in a sound plan).
    pub collisions: u32,
    /// A round passed in which nothing moved and nothing could change.
    pub deadlock: bool,
    /// Seeds filled, of all.
    pub filled: u32,
    pub seeds: u32,
    /// The plan: the world, the target, the start and every move. Empty in
    /// listings, which leave plans out to stay small.
    pub plan: LatticePlan,
    /// Wall-clock time the planning took.
    pub wall: Duration,
}

/// How far below every finished build an unfinished one ranks.
const UNFINISHED_BUILD_PENALTY: f64 = 1e6;

impl PlanResult {
    /// The plan's fitness: fewer moves are better, and no unfinished build
    /// ever ranks above a finished one.
    #[must_use]
    pub fn fitness(&self) -> f64 {
        let moves = -f64::from(self.moves);
        if self.built {
            moves
        } else {
            moves - UNFINISHED_BUILD_PENALTY
        }
    }
}

impl Outcome {
    /// The number optimizers maximise: a walk's velocity (m/s), a value, a
    /// plan's [`PlanResult::fitness`].
    #[must_use]
    pub fn fitness(&self) -> f64 {
        match self {
            Outcome::Walk(walk) => walk.velocity,
            Outcome::Value { value, .. } => *value,
            Outcome::Plan(plan) => plan.fitness(),
        }
    }

    /// An evaluated expression or objective.
    #[must_use]
    pub fn value(value: f64, wall: Duration) -> Self {
        Outcome::Value {
            value,
            wall,
            descriptors: Descriptors::new(),
        }
    }

    /// The walk, when this was one.
    #[must_use]
    pub fn walk(&self) -> Option<&Walk> {
        match self {
            Outcome::Walk(walk) => Some(walk),
            _ => None,
        }
    }

    /// The plan, when this was one.
    #[must_use]
    pub fn plan(&self) -> Option<&PlanResult> {
        match self {
            Outcome::Plan(plan) => Some(plan),
            _ => None,
        }
    }

    /// Wall-clock time the evaluation took.
    #[must_use]
    pub fn wall(&self) -> Duration {
        match self {
            Outcome::Walk(walk) => walk.wall,
            Outcome::Value { wall, .. } => *wall,
            Outcome::Plan(plan) => plan.wall,
        }
    }

    /// The behaviour descriptor `name` (see [`descriptors`]): a walk's
    /// measured ones and its own figures, a value's reported ones; `None`
    /// when this result has no such number.
    #[must_use]
    pub fn descriptor(&self, name: &str) -> Option<f64> {
        match self {
            Outcome::Walk(walk) => walk.descriptor(name),
            Outcome::Value { descriptors, .. } => descriptors.get(name).copied(),
            Outcome::Plan(_) => None,
        }
        .filter(|v| v.is_finite())
    }

    /// The kind's name as stored and shown: `walk`, `value`, `plan`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Walk(_) => "walk",
            Outcome::Value { .. } => "value",
            Outcome::Plan(_) => "plan",
        }
    }
}

impl Walk {
    /// The summary of a walk sampled as `samples`, measured from `start` to
    /// `end` with the velocity of thesis 6.2.1.
    #[must_use]
    pub fn from_samples(
        start: Sample,
        end: Sample,
        samples: Vec<Sample>,
        keep_samples: bool,
    ) -> Self {
        let window: Vec<&Sample> = samples
            .iter()
            .filter(|p| p.t >= start.t && p.t <= end.t)
            .collect();
        let path_length = window.windows(2).map(|w| w[0].planar_distance(w[1])).sum();
        let (min_height, max_height) = samples
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.z), hi.max(p.z))
            });
        Walk {
            velocity: planar_velocity(&start, &end),
            turn_deg_s: turn_rate(&window),
            start,
            end,
            distance: start.planar_distance(&end),
            path_length,
            min_height: if samples.is_empty() { 0.0 } else { min_height },
            max_height: if samples.is_empty() { 0.0 } else { max_height },
            sample_count: u32::try_from(samples.len()).unwrap_or(u32::MAX),
            samples: if keep_samples { samples } else { Vec::new() },
            ..Walk::default()
        }
    }

    /// The descriptor `name`: one the walker measured, or one of the walk's
    /// own figures ([`descriptors::TURN`], [`descriptors::VELOCITY`],
    /// [`descriptors::MIN_HEIGHT`], [`descriptors::MAX_HEIGHT`]).
    #[must_use]
    pub fn descriptor(&self, name: &str) -> Option<f64> {
        if let Some(v) = self.descriptors.get(name) {
            return Some(*v);
        }
        match name {
            descriptors::TURN => Some(self.turn_deg_s),
            descriptors::VELOCITY => Some(self.velocity),
            descriptors::MIN_HEIGHT => Some(self.min_height),
            descriptors::MAX_HEIGHT => Some(self.max_height),
            _ => None,
        }
    }

    /// Simulated seconds per wall-clock second.
    #[must_use]
    pub fn real_time_factor(&self) -> f64 {
        self.simulated / self.wall.as_secs_f64().max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_walk_counts_along_the_axis_by_the_cosine_of_its_heading() {
        let walk = |heading: Option<f64>| Walk {
            velocity: 0.2,
            descriptors: heading
                .map(|h| [(descriptors::HEADING.to_owned(), h)].into())
                .unwrap_or_default(),
            ..Walk::default()
        };
        let along = |h| Direction::Axis.velocity(&walk(Some(h))).unwrap();
        assert!((along(0.0) - 0.2).abs() < 1e-12);
        assert!((along(180.0) - 0.2).abs() < 1e-12, "either end first");
        assert!(along(90.0).abs() < 1e-12, "a crab gait counts nothing");
        assert!((along(-60.0) - 0.1).abs() < 1e-12);
        assert_eq!(Direction::Any.velocity(&walk(Some(90.0))), Some(0.2));
        // A walker that reports no heading cannot be counted along an axis.
        assert_eq!(Direction::Axis.velocity(&walk(None)), None);
        assert_eq!(Direction::Any.velocity(&walk(None)), Some(0.2));
        for d in Direction::ALL {
            assert_eq!(d.name().parse::<Direction>(), Ok(d));
        }
        assert_eq!("".parse::<Direction>(), Ok(Direction::Any));
        let error = "forward".parse::<Direction>().unwrap_err().to_string();
        assert!(error.contains("unknown direction \"forward\""), "{error}");
    }

    use super::*;

    #[test]
    fn objectives_read_back_and_match_only_their_hosts() {
        for text in ["", "expr:-(x*x)", "bbob/f3/i1/d5"] {
            assert_eq!(Objective::parse(text).to_text(), text);
        }
        assert_eq!(
            Objective::parse("  expr:  x + 1 "),
            Objective::Expression("x + 1".into())
        );
        let expr = |e: &str| vec![Objective::Expression(e.into()).to_text()];
        let sim = Some(BackendKind::Simulation);
        let calc = Some(BackendKind::Expression);
        assert!(Objective::Gait.served_by(sim, &[]));
        assert!(Objective::Gait.served_by(Some(BackendKind::Real), &[]));
        assert!(!Objective::Gait.served_by(calc, &expr("x")));
        assert!(!Objective::Gait.served_by(None, &["bbob/*".into()]));
        let x = Objective::Expression("x".into());
        assert!(x.served_by(calc, &expr("x")));
        assert!(!x.served_by(calc, &expr("y")));
        assert!(!x.served_by(sim, &[]));
        let bbob = Objective::Named("bbob/f3/i1/d5".into());
        assert!(bbob.served_by(None, &["bbob/*".into()]));
        assert!(bbob.served_by(None, &["bbob/f3/i1/d5".into()]));
        assert!(!bbob.served_by(None, &["bbob/f3/i1/d2".into(), "cec/*".into()]));
        // Stored before objectives: any expression host.
        assert!(Objective::Expression(String::new()).served_by(calc, &expr("y")));
    }

    fn at(t: f64, x: f64, y: f64) -> Sample {
        Sample { t, x, y, z: 0.05 }
    }

    #[test]
    fn the_turn_rate_is_how_fast_the_direction_of_travel_turns() {
        // A circle of radius 1 m at 10 °/s, counter-clockwise, sampled
        // every 0.1 s over 12 s; then the same clockwise; then straight.
        let circle = |sign: f64| -> Vec<Sample> {
            (0..=120)
                .map(|k| {
                    let t = 8.0 + f64::from(k) * 0.1;
                    let a = (10.0 * (t - 8.0)).to_radians();
                    at(t, a.sin(), sign * (1.0 - a.cos()))
                })
                .collect()
        };
        for sign in [1.0, -1.0] {
            let s = circle(sign);
            let o = Walk::from_samples(s[0], s[120], s.clone(), false);
            // The thirds' chords turn exactly as the tangent does.
            assert!((o.turn_deg_s - sign * 10.0).abs() < 0.2, "{}", o.turn_deg_s);
        }
        let line: Vec<Sample> = (0..=120)
            .map(|k| at(8.0 + f64::from(k) * 0.1, f64::from(k) * 0.01, 0.0))
            .collect();
        let o = Walk::from_samples(line[0], line[120], line.clone(), false);
        assert_eq!(o.turn_deg_s, 0.0);
        // Standing still tells nothing.
        let still = vec![at(8.0, 0.0, 0.0); 12];
        assert_eq!(
            Walk::from_samples(still[0], still[11], still.clone(), false).turn_deg_s,
            0.0
        );
    }

    #[test]
    fn velocity_is_straight_line_distance_over_the_window() {
        // A detour does not count: only where the window starts and ends.
        let samples = vec![at(8.0, 0.0, 0.0), at(14.0, 0.5, 0.9), at(20.0, 0.3, 0.4)];
        let o = Walk::from_samples(samples[0], samples[2], samples.clone(), false);
        assert!((o.distance - 0.5).abs() < 1e-12);
        assert!((o.velocity - 0.5 / 12.0).abs() < 1e-12);
        assert!(o.path_length > o.distance);
        assert_eq!(o.sample_count, 3);
        assert!(o.samples.is_empty());
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let e = EvaluationSpec::lasting(5.0).unwrap_err();
        assert_eq!(e.field, "measure_s");
        let spec = EvaluationSpec {
            ground_friction: Some(-1.0),
            ..EvaluationSpec::default()
        };
        assert_eq!(spec.check().unwrap_err().field, "ground_friction");
        let far = EvaluationSpec {
            warmup: 1e300,
            ..EvaluationSpec::default()
        };
        assert_eq!(
            far.check().unwrap_err().to_string(),
            "spec.warmup_s must be in [0, 3600] s, got 1e300"
        );
        assert!(EvaluationSpec::default().check().is_ok());
    }

    #[test]
    fn a_walk_stops_at_the_first_checkpoint_below_its_bound_and_never_after() {
        let spec = EvaluationSpec {
            measure: 12.0,
            early_stop: Some(EarlyStop {
                min_velocity: vec![None, Some(0.1)],
            }),
            ..EvaluationSpec::default()
        };
        let mut walk = Checkpoints::of(&spec);
        assert_eq!(walk.next_into_window(&spec), Some(3.0));
        // No bound at the first checkpoint: even a backward walk goes on.
        assert!(!walk.reached(-0.5));
        assert_eq!(walk.next_into_window(&spec), Some(6.0));
        assert!(walk.reached(0.05));
        assert_eq!(walk.next_into_window(&spec), None);
        let mut outcome = Walk::default();
        walk.record(&mut outcome);
        assert_eq!(outcome.partial_velocities, vec![-0.5, 0.05]);
        assert_eq!(outcome.stopped_early, Some(1));

        // Without bounds every checkpoint is read and the walk is whole.
        let whole = EvaluationSpec::default();
        let mut walk = Checkpoints::of(&whole);
        while walk.next_into_window(&whole).is_some() {
            assert!(!walk.reached(-1.0));
        }
        let mut outcome = Walk::default();
        walk.record(&mut outcome);
        assert_eq!(outcome.partial_velocities.len(), CHECKPOINT_FRACTIONS.len());
        assert_eq!(outcome.stopped_early, None);
    }
}
