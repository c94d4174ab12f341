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
//!
//! [`OptimizerProposals`] makes any yamor optimizer the source of the
//! evaluations (ask/tell, one walk at a time): `ite` over a map of gaits
//! adapts while the robot homes between its walks.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{EvaluationJob, EvaluationSpec, Outcome, RobotSource, Walk};
use yamor_host_agent::{Backend, HostError};
use yamor_optimizer_api::{Candidate, Fitness, Optimizer, Step};
use yamor_organizer::scheduler::HostClient;

use crate::homing::{
    BodyMoves, Calibration, Field, HeadingEstimate, HeadingFilter, HeadingNoise, Homing,
    HomingError, HomingSettings, Move, SeenMoves, wrap,
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
    /// Every evaluation walk: warm-up and measured window.
    pub spec: EvaluationSpec,
    /// Every homing walk, when not the evaluations' `spec`: shorter homing
    /// walks go less far wrong, and the camera corrects them more often.
    /// The repertoire's moves must be for walks of this spec.
    pub homing_spec: Option<EvaluationSpec>,
    pub homing: HomingSettings,
    pub noise: HeadingNoise,
    /// Most homing walks before one evaluation; then it is walked anyway
    /// (and reported as such).
    pub max_homing: usize,
    /// A proposal without an expected move may walk this many times the
    /// repertoire's longest walk.
    pub unknown_reach: f64,
    /// When set, an evaluation is safe only where it would stay inside
    /// (less the margin) walking this many times its expected length in
    /// any direction: neither the heading estimate nor what the gait did
    /// last time is trusted, since a chaotic gait walks a different way
    /// from every start. The robot homes until it is that deep inside.
    /// `None`: trusted (the heading hypotheses, or the seen displacement).
    pub evaluation_reach: Option<f64>,
    /// When set, a homing walk is cut short so that its expected length
    /// (calibrated) is at most this share of the way from the robot to the
    /// field's nearest edge: near the edge a homing walk that goes the
    /// wrong way (a chaotic gait, a wrong heading) cannot take the robot
    /// out, and the camera corrects the next one sooner.
    pub homing_room: Option<f64>,
    /// A homing walk that brought the robot nearer the centre by at least
    /// this share of its length is walked again: a gait walks much the
    /// same way walk after walk (it turns a little each time), whatever
    /// the heading estimate says. `None`: every homing walk is chosen.
    pub repeat_homing: Option<f64>,
    /// When the camera sees the heading (a second LED): how far a gait
    /// never walked here may stray from its predicted direction (rad, one
    /// standard deviation; an evaluation is safe only if it stays inside
    /// for two of them either way) ...
    pub unseen_direction_sd: f64,
    /// ... and how much longer than predicted or seen any walk may be.
    pub length_doubt: f64,
    /// An evaluation not safe at full length may be walked cut to as
    /// little as this share of its time (its measured window shortened,
    /// the largest of 1, ¾, ½, … that is safe) rather than homing first:
    /// a map's fast cells walk further in one walk than the field allows
    /// from anywhere. 1: never cut.
    pub shortest_evaluation: f64,
}

impl Default for ResetFreeSettings {
    fn default() -> Self {
        ResetFreeSettings {
            spec: EvaluationSpec {
                warmup: 2.0,
                measure: 4.0,
                ..EvaluationSpec::default()
            },
            homing_spec: None,
            homing: HomingSettings::default(),
            noise: HeadingNoise::default(),
            max_homing: 12,
            unknown_reach: 1.5,
            evaluation_reach: None,
            homing_room: None,
            repeat_homing: None,
            unseen_direction_sd: 0.5,
            length_doubt: 1.3,
            shortest_evaluation: 1.0,
        }
    }
}

/// What a walk was for.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkKind {
    /// A homing walk of the repertoire's gait `gait`.
    Homing { gait: usize, name: String },
    /// The `n`th evaluation (from 0); `safe`: it was predicted to stay
    /// inside the field less the margin; `share`: the share of its time
    /// it walked (1 unless cut to be safe).
    Evaluation { n: usize, safe: bool, share: f64 },
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
    /// Evaluations walked in a row from the start before the robot first
    /// ended a walk outside the field (all of them when it never did).
    pub evaluations_inside: usize,
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
                    if !s.ever_left && r.inside {
                        s.evaluations_inside += 1;
                    }
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
    /// The heading the camera saw at the last walk's end (rad), when it
    /// sees headings: then every decision uses it, and what each gait did
    /// in the body frame (`body`), rather than the estimate from travel.
    yaw: Option<f64>,
    body: BodyMoves,
    reports: Vec<WalkReport>,
    evaluations: usize,
}

/// The least spread of a seen gait's direction (rad): a few walks that
/// happened to agree do not make a gait exact.
const MIN_DIRECTION_SD: f64 = 0.1;

/// The heading seen at a walk's window start and end (rad), when seen.
fn seen_yaw(walk: &Walk) -> Option<(f64, f64)> {
    use yamor_core::evaluation::descriptors::{YAW_END, YAW_START};
    let start = walk.descriptors.get(YAW_START)?.to_radians();
    let end = walk.descriptors.get(YAW_END)?.to_radians();
    (start.is_finite() && end.is_finite()).then_some((start, end))
}

impl<R: WalkingRobot> ResetFree<R> {
    /// `position`: where the robot stands now, if known (else the first
    /// walk's measured start stands in); `heading`: what is known of its
    /// heading ([`HeadingEstimate::unknown`] for a robot with one LED; as
    /// seen, with [`HeadingEstimate::SEEN_SD`], for one with two).
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
            yaw: (heading.sd <= HeadingEstimate::SEEN_SD).then_some(heading.mean),
            body: BodyMoves::default(),
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

    /// The repertoire's moves as this robot walks them: as seen in its
    /// body frame where the camera sees headings and the gait was walked,
    /// else as predicted and calibrated.
    fn moves(&self) -> Vec<Move> {
        self.spreads().into_iter().map(|(m, _)| m).collect()
    }

    /// [`moves`](Self::moves) with the spread of each one's direction: as
    /// seen, or [`ResetFreeSettings::unseen_direction_sd`] for a gait not
    /// yet walked here (or not seen with a heading).
    fn spreads(&self) -> Vec<(Move, f64)> {
        let unseen = self.settings.unseen_direction_sd;
        (0..self.repertoire.len())
            .map(|i| match self.body.of(i, unseen) {
                Some((m, sd)) if self.yaw.is_some() => (m, sd.max(MIN_DIRECTION_SD)),
                _ => (
                    self.calibration.apply(Some(i), &self.repertoire[i].step),
                    unseen,
                ),
            })
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
    fn key(&mut self, gait: &RobotConfig, evaluation: bool) -> usize {
        let mut xml = gait.to_xml_string();
        // Walked longer as an evaluation than as a homing walk, a gait of
        // the repertoire moves differently: it is another entry.
        if evaluation && self.settings.homing_spec.is_some() {
            xml.insert_str(0, "evaluation ");
        }
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
    fn safe(&self, key: usize, m: &Move, known: bool, share: f64) -> bool {
        let Some([x, y]) = self.position else {
            // Nowhere known yet: the first walk tells.
            return true;
        };
        if let Some(yaw) = self.yaw {
            let s = &self.settings;
            let (m, sd) = match self.body.of(key, s.unseen_direction_sd) {
                // As long as its longest walk, in its mean direction.
                Some((m, sd)) => {
                    let longest = self.body.longest(key).unwrap_or(0.0);
                    let stretch = if m.length() > 1e-6 {
                        (longest / m.length()).max(1.0)
                    } else {
                        1.0
                    };
                    (m.scaled(stretch), sd.max(MIN_DIRECTION_SD))
                }
                None if known => (*m, s.unseen_direction_sd),
                None => {
                    return self
                        .homing
                        .is_safe_anywhere(x, y, m.length() * share * s.length_doubt);
                }
            };
            // The heading hypotheses span the gait's direction's spread;
            // the walk may come out as its mirror image (`MIRRORED`).
            let heading = HeadingEstimate { mean: yaw, sd };
            let m = m.shortened(share).scaled(s.length_doubt);
            return [m, m.mirrored()]
                .iter()
                .all(|m| self.homing.is_safe(x, y, &heading, m));
        }
        if let Some(reach) = self.settings.evaluation_reach {
            return self
                .homing
                .is_safe_anywhere(x, y, m.length() * share * reach);
        }
        if let Some((d, sd)) = self.seen.all().get(key).copied().flatten() {
            return self
                .homing
                .is_safe_seen(x, y, [d[0] * share, d[1] * share], sd * share);
        }
        let heading = if known {
            self.filter.estimate
        } else {
            HeadingEstimate::unknown()
        };
        self.homing.is_safe(x, y, &heading, &m.shortened(share))
    }

    /// The largest share of its time (1, ¾, ½, … down to
    /// [`ResetFreeSettings::shortest_evaluation`]) at which an evaluation
    /// of gait `key`, expected to do `m`, is safe from here.
    fn evaluation_share(&self, key: usize, m: &Move, known: bool) -> Option<f64> {
        let shortest = self.settings.shortest_evaluation.clamp(0.05, 1.0);
        let mut share = 1.0;
        loop {
            if self.safe(key, m, known, share) {
                return Some(share);
            }
            if share <= shortest {
                return None;
            }
            share = (share - 0.25).max(shortest);
        }
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
            let key = self.key(&proposal.gait, true);
            let mut homed = 0;
            let share = loop {
                let share = self.evaluation_share(key, &expected, known);
                if share.is_some() || homed >= self.settings.max_homing {
                    break share;
                }
                let [x, y] = self.position.expect("safe() is true without a position");
                let spread = self.spreads();
                let moves: Vec<Move> = spread.iter().map(|(m, _)| *m).collect();
                let seen = &self.seen.all()[..moves.len().min(self.seen.all().len())];
                let repeat = self.settings.repeat_homing.and_then(|share| {
                    let [previous, last] = self.reports.last_chunk::<2>()?;
                    let WalkKind::Homing { gait, .. } = last.kind else {
                        return None;
                    };
                    let length = (last.x - previous.x).hypot(last.y - previous.y);
                    let nearer = previous.distance_from_centre - last.distance_from_centre;
                    (length > 0.02 && nearer >= share * length).then_some(gait)
                });
                let gait_index = match (self.yaw, repeat) {
                    // The heading seen: the body-frame moves decide.
                    (Some(yaw), _) => {
                        self.homing
                            .choose_seen_heading(x, y, yaw, &spread, self.settings.length_doubt)?
                            .gait
                    }
                    (None, Some(g)) => g,
                    (None, None) => {
                        self.homing
                            .choose_seen(x, y, &self.filter.estimate, &moves, seen)?
                            .gait
                    }
                };
                let choice = crate::homing::Choice {
                    gait: gait_index,
                    plan: vec![gait_index],
                    distance: f64::NAN,
                };
                let gait = self.repertoire[choice.gait].clone();
                let (spec, share) = self.homing_walk(x, y, &moves[choice.gait]);
                let step = moves[choice.gait].shortened(share);
                let kind = WalkKind::Homing {
                    gait: choice.gait,
                    name: gait.name.clone(),
                };
                self.walk_and_track(
                    &gait.gait,
                    &spec,
                    share,
                    Some(step),
                    Some(choice.gait),
                    kind,
                )
                .await?;
                progress(self.reports.last().expect("just walked"));
                homed += 1;
            };
            let safe = share.is_some();
            let share = share.unwrap_or(1.0);
            let n = self.evaluations;
            let spec = cut(&self.settings.spec, share);
            let walk = self
                .walk_and_track(
                    &proposal.gait,
                    &spec,
                    share,
                    known.then_some(expected.shortened(share)),
                    None,
                    WalkKind::Evaluation { n, safe, share },
                )
                .await?;
            self.evaluations += 1;
            progress(self.reports.last().expect("just walked"));
            source.told(&proposal, &walk);
        }
        Ok(self.summary())
    }

    /// The spec of a homing walk of `step` from `(x, y)`, and the share of
    /// a whole homing walk's time it walks: all of it, unless
    /// [`ResetFreeSettings::homing_room`] cuts it short near the edge.
    fn homing_walk(&self, x: f64, y: f64, step: &Move) -> (EvaluationSpec, f64) {
        let spec = self
            .settings
            .homing_spec
            .clone()
            .unwrap_or_else(|| self.settings.spec.clone());
        let Some(room_share) = self.settings.homing_room else {
            return (spec, 1.0);
        };
        let field = self.homing.field();
        let (c, h) = (field.centre(), field.half());
        let room = (h[0] - (x - c[0]).abs())
            .min(h[1] - (y - c[1]).abs())
            .max(0.0);
        let length = step.length();
        let total = spec.warmup + spec.measure;
        if length <= room * room_share || total <= 0.0 {
            return (spec, 1.0);
        }
        // A walk shorter than a second is mostly its motors switching on.
        let share = (room * room_share / length).max(1.0 / total).min(1.0);
        (cut(&spec, share), share)
    }

    /// Walks `gait` under `spec` (`share` of its whole walk's time),
    /// predicted to do `step` (`None`: not known), and updates the
    /// position, heading and calibration from what the camera saw.
    async fn walk_and_track(
        &mut self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        share: f64,
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
            .walk(gait, spec)
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
        if let Some((yaw_start, yaw_end)) = seen_yaw(&walk) {
            // The whole walk (warm-up included) from the pose it began
            // in, in that pose's frame, as a whole walk would have done.
            let began = self.yaw.unwrap_or(yaw_start);
            let (dx, dy) = ((to[0] - from[0]) / share, (to[1] - from[1]) / share);
            let (sin, cos) = began.sin_cos();
            let key = self.key(gait, homing_gait.is_none());
            self.body.observe(
                key,
                Move {
                    forward: cos * dx + sin * dy,
                    left: -sin * dx + cos * dy,
                    turn: wrap(yaw_end - began) / share,
                },
            );
            self.yaw = Some(yaw_end);
            self.filter.estimate = HeadingEstimate::from_camera(Some(yaw_end));
        }
        if self.position.is_some() {
            // As a whole walk would have moved it (a shortened walk's
            // displacement scaled up).
            let key = self.key(gait, homing_gait.is_none());
            self.seen
                .observe(key, [(to[0] - from[0]) / share, (to[1] - from[1]) / share]);
        }
        match step {
            _ if self.yaw.is_some() => {}
            Some(step) => {
                // A gait of the repertoire (evaluated or homing) is trusted
                // as far as its walks in simulation agreed.
                let repertoire_gait = homing_gait.or_else(|| {
                    let key = self.key(gait, true);
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
                    Some(i) => self.repertoire[i].step.shortened(share),
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

/// `spec` cut to `share` of its time: the warm-up kept up to a third of
/// what is left, the measured window the rest.
fn cut(spec: &EvaluationSpec, share: f64) -> EvaluationSpec {
    if share >= 1.0 {
        return spec.clone();
    }
    let walked = (spec.warmup + spec.measure) * share;
    let warmup = spec.warmup.min(walked / 3.0);
    EvaluationSpec {
        warmup,
        measure: walked - warmup,
        ..spec.clone()
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

/// Evaluations proposed by any yamor optimizer (the ask/tell of
/// `yamor_optimizer_api`): each candidate it asks for is walked as one
/// evaluation, one at a time as on a robot, and its walk's velocity told
/// back. This is where the adaptation plugs in: `ite` over a map's elites,
/// each candidate expected to move as its elite's cell says (`expected`).
///
/// Once the optimizer has finished (IT&E's stop rule, or its budget), the
/// robot walks on with the optimizer's recommendation, the gait it adapted
/// to, as a robot that lives with its gait does; those walks are told to
/// nobody.
pub struct OptimizerProposals<G, E> {
    optimizer: Box<dyn Optimizer>,
    gait: G,
    expected: E,
    queue: std::collections::VecDeque<Candidate>,
    /// The candidate out: its tag (`None` for the recommendation) and
    /// point.
    pending: Option<(Option<u64>, Vec<f64>)>,
    finished: bool,
    /// Every walk told to the optimizer: the candidate's point and the
    /// walk's velocity (m/s), in order.
    pub told: Vec<(Vec<f64>, f64)>,
    /// Walks of the recommendation after the optimizer finished.
    pub walked_after: usize,
}

impl<G, E> OptimizerProposals<G, E>
where
    G: FnMut(&[f64]) -> Result<RobotConfig, String>,
    E: FnMut(&[f64]) -> Option<Move>,
{
    /// `gait`: a candidate's point as a gait (`OptimizationConfig::apply`);
    /// `expected`: what one walk of it is expected to do, when known.
    pub fn new(optimizer: Box<dyn Optimizer>, gait: G, expected: E) -> Self {
        OptimizerProposals {
            optimizer,
            gait,
            expected,
            queue: std::collections::VecDeque::new(),
            pending: None,
            finished: false,
            told: Vec::new(),
            walked_after: 0,
        }
    }

    /// Whether the optimizer has finished (its answer is walked since).
    #[must_use]
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The optimizer, for its recommendation and beliefs.
    #[must_use]
    pub fn optimizer(&self) -> &dyn Optimizer {
        self.optimizer.as_ref()
    }

    fn proposal(&mut self, x: &[f64]) -> Result<Proposal, String> {
        Ok(Proposal {
            gait: (self.gait)(x)?,
            expected: (self.expected)(x),
        })
    }
}

impl<G, E> Evaluations for OptimizerProposals<G, E>
where
    G: FnMut(&[f64]) -> Result<RobotConfig, String>,
    E: FnMut(&[f64]) -> Option<Move>,
{
    fn next_gait(&mut self) -> Option<Proposal> {
        while !self.finished {
            if let Some(candidate) = self.queue.pop_front() {
                match self.proposal(&candidate.x) {
                    Ok(p) => {
                        self.pending = Some((Some(candidate.tag), candidate.x));
                        return Some(p);
                    }
                    // A point that is no gait walks nowhere: told as a
                    // failure, as a host would report it.
                    Err(e) => {
                        tracing::warn!("candidate {} is no gait: {e}", candidate.tag);
                        self.optimizer.tell(candidate.tag, Fitness::Failed);
                        continue;
                    }
                }
            }
            match self.optimizer.ask() {
                Step::Evaluate(candidates) if !candidates.is_empty() => {
                    self.queue.extend(candidates);
                }
                // Every candidate asked for is told before the next ask,
                // so waiting means nothing more will come.
                Step::Evaluate(_) | Step::Wait | Step::Finished => self.finished = true,
            }
        }
        let x = self.optimizer.recommendation()?;
        let p = self.proposal(&x).ok()?;
        self.pending = Some((None, x));
        Some(p)
    }

    fn told(&mut self, _proposal: &Proposal, walk: &Walk) {
        match self.pending.take() {
            Some((Some(tag), x)) => {
                let fitness = if walk.velocity.is_finite() {
                    Fitness::Value(walk.velocity)
                } else {
                    Fitness::Failed
                };
                self.optimizer.tell(tag, fitness);
                self.told.push((x, walk.velocity));
            }
            Some((None, _)) => self.walked_after += 1,
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use yamor_ite::{Ite, IteConfig};
    use yamor_optimizer_api::map::{Axis, Prior, PriorElite};
    use yamor_optimizer_api::{Bound, Space};

    use super::*;

    /// A map of twelve straight gaits, one per 30° of heading, the one
    /// walking ahead the fastest; a gait's point is its heading.
    fn prior() -> Prior {
        let elites = (0..12)
            .map(|k| {
                let heading = -165.0 + 30.0 * f64::from(k);
                PriorElite {
                    cell: k as usize,
                    x: vec![heading],
                    descriptors: vec![heading],
                    value: 0.05 + 0.1 * heading.to_radians().cos().max(0.0),
                }
            })
            .collect();
        Prior {
            run: 1,
            axes: vec![Axis {
                name: "heading_deg".into(),
                min: -180.0,
                max: 180.0,
                bins: 12,
            }],
            elites,
        }
    }

    #[test]
    fn ite_proposes_the_map_walks_tells_and_then_walks_its_answer() {
        let prior = prior();
        let space = Space::new(vec![Bound::new("heading", -180.0, 180.0)], vec![0.0]).unwrap();
        let ite = Ite::new(&space, &prior, &IteConfig::default());
        let mut expected_asked = Vec::new();
        let mut source = OptimizerProposals::new(
            Box::new(ite),
            |_: &[f64]| Ok(RobotConfig::default()),
            |x: &[f64]| {
                expected_asked.push(x[0]);
                Some(Move::from_descriptors(x[0], 0.1, 0.0, 4.0, 4.0))
            },
        );
        // The damaged robot: the gaits walking ahead are broken, the one
        // walking backward (±165°) still walks at 0.15 m/s.
        let truth = |heading: f64| if heading.abs() > 150.0 { 0.15 } else { 0.02 };
        let mut walks = Vec::new();
        for _ in 0..30 {
            let proposal = source.next_gait().expect("an adaptation always has a gait");
            let m = proposal.expected.expect("every elite's move is known");
            let heading = m.direction().to_degrees();
            let walk = Walk {
                velocity: truth(heading),
                ..Walk::default()
            };
            source.told(&proposal, &walk);
            walks.push(heading);
            if source.walked_after >= 3 {
                break;
            }
        }
        assert!(source.finished(), "{walks:?}");
        let told = source.told.clone();
        drop(source);
        // The map's best (ahead) first, then others until a backward
        // gait walked well and IT&E's rule stopped it.
        assert!(walks[0].abs() < 20.0, "{walks:?}");
        let adapted = walks
            .iter()
            .position(|h| h.abs() > 150.0)
            .expect("it found the gait that still walks");
        assert!(adapted < 12, "{walks:?}");
        // Every walk but the last three was told, in order, and those
        // three walked its answer, the backward gait.
        assert_eq!(told.len(), walks.len() - 3, "{told:?}");
        assert!(told.iter().any(|(_, v)| *v > 0.1), "{told:?}");
        for h in &walks[walks.len() - 3..] {
            assert!(h.abs() > 150.0, "walked on with its answer: {walks:?}");
        }
        assert_eq!(expected_asked.len(), walks.len());
    }

    /// A robot on a plane with no chaos: gait `k` (told apart by its
    /// module count) walks straight along the body's long axis at
    /// `speeds[k]` m/s for the whole walk; the camera sees its heading.
    struct Straight {
        speeds: Vec<f64>,
        pose: std::sync::Mutex<[f64; 3]>,
    }

    impl WalkingRobot for Straight {
        async fn walk(&self, gait: &RobotConfig, spec: &EvaluationSpec) -> Result<Walk, String> {
            use yamor_core::evaluation::Sample;
            use yamor_core::evaluation::descriptors::{YAW_END, YAW_START};
            let v = self.speeds[gait.modules.len()];
            let mut pose = self.pose.lock().unwrap();
            let [x, y, yaw] = *pose;
            let d = v * (spec.warmup + spec.measure);
            *pose = [x + d * yaw.cos(), y + d * yaw.sin(), yaw];
            let mut walk = Walk {
                velocity: v.abs(),
                start: Sample {
                    t: 0.0,
                    x,
                    y,
                    z: 0.0,
                },
                end: Sample {
                    t: 0.0,
                    x: pose[0],
                    y: pose[1],
                    z: 0.0,
                },
                ..Walk::default()
            };
            walk.descriptors.insert(YAW_START.into(), yaw.to_degrees());
            walk.descriptors.insert(YAW_END.into(), yaw.to_degrees());
            Ok(walk)
        }
    }

    fn gait(modules: usize) -> RobotConfig {
        let mut g = RobotConfig::from_xml_str(
            "learnt.xml",
            include_str!("../../examples/robots/quadruped/learnt.xml"),
        )
        .unwrap();
        g.modules.truncate(modules);
        g
    }

    struct Again(RobotConfig, Move);

    impl Evaluations for Again {
        fn next_gait(&mut self) -> Option<Proposal> {
            Some(Proposal {
                gait: self.0.clone(),
                expected: Some(self.1),
            })
        }
        fn told(&mut self, _: &Proposal, _: &Walk) {}
    }

    /// Six walks of a gait that walks 0.9 m in a whole walk, in a field
    /// of ±1 m with a 0.3-m margin (1.17 m with the length doubt: too far
    /// from anywhere), with evaluations cut to as little as `shortest`.
    async fn fast_gait_session(shortest: f64) -> (Summary, Vec<WalkReport>) {
        let robot = Straight {
            // 0: backward homing, 1: forward homing, 2: the fast gait.
            speeds: vec![-0.05, 0.05, 0.15],
            pose: std::sync::Mutex::new([0.0; 3]),
        };
        let spec = EvaluationSpec {
            warmup: 2.0,
            measure: 4.0,
            ..EvaluationSpec::default()
        };
        let homing_gait = |modules: usize, forward: f64| HomingGait {
            name: format!("{forward:+}"),
            gait: gait(modules),
            step: Move {
                forward,
                left: 0.0,
                turn: 0.0,
            },
            direction_sd: 0.1,
        };
        let mut driver = ResetFree::new(
            robot,
            Field::around([0.0, 0.0], 1.0, 1.0).unwrap(),
            vec![homing_gait(0, -0.3), homing_gait(1, 0.3)],
            ResetFreeSettings {
                spec,
                homing: HomingSettings {
                    margin: 0.3,
                    ..HomingSettings::default()
                },
                max_homing: 6,
                shortest_evaluation: shortest,
                ..ResetFreeSettings::default()
            },
            Some([0.0, 0.0]),
            HeadingEstimate::from_camera(Some(0.0)),
        )
        .unwrap();
        let fast = Move {
            forward: 0.9,
            left: 0.0,
            turn: 0.0,
        };
        let summary = driver
            .run(&mut Again(gait(2), fast), 6, |_| {})
            .await
            .unwrap();
        (summary, driver.reports().to_vec())
    }

    #[tokio::test]
    async fn a_gait_too_fast_for_the_field_is_evaluated_on_shorter_walks() {
        let (summary, reports) = fast_gait_session(0.5).await;
        assert_eq!(summary.evaluations, 6);
        assert_eq!(summary.unsafe_evaluations, 0, "{reports:#?}");
        assert!(!summary.ever_left, "{reports:#?}");
        let shares: Vec<f64> = reports
            .iter()
            .filter_map(|r| match r.kind {
                WalkKind::Evaluation { share, .. } => Some(share),
                WalkKind::Homing { .. } => None,
            })
            .collect();
        // Half a walk, 0.45 m (0.59 with the doubt), fits from the
        // centre; ¾ of one does not fit anywhere.
        assert!(shares.iter().all(|s| (*s - 0.5).abs() < 1e-9), "{shares:?}");
        // The robot walked back between them, with the backward gait.
        assert!(summary.homing_walks >= 5, "{reports:#?}");
        assert!(
            reports
                .iter()
                .any(|r| matches!(&r.kind, WalkKind::Homing { gait: 0, .. }))
        );
        // Never cut: nowhere is safe, so every evaluation waits out its
        // homing walks and is walked whole, unsafe.
        let (summary, reports) = fast_gait_session(1.0).await;
        assert_eq!(summary.unsafe_evaluations, 6, "{reports:#?}");
        assert_eq!(summary.homing_walks, 6 * 6);
    }
}
