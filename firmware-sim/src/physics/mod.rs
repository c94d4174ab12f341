//! The physics of one robot behind one seam, [`Physics`], so that engines
//! can be swapped per host.
//!
//! Every module has two rigid parts, the body and the handle. Parts joined by
//! a connection (or the two parts of a passive module) form one rigid
//! cluster, a single body carrying the boxes of all its parts at their
//! connector poses: a fixed joint with zero compliance, no drift and no
//! solver cost. Clusters are linked by the servo hinges. [`Topology`] works
//! this out once for every engine; an engine only turns it into its own
//! world.
//!
//! Connecting or disconnecting modules rebuilds the world from the current
//! part poses and velocities; an engine holds no other state.
//!
//! # Layout
//! - [`Physics`]: what the simulation asks of an engine.
//! - [`Engine`]: the engines there are, by name; [`Engine::build`].
//! - [`Topology`]: rigid clusters, their boxes and the hinges between them.
//! - [`rapier`]: the rapier3d engine, the general reference.
//! - [`articulated`]: the `yamor-dynamics` engine, reduced coordinates
//!   specialised for robots of one-hinge modules.

pub mod articulated;
pub mod rapier;

use crate::geometry::{self, BODY_HALF, HANDLE_CENTRE, HANDLE_HALF, Part};
use rapier3d::math::{Pose, Vector};
use std::fmt;
use std::str::FromStr;
use yamor_core::Connection;

/// Index of a part: `module_index * 2` for the body, `+ 1` for the handle.
pub type PartIndex = usize;

#[must_use]
pub fn part_index(module_index: usize, part: Part) -> PartIndex {
    module_index * 2 + usize::from(part == Part::Handle)
}

/// Pose and velocity of one part, the currency of rebuilds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartState {
    pub pose: Pose,
    pub linvel: Vector,
    pub angvel: Vector,
}

impl PartState {
    #[must_use]
    pub fn at_rest(pose: Pose) -> Self {
        Self {
            pose,
            linvel: Vector::ZERO,
            angvel: Vector::ZERO,
        }
    }
}

/// The motor law of one servo for one step: a PD controller,
/// torque = stiffness·(angle* − angle) + damping·(velocity* − velocity),
/// saturated at `max_torque`. Engines integrate it implicitly, which stays
/// stable with stiff gains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoCommand {
    pub angle: f32,
    pub velocity: f32,
    /// N·m/rad.
    pub stiffness: f32,
    /// N·m·s/rad.
    pub damping: f32,
    /// Largest torque the motor may apply (N·m).
    pub max_torque: f32,
}

/// Physical settings of a world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhysicsSettings {
    /// One step (s); the firmware ticks once per step.
    pub dt: f32,
    pub ground_friction: f32,
    /// Solver substeps per step.
    pub substeps: usize,
}

/// What the simulation asks of a physics engine. Parts are indexed by
/// [`part_index`]; modules by their index in the morphology.
pub trait Physics: Send {
    /// Advances the world by one step.
    fn step(&mut self);

    /// World pose of a part and the velocity of its origin.
    fn part_state(&self, p: PartIndex) -> PartState;

    fn part_count(&self) -> usize;

    /// Drives the servo of module `m` until the next command; a module
    /// whose two parts are one rigid cluster ignores it.
    fn command_servo(&mut self, m: usize, command: ServoCommand);

    fn set_ground_friction(&mut self, mu: f32);

    /// Lowest point of the robot (m).
    fn lowest_point(&self) -> f32;

    /// Total kinetic energy (J): a cheap health check for an exploding world.
    fn kinetic_energy(&self) -> f32;

    fn part_states(&self) -> Vec<PartState> {
        (0..self.part_count()).map(|p| self.part_state(p)).collect()
    }

    /// Servo angle (rad) and angular velocity (rad/s) of module `m`,
    /// measured between its body and handle whether or not they have a joint.
    fn servo_reading(&self, m: usize) -> (f32, f32) {
        let body = self.part_state(part_index(m, Part::Body));
        let handle = self.part_state(part_index(m, Part::Handle));
        let relative = body.pose.rotation.inverse() * handle.pose.rotation;
        let angle = 2.0 * relative.y.atan2(relative.w);
        let angle =
            (angle + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI;
        let axis = body.pose.rotation * Vector::Y;
        (angle, (handle.angvel - body.angvel).dot(axis))
    }
}

/// The physics engines a simulation can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Engine {
    /// rapier3d with reduced-coordinate hinges: general, the reference.
    Rapier,
    /// yamor-dynamics: trees of modules in reduced coordinates, box-on-ground
    /// contacts. The default: several times faster than rapier and closer
    /// to MuJoCo (docs/benchmarks.md).
    #[default]
    Articulated,
}

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Rapier, Engine::Articulated];

    /// Solver substeps per firmware tick that keep this engine's walks
    /// within a few percent of a twice finer step (docs/benchmarks.md).
    #[must_use]
    pub fn default_substeps(self) -> usize {
        match self {
            Engine::Rapier => 4,
            Engine::Articulated => 2,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Engine::Rapier => "rapier",
            Engine::Articulated => "articulated",
        }
    }

    /// Builds a world of this engine for `topology`.
    pub fn build(
        self,
        settings: &PhysicsSettings,
        topology: &Topology,
    ) -> Result<Box<dyn Physics>, BuildError> {
        Ok(match self {
            Engine::Rapier => Box::new(rapier::RapierWorld::build(settings, topology)),
            Engine::Articulated => {
                Box::new(articulated::ArticulatedWorld::build(settings, topology)?)
            }
        })
    }
}

/// Why an engine cannot build a robot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    #[error("the robot is not a valid model: {0}")]
    Model(yamor_dynamics::ModelError),
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An engine name nobody knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown physics engine {0:?} (known: {known})", known = Engine::ALL.map(Engine::name).join(", "))]
pub struct UnknownEngine(pub String);

impl FromStr for Engine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Engine::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEngine(s.to_owned()))
    }
}

/// One box of a cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartBox {
    pub part: PartIndex,
    /// Centre and orientation in the cluster frame.
    pub pose: Pose,
    pub half: [f32; 3],
    pub mass: f32,
}

/// A rigid cluster: its frame's initial state and its boxes.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// The frame is the pose of the cluster's first part.
    pub state: PartState,
    pub boxes: Vec<PartBox>,
}

/// The servo hinge of one module between two clusters. Frames are in the
/// frame of their cluster; the hinge axis is their x axis and the joint
/// angle is 0 where they coincide.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hinge {
    pub module: usize,
    pub body_cluster: usize,
    pub handle_cluster: usize,
    pub frame_on_body: Pose,
    pub frame_on_handle: Pose,
}

/// The rigid clusters of a robot and the hinges between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub clusters: Vec<Cluster>,
    /// Cluster of every part.
    pub cluster_of: Vec<usize>,
    /// Pose of every part in its cluster's frame.
    pub part_offset: Vec<Pose>,
    /// The hinge of every module whose parts are in different clusters.
    pub hinges: Vec<Option<Hinge>>,
}

impl Topology {
    /// `passive[m]` tells whether module `m` has no servo; `connections`
    /// are (part, part) pairs; `parts` the state of every part.
    #[must_use]
    pub fn new(
        passive: &[bool],
        connections: &[(PartIndex, PartIndex)],
        parts: &[PartState],
    ) -> Self {
        let mut union = UnionFind::new(parts.len());
        for (m, &is_passive) in passive.iter().enumerate() {
            if is_passive {
                union.union(part_index(m, Part::Body), part_index(m, Part::Handle));
            }
        }
        for &(a, b) in connections {
            union.union(a, b);
        }

        let mut cluster_of_root = vec![usize::MAX; parts.len()];
        let mut clusters: Vec<Cluster> = Vec::new();
        let mut cluster_of = Vec::with_capacity(parts.len());
        let mut part_offset = Vec::with_capacity(parts.len());
        for (p, state) in parts.iter().enumerate() {
            let root = union.find(p);
            if cluster_of_root[root] == usize::MAX {
                // The first part of a cluster defines its frame; its velocity
                // is the cluster's (parts of one cluster move rigidly).
                cluster_of_root[root] = clusters.len();
                clusters.push(Cluster {
                    state: *state,
                    boxes: Vec::new(),
                });
            }
            let c = cluster_of_root[root];
            let offset = clusters[c].state.pose.inverse() * state.pose;
            let (half, centre, mass) = if p.is_multiple_of(2) {
                (BODY_HALF, Vector::ZERO, geometry::BODY_MASS)
            } else {
                (
                    HANDLE_HALF,
                    Vector::new(HANDLE_CENTRE, 0.0, 0.0),
                    geometry::HANDLE_MASS,
                )
            };
            clusters[c].boxes.push(PartBox {
                part: p,
                pose: offset * Pose::from_translation(centre),
                half,
                mass,
            });
            cluster_of.push(c);
            part_offset.push(offset);
        }

        let hinge_on_body = Pose::from_translation(Vector::new(BODY_HALF[0], 0.0, 0.0))
            * geometry::hinge_joint_frame();
        let hinges = (0..passive.len())
            .map(|m| {
                let (b, h) = (part_index(m, Part::Body), part_index(m, Part::Handle));
                (cluster_of[b] != cluster_of[h]).then(|| Hinge {
                    module: m,
                    body_cluster: cluster_of[b],
                    handle_cluster: cluster_of[h],
                    frame_on_body: part_offset[b] * hinge_on_body,
                    frame_on_handle: part_offset[h] * geometry::hinge_joint_frame(),
                })
            })
            .collect();
        Self {
            clusters,
            cluster_of,
            part_offset,
            hinges,
        }
    }
}

/// Lowest z of the boxes of a module placed with the given part poses.
#[must_use]
pub fn lowest_corner(body: Pose, handle: Pose) -> f32 {
    geometry::box_corners(Vector::ZERO, BODY_HALF)
        .map(|c| (body * c).z)
        .chain(
            geometry::box_corners(Vector::new(HANDLE_CENTRE, 0.0, 0.0), HANDLE_HALF)
                .map(|c| (handle * c).z),
        )
        .fold(f32::INFINITY, f32::min)
}

/// The (part, part) pairs a list of connections glues together.
pub fn connected_parts(
    connections: &[Connection],
    index_of: impl Fn(u32) -> usize,
) -> Vec<(PartIndex, PartIndex)> {
    connections
        .iter()
        .map(|c| {
            (
                part_index(index_of(c.id_from), Part::of(c.conn_from)),
                part_index(index_of(c.id_to), Part::of(c.conn_to)),
            )
        })
        .collect()
}

struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    /// Joins two sets, keeping the smaller root so cluster frames are stable.
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        let (keep, drop) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[drop] = keep;
    }
}
