//! Inverse kinematics of a meta-module: the six joint angles that place
//! its end connector (`C3X` of the second module) on a target frame in the
//! first module's `M0`.
//!
//! # Ours
//! Damped least squares (Levenberg–Marquardt on the geometric Jacobian),
//! angles wrapped into one turn after every step, from several starts: the
//! current angles, then the lattice poses (outer joints at thirds of a
//! turn, middle joints at quarters: 1,296 per connection type, their end
//! frames computed once) whose end lies nearest the target. The first
//! start that converges to a pose free of self-collision (and of the
//! floor, when given) is the answer. Numerical, not analytic: the
//! meta-module's six axes do not intersect in a wrist, so no closed form
//! separates position from orientation.
//!
//! # The seed's
//! [`SeedVariant`] rebuilds what 002 §5.3.1 tried on KDL's Newton–Raphson
//! solver (pseudo-inverse of the Jacobian, full steps): the plain solver,
//! angles wrapped, the step capped, one joint per step, weighted joints,
//! steps rounded to π/6, and the seed's final choice (capped steps and a
//! tolerance of 0.05 instead of 0.01).

use std::f64::consts::{FRAC_PI_6, PI};

use nalgebra::{Isometry3, Matrix6, SVD, Vector6};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::chain::MetaModule;
use crate::collision;
use crate::module::{CELL, MIDDLE_STEP, OUTER_STEP, wrapped};

/// Six joint angles of a meta-module, in chain order.
pub type MetaJoints = [f64; 6];

/// How far a pose's end is from a target: metres, radians.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Miss {
    pub position: f64,
    pub angle: f64,
}

impl Miss {
    fn between(end: &Isometry3<f64>, target: &Isometry3<f64>) -> Miss {
        Miss {
            position: (target.translation.vector - end.translation.vector).norm(),
            angle: end.rotation.angle_to(&target.rotation),
        }
    }
}

/// The twist taking `end` to `target` (position m, rotation vector rad),
/// in the frame both are given in.
fn twist(end: &Isometry3<f64>, target: &Isometry3<f64>) -> Vector6<f64> {
    let dp = target.translation.vector - end.translation.vector;
    let dr = (target.rotation * end.rotation.inverse()).scaled_axis();
    Vector6::new(dp.x, dp.y, dp.z, dr.x, dr.y, dr.z)
}

/// The geometric Jacobian at `q`: column `j` is joint `j`'s effect on the
/// end's velocity (linear, then angular), all in the first module's `M0`.
fn jacobian(meta: &MetaModule, q: MetaJoints) -> (Matrix6<f64>, Isometry3<f64>) {
    let end = meta.end(q);
    let p = end.translation.vector;
    let mut j = Matrix6::zeros();
    for (k, axis) in meta.joint_axes(q).iter().enumerate() {
        let w = axis.direction.into_inner();
        let v = w.cross(&(p - axis.point.coords));
        j.fixed_view_mut::<3, 1>(0, k).copy_from(&v);
        j.fixed_view_mut::<3, 1>(3, k).copy_from(&w);
    }
    (j, end)
}

/// What a solve gives: the angles, how close their end came, and what it
/// took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solution {
    pub q: MetaJoints,
    pub miss: Miss,
    pub iterations: u32,
    /// Starts tried (1: the first converged).
    pub starts: u32,
}

/// The farthest the end connector gets from the first module's `M0`: the
/// four cube centres are a cell apart in a row of joints through them, and
/// the end connector half a cell from the last.
pub const REACH: f64 = 3.5 * CELL;

/// Why no angles were returned.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum IkError {
    #[error("no start converged: the nearest end missed by {:.4} m and {:.4} rad", .0.position, .0.angle)]
    Unreachable(Miss),
    #[error("every solution found runs the meta-module into itself or the floor")]
    Colliding,
}

/// Our solver for one connection type.
#[derive(Debug, Clone)]
pub struct Solver {
    meta: MetaModule,
    /// The lattice poses free of self-collision, with their end frames.
    lattice: Vec<(MetaJoints, Isometry3<f64>)>,
    /// Converged when the end is this close (m, and rad).
    pub tolerance: f64,
    pub max_iterations: u32,
    /// Lattice starts tried after the current angles.
    pub restarts: usize,
    /// Random starts tried after those (drawn from the target's bits, so a
    /// solve is reproducible).
    pub random_restarts: usize,
    /// Reject solutions that run into the floor (the plane `z = 0` of this
    /// frame, in `M0`), besides self-collision.
    pub floor: Option<Isometry3<f64>>,
    /// Check solutions against the module's shape (on by default).
    pub check_collisions: bool,
}

/// Every lattice pose of a meta-module: outer joints at thirds of a turn,
/// middle joints at quarters (3⁴ · 4² = 1,296).
#[must_use]
pub fn lattice() -> Vec<MetaJoints> {
    let outer = [0.0, OUTER_STEP, -OUTER_STEP];
    let middle = [0.0, MIDDLE_STEP, PI, -MIDDLE_STEP];
    let mut out = Vec::with_capacity(1296);
    for a in outer {
        for b in middle {
            for c in outer {
                for d in outer {
                    for e in middle {
                        for f in outer {
                            out.push([a, b, c, d, e, f]);
                        }
                    }
                }
            }
        }
    }
    out
}

impl Solver {
    #[must_use]
    pub fn new(meta: MetaModule) -> Self {
        // A start that collides mostly converges to a pose that does.
        let lattice = lattice()
            .into_iter()
            .filter(|q| collision::self_collision(&meta.poses(*q)).is_none())
            .map(|q| (q, meta.end(q)))
            .collect();
        Solver {
            meta,
            lattice,
            tolerance: 1e-8,
            max_iterations: 100,
            restarts: 24,
            random_restarts: 64,
            floor: None,
            check_collisions: true,
        }
    }

    #[must_use]
    pub fn meta(&self) -> MetaModule {
        self.meta
    }

    /// Whether `q` is a pose the meta-module can take: free of
    /// self-collision and not below the floor.
    #[must_use]
    pub fn is_free(&self, q: MetaJoints) -> bool {
        let poses = self.meta.poses(q);
        collision::self_collision(&poses).is_none()
            && self
                .floor
                .is_none_or(|f| collision::below(&poses, &f) <= collision::TOLERANCE)
    }

    /// Angles placing the end connector on `target`, starting from
    /// `current`.
    ///
    /// # Errors
    /// [`IkError::Unreachable`] when no start converges,
    /// [`IkError::Colliding`] when every converged pose collides.
    pub fn solve(&self, target: &Isometry3<f64>, current: MetaJoints) -> Result<Solution, IkError> {
        let mut nearest = Miss {
            position: f64::INFINITY,
            angle: f64::INFINITY,
        };
        if target.translation.vector.norm() > REACH + self.tolerance {
            return Err(IkError::Unreachable(Miss {
                position: target.translation.vector.norm() - REACH,
                angle: 0.0,
            }));
        }
        let mut collided = false;
        // The current angles go first only when their end is nearer the
        // target than every lattice pose's: a lattice pose on the target
        // needs no step at all.
        let lattice = self.nearest_lattice(target);
        let end = self.meta.end(current);
        let closeness = (end.translation.vector - target.translation.vector).norm() / CELL
            + end.rotation.angle_to(&target.rotation);
        let current_first = lattice
            .first()
            .is_none_or(|(nearest, _)| closeness <= *nearest);
        let lattice = lattice.into_iter().map(|(_, q)| q);
        let (first, later) = if current_first {
            (Some(current), None)
        } else {
            (None, Some(current))
        };
        let starts = first
            .into_iter()
            .chain(lattice)
            .chain(later)
            .chain(random_starts(target, self.random_restarts));
        for (tried, start) in (1..).zip(starts) {
            let (q, miss, iterations) = self.descend(target, start);
            if miss.position < self.tolerance && miss.angle < self.tolerance {
                if !self.check_collisions || self.is_free(q) {
                    return Ok(Solution {
                        q,
                        miss,
                        iterations,
                        starts: tried,
                    });
                }
                collided = true;
            } else if miss.position + miss.angle * CELL < nearest.position + nearest.angle * CELL {
                nearest = miss;
            }
        }
        Err(if collided {
            IkError::Colliding
        } else {
            IkError::Unreachable(nearest)
        })
    }

    /// The lattice poses whose end lies nearest `target`, nearest first,
    /// with their closeness: the nearest by position, then ranked by
    /// position and orientation (a cell counting as a radian).
    fn nearest_lattice(&self, target: &Isometry3<f64>) -> Vec<(f64, MetaJoints)> {
        let p = target.translation.vector;
        let mut near: Vec<(f64, usize)> = self
            .lattice
            .iter()
            .enumerate()
            .map(|(i, (_, end))| ((end.translation.vector - p).norm_squared(), i))
            .collect();
        let k = (self.restarts * 2).min(near.len());
        if k > 0 {
            near.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0));
        }
        near.truncate(k);
        for (distance, i) in &mut near {
            let end = &self.lattice[*i].1;
            *distance = distance.sqrt() / CELL + end.rotation.angle_to(&target.rotation);
        }
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.truncate(self.restarts);
        near.into_iter()
            .map(|(closeness, i)| (closeness, self.lattice[i].0))
            .collect()
    }

    /// Damped least squares from `q` until the end is within tolerance, or
    /// the iterations run out.
    fn descend(&self, target: &Isometry3<f64>, mut q: MetaJoints) -> (MetaJoints, Miss, u32) {
        // Metres in cells, so that position and angle weigh alike.
        let scale = Vector6::new(1.0 / CELL, 1.0 / CELL, 1.0 / CELL, 1.0, 1.0, 1.0);
        for iteration in 0..self.max_iterations {
            let (j, end) = jacobian(&self.meta, q);
            let miss = Miss::between(&end, target);
            if miss.position < self.tolerance && miss.angle < self.tolerance {
                return (q, miss, iteration);
            }
            let e = twist(&end, target).component_mul(&scale);
            let j = Matrix6::from_diagonal(&scale) * j;
            // Damping grows with the error: far off, short careful steps;
            // near, Gauss–Newton's quadratic convergence.
            let lambda = 1e-6 + 0.05 * e.norm().min(1.0);
            let jjt = j * j.transpose() + Matrix6::identity() * (lambda * lambda);
            let Some(step) = jjt.cholesky().map(|c| j.transpose() * c.solve(&e)) else {
                break;
            };
            let largest = step.amax();
            let step = if largest > 0.5 {
                step * (0.5 / largest)
            } else {
                step
            };
            for k in 0..6 {
                q[k] += step[k];
            }
            q = wrapped(q);
        }
        let miss = Miss::between(&self.meta.end(q), target);
        (q, miss, self.max_iterations)
    }
}

/// `count` starts spread over the joint space, drawn from `target`'s bits.
fn random_starts(target: &Isometry3<f64>, count: usize) -> impl Iterator<Item = MetaJoints> {
    let seed = target
        .translation
        .vector
        .iter()
        .chain(target.rotation.coords.iter())
        .fold(0_u64, |h, x| h.rotate_left(7) ^ x.to_bits());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(move |_| std::array::from_fn(|_| rng.random_range(-PI..PI)))
}

/// The modifications 002 §5.3.1 tried on KDL's Newton–Raphson solver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeedVariant {
    /// KDL's `ChainIkSolverPos_NR` with `ChainIkSolverVel_pinv`: full
    /// pseudo-inverse steps, tolerance 0.01.
    Kdl,
    /// Angles recomputed modulo 2π into (−π, π] at each step.
    Wrapped,
    /// A step whose largest angle exceeds 0.05 rad scaled down to it.
    Capped,
    /// Only the largest angle of each step applied.
    OneJoint,
    /// Steps weighted down along the chain (1, 5/6, … 1/6).
    Weighted,
    /// Steps rounded to multiples of π/6.
    RoundedPi6,
    /// The seed's final choice: capped steps and a tolerance of 0.05.
    Final,
}

impl SeedVariant {
    pub const ALL: [SeedVariant; 7] = [
        SeedVariant::Kdl,
        SeedVariant::Wrapped,
        SeedVariant::Capped,
        SeedVariant::OneJoint,
        SeedVariant::Weighted,
        SeedVariant::RoundedPi6,
        SeedVariant::Final,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SeedVariant::Kdl => "KDL Newton-Raphson (tolerance 0.01)",
            SeedVariant::Wrapped => "+ angles wrapped to (-pi, pi]",
            SeedVariant::Capped => "+ step capped at 0.05 rad",
            SeedVariant::OneJoint => "+ largest joint only",
            SeedVariant::Weighted => "+ weights decreasing along the chain",
            SeedVariant::RoundedPi6 => "+ steps rounded to pi/6",
            SeedVariant::Final => "seed's final: capped + tolerance 0.05",
        }
    }

    /// The tolerance on each component of the remaining twist (m, rad), as
    /// KDL compares it.
    #[must_use]
    pub fn tolerance(self) -> f64 {
        if self == SeedVariant::Final {
            0.05
        } else {
            0.01
        }
    }

    /// Solves from `start` as the variant would: `Some(angles)` when the
    /// twist left is within tolerance in at most `max_iterations` steps.
    #[must_use]
    pub fn solve(
        self,
        meta: &MetaModule,
        target: &Isometry3<f64>,
        start: MetaJoints,
        max_iterations: u32,
    ) -> Option<MetaJoints> {
        let mut q = start;
        for _ in 0..max_iterations {
            let (j, end) = jacobian(meta, q);
            let e = twist(&end, target);
            if e.amax() < self.tolerance() {
                return Some(q);
            }
            let svd = SVD::new(j, true, true);
            let mut step = svd.solve(&e, 1e-9).ok()?;
            match self {
                SeedVariant::Kdl | SeedVariant::Wrapped => {}
                SeedVariant::Capped | SeedVariant::Final => {
                    let largest = step.amax();
                    if largest > 0.05 {
                        step *= 0.05 / largest;
                    }
                }
                SeedVariant::OneJoint => {
                    let k = step.iamax();
                    let kept = step[k];
                    step = Vector6::zeros();
                    step[k] = kept;
                }
                SeedVariant::Weighted => {
                    for k in 0..6 {
                        step[k] *= (6 - k) as f64 / 6.0;
                    }
                }
                SeedVariant::RoundedPi6 => {
                    step = step.map(|s| (s / FRAC_PI_6).round() * FRAC_PI_6);
                    if step.amax() == 0.0 {
                        return None;
                    }
                }
            }
            for k in 0..6 {
                q[k] += step[k];
            }
            if self == SeedVariant::Wrapped {
                q = wrapped(q);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::ConnectionType;

    #[test]
    fn the_jacobian_is_the_derivative_of_the_end_frame() {
        let meta = MetaModule::new(ConnectionType::ShearZ);
        let q = [0.4, -1.0, 2.2, 0.1, 0.8, -2.5];
        let (j, end) = jacobian(&meta, q);
        let h = 1e-6;
        for k in 0..6 {
            let mut moved = q;
            moved[k] += h;
            let numeric = twist(&end, &meta.end(moved)) / h;
            assert!((numeric - j.column(k)).norm() < 1e-5, "joint {k}");
        }
    }

    #[test]
    fn random_reachable_targets_are_solved_exactly_and_freely() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut next = || rng.random_range(-PI..PI);
        for t in ConnectionType::ALL {
            let solver = Solver::new(MetaModule::new(t));
            let mut solved = 0;
            let mut tried = 0;
            while tried < 10 {
                let q: MetaJoints = std::array::from_fn(|_| next());
                if !solver.is_free(q) {
                    continue;
                }
                tried += 1;
                let target = solver.meta().end(q);
                match solver.solve(&target, [0.0; 6]) {
                    Ok(s) => {
                        let miss = Miss::between(&solver.meta().end(s.q), &target);
                        assert!(miss.position < 1e-8 && miss.angle < 1e-8, "{miss:?}");
                        assert!(solver.is_free(s.q));
                        assert!(s.q.iter().all(|a| a.abs() <= PI));
                        solved += 1;
                    }
                    Err(e) => panic!("{t}: target of {q:?} not solved: {e}"),
                }
            }
            assert_eq!(solved, 10);
        }
    }

    #[test]
    fn a_target_out_of_reach_is_refused_with_how_near_it_came() {
        let solver = Solver::new(MetaModule::new(ConnectionType::Parallel));
        let far = Isometry3::translation(1.0, 0.0, 0.0);
        match solver.solve(&far, [0.0; 6]) {
            Err(IkError::Unreachable(miss)) => assert!(miss.position > 0.5, "{miss:?}"),
            other => panic!("{other:?}"),
        }
    }
}
