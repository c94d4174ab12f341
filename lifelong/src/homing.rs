//! Reset-free learning's homing policy (issue 53; Chatzilygeroudis et al.,
//! "Reset-free trial-and-error learning", 2018): the camera's field is the
//! arena, and between evaluation walks the robot walks gaits of its
//! repertoire that bring it back toward the field's centre, so nobody has
//! to carry it back.
//!
//! Pure logic, no I/O: the driver ([`crate::reset_free`]) feeds it the
//! camera's positions and the gaits walked.
//!
//! - A gait's [`Move`] is what one walk of it does in the robot's body
//!   frame at the walk's start: forward and leftward displacement (m) and
//!   turn (rad, counter-clockwise). [`Move::from_descriptors`] derives it
//!   from what a map of gaits records (`heading_deg`, `velocity_m_s`,
//!   `turn_deg_s` over its measured window) as a circular arc.
//! - The camera sees one LED: a position, never a heading. [`HeadingFilter`]
//!   estimates the body's heading from the observed displacement of the
//!   last walk minus the walked gait's direction in the body frame, fused
//!   with the heading predicted from the gait's turn (a one-dimensional
//!   Kalman filter on the circle).
//! - [`Homing::choose`] picks the gait whose predicted end pose after a
//!   short lookahead (a sequence of up to `depth` walks, the first of which
//!   is walked; the paper's MCTS over map cells replaced by an exhaustive
//!   search, enough for a few dozen gaits and two or three steps) is
//!   closest to the centre, averaged over the heading's uncertainty.
//! - [`Homing::is_safe`] decides *when* to home: before an evaluation walk
//!   whose end, for any heading the estimate allows, could leave the field
//!   shrunk by a safety margin.

use std::f64::consts::PI;

/// What one walk of a gait does, in the robot's body frame at the walk's
/// start: x along the long axis (forward), y to its left; turn is the
/// body's change of heading (rad, counter-clockwise positive).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Move {
    pub forward: f64,
    pub left: f64,
    pub turn: f64,
}

impl Move {
    /// One walk of `walk_s` robot seconds of a gait whose map cell says
    /// that over a measured window of `measured_s` it travelled at
    /// `velocity_m_s` (straight-line distance over time, thesis 6.2.1) in
    /// the direction `heading_deg` against the body's long axis at the
    /// window's start, while its direction of travel turned at
    /// `turn_deg_s`.
    ///
    /// The walk is taken as an arc: a constant speed along a direction
    /// fixed in the body while the body turns steadily. A chord of an arc
    /// points half the turn past its start, so the direction at the start
    /// is `heading − turn/2`, and the chord of `t` seconds is
    /// `s·t·sinc(ω t / 2)` long.
    #[must_use]
    pub fn from_descriptors(
        heading_deg: f64,
        velocity_m_s: f64,
        turn_deg_s: f64,
        measured_s: f64,
        walk_s: f64,
    ) -> Move {
        let omega = turn_deg_s.to_radians();
        let measured_turn = omega * measured_s;
        let start_direction = heading_deg.to_radians() - measured_turn / 2.0;
        // Arc speed from the measured chord.
        let speed = velocity_m_s / sinc(measured_turn / 2.0).max(1e-3);
        let turn = omega * walk_s;
        let chord = speed * walk_s * sinc(turn / 2.0);
        let direction = start_direction + turn / 2.0;
        Move {
            forward: chord * direction.cos(),
            left: chord * direction.sin(),
            turn,
        }
    }

    /// Straight-line length of the walk (m).
    #[must_use]
    pub fn length(&self) -> f64 {
        self.forward.hypot(self.left)
    }

    /// Direction of the displacement in the body frame (rad).
    #[must_use]
    pub fn direction(&self) -> f64 {
        self.left.atan2(self.forward)
    }

    /// The walk cut to `share` of its time: an arc as long and as turned as
    /// that share of it.
    #[must_use]
    pub fn shortened(&self, share: f64) -> Move {
        if (share - 1.0).abs() < 1e-12 {
            return *self;
        }
        // The chord of a share of the arc: the arc's speed and turn rate
        // kept (see `from_descriptors`).
        let turn = self.turn * share;
        let whole = sinc(self.turn / 2.0).max(1e-3);
        let chord = self.length() / whole * share * sinc(turn / 2.0);
        let direction = self.direction() - self.turn / 2.0 + turn / 2.0;
        Move {
            forward: chord * direction.cos(),
            left: chord * direction.sin(),
            turn,
        }
    }

    /// The walk's mirror image through the body's long axis.
    #[must_use]
    pub fn mirrored(&self) -> Move {
        Move {
            forward: self.forward,
            left: -self.left,
            turn: -self.turn,
        }
    }

    /// The same walk, its displacement scaled by `factor` (turn kept).
    #[must_use]
    pub fn scaled(&self, factor: f64) -> Move {
        Move {
            forward: self.forward * factor,
            left: self.left * factor,
            turn: self.turn,
        }
    }
}

fn sinc(x: f64) -> f64 {
    if x.abs() < 1e-9 { 1.0 } else { x.sin() / x }
}

/// Wraps an angle to (−π, π].
#[must_use]
pub fn wrap(angle: f64) -> f64 {
    let a = angle.rem_euclid(2.0 * PI);
    if a > PI { a - 2.0 * PI } else { a }
}

/// Where the robot is on the floor and which way its long axis points.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    pub x: f64,
    pub y: f64,
    /// The long axis' direction (rad, counter-clockwise from world +x).
    pub heading: f64,
}

impl Pose {
    /// Where one walk of `m` ends.
    #[must_use]
    pub fn after(&self, m: &Move) -> Pose {
        let (s, c) = self.heading.sin_cos();
        Pose {
            x: self.x + c * m.forward - s * m.left,
            y: self.y + s * m.forward + c * m.left,
            heading: wrap(self.heading + m.turn),
        }
    }
}

/// The arena: the rectangle of floor the camera sees (world metres).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field {
    pub min: [f64; 2],
    pub max: [f64; 2],
}

/// Why a field or a policy's settings were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HomingError {
    #[error("the field must have a positive, finite size, got x {0:?} .. {1:?}")]
    Field([f64; 2], [f64; 2]),
    #[error(
        "the safety margin ({margin} m) leaves nothing of the field ({half_x} × {half_y} m half-sizes)"
    )]
    Margin {
        margin: f64,
        half_x: f64,
        half_y: f64,
    },
    #[error("homing needs at least one gait that moves the robot")]
    EmptyRepertoire,
    #[error("{0}")]
    Settings(String),
}

impl Field {
    /// A field `half_x` × `half_y` metres either side of `centre`.
    pub fn around(centre: [f64; 2], half_x: f64, half_y: f64) -> Result<Field, HomingError> {
        let field = Field {
            min: [centre[0] - half_x, centre[1] - half_y],
            max: [centre[0] + half_x, centre[1] + half_y],
        };
        field.check()?;
        Ok(field)
    }

    fn check(&self) -> Result<(), HomingError> {
        let ok = (0..2).all(|i| {
            self.min[i].is_finite() && self.max[i].is_finite() && self.max[i] > self.min[i]
        });
        if ok {
            Ok(())
        } else {
            Err(HomingError::Field(self.min, self.max))
        }
    }

    #[must_use]
    pub fn centre(&self) -> [f64; 2] {
        [
            (self.min[0] + self.max[0]) / 2.0,
            (self.min[1] + self.max[1]) / 2.0,
        ]
    }

    /// Half the width and height.
    #[must_use]
    pub fn half(&self) -> [f64; 2] {
        [
            (self.max[0] - self.min[0]) / 2.0,
            (self.max[1] - self.min[1]) / 2.0,
        ]
    }

    /// Whether `(x, y)` lies at least `margin` inside the field.
    #[must_use]
    pub fn contains(&self, x: f64, y: f64, margin: f64) -> bool {
        x >= self.min[0] + margin
            && x <= self.max[0] - margin
            && y >= self.min[1] + margin
            && y <= self.max[1] - margin
    }

    #[must_use]
    pub fn distance_from_centre(&self, x: f64, y: f64) -> f64 {
        let c = self.centre();
        (x - c[0]).hypot(y - c[1])
    }

    /// How far outside the field shrunk by `margin` a point is (0 inside).
    fn excess(&self, x: f64, y: f64, margin: f64) -> f64 {
        let dx = (self.min[0] + margin - x)
            .max(x - (self.max[0] - margin))
            .max(0.0);
        let dy = (self.min[1] + margin - y)
            .max(y - (self.max[1] - margin))
            .max(0.0);
        dx.hypot(dy)
    }
}

/// An estimate of the body's heading: a mean and a standard deviation
/// (rad). A deviation of [`HeadingEstimate::UNKNOWN_SD`] or more means the
/// heading is not known at all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadingEstimate {
    pub mean: f64,
    pub sd: f64,
}

impl HeadingEstimate {
    /// Beyond this the heading is taken as unknown (no direction favoured).
    pub const UNKNOWN_SD: f64 = PI / 2.0;

    #[must_use]
    pub fn unknown() -> Self {
        HeadingEstimate { mean: 0.0, sd: PI }
    }

    /// How far the camera's heading (two LEDs a few centimetres apart,
    /// half a pixel of noise, a body that rocks with its gait) is trusted
    /// (rad). An estimate this sure or surer is taken as seen.
    pub const SEEN_SD: f64 = 0.05;

    /// What the camera saw of the heading: the direction between a robot's
    /// two LEDs, or nothing (one LED): unknown.
    #[must_use]
    pub fn from_camera(heading: Option<f64>) -> Self {
        heading.map_or_else(Self::unknown, |mean| HeadingEstimate {
            mean,
            sd: Self::SEEN_SD,
        })
    }

    #[must_use]
    pub fn known(&self) -> bool {
        self.sd < Self::UNKNOWN_SD
    }
}

/// How much a walk's predicted turn and direction are trusted, and how far
/// the camera's positions wander (the heading filter's noise model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadingNoise {
    /// Standard deviation of the camera's position fix (m).
    pub position_sd: f64,
    /// A walk's turn is off by this much at least (rad) ...
    pub turn_sd: f64,
    /// ... plus this share of the predicted turn.
    pub turn_share: f64,
    /// A gait's direction of travel in the body frame is off by this (rad).
    pub direction_sd: f64,
    /// Walks shorter than this (m, observed or predicted) say nothing of
    /// the heading: a turn on the spot has no direction of travel.
    pub min_displacement: f64,
}

impl Default for HeadingNoise {
    /// Half a pixel of CamApp noise is about 3 mm at the default camera;
    /// a walk's turn and direction vary from start to start by about ten
    /// degrees in simulation, more on other hardware.
    fn default() -> Self {
        HeadingNoise {
            position_sd: 0.005,
            turn_sd: 0.1,
            turn_share: 0.3,
            direction_sd: 0.25,
            min_displacement: 0.03,
        }
    }
}

/// The heading filter: predicted by each walk's turn, corrected by the
/// direction the camera saw the robot travel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadingFilter {
    pub estimate: HeadingEstimate,
    pub noise: HeadingNoise,
}

impl HeadingFilter {
    #[must_use]
    pub fn new(estimate: HeadingEstimate, noise: HeadingNoise) -> Self {
        HeadingFilter { estimate, noise }
    }

    /// After a walk of `walked` (as predicted) that the camera saw go from
    /// `from` to `to`: the heading at the walk's end.
    pub fn update(&mut self, walked: &Move, from: [f64; 2], to: [f64; 2]) -> HeadingEstimate {
        self.update_with(walked, from, to, self.noise.direction_sd)
    }

    /// [`update`](Self::update) for a gait whose direction of travel in the
    /// body frame is known to vary by `direction_sd` (rad) from walk to
    /// walk: a chaotic gait says little about the heading.
    pub fn update_with(
        &mut self,
        walked: &Move,
        from: [f64; 2],
        to: [f64; 2],
        direction_sd: f64,
    ) -> HeadingEstimate {
        let n = self.noise;
        // Predict: the heading turns as the gait turns, and loses certainty.
        let turn_sd = n.turn_sd + n.turn_share * walked.turn.abs();
        let prior_var = self.estimate.sd.powi(2) + turn_sd.powi(2);
        let predicted = wrap(self.estimate.mean + walked.turn);
        let (dx, dy) = (to[0] - from[0], to[1] - from[1]);
        let seen = dx.hypot(dy);
        let estimate = if seen < n.min_displacement || walked.length() < n.min_displacement {
            HeadingEstimate {
                mean: predicted,
                sd: prior_var.sqrt(),
            }
        } else {
            // Observe: the body pointed at (travel − the gait's direction)
            // when it started, and turned by the walk's turn since. A
            // chord's direction is noisier the shorter it is.
            let observed = wrap(dy.atan2(dx) - walked.direction() + walked.turn);
            let observed_var = (n.position_sd * std::f64::consts::SQRT_2 / seen).powi(2)
                + direction_sd.max(n.direction_sd).powi(2)
                + (turn_sd / 2.0).powi(2);
            let gain = prior_var / (prior_var + observed_var);
            HeadingEstimate {
                mean: wrap(predicted + gain * wrap(observed - predicted)),
                sd: ((1.0 - gain) * prior_var).sqrt(),
            }
        };
        // Uncertainty never grows past "unknown".
        self.estimate = HeadingEstimate {
            mean: estimate.mean,
            sd: estimate.sd.min(PI),
        };
        self.estimate
    }
}

/// The homing policy's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HomingSettings {
    /// An evaluation walk must end at least this far inside the field (m).
    pub margin: f64,
    /// Walks looked ahead when choosing a homing gait (1: greedy).
    pub depth: usize,
    /// Heading hypotheses the end of a walk is checked under, spread over
    /// ±2 standard deviations (odd, at least 1).
    pub hypotheses: usize,
}

impl Default for HomingSettings {
    fn default() -> Self {
        HomingSettings {
            margin: 0.15,
            depth: 2,
            hypotheses: 7,
        }
    }
}

/// A homing gait chosen: its index in the repertoire, the sequence it
/// starts, and where that sequence is predicted to end.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub gait: usize,
    pub plan: Vec<usize>,
    /// Predicted distance from the centre after the plan (m; mean over
    /// heading hypotheses).
    pub distance: f64,
}

/// The homing policy over one field and one repertoire of moves.
#[derive(Debug, Clone)]
pub struct Homing {
    field: Field,
    settings: HomingSettings,
}

impl Homing {
    pub fn new(field: Field, settings: HomingSettings) -> Result<Homing, HomingError> {
        field.check()?;
        let [hx, hy] = field.half();
        if !(settings.margin.is_finite() && settings.margin >= 0.0 && settings.margin < hx.min(hy))
        {
            return Err(HomingError::Margin {
                margin: settings.margin,
                half_x: hx,
                half_y: hy,
            });
        }
        if settings.depth == 0 || settings.depth > 4 {
            return Err(HomingError::Settings(format!(
                "lookahead depth must be 1 to 4 walks, got {}",
                settings.depth
            )));
        }
        if settings.hypotheses == 0 || settings.hypotheses.is_multiple_of(2) {
            return Err(HomingError::Settings(format!(
                "heading hypotheses must be odd and at least 1, got {}",
                settings.hypotheses
            )));
        }
        Ok(Homing { field, settings })
    }

    #[must_use]
    pub fn field(&self) -> &Field {
        &self.field
    }

    #[must_use]
    pub fn settings(&self) -> &HomingSettings {
        &self.settings
    }

    /// The headings a walk is checked under: the mean ± 2 sd in
    /// `hypotheses` steps, the whole circle once the heading is unknown.
    fn headings(&self, heading: &HeadingEstimate) -> Vec<f64> {
        let k = self.settings.hypotheses;
        if k == 1 {
            return vec![heading.mean];
        }
        if !heading.known() {
            return (0..k)
                .map(|i| wrap(heading.mean + 2.0 * PI * i as f64 / k as f64))
                .collect();
        }
        let spread = (2.0 * heading.sd).min(PI);
        (0..k)
            .map(|i| {
                let t = i as f64 / (k - 1) as f64 * 2.0 - 1.0;
                wrap(heading.mean + t * spread)
            })
            .collect()
    }

    /// Whether a walk of `m` from `(x, y)` ends at least the margin inside
    /// the field whichever heading the estimate allows. (The field is
    /// convex, so the straight path is inside too; an arc bulges out by a
    /// few centimetres at most, which the margin covers.)
    #[must_use]
    pub fn is_safe(&self, x: f64, y: f64, heading: &HeadingEstimate, m: &Move) -> bool {
        self.headings(heading).into_iter().all(|h| {
            let end = Pose { x, y, heading: h }.after(m);
            self.field.contains(end.x, end.y, self.settings.margin)
        })
    }

    /// Whether a walk of `length` metres from `(x, y)` ends at least the
    /// margin inside the field whichever way it goes: nothing known of its
    /// direction.
    #[must_use]
    pub fn is_safe_anywhere(&self, x: f64, y: f64, length: f64) -> bool {
        self.field
            .contains(x, y, self.settings.margin + length.abs())
    }

    /// Whether a walk seen to shift the robot by `d` (spread `sd`) ends at
    /// least the margin plus its spread inside the field.
    #[must_use]
    pub fn is_safe_seen(&self, x: f64, y: f64, d: [f64; 2], sd: f64) -> bool {
        self.field
            .contains(x + d[0], y + d[1], self.settings.margin + sd)
    }

    /// Whether the walk `m` needs homing walks before it.
    #[must_use]
    pub fn needs_homing(&self, x: f64, y: f64, heading: &HeadingEstimate, m: &Move) -> bool {
        !self.is_safe(x, y, heading, m)
    }

    /// The homing gait to walk now from `(x, y)`: the first walk of the
    /// sequence of up to `depth` walks of `moves` whose predicted end is
    /// closest to the field's centre, averaged over the heading's
    /// hypotheses; a sequence whose walk leaves the field (less the
    /// margin) pays for how far. While the heading is unknown, the walk
    /// that best reveals it: the longest whose end stays inside whatever
    /// the heading (else the shortest).
    pub fn choose(
        &self,
        x: f64,
        y: f64,
        heading: &HeadingEstimate,
        moves: &[Move],
    ) -> Result<Choice, HomingError> {
        if moves.is_empty()
            || moves
                .iter()
                .all(|m| m.length() < 1e-6 && m.turn.abs() < 1e-6)
        {
            return Err(HomingError::EmptyRepertoire);
        }
        let headings = self.headings(heading);
        let centre = self.field.centre();
        let distance_from = |x: f64, y: f64| (x - centre[0]).hypot(y - centre[1]);
        if !heading.known() {
            let safe = |m: &Move| self.is_safe(x, y, heading, m);
            let gait = (0..moves.len())
                .filter(|&i| safe(&moves[i]))
                .max_by(|&a, &b| moves[a].length().total_cmp(&moves[b].length()))
                .unwrap_or_else(|| {
                    (0..moves.len())
                        .min_by(|&a, &b| moves[a].length().total_cmp(&moves[b].length()))
                        .expect("not empty")
                });
            let distance = headings
                .iter()
                .map(|&h| {
                    let end = Pose { x, y, heading: h }.after(&moves[gait]);
                    distance_from(end.x, end.y)
                })
                .sum::<f64>()
                / headings.len() as f64;
            return Ok(Choice {
                gait,
                plan: vec![gait],
                distance,
            });
        }
        // Every sequence, depth-first; the cost of a sequence is its best
        // prefix's (the plan may stop early), so a longer lookahead never
        // makes a choice worse.
        let mut best: Option<(f64, Vec<usize>)> = None;
        let mut plan = Vec::with_capacity(self.settings.depth);
        let starts: Vec<Pose> = headings
            .iter()
            .map(|&h| Pose { x, y, heading: h })
            .collect();
        let steps: Vec<Step> = moves.iter().map(|m| Step::Body(*m)).collect();
        self.search(&starts, 0.0, &steps, &mut plan, &mut best, &|p: &Pose| {
            distance_from(p.x, p.y)
        });
        let (distance, plan) = best.expect("a non-empty repertoire has a plan");
        Ok(Choice {
            gait: plan[0],
            plan,
            distance,
        })
    }

    fn search(
        &self,
        poses: &[Pose],
        penalty: f64,
        steps: &[Step],
        plan: &mut Vec<usize>,
        best: &mut Option<(f64, Vec<usize>)>,
        distance: &dyn Fn(&Pose) -> f64,
    ) {
        for (i, step) in steps.iter().enumerate() {
            let (ends, doubt): (Vec<Pose>, f64) = match step {
                Step::Body(m) => (poses.iter().map(|p| p.after(m)).collect(), 0.0),
                // Seen on this floor: the same shift under every hypothesis.
                Step::Seen { dx, dy, sd } => (
                    poses
                        .iter()
                        .map(|p| Pose {
                            x: p.x + dx,
                            y: p.y + dy,
                            heading: p.heading,
                        })
                        .collect(),
                    *sd,
                ),
                Step::Unusable => continue,
            };
            let n = ends.len() as f64;
            // Leaving the field costs ten times the way out: a plan may
            // pass near the edge, never out of sight. A walk that varies
            // pays half its spread.
            let out: f64 = ends
                .iter()
                .map(|p| self.field.excess(p.x, p.y, 0.0))
                .sum::<f64>()
                / n;
            let penalty = penalty + 10.0 * out + 0.5 * doubt;
            let cost = ends.iter().map(distance).sum::<f64>() / n + penalty;
            plan.push(i);
            if best.as_ref().is_none_or(|(c, _)| cost < *c - 1e-12) {
                *best = Some((cost, plan.clone()));
            }
            if plan.len() < self.settings.depth {
                self.search(&ends, penalty, steps, plan, best, distance);
            }
            plan.pop();
        }
    }

    /// The homing gait to walk now from `(x, y)` when the heading `yaw` is
    /// seen (rad): each gait `moves[i] = (move, sd)` walks its move in a
    /// direction off by up to two `sd` either way (its spread as seen, or
    /// a wide one for a gait never walked here), `length_doubt` times as
    /// far; the gait whose ends, averaged over that spread, lie nearest
    /// the centre wins, an end outside the field costing ten times the
    /// way out. Two walks are looked ahead from the mean end when the
    /// settings' depth allows.
    pub fn choose_seen_heading(
        &self,
        x: f64,
        y: f64,
        yaw: f64,
        moves: &[(Move, f64)],
        length_doubt: f64,
    ) -> Result<Choice, HomingError> {
        if moves
            .iter()
            .all(|(m, _)| m.length() < 1e-6 && m.turn.abs() < 1e-6)
        {
            return Err(HomingError::EmptyRepertoire);
        }
        let centre = self.field.centre();
        let k = self.settings.hypotheses;
        // Mean cost and mean end of walking `m` (spread `sd`) from `pose`;
        // the gait's mirror image counts as one hypothesis in
        // `1 / MIRRORED` (see `MIRRORED`).
        let walk = |pose: Pose, (m, sd): &(Move, f64)| -> (f64, Pose) {
            let mut cost = 0.0;
            let mut weight = 0.0;
            for (variant, w) in [(*m, 1.0 - MIRRORED), (m.mirrored(), MIRRORED)] {
                for i in 0..k {
                    let t = if k == 1 {
                        0.0
                    } else {
                        i as f64 / (k - 1) as f64 * 2.0 - 1.0
                    };
                    let tilted = Pose {
                        heading: pose.heading + t * 2.0 * sd,
                        ..pose
                    };
                    for doubt in [1.0, length_doubt] {
                        let end = tilted.after(&variant.scaled(doubt));
                        cost += w
                            * ((end.x - centre[0]).hypot(end.y - centre[1])
                                + 10.0 * self.field.excess(end.x, end.y, 0.0));
                        weight += w;
                    }
                }
            }
            (cost / weight, pose.after(m))
        };
        let start = Pose { x, y, heading: yaw };
        let mut best: Option<(f64, usize)> = None;
        for (i, step) in moves.iter().enumerate() {
            let (mut cost, end) = walk(start, step);
            if self.settings.depth > 1 {
                // The best follow-up counts, but never makes a walk that
                // goes wrong look right.
                let next = moves
                    .iter()
                    .map(|s| walk(end, s).0)
                    .fold(f64::INFINITY, f64::min);
                cost = cost.max(next);
            }
            if best.is_none_or(|(c, _)| cost < c - 1e-12) {
                best = Some((cost, i));
            }
        }
        let (distance, gait) = best.expect("a non-empty repertoire");
        Ok(Choice {
            gait,
            plan: vec![gait],
            distance,
        })
    }

    /// [`choose`](Self::choose) with what each gait was seen to do on this
    /// floor: `seen[i]`, gait `i`'s recent displacement in world
    /// coordinates and its spread (m), is used where known (a gait that
    /// barely turns keeps its world direction from walk to walk, whatever
    /// its direction in the body frame), the body-frame move under the
    /// heading's hypotheses elsewhere. When the best plan would not bring
    /// the robot 2 cm nearer the centre, a gait never seen is walked to
    /// learn it, if one is safe whatever the heading.
    pub fn choose_seen(
        &self,
        x: f64,
        y: f64,
        heading: &HeadingEstimate,
        moves: &[Move],
        seen: &[Option<([f64; 2], f64)>],
    ) -> Result<Choice, HomingError> {
        if moves.is_empty() {
            return Err(HomingError::EmptyRepertoire);
        }
        let centre = self.field.centre();
        let distance_from = |x: f64, y: f64| (x - centre[0]).hypot(y - centre[1]);
        let steps: Vec<Step> = moves
            .iter()
            .enumerate()
            .map(|(i, m)| match seen.get(i).copied().flatten() {
                Some(([dx, dy], sd)) => Step::Seen { dx, dy, sd },
                None if heading.known() => Step::Body(*m),
                None => Step::Unusable,
            })
            .collect();
        let unseen_safe = || {
            (0..moves.len())
                .filter(|&i| seen.get(i).copied().flatten().is_none())
                .filter(|&i| self.is_safe(x, y, &HeadingEstimate::unknown(), &moves[i]))
                .max_by(|&a, &b| moves[a].length().total_cmp(&moves[b].length()))
        };
        if steps.iter().all(|s| matches!(s, Step::Unusable)) {
            return self.choose(x, y, heading, moves);
        }
        let headings = self.headings(heading);
        let starts: Vec<Pose> = headings
            .iter()
            .map(|&h| Pose { x, y, heading: h })
            .collect();
        let mut best: Option<(f64, Vec<usize>)> = None;
        let mut plan = Vec::with_capacity(self.settings.depth);
        self.search(&starts, 0.0, &steps, &mut plan, &mut best, &|p: &Pose| {
            distance_from(p.x, p.y)
        });
        let (distance, plan) = best.expect("a usable step has a plan");
        if distance > distance_from(x, y) - 0.02
            && let Some(gait) = unseen_safe()
        {
            return Ok(Choice {
                gait,
                plan: vec![gait],
                distance: f64::NAN,
            });
        }
        Ok(Choice {
            gait: plan[0],
            plan,
            distance,
        })
    }
}

/// One walk as the planner sees it.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Known in the body frame: where it goes depends on the heading.
    Body(Move),
    /// Seen on this floor: a world displacement and its spread (m).
    Seen { dx: f64, dy: f64, sd: f64 },
    /// Neither: the heading is unknown and the gait was never seen.
    Unusable,
}

/// What each gait did lately on this floor, in world coordinates: a
/// running mean of its displacements and of their spread. A gait that
/// turns little travels the same way walk after walk, whatever the body
/// frame says; one that turns is forgotten fast enough to follow it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenMoves {
    seen: Vec<Option<([f64; 2], f64)>>,
    rate: f64,
}

impl SeenMoves {
    #[must_use]
    pub fn new(gaits: usize) -> Self {
        SeenMoves {
            seen: vec![None; gaits],
            rate: 0.3,
        }
    }

    /// Gait `gait` moved the robot by `d` (m).
    pub fn observe(&mut self, gait: usize, d: [f64; 2]) {
        if gait >= self.seen.len() {
            self.seen.resize(gait + 1, None);
        }
        let slot = &mut self.seen[gait];
        if !(d[0].is_finite() && d[1].is_finite()) {
            return;
        }
        *slot = Some(match *slot {
            // One walk: its spread is taken as a third of its length.
            None => (d, d[0].hypot(d[1]) / 3.0),
            Some((m, sd)) => {
                let r = self.rate;
                let mean = [m[0] + r * (d[0] - m[0]), m[1] + r * (d[1] - m[1])];
                let miss = (d[0] - m[0]).hypot(d[1] - m[1]);
                (
                    mean,
                    (sd * sd + r * (miss * miss - sd * sd)).max(0.0).sqrt(),
                )
            }
        });
    }

    /// Each gait's mean displacement and spread, where seen.
    #[must_use]
    pub fn all(&self) -> &[Option<([f64; 2], f64)>] {
        &self.seen
    }
}

/// How likely a walk is to come out as its gait's mirror image (to the
/// right where the gait walked to the left, turning the other way): a
/// symmetric robot's CPG settles into a gait or its mirror depending on
/// how the previous gait left its oscillators (seen on the emulated
/// quadruped: one gait in five or so walks mirrored now and then). A
/// homing walk is chosen for how it does either way, which favours gaits
/// that walk straight ahead or back.
pub const MIRRORED: f64 = 0.2;

/// What each gait was seen to do in the robot's own body frame, when the
/// camera sees the heading (a second LED): the last few walks' moves,
/// which replace the repertoire's prediction (made in simulation, on
/// another body or engine) once a gait has been walked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BodyMoves {
    seen: Vec<std::collections::VecDeque<Move>>,
}

impl BodyMoves {
    /// Walks remembered per gait: a gait's walks drift with the robot's
    /// battery, floor and wear, so the recent ones speak for it.
    pub const KEEP: usize = 5;

    /// Gait `gait` was seen to do `m`.
    pub fn observe(&mut self, gait: usize, m: Move) {
        if ![m.forward, m.left, m.turn].iter().all(|v| v.is_finite()) {
            return;
        }
        if gait >= self.seen.len() {
            self.seen.resize_with(gait + 1, Default::default);
        }
        let walks = &mut self.seen[gait];
        if walks.len() == Self::KEEP {
            walks.pop_front();
        }
        walks.push_back(m);
    }

    /// The longest walk gait `gait` was seen to make (m), once seen: a
    /// chaotic gait now and then walks much farther than its mean.
    #[must_use]
    pub fn longest(&self, gait: usize) -> Option<f64> {
        let walks = self.seen.get(gait).filter(|w| !w.is_empty())?;
        Some(walks.iter().map(Move::length).fold(0.0, f64::max))
    }

    /// Gait `gait`'s mean move and the spread of its direction (rad), once
    /// seen; one walk's spread is `prior_sd`.
    #[must_use]
    pub fn of(&self, gait: usize, prior_sd: f64) -> Option<(Move, f64)> {
        let walks = self.seen.get(gait).filter(|w| !w.is_empty())?;
        let n = walks.len() as f64;
        let mean = Move {
            forward: walks.iter().map(|m| m.forward).sum::<f64>() / n,
            left: walks.iter().map(|m| m.left).sum::<f64>() / n,
            turn: walks.iter().map(|m| m.turn).sum::<f64>() / n,
        };
        let sd = if walks.len() < 2 {
            prior_sd
        } else {
            (walks
                .iter()
                .map(|m| wrap(m.direction() - mean.direction()).powi(2))
                .sum::<f64>()
                / (n - 1.0))
                .sqrt()
        };
        Some((mean, sd))
    }
}

/// Learns, per gait, how much longer or shorter its walks are on this
/// robot than the repertoire predicts (the map was built on another body
/// or engine; a real robot's walk includes its motors switching on one by
/// one): the ratio of observed to predicted displacement, averaged.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    per_gait: Vec<Option<f64>>,
    /// Over every walk: the prior of a gait not yet walked.
    overall: Option<f64>,
    /// Weight of a new observation in the running means.
    rate: f64,
}

impl Calibration {
    /// For a repertoire of `gaits` gaits.
    #[must_use]
    pub fn new(gaits: usize) -> Self {
        Calibration {
            per_gait: vec![None; gaits],
            overall: None,
            rate: 0.3,
        }
    }

    /// A walk predicted as `predicted` moved the robot `seen` metres
    /// (`gait`: its index in the repertoire, `None` for another gait).
    pub fn observe(&mut self, gait: Option<usize>, predicted: &Move, seen: f64) {
        let length = predicted.length();
        if length < 0.02 || !seen.is_finite() {
            return;
        }
        // A walk may stumble or stall; one walk never says more than 3×.
        let ratio = (seen / length).clamp(1.0 / 3.0, 3.0);
        let blend = |old: Option<f64>, rate: f64| match old {
            None => ratio,
            Some(v) => v + rate * (ratio - v),
        };
        self.overall = Some(blend(self.overall, self.rate / 2.0));
        if let Some(slot) = gait.and_then(|i| self.per_gait.get_mut(i)) {
            *slot = Some(blend(*slot, self.rate));
        }
    }

    /// The factor gait `gait`'s displacement is scaled by.
    #[must_use]
    pub fn factor(&self, gait: Option<usize>) -> f64 {
        gait.and_then(|i| self.per_gait.get(i).copied().flatten())
            .or(self.overall)
            .unwrap_or(1.0)
    }

    /// `m` as this robot walks it.
    #[must_use]
    pub fn apply(&self, gait: Option<usize>, m: &Move) -> Move {
        m.scaled(self.factor(gait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    fn field(half: f64) -> Field {
        Field::around([0.0, 0.0], half, half).unwrap()
    }

    #[test]
    fn a_straight_cell_walks_its_velocity_along_its_heading() {
        let m = Move::from_descriptors(90.0, 0.1, 0.0, 8.0, 10.0);
        assert!(
            close(m.forward, 0.0, 1e-12) && close(m.left, 1.0, 1e-12),
            "{m:?}"
        );
        assert_eq!(m.turn, 0.0);
        let back = Move::from_descriptors(180.0, 0.05, 0.0, 8.0, 4.0);
        assert!(close(back.forward, -0.2, 1e-12), "{back:?}");
    }

    #[test]
    fn a_turning_cell_is_an_arc_whose_chord_matches_the_map() {
        // Over the measured window itself the chord is the map's: its
        // length velocity × time, its direction the heading.
        let (heading, v, turn, t) = (20.0, 0.08, 9.0, 8.0);
        let m = Move::from_descriptors(heading, v, turn, t, t);
        assert!(close(m.length(), v * t, 1e-9), "{m:?}");
        assert!(close(m.direction().to_degrees(), heading, 1e-9));
        assert!(close(m.turn.to_degrees(), turn * t, 1e-9));
        // Walked twice as long, the arc goes on: its chord is shorter than
        // twice the first, and points further round.
        let longer = Move::from_descriptors(heading, v, turn, t, 2.0 * t);
        assert!(longer.length() < 2.0 * m.length());
        assert!(longer.direction() > m.direction());
        // Composing two halves of the arc gives the whole.
        let half = Move::from_descriptors(heading, v, turn, t, t / 2.0);
        let twice = Pose::default().after(&half).after(&half);
        assert!(close(twice.x, m.forward, 1e-9) && close(twice.y, m.left, 1e-9));
        assert!(close(twice.heading, m.turn, 1e-9));
    }

    #[test]
    fn a_pose_walks_in_its_own_frame() {
        let m = Move {
            forward: 1.0,
            left: 0.0,
            turn: PI / 2.0,
        };
        let p = Pose {
            x: 1.0,
            y: 1.0,
            heading: PI / 2.0,
        }
        .after(&m);
        assert!(close(p.x, 1.0, 1e-12) && close(p.y, 2.0, 1e-12), "{p:?}");
        assert!(close(p.heading, PI, 1e-12));
        assert!(
            close(wrap(3.0 * PI), PI, 1e-12) && close(wrap(-PI / 2.0 - 2.0 * PI), -PI / 2.0, 1e-12)
        );
    }

    #[test]
    fn the_heading_is_found_from_one_walk_and_kept_by_the_next() {
        let mut filter = HeadingFilter::new(HeadingEstimate::unknown(), HeadingNoise::default());
        // A sideways gait (to the body's left) seen moving along +y: the
        // body faces +x.
        let sideways = Move {
            forward: 0.0,
            left: 0.4,
            turn: 0.0,
        };
        let e = filter.update(&sideways, [0.0, 0.0], [0.0, 0.4]);
        assert!(close(e.mean, 0.0, 0.05), "{e:?}");
        assert!(e.known() && e.sd < 0.3, "{e:?}");
        // A turn on the spot says nothing by itself: predicted only.
        let spin = Move {
            forward: 0.0,
            left: 0.0,
            turn: 1.0,
        };
        let e2 = filter.update(&spin, [0.0, 0.4], [0.001, 0.4]);
        assert!(close(e2.mean, 1.0, 0.05) && e2.sd > e.sd, "{e2:?}");
        // A forward walk seen going where the prediction says sharpens it.
        let forward = Move {
            forward: 0.5,
            left: 0.0,
            turn: 0.0,
        };
        let to = [0.5 * 1.0f64.cos(), 0.4 + 0.5 * 1.0f64.sin()];
        let e3 = filter.update(&forward, [0.0, 0.4], to);
        assert!(close(e3.mean, 1.0, 0.02) && e3.sd < e2.sd, "{e3:?}");
    }

    #[test]
    fn an_observation_pulls_a_wrong_prediction_across_the_branch_cut() {
        let mut filter = HeadingFilter::new(
            HeadingEstimate { mean: 3.0, sd: 0.5 },
            HeadingNoise::default(),
        );
        // Seen walking forward towards −x slightly below: heading ≈ −3.1,
        // which is 0.18 rad from 3.0 across ±π, not 6.1.
        let forward = Move {
            forward: 0.5,
            left: 0.0,
            turn: 0.0,
        };
        let to = [0.5 * (-3.1f64).cos(), 0.5 * (-3.1f64).sin()];
        let e = filter.update(&forward, [0.0, 0.0], to);
        assert!(
            wrap(e.mean - 3.0).abs() < 0.2 && wrap(e.mean + 3.1).abs() < 0.2,
            "{e:?}"
        );
    }

    fn repertoire() -> Vec<Move> {
        vec![
            Move {
                forward: 0.3,
                left: 0.0,
                turn: 0.0,
            },
            Move {
                forward: -0.2,
                left: 0.0,
                turn: 0.0,
            },
            Move {
                forward: 0.05,
                left: 0.0,
                turn: 0.8,
            },
            Move {
                forward: 0.05,
                left: 0.0,
                turn: -0.8,
            },
        ]
    }

    #[test]
    fn facing_the_centre_it_walks_forward_facing_away_backward() {
        let homing = Homing::new(field(1.0), HomingSettings::default()).unwrap();
        let sure = |mean| HeadingEstimate { mean, sd: 0.05 };
        let c = homing.choose(0.6, 0.0, &sure(PI), &repertoire()).unwrap();
        assert_eq!(c.gait, 0, "{c:?}");
        assert!(c.distance < 0.2, "{c:?}");
        let c = homing.choose(0.6, 0.0, &sure(0.0), &repertoire()).unwrap();
        assert_eq!(c.gait, 1, "{c:?}");
    }

    #[test]
    fn facing_sideways_a_lookahead_turns_first() {
        // At (0.6, 0) facing +y: a walk forward or back goes nowhere near
        // the centre; turning left towards −x, then forward, does.
        let greedy = Homing::new(
            field(1.0),
            HomingSettings {
                depth: 1,
                ..HomingSettings::default()
            },
        )
        .unwrap();
        let ahead = Homing::new(
            field(1.0),
            HomingSettings {
                depth: 3,
                ..HomingSettings::default()
            },
        )
        .unwrap();
        let heading = HeadingEstimate {
            mean: PI / 2.0,
            sd: 0.05,
        };
        let g = greedy.choose(0.6, 0.0, &heading, &repertoire()).unwrap();
        let a = ahead.choose(0.6, 0.0, &heading, &repertoire()).unwrap();
        assert!(a.distance < g.distance, "{a:?} vs {g:?}");
        assert_eq!(a.gait, 2, "turn left (towards the centre) first: {a:?}");
        assert!(a.distance < 0.3, "{a:?}");
    }

    #[test]
    fn a_walk_that_could_leave_the_field_needs_homing_first() {
        let homing = Homing::new(field(1.0), HomingSettings::default()).unwrap();
        let long = Move {
            forward: 0.5,
            left: 0.0,
            turn: 0.0,
        };
        let east = HeadingEstimate {
            mean: 0.0,
            sd: 0.05,
        };
        assert!(homing.is_safe(0.0, 0.0, &east, &long));
        // 0.5 past x = 0.4 ends at 0.9 > 1.0 − 0.15.
        assert!(homing.needs_homing(0.4, 0.0, &east, &long));
        // Facing west from there it is safe.
        let west = HeadingEstimate { mean: PI, sd: 0.05 };
        assert!(homing.is_safe(0.4, 0.0, &west, &long));
        // Not knowing the heading, only a walk that fits any way is safe.
        assert!(homing.needs_homing(0.4, 0.0, &HeadingEstimate::unknown(), &long));
        assert!(homing.is_safe(0.0, 0.0, &HeadingEstimate::unknown(), &long));
        // An uncertain heading widens the check.
        let vague = HeadingEstimate {
            mean: PI / 2.0,
            sd: 0.6,
        };
        let north = Move {
            forward: 0.8,
            left: 0.0,
            turn: 0.0,
        };
        assert!(homing.is_safe(0.5, 0.0, &HeadingEstimate { sd: 0.05, ..vague }, &north));
        assert!(homing.needs_homing(0.5, 0.0, &vague, &north));
    }

    #[test]
    fn not_knowing_the_heading_it_walks_the_longest_safe_gait_to_learn_it() {
        let homing = Homing::new(field(1.0), HomingSettings::default()).unwrap();
        let c = homing
            .choose(0.0, 0.0, &HeadingEstimate::unknown(), &repertoire())
            .unwrap();
        assert_eq!(c.gait, 0);
        // Near the edge nothing long is safe any way round: the shortest.
        let c = homing
            .choose(0.75, 0.0, &HeadingEstimate::unknown(), &repertoire())
            .unwrap();
        assert!(c.gait == 2 || c.gait == 3, "{c:?}");
    }

    #[test]
    fn simulated_homing_keeps_a_noisy_robot_in_a_small_field() {
        // A robot that walks the repertoire with 20 % error in length and
        // 0.15 rad in turn and direction, seen by a camera with 5 mm of
        // noise, evaluating random long walks between homing walks: it
        // never leaves a 0.8 m field.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let f = field(0.8);
        let homing = Homing::new(
            f,
            HomingSettings {
                margin: 0.1,
                ..HomingSettings::default()
            },
        )
        .unwrap();
        let moves = repertoire();
        let mut truth = Pose {
            x: 0.0,
            y: 0.0,
            heading: 2.0,
        };
        let mut filter = HeadingFilter::new(HeadingEstimate::unknown(), HeadingNoise::default());
        let mut calibration = Calibration::new(moves.len());
        let mut worst: f64 = 0.0;
        let (mut evaluations, mut homings) = (0, 0);
        let noisy = |rng: &mut rand_chacha::ChaCha8Rng, m: &Move| Move {
            forward: m.forward * rng.random_range(0.8..1.2),
            left: m.left + rng.random_range(-0.03..0.03),
            turn: m.turn + rng.random_range(-0.15..0.15),
        };
        while evaluations < 200 {
            let candidate = Move {
                forward: rng.random_range(-0.35..0.35),
                left: rng.random_range(-0.1..0.1),
                turn: rng.random_range(-0.5..0.5),
            };
            let seen = |p: &Pose, rng: &mut rand_chacha::ChaCha8Rng| {
                [
                    p.x + rng.random_range(-0.005..0.005),
                    p.y + rng.random_range(-0.005..0.005),
                ]
            };
            let here = seen(&truth, &mut rng);
            let (walked, gait) =
                if homing.needs_homing(here[0], here[1], &filter.estimate, &candidate) {
                    let scaled: Vec<Move> = (0..moves.len())
                        .map(|i| calibration.apply(Some(i), &moves[i]))
                        .collect();
                    let c = homing
                        .choose(here[0], here[1], &filter.estimate, &scaled)
                        .unwrap();
                    homings += 1;
                    (scaled[c.gait], Some(c.gait))
                } else {
                    evaluations += 1;
                    (candidate, None)
                };
            truth = truth.after(&noisy(&mut rng, &walked));
            let there = seen(&truth, &mut rng);
            filter.update(&walked, here, there);
            calibration.observe(
                gait,
                &walked,
                (there[0] - here[0]).hypot(there[1] - here[1]),
            );
            assert!(
                f.contains(truth.x, truth.y, 0.0),
                "left the field at {truth:?}"
            );
            worst = worst.max(f.distance_from_centre(truth.x, truth.y));
        }
        assert!(
            homings < 3 * evaluations,
            "{homings} homing walks for {evaluations}"
        );
        assert!(worst < 0.8 * std::f64::consts::SQRT_2, "{worst}");
    }

    #[test]
    fn calibration_learns_how_long_a_gait_walks_here() {
        let mut c = Calibration::new(2);
        let m = Move {
            forward: 0.2,
            left: 0.0,
            turn: 0.0,
        };
        for _ in 0..20 {
            c.observe(Some(0), &m, 0.3);
        }
        assert!(close(c.factor(Some(0)), 1.5, 0.01));
        // A gait not yet walked takes the overall factor.
        assert!(close(c.factor(Some(1)), 1.5, 0.05));
        assert!(close(c.apply(Some(0), &m).forward, 0.3, 0.01));
    }

    #[test]
    fn bad_fields_and_settings_are_refused() {
        assert!(Field::around([0.0, 0.0], 0.0, 1.0).is_err());
        assert!(Field::around([0.0, f64::NAN], 1.0, 1.0).is_err());
        let e = Homing::new(
            field(0.3),
            HomingSettings {
                margin: 0.4,
                ..HomingSettings::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("margin"), "{e}");
        assert!(
            Homing::new(
                field(1.0),
                HomingSettings {
                    depth: 0,
                    ..HomingSettings::default()
                }
            )
            .is_err()
        );
        assert!(
            Homing::new(
                field(1.0),
                HomingSettings {
                    hypotheses: 4,
                    ..HomingSettings::default()
                }
            )
            .is_err()
        );
        let homing = Homing::new(field(1.0), HomingSettings::default()).unwrap();
        assert_eq!(
            homing.choose(0.0, 0.0, &HeadingEstimate::unknown(), &[]),
            Err(HomingError::EmptyRepertoire)
        );
    }
}
