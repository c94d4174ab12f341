//! The reactive servo controller of 002 §4.1.1, "bounding trial": a
//! continuous joint that cannot reach its goal one way goes round the
//! other.
//!
//! The servo watches its position. A step away from the goal, or no
//! motion while the goal is not reached, counts as a bad step; after
//! [`BAD_STEPS`] bad steps the goal moves by a whole turn to the other
//! side (the same angle, reached the other way round), and the count
//! starts again. Each change reverses the direction of travel, so the
//! servo tries one way, the other, the first again (002 §4.1.1: "up to
//! three times, moving first forward, then backward, then forward",
//! counted from the way it was going); after [`RETARGETS`] changes it
//! gives up and reports itself stuck.

use std::f64::consts::TAU;

/// Bad steps before the goal moves a turn.
pub const BAD_STEPS: u32 = 3;
/// Goal changes before the servo reports itself stuck.
pub const RETARGETS: u32 = 3;

/// What the controller makes of one observed position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// On its way; drive towards `goal`.
    Moving { goal: f64 },
    /// Within tolerance of the goal (the same angle modulo a turn).
    Reached,
    /// Blocked both ways: the position where it gave up.
    Stuck { at: f64 },
}

/// One servo's bounding trial towards a goal.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundingTrial {
    goal: f64,
    /// Within this of the goal is reached (rad).
    tolerance: f64,
    /// Less motion than this in one observation is no motion (rad).
    still: f64,
    last: Option<f64>,
    bad: u32,
    retargets: u32,
}

impl BoundingTrial {
    /// Towards `goal` (rad, unbounded), reached within `tolerance`, with
    /// motion below `still` per observation counted as none.
    #[must_use]
    pub fn new(goal: f64, tolerance: f64, still: f64) -> Self {
        BoundingTrial {
            goal,
            tolerance,
            still,
            last: None,
            bad: 0,
            retargets: 0,
        }
    }

    /// The goal the servo drives to now.
    #[must_use]
    pub fn goal(&self) -> f64 {
        self.goal
    }

    /// Goal changes so far.
    #[must_use]
    pub fn retargets(&self) -> u32 {
        self.retargets
    }

    /// Takes the servo's position and says what to do.
    #[must_use = "the verdict says where to drive, or that the servo is done"]
    pub fn observe(&mut self, position: f64) -> Verdict {
        if (self.goal - position).abs() <= self.tolerance {
            return Verdict::Reached;
        }
        if let Some(last) = self.last {
            let towards = (self.goal - last).signum();
            let moved = position - last;
            if moved.abs() < self.still || moved * towards < 0.0 {
                self.bad += 1;
            }
        }
        self.last = Some(position);
        if self.bad >= BAD_STEPS {
            if self.retargets == RETARGETS {
                return Verdict::Stuck { at: position };
            }
            self.retargets += 1;
            self.bad = 0;
            // The same angle a turn the other way round from here.
            self.goal -= TAU * (self.goal - position).signum();
        }
        Verdict::Moving { goal: self.goal }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A servo moving at most 0.05 rad per observation towards its goal,
    /// not into the positions `blocked` names (obstacles).
    fn run(start: f64, goal: f64, blocked: impl Fn(f64) -> bool) -> (Verdict, f64, u32) {
        let mut trial = BoundingTrial::new(goal, 1e-3, 1e-4);
        let mut position = start;
        for _ in 0..10_000 {
            match trial.observe(position) {
                Verdict::Moving { goal } => {
                    let step = (goal - position).clamp(-0.05, 0.05);
                    if !blocked(position + step) {
                        position += step;
                    }
                }
                done => return (done, position, trial.retargets()),
            }
        }
        panic!("never ended");
    }

    #[test]
    fn a_free_servo_goes_straight_to_its_goal() {
        let (verdict, at, retargets) = run(0.0, 2.0, |_| false);
        assert_eq!(verdict, Verdict::Reached);
        assert!((at - 2.0).abs() < 1e-3);
        assert_eq!(retargets, 0);
    }

    #[test]
    fn a_servo_blocked_one_way_reaches_the_same_angle_the_other_way_round() {
        // An obstacle between 0.5 and 1.0 rad: the goal of 2 rad is reached
        // as 2 - 2π, going backwards.
        let (verdict, at, retargets) = run(0.0, 2.0, |p| (0.5..1.0).contains(&p));
        assert_eq!(verdict, Verdict::Reached);
        assert!((at - (2.0 - TAU)).abs() < 1e-3, "{at}");
        assert_eq!(retargets, 1);
    }

    #[test]
    fn a_servo_blocked_both_ways_reports_itself_stuck_after_three_changes() {
        let (verdict, at, retargets) = run(0.0, 2.0, |p| !(-0.3..0.3).contains(&p));
        assert!(matches!(verdict, Verdict::Stuck { .. }), "{verdict:?}");
        assert!(at.abs() <= 0.3, "{at}");
        assert_eq!(retargets, RETARGETS);
    }
}
