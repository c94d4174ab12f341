//! A way through joint space from one pose of a meta-module to another
//! that keeps its cubes clear of the floor, the structure, the other
//! meta-modules and each other all along, not only at the two ends.
//!
//! The straight line in joint space, the way the servos go when simply
//! told a goal, is tried first. When it is blocked (a half-cube turning
//! about its diagonal while resting on the floor reaches 15 mm below it,
//! and the servos stall there), a bidirectional RRT-Connect (Kuffner and
//! LaValle, 2000) searches the six joints' torus — every joint turns
//! without end, so differences are taken modulo a turn — and the path it
//! finds is shortened by cutting corners. Every edge is checked at
//! [`RESOLUTION`]; the sampling is seeded, so a path is reproducible.
//!
//! The planner does not know what it plans for: it is given whether a
//! pose is free (a [`crate::stage::Stage`] answers that for a meta-module).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ik::MetaJoints;
use crate::module::wrap;

/// The largest turn of any joint between two poses checked along an edge
/// (rad). One joint turning 0.02 rad moves the far end of a meta-module
/// (four cells, 0.44 m) at most 9 mm; several turning together move it
/// up to their sum, so a dip into a surface shallower than that can pass
/// between two checked poses unseen (the simulation's meetings measure
/// what the way really does).
pub const RESOLUTION: f64 = 0.02;
/// The longest step a tree grows by towards a sample (rad, Euclidean over
/// the six joints).
const EXTEND: f64 = 0.4;
/// Tries at cutting a corner of a path found.
const SHORTCUTS: usize = 150;

/// How hard the planner tries.
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct PathPlanner {
    /// Samples drawn before giving up.
    pub samples: usize,
    /// Seeds the sampling.
    pub seed: u64,
}

impl Default for PathPlanner {
    fn default() -> Self {
        PathPlanner {
            samples: 3000,
            seed: 0,
        }
    }
}

/// A way from one pose to another.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// The poses passed through, the first the start and the last the
    /// goal; consecutive ones differ by less than half a turn in every
    /// joint (each is unwrapped from the one before, so a joint may end a
    /// whole turn from the goal it was given: the same angle).
    pub waypoints: Vec<MetaJoints>,
    /// Whether every pose along it was found free; false when the planner
    /// gave up and the path is the straight line.
    pub clear: bool,
}

impl Path {
    /// The straight line from `start` to `goal` (the nearer way round for
    /// each joint).
    #[must_use]
    pub fn straight(start: MetaJoints, goal: MetaJoints, clear: bool) -> Path {
        Path {
            waypoints: unwrapped(&[start, goal]),
            clear,
        }
    }

    /// Whether the path is the straight line.
    #[must_use]
    pub fn is_straight(&self) -> bool {
        self.waypoints.len() <= 2
    }
}

impl PathPlanner {
    /// A way from `start` to `goal` along which `free` holds at every pose
    /// checked; the straight line, marked not clear, when none was found
    /// or `goal` itself is not free. `start` is taken as free.
    pub fn plan(
        &self,
        start: MetaJoints,
        goal: MetaJoints,
        free: impl Fn(&MetaJoints) -> bool,
    ) -> Path {
        self.plan_retreating(start, goal, [&[], &[]], free)
    }

    /// As [`PathPlanner::plan`], leaving `start` through the poses of
    /// `retreats[0]` and coming to `goal` back through those of
    /// `retreats[1]` (each list leads away from its end, straight from
    /// pose to pose), when every step of them is free: poses near each
    /// end that stand off a surface (a free end resting on the floor is
    /// lifted before anything turns, and lowered last). The search between
    /// them then starts away from the surfaces, where random steps are not
    /// blocked at once.
    pub fn plan_retreating(
        &self,
        start: MetaJoints,
        goal: MetaJoints,
        retreats: [&[MetaJoints]; 2],
        free: impl Fn(&MetaJoints) -> bool,
    ) -> Path {
        if edge_free(&start, &goal, &free) {
            return Path::straight(start, goal, true);
        }
        // The goal's tree is rooted there, and an edge's first pose is not
        // checked: a goal that is not free would be joined all the same.
        if !free(&goal) {
            return Path::straight(start, goal, false);
        }
        let free_chain = |from: MetaJoints, chain: &[MetaJoints]| {
            let mut at = from;
            chain.iter().all(|p| {
                let ok = edge_free(&at, p, &free) && edge_free(p, &at, &free);
                at = *p;
                ok
            })
        };
        let [leave, arrive] = retreats.map(<[MetaJoints]>::to_vec);
        let leave = if free_chain(start, &leave) {
            leave
        } else {
            Vec::new()
        };
        let arrive = if free_chain(goal, &arrive) {
            arrive
        } else {
            Vec::new()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let a = leave.last().copied().unwrap_or(start);
        let b = arrive.last().copied().unwrap_or(goal);
        match connect(a, b, &free, self.samples, &mut rng) {
            Some(middle) => {
                let mut waypoints = vec![start];
                waypoints.extend(leave.iter().take(leave.len().saturating_sub(1)));
                waypoints.extend(middle);
                waypoints.extend(arrive.iter().rev().skip(1));
                waypoints.push(goal);
                waypoints.dedup();
                shortcut(&mut waypoints, &free, &mut rng);
                Path {
                    waypoints: unwrapped(&waypoints),
                    clear: true,
                }
            }
            None => Path::straight(start, goal, false),
        }
    }
}

/// Joint by joint, the difference `b − a` taken the nearer way round.
fn difference(a: &MetaJoints, b: &MetaJoints) -> MetaJoints {
    std::array::from_fn(|k| wrap(b[k] - a[k]))
}

fn distance(a: &MetaJoints, b: &MetaJoints) -> f64 {
    difference(a, b).iter().map(|d| d * d).sum::<f64>().sqrt()
}

/// Whether `free` holds at every pose on the way from `a` to `b` (each
/// joint the nearer way round), `a` excluded, checked every
/// [`RESOLUTION`].
pub fn edge_free(a: &MetaJoints, b: &MetaJoints, free: &impl Fn(&MetaJoints) -> bool) -> bool {
    let d = difference(a, b);
    let widest = d.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let steps = (widest / RESOLUTION).ceil().max(1.0) as usize;
    (1..=steps).all(|i| {
        let s = i as f64 / steps as f64;
        free(&std::array::from_fn(|k| a[k] + d[k] * s))
    })
}

/// One tree of RRT-Connect: poses and the index of each one's parent.
struct Tree {
    nodes: Vec<(MetaJoints, usize)>,
}

enum Grown {
    /// The tree reached the target; the index of the node there.
    Reached(usize),
    /// The tree grew one step towards it.
    Advanced(usize),
    Trapped,
}

impl Tree {
    fn rooted(at: MetaJoints) -> Tree {
        Tree {
            nodes: vec![(at, 0)],
        }
    }

    fn nearest(&self, to: &MetaJoints) -> usize {
        (0..self.nodes.len())
            .min_by(|&i, &j| {
                distance(&self.nodes[i].0, to).total_cmp(&distance(&self.nodes[j].0, to))
            })
            .expect("a tree has its root")
    }

    /// One step of at most [`EXTEND`] from the nearest node towards
    /// `target`.
    fn extend(&mut self, target: &MetaJoints, free: &impl Fn(&MetaJoints) -> bool) -> Grown {
        let near = self.nearest(target);
        let from = self.nodes[near].0;
        let d = difference(&from, target);
        let length = distance(&from, target);
        let (to, reaches) = if length <= EXTEND {
            (*target, true)
        } else {
            let s = EXTEND / length;
            (std::array::from_fn(|k| from[k] + d[k] * s), false)
        };
        if !edge_free(&from, &to, free) {
            return Grown::Trapped;
        }
        self.nodes.push((to, near));
        let added = self.nodes.len() - 1;
        if reaches {
            Grown::Reached(added)
        } else {
            Grown::Advanced(added)
        }
    }

    /// Grows towards `target` until it reaches it or is blocked.
    fn connect(&mut self, target: &MetaJoints, free: &impl Fn(&MetaJoints) -> bool) -> Grown {
        loop {
            match self.extend(target, free) {
                Grown::Advanced(_) => {}
                other => return other,
            }
        }
    }

    /// The poses from the root to node `i`.
    fn path_to(&self, mut i: usize) -> Vec<MetaJoints> {
        let mut path = vec![self.nodes[i].0];
        while i != 0 {
            i = self.nodes[i].1;
            path.push(self.nodes[i].0);
        }
        path.reverse();
        path
    }
}

/// RRT-Connect: a tree from each end, one grown towards a random pose and
/// the other straight at what it reached, their roles swapping each round.
fn connect(
    start: MetaJoints,
    goal: MetaJoints,
    free: &impl Fn(&MetaJoints) -> bool,
    samples: usize,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<MetaJoints>> {
    let (mut a, mut b) = (Tree::rooted(start), Tree::rooted(goal));
    let mut a_from_start = true;
    for _ in 0..samples {
        let sample: MetaJoints =
            std::array::from_fn(|_| rng.random_range(-std::f64::consts::PI..std::f64::consts::PI));
        let grown = match a.extend(&sample, free) {
            Grown::Reached(i) | Grown::Advanced(i) => i,
            Grown::Trapped => {
                std::mem::swap(&mut a, &mut b);
                a_from_start = !a_from_start;
                continue;
            }
        };
        let reached = a.nodes[grown].0;
        if let Grown::Reached(j) = b.connect(&reached, free) {
            let mut from_a = a.path_to(grown);
            let mut from_b = b.path_to(j);
            from_b.reverse();
            from_b.remove(0);
            from_a.extend(from_b);
            if !a_from_start {
                from_a.reverse();
            }
            return Some(from_a);
        }
        std::mem::swap(&mut a, &mut b);
        a_from_start = !a_from_start;
    }
    None
}

/// Cuts corners: two poses of the path picked at random are joined
/// straight when that is free, the poses between them dropped.
fn shortcut(path: &mut Vec<MetaJoints>, free: &impl Fn(&MetaJoints) -> bool, rng: &mut ChaCha8Rng) {
    for _ in 0..SHORTCUTS {
        if path.len() <= 2 {
            return;
        }
        let i = rng.random_range(0..path.len() - 2);
        let j = rng.random_range(i + 2..path.len());
        if edge_free(&path[i], &path[j], free) {
            path.drain(i + 1..j);
        }
    }
}

/// The poses with each joint unwrapped from the pose before (the nearer
/// way round), starting from the first as given.
fn unwrapped(poses: &[MetaJoints]) -> Vec<MetaJoints> {
    let mut out: Vec<MetaJoints> = Vec::with_capacity(poses.len());
    for p in poses {
        let next = match out.last() {
            None => *p,
            Some(last) => {
                let d = difference(last, p);
                std::array::from_fn(|k| last[k] + d[k])
            }
        };
        out.push(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// A wall across joint 0's way: poses with joint 0 between 0.5 and
    /// 1.0 are blocked unless joint 1 is above 1.
    fn walled(q: &MetaJoints) -> bool {
        !((0.5..1.0).contains(&wrap(q[0])) && q[1] < 1.0)
    }

    #[test]
    fn a_free_straight_line_is_taken_as_it_is() {
        let path = PathPlanner::default().plan([0.0; 6], [0.3, 0.2, 0.0, 0.0, 0.0, -0.1], walled);
        assert!(path.clear && path.is_straight(), "{path:?}");
    }

    #[test]
    fn a_blocked_line_is_gone_around_and_every_pose_on_the_way_is_free() {
        let goal = [1.5, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!(!edge_free(&[0.0; 6], &goal, &walled));
        let path = PathPlanner::default().plan([0.0; 6], goal, walled);
        assert!(path.clear && !path.is_straight(), "{path:?}");
        let w = &path.waypoints;
        assert_eq!(w[0], [0.0; 6]);
        let end = w.last().unwrap();
        assert!(
            difference(end, &goal).iter().all(|d| d.abs() < 1e-12),
            "{end:?}"
        );
        for pair in w.windows(2) {
            assert!(edge_free(&pair[0], &pair[1], &walled), "{pair:?}");
            assert!(
                difference(&pair[0], &pair[1])
                    .iter()
                    .zip(pair[0].iter().zip(&pair[1]))
                    .all(|(d, (a, b))| (b - a - d).abs() < 1e-12)
            );
        }
        // Seeded: the same path again.
        assert_eq!(PathPlanner::default().plan([0.0; 6], goal, walled), path);
    }

    #[test]
    fn joints_go_the_nearer_way_round_and_through_the_turn_when_that_is_free() {
        // From just below π to just above −π is a small step, not a turn.
        let path = PathPlanner::default().plan(
            [PI - 0.1, 0.0, 0.0, 0.0, 0.0, 0.0],
            [-PI + 0.1, 0.0, 0.0, 0.0, 0.0, 0.0],
            |_| true,
        );
        assert!(path.is_straight());
        assert!((path.waypoints[1][0] - (PI + 0.1)).abs() < 1e-12);
    }

    #[test]
    fn a_goal_sealed_off_gives_the_straight_line_marked_not_clear() {
        let sealed = |q: &MetaJoints| wrap(q[0]).abs() < 0.5;
        let path = PathPlanner {
            samples: 200,
            seed: 1,
        }
        .plan([0.0; 6], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], sealed);
        assert!(!path.clear && path.is_straight(), "{path:?}");
    }
}
