//! The rapier3d engine: one dynamic rigid body per cluster, the servo
//! hinges as reduced-coordinate (multibody) revolute joints with a
//! force-based PD motor. Reduced coordinates keep a tree of hinges exact and
//! let the motors converge; only a hinge that closes a kinematic loop falls
//! back to an impulse joint.

use super::{PartIndex, PartState, Physics, PhysicsSettings, ServoCommand, Topology};
use crate::geometry;
use rapier3d::prelude::*;

const ROBOT_GROUP: Group = Group::GROUP_1;
const GROUND_GROUP: Group = Group::GROUP_2;

pub struct RapierWorld {
    world: rapier3d::pipeline::PhysicsWorld,
    ground: ColliderHandle,
    /// Rigid body of every part.
    part_body: Vec<RigidBodyHandle>,
    /// Pose of every part relative to its cluster's body.
    part_offset: Vec<Pose>,
    /// Servo joint of every module, when its two parts are in different clusters.
    servos: Vec<Option<ServoJoint>>,
}

#[derive(Debug, Clone, Copy)]
enum ServoJoint {
    Multibody(MultibodyJointHandle),
    Impulse(ImpulseJointHandle),
}

impl RapierWorld {
    #[must_use]
    pub fn build(settings: &PhysicsSettings, topology: &Topology) -> Self {
        let mut world = rapier3d::pipeline::PhysicsWorld::new();
        world.gravity = Vector::new(0.0, 0.0, -9.81);
        world.integration_parameters.dt = settings.dt;
        world.integration_parameters.num_solver_iterations = settings.substeps;
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

        let bodies: Vec<RigidBodyHandle> = topology
            .clusters
            .iter()
            .map(|cluster| {
                world.bodies.insert(
                    RigidBodyBuilder::dynamic()
                        .pose(cluster.state.pose)
                        .linvel(cluster.state.linvel)
                        .angvel(cluster.state.angvel)
                        .can_sleep(false)
                        .build(),
                )
            })
            .collect();
        let mut boxes: Vec<_> = topology
            .clusters
            .iter()
            .zip(&bodies)
            .flat_map(|(cluster, &body)| cluster.boxes.iter().map(move |b| (b, body)))
            .collect();
        boxes.sort_by_key(|(b, _)| b.part);
        for (part_box, body) in boxes {
            let [hx, hy, hz] = part_box.half;
            let collider = ColliderBuilder::cuboid(hx, hy, hz)
                .position(part_box.pose)
                .mass(part_box.mass)
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
        }

        let servos = topology
            .hinges
            .iter()
            .map(|hinge| {
                let hinge = hinge.as_ref()?;
                let (b, h) = (bodies[hinge.body_cluster], bodies[hinge.handle_cluster]);
                let joint = GenericJointBuilder::new(JointAxesMask::LOCKED_REVOLUTE_AXES)
                    .local_frame1(hinge.frame_on_body)
                    .local_frame2(hinge.frame_on_handle)
                    .limits(
                        JointAxis::AngX,
                        [-geometry::HANDLE_RANGE, geometry::HANDLE_RANGE],
                    )
                    .motor_model(JointAxis::AngX, MotorModel::ForceBased)
                    .motor_max_force(JointAxis::AngX, 0.0)
                    .contacts_enabled(false)
                    .build();
                Some(match world.multibody_joints.insert(b, h, joint, true) {
                    Some(handle) => ServoJoint::Multibody(handle),
                    None => ServoJoint::Impulse(world.impulse_joints.insert(b, h, joint, true)),
                })
            })
            .collect();
        Self {
            world,
            ground,
            part_body: topology.cluster_of.iter().map(|&c| bodies[c]).collect(),
            part_offset: topology.part_offset.clone(),
            servos,
        }
    }
}

impl Physics for RapierWorld {
    fn step(&mut self) {
        self.world.step();
    }

    fn part_state(&self, p: PartIndex) -> PartState {
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

    fn part_count(&self) -> usize {
        self.part_body.len()
    }

    fn command_servo(&mut self, m: usize, command: ServoCommand) {
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

    fn set_ground_friction(&mut self, mu: f32) {
        if let Some(ground) = self.world.colliders.get_mut(self.ground) {
            ground.set_friction(mu);
        }
    }

    fn lowest_point(&self) -> f32 {
        self.world
            .colliders
            .iter()
            .filter(|(h, _)| *h != self.ground)
            .map(|(_, c)| c.compute_aabb().mins.z)
            .fold(f32::INFINITY, f32::min)
    }

    fn kinetic_energy(&self) -> f32 {
        self.world
            .bodies
            .iter()
            .map(|(_, b)| b.kinetic_energy())
            .sum()
    }
}
