//! Reset-free learning on a real robot (issue 53): evaluation walks
//! supplied from outside (an optimizer, through [`Evaluations`]), with
//! homing walks of a repertoire interleaved so that the robot stays in the
//! camera's field and nobody carries it back.
//!
//! The robot is anything that walks a gait and says where it went
//! ([`WalkingRobot`]): a host's [`Backend`] in this process (the serial
//! robot behind the emulated CamApp: `yamor lifelong reset-free`), or a
//! host across the network through the organizer's [`HostClient`]. Every
//! walk is an ordinary evaluation on it: the gait programmed (only what
//! changed), warm-up, the measured window between two camera fixes,
//! motors off. The decisions are [`crate::homing`]'s.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{EvaluationJob, EvaluationSpec, Outcome, RobotSource, Walk};
use yamor_host_agent::{Backend, HostError};
use yamor_organizer::scheduler::HostClient;

use crate::homing::{
    Calibration, Field, HeadingEstimate, HeadingFilter, HeadingNoise, Homing, HomingError,
    HomingSettings, Move, SeenMoves,
};

#[derive(Debug, thiserror::Error)]
pub enum ResetFreeError {
    #[error("walk {walk} ({what}): {error}")]
    Walk {
        walk: usize,
        what: String,
        error: String,
    },
    #[error("walk {walk} ({what}): the robot's host answered something other than a walk")]
    NotAWalk { walk: usize, what: String },
    #[error(transparent)]
    Homing(#[from] HomingError),
    #[error("the repertoire: {0}")]
    Repertoire(String),
}

/// A robot that walks one gait at a time and reports where it went.
pub trait WalkingRobot: Send + Sync {
    /// One walk of `gait` under `spec`: its [`Walk`] with the camera's
    /// positions at the measured window's start and end.
    fn walk(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
    ) -> impl Future<Output = Result<Walk, String>> + Send;
}

fn job(gait: &RobotConfig, spec: &EvaluationSpec) -> EvaluationJob {
    EvaluationJob {
        robot: RobotSource::Default,
        gait: Some(gait.clone()),
        spec: spec.clone(),
        ..EvaluationJob::default()
    }
}

fn walk_of(outcome: Outcome) -> Result<Walk, String> {
    match outcome {
        Outcome::Walk(walk) => Ok(walk),
        other => Err(format!("not a walk: {other:?}")),
    }
}

/// A host's backend in this process (the serial robot, or any other).
impl WalkingRobot for Arc<dyn Backend> {
    async fn walk(&self, gait: &RobotConfig, spec: &EvaluationSpec) -> Result<Walk, String> {
        let cancel = Arc::new(AtomicBool::new(false));
        let outcome = self
            .evaluate(job(gait, spec), cancel)
            .await
            .map_err(|e: HostError| e.to_string())?;
        walk_of(outcome)
    }
}

/// A host across the network (`GrpcConnector::connect`), walked directly
/// rather than through the organizer's queue: homing walks are the
/// robot's own business, not jobs of a run.
impl WalkingRobot for Arc<dyn HostClient> {
    async fn walk(&self, gait: &RobotConfig, spec: &EvaluationSpec) -> Result<Walk, String> {
        let outcome = self
            .evaluate(0, 1, &job(gait, spec))
            .await
            .map_err(|e| e.to_string())?;
        walk_of(outcome)
    }
}

/// One gait to walk, and what one walk of it is expected to do (from its
/// map cell), when known: a gait without one is checked as if it could
/// walk the repertoire's longest walk (times
/// [`ResetFreeSettings::unknown_reach`]) in any direction.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub gait: RobotConfig,
    pub expected: Option<Move>,
}

impl From<RobotConfig> for Proposal {
    fn from(gait: RobotConfig) -> Self {
        Proposal {
            gait,
            expected: None,
        }
    }
}

/// Where evaluation walks come from, and where their results go: the
/// adaptation optimizer plugs in here.
pub trait Evaluations {
    /// The next gait to evaluate; `None` when there is nothing left.
    fn next_gait(&mut self) -> Option<Proposal>;
    /// The walk of the gait last proposed.
    fn told(&mut self, proposal: &Proposal, walk: &Walk);
}

/// A gait of the homing repertoire.
#[derive(Debug, Clone)]
pub struct HomingGait {
    pub name: String,
    pub gait: RobotConfig,
    /// One walk of it under the driver's walk spec.
    pub step: Move,
    /// How much its direction of travel in the body frame varies from
    /// walk to walk (rad): how far its walks can be trusted to tell the
    /// heading.
    pub direction_sd: f64,
}

/// How the driver walks.
#[derive(Debug, Clone)]
pub struct ResetFreeSettings {
    /// Every walk, homing or evaluation: warm-up and measured window.
    pub spec: EvaluationSpec,
    pub homing: HomingSettings,
    pub noise: HeadingNoise,
    /// Most homing walks before one evaluation; then it is walked anyway
    /// (and reported as such).
    pub max_homing: usize,
    /// A proposal without an expected move may walk this many times the
    /// repertoire's longest walk.
    pub unknown_reach: f64,
}

impl Default for ResetFreeSettings {
    fn default() -> Self {
        ResetFreeSettings {
            spec: EvaluationSpec {
                warmup: 2.0,
                measure: 4.0,
                ..EvaluationSpec::default()
            },
            homing: HomingSettings::default(),
            noise: HeadingNoise::default(),
            max_homing: 12,
            unknown_reach: 1.5,
        }
    }
}

/// What a walk was for.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkKind {
    /// A homing walk of the repertoire's gait `gait`.
    Homing { gait: usize, name: String },
    /// The `n`th evaluation (from 0); `safe`: it was predicted to stay
    /// inside the field less the margin.
    Evaluation { n: usize, safe: bool },
}

/// One walk as it went.
#[derive(Debug, Clone, PartialEq)]
pub struct WalkReport {
    /// 0, 1, … over all walks.
    pub index: usize,
    pub kind: WalkKind,
    /// The camera's position at the walk's end (m).
    pub x: f64,
    pub y: f64,
    pub distance_from_centre: f64,
    /// Inside the field (no margin).
    pub inside: bool,
    pub velocity: f64,
    /// The heading estimate after the walk (rad) and its deviation.
    pub heading: f64,
    pub heading_sd: f64,
    /// Robot seconds this walk took (programming included) and since the
    /// first walk began.
    pub robot_s: f64,
    pub total_robot_s: f64,
}

/// The figures of a whole session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    pub evaluations: usize,
    pub homing_walks: usize,
    /// Evaluations walked without a safe prediction (homing gave up).
    pub unsafe_evaluations: usize,
    pub max_distance: f64,
    pub ever_left: bool,
    pub robot_s: f64,
}

impl Summary {
    #[must_use]
    pub fn of(reports: &[WalkReport]) -> Summary {
        let mut s = Summary::default();
        for r in reports {
            match r.kind {
                WalkKind::Homing { .. } => s.homing_walks += 1,
                WalkKind::Evaluation { safe, .. } => {
                    s.evaluations += 1;
                    s.unsafe_evaluations += usize::from(!safe);
                }
            }
            s.max_distance = s.max_distance.max(r.distance_from_centre);
            s.ever_left |= !r.inside;
            s.robot_s = r.total_robot_s;
        }
        s
    }
}

/// The reset-free driver: a robot, a field, a repertoire.
pub struct ResetFree<R> {
    robot: R,
    settings: ResetFreeSettings,
    homing: Homing,
    repertoire: Vec<HomingGait>,
    calibration: Calibration,
    filter: HeadingFilter,
    /// The last position the camera gave.
    position: Option<[f64; 2]>,
    /// What each gait walked did on this floor, by gait (the repertoire's
    /// first, in order, then every other gait walked).
    seen: SeenMoves,
    gaits: Vec<String>,
    reports: Vec<WalkReport>,
    evaluations: usize,
}

impl<R: WalkingRobot> ResetFree<R> {
    /// `position`: where the robot stands now, if known (else the first
    /// walk's measured start stands in); `heading`: what is known of its
    /// heading (usually [`HeadingEstimate::unknown`]).
    pub fn new(
        robot: R,
        field: Field,
        repertoire: Vec<HomingGait>,
        settings: ResetFreeSettings,
        position: Option<[f64; 2]>,
        heading: HeadingEstimate,
    ) -> Result<Self, ResetFreeError> {
        if repertoire.iter().all(|g| g.step.length() < 0.01) {
            return Err(ResetFreeError::Homing(HomingError::EmptyRepertoire));
        }
        if let Some(bad) = repertoire.iter().find(|g| {
            ![g.step.forward, g.step.left, g.step.turn]
                .iter()
                .all(|v| v.is_finite())
        }) {
            return Err(ResetFreeError::Repertoire(format!(
                "gait {} has no finite move: {:?}",
                bad.name, bad.step
            )));
        }
        Ok(ResetFree {
            robot,
            homing: Homing::new(field, settings.homing)?,
            calibration: Calibration::new(repertoire.len()),
            filter: HeadingFilter::new(heading, settings.noise),
            seen: SeenMoves::new(repertoire.len()),
            gaits: repertoire.iter().map(|g| g.gait.to_xml_string()).collect(),
            repertoire,
            settings,
            position,
            reports: Vec::new(),
            evaluations: 0,
        })
    }

    #[must_use]
    pub fn reports(&self) -> &[WalkReport] {
        &self.reports
    }

    #[must_use]
    pub fn summary(&self) -> Summary {
        Summary::of(&self.reports)
    }

    #[must_use]
    pub fn field(&self) -> &Field {
        self.homing.field()
    }

    #[must_use]
    pub fn heading(&self) -> HeadingEstimate {
        self.filter.estimate
    }

    /// The repertoire's moves as this robot walks them.
    fn moves(&self) -> Vec<Move> {
        (0..self.repertoire.len())
            .map(|i| self.calibration.apply(Some(i), &self.repertoire[i].step))
            .collect()
    }

    /// What `proposal` is expected to do here, and whether that is known.
    fn expected(&self, proposal: &Proposal) -> (Move, bool) {
        match proposal.expected {
            Some(m) => (self.calibration.apply(None, &m), true),
            None => {
                let reach = self.moves().iter().map(Move::length).fold(0.0, f64::max)
                    * self.settings.unknown_reach;
                (
                    Move {
                        forward: reach,
                        left: 0.0,
                        turn: 0.0,
                    },
                    false,
                )
            }
        }
    }

    /// The index of `gait` among the gaits walked so far (new ones
    /// appended).
    fn key(&mut self, gait: &RobotConfig) -> usize {
        let xml = gait.to_xml_string();
        match self.gaits.iter().position(|g| *g == xml) {
            Some(i) => i,
            None => {
                self.gaits.push(xml);
                self.gaits.len() - 1
            }
        }
    }

    /// Whether gait `key`, expected to do `m`, is safe from here: by what
    /// it did on this floor when it was seen, else by its move under the
    /// heading estimate (an unknown move in every direction).
    fn safe(&self, key: usize, m: &Move, known: bool) -> bool {
        let Some([x, y]) = self.position else {
            // Nowhere known yet: the first walk tells.
            return true;
        };
        if let Some((d, sd)) = self.seen.all().get(key).copied().flatten() {
            return self.homing.is_safe_seen(x, y, d, sd);
        }
        let heading = if known {
            self.filter.estimate
        } else {
            HeadingEstimate::unknown()
        };
        self.homing.is_safe(x, y, &heading, m)
    }

    /// Walks up to `evaluations` evaluations from `source`, homing between
    /// them; stops early when the source runs dry. Every walk is in
    /// [`Self::reports`], also after an error.
    pub async fn run(
        &mut self,
        source: &mut impl Evaluations,
        evaluations: usize,
        mut progress: impl FnMut(&WalkReport),
    ) -> Result<Summary, ResetFreeError> {
        for _ in 0..evaluations {
            let Some(proposal) = source.next_gait() else {
                break;
            };
            let (expected, known) = self.expected(&proposal);
            let key = self.key(&proposal.gait);
            let mut homed = 0;
            while !self.safe(key, &expected, known) && homed < self.settings.max_homing {
                let [x, y] = self.position.expect("safe() is true without a position");
                let moves = self.moves();
                let seen = &self.seen.all()[..moves.len().min(self.seen.all().len())];
                let choice = self
                    .homing
                    .choose_seen(x, y, &self.filter.estimate, &moves, seen)?;
                let gait = self.repertoire[choice.gait].clone();
                let step = moves[choice.gait];
                let kind = WalkKind::Homing {
                    gait: choice.gait,
                    name: gait.name.clone(),
                };
                self.walk_and_track(&gait.gait, Some(step), Some(choice.gait), kind)
                    .await?;
                progress(self.reports.last().expect("just walked"));
                homed += 1;
            }
            let safe = self.safe(key, &expected, known);
            let n = self.evaluations;
            let walk = self
                .walk_and_track(
                    &proposal.gait,
                    known.then_some(expected),
                    None,
                    WalkKind::Evaluation { n, safe },
                )
                .await?;
            self.evaluations += 1;
            progress(self.reports.last().expect("just walked"));
            source.told(&proposal, &walk);
        }
        Ok(self.summary())
    }

    /// Walks `gait`, predicted to do `step` (`None`: not known), and
    /// updates the position, heading and calibration from what the camera
    /// saw.
    async fn walk_and_track(
        &mut self,
        gait: &RobotConfig,
        step: Option<Move>,
        homing_gait: Option<usize>,
        kind: WalkKind,
    ) -> Result<Walk, ResetFreeError> {
        let index = self.reports.len();
        let what = match &kind {
            WalkKind::Homing { name, .. } => format!("homing with {name}"),
            WalkKind::Evaluation { n, .. } => format!("evaluation {n}"),
        };
        let walk = self
            .robot
            .walk(gait, &self.settings.spec)
            .await
            .map_err(|error| ResetFreeError::Walk {
                walk: index,
                what: what.clone(),
                error,
            })?;
        if !(walk.end.x.is_finite() && walk.end.y.is_finite()) {
            return Err(ResetFreeError::NotAWalk { walk: index, what });
        }
        let from = self.position.unwrap_or([walk.start.x, walk.start.y]);
        let to = [walk.end.x, walk.end.y];
        let seen = (to[0] - from[0]).hypot(to[1] - from[1]);
        if self.position.is_some() {
            let key = self.key(gait);
            self.seen.observe(key, [to[0] - from[0], to[1] - from[1]]);
        }
        match step {
            Some(step) => {
                // A gait of the repertoire (evaluated or homing) is trusted
                // as far as its walks in simulation agreed.
                let repertoire_gait = homing_gait.or_else(|| {
                    let key = self.key(gait);
                    (key < self.repertoire.len()).then_some(key)
                });
                let direction_sd = repertoire_gait.map_or(self.settings.noise.direction_sd, |i| {
                    self.repertoire[i].direction_sd
                });
                self.filter.update_with(&step, from, to, direction_sd);
                // Against the repertoire's own step (or the map's move of
                // the evaluated cell), not the calibrated one, so the
                // factor converges to the ratio itself.
                let raw = match homing_gait {
                    Some(i) => self.repertoire[i].step,
                    None => step.scaled(1.0 / self.calibration.factor(None)),
                };
                self.calibration.observe(homing_gait, &raw, seen);
            }
            // A gait nobody knows may have turned any way.
            None => {
                self.filter.estimate.sd = HeadingEstimate::unknown().sd;
            }
        }
        self.position = Some(to);
        let field = self.homing.field();
        let total = self.reports.last().map_or(0.0, |r| r.total_robot_s) + walk.simulated;
        self.reports.push(WalkReport {
            index,
            kind,
            x: to[0],
            y: to[1],
            distance_from_centre: field.distance_from_centre(to[0], to[1]),
            inside: field.contains(to[0], to[1], 0.0),
            velocity: walk.velocity,
            heading: self.filter.estimate.mean,
            heading_sd: self.filter.estimate.sd,
            robot_s: walk.simulated,
            total_robot_s: total,
        });
        Ok(walk)
    }
}

/// Gaits to try as homing gaits: `problem`'s starting gait with the signs
/// of its free phase lags flipped in every combination (a CPG's travelling
/// wave reversed walks the other way, a wave reversed in one chain of
/// modules only turns), named by the flips, each also with its free
/// amplitudes halved. With more than five free phases, only the whole set
/// and each one alone are flipped.
pub fn phase_variants(
    problem: &yamor_core::optimize::OptimizationConfig,
) -> Result<Vec<(String, RobotConfig)>, ResetFreeError> {
    let free = problem.free_parameters();
    let start: Vec<f64> = free.iter().map(|p| p.start).collect();
    let phases: Vec<usize> = free
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name.starts_with("phase_") && p.start.abs() > 1e-9)
        .map(|(i, _)| i)
        .collect();
    if phases.is_empty() {
        return Err(ResetFreeError::Repertoire(
            "the problem has no free phase lag to vary".into(),
        ));
    }
    let masks: Vec<u32> = if phases.len() <= 5 {
        (0..1u32 << phases.len()).collect()
    } else {
        let all = (1u32 << phases.len()) - 1;
        std::iter::once(0)
            .chain((0..phases.len()).map(|i| 1 << i))
            .chain(std::iter::once(all))
            .collect()
    };
    let amplitudes: Vec<usize> = free
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name.starts_with("amplitude_"))
        .map(|(i, _)| i)
        .collect();
    // Each combination at full and at half amplitude: a shorter step to
    // home with.
    let scales: &[f64] = if amplitudes.is_empty() {
        &[1.0]
    } else {
        &[1.0, 0.5]
    };
    let mut variants = Vec::new();
    for &scale in scales {
        for &mask in &masks {
            let mut values = start.clone();
            let mut flipped = Vec::new();
            for (bit, &i) in phases.iter().enumerate() {
                if mask & (1 << bit) != 0 {
                    // Within the parameter's range: a lag of −x is the
                    // same gait as 2π − x when the range is one turn.
                    let p = &free[i];
                    let mut v = -values[i];
                    if v < p.min {
                        v += std::f64::consts::TAU;
                    } else if v > p.max {
                        v -= std::f64::consts::TAU;
                    }
                    values[i] = v.clamp(p.min, p.max);
                    flipped.push(p.name.clone());
                }
            }
            for &i in &amplitudes {
                values[i] = (values[i] * scale).clamp(free[i].min, free[i].max);
            }
            let mut name = if flipped.is_empty() {
                "as given".to_owned()
            } else {
                format!("-{}", flipped.join(",-"))
            };
            if scale != 1.0 {
                name.push_str(&format!(" ×{scale} amplitude"));
            }
            let gait = problem
                .apply(&values)
                .map_err(|e| ResetFreeError::Repertoire(format!("{name}: {e}")))?;
            variants.push((name, gait));
        }
    }
    Ok(variants)
}

/// What one walk of each candidate does, walked `starts` times on `robot`
/// (a simulator: every walk from its own start, `spec.seed` onwards) and
/// read from the walks' descriptors as a [`Move`] of `walk_s` robot seconds
/// (the motors' whole time on the robot that will home, usually warm-up
/// plus window). Candidates that neither move nor turn much are left out,
/// and so are those whose direction of travel varies from start to start
/// by more than `max_direction_sd` (rad).
pub async fn repertoire_from_walks(
    robot: &impl WalkingRobot,
    candidates: Vec<(String, RobotConfig)>,
    spec: &EvaluationSpec,
    starts: u32,
    walk_s: f64,
    max_direction_sd: f64,
) -> Result<Vec<HomingGait>, ResetFreeError> {
    use yamor_core::evaluation::descriptors::{HEADING, TURN};
    let mut repertoire = Vec::new();
    for (name, gait) in candidates {
        let mut moves = Vec::new();
        for k in 0..starts.max(1) {
            let spec = EvaluationSpec {
                seed: spec.seed + u64::from(k),
                ..spec.clone()
            };
            let walk = robot
                .walk(&gait, &spec)
                .await
                .map_err(|e| ResetFreeError::Repertoire(format!("walking {name}: {e}")))?;
            let heading = walk.descriptors.get(HEADING).copied().ok_or_else(|| {
                ResetFreeError::Repertoire(format!(
                    "walking {name}: the walk has no {HEADING} (a simulator measures it)"
                ))
            })?;
            let turn = walk
                .descriptors
                .get(TURN)
                .copied()
                .unwrap_or(walk.turn_deg_s);
            moves.push(Move::from_descriptors(
                heading,
                walk.velocity,
                turn,
                spec.measure,
                walk_s,
            ));
        }
        let n = moves.len() as f64;
        let step = Move {
            forward: moves.iter().map(|m| m.forward).sum::<f64>() / n,
            left: moves.iter().map(|m| m.left).sum::<f64>() / n,
            turn: moves.iter().map(|m| m.turn).sum::<f64>() / n,
        };
        // The circular spread of the walks' directions about the mean's.
        let direction_sd = if moves.len() < 2 {
            max_direction_sd / 2.0
        } else {
            (moves
                .iter()
                .map(|m| crate::homing::wrap(m.direction() - step.direction()).powi(2))
                .sum::<f64>()
                / (n - 1.0))
                .sqrt()
        };
        // A gait that goes nowhere in particular, or a different way from
        // every start, cannot be aimed.
        let moves_enough = step.length() >= 0.03 || step.turn.abs() >= 0.15;
        let aimable = step.length() < 0.03 || direction_sd <= max_direction_sd;
        if moves_enough && aimable {
            repertoire.push(HomingGait {
                name,
                gait,
                step,
                direction_sd,
            });
        }
    }
    if repertoire.is_empty() {
        return Err(ResetFreeError::Repertoire(
            "no candidate gait moves or turns the robot".into(),
        ));
    }
    Ok(repertoire)
}

/// Evaluations drawn at random (seeded) from a list of proposals, as an
/// adaptation would try a map's cells: the stand-in until the optimizer
/// plugs in. Keeps what it was told.
pub struct RandomProposals {
    proposals: Vec<Proposal>,
    rng: rand_chacha::ChaCha8Rng,
    pub told: Vec<(usize, f64)>,
    last: usize,
}

impl RandomProposals {
    #[must_use]
    pub fn new(proposals: Vec<Proposal>, seed: u64) -> Self {
        use rand::SeedableRng;
        RandomProposals {
            proposals,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            told: Vec::new(),
            last: 0,
        }
    }
}

impl Evaluations for RandomProposals {
    fn next_gait(&mut self) -> Option<Proposal> {
        use rand::Rng;
        if self.proposals.is_empty() {
            return None;
        }
        self.last = self.rng.random_range(0..self.proposals.len());
        Some(self.proposals[self.last].clone())
    }

    fn told(&mut self, _proposal: &Proposal, walk: &Walk) {
        self.told.push((self.last, walk.velocity));
    }
}
