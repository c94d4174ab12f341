//! What a robot is made of: rigid bodies carrying boxes, joined by hinges
//! into trees. A body without a hinge is the floating root of its tree.

use nalgebra::{Isometry3, Matrix3, Vector3};

/// A solid box of a body: it has mass and touches the ground.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolidBox {
    /// Centre and axes in the body's frame.
    pub pose: Isometry3<f64>,
    pub half: Vector3<f64>,
    pub mass: f64,
}

/// The hinge joining a body to its parent. The joint frames coincide at
/// angle 0; the hinge turns the child about the frames' x axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hinge {
    /// Index of the parent body; it must come before the child.
    pub parent: usize,
    pub frame_in_parent: Isometry3<f64>,
    pub frame_in_child: Isometry3<f64>,
    /// Lowest and highest angle (rad).
    pub limits: [f64; 2],
}

/// A hinge that closes a kinematic loop: it joins two bodies the trees
/// already connect (or bodies of two trees) by constraints instead of a
/// coordinate. Same convention as [`Hinge`]: the frames coincide at angle
/// 0 and the second body turns about the first frame's x axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopHinge {
    /// The body whose frame measures the angle, and the turning body.
    pub bodies: [usize; 2],
    pub frames: [Isometry3<f64>; 2],
    /// Lowest and highest angle (rad).
    pub limits: [f64; 2],
}

/// What a weld holds a body's frame to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    /// A fixed frame of the world.
    Ground(Isometry3<f64>),
    /// A frame of another body (body frame).
    Body(usize, Isometry3<f64>),
}

/// A rigid lock added to a running world: six stiff rows that hold a
/// frame of `body` onto its anchor (a Roombot connector locked onto the
/// ground or onto another module). Welds come and go without rebuilding
/// anything, so the trees and their angles survive a lock or an unlock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weld {
    pub body: usize,
    /// The held frame, in `body`'s frame.
    pub frame: Isometry3<f64>,
    pub anchor: Anchor,
}

/// One body as given.
#[derive(Debug, Clone, PartialEq)]
pub struct BodySpec {
    pub boxes: Vec<SolidBox>,
    /// `None` for the floating root of a tree.
    pub hinge: Option<Hinge>,
    /// What touches the ground: the corners of the boxes when `None`; these
    /// points (body frame) when given, for a body whose boxes only carry
    /// its mass (a rounded shape sampled on its surface).
    pub contact_points: Option<Vec<Vector3<f64>>>,
}

/// Why a set of bodies is not a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("body {0} has no mass")]
    Massless(usize),
    #[error("body {child} hangs from body {parent}, which does not come before it")]
    Order { child: usize, parent: usize },
    #[error("body {body}: {what} is not finite or not positive")]
    Invalid { body: usize, what: &'static str },
    #[error("loop hinge {index} joins body {body}, which is not a distinct body of the model")]
    LoopBody { index: usize, body: usize },
    #[error("a weld holds body {0}, which is not a distinct body of the model")]
    WeldBody(usize),
    #[error(
        "a weld between bodies {0} and {1} of one tree would close a loop the tree already constrains; welds join a body to the ground or to another tree"
    )]
    WeldInTree(usize, usize),
}

/// A body with its mass properties and place in the generalized coordinates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Body {
    pub boxes: Vec<SolidBox>,
    pub hinge: Option<Hinge>,
    pub contact_points: Option<Vec<Vector3<f64>>>,
    /// The farthest contact point from the body's origin (m), so a body
    /// well above the ground is skipped at once.
    pub reach: f64,
    pub mass: f64,
    /// Centre of mass in the body frame.
    pub com: Vector3<f64>,
    /// Rotational inertia about the centre of mass, body axes.
    pub inertia: Matrix3<f64>,
    /// First generalized velocity of the body: six for a root
    /// (angular velocity, velocity of its origin), one for a hinge.
    pub dof: usize,
}

/// Bodies in an order where every parent comes before its children.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub(crate) bodies: Vec<Body>,
    pub(crate) dofs: usize,
    pub(crate) loops: Vec<LoopHinge>,
}

impl Model {
    pub fn new(specs: Vec<BodySpec>) -> Result<Self, ModelError> {
        let mut bodies = Vec::with_capacity(specs.len());
        let mut dofs = 0;
        for (i, spec) in specs.into_iter().enumerate() {
            if let Some(hinge) = &spec.hinge
                && hinge.parent >= i
            {
                return Err(ModelError::Order {
                    child: i,
                    parent: hinge.parent,
                });
            }
            let mut mass = 0.0;
            let mut moment = Vector3::zeros();
            for b in &spec.boxes {
                if !(b.mass.is_finite() && b.mass > 0.0) {
                    return Err(ModelError::Invalid {
                        body: i,
                        what: "a box's mass",
                    });
                }
                if !b.half.iter().all(|h| h.is_finite() && *h > 0.0) {
                    return Err(ModelError::Invalid {
                        body: i,
                        what: "a box's size",
                    });
                }
                mass += b.mass;
                moment += b.pose.translation.vector * b.mass;
            }
            if mass <= 0.0 {
                return Err(ModelError::Massless(i));
            }
            let com = moment / mass;
            let mut inertia = Matrix3::zeros();
            for b in &spec.boxes {
                let (x, y, z) = (2.0 * b.half.x, 2.0 * b.half.y, 2.0 * b.half.z);
                let own = Matrix3::from_diagonal(&Vector3::new(
                    y * y + z * z,
                    x * x + z * z,
                    x * x + y * y,
                )) * (b.mass / 12.0);
                let r = b.pose.rotation.to_rotation_matrix();
                let d = b.pose.translation.vector - com;
                // Parallel axis theorem.
                inertia += r * own * r.transpose()
                    + b.mass * (Matrix3::identity() * d.norm_squared() - d * d.transpose());
            }
            if let Some(points) = &spec.contact_points
                && !points.iter().all(|p| p.iter().all(|x| x.is_finite()))
            {
                return Err(ModelError::Invalid {
                    body: i,
                    what: "a contact point",
                });
            }
            let reach = spec
                .contact_points
                .iter()
                .flatten()
                .map(|p| p.norm())
                .fold(0.0, f64::max);
            let dof = dofs;
            dofs += if spec.hinge.is_some() { 1 } else { 6 };
            bodies.push(Body {
                boxes: spec.boxes,
                hinge: spec.hinge,
                contact_points: spec.contact_points,
                reach,
                mass,
                com,
                inertia,
                dof,
            });
        }
        Ok(Self {
            bodies,
            dofs,
            loops: Vec::new(),
        })
    }

    /// This model with one more loop-closing hinge; its index is the
    /// number of loop hinges before it.
    pub fn with_loop(mut self, hinge: LoopHinge) -> Result<Self, ModelError> {
        let index = self.loops.len();
        let [a, b] = hinge.bodies;
        for body in [a, b] {
            if body >= self.bodies.len() || a == b {
                return Err(ModelError::LoopBody { index, body });
            }
        }
        self.loops.push(hinge);
        Ok(self)
    }

    #[must_use]
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }

    /// Number of generalized velocities.
    #[must_use]
    pub fn dofs(&self) -> usize {
        self.dofs
    }

    #[must_use]
    pub fn mass(&self, body: usize) -> f64 {
        self.bodies[body].mass
    }
}
