//! The organizer's domain: jobs, hosts and runs as plain Rust types. The
//! evaluation itself (robot, gait, parameters, spec, outcome) is core's
//! [`yamor_core::evaluation`]; the wire ([`crate::grpc`]) and the database
//! ([`crate::store`]) convert to and from these at their edges, so neither
//! a protobuf change nor a schema change reaches the scheduling logic.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use yamor_core::evaluation::{
    BackendKind, Direction, EvaluationJob, EvaluationSpec, Objective, Outcome, RobotSource, Walk,
};
use yamor_core::plan::LatticePlan;
use yamor_core::world::Worlds;
use yamor_optimizer_api::SettingsError;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    Queued,
    Running,
    Done,
    /// Every attempt failed, or the job itself is invalid.
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];

    /// The name the store, the CLI and the dashboard use.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state named `text` by [`JobState::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Queued or running: the job still has a future.
    #[must_use]
    pub fn is_open(self) -> bool {
        matches!(self, JobState::Queued | JobState::Running)
    }
}

/// A job as submitted: what to evaluate and how the organizer treats it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRequest {
    pub job: EvaluationJob,
    /// The kind of host that may run it; `None`: any.
    pub backend: Option<BackendKind>,
    /// Attempts before the job fails for good; 0: the organizer's default.
    pub max_attempts: u32,
    /// Per-attempt timeout; `None`: the organizer's default.
    pub timeout: Option<Duration>,
}

impl JobRequest {
    /// Checks what the wire conversion cannot: that a job can run at all.
    pub fn check(&self) -> Result<(), JobRequestError> {
        // A document naming its family is that family's to read (its
        // hosts refuse what they cannot build); one naming none is the
        // thesis' morphology, checked here so a typo fails at once.
        if let RobotSource::Morphology(xml) = &self.job.robot
            && yamor_core::family::declared_family(xml).is_none()
        {
            yamor_core::Morphology::from_xml_str("robot.morphology_xml", xml)?;
        }
        for (name, value) in &self.job.parameters {
            if !value.is_finite() {
                return Err(JobRequestError::NonFiniteParameter {
                    name: name.clone(),
                    value: *value,
                });
            }
        }
        self.job.spec.check()?;
        if self.max_attempts > JobRequest::MAX_ATTEMPTS {
            return Err(JobRequestError::TooManyAttempts(self.max_attempts));
        }
        Ok(())
    }

    /// The most attempts a job may ask for.
    pub const MAX_ATTEMPTS: u32 = 100;
}

/// Why a job request cannot run ([`JobRequest::check`]).
#[derive(Debug, thiserror::Error)]
pub enum JobRequestError {
    #[error(transparent)]
    Morphology(#[from] yamor_core::XmlError),
    #[error("parameter {name} = {value} is not finite")]
    NonFiniteParameter { name: String, value: f64 },
    #[error(transparent)]
    Spec(#[from] yamor_core::evaluation::SpecError),
    #[error("max_attempts must be at most {max}, got {0}", max = JobRequest::MAX_ATTEMPTS)]
    TooManyAttempts(u32),
}

/// A job and everything known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: u64,
    /// 0 for jobs submitted directly.
    pub run_id: u64,
    /// Fair share is between owners: runs and clients.
    pub owner: String,
    /// Position of the proposal in its run (0-based); 0 for direct jobs.
    pub seq: u64,
    /// Order in which the run's optimizer learnt the result; `None` until then.
    pub tell_seq: Option<u64>,
    pub state: JobState,
    pub request: JobRequest,
    pub attempts: u32,
    pub host: String,
    /// Present once the job is done.
    pub outcome: Option<Outcome>,
    pub error: String,
    /// Unix milliseconds; 0 when not reached.
    pub submitted_ms: i64,
    pub started_ms: i64,
    pub finished_ms: i64,
}

impl Job {
    /// The names of the parameters this job sets, in its order.
    #[must_use]
    pub fn parameter_names(&self) -> Vec<String> {
        self.request
            .job
            .parameters
            .iter()
            .map(|p| p.0.clone())
            .collect()
    }

    /// The fitness ([`Outcome::fitness`]), when the job is done.
    #[must_use]
    pub fn fitness(&self) -> Option<f64> {
        self.outcome.as_ref().map(Outcome::fitness)
    }

    /// The walk, when the job walked a gait and is done.
    #[must_use]
    pub fn walk(&self) -> Option<&Walk> {
        self.outcome.as_ref().and_then(Outcome::walk)
    }

    /// `(fitness, turn rate)` when the job is done ([`ranked`]).
    #[must_use]
    pub fn ranked(&self, direction: Direction) -> Option<(f64, f64)> {
        self.outcome.as_ref().map(|o| ranked(o, direction))
    }

    /// Without the bulky parts a listing does not need: robot, gait and
    /// trajectory samples.
    #[must_use]
    pub fn brief(mut self) -> Job {
        self.request.job.gait = None;
        self.request.job.robot = RobotSource::Default;
        match &mut self.outcome {
            Some(Outcome::Walk(walk)) => walk.samples.clear(),
            // A plan of a hundred meta-modules is half a megabyte.
            Some(Outcome::Plan(plan)) => plan.plan = LatticePlan::default(),
            _ => {}
        }
        self
    }
}

/// Which jobs to read.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub run_id: Option<u64>,
    /// Empty: any state.
    pub states: Vec<JobState>,
    pub after_id: u64,
    /// Newest first, only ids below this (`u64::MAX`: from the newest);
    /// `None`: oldest first from `after_id`.
    pub before_id: Option<u64>,
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostState {
    Free,
    Busy,
    /// Its lease expired or a call to it failed; it comes back when it heartbeats.
    Down,
}

impl HostState {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Free => "free",
            HostState::Busy => "busy",
            HostState::Down => "down",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub id: u64,
    pub name: String,
    pub address: String,
    /// `None` until the host has told.
    pub backend: Option<BackendKind>,
    pub robot: String,
    /// Objectives served besides gaits (text forms, `*` suffix wildcards).
    pub objectives: Vec<String>,
    pub state: HostState,
    /// 0 when idle.
    pub current_job: u64,
    /// Since the last heartbeat or successful call.
    pub last_seen: Duration,
    pub evaluations: u64,
    pub failures: u64,
}

/// What a host says about itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostInfo {
    pub backend: Option<BackendKind>,
    pub robot: String,
    /// Objectives served besides gaits (text forms, `*` suffix wildcards).
    pub objectives: Vec<String>,
    /// It is evaluating something now.
    pub busy: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunState {
    Running,
    Finished,
    Stopped,
    Failed,
}

impl RunState {
    pub const ALL: [RunState; 4] = [
        RunState::Running,
        RunState::Finished,
        RunState::Stopped,
        RunState::Failed,
    ];

    /// The state named `text` by [`RunState::as_str`].
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Stopped => "stopped",
            RunState::Failed => "failed",
        }
    }
}

/// One free parameter of a bare problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParameterBound {
    pub name: String,
    pub min: f64,
    pub max: f64,
    pub start: f64,
}

/// What a run optimizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Problem {
    /// yamorconfig with <optimize> rules (thesis 5.7.2).
    OptimizationXml(String),
    /// Bare named parameters, for expression hosts.
    Space(Vec<ParameterBound>),
}

impl Problem {
    /// Which way a run of this problem counts walks: as `asked`, else as
    /// the problem's file declares ([`Problem::declared_direction`]), else
    /// in any direction (the thesis').
    #[must_use]
    pub fn direction(
        &self,
        asked: Option<yamor_core::evaluation::Direction>,
    ) -> yamor_core::evaluation::Direction {
        asked
            .or_else(|| self.declared_direction())
            .unwrap_or_default()
    }

    /// Which way the problem's file says walks count
    /// (`<yamorconfig direction="axis">`), for a run that does not say;
    /// `None` for bare parameters, a file that does not say, or one that
    /// does not read (the run's start reports why).
    #[must_use]
    pub fn declared_direction(&self) -> Option<yamor_core::evaluation::Direction> {
        match self {
            Problem::OptimizationXml(xml) => {
                yamor_core::optimize::OptimizationConfig::from_xml_str("problem", xml)
                    .ok()?
                    .direction()
            }
            Problem::Space(_) => None,
        }
    }
}

/// A run as requested. Stored as JSON with the run, so a restart resumes
/// exactly what was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// A label; empty: "<robot>-<optimizer>-<id>" (`robot_name` or the
    /// example's name), or "<optimizer>-<id>" for a run naming no robot.
    pub name: String,
    pub optimizer: String,
    /// Setting values as text, checked against the optimizer's settings;
    /// once the run started, every setting with defaults filled in. Not
    /// part of the stored spec: the store keeps a run's resolved settings
    /// once, typed, in their own column, and fills this from it.
    #[serde(skip_serializing, default)]
    pub settings: BTreeMap<String, String>,
    pub seed: u64,
    pub robot: RobotSource,
    /// What the robot is called where the run is shown: the example's name,
    /// or the name of the directory the user's robot came from. Empty: see
    /// [`RunSpec::robot_label`]. Runs stored before it existed have none.
    #[serde(default)]
    pub robot_name: String,
    pub problem: Problem,
    pub spec: EvaluationSpec,
    /// `None`: simulation for gaits, expression for bare problems.
    pub backend: Option<BackendKind>,
    /// Budget: 0 means unlimited (the optimizer's own schedule ends the run).
    pub max_evaluations: u64,
    /// 0 means unlimited.
    pub max_seconds: f64,
    /// What the run maximises; a bare parameter space needs an expression
    /// or a named objective. Runs stored before objectives existed read as
    /// gaits.
    #[serde(default)]
    pub objective: Objective,
    /// Where candidates' walks start. Runs stored before starts existed
    /// walked every candidate from `spec.seed`, and read so.
    #[serde(default = "Starts::fixed")]
    pub starts: Starts,
    /// The re-walk that earns a gait run's reported figure. Runs stored
    /// before it existed had none.
    #[serde(default = "HeldOut::off")]
    pub held_out: HeldOut,
    /// A constraint on how fast a gait may turn (°/s either way, as
    /// `Outcome::turn_deg_s` measures it): circling gaits win short windows
    /// (thesis 6.2.1). `None`: any.
    #[serde(default)]
    pub max_turn_deg_s: Option<f64>,
    /// Which way a walk's velocity counts, in what the optimizer is told
    /// and in the reported figure ([`Direction::Any`]: the thesis').
    #[serde(default)]
    pub direction: Direction,
    /// Stop hopeless walks early (`organizer::runs` sets the bounds from the
    /// run's complete walks). Off for the thesis' figures and by default.
    #[serde(default)]
    pub early_stop: bool,
    /// The worlds walks are drawn from (`Single`: the host's own).
    #[serde(default)]
    pub worlds: Worlds,
    /// The run whose map of gaits this run adapts from (an optimizer such
    /// as `ite` that searches another run's map); `None`: none.
    #[serde(default)]
    pub prior: Option<u64>,
}

/// The first eight hex digits of a morphology document's FNV-1a hash:
/// stable across builds and platforms, so a run's label names the same
/// robot wherever it is read.
#[must_use]
pub fn morphology_hash(xml: &str) -> String {
    use std::hash::Hasher as _;
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(xml.as_bytes());
    format!("{:016x}", hasher.finish())[..8].to_owned()
}

/// The value a walk is told to the optimizer as (m/s, maximised) under a
/// run's turn constraint: its velocity when it turns at most `max_turn`
/// (°/s), else `-1 m/s` less a hundredth of its excess, below any walk that
/// keeps the constraint and ordered by how far it breaks it (Deb's
/// feasibility rule: a feasible walk beats every infeasible one, and among
/// infeasible ones the one nearer feasibility wins).
#[must_use]
pub fn constrained_value(velocity: f64, turn_deg_s: f64, max_turn: Option<f64>) -> f64 {
    match max_turn {
        Some(max) if turn_deg_s.abs() > max => -1.0 - (turn_deg_s.abs() - max) / 100.0,
        _ => velocity,
    }
}

/// What a result is ranked by: `(fitness, turn rate)`, a walk's velocity
/// counted in the run's `direction` (NaN, a failed walk, when the walk
/// cannot tell it: [`Direction::velocity`]) and how fast it turned (°/s),
/// any other result's fitness and 0.
#[must_use]
pub fn ranked(outcome: &Outcome, direction: Direction) -> (f64, f64) {
    match outcome {
        Outcome::Walk(walk) => (
            direction.velocity(walk).unwrap_or(f64::NAN),
            walk.turn_deg_s,
        ),
        other => (other.fitness(), 0.0),
    }
}

/// The value a result is told to the optimizer as: what it is
/// [`ranked`] by under the run's turn constraint ([`constrained_value`]);
/// a result that is no walk turns at 0 °/s and keeps any constraint.
#[must_use]
pub fn told_value(outcome: &Outcome, scoring: Scoring) -> f64 {
    let (fitness, turn) = ranked(outcome, scoring.direction);
    constrained_value(fitness, turn, scoring.max_turn_deg_s)
}

/// How a run values a result ([`told_value`]): its turn constraint and the
/// direction a walk's velocity counts in.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Scoring {
    pub max_turn_deg_s: Option<f64>,
    pub direction: Direction,
}

impl RunSpec {
    /// How this run values its results.
    #[must_use]
    pub fn scoring(&self) -> Scoring {
        Scoring {
            max_turn_deg_s: self.max_turn_deg_s,
            direction: self.direction,
        }
    }
}

/// Where the walks of a run's candidates start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Starts {
    /// Each proposal from its own start, drawn from the run's seed and the
    /// proposal's number (`yamor_core::starts::candidate_seed`): a gait is
    /// valued over starts, and a resumed run draws the same ones.
    Fresh,
    /// Every candidate from the spec's seed: the thesis' protocol, for
    /// its figures.
    Fixed,
}

impl Starts {
    #[must_use]
    pub fn fixed() -> Self {
        Starts::Fixed
    }

    #[must_use]
    pub fn fixed_when(fixed: bool) -> Self {
        if fixed { Starts::Fixed } else { Starts::Fresh }
    }
}

/// After the optimizer ends, its best `candidates` (by the value it was
/// told) are each walked from the first `starts` held-out starts
/// (`yamor_core::starts`), which no candidate was selected on; the one
/// with the best mean is the run's answer, reported as mean ± standard
/// error. One walk's luck cannot win it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOut {
    pub candidates: u32,
    pub starts: u32,
}

impl HeldOut {
    pub const DEFAULT: HeldOut = HeldOut {
        candidates: 5,
        starts: 20,
    };

    #[must_use]
    pub fn off() -> Self {
        HeldOut {
            candidates: 0,
            starts: 0,
        }
    }

    /// What a run of `problem` on `backend` re-walks unless told
    /// otherwise: none on a real robot, where 100 more walks are half an
    /// hour of a person's time and the starts are not seeds, and none for
    /// bare parameters, whose expression hosts give the same value from
    /// every start (a noisy external objective asks for it).
    #[must_use]
    pub fn default_for(problem: &Problem, backend: Option<BackendKind>) -> Self {
        if backend == Some(BackendKind::Real) || matches!(problem, Problem::Space(_)) {
            HeldOut::off()
        } else {
            HeldOut::DEFAULT
        }
    }

    /// `candidates` finalists from `starts` held-out starts, or as many
    /// starts as [`HeldOut::default_for`] gives when not given.
    #[must_use]
    pub fn asked(
        candidates: u32,
        starts: Option<u32>,
        problem: &Problem,
        backend: Option<BackendKind>,
    ) -> Self {
        HeldOut {
            candidates,
            starts: starts.unwrap_or(HeldOut::default_for(problem, backend).starts),
        }
    }

    #[must_use]
    pub fn is_on(self) -> bool {
        self.candidates > 0 && self.starts > 0
    }

    /// At most [`HeldOut::MAX_CANDIDATES`] finalists from at most
    /// [`yamor_core::starts::MAX_HELD_OUT`] starts: the held-out starts that
    /// exist, and blocks of re-walks that stay below [`REFERENCE_SEQ`].
    pub fn check(self) -> Result<(), HeldOutError> {
        if self.candidates > Self::MAX_CANDIDATES {
            return Err(HeldOutError::TooManyCandidates(self.candidates));
        }
        if self.starts > yamor_core::starts::MAX_HELD_OUT {
            return Err(HeldOutError::TooManyStarts(self.starts));
        }
        Ok(())
    }

    /// Finalists a run may re-walk: more than any ranking of a noisy run
    /// tells apart, and few enough that every block of re-walks fits
    /// below [`REFERENCE_SEQ`] at the most starts.
    pub const MAX_CANDIDATES: u32 = 100;
}

/// Why a run's held-out re-walks are refused ([`HeldOut::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeldOutError {
    #[error(
        "held_out_candidates: at most {max} finalists are re-walked, got {0}",
        max = HeldOut::MAX_CANDIDATES
    )]
    TooManyCandidates(u32),
    #[error(
        "held_out_starts: at most {max} held-out starts exist, got {0}",
        max = yamor_core::starts::MAX_HELD_OUT
    )]
    TooManyStarts(u32),
}

const _: () = assert!(
    HeldOut::MAX_CANDIDATES as u64 * yamor_core::starts::MAX_HELD_OUT as u64
        <= REFERENCE_SEQ - HELD_OUT_SEQ
);

/// Held-out starts each elite of a map walks for its cell's value (the
/// best [`HeldOut::candidates`] of them then walk every start of the
/// plan): a mean and a spread per cell, which is what a map is read for,
/// at a fifth of the 20 starts of a run's answer, for every cell.
pub const MAP_CELL_STARTS: u32 = 3;

/// Proposal numbers from here on are held-out re-walks: recorded with the
/// run, never told to its optimizer.
pub const HELD_OUT_SEQ: u64 = 1 << 40;

/// Held-out re-walks from here on walk the reference: the gait as the run
/// was given it (its problem's start point), from the same held-out
/// starts as the finalists, so that what the run learnt reads against
/// where it began. Finalists' re-walks never reach it.
pub const REFERENCE_SEQ: u64 = HELD_OUT_SEQ + (1 << 30);

impl RunSpec {
    /// The robot the run walks as people read it: `robot_name` with, for a
    /// robot carried as a morphology document, the document's hash (two
    /// directories of one name are told apart, and an edited robot is
    /// another robot); else the example's name, the morphology's hash, or
    /// the hosts' own robot. Empty for a run over bare parameters, which
    /// walks no robot.
    #[must_use]
    pub fn robot_label(&self) -> String {
        if matches!(self.problem, Problem::Space(_)) {
            return String::new();
        }
        match (&self.robot, self.robot_short_name()) {
            (RobotSource::Morphology(xml), Some(name)) => {
                format!("{name} (morphology {})", morphology_hash(xml))
            }
            (RobotSource::Morphology(xml), None) => format!("morphology {}", morphology_hash(xml)),
            (_, Some(name)) => name.to_owned(),
            (_, None) => "the hosts' own robot".to_owned(),
        }
    }

    /// The robot's short name: the one the request gave, else the
    /// example's; `None` for a run that walks no robot or one known only by
    /// its document or its hosts. What a run's default name starts with.
    #[must_use]
    pub fn robot_short_name(&self) -> Option<&str> {
        let given = self.robot_name.trim();
        match &self.robot {
            _ if matches!(self.problem, Problem::Space(_)) => None,
            _ if !given.is_empty() => Some(given),
            RobotSource::Example(example) => Some(example),
            _ => None,
        }
    }

    /// A run of `optimizer` on `problem`, everything else at its default:
    /// the host's own robot, the thesis' evaluation, seed 0, no budget.
    #[must_use]
    pub fn new(optimizer: impl Into<String>, problem: Problem) -> Self {
        RunSpec {
            name: String::new(),
            optimizer: optimizer.into(),
            settings: BTreeMap::new(),
            seed: 0,
            robot: RobotSource::Default,
            robot_name: String::new(),
            spec: EvaluationSpec::default(),
            backend: None,
            max_evaluations: 0,
            max_seconds: 0.0,
            objective: Objective::Gait,
            starts: Starts::Fresh,
            held_out: HeldOut::default_for(&problem, None),
            max_turn_deg_s: None,
            direction: Direction::Any,
            early_stop: false,
            worlds: Worlds::Single,
            prior: None,
            problem,
        }
    }
}

/// A gait run's evaluations unless told otherwise — `yamor run`, the
/// dashboard's start form and the experiments share it: about 30 s of
/// 20-s walks on two cores (docs/benchmarks.md, time to a good gait).
pub const GAIT_RUN_BUDGET: u64 = 2400;

/// CMA-ES's population on a gait unless told otherwise. The default
/// `4 + ⌊3 ln n⌋` (9 for the quadruped's 7 parameters) settles on a local
/// optimum of a walking landscape, which is rugged because each walk is
/// chaotic; 24 explores it (Hansen and Kern 2004: large populations for
/// multimodal functions) and keeps two hosts busy. On the quadruped it
/// reached 95 % of the best known gait within 30 s from every seed, where 9
/// did from one seed in five.
pub const GAIT_CMAES_POPULATION: u32 = 24;

/// The optimizers whose `population` a gait run sets: CMA-ES, the
/// CMA-ES stage of `powell-cmaes` and the CMA-ES arm of `portfolio` (their
/// plugins' names; a test of yamor-local holds them to the plugins').
pub const GAIT_POPULATION_OPTIMIZERS: [&str; 3] = ["cmaes", "powell-cmaes", "portfolio"];

/// A gait run's default for setting `name` of `optimizer`, where it differs
/// from the plugin's own.
#[must_use]
pub fn gait_run_default(optimizer: &str, name: &str) -> Option<String> {
    (name == "population" && GAIT_POPULATION_OPTIMIZERS.contains(&optimizer))
        .then(|| GAIT_CMAES_POPULATION.to_string())
}

/// Adds the settings a gait run of `optimizer` gets by default to those
/// given (see [`gait_run_default`]), unless `settings` sets them.
pub fn gait_run_settings(optimizer: &str, settings: &mut BTreeMap<String, String>) {
    if let Some(population) = gait_run_default(optimizer, "population") {
        settings
            .entry("population".to_owned())
            .or_insert(population);
    }
}

/// One optimizer setting as people type it (`--set`, the start form):
/// `name=value`, trimmed. Its value is parsed when the organizer resolves
/// the run's settings against its optimizer's.
pub fn parse_setting(pair: &str) -> Result<(String, String), SettingsError> {
    yamor_optimizer_api::split_setting(pair).map(|(k, v)| (k.to_owned(), v.to_owned()))
}

/// The seeds of a batch's `count` variants: one each, counting up from
/// `seed`. Refused when the last would pass `u64::MAX` (wrapping would
/// give the last variants seeds 0, 1, …, which another batch may have
/// used).
pub fn batch_seeds(seed: u64, count: usize) -> Result<impl Iterator<Item = u64>, BatchSeedsError> {
    let span = u64::try_from(count.saturating_sub(1)).unwrap_or(u64::MAX);
    if seed.checked_add(span).is_none() {
        return Err(BatchSeedsError {
            seed,
            count,
            max_seed: u64::MAX - span,
        });
    }
    Ok((0..=span).take(count).map(move |i| seed + i))
}

/// A batch whose seeds would pass `u64::MAX` ([`batch_seeds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "seed {seed}: the {count} variants' seeds count up from it by one each and would \
     pass {}; give a seed of at most {max_seed}",
    u64::MAX
)]
pub struct BatchSeedsError {
    pub seed: u64,
    pub count: usize,
    pub max_seed: u64,
}

/// One batch variant's settings on one line: `name=value, name=value`.
pub fn parse_setting_list(line: &str) -> Result<BTreeMap<String, String>, SettingsError> {
    line.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(parse_setting)
        .collect()
}

/// `name=min:max[:start]`; the start defaults to the middle.
impl std::str::FromStr for ParameterBound {
    type Err = ParameterBoundError;

    fn from_str(text: &str) -> Result<Self, ParameterBoundError> {
        let bad = || ParameterBoundError(text.to_owned());
        let (name, range) = text.split_once('=').ok_or_else(bad)?;
        let parts: Vec<f64> = range
            .split(':')
            .map(|v| v.trim().parse().ok())
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let (&min, &max) = (
            parts.first().ok_or_else(bad)?,
            parts.get(1).ok_or_else(bad)?,
        );
        if parts.len() > 3 || name.trim().is_empty() {
            return Err(bad());
        }
        Ok(ParameterBound {
            name: name.trim().to_owned(),
            min,
            max,
            start: parts.get(2).copied().unwrap_or((min + max) / 2.0),
        })
    }
}

/// Text that is not a parameter bound `name=min:max[:start]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected name=min:max[:start], got {0:?}")]
pub struct ParameterBoundError(pub String);

/// One variant of a batch start: the base with other settings and seed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunVariant {
    pub name: String,
    pub settings: BTreeMap<String, String>,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: u64,
    pub name: String,
    /// [`RunSpec::robot_label`]: what the run walks.
    pub robot: String,
    /// Whether the run optimizes a gait, whose values are velocities in
    /// m/s; else bare parameters, whose values are the objective's own and
    /// carry no unit.
    pub gait: bool,
    pub optimizer: String,
    /// Every setting, defaults filled in.
    pub settings: BTreeMap<String, String>,
    pub seed: u64,
    pub state: RunState,
    pub evaluations: u64,
    pub max_evaluations: u64,
    pub max_seconds: f64,
    /// Absent until the first result.
    pub best_velocity: Option<f64>,
    pub best_parameters: Vec<(String, f64)>,
    /// The best gait as yamorconfig XML (empty for bare problems).
    pub best_gait_xml: String,
    pub error: String,
    pub started_ms: i64,
    pub finished_ms: i64,
    /// Seconds of optimisation so far (excluding time the organizer was down).
    pub elapsed_s: f64,
    /// The reported figure once earned: `best_parameters`' velocity over
    /// held-out starts ([`HeldOut`]), and then `best_velocity` is its mean.
    /// `None` while `best_velocity` is still the best single walk
    /// (provisional), and for runs without a re-walk.
    pub held_out: Option<yamor_core::starts::Spread>,
    /// The gait as given (the problem's start point) over the same
    /// held-out starts: what the run's answer improves on. `None` before the
    /// re-walk and for runs without one or without a gait.
    pub reference: Option<yamor_core::starts::Spread>,
    /// The optimizer's own answer (CMA-ES's mean, Powell's incumbent), as
    /// it last gave it; the run's answer above is its best walk or best
    /// re-walked finalist, and a client may prefer this one. `None` for
    /// an optimizer that gives none.
    pub recommendation: Option<Recommendation>,
    /// The run whose map this run adapts from ([`RunSpec::prior`]).
    pub prior: Option<u64>,
    /// Which way its velocities count ([`RunSpec::direction`]).
    pub direction: Direction,
}

/// An optimizer's recommended point, and how it walked when the re-walk
/// took it among the finalists.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub parameters: Vec<(String, f64)>,
    /// Its values over the held-out starts (m/s for a gait); `None` before
    /// the re-walk, or without one.
    pub held_out: Option<yamor_core::starts::Spread>,
}

impl Run {
    /// The run's answer as people read it: the held-out figure once
    /// earned; before, a gait's best single walk, marked provisional (it is
    /// the luckiest walk, not what the gait walks); a bare problem's best
    /// value as it is.
    #[must_use]
    pub fn best_text(&self) -> String {
        match (self.held_out, self.best_velocity) {
            (Some(spread), _) if self.gait => format!("{} held out", spread.cm_s()),
            (Some(spread), _) => format!("{} held out", spread.plain()),
            (None, Some(v)) if self.gait => {
                format!("{:.2} cm/s (one walk, provisional)", v * 100.0)
            }
            (None, Some(v)) => format!("{v:.6}"),
            (None, None) => "–".to_owned(),
        }
    }

    /// Of `told` (this run's told jobs), those it learnt. A result can be
    /// recorded and not learnt: it arrived after the run was stopped. A run
    /// learns strictly in tell order, so what it learnt is the first
    /// `evaluations` of them.
    #[must_use]
    pub fn learnt(&self, mut told: Vec<Job>) -> Vec<Job> {
        told.retain(|j| j.tell_seq.is_some_and(|t| self.has_learnt(t)));
        told
    }

    /// Whether the result told `tell_seq`-th is among those the run learnt.
    #[must_use]
    pub fn has_learnt(&self, tell_seq: u64) -> bool {
        tell_seq < self.evaluations
    }
}

/// The run after something happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    pub run: Run,
    /// The evaluation that caused it; `None` for state changes.
    pub evaluation: Option<RunEvaluation>,
}

/// One result a run learnt.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvaluation {
    pub job_id: u64,
    /// 1-based index in the run.
    pub index: u64,
    pub parameters: Vec<(String, f64)>,
    /// `None` when the evaluation failed for good.
    pub velocity: Option<f64>,
    pub improved: bool,
}

/// Milliseconds since the Unix epoch: the time stamps of jobs, runs and
/// gaits.
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
