//! One world: a model's state and the time step.
//!
//! A step is semi-implicit Euler in generalized coordinates, one method of
//! [`World`] per stage, in the order [`World::step`] calls them:
//! 1. `kinematics`: body poses, hinge axes and spatial inertias about the
//!    root of each tree;
//! 2. `mass_matrix_and_bias`: the mass matrix by composite rigid bodies and
//!    the bias forces (gravity, Coriolis) by recursive Newton–Euler, both in
//!    world axes;
//! 3. `unconstrained_velocities`: the velocities the step would reach with
//!    no contact, limit or servo (Cholesky of the mass matrix);
//! 4. `collect_constraints`, `solve_constraints`: box corners within a small
//!    margin of the ground, hinges at their limits, the hinges that close
//!    loops and every servo's PD law (an implicit spring-damper whose
//!    impulse the torque limit bounds, so stiff gains stay stable) become
//!    constraint rows, solved by projected Gauss–Seidel with a friction disc
//!    and warm starts;
//! 5. `momentum_targets`, `integrate`, `restore_tree_momentum`: velocities,
//!    then positions, advance by the step, and each free tree's momentum is
//!    corrected to what the solved impulses give.

use nalgebra::{Isometry3, Matrix6, Point3, Translation3, UnitQuaternion, Vector3};

use crate::model::{Anchor, Model, ModelError, Weld};
use crate::spatial::{Spatial, apply, inertia_matrix};

/// Physical and solver settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// One step (s).
    pub dt: f64,
    pub gravity: Vector3<f64>,
    /// Ground friction coefficient (Coulomb, isotropic).
    pub friction: f64,
    /// Projected Gauss–Seidel sweeps per step. Eight, with warm starts:
    /// sixteen cost a third more and moved neither the step-halving
    /// figures nor the ranking against MuJoCo beyond their noise
    /// (docs/benchmarks.md).
    pub iterations: usize,
    /// Natural angular frequency (rad/s) and damping ratio of a contact
    /// or a hinge stop once it touches: a spring and damper solved
    /// implicitly (a soft constraint). Being physical figures rather than
    /// per-step factors, they make a walk converge as the step shrinks.
    pub contact_frequency: f64,
    pub contact_damping_ratio: f64,
    /// Corners closer to the ground than this are in contact (m); a corner
    /// above the ground may approach it but not cross it within the step.
    pub margin: f64,
    /// Natural angular frequency (rad/s) of the springs (critically
    /// damped) that pull a loop hinge's two frames together: stiff enough
    /// that servos fighting across a loop bend it by well under a
    /// millimetre, soft enough to stay stable at any step.
    pub joint_frequency: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            dt: 1.0 / 240.0,
            gravity: Vector3::new(0.0, 0.0, -9.81),
            friction: 0.8,
            iterations: 8,
            contact_frequency: 100.0,
            contact_damping_ratio: 1.0,
            margin: 0.002,
            joint_frequency: 600.0,
        }
    }
}

/// The PD law of a hinge's motor until the next command:
/// torque = stiffness·(angle − q) + damping·(velocity − q̇), within ±max_torque.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Servo {
    pub angle: f64,
    pub velocity: f64,
    pub stiffness: f64,
    pub damping: f64,
    pub max_torque: f64,
}

/// Pose and velocity of a body: angular velocity and the velocity of the
/// body frame's origin, world axes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyState {
    pub pose: Isometry3<f64>,
    pub angvel: Vector3<f64>,
    pub linvel: Vector3<f64>,
}

/// A constraint row: the body, box and corner it belongs to (or a hinge
/// limit), its Jacobian and its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ContactKey(u64);

#[derive(Debug, Clone, Copy)]
struct Contact {
    key: ContactKey,
    body: usize,
    /// First of its rows: normal, then two tangents (limits: one row).
    row: usize,
    rows: usize,
    /// Least normal velocity after the step (a servo: its target velocity).
    min_velocity: f64,
    /// Compliance of the first row: relative to the row's inverse
    /// effective mass for contacts, stops and loop rows (0 for a gap that
    /// is still open), absolute for a servo.
    softness: f64,
    bound: Bound,
}

/// What a row's impulse may be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    /// Contacts and stops only push.
    Push,
    /// A servo: within ± its largest impulse.
    Servo(f64),
    /// A loop hinge's rows hold either way.
    Free,
}

pub struct World {
    model: Model,
    settings: Settings,
    /// World pose of every body.
    pose: Vec<Isometry3<f64>>,
    /// Hinge angle of every body with a hinge (0 for roots).
    q: Vec<f64>,
    /// Generalized velocities.
    u: Vec<f64>,
    servo: Vec<Servo>,
    /// The servo of every loop hinge.
    loop_servo: Vec<Servo>,
    /// Root of the tree of every body.
    root: Vec<usize>,
    /// The welds in force, by id.
    welds: Vec<(WeldId, Weld)>,
    next_weld: u64,
    scratch: Scratch,
    /// Last step's impulses by contact, for warm starts.
    warm: Vec<(ContactKey, [f64; 3])>,
    /// The inverse of every hinge's `frame_in_child` (identity for roots),
    /// computed once rather than at every forward kinematics.
    child_inverse: Vec<Isometry3<f64>>,
    /// Mass of the tree rooted at every root (0 for other bodies).
    tree_mass: Vec<f64>,
    /// Hinge axes for [`World::body_states`].
    state_axes: Vec<Spatial>,
}

/// A weld of a world, as [`World::weld`] returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WeldId(u64);

/// A tree's centre of mass and its velocity.
type Centroid = (Vector3<f64>, Vector3<f64>);

#[derive(Default)]
struct Scratch {
    axis: Vec<Spatial>,
    composite: Vec<Matrix6<f64>>,
    velocity: Vec<Spatial>,
    acceleration: Vec<Spatial>,
    force: Vec<Spatial>,
    mass: Vec<f64>,
    inverse: Vec<f64>,
    /// (L⁻¹)ᵀ of the mass matrix's Cholesky factor L, row-major.
    factor_inverse: Vec<f64>,
    compliance: Vec<f64>,
    inverse_diagonal: Vec<f64>,
    rhs: Vec<f64>,
    free: Vec<f64>,
    jacobian: Vec<f64>,
    response: Vec<f64>,
    diagonal: Vec<f64>,
    impulse: Vec<f64>,
    contacts: Vec<Contact>,
    /// Centre of mass and its velocity of every tree before positions move.
    centroids: Vec<(usize, Centroid)>,
    /// Every weld row that carries linear momentum: its row, the held
    /// body, the anchor's body (none for the ground) and its direction.
    weld_pushes: Vec<(usize, usize, Option<usize>, Vector3<f64>)>,
}

impl World {
    /// A world of `model` with every body where `initial` puts it. Hinge
    /// angles and rates are read from the relative poses and velocities.
    #[must_use]
    pub fn new(model: Model, settings: Settings, initial: &[BodyState]) -> Self {
        let n = model.bodies.len();
        assert_eq!(initial.len(), n, "one initial state per body");
        let mut q = vec![0.0; n];
        let mut u = vec![0.0; model.dofs];
        let mut root = vec![0; n];
        for (i, body) in model.bodies.iter().enumerate() {
            let state = &initial[i];
            match &body.hinge {
                None => {
                    root[i] = i;
                    u[body.dof..body.dof + 3].copy_from_slice(state.angvel.as_slice());
                    u[body.dof + 3..body.dof + 6].copy_from_slice(state.linvel.as_slice());
                }
                Some(h) => {
                    root[i] = root[h.parent];
                    let parent = &initial[h.parent];
                    q[i] = hinge_angle(
                        &(parent.pose * h.frame_in_parent),
                        &(state.pose * h.frame_in_child),
                    );
                    let axis = (parent.pose * h.frame_in_parent).rotation * Vector3::x();
                    u[body.dof] = axis.dot(&(state.angvel - parent.angvel));
                }
            }
        }
        let child_inverse = model
            .bodies
            .iter()
            .map(|b| {
                b.hinge
                    .as_ref()
                    .map_or_else(Isometry3::identity, |h| h.frame_in_child.inverse())
            })
            .collect();
        // Summed as `tree_mass` summed it at every step: body order.
        let tree_mass = (0..n)
            .map(|r| {
                (0..n)
                    .filter(|&i| root[i] == r)
                    .map(|i| model.bodies[i].mass)
                    .sum()
            })
            .collect();
        let mut world = Self {
            child_inverse,
            tree_mass,
            state_axes: Vec::new(),
            pose: initial.iter().map(|s| s.pose).collect(),
            servo: vec![Servo::default(); n],
            loop_servo: vec![Servo::default(); model.loops.len()],
            model,
            settings,
            q,
            u,
            root,
            welds: Vec::new(),
            next_weld: 0,
            scratch: Scratch::default(),
            warm: Vec::new(),
        };
        world.forward_kinematics();
        world
    }

    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn set_friction(&mut self, mu: f64) {
        self.settings.friction = mu;
    }

    /// Drives the hinge of `body`; a root ignores it.
    pub fn set_servo(&mut self, body: usize, servo: Servo) {
        self.servo[body] = servo;
    }

    /// Drives loop hinge `k` (its index in the model).
    pub fn set_loop_servo(&mut self, k: usize, servo: Servo) {
        self.loop_servo[k] = servo;
    }

    /// Locks `weld.frame` of its body onto its anchor from the next step,
    /// pulling it there as a stiff spring if it is not there yet. The
    /// anchor is the ground or a body of another tree.
    pub fn weld(&mut self, weld: Weld) -> Result<WeldId, ModelError> {
        let n = self.model.bodies.len();
        let other = match weld.anchor {
            Anchor::Ground(_) => None,
            Anchor::Body(b, _) => Some(b),
        };
        if weld.body >= n {
            return Err(ModelError::WeldBody(weld.body));
        }
        if let Some(b) = other
            && (b >= n || b == weld.body)
        {
            return Err(ModelError::WeldBody(b));
        }
        // Rows along world axes inside one tree fight the hinges between
        // the two bodies (rows the tree keeps are solved from rounding
        // noise): it blows up. Such a loop needs a loop hinge's treatment.
        if let Some(b) = other
            && self.root[b] == self.root[weld.body]
        {
            return Err(ModelError::WeldInTree(weld.body, b));
        }
        let id = WeldId(self.next_weld);
        self.next_weld += 1;
        self.welds.push((id, weld));
        Ok(id)
    }

    /// Releases a weld; false if it was not in force.
    pub fn release(&mut self, id: WeldId) -> bool {
        let before = self.welds.len();
        self.welds.retain(|(w, _)| *w != id);
        self.welds.len() < before
    }

    /// The held frame and its anchor's frame of a weld, in the world; the
    /// gap between them is how far the lock gives.
    #[must_use]
    pub fn weld_frames(&self, id: WeldId) -> Option<[Isometry3<f64>; 2]> {
        let (_, w) = self.welds.iter().find(|(w, _)| *w == id)?;
        Some(self.weld_world_frames(w))
    }

    fn weld_world_frames(&self, w: &Weld) -> [Isometry3<f64>; 2] {
        let anchor = match w.anchor {
            Anchor::Ground(frame) => frame,
            Anchor::Body(b, frame) => self.pose[b] * frame,
        };
        [anchor, self.pose[w.body] * w.frame]
    }

    /// Sets the angle of `body`'s hinge (rad) and moves its subtree with
    /// it, velocities unchanged: a pose to start from, or a check of the
    /// model's kinematics against another.
    pub fn set_hinge(&mut self, body: usize, angle: f64) {
        if self.model.bodies[body].hinge.is_some() {
            self.q[body] = angle;
            self.forward_kinematics();
        }
    }

    /// Angle and rate of loop hinge `k`, read from its bodies.
    #[must_use]
    pub fn loop_hinge(&self, k: usize) -> (f64, f64) {
        let frames = self.loop_frames(k);
        let axis = frames[0].rotation * Vector3::x();
        let [a, b] = self.model.loops[k].bodies;
        let (wa, _) = self.body_velocity(a, &frames[0].translation.vector);
        let (wb, _) = self.body_velocity(b, &frames[1].translation.vector);
        (hinge_angle(&frames[0], &frames[1]), axis.dot(&(wb - wa)))
    }

    fn loop_frames(&self, k: usize) -> [Isometry3<f64>; 2] {
        let l = &self.model.loops[k];
        [0, 1].map(|side| self.pose[l.bodies[side]] * l.frames[side])
    }

    #[must_use]
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Hinge angle and rate of `body` (0 for a root).
    #[must_use]
    pub fn hinge(&self, body: usize) -> (f64, f64) {
        match self.model.bodies[body].hinge {
            Some(_) => (self.q[body], self.u[self.model.bodies[body].dof]),
            None => (0.0, 0.0),
        }
    }

    #[must_use]
    pub fn body_state(&self, body: usize) -> BodyState {
        let pose = self.pose[body];
        let (angvel, linvel) = self.body_velocity(body, &pose.translation.vector);
        BodyState {
            pose,
            angvel,
            linvel,
        }
    }

    /// [`World::body_state`] of every body, into `out`: each tree hinge's
    /// axis is computed once rather than once per body below it.
    pub fn body_states(&mut self, out: &mut Vec<BodyState>) {
        let mut axes = std::mem::take(&mut self.state_axes);
        self.hinge_axes(&mut axes);
        out.clear();
        for body in 0..self.model.bodies.len() {
            let pose = self.pose[body];
            let (angvel, linvel) = self.body_velocity_with(body, &pose.translation.vector, &axes);
            out.push(BodyState {
                pose,
                angvel,
                linvel,
            });
        }
        self.state_axes = axes;
    }

    /// Every hinge's axis about the root origin of its tree, as
    /// [`Self::kinematics`] computes it (roots: zero).
    fn hinge_axes(&self, axes: &mut Vec<Spatial>) {
        let nb = self.model.bodies.len();
        axes.clear();
        axes.resize(nb, Spatial::ZERO);
        for (i, a) in axes.iter_mut().enumerate() {
            if self.model.bodies[i].hinge.is_some() {
                *a = self.root_axis(i);
            }
        }
    }

    /// [`Self::body_velocity`] from hinge axes that [`Self::hinge_axes`] or
    /// [`Self::kinematics`] computed at the present poses, without
    /// recomputing them.
    fn body_velocity_with(
        &self,
        body: usize,
        x: &Vector3<f64>,
        axes: &[Spatial],
    ) -> (Vector3<f64>, Vector3<f64>) {
        self.body_velocity_along(body, x, |b| axes[b])
    }

    /// Angular velocity of `body` and the velocity of its point at `x`.
    fn body_velocity(&self, body: usize, x: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
        self.body_velocity_along(body, x, |b| self.root_axis(b))
    }

    /// The root's velocity plus each hinge's, from `body` up to its root,
    /// with each hinge's axis about the root origin from `axis_of`.
    fn body_velocity_along(
        &self,
        body: usize,
        x: &Vector3<f64>,
        axis_of: impl Fn(usize) -> Spatial,
    ) -> (Vector3<f64>, Vector3<f64>) {
        let root = self.root[body];
        let origin = self.pose[root].translation.vector;
        let d = self.model.bodies[root].dof;
        let mut omega = Vector3::new(self.u[d], self.u[d + 1], self.u[d + 2]);
        let mut v = Vector3::new(self.u[d + 3], self.u[d + 4], self.u[d + 5]);
        let mut b = body;
        while let Some(h) = &self.model.bodies[b].hinge {
            let rate = self.u[self.model.bodies[b].dof];
            let axis = axis_of(b);
            omega += axis.ang * rate;
            v += axis.lin * rate;
            b = h.parent;
        }
        (omega, v + omega.cross(&(x - origin)))
    }

    /// The hinge of `body` as a unit motion about its tree's root origin:
    /// its world axis, and the velocity the root origin would have.
    fn root_axis(&self, body: usize) -> Spatial {
        let origin = self.pose[self.root[body]].translation.vector;
        let (axis, point) = self.hinge_axis(body);
        Spatial::new(axis, (point - origin).cross(&axis))
    }

    /// World axis and a point on it of the hinge of `body`.
    fn hinge_axis(&self, body: usize) -> (Vector3<f64>, Vector3<f64>) {
        let h = self.model.bodies[body].hinge.as_ref().expect("a hinge");
        let frame = self.pose[body] * h.frame_in_child;
        (frame.rotation * Vector3::x(), frame.translation.vector)
    }

    /// Lowest point that touches the ground: a box's corner or a contact
    /// point (m).
    #[must_use]
    pub fn lowest_point(&self) -> f64 {
        let mut lowest = f64::INFINITY;
        for (i, body) in self.model.bodies.iter().enumerate() {
            match &body.contact_points {
                Some(points) => {
                    for p in points {
                        lowest = lowest.min((self.pose[i] * Point3::from(*p)).z);
                    }
                }
                None => {
                    for b in &body.boxes {
                        for c in corners(&b.half) {
                            lowest = lowest.min((self.pose[i] * b.pose * Point3::from(c)).z);
                        }
                    }
                }
            }
        }
        lowest
    }

    /// Total kinetic energy (J).
    #[must_use]
    pub fn kinetic_energy(&self) -> f64 {
        let mut energy = 0.0;
        for (i, body) in self.model.bodies.iter().enumerate() {
            let com = self.pose[i] * Point3::from(body.com);
            let (omega, v) = self.body_velocity(i, &com.coords);
            let r = self.pose[i].rotation.to_rotation_matrix();
            let inertia = r * body.inertia * r.transpose();
            energy += 0.5 * body.mass * v.norm_squared() + 0.5 * omega.dot(&(inertia * omega));
        }
        energy
    }

    /// Body poses from root poses and hinge angles.
    fn forward_kinematics(&mut self) {
        for i in 0..self.model.bodies.len() {
            if let Some(h) = &self.model.bodies[i].hinge {
                let turn = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), self.q[i]);
                self.pose[i] = self.pose[h.parent]
                    * h.frame_in_parent
                    * Isometry3::from_parts(Translation3::identity(), turn)
                    * self.child_inverse[i];
            }
        }
    }

    /// Advances the world by one step.
    pub fn step(&mut self) {
        // Out of `self` for the step, so the stages may borrow both; back
        // in at the end, so no step allocates.
        let mut s = std::mem::take(&mut self.scratch);
        self.kinematics(&mut s);
        self.mass_matrix_and_bias(&mut s);
        self.unconstrained_velocities(&mut s);
        // The constraint rows need the hinge axes of the kinematics and the
        // inverse mass matrix.
        self.collect_constraints(&mut s);
        self.solve_constraints(&mut s);
        // The targets read the velocities the step starts from and the
        // ground's impulses, so they come after the solve and before the
        // velocities are overwritten.
        self.momentum_targets(&mut s);
        self.integrate(&s.free);
        self.restore_tree_momentum(&s.centroids, &mut s.axis);
        self.scratch = s;
    }

    /// Every body's hinge axis, spatial inertia, velocity, velocity-product
    /// acceleration and the force that motion needs, about the root origin
    /// of its tree; composites start as the bodies' own inertias.
    fn kinematics(&self, s: &mut Scratch) {
        let nb = self.model.bodies.len();
        s.axis.resize(nb, Spatial::ZERO);
        s.composite.resize(nb, Matrix6::zeros());
        s.velocity.resize(nb, Spatial::ZERO);
        s.acceleration.resize(nb, Spatial::ZERO);
        s.force.resize(nb, Spatial::ZERO);
        // Roots accelerate upwards at g instead of every body feeling its
        // weight: the force pass then carries gravity for free.
        let gravity = Spatial::new(Vector3::zeros(), -self.settings.gravity);
        for i in 0..nb {
            let body = &self.model.bodies[i];
            let origin = self.pose[self.root[i]].translation.vector;
            let r = self.pose[i].rotation.to_rotation_matrix();
            let com = self.pose[i] * Point3::from(body.com);
            // Straight into the composite, which starts as the body's own.
            s.composite[i] = inertia_matrix(
                body.mass,
                &(com.coords - origin),
                &(r * body.inertia * r.transpose()),
            );
            match &body.hinge {
                None => {
                    let d = body.dof;
                    s.velocity[i] = Spatial::new(
                        Vector3::new(self.u[d], self.u[d + 1], self.u[d + 2]),
                        Vector3::new(self.u[d + 3], self.u[d + 4], self.u[d + 5]),
                    );
                    s.acceleration[i] = gravity;
                }
                Some(hinge) => {
                    s.axis[i] = self.root_axis(i);
                    let joint_velocity = s.axis[i].scale(self.u[body.dof]);
                    s.velocity[i] = s.velocity[hinge.parent] + joint_velocity;
                    s.acceleration[i] =
                        s.acceleration[hinge.parent] + s.velocity[i].cross_motion(&joint_velocity);
                }
            }
            let momentum = apply(&s.composite[i], &s.velocity[i]);
            s.force[i] =
                apply(&s.composite[i], &s.acceleration[i]) + s.velocity[i].cross_force(&momentum);
        }
    }

    /// The mass matrix by composite rigid bodies into `s.mass`, and minus
    /// the bias forces into `s.rhs`, in one pass from the leaves to the
    /// roots (it accumulates, in place, the composites and forces that
    /// [`Self::kinematics`] left).
    fn mass_matrix_and_bias(&self, s: &mut Scratch) {
        let n = self.model.dofs;
        s.mass.clear();
        s.mass.resize(n * n, 0.0);
        s.rhs.clear();
        s.rhs.resize(n, 0.0);
        for i in (0..self.model.bodies.len()).rev() {
            let body = &self.model.bodies[i];
            match &body.hinge {
                None => {
                    let f = s.force[i].to_vector();
                    for a in 0..6 {
                        s.rhs[body.dof + a] = -f[a];
                        for b in 0..6 {
                            s.mass[(body.dof + a) * n + body.dof + b] = s.composite[i][(a, b)];
                        }
                    }
                }
                Some(hinge) => {
                    let p = hinge.parent;
                    s.rhs[body.dof] = -s.axis[i].dot(&s.force[i]);
                    let f = s.force[i];
                    s.force[p] += f;
                    let c = s.composite[i];
                    s.composite[p] += c;
                    let column = apply(&c, &s.axis[i]);
                    let di = body.dof;
                    s.mass[di * n + di] = s.axis[i].dot(&column);
                    let mut j = p;
                    loop {
                        let bj = &self.model.bodies[j];
                        match &bj.hinge {
                            Some(hj) => {
                                let m = s.axis[j].dot(&column);
                                s.mass[bj.dof * n + di] = m;
                                s.mass[di * n + bj.dof] = m;
                                j = hj.parent;
                            }
                            None => {
                                let col = column.to_vector();
                                for a in 0..6 {
                                    s.mass[(bj.dof + a) * n + di] = col[a];
                                    s.mass[di * n + bj.dof + a] = col[a];
                                }
                                break;
                            }
                        }
                    }
                }
            }
        }
    }

    /// `s.free` = M⁻¹·(M·u − h·C), the velocities the step would reach
    /// without any constraint row, and `s.inverse` = M⁻¹ for the rows.
    /// Factorises `s.mass` in place.
    fn unconstrained_velocities(&self, s: &mut Scratch) {
        let h = self.settings.dt;
        let n = self.model.dofs;
        for a in 0..n {
            let mu: f64 = (0..n).map(|b| s.mass[a * n + b] * self.u[b]).sum();
            s.rhs[a] = mu + h * s.rhs[a];
        }
        // The inverse itself, once: every constraint row then costs a few
        // vectorised row sums instead of two serial triangular solves.
        cholesky(&mut s.mass, n);
        inverse_from_cholesky(&s.mass, n, &mut s.factor_inverse, &mut s.inverse);
        s.free.clear();
        s.free.resize(n, 0.0);
        for k in 0..n {
            let rhs = s.rhs[k];
            let column = &s.inverse[k * n..(k + 1) * n];
            for (f, c) in s.free.iter_mut().zip(column) {
                *f += c * rhs;
            }
        }
    }

    /// Into `s.centroids`, for every tree: its centre of mass now and the
    /// velocity that centre must leave the step with.
    fn momentum_targets(&self, s: &mut Scratch) {
        let h = self.settings.dt;
        s.centroids.clear();
        for i in 0..self.model.bodies.len() {
            if self.model.bodies[i].hinge.is_none() {
                // The kinematics' axes: poses have not moved since.
                let (com, velocity) = self.centroid(i, &s.axis);
                // The momentum the step must leave: the old one, plus
                // gravity's and the ground's impulses.
                let mut impulse = Vector3::zeros();
                for c in s
                    .contacts
                    .iter()
                    .filter(|c| c.rows == 3 && self.root[c.body] == i)
                {
                    impulse +=
                        Vector3::new(s.impulse[c.row + 1], s.impulse[c.row + 2], s.impulse[c.row]);
                }
                for &(row, body, other, d) in &s.weld_pushes {
                    if self.root[body] == i {
                        impulse += d * s.impulse[row];
                    }
                    if other.is_some_and(|b| self.root[b] == i) {
                        impulse -= d * s.impulse[row];
                    }
                }
                let mass = self.tree_mass[i];
                let target = velocity + h * self.settings.gravity + impulse / mass;
                s.centroids.push((i, (com, target)));
            }
        }
    }

    /// Semi-implicit Euler: the velocities become `free`, then hinge angles
    /// and root poses advance by them.
    fn integrate(&mut self, free: &[f64]) {
        let h = self.settings.dt;
        self.u.copy_from_slice(free);
        for i in 0..self.model.bodies.len() {
            let body = &self.model.bodies[i];
            let d = body.dof;
            match &body.hinge {
                Some(_) => self.q[i] += h * self.u[d],
                None => {
                    let omega = Vector3::new(self.u[d], self.u[d + 1], self.u[d + 2]);
                    let v = Vector3::new(self.u[d + 3], self.u[d + 4], self.u[d + 5]);
                    let pose = &mut self.pose[i];
                    pose.translation.vector += h * v;
                    pose.rotation = UnitQuaternion::from_scaled_axis(omega * h) * pose.rotation;
                    pose.rotation.renormalize();
                }
            }
        }
        self.forward_kinematics();
    }

    /// Euler in generalized coordinates lets a tree's centre of mass
    /// wander when its limbs swing fast (the same velocities read at the
    /// new configuration carry a different momentum), which would let a
    /// robot walk by waving its legs in the air. Give each tree exactly
    /// the momentum the external impulses leave it (`targets`, from
    /// [`Self::momentum_targets`]), and move its centre of mass by that
    /// velocity.
    /// `axes` is scratch (the kinematics' axes are no longer needed).
    fn restore_tree_momentum(&mut self, targets: &[(usize, Centroid)], axes: &mut Vec<Spatial>) {
        let h = self.settings.dt;
        let nb = self.model.bodies.len();
        // A tree's shift moves no other tree, so the axes of them all at
        // the integrated poses serve every tree's centroid.
        self.hinge_axes(axes);
        for &(root, (com, velocity)) in targets {
            let (new_com, new_velocity) = self.centroid(root, axes);
            let shift = com + h * velocity - new_com;
            for b in 0..nb {
                if self.root[b] == root {
                    self.pose[b].translation.vector += shift;
                }
            }
            let d = self.model.bodies[root].dof;
            for k in 0..3 {
                self.u[d + 3 + k] += velocity[k] - new_velocity[k];
            }
        }
    }

    /// Centre of mass and its velocity of the tree rooted at `root`, from
    /// the hinge axes at the present poses.
    fn centroid(&self, root: usize, axes: &[Spatial]) -> Centroid {
        let mut mass = 0.0;
        let mut moment = Vector3::zeros();
        let mut momentum = Vector3::zeros();
        for (i, body) in self.model.bodies.iter().enumerate() {
            if self.root[i] != root {
                continue;
            }
            let com = (self.pose[i] * Point3::from(body.com)).coords;
            let (_, v) = self.body_velocity_with(i, &com, axes);
            mass += body.mass;
            moment += body.mass * com;
            momentum += body.mass * v;
        }
        (moment / mass, momentum / mass)
    }

    /// Adds the row of `direction` at world point `x` on `body` to the
    /// Jacobian.
    fn point_row(&self, s: &mut Scratch, body: usize, x: &Vector3<f64>, direction: &Vector3<f64>) {
        let start = s.jacobian.len();
        s.jacobian.resize(start + self.model.dofs, 0.0);
        self.add_point(s, start, body, x, direction, 1.0);
    }

    /// Adds `sign` times the velocity of `body`'s point at `x` along
    /// `direction` to the row starting at `start`.
    fn add_point(
        &self,
        s: &mut Scratch,
        start: usize,
        body: usize,
        x: &Vector3<f64>,
        direction: &Vector3<f64>,
        sign: f64,
    ) {
        let r = x - self.pose[self.root[body]].translation.vector;
        let w = Spatial::new(r.cross(direction), *direction).scale(sign);
        self.add_spatial(s, start, body, &w);
    }

    /// Adds `sign` times `body`'s angular velocity along `direction` to the
    /// row starting at `start`.
    fn add_turn(
        &self,
        s: &mut Scratch,
        start: usize,
        body: usize,
        direction: &Vector3<f64>,
        sign: f64,
    ) {
        let w = Spatial::new(*direction * sign, Vector3::zeros());
        self.add_spatial(s, start, body, &w);
    }

    /// Adds the power of the spatial force `w` (about the root of `body`'s
    /// tree) on `body`'s motion, as a function of the generalized
    /// velocities, to the row starting at `start`.
    fn add_spatial(&self, s: &mut Scratch, start: usize, body: usize, w: &Spatial) {
        let row = &mut s.jacobian[start..start + self.model.dofs];
        let mut b = body;
        loop {
            let bb = &self.model.bodies[b];
            match &bb.hinge {
                Some(h) => {
                    row[bb.dof] += w.dot(&s.axis[b]);
                    b = h.parent;
                }
                None => {
                    let v = w.to_vector();
                    for (o, x) in row[bb.dof..bb.dof + 6].iter_mut().zip(v.iter()) {
                        *o += x;
                    }
                    break;
                }
            }
        }
    }

    /// The rows of every loop hinge: three that hold its two frames'
    /// origins together and two that keep their axes aligned (free
    /// impulses, stiff springs), then its servo and its stops as for a
    /// tree hinge.
    fn collect_loops(&self, s: &mut Scratch, mut rows: usize) -> usize {
        let h = self.settings.dt;
        let n = self.model.dofs;
        let hw = h * self.settings.joint_frequency;
        let bias = hw / (2.0 + hw) / h;
        let softness = 1.0 / (hw * (2.0 + hw));
        for (k, l) in self.model.loops.iter().enumerate() {
            let [a, b] = l.bodies;
            let [fa, fb] = self.loop_frames(k);
            let (pa, pb) = (fa.translation.vector, fb.translation.vector);
            let x = 0.5 * (pa + pb);
            let axis = fa.rotation * Vector3::x();
            let (t1, t2) = (fa.rotation * Vector3::y(), fa.rotation * Vector3::z());
            let tilt = axis.cross(&(fb.rotation * Vector3::x()));
            let mut key = (3 << 62) | ((k as u64) << 4);
            let mut push = |s: &mut Scratch, error: f64, softness: f64, bound: Bound, min: f64| {
                s.contacts.push(Contact {
                    body: b,
                    key: ContactKey(key),
                    row: rows,
                    rows: 1,
                    min_velocity: min - bias * error,
                    softness,
                    bound,
                });
                key += 1;
                rows += 1;
            };
            // A row the tree already keeps (two coaxial hinges, a planar
            // linkage) cancels to rounding noise; solving it would lock the
            // joint along whatever direction the noise points, so drop it.
            let redundant = |s: &mut Scratch, start: usize, one_side: f64| {
                let norm = norm(&s.jacobian[start..]);
                let drop = norm <= 1e-6 * one_side;
                if drop {
                    s.jacobian.truncate(start);
                }
                drop
            };
            for d in [Vector3::x(), Vector3::y(), Vector3::z()] {
                let start = s.jacobian.len();
                s.jacobian.resize(start + n, 0.0);
                self.add_point(s, start, b, &x, &d, 1.0);
                let one_side = norm(&s.jacobian[start..]);
                self.add_point(s, start, a, &x, &d, -1.0);
                if !redundant(s, start, one_side) {
                    push(s, (pb - pa).dot(&d), softness, Bound::Free, 0.0);
                }
            }
            for t in [t1, t2] {
                let start = s.jacobian.len();
                s.jacobian.resize(start + n, 0.0);
                self.add_turn(s, start, b, &t, 1.0);
                let one_side = norm(&s.jacobian[start..]);
                self.add_turn(s, start, a, &t, -1.0);
                if !redundant(s, start, one_side) {
                    push(s, tilt.dot(&t), softness, Bound::Free, 0.0);
                }
            }
            let angle = hinge_angle(&fa, &fb);
            let relative_turn = |s: &mut Scratch, sign: f64| {
                let start = s.jacobian.len();
                s.jacobian.resize(start + n, 0.0);
                self.add_turn(s, start, b, &axis, sign);
                self.add_turn(s, start, a, &axis, -sign);
            };
            if let Some(law) = servo_law(&self.loop_servo[k], angle, h) {
                relative_turn(s, 1.0);
                // `push` subtracts bias·error; a servo row has no error.
                push(s, 0.0, law.softness, law.bound, law.target);
            }
            for (side, gap) in [(1.0, angle - l.limits[0]), (-1.0, l.limits[1] - angle)] {
                if gap > 0.01 {
                    continue;
                }
                relative_turn(s, side);
                let (min_velocity, softness) = self.gap_law(gap, h);
                push(s, 0.0, softness, Bound::Push, min_velocity);
            }
        }
        rows
    }

    /// The six rows of every weld: three that hold the frames' origins
    /// together and three that hold their axes, stiff springs as for a
    /// loop hinge; each row's linear part is noted so the trees' momentum
    /// counts the weld's impulses.
    fn collect_welds(&self, s: &mut Scratch, mut rows: usize) {
        let h = self.settings.dt;
        let n = self.model.dofs;
        let hw = h * self.settings.joint_frequency;
        let bias = hw / (2.0 + hw) / h;
        let softness = 1.0 / (hw * (2.0 + hw));
        s.weld_pushes.clear();
        for (id, w) in &self.welds {
            let [anchor, held] = self.weld_world_frames(w);
            let other = match w.anchor {
                Anchor::Ground(_) => None,
                Anchor::Body(b, _) => Some(b),
            };
            let x = 0.5 * (anchor.translation.vector + held.translation.vector);
            let gap = held.translation.vector - anchor.translation.vector;
            // The turn that brings the anchor's axes onto the held frame's.
            let tilt = (held.rotation * anchor.rotation.inverse()).scaled_axis();
            let axes = [Vector3::x(), Vector3::y(), Vector3::z()];
            for (k, d) in axes.iter().enumerate() {
                for linear in [true, false] {
                    let start = s.jacobian.len();
                    s.jacobian.resize(start + n, 0.0);
                    let error = if linear {
                        self.add_point(s, start, w.body, &x, d, 1.0);
                        if let Some(b) = other {
                            self.add_point(s, start, b, &x, d, -1.0);
                        }
                        s.weld_pushes.push((rows, w.body, other, *d));
                        gap.dot(d)
                    } else {
                        self.add_turn(s, start, w.body, d, 1.0);
                        if let Some(b) = other {
                            self.add_turn(s, start, b, d, -1.0);
                        }
                        tilt.dot(d)
                    };
                    s.contacts.push(Contact {
                        body: w.body,
                        key: ContactKey(
                            (3 << 62)
                                | (1 << 61)
                                | (id.0 << 3)
                                | (k as u64) << 1
                                | u64::from(linear),
                        ),
                        row: rows,
                        rows: 1,
                        min_velocity: -bias * error,
                        softness,
                        bound: Bound::Free,
                    });
                    rows += 1;
                }
            }
        }
    }

    fn collect_constraints(&self, s: &mut Scratch) {
        let h = self.settings.dt;
        let n = self.model.dofs;
        s.jacobian.clear();
        s.contacts.clear();
        let mut rows = 0;
        let normal = Vector3::z();
        let tangents = [Vector3::x(), Vector3::y()];
        for (i, body) in self.model.bodies.iter().enumerate() {
            let mut touch = |s: &mut Scratch, key: u64, x: Vector3<f64>| {
                let depth = x.z;
                if depth >= self.settings.margin {
                    return;
                }
                self.point_row(s, i, &x, &normal);
                for t in &tangents {
                    self.point_row(s, i, &x, t);
                }
                let (min_velocity, softness) = self.gap_law(depth, h);
                s.contacts.push(Contact {
                    body: i,
                    key: ContactKey(((i as u64) << 20) | key),
                    row: rows,
                    rows: 3,
                    min_velocity,
                    softness,
                    bound: Bound::Push,
                });
                rows += 3;
            };
            match &body.contact_points {
                // Skip a body whose every point is well above the ground.
                Some(points)
                    if self.pose[i].translation.vector.z <= body.reach + self.settings.margin =>
                {
                    for (k, p) in points.iter().enumerate() {
                        // Keys above the corners' (box index < 2^16).
                        touch(
                            s,
                            (1 << 19) | k as u64,
                            (self.pose[i] * Point3::from(*p)).coords,
                        );
                    }
                }
                Some(_) => {}
                None => {
                    for (k, b) in body.boxes.iter().enumerate() {
                        let frame = self.pose[i] * b.pose;
                        // Skip a box whose centre is farther up than its half diagonal.
                        if frame.translation.vector.z > b.half.norm() + self.settings.margin {
                            continue;
                        }
                        for (c, corner) in corners(&b.half).into_iter().enumerate() {
                            let x = (frame * Point3::from(corner)).coords;
                            touch(s, ((k as u64) << 3) | c as u64, x);
                        }
                    }
                }
            }
            if body.hinge.is_some()
                && let Some(law) = servo_law(&self.servo[i], self.q[i], h)
            {
                let start = s.jacobian.len();
                s.jacobian.resize(start + n, 0.0);
                s.jacobian[start + body.dof] = 1.0;
                s.contacts.push(Contact {
                    body: i,
                    key: ContactKey((2 << 62) | i as u64),
                    row: rows,
                    rows: 1,
                    min_velocity: law.target,
                    softness: law.softness,
                    bound: law.bound,
                });
                rows += 1;
            }
            if let Some(hinge) = &body.hinge {
                let q = self.q[i];
                let rate = self.u[body.dof];
                for (side, gap) in [(1.0, q - hinge.limits[0]), (-1.0, hinge.limits[1] - q)] {
                    // Within one step's travel of the stop.
                    if gap > (rate.abs() * h).max(0.01) {
                        continue;
                    }
                    let start = s.jacobian.len();
                    s.jacobian.resize(start + n, 0.0);
                    s.jacobian[start + body.dof] = side;
                    let (min_velocity, softness) = self.gap_law(gap, h);
                    s.contacts.push(Contact {
                        body: i,
                        key: ContactKey((1 << 62) | ((i as u64) << 1) | u64::from(side < 0.0)),
                        row: rows,
                        rows: 1,
                        min_velocity,
                        softness,
                        bound: Bound::Push,
                    });
                    rows += 1;
                }
            }
        }
        let rows = self.collect_loops(s, rows);
        self.collect_welds(s, rows);
    }

    /// The least velocity along a constraint's normal at a gap `depth`
    /// (negative when penetrating) and the row's relative compliance. An
    /// open gap may close within the step but no further; a penetration
    /// pushes back as the implicit spring-damper of `contact_frequency`
    /// (Catto's soft constraints: bias factor hω/(2ζ + hω), compliance
    /// 1/(hω(2ζ + hω)) times the row's inverse effective mass).
    fn gap_law(&self, depth: f64, h: f64) -> (f64, f64) {
        if depth >= 0.0 {
            return (-depth / h, 0.0);
        }
        let hw = h * self.settings.contact_frequency;
        let zeta2 = 2.0 * self.settings.contact_damping_ratio;
        let bias = hw / (zeta2 + hw);
        (-bias * depth / h, 1.0 / (hw * (zeta2 + hw)))
    }

    fn solve_constraints(&mut self, s: &mut Scratch) {
        let n = self.model.dofs;
        let m = s.jacobian.len() / n.max(1);
        if m == 0 {
            self.warm.clear();
            return;
        }
        // response row r = M⁻¹·Jᵣᵀ, from the columns of M⁻¹ (symmetric)
        // where the row is not zero.
        s.response.clear();
        s.response.resize(m * n, 0.0);
        s.diagonal.clear();
        for r in 0..m {
            let jr = &s.jacobian[r * n..(r + 1) * n];
            let row = &mut s.response[r * n..(r + 1) * n];
            for (k, &jk) in jr.iter().enumerate() {
                if jk != 0.0 {
                    let column = &s.inverse[k * n..(k + 1) * n];
                    for (o, c) in row.iter_mut().zip(column) {
                        *o += c * jk;
                    }
                }
            }
            let w: f64 = jr.iter().zip(row.iter()).map(|(a, b)| a * b).sum();
            // A touch of compliance keeps redundant corner rows well posed.
            s.diagonal.push(w * (1.0 + 1e-4) + 1e-9);
        }
        // Warm start from last step's impulses of the same contacts.
        s.impulse.clear();
        s.impulse.resize(m, 0.0);
        warm_start(&self.warm, &s.contacts, &mut s.impulse);
        for r in 0..m {
            let lambda = s.impulse[r];
            if lambda != 0.0 {
                let k = &s.response[r * n..(r + 1) * n];
                for (f, kv) in s.free.iter_mut().zip(k) {
                    *f += kv * lambda;
                }
            }
        }
        let mu = self.settings.friction;
        // Per row: its compliance and the inverse of its effective
        // diagonal, so the sweeps divide nothing.
        s.compliance.clear();
        s.inverse_diagonal.clear();
        for c in &s.contacts {
            for k in 0..c.rows {
                let r = c.row + k;
                let compliance = match (k, c.bound) {
                    (0, Bound::Servo(_)) => c.softness,
                    (0, _) => c.softness * s.diagonal[r],
                    _ => 0.0,
                };
                s.compliance.push(compliance);
                s.inverse_diagonal.push(1.0 / (s.diagonal[r] + compliance));
            }
        }
        for _ in 0..self.settings.iterations {
            for ci in 0..s.contacts.len() {
                let c = s.contacts[ci];
                let r = c.row;
                let old = s.impulse[r];
                let velocity = dot(&s.jacobian[r * n..(r + 1) * n], &s.free);
                let lambda = old
                    - (velocity - c.min_velocity + s.compliance[r] * old) * s.inverse_diagonal[r];
                let lambda = match c.bound {
                    Bound::Servo(bound) => lambda.clamp(-bound, bound),
                    Bound::Push => lambda.max(0.0),
                    Bound::Free => lambda,
                };
                apply_impulse(s, n, r, lambda - old);
                // A corner that neither pushes nor rubs needs no friction.
                if c.rows == 3
                    && (lambda > 0.0 || s.impulse[r + 1] != 0.0 || s.impulse[r + 2] != 0.0)
                {
                    let limit = mu * lambda;
                    let mut t = [0.0; 2];
                    for (k, tk) in t.iter_mut().enumerate() {
                        let rt = r + 1 + k;
                        let velocity = dot(&s.jacobian[rt * n..(rt + 1) * n], &s.free);
                        *tk = s.impulse[rt] - velocity * s.inverse_diagonal[rt];
                    }
                    // Not `hypot`: libm's guards against overflow cost a
                    // twentieth of the step here, and impulses are small.
                    let norm = (t[0] * t[0] + t[1] * t[1]).sqrt();
                    if norm > limit {
                        let scale = if norm > 0.0 { limit / norm } else { 0.0 };
                        t[0] *= scale;
                        t[1] *= scale;
                    }
                    for (k, tk) in t.iter().enumerate() {
                        let rt = r + 1 + k;
                        let delta = tk - s.impulse[rt];
                        apply_impulse(s, n, rt, delta);
                    }
                }
            }
        }
        self.warm.clear();
        for c in &s.contacts {
            let mut lambda = [0.0; 3];
            lambda[..c.rows].copy_from_slice(&s.impulse[c.row..c.row + c.rows]);
            self.warm.push((c.key, lambda));
        }
        self.warm.sort_by_key(|w| w.0);
    }
}

/// A servo's row: its PD law as an implicit spring-damper whose impulse the
/// torque limit bounds, so a saturated servo still yields exactly the
/// torque it can, whatever the step.
struct ServoLaw {
    /// The joint rate the law asks for.
    target: f64,
    /// Absolute compliance of the row.
    softness: f64,
    bound: Bound,
}

/// The row of `servo` on a hinge at `angle`; `None` for a servo that
/// exerts nothing.
fn servo_law(servo: &Servo, angle: f64, h: f64) -> Option<ServoLaw> {
    let resist = h * servo.stiffness + servo.damping;
    (resist > 0.0 && servo.max_torque > 0.0).then(|| ServoLaw {
        target: (servo.stiffness * (servo.angle - angle) + servo.damping * servo.velocity) / resist,
        softness: 1.0 / (h * resist),
        bound: Bound::Servo(servo.max_torque * h),
    })
}

/// Starts every row of `contacts` from its impulse of the last step, found
/// in `warm` (sorted by key). Rows are collected body by body (corners,
/// servo, stops), so their keys are not in order: each is looked up.
fn warm_start(warm: &[(ContactKey, [f64; 3])], contacts: &[Contact], impulse: &mut [f64]) {
    for c in contacts {
        if let Ok(w) = warm.binary_search_by_key(&c.key, |w| w.0) {
            impulse[c.row..c.row + c.rows].copy_from_slice(&warm[w].1[..c.rows]);
        }
    }
}

fn apply_impulse(s: &mut Scratch, n: usize, r: usize, delta: f64) {
    if delta == 0.0 {
        return;
    }
    s.impulse[r] += delta;
    let k = &s.response[r * n..(r + 1) * n];
    for (f, kv) in s.free.iter_mut().zip(k) {
        *f += kv * delta;
    }
}

/// Four partial sums, so the compiler may keep them in one vector register
/// (a single running sum would have to be added in order).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (a4, a_rest) = a.split_at(a.len() / 4 * 4);
    let (b4, b_rest) = b.split_at(a4.len());
    for (x, y) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
}

fn norm(row: &[f64]) -> f64 {
    dot(row, row).sqrt()
}

/// The angle about `parent`'s x axis that turns `parent` into `child`, in
/// (−π, π].
fn hinge_angle(parent: &Isometry3<f64>, child: &Isometry3<f64>) -> f64 {
    let r = (parent.rotation.inverse() * child.rotation).into_inner();
    let angle = 2.0 * r.i.atan2(r.w);
    (angle + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI
}

/// The eight corners of a box centred at its frame's origin.
fn corners(half: &Vector3<f64>) -> [Vector3<f64>; 8] {
    std::array::from_fn(|i| {
        let sign = |bit: usize| if i & bit == 0 { -1.0 } else { 1.0 };
        Vector3::new(sign(1) * half.x, sign(2) * half.y, sign(4) * half.z)
    })
}

/// In-place Cholesky factorisation (lower triangle) of a symmetric positive
/// definite row-major `n`×`n` matrix. Written out rather than taken from
/// nalgebra because it runs every step on a reused buffer: nalgebra's
/// decomposition owns (and so allocates) its matrix.
fn cholesky(a: &mut [f64], n: usize) {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        let d = d.max(1e-12).sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut v = a[i * n + j];
            for k in 0..j {
                v -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = v / d;
        }
    }
}

/// M⁻¹ = L⁻ᵀ·L⁻¹ from the factor of [`cholesky`]: a triangular inverse and
/// a triangular product, a third of the work of solving for every column,
/// and every inner loop runs over contiguous memory. `u` receives L⁻ᵀ.
fn inverse_from_cholesky(l: &[f64], n: usize, u: &mut Vec<f64>, inverse: &mut Vec<f64>) {
    u.clear();
    u.resize(n * n, 0.0);
    // Column j of L⁻¹ by forward substitution, stored as row j of U = L⁻ᵀ.
    for j in 0..n {
        let row = &mut u[j * n..(j + 1) * n];
        row[j] = 1.0 / l[j * n + j];
        for i in j + 1..n {
            let li = &l[i * n + j..i * n + i];
            let v = dot(li, &row[j..i]);
            row[i] = -v / l[i * n + i];
        }
    }
    // (M⁻¹)ᵢⱼ = Σₖ Uᵢₖ·Uⱼₖ, k ≥ max(i, j).
    inverse.clear();
    inverse.resize(n * n, 0.0);
    for i in 0..n {
        for j in i..n {
            let v = dot(&u[i * n + j..(i + 1) * n], &u[j * n + j..(j + 1) * n]);
            inverse[i * n + j] = v;
            inverse[j * n + i] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: u64, row: usize, rows: usize) -> Contact {
        Contact {
            key: ContactKey(key),
            body: 0,
            row,
            rows,
            min_velocity: 0.0,
            softness: 0.0,
            bound: Bound::Push,
        }
    }

    /// A servo row (a large key) collected before the next body's corners
    /// must not hide the corners' impulses of the last step.
    #[test]
    fn every_persisting_row_is_warm_started_whatever_the_order() {
        let servo = (2 << 62) | 1;
        let corner = 2 << 20;
        let contacts = [row(1 << 20, 0, 3), row(servo, 3, 1), row(corner, 4, 3)];
        let mut warm = vec![
            (ContactKey(1 << 20), [1.0, 0.1, 0.2]),
            (ContactKey(servo), [-0.5, 0.0, 0.0]),
            (ContactKey(corner), [2.0, 0.3, 0.4]),
            (ContactKey(7 << 20), [9.0, 9.0, 9.0]),
        ];
        warm.sort_by_key(|w| w.0);
        let mut impulse = vec![0.0; 7];
        warm_start(&warm, &contacts, &mut impulse);
        assert_eq!(impulse, [1.0, 0.1, 0.2, -0.5, 2.0, 0.3, 0.4]);
    }
}
