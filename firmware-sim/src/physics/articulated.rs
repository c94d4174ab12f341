//! The `yamor-dynamics` engine behind the seam: every tree of clusters
//! becomes a tree of bodies in reduced coordinates, rooted at its
//! lowest-numbered cluster, every servo one hinge angle, except a servo
//! that closes a kinematic loop, which becomes a loop hinge (constraints).

use std::f64::consts::PI;

use nalgebra::{Isometry3, Quaternion, Translation3, UnitQuaternion, Vector3};
use rapier3d::math::{Pose, Rotation, Vector};
use yamor_dynamics::{
    BodySpec, BodyState, Hinge, LoopHinge, Model, Servo, Settings, SolidBox, World,
};

use super::{BuildError, PartIndex, PartState, Physics, PhysicsSettings, ServoCommand, Topology};
use crate::geometry;

pub struct ArticulatedWorld {
    world: World,
    substeps: usize,
    /// Body of every part and the part's pose in the body frame.
    part_body: Vec<usize>,
    part_offset: Vec<Isometry3<f64>>,
    /// The joint every module's servo drives.
    servo_joint: Vec<Option<Joint>>,
    /// Every body's state after the last step: each is read for several
    /// parts (a module's servo reading takes both of its parts).
    states: Vec<BodyState>,
}

#[derive(Debug, Clone, Copy)]
enum Joint {
    /// The hinge of this body (a coordinate of its tree).
    Tree(usize),
    /// This loop hinge of the model.
    Loop(usize),
}

impl ArticulatedWorld {
    pub fn build(settings: &PhysicsSettings, topology: &Topology) -> Result<Self, BuildError> {
        let n = topology.clusters.len();
        // Bodies in breadth-first order from each tree's first cluster, so
        // that parents come before children.
        let mut body_of = vec![usize::MAX; n];
        let mut order = Vec::with_capacity(n);
        let mut hinge_to: Vec<Option<(usize, Hinge)>> = Vec::with_capacity(n);
        let mut used = vec![false; topology.hinges.len()];
        // Every servo turns its handle within the same range.
        let limits = [
            -f64::from(geometry::HANDLE_RANGE),
            f64::from(geometry::HANDLE_RANGE),
        ];
        // Modules whose hinge is met a second time: it closes a loop.
        let mut closing = Vec::new();
        for start in 0..n {
            if body_of[start] != usize::MAX {
                continue;
            }
            body_of[start] = order.len();
            order.push(start);
            hinge_to.push(None);
            let mut next = order.len() - 1;
            while next < order.len() {
                let c = order[next];
                next += 1;
                for (m, hinge) in topology.hinges.iter().enumerate() {
                    let Some(hinge) = hinge else { continue };
                    if used[m] || (hinge.body_cluster != c && hinge.handle_cluster != c) {
                        continue;
                    }
                    used[m] = true;
                    // The joint angle is the servo angle (handle relative to
                    // body); a hinge entered from its handle side turns both
                    // frames half a turn about y, which reverses the x axis.
                    let (other, frame_in_parent, frame_in_child) = if hinge.body_cluster == c {
                        (
                            hinge.handle_cluster,
                            isometry(hinge.frame_on_body),
                            isometry(hinge.frame_on_handle),
                        )
                    } else {
                        let flip = Isometry3::rotation(Vector3::y() * PI);
                        (
                            hinge.body_cluster,
                            isometry(hinge.frame_on_handle) * flip,
                            isometry(hinge.frame_on_body) * flip,
                        )
                    };
                    if body_of[other] != usize::MAX {
                        closing.push(m);
                        continue;
                    }
                    body_of[other] = order.len();
                    order.push(other);
                    hinge_to.push(Some((
                        m,
                        Hinge {
                            parent: body_of[c],
                            frame_in_parent,
                            frame_in_child,
                            limits,
                        },
                    )));
                }
            }
        }
        let mut servo_joint = vec![None; topology.hinges.len()];
        let mut specs = Vec::with_capacity(n);
        let mut initial = Vec::with_capacity(n);
        for (b, &c) in order.iter().enumerate() {
            let cluster = &topology.clusters[c];
            if let Some((m, _)) = hinge_to[b] {
                servo_joint[m] = Some(Joint::Tree(b));
            }
            specs.push(BodySpec {
                boxes: cluster
                    .boxes
                    .iter()
                    .map(|pb| SolidBox {
                        pose: isometry(pb.pose),
                        half: Vector3::new(
                            f64::from(pb.half[0]),
                            f64::from(pb.half[1]),
                            f64::from(pb.half[2]),
                        ),
                        mass: f64::from(pb.mass),
                    })
                    .collect(),
                hinge: hinge_to[b].map(|(_, h)| h),
                contact_points: None,
            });
            initial.push(BodyState {
                pose: isometry(cluster.state.pose),
                angvel: vector(cluster.state.angvel),
                linvel: vector(cluster.state.linvel),
            });
        }
        let mut model = Model::new(specs).map_err(BuildError::Model)?;
        for (k, &m) in closing.iter().enumerate() {
            let hinge = topology.hinges[m].expect("a closing hinge");
            model = model
                .with_loop(LoopHinge {
                    bodies: [body_of[hinge.body_cluster], body_of[hinge.handle_cluster]],
                    frames: [
                        isometry(hinge.frame_on_body),
                        isometry(hinge.frame_on_handle),
                    ],
                    limits,
                })
                .map_err(BuildError::Model)?;
            servo_joint[m] = Some(Joint::Loop(k));
        }
        let substeps = settings.substeps.max(1);
        let s = Settings {
            dt: f64::from(settings.dt) / substeps as f64,
            friction: f64::from(settings.ground_friction),
            ..Settings::default()
        };
        let mut world = World::new(model, s, &initial);
        let mut states = Vec::new();
        world.body_states(&mut states);
        Ok(Self {
            world,
            states,
            substeps,
            part_body: topology.cluster_of.iter().map(|&c| body_of[c]).collect(),
            part_offset: topology.part_offset.iter().map(|&p| isometry(p)).collect(),
            servo_joint,
        })
    }
}

impl Physics for ArticulatedWorld {
    fn step(&mut self) {
        for _ in 0..self.substeps {
            self.world.step();
        }
        self.world.body_states(&mut self.states);
    }

    fn part_state(&self, p: PartIndex) -> PartState {
        let body = self.states[self.part_body[p]];
        let pose = body.pose * self.part_offset[p];
        let arm = pose.translation.vector - body.pose.translation.vector;
        PartState {
            pose: pose_of(&pose),
            linvel: vector_of(&(body.linvel + body.angvel.cross(&arm))),
            angvel: vector_of(&body.angvel),
        }
    }

    fn part_count(&self) -> usize {
        self.part_body.len()
    }

    fn command_servo(&mut self, m: usize, command: ServoCommand) {
        let servo = Servo {
            angle: f64::from(command.angle),
            velocity: f64::from(command.velocity),
            stiffness: f64::from(command.stiffness),
            damping: f64::from(command.damping),
            max_torque: f64::from(command.max_torque),
        };
        match self.servo_joint.get(m).copied().flatten() {
            Some(Joint::Tree(body)) => self.world.set_servo(body, servo),
            Some(Joint::Loop(k)) => self.world.set_loop_servo(k, servo),
            None => {}
        }
    }

    fn set_ground_friction(&mut self, mu: f32) {
        self.world.set_friction(f64::from(mu));
    }

    fn lowest_point(&self) -> f32 {
        self.world.lowest_point() as f32
    }

    fn kinetic_energy(&self) -> f32 {
        self.world.kinetic_energy() as f32
    }
}

fn isometry(pose: Pose) -> Isometry3<f64> {
    let (t, r) = (pose.translation, pose.rotation);
    Isometry3::from_parts(
        Translation3::new(f64::from(t.x), f64::from(t.y), f64::from(t.z)),
        UnitQuaternion::new_normalize(Quaternion::new(
            f64::from(r.w),
            f64::from(r.x),
            f64::from(r.y),
            f64::from(r.z),
        )),
    )
}

fn vector(v: Vector) -> Vector3<f64> {
    Vector3::new(f64::from(v.x), f64::from(v.y), f64::from(v.z))
}

fn vector_of(v: &Vector3<f64>) -> Vector {
    Vector::new(v.x as f32, v.y as f32, v.z as f32)
}

fn pose_of(pose: &Isometry3<f64>) -> Pose {
    let q = pose.rotation.quaternion();
    Pose::from_parts(
        vector_of(&pose.translation.vector),
        Rotation::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32),
    )
}
