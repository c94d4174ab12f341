//! Spatial (6-D) vectors and inertias, all in world orientation about one
//! reference point per step, so that no transform is ever needed between
//! bodies (Featherstone, "Rigid Body Dynamics Algorithms", ch. 2, with the
//! ground frame as the common frame).

use nalgebra::{Matrix3, Matrix6, Vector3, Vector6};

/// A motion (angular velocity, velocity of the body point at the reference
/// point) or a force (moment about the reference point, force).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spatial {
    pub ang: Vector3<f64>,
    pub lin: Vector3<f64>,
}

impl Spatial {
    pub const ZERO: Spatial = Spatial {
        ang: Vector3::new(0.0, 0.0, 0.0),
        lin: Vector3::new(0.0, 0.0, 0.0),
    };

    #[must_use]
    pub fn new(ang: Vector3<f64>, lin: Vector3<f64>) -> Self {
        Self { ang, lin }
    }

    #[must_use]
    pub fn dot(&self, other: &Spatial) -> f64 {
        self.ang.dot(&other.ang) + self.lin.dot(&other.lin)
    }

    /// Motion × motion.
    #[must_use]
    pub fn cross_motion(&self, m: &Spatial) -> Spatial {
        Spatial {
            ang: self.ang.cross(&m.ang),
            lin: self.ang.cross(&m.lin) + self.lin.cross(&m.ang),
        }
    }

    /// Motion × force.
    #[must_use]
    pub fn cross_force(&self, f: &Spatial) -> Spatial {
        Spatial {
            ang: self.ang.cross(&f.ang) + self.lin.cross(&f.lin),
            lin: self.ang.cross(&f.lin),
        }
    }

    #[must_use]
    pub fn scale(&self, s: f64) -> Spatial {
        Spatial {
            ang: self.ang * s,
            lin: self.lin * s,
        }
    }

    #[must_use]
    pub fn to_vector(self) -> Vector6<f64> {
        Vector6::new(
            self.ang.x, self.ang.y, self.ang.z, self.lin.x, self.lin.y, self.lin.z,
        )
    }

    #[must_use]
    pub fn from_vector(v: &Vector6<f64>) -> Self {
        Spatial {
            ang: Vector3::new(v[0], v[1], v[2]),
            lin: Vector3::new(v[3], v[4], v[5]),
        }
    }
}

impl std::ops::Add for Spatial {
    type Output = Spatial;
    fn add(self, o: Spatial) -> Spatial {
        Spatial {
            ang: self.ang + o.ang,
            lin: self.lin + o.lin,
        }
    }
}

impl std::ops::AddAssign for Spatial {
    fn add_assign(&mut self, o: Spatial) {
        self.ang += o.ang;
        self.lin += o.lin;
    }
}

impl std::ops::Sub for Spatial {
    type Output = Spatial;
    fn sub(self, o: Spatial) -> Spatial {
        Spatial {
            ang: self.ang - o.ang,
            lin: self.lin - o.lin,
        }
    }
}

#[must_use]
pub fn skew(v: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::new(0.0, -v.z, v.y, v.z, 0.0, -v.x, -v.y, v.x, 0.0)
}

/// The spatial inertia about the reference point of a body of `mass` whose
/// centre of mass is at `c` from the reference point and whose rotational
/// inertia about the centre of mass is `inertia` (world axes).
#[must_use]
pub fn inertia_matrix(mass: f64, c: &Vector3<f64>, inertia: &Matrix3<f64>) -> Matrix6<f64> {
    let cx = skew(c);
    let mcx = mass * cx;
    let mut m = Matrix6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0)
        .copy_from(&(inertia - mcx * cx));
    m.fixed_view_mut::<3, 3>(0, 3).copy_from(&mcx);
    // (−m)·x is −(m·x) exactly: negation commutes with rounding.
    m.fixed_view_mut::<3, 3>(3, 0).copy_from(&(-mcx));
    // The identity times the mass: the mass on the diagonal, +0 elsewhere
    // (as `zeros` left it).
    for k in 3..6 {
        m[(k, k)] = mass;
    }
    m
}

#[must_use]
pub fn apply(inertia: &Matrix6<f64>, v: &Spatial) -> Spatial {
    Spatial::from_vector(&(inertia * v.to_vector()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kinetic energy from the spatial form equals ½mv_c² + ½ωᵀIω.
    #[test]
    fn spatial_inertia_gives_the_kinetic_energy() {
        let mass = 0.7;
        let c = Vector3::new(0.3, -0.1, 0.2);
        let inertia = Matrix3::new(0.02, 0.001, 0.0, 0.001, 0.03, 0.002, 0.0, 0.002, 0.01);
        let v = Spatial::new(Vector3::new(0.5, -1.0, 2.0), Vector3::new(0.1, 0.2, -0.3));
        let i = inertia_matrix(mass, &c, &inertia);
        let spatial = 0.5 * v.dot(&apply(&i, &v));
        let v_c = v.lin + v.ang.cross(&c);
        let direct = 0.5 * mass * v_c.norm_squared() + 0.5 * v.ang.dot(&(inertia * v.ang));
        assert!((spatial - direct).abs() < 1e-12, "{spatial} {direct}");
    }
}
