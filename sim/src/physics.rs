//! The rapier3d world of one robot.
//!
//! Every module has two rigid parts, the body and the handle. Parts joined by
//! a connection (or the two parts of a passive module) form one rigid
//! cluster: a single rapier body carrying the colliders of all its parts at
//! their connector poses. That is a fixed joint with zero compliance, no
//! drift and no solver cost; a chain of fixed impulse joints would sag under
//! load and cost solver iterations. Clusters are linked by the servo hinges,
//! revolute joints with a force-based velocity motor.
//!
//! Connecting or disconnecting modules rebuilds the clusters from the current
//! part poses and velocities; this pipeline holds no other world state.

use crate::geometry::{self, BODY_HALF, HANDLE_CENTRE, HANDLE_HALF, Part};
use rapier3d::prelude::*;
use std::collections::HashMap;
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

/// The motor law of one servo for one step: an implicit PD controller,
/// torque = stiffness·(angle* − angle) + damping·(velocity* − velocity),
/// saturated at `max_torque`. rapier solves it inside the constraint solver
/// (force-based model), which stays stable with stiff gains.
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

const ROBOT_GROUP: Group = Group::GROUP_1;
const GROUND_GROUP: Group = Group::GROUP_2;

/// Physical settings of a world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhysicsSettings {
    pub dt: f32,
    pub ground_friction: f32,
    pub solver_iterations: usize,
}

pub struct PhysicsWorld {
    world: rapier3d::pipeline::PhysicsWorld,
    ground: ColliderHandle,
    /// Rigid body of every part.
    part_body: Vec<RigidBodyHandle>,
    /// Pose of every part relative to its cluster's body.
    part_offset: Vec<Pose>,
    /// Servo joint of every module, when its two parts are in different clusters.
    servos: Vec<Option<ServoJoint>>,
}

impl PhysicsWorld {
    /// Builds the world. `passive[m]` tells whether module `m` has no servo;
    /// `connections` are given as (part, part) pairs.
    #[must_use]
    pub fn build(
        settings: &PhysicsSettings,
        passive: &[bool],
        connections: &[(PartIndex, PartIndex)],
        parts: &[PartState],
    ) -> Self {
        let mut world = rapier3d::pipeline::PhysicsWorld::new();
        world.gravity = Vector::new(0.0, 0.0, -9.81);
        world.integration_parameters.dt = settings.dt;
        world.integration_parameters.num_solver_iterations = settings.solver_iterations;
        let ground = world.colliders.insert(
            ColliderBuilder::cuboid(500.0, 500.0, 0.5)
                .translation(Vector::new(0.0, 0.0, -0.5))
                .friction(settings.ground_friction)
                .friction_combine_rule(CoefficientCombineRule::Multiply)
                .collision_groups(InteractionGroups::new(
                    GROUND_GROUP,
                    ROBOT_GROUP,
                    InteractionTestMode::And,
                )),
        );

        let mut clusters = UnionFind::new(parts.len());
        for (m, &is_passive) in passive.iter().enumerate() {
            if is_passive {
                clusters.union(part_index(m, Part::Body), part_index(m, Part::Handle));
            }
        }
        for &(a, b) in connections {
            clusters.union(a, b);
        }

        let mut cluster_body: HashMap<usize, (RigidBodyHandle, Pose)> = HashMap::new();
        let mut part_body = Vec::with_capacity(parts.len());
        let mut part_offset = Vec::with_capacity(parts.len());
        for (p, state) in parts.iter().enumerate() {
            let root = clusters.find(p);
            let (body, origin) = *cluster_body.entry(root).or_insert_with(|| {
                // The first part of a cluster defines its frame; its velocity
                // is the cluster's (parts of one cluster move rigidly).
                let body = RigidBodyBuilder::dynamic()
                    .pose(state.pose)
                    .linvel(state.linvel)
                    .angvel(state.angvel)
                    .can_sleep(false)
                    .build();
                (world.bodies.insert(body), state.pose)
            });
            let offset = origin.inverse() * state.pose;
            let (half, centre, mass) = if p % 2 == 0 {
                (BODY_HALF, Vector::ZERO, geometry::BODY_MASS)
            } else {
                (
                    HANDLE_HALF,
                    Vector::new(HANDLE_CENTRE, 0.0, 0.0),
                    geometry::HANDLE_MASS,
                )
            };
            let collider = ColliderBuilder::cuboid(half[0], half[1], half[2])
                .position(offset * Pose::from_translation(centre))
                .mass(mass)
                .friction(1.0)
                .friction_combine_rule(CoefficientCombineRule::Multiply)
                .collision_groups(InteractionGroups::new(
                    ROBOT_GROUP,
                    ROBOT_GROUP | GROUND_GROUP,
                    InteractionTestMode::And,
                ));
            world
                .colliders
                .insert_with_parent(collider, body, &mut world.bodies);
            part_body.push(body);
            part_offset.push(offset);
        }

        let hinge_on_body = Pose::from_translation(Vector::new(BODY_HALF[0], 0.0, 0.0))
            * geometry::hinge_joint_frame();
        let mut servos = Vec::with_capacity(passive.len());
        for m in 0..passive.len() {
            let (b, h) = (part_index(m, Part::Body), part_index(m, Part::Handle));
            if part_body[b] == part_body[h] {
                servos.push(None);
                continue;
            }
            let joint = GenericJointBuilder::new(JointAxesMask::LOCKED_REVOLUTE_AXES)
                .local_frame1(part_offset[b] * hinge_on_body)
                .local_frame2(part_offset[h] * geometry::hinge_joint_frame())
                .limits(
                    JointAxis::AngX,
                    [-geometry::HANDLE_RANGE, geometry::HANDLE_RANGE],
                )
                .motor_model(JointAxis::AngX, MotorModel::ForceBased)
                .motor_max_force(JointAxis::AngX, 0.0)
                .contacts_enabled(false)
                .build();
            // Reduced coordinates keep a tree of hinges exact and let the
            // motors converge; only a hinge that closes a kinematic loop
            // falls back to an impulse joint.
            let servo = match world
                .multibody_joints
                .insert(part_body[b], part_body[h], joint, true)
            {
                Some(handle) => ServoJoint::Multibody(handle),
                None => ServoJoint::Impulse(world.impulse_joints.insert(
                    part_body[b],
                    part_body[h],
                    joint,
                    true,
                )),
            };
            servos.push(Some(servo));
        }
        Self {
            world,
            ground,
            part_body,
            part_offset,
            servos,
        }
    }

    pub fn step(&mut self) {
        self.world.step();
    }

    #[must_use]
    pub fn dt(&self) -> f32 {
        self.world.integration_parameters.dt
    }

    /// World pose and velocity of a part.
    #[must_use]
    pub fn part_state(&self, p: PartIndex) -> PartState {
        let body = &self.world.bodies[self.part_body[p]];
        let pose = *body.position() * self.part_offset[p];
        let angvel = body.angvel();
        // Velocity of the part's origin, not the body's centre of mass.
        let linvel = body.linvel() + angvel.cross(pose.translation - body.center_of_mass());
        PartState {
            pose,
            linvel,
            angvel,
        }
    }

    #[must_use]
    pub fn part_states(&self) -> Vec<PartState> {
        (0..self.part_body.len())
            .map(|p| self.part_state(p))
            .collect()
    }

    /// Servo angle (rad) and angular velocity (rad/s) of module `m`, measured
    /// between its body and handle whether or not they have a joint.
    #[must_use]
    pub fn servo_reading(&self, m: usize) -> (f32, f32) {
        let body = self.part_state(part_index(m, Part::Body));
        let handle = self.part_state(part_index(m, Part::Handle));
        let relative = body.pose.rotation.inverse() * handle.pose.rotation;
        let angle = 2.0 * relative.y.atan2(relative.w);
        let angle =
            (angle + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI;
        let axis = body.pose.rotation * Vector::Y;
        (angle, (handle.angvel - body.angvel).dot(axis))
    }

    /// Drives the servo of module `m`; a module without a joint ignores it.
    pub fn command_servo(&mut self, m: usize, command: ServoCommand) {
        let joint = match self.servos[m] {
            Some(ServoJoint::Multibody(handle)) => self
                .world
                .multibody_joints
                .get_mut(handle)
                .and_then(|(multibody, link)| multibody.link_mut(link))
                .map(|link| &mut link.joint.data),
            Some(ServoJoint::Impulse(handle)) => self
                .world
                .impulse_joints
                .get_mut(handle, false)
                .map(|joint| &mut joint.data),
            None => None,
        };
        if let Some(joint) = joint {
            joint
                .set_motor(
                    JointAxis::AngX,
                    command.angle,
                    command.velocity,
                    command.stiffness,
                    command.damping,
                )
                .set_motor_max_force(JointAxis::AngX, command.max_torque);
        }
    }

    pub fn set_ground_friction(&mut self, mu: f32) {
        if let Some(ground) = self.world.colliders.get_mut(self.ground) {
            ground.set_friction(mu);
        }
    }

    /// Lowest point of the robot (m), from every collider's bounding box.
    #[must_use]
    pub fn lowest_point(&self) -> f32 {
        self.world
            .colliders
            .iter()
            .filter(|(h, _)| *h != self.ground)
            .map(|(_, c)| c.compute_aabb().mins.z)
            .fold(f32::INFINITY, f32::min)
    }

    /// Total kinetic energy (J): a cheap health check for an exploding world.
    #[must_use]
    pub fn kinetic_energy(&self) -> f32 {
        self.world
            .bodies
            .iter()
            .map(|(_, b)| b.kinetic_energy())
            .sum()
    }

    #[must_use]
    pub fn body_count(&self) -> usize {
        self.world.bodies.len()
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

#[derive(Debug, Clone, Copy)]
enum ServoJoint {
    Multibody(MultibodyJointHandle),
    Impulse(ImpulseJointHandle),
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
