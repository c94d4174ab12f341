//! Roombot modules in the articulated engine (`yamor-dynamics`): every
//! submodule a rigid body (submodules locked to each other by a [`Tree`]'s
//! links one body), every joint a continuous hinge, every connector lock a
//! weld that comes and goes while the world runs.
//!
//! What is modelled, and where the figures come from:
//! - the shape: each submodule's mass is spread over its true shape (half
//!   of a cube ∩ sphere, integrated on a grid) and it touches the ground
//!   with points of its surface (the face discs' rims, the cut's rim and the
//!   rounded corners), not with a box;
//! - the servos: position controlled (002 §1.1.3) with the torque of the
//!   seed's Webots worlds (`setMaxForce(12)`, 002 App. A);
//! - the module's mass, 1.4 kg, and the joints' speed, a third of a turn
//!   per second, are not in the seeds: they are the published hardware's
//!   order of magnitude, settings rather than facts;
//! - locks: a connector locked onto the floor is a weld (six stiff rows)
//!   between the two frames, so an inchworm step that hands the base to
//!   the other end keeps the same world and its joint angles; a lock onto
//!   another module of the robot makes the two submodules one body and
//!   rebuilds the robot where it stands (at rest), a joint that then
//!   closes a loop becoming a loop hinge of the engine;
//! - not modelled: the modules' bodies colliding with each other (the
//!   engine's bodies touch only the ground). [`crate::enactment`] measures
//!   overlaps instead, against the same shape as the kinematics.

use std::f64::consts::TAU;
use std::sync::OnceLock;

use nalgebra::{Isometry3, Matrix3, Point3, Rotation3, SymmetricEigen, UnitQuaternion, Vector3};
use yamor_dynamics::{
    Anchor, BodySpec, BodyState, Hinge, LoopHinge, Model, ModelError, Servo, Settings, SolidBox,
    Weld, WeldId, World,
};

use crate::chain::{Tree, joined};
use crate::collision;
use crate::module::{
    CELL, Connector, HALF, Joints, ModulePose, RADIUS, home_joint_axes, home_middle_frames,
};

/// Mass of one module (kg): four submodules of a quarter each.
pub const MODULE_MASS: f64 = 1.4;
/// Largest servo torque (N·m): the seed's worlds (`setMaxForce(12)`).
pub const MAX_TORQUE: f64 = 12.0;
/// Fastest a joint turns under [`Robot::drive`] (rad/s).
pub const MAX_SPEED: f64 = TAU / 3.0;
/// Position servo gains: a module lifting another stretched out (about
/// 7 N·m) sags by about 0.02 rad.
pub const STIFFNESS: f64 = 400.0;
pub const DAMPING: f64 = 8.0;

/// The physical settings of a Roombot world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RobotSettings {
    /// One control step (s).
    pub dt: f64,
    /// Engine substeps per control step.
    pub substeps: usize,
    pub friction: f64,
}

impl Default for RobotSettings {
    fn default() -> Self {
        RobotSettings {
            dt: 1.0 / 240.0,
            substeps: 2,
            friction: 0.8,
        }
    }
}

/// Why a robot cannot be built or locked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PhysicsError {
    #[error("{expected} modules need {expected} sets of joint angles, not {given}")]
    Angles { expected: usize, given: usize },
    #[error("the robot is not a valid model: {0}")]
    Model(#[from] ModelError),
    #[error("module {0} does not exist")]
    UnknownModule(usize),
    #[error(
        "the connectors do not face each other: {:.1} mm apart, {:.1}° from facing (at most 10 mm and 5.7°)", apart * 1e3, facing.to_degrees()
    )]
    Apart { apart: f64, facing: f64 },
}

/// Where a module's joint lives in the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Joint {
    /// The hinge of this body; `sign` is −1 when the tree enters the joint
    /// from its far side, which turns it the other way.
    Tree { body: usize, sign: f64 },
    /// A hinge that closes a loop (a lock between two modules of the
    /// robot): loop hinge `k` of the engine, its angle read wrapped.
    Loop { k: usize, sign: f64 },
    /// Both sides in one body.
    Rigid,
}

/// A lock of a robot, as [`Robot::lock_to_floor`] or
/// [`Robot::lock_modules`] returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockId(u64);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lock {
    /// A weld of the engine onto a floor connector's frame.
    Floor {
        module: usize,
        connector: Connector,
        anchor: Isometry3<f64>,
        weld: WeldId,
    },
    /// Two submodules made one body (the robot is rebuilt).
    Modules {
        a: (usize, Connector),
        b: (usize, Connector),
    },
}

impl Lock {
    /// The two submodules a lock between modules makes one body.
    fn union(&self) -> Option<Union> {
        match *self {
            Lock::Modules { a, b } => Some(((a.0, a.1.submodule), (b.0, b.1.submodule))),
            Lock::Floor { .. } => None,
        }
    }
}

/// How far two connectors may be apart and still lock onto each other (m,
/// and rad from facing each other).
pub const MODULE_LOCK_REACH: (f64, f64) = (0.01, 0.1);

/// A robot of Roombot modules in the engine.
pub struct Robot {
    world: World,
    settings: RobotSettings,
    /// The submodule the first tree is held by (module 0's), grown first.
    root: (usize, u8),
    /// For every module and submodule: its body and its `M` frame in the
    /// body's frame.
    places: Vec<[(usize, Isometry3<f64>); 4]>,
    joints: Vec<[Joint; 3]>,
    locks: Vec<(LockId, Lock)>,
    next_lock: u64,
}

/// Two submodules (module, submodule) locked into one body.
type Union = ((usize, u8), (usize, u8));

/// A world assembled: the engine and where every submodule and joint is.
struct Assembly {
    world: World,
    places: Vec<[(usize, Isometry3<f64>); 4]>,
    joints: Vec<[Joint; 3]>,
}

/// A submodule's mass spread as a box with the same centre and inertia,
/// and the points it touches the ground with, in its `M` frame.
struct Submodule {
    mass_box: SolidBox,
    contact_points: Vec<Vector3<f64>>,
}

/// Whether a point of an `M` frame lies in its submodule: the `+++` half
/// of the cube ∩ sphere.
fn in_half(p: &Vector3<f64>) -> bool {
    p.amax() <= HALF && p.norm() <= RADIUS && p.x + p.y + p.z >= 0.0
}

fn submodule() -> &'static Submodule {
    static SUBMODULE: OnceLock<Submodule> = OnceLock::new();
    SUBMODULE.get_or_init(|| {
        // Mass properties by a midpoint grid over the cube: exact to a
        // fraction of a percent at 48 cells a side.
        const N: usize = 48;
        let h = CELL / N as f64;
        let mut inside = Vec::new();
        for i in 0..N {
            for j in 0..N {
                for k in 0..N {
                    let p = Vector3::new(i as f64 + 0.5, j as f64 + 0.5, k as f64 + 0.5) * h
                        - Vector3::repeat(HALF);
                    if in_half(&p) {
                        inside.push(p);
                    }
                }
            }
        }
        let mass = MODULE_MASS / 4.0;
        let dm = mass / inside.len() as f64;
        let com = inside.iter().sum::<Vector3<f64>>() / inside.len() as f64;
        let mut inertia = Matrix3::zeros();
        for p in &inside {
            let d = p - com;
            inertia += dm * (Matrix3::identity() * d.norm_squared() - d * d.transpose());
        }
        // The box with these principal moments: sides² from
        // I₁ = m(b² + c²)/12 and its two cyclic companions.
        let eigen = SymmetricEigen::new(inertia);
        let s = eigen.eigenvalues * (12.0 / mass);
        let side = |a: usize, b: usize, c: usize| ((s[b] + s[c] - s[a]) / 2.0).max(1e-8).sqrt();
        let half = Vector3::new(side(0, 1, 2), side(1, 2, 0), side(2, 0, 1)) / 2.0;
        let mut axes = eigen.eigenvectors;
        if axes.determinant() < 0.0 {
            axes.set_column(2, &(-axes.column(2)));
        }
        let rotation = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix(&axes));
        let mass_box = SolidBox {
            pose: Isometry3::from_parts(com.into(), rotation),
            half,
            mass,
        };
        Submodule {
            mass_box,
            contact_points: contact_points(),
        }
    })
}

/// The points of a half that may touch the ground: eight on each face
/// disc's rim, eight on the cut's rim, and the sphere at the cube's corners
/// and edge midpoints (the rounded parts), each kept if it lies on the half.
fn contact_points() -> Vec<Vector3<f64>> {
    let on_half = |p: Vector3<f64>| p.x + p.y + p.z >= -1e-12;
    let mut points = collision::rims(8);
    for x in [-1.0, 0.0, 1.0] {
        for y in [-1.0, 0.0, 1.0] {
            for z in [-1.0f64, 0.0, 1.0] {
                let d = Vector3::new(x, y, z);
                let zeros = d.iter().filter(|c| **c == 0.0).count();
                // Corners and edge midpoints only: face centres are the discs.
                if zeros <= 1 && on_half(d) && d.norm() > 0.0 {
                    points.push(d.normalize() * RADIUS);
                }
            }
        }
    }
    points
}

/// Joint `j`'s axis as a hinge frame (x along the axis) in submodule `j`'s
/// `M` frame, and the same frame in submodule `j + 1`'s at angle 0.
fn hinge_frames(j: usize) -> [Isometry3<f64>; 2] {
    static FRAMES: OnceLock<[[Isometry3<f64>; 2]; 3]> = OnceLock::new();
    FRAMES.get_or_init(|| {
        let middles = home_middle_frames();
        let axes = home_joint_axes();
        std::array::from_fn(|j| {
            let carried = axes[j].transformed(&middles[j].inverse());
            let x = carried.direction.into_inner();
            let helper = if x.x.abs() < 0.9 {
                Vector3::x()
            } else {
                Vector3::y()
            };
            let y = x.cross(&helper).normalize();
            let z = x.cross(&y);
            let rotation = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[x, y, z]));
            let on_near = Isometry3::from_parts(
                carried.point.coords.into(),
                UnitQuaternion::from_rotation_matrix(&rotation),
            );
            let on_far = middles[j + 1].inverse() * middles[j] * on_near;
            [on_near, on_far]
        })
    })[j]
}

/// The engine's world of modules posed at `poses` (world frames), the
/// submodules that `unions` name locked into one body each, every joint a
/// hinge of the tree grown from `root` (a module and submodule), a joint
/// that closes a loop a loop hinge; joint angles `q`, unwrapped, at rest.
fn assemble(
    poses: &[ModulePose],
    unions: &[Union],
    root: (usize, u8),
    q: &[Joints],
    settings: &RobotSettings,
) -> Result<Assembly, PhysicsError> {
    let modules = poses.len();
    let node = |m: usize, s: u8| m * 4 + usize::from(s);
    let mut parent: Vec<usize> = (0..modules * 4).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &((ma, sa), (mb, sb)) in unions {
        let a = find(&mut parent, node(ma, sa));
        let b = find(&mut parent, node(mb, sb));
        parent[a.max(b)] = a.min(b);
    }
    let cluster: Vec<usize> = (0..modules * 4).map(|n| find(&mut parent, n)).collect();
    let middle = |n: usize| poses[n / 4].middles[n % 4];
    let offset = |n: usize| middle(cluster[n]).inverse() * middle(n);

    // Bodies breadth-first from the root's cluster along the joints.
    let mut body_of = vec![usize::MAX; modules * 4];
    let mut order: Vec<usize> = Vec::new();
    let mut hinges: Vec<Option<Hinge>> = Vec::new();
    let mut joints = vec![[Joint::Rigid; 3]; modules];
    let mut assigned = vec![[false; 3]; modules];
    // Joints met between two clusters already placed: loops, by (m, j).
    let mut closing: Vec<(usize, usize)> = Vec::new();
    let mut visit = |start: usize,
                     body_of: &mut Vec<usize>,
                     order: &mut Vec<usize>,
                     hinges: &mut Vec<Option<Hinge>>| {
        body_of[start] = order.len();
        order.push(start);
        hinges.push(None);
        let mut next = order.len() - 1;
        while next < order.len() {
            let c = order[next];
            next += 1;
            for m in 0..modules {
                for j in 0..3 {
                    let (near, far) = (cluster[node(m, j as u8)], cluster[node(m, j as u8 + 1)]);
                    if assigned[m][j] || near == far || (near != c && far != c) {
                        continue;
                    }
                    assigned[m][j] = true;
                    let (other, sign) = if near == c { (far, 1.0) } else { (near, -1.0) };
                    if body_of[other] != usize::MAX {
                        closing.push((m, j));
                        continue;
                    }
                    let [on_near, on_far] = hinge_frames(j);
                    let near_frame = offset(node(m, j as u8)) * on_near;
                    let far_frame = offset(node(m, j as u8 + 1)) * on_far;
                    let (frame_in_parent, frame_in_child) = if sign > 0.0 {
                        (near_frame, far_frame)
                    } else {
                        (far_frame, near_frame)
                    };
                    body_of[other] = order.len();
                    joints[m][j] = Joint::Tree {
                        body: order.len(),
                        sign,
                    };
                    order.push(other);
                    hinges.push(Some(Hinge {
                        parent: body_of[c],
                        frame_in_parent,
                        frame_in_child,
                        limits: [f64::NEG_INFINITY, f64::INFINITY],
                    }));
                }
            }
        }
    };
    // The tree's root first, so that turning a joint in the engine moves
    // what the chain of transforms moves.
    let root = cluster[node(root.0, root.1)];
    visit(root, &mut body_of, &mut order, &mut hinges);
    for n in 0..modules * 4 {
        if body_of[cluster[n]] == usize::MAX {
            visit(cluster[n], &mut body_of, &mut order, &mut hinges);
        }
    }
    let shape = submodule();
    let mut specs: Vec<BodySpec> = hinges
        .iter()
        .map(|hinge| BodySpec {
            boxes: Vec::new(),
            hinge: *hinge,
            contact_points: Some(Vec::new()),
        })
        .collect();
    let mut places = vec![[(0, Isometry3::identity()); 4]; modules];
    for n in 0..modules * 4 {
        let b = body_of[cluster[n]];
        let offset = offset(n);
        places[n / 4][n % 4] = (b, offset);
        let mut mass_box = shape.mass_box;
        mass_box.pose = offset * mass_box.pose;
        specs[b].boxes.push(mass_box);
        specs[b].contact_points.as_mut().expect("set above").extend(
            shape
                .contact_points
                .iter()
                .map(|p| offset * Point3::from(*p))
                .map(|p| p.coords),
        );
    }
    let initial: Vec<BodyState> = order
        .iter()
        .map(|&c| BodyState {
            pose: middle(c),
            angvel: Vector3::zeros(),
            linvel: Vector3::zeros(),
        })
        .collect();
    let mut model = Model::new(specs)?;
    for (k, &(m, j)) in closing.iter().enumerate() {
        let [on_near, on_far] = hinge_frames(j);
        let (near, far) = (node(m, j as u8), node(m, j as u8 + 1));
        model = model.with_loop(LoopHinge {
            bodies: [body_of[cluster[near]], body_of[cluster[far]]],
            frames: [offset(near) * on_near, offset(far) * on_far],
            limits: [f64::NEG_INFINITY, f64::INFINITY],
        })?;
        joints[m][j] = Joint::Loop { k, sign: 1.0 };
    }
    let engine = Settings {
        dt: settings.dt / settings.substeps.max(1) as f64,
        friction: settings.friction,
        ..Settings::default()
    };
    let mut world = World::new(model, engine, &initial);
    // The engine read each angle wrapped from the poses; the joints turn
    // continuously, so give them the angles as given.
    for (m, module) in joints.iter().enumerate() {
        for (j, joint) in module.iter().enumerate() {
            if let Joint::Tree { body, sign } = *joint {
                world.set_hinge(body, sign * q[m][j]);
            }
        }
    }
    Ok(Assembly {
        world,
        places,
        joints,
    })
}

impl Robot {
    /// The modules of `tree` posed by `q` (one set of angles per module),
    /// at rest.
    pub fn build(
        tree: &Tree,
        q: &[Joints],
        settings: &RobotSettings,
    ) -> Result<Self, PhysicsError> {
        Ok(Robot::build_forest(&[(tree.clone(), q.to_vec())], settings)?.0)
    }

    /// Several trees of modules in one world, each posed by its angles
    /// (its modules numbered after the previous tree's), at rest. Every
    /// link of every tree is a lock between two modules (their ids are
    /// returned, tree by tree, link by link), so modules can be traded
    /// between them.
    pub fn build_forest(
        trees: &[(Tree, Vec<Joints>)],
        settings: &RobotSettings,
    ) -> Result<(Self, Vec<LockId>), PhysicsError> {
        let mut poses = Vec::new();
        let mut q = Vec::new();
        let mut links = Vec::new();
        for (tree, angles) in trees {
            let modules = tree.links.len() + 1;
            if angles.len() != modules {
                return Err(PhysicsError::Angles {
                    expected: modules,
                    given: angles.len(),
                });
            }
            let first = poses.len();
            for (k, l) in tree.links.iter().enumerate() {
                links.push(Lock::Modules {
                    a: (first + k + 1, l.connector),
                    b: (first + l.parent, l.parent_connector),
                });
            }
            poses.extend(tree.poses(angles));
            q.extend_from_slice(angles);
        }
        let root = (0, trees.first().map_or(0, |(t, _)| t.root_submodule));
        let unions: Vec<Union> = links.iter().filter_map(Lock::union).collect();
        let Assembly {
            world,
            places,
            joints,
        } = assemble(&poses, &unions, root, &q, settings)?;
        let mut robot = Robot {
            world,
            settings: *settings,
            root,
            places,
            joints,
            locks: Vec::new(),
            next_lock: 0,
        };
        let ids = links.into_iter().map(|l| robot.add_lock(l)).collect();
        Ok((robot, ids))
    }

    #[must_use]
    pub fn module_count(&self) -> usize {
        self.places.len()
    }

    /// Every module's submodule frames in the world, as the engine has them.
    #[must_use]
    pub fn module_poses(&self) -> Vec<ModulePose> {
        self.places
            .iter()
            .map(|module| ModulePose {
                middles: module.map(|(b, offset)| self.world.body_state(b).pose * offset),
            })
            .collect()
    }

    /// A connector's frame in the world.
    #[must_use]
    pub fn connector(&self, module: usize, c: Connector) -> Isometry3<f64> {
        let (b, offset) = self.places[module][usize::from(c.submodule)];
        self.world.body_state(b).pose * offset * c.in_middle_frame()
    }

    /// Joint `j` of `module`: angle (rad) and rate (rad/s). Unwrapped,
    /// except for a joint that closes a loop (a lock between two modules),
    /// read in (−π, π].
    #[must_use]
    pub fn joint(&self, module: usize, j: usize) -> (f64, f64) {
        match self.joints[module][j] {
            Joint::Tree { body, sign } => {
                let (q, u) = self.world.hinge(body);
                (sign * q, sign * u)
            }
            Joint::Loop { k, sign } => {
                let (q, u) = self.world.loop_hinge(k);
                (sign * q, sign * u)
            }
            Joint::Rigid => (0.0, 0.0),
        }
    }

    /// Every module's joint angles.
    #[must_use]
    pub fn angles(&self) -> Vec<Joints> {
        (0..self.module_count())
            .map(|m| std::array::from_fn(|j| self.joint(m, j).0))
            .collect()
    }

    /// Puts joint `j` of `module` at `angle` at once, the rest of the
    /// robot following the tree: a start pose, or a kinematic check.
    pub fn set_joint(&mut self, module: usize, j: usize, angle: f64) {
        if let Joint::Tree { body, sign } = self.joints[module][j] {
            self.world.set_hinge(body, sign * angle);
        }
    }

    /// Drives joint `j` of `module` towards `angle` at `velocity` with the
    /// position servo, until the next command.
    pub fn command(&mut self, module: usize, j: usize, angle: f64, velocity: f64) {
        let servo = |angle: f64, sign: f64| Servo {
            angle: sign * angle,
            velocity: sign * velocity,
            stiffness: STIFFNESS,
            damping: DAMPING,
            max_torque: MAX_TORQUE,
        };
        match self.joints[module][j] {
            Joint::Tree { body, sign } => self.world.set_servo(body, servo(angle, sign)),
            Joint::Loop { k, sign } => {
                // Its angle is read wrapped: aim at the goal's twin nearest it.
                let (now, _) = self.joint(module, j);
                let goal = now + crate::module::wrap(angle - now);
                self.world.set_loop_servo(k, servo(goal, sign));
            }
            Joint::Rigid => {}
        }
    }

    /// Locks `module`'s connector onto the floor connector whose frame is
    /// `floor` (origin on the floor, Z up), in whichever of its four
    /// quarter-turns is nearest the connector's orientation now: a weld of
    /// the engine, added while the world runs.
    pub fn lock_to_floor(
        &mut self,
        module: usize,
        c: Connector,
        floor: &Isometry3<f64>,
    ) -> Result<LockId, PhysicsError> {
        if module >= self.module_count() {
            return Err(PhysicsError::UnknownModule(module));
        }
        let now = self.connector(module, c);
        let anchor = (0..4u8)
            .map(|k| joined(floor, k))
            .min_by(|a, b| {
                let da = a.rotation.angle_to(&now.rotation);
                let db = b.rotation.angle_to(&now.rotation);
                da.total_cmp(&db)
            })
            .expect("four turns");
        let weld = self.weld_to_floor(module, c, anchor)?;
        Ok(self.add_lock(Lock::Floor {
            module,
            connector: c,
            anchor,
            weld,
        }))
    }

    fn weld_to_floor(
        &mut self,
        module: usize,
        c: Connector,
        anchor: Isometry3<f64>,
    ) -> Result<WeldId, PhysicsError> {
        let (body, offset) = self.places[module][usize::from(c.submodule)];
        Ok(self.world.weld(Weld {
            body,
            frame: offset * c.in_middle_frame(),
            anchor: Anchor::Ground(anchor),
        })?)
    }

    fn add_lock(&mut self, lock: Lock) -> LockId {
        let id = LockId(self.next_lock);
        self.next_lock += 1;
        self.locks.push((id, lock));
        id
    }

    /// Locks connector `c` of `module` onto connector `onto` of `other`,
    /// which must face it (within [`MODULE_LOCK_REACH`]). The two
    /// submodules become one body: the robot is rebuilt where it stands,
    /// at rest, and a joint that now closes a loop becomes a loop hinge of
    /// the engine (its angle read wrapped from then on).
    pub fn lock_modules(
        &mut self,
        module: usize,
        c: Connector,
        other: usize,
        onto: Connector,
    ) -> Result<LockId, PhysicsError> {
        for m in [module, other] {
            if m >= self.module_count() {
                return Err(PhysicsError::UnknownModule(m));
            }
        }
        let (a, b) = (self.connector(module, c), self.connector(other, onto));
        let apart = (a.translation.vector - b.translation.vector).norm();
        let facing = (a.rotation * Vector3::z()).angle(&(-(b.rotation * Vector3::z())));
        if (module, c.submodule) == (other, onto.submodule)
            || apart > MODULE_LOCK_REACH.0
            || facing > MODULE_LOCK_REACH.1
        {
            return Err(PhysicsError::Apart { apart, facing });
        }
        let id = self.add_lock(Lock::Modules {
            a: (module, c),
            b: (other, onto),
        });
        self.rebuild()?;
        Ok(id)
    }

    /// Unlocks a lock; false if it was not locked.
    pub fn unlock(&mut self, lock: LockId) -> Result<bool, PhysicsError> {
        let Some(at) = self.locks.iter().position(|(id, _)| *id == lock) else {
            return Ok(false);
        };
        match self.locks.remove(at).1 {
            Lock::Floor { weld, .. } => {
                self.world.release(weld);
            }
            Lock::Modules { .. } => self.rebuild()?,
        }
        Ok(true)
    }

    /// The robot assembled again where it stands (at rest), with the links
    /// of its tree and its locks between modules; its floor locks welded
    /// again.
    fn rebuild(&mut self) -> Result<(), PhysicsError> {
        let poses = self.module_poses();
        let q = self.angles();
        let unions: Vec<Union> = self.locks.iter().filter_map(|(_, l)| l.union()).collect();
        let Assembly {
            world,
            places,
            joints,
        } = assemble(&poses, &unions, self.root, &q, &self.settings)?;
        self.world = world;
        self.places = places;
        self.joints = joints;
        let floors: Vec<(usize, usize, Connector, Isometry3<f64>)> = self
            .locks
            .iter()
            .enumerate()
            .filter_map(|(i, (_, l))| match *l {
                Lock::Floor {
                    module,
                    connector,
                    anchor,
                    ..
                } => Some((i, module, connector, anchor)),
                Lock::Modules { .. } => None,
            })
            .collect();
        for (i, module, connector, anchor) in floors {
            let weld = self.weld_to_floor(module, connector, anchor)?;
            if let Lock::Floor { weld: w, .. } = &mut self.locks[i].1 {
                *w = weld;
            }
        }
        Ok(())
    }

    /// How far a lock gives: the distance (m) and angle (rad) between the
    /// connector and what it is locked onto.
    #[must_use]
    pub fn lock_gap(&self, lock: LockId) -> Option<(f64, f64)> {
        let gap = |x: Isometry3<f64>, y: Isometry3<f64>| {
            (
                (x.translation.vector - y.translation.vector).norm(),
                x.rotation.angle_to(&y.rotation),
            )
        };
        match self.locks.iter().find(|(id, _)| *id == lock)?.1 {
            Lock::Floor { weld, .. } => {
                let [anchor, held] = self.world.weld_frames(weld)?;
                Some(gap(anchor, held))
            }
            Lock::Modules { a, b } => {
                let facing = joined(&self.connector(b.0, b.1), 0);
                let here = self.connector(a.0, a.1);
                Some((
                    (here.translation.vector - facing.translation.vector).norm(),
                    0.0,
                ))
            }
        }
    }

    /// How far the locks give at worst (m): every lock's gap.
    #[must_use]
    pub fn worst_lock_gap(&self) -> f64 {
        self.locks
            .iter()
            .filter_map(|(id, _)| self.lock_gap(*id))
            .map(|(d, _)| d)
            .fold(0.0, f64::max)
    }

    /// How many joints close a loop (one per lock between modules that
    /// closes one).
    #[must_use]
    pub fn closed_loops(&self) -> usize {
        self.joints
            .iter()
            .flatten()
            .filter(|j| matches!(j, Joint::Loop { .. }))
            .count()
    }

    /// How far the joints that close loops have come apart (m): the
    /// largest distance between a loop hinge's two frames.
    #[must_use]
    pub fn loop_gap(&self) -> f64 {
        let mut worst: f64 = 0.0;
        for (m, module) in self.joints.iter().enumerate() {
            for (j, joint) in module.iter().enumerate() {
                if let Joint::Loop { .. } = joint {
                    let [on_near, on_far] = hinge_frames(j);
                    let near = self.places[m][j];
                    let far = self.places[m][j + 1];
                    let a = self.world.body_state(near.0).pose * near.1 * on_near;
                    let b = self.world.body_state(far.0).pose * far.1 * on_far;
                    worst = worst.max((a.translation.vector - b.translation.vector).norm());
                }
            }
        }
        worst
    }

    /// Advances one control step.
    pub fn step(&mut self) {
        for _ in 0..self.settings.substeps.max(1) {
            self.world.step();
        }
    }

    #[must_use]
    pub fn kinetic_energy(&self) -> f64 {
        self.world.kinetic_energy()
    }

    /// Lowest point touching the ground (m).
    #[must_use]
    pub fn lowest_point(&self) -> f64 {
        self.world.lowest_point()
    }
}
