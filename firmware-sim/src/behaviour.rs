//! What a simulated walk did besides how far it went: the behaviour
//! descriptors a map of gaits files it under (`core::evaluation::descriptors`).
//!
//! The robot's long axis is the principal axis of its modules' ground-plane
//! positions as assembled (the walk's first pose), signed towards the first
//! module of the robot file that lies off the centre, and carried in the
//! central module's frame: so every walk of one robot, from any start,
//! measures its heading against the same body direction. Modules ahead of
//! the centre along that axis are the front group, those behind the back
//! group (a quadruped's front and hind legs); a module touches the ground
//! when its lowest corner is within [`CONTACT_M`] of it.

use rapier3d::math::Vector;
use yamor_core::evaluation::descriptors::{self, heading_deg};
use yamor_core::evaluation::{Descriptors, Sample, Walk};

use crate::geometry::Part;
use crate::physics::{lowest_corner, part_index};
use crate::sim::Simulation;

/// A module's lowest corner this close to the ground touches it (m): above
/// the engines' resting penetration and jitter, below a lifted foot.
const CONTACT_M: f32 = 0.005;

/// Contacts are read this often (robot seconds): a duty factor needs no
/// finer clock, and reading every module's corners every step would cost
/// a share of the physics.
const CONTACT_EVERY_S: f64 = 0.01;

/// Modules closer to the centre than this along the long axis belong to
/// neither group (m).
const GROUP_MARGIN_M: f32 = 0.02;

/// The robot's long axis as it stands in a simulation (see the module
/// docs).
pub(crate) struct LongAxis {
    /// Each module's ground-plane offset from the central module (m).
    offsets: Vec<Vector>,
    /// The axis in the world, in the ground plane.
    axis: Vector,
    /// The axis in the central module's body frame.
    pub(crate) in_body: Vector,
}

impl LongAxis {
    pub(crate) fn of(sim: &Simulation) -> Self {
        let physics = sim.physics();
        let centre_index = sim
            .module_index(sim.morphology().central)
            .expect("the central module always exists");
        let body = |m: usize| physics.part_state(part_index(m, Part::Body)).pose;
        let centre = body(centre_index);
        let offsets: Vec<Vector> = (0..sim.modules().len())
            .map(|m| {
                let d = body(m).translation - centre.translation;
                Vector::new(d.x, d.y, 0.0)
            })
            .collect();
        let mut axis = principal_axis(&offsets);
        if let Some(first) = offsets.iter().find(|d| d.dot(axis).abs() > GROUP_MARGIN_M)
            && first.dot(axis) < 0.0
        {
            axis = -axis;
        }
        LongAxis {
            in_body: centre.rotation.inverse() * axis,
            offsets,
            axis,
        }
    }
}

/// One walk's behaviour, fed the simulation after every step.
#[derive(Debug, Clone)]
pub(crate) struct BehaviourMeter {
    /// The long axis in the central module's body frame.
    long_axis: Vector,
    front: Vec<usize>,
    back: Vec<usize>,
    every: u64,
    /// The long axis in the ground plane when the window started.
    heading_from: Option<(f64, f64)>,
    front_touching: u64,
    back_touching: u64,
    reads: u64,
    height_sum: f64,
}

impl BehaviourMeter {
    /// The meter of a walk whose robot stands in `sim` as assembled.
    pub(crate) fn new(sim: &Simulation) -> Self {
        let modules = sim.modules().len();
        let LongAxis {
            offsets,
            axis,
            in_body,
        } = LongAxis::of(sim);
        let along = |m: usize| offsets[m].dot(axis);
        BehaviourMeter {
            long_axis: in_body,
            front: (0..modules)
                .filter(|&m| along(m) > GROUP_MARGIN_M)
                .collect(),
            back: (0..modules)
                .filter(|&m| along(m) < -GROUP_MARGIN_M)
                .collect(),
            every: ((CONTACT_EVERY_S / sim.settings().dt).round() as u64).max(1),
            heading_from: None,
            front_touching: 0,
            back_touching: 0,
            reads: 0,
            height_sum: 0.0,
        }
    }

    /// Reads the robot after a step; `window` is the measured window's
    /// start once the walk is in it.
    pub(crate) fn observe(&mut self, sim: &Simulation, window: Option<Sample>) {
        if window.is_none() || !sim.ticks().is_multiple_of(self.every) {
            return;
        }
        let physics = sim.physics();
        if self.heading_from.is_none() {
            let centre = sim
                .module_index(sim.morphology().central)
                .expect("the central module always exists");
            let rotation = physics
                .part_state(part_index(centre, Part::Body))
                .pose
                .rotation;
            let axis = rotation * self.long_axis;
            let (x, y) = (f64::from(axis.x), f64::from(axis.y));
            let norm = x.hypot(y);
            // An axis standing upright has no heading; 0 rather than noise.
            self.heading_from = Some(if norm > 1e-6 {
                (x / norm, y / norm)
            } else {
                (1.0, 0.0)
            });
        }
        let touching = |m: &usize| {
            let body = physics.part_state(part_index(*m, Part::Body)).pose;
            let handle = physics.part_state(part_index(*m, Part::Handle)).pose;
            lowest_corner(body, handle) < CONTACT_M
        };
        self.front_touching += self.front.iter().filter(|m| touching(m)).count() as u64;
        self.back_touching += self.back.iter().filter(|m| touching(m)).count() as u64;
        self.height_sum += sim.robot_sample().z;
        self.reads += 1;
    }

    /// The descriptors of the finished `walk`.
    pub(crate) fn finish(self, walk: &Walk) -> Descriptors {
        let mut found = Descriptors::new();
        let Some((ax, ay)) = self.heading_from else {
            return found;
        };
        let travel = (walk.end.x - walk.start.x, walk.end.y - walk.start.y);
        found.insert(
            descriptors::HEADING.to_owned(),
            heading_deg((ax, ay), travel),
        );
        let reads = self.reads.max(1) as f64;
        found.insert(descriptors::HEIGHT.to_owned(), self.height_sum / reads);
        let duty = |touching: u64, group: &[usize]| {
            (!group.is_empty()).then(|| touching as f64 / (reads * group.len() as f64))
        };
        if let Some(front) = duty(self.front_touching, &self.front) {
            found.insert(descriptors::FRONT_DUTY.to_owned(), front);
        }
        if let Some(back) = duty(self.back_touching, &self.back) {
            found.insert(descriptors::BACK_DUTY.to_owned(), back);
        }
        found
    }
}

/// The unit direction along which ground-plane `points` spread most (the
/// x axis for a single point or a round cloud).
fn principal_axis(points: &[Vector]) -> Vector {
    let n = points.len().max(1) as f32;
    let mean = points.iter().fold(Vector::ZERO, |a, p| a + *p) / n;
    let (mut xx, mut xy, mut yy) = (0.0f32, 0.0f32, 0.0f32);
    for p in points {
        let d = *p - mean;
        xx += d.x * d.x;
        xy += d.x * d.y;
        yy += d.y * d.y;
    }
    // The major eigenvector of [[xx, xy], [xy, yy]] is at this angle.
    let angle = 0.5 * (2.0 * xy).atan2(xx - yy);
    Vector::new(angle.cos(), angle.sin(), 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heading_is_against_the_body_whatever_way_the_body_faces() {
        // Forward, left, backwards, right of the axis.
        for (travel, expected) in [
            ((2.0, 0.0), 0.0),
            ((0.0, 1.0), 90.0),
            ((-1.0, 0.0), 180.0),
            ((0.0, -3.0), -90.0),
        ] {
            assert!((heading_deg((1.0, 0.0), travel) - expected).abs() < 1e-9);
        }
        // The body and its walk turned together by any angle: same heading.
        for turn in [0.3f64, 1.9, -2.7] {
            let rotate = |(x, y): (f64, f64)| {
                (
                    x * turn.cos() - y * turn.sin(),
                    x * turn.sin() + y * turn.cos(),
                )
            };
            let (axis, travel) = ((1.0, 0.0), (0.5, 0.5));
            let turned = heading_deg(rotate(axis), rotate(travel));
            assert!((turned - 45.0).abs() < 1e-9, "{turn}: {turned}");
        }
    }

    #[test]
    fn the_principal_axis_follows_the_long_side() {
        let along_y: Vec<Vector> = (0..5)
            .map(|i| Vector::new(0.01 * (i % 2) as f32, 0.1 * i as f32, 0.0))
            .collect();
        let axis = principal_axis(&along_y);
        assert!(axis.y.abs() > 0.99, "{axis:?}");
        let diagonal: Vec<Vector> = (0..5)
            .map(|i| Vector::new(0.1 * i as f32, 0.1 * i as f32, 0.0))
            .collect();
        let axis = principal_axis(&diagonal);
        assert!((axis.x.abs() - axis.y.abs()).abs() < 1e-4, "{axis:?}");
    }
}
