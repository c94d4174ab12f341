//! One Roombot module: two cubes of four half-cube submodules, three
//! continuous joints, ten connectors (seed 002 §2.1, App. B).
//!
//! Geometry (002 §1.1.3: a cube of 11 cm side intersected with a sphere of
//! 14 cm diameter; 003 §1.5: one cube per grid cell). All frames are given
//! in the module's `M0` frame at its home pose (every joint at 0):
//! - cube A (submodules 0 and 1) is centred at the origin, cube B
//!   (submodules 2 and 3) at `(-CELL, 0, 0)`: the module's long axis is
//!   `-x` of `M0`, and its end faces carry `C0X` (`+x`) and `C3X` (`-x`);
//! - each cube is cut by the plane through its centre perpendicular to its
//!   great diagonal `(1, 1, 1)`: submodule 0 and 2 are the `+++` halves,
//!   1 and 3 the `---` halves;
//! - joint 1 turns submodule 1 against 0 about cube A's diagonal, joint 2
//!   cube B against cube A about the long axis, joint 3 submodule 3 against
//!   2 about cube B's diagonal; each axis points along the chain (from
//!   submodule 0 towards 3), which makes the chain symmetric: seen from
//!   `M3`, the module is the same chain with its angles in reverse order.
//!
//! The seed's figures of the frames are lost in its text; this is the
//! unique right-handed reading of its conventions (`M_i` at the cube's
//! centre; connector Z outwards; a connector named after the `M_i` axis
//! pointing at it; X towards the next connector anticlockwise), and the
//! middle joint's zero is the pose with both diagonals parallel. Its lattice
//! reproduces the seed's own counts: 5,184 configurations of a meta-module,
//! 63 distinct per connection type (003 §2.4), reach three cells.

use std::f64::consts::{FRAC_PI_2, PI};
use std::fmt;
use std::str::FromStr;

use nalgebra::{
    Isometry3, Matrix3, Point3, Rotation3, Translation3, Unit, UnitQuaternion, Vector3,
};

/// Side of a cube, and of a grid cell (m).
pub const CELL: f64 = 0.11;
/// Half a cube: a connector's distance from its cube's centre (m).
pub const HALF: f64 = CELL / 2.0;
/// Radius of the sphere each cube is cut from (m).
pub const RADIUS: f64 = 0.07;
/// One step of an outer joint between lattice poses: its cube maps onto
/// itself every third of a turn.
pub const OUTER_STEP: f64 = 2.0 * PI / 3.0;
/// One step of the middle joint between lattice poses.
pub const MIDDLE_STEP: f64 = FRAC_PI_2;

/// A module's three joint angles (rad), unbounded: the joints turn
/// continuously.
pub type Joints = [f64; 3];

/// An axis of a submodule's `M_i` frame, naming the connector on that face.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Axis {
    X,
    Y,
    Z,
}

/// A connector of a module: its submodule and the face it sits on. `C1X`
/// and `C2X` face the middle joint and do not exist as connectors, but
/// their frames can be computed (002 App. B); [`Connector::ALL`] lists the
/// ten that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Connector {
    pub submodule: u8,
    pub axis: Axis,
}

impl Connector {
    pub const C0X: Connector = Connector::new(0, Axis::X);
    pub const C0Y: Connector = Connector::new(0, Axis::Y);
    pub const C0Z: Connector = Connector::new(0, Axis::Z);
    pub const C1X: Connector = Connector::new(1, Axis::X);
    pub const C1Y: Connector = Connector::new(1, Axis::Y);
    pub const C1Z: Connector = Connector::new(1, Axis::Z);
    pub const C2X: Connector = Connector::new(2, Axis::X);
    pub const C2Y: Connector = Connector::new(2, Axis::Y);
    pub const C2Z: Connector = Connector::new(2, Axis::Z);
    pub const C3X: Connector = Connector::new(3, Axis::X);
    pub const C3Y: Connector = Connector::new(3, Axis::Y);
    pub const C3Z: Connector = Connector::new(3, Axis::Z);

    /// The ten connectors, in App. B's order.
    pub const ALL: [Connector; 10] = [
        Connector::C0X,
        Connector::C0Y,
        Connector::C0Z,
        Connector::C1Y,
        Connector::C1Z,
        Connector::C2Y,
        Connector::C2Z,
        Connector::C3X,
        Connector::C3Y,
        Connector::C3Z,
    ];

    const fn new(submodule: u8, axis: Axis) -> Self {
        Connector { submodule, axis }
    }

    /// Whether it exists (not `C1X` or `C2X`, which face the middle joint).
    #[must_use]
    pub fn is_real(self) -> bool {
        !(matches!(self.submodule, 1 | 2) && self.axis == Axis::X)
    }

    /// Its frame in its submodule's `M_i` frame: origin at the face centre,
    /// Z outwards, X towards the next connector anticlockwise seen from
    /// outside the submodule's corner, Y towards the previous.
    #[must_use]
    pub fn in_middle_frame(self) -> Isometry3<f64> {
        let (origin, columns) = match self.axis {
            Axis::X => (
                Vector3::x() * HALF,
                [Vector3::y(), Vector3::z(), Vector3::x()],
            ),
            Axis::Y => (
                Vector3::y() * HALF,
                [Vector3::z(), Vector3::x(), Vector3::y()],
            ),
            Axis::Z => (
                Vector3::z() * HALF,
                [Vector3::x(), Vector3::y(), Vector3::z()],
            ),
        };
        frame(origin, columns)
    }
}

impl fmt::Display for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let axis = match self.axis {
            Axis::X => 'X',
            Axis::Y => 'Y',
            Axis::Z => 'Z',
        };
        write!(f, "C{}{axis}", self.submodule)
    }
}

/// A name that is not a connector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown connector {0:?} (known: C0X C0Y C0Z C1Y C1Z C2Y C2Z C3X C3Y C3Z)")]
pub struct UnknownConnector(pub String);

impl FromStr for Connector {
    type Err = UnknownConnector;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Connector::ALL
            .into_iter()
            .find(|c| c.to_string().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownConnector(s.to_owned()))
    }
}

/// An isometry from an origin and the columns of its rotation.
fn frame(origin: Vector3<f64>, columns: [Vector3<f64>; 3]) -> Isometry3<f64> {
    let rotation = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&columns));
    Isometry3::from_parts(
        Translation3::from(origin),
        UnitQuaternion::from_rotation_matrix(&rotation),
    )
}

/// A joint's axis: a unit direction through a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointAxis {
    pub point: Point3<f64>,
    pub direction: Unit<Vector3<f64>>,
}

impl JointAxis {
    /// The axis moved by `pose`.
    #[must_use]
    pub fn transformed(&self, pose: &Isometry3<f64>) -> JointAxis {
        JointAxis {
            point: pose * self.point,
            direction: Unit::new_unchecked(pose.rotation * self.direction.into_inner()),
        }
    }

    /// The rigid motion turning by `angle` about this axis.
    #[must_use]
    pub fn rotation(&self, angle: f64) -> Isometry3<f64> {
        let turn = UnitQuaternion::from_axis_angle(&self.direction, angle);
        let p = self.point.coords;
        Isometry3::from_parts(Translation3::from(p - turn * p), turn)
    }
}

/// The home pose (joints at 0) of each submodule's `M_i` frame in `M0`.
#[must_use]
pub fn home_middle_frames() -> [Isometry3<f64>; 4] {
    // The `---` halves see their own corner as `+++`: x_i = -x0 (towards
    // the middle joint), y_i = -z0, z_i = -y0.
    let flipped = [-Vector3::x(), -Vector3::z(), -Vector3::y()];
    let axes = [Vector3::x(), Vector3::y(), Vector3::z()];
    let cube_b = -Vector3::x() * CELL;
    [
        frame(Vector3::zeros(), axes),
        frame(Vector3::zeros(), flipped),
        frame(cube_b, axes),
        frame(cube_b, flipped),
    ]
}

/// The three joints' axes in `M0` at the home pose, each along the chain.
#[must_use]
pub fn home_joint_axes() -> [JointAxis; 3] {
    let diagonal = Unit::new_normalize(-Vector3::new(1.0, 1.0, 1.0));
    [
        JointAxis {
            point: Point3::origin(),
            direction: diagonal,
        },
        JointAxis {
            point: Point3::origin(),
            direction: Unit::new_unchecked(-Vector3::x()),
        },
        JointAxis {
            point: Point3::new(-CELL, 0.0, 0.0),
            direction: diagonal,
        },
    ]
}

/// The home frames, the home axes, and each axis in the frame of the
/// submodule that carries it: computed once, read by every pose.
struct Home {
    middles: [Isometry3<f64>; 4],
    axes: [JointAxis; 3],
    carried: [JointAxis; 3],
}

fn home() -> &'static Home {
    static HOME: std::sync::OnceLock<Home> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let middles = home_middle_frames();
        let axes = home_joint_axes();
        let carried = std::array::from_fn(|j| axes[j].transformed(&middles[j].inverse()));
        Home {
            middles,
            axes,
            carried,
        }
    })
}

/// A module posed by its joints: every submodule's `M_i` frame in `M0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModulePose {
    pub middles: [Isometry3<f64>; 4],
}

impl ModulePose {
    /// Forward kinematics: the product of the joints' rotations (each about
    /// its axis at home) applied to the home frames.
    #[must_use]
    pub fn of(q: Joints) -> ModulePose {
        let home = home();
        let mut moved = Isometry3::identity();
        let mut middles = home.middles;
        for (i, axis) in home.axes.iter().enumerate() {
            moved *= axis.rotation(q[i]);
            middles[i + 1] = moved * home.middles[i + 1];
        }
        ModulePose { middles }
    }

    /// A connector's frame in `M0`.
    #[must_use]
    pub fn connector(&self, c: Connector) -> Isometry3<f64> {
        self.middles[usize::from(c.submodule)] * c.in_middle_frame()
    }

    /// Every frame in the frame of submodule `root`'s `M` instead of `M0`:
    /// the module held by another end.
    #[must_use]
    pub fn rerooted(&self, root: u8) -> ModulePose {
        let inverse = self.middles[usize::from(root)].inverse();
        ModulePose {
            middles: self.middles.map(|m| inverse * m),
        }
    }

    /// The centre of cube A (0) or B (1), in `M0`.
    #[must_use]
    pub fn cube_centre(&self, cube: usize) -> Point3<f64> {
        self.middles[cube * 2] * Point3::origin()
    }

    /// Joint `j`'s axis (0, 1, 2) in `M0`: fixed in the submodule before
    /// it, so moved with that submodule.
    #[must_use]
    pub fn joint_axis(&self, j: usize) -> JointAxis {
        home().carried[j].transformed(&self.middles[j])
    }
}

/// `q` with each angle wrapped to `(-π, π]`.
#[must_use]
pub fn wrapped<const N: usize>(q: [f64; N]) -> [f64; N] {
    q.map(wrap)
}

/// An angle wrapped to `(-π, π]`.
#[must_use]
pub fn wrap(a: f64) -> f64 {
    let w = (a + PI).rem_euclid(2.0 * PI) - PI;
    if w <= -PI { w + 2.0 * PI } else { w }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn close(a: &Isometry3<f64>, b: &Isometry3<f64>) -> bool {
        (a.translation.vector - b.translation.vector).norm() < 1e-12
            && a.rotation.angle_to(&b.rotation) < 1e-9
    }

    #[test]
    fn connectors_read_back_and_two_do_not_exist() {
        for c in Connector::ALL {
            assert_eq!(c.to_string().parse::<Connector>().unwrap(), c);
            assert!(c.is_real());
        }
        assert!(!Connector::C1X.is_real() && !Connector::C2X.is_real());
        assert!("C1X".parse::<Connector>().is_err());
        assert!("c4y".parse::<Connector>().is_err());
    }

    #[test]
    fn connector_frames_are_right_handed_point_outwards_and_face_each_other_across_the_middle() {
        let pose = ModulePose::of([0.0; 3]);
        for c in Connector::ALL
            .into_iter()
            .chain([Connector::C1X, Connector::C2X])
        {
            let f = pose.connector(c);
            let r = f.rotation.to_rotation_matrix();
            assert!((r.matrix().determinant() - 1.0).abs() < 1e-12);
            // Z points away from the connector's cube centre.
            let cube = usize::from(c.submodule / 2);
            let out = f.translation.vector - pose.cube_centre(cube).coords;
            assert!((out.norm() - HALF).abs() < 1e-12, "{c}");
            assert!((r * Vector3::z() - out / HALF).norm() < 1e-12, "{c}");
        }
        // The end faces and the faces across the middle joint.
        let c0x = pose.connector(Connector::C0X).translation.vector;
        let c3x = pose.connector(Connector::C3X).translation.vector;
        assert!((c0x - Vector3::new(HALF, 0.0, 0.0)).norm() < 1e-12);
        assert!((c3x - Vector3::new(-3.0 * HALF, 0.0, 0.0)).norm() < 1e-12);
        let (c1x, c2x) = (
            pose.connector(Connector::C1X),
            pose.connector(Connector::C2X),
        );
        assert!((c1x.translation.vector - c2x.translation.vector).norm() < 1e-12);
    }

    #[test]
    fn lattice_steps_map_cubes_onto_cells() {
        // A third of a turn of an outer joint, a quarter of the middle one:
        // every submodule's centre on a cell centre, its axes on the grid.
        for q in [
            [OUTER_STEP, 0.0, 0.0],
            [0.0, MIDDLE_STEP, 0.0],
            [2.0 * OUTER_STEP, 3.0 * MIDDLE_STEP, OUTER_STEP],
        ] {
            let pose = ModulePose::of(q);
            for m in pose.middles {
                let p = m.translation.vector / CELL;
                assert!((p - p.map(f64::round)).norm() < 1e-12, "{q:?}: {p}");
                let r = m.rotation.to_rotation_matrix();
                assert!(
                    r.matrix()
                        .iter()
                        .all(|x| (x.abs() - x.abs().round()).abs() < 1e-12)
                );
            }
        }
        // q1 = 2π/3 swings cube B from -x to -z of cube A (002 §2.5 as read).
        let swung = ModulePose::of([OUTER_STEP, 0.0, 0.0]).cube_centre(1);
        assert!(
            (swung.coords - Vector3::new(0.0, 0.0, -CELL)).norm() < 1e-12,
            "{swung}"
        );
    }

    #[test]
    fn seen_from_m3_the_module_is_the_same_chain_with_its_angles_reversed() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut next = || rng.random_range(-4.0..4.0);
        for _ in 0..100 {
            let q = [next(), next(), next()];
            // M0 seen from M3 is M3 seen from M0 with the angles reversed.
            let m0_in_m3 = ModulePose::of(q).rerooted(3).middles[0];
            let reversed = ModulePose::of([q[2], q[1], q[0]]).middles[3];
            assert!(close(&m0_in_m3, &reversed), "{q:?}");
        }
    }

    /// M3 in M0 by the seed's other route (002 §1.2.1, §2.1.2): base
    /// frames B0…B3 and modified Denavit–Hartenberg parameters, the one
    /// translation between B1 and B2; β is the angle between a cube's
    /// diagonal and its face normal.
    fn m3_by_denavit_hartenberg(q: Joints) -> Isometry3<f64> {
        let beta = (1.0 / 3.0_f64.sqrt()).acos();
        let rot_x = |a: f64| Isometry3::rotation(Vector3::x() * a);
        let rot_z = |a: f64| Isometry3::rotation(Vector3::z() * a);
        let b0_in_m0 = frame(
            Vector3::zeros(),
            [
                Vector3::new(0.0, 1.0, -1.0).normalize(),
                Vector3::new(2.0, -1.0, -1.0).normalize(),
                Vector3::new(-1.0, -1.0, -1.0).normalize(),
            ],
        );
        let b3_in_m3 = frame(
            Vector3::zeros(),
            [
                Vector3::new(0.0, 1.0, -1.0).normalize(),
                Vector3::new(-2.0, 1.0, 1.0).normalize(),
                Vector3::new(1.0, 1.0, 1.0).normalize(),
            ],
        );
        b0_in_m0
            * rot_z(q[0])
            * rot_x(beta)
            * rot_z(q[1])
            * Isometry3::translation(0.0, 0.0, CELL)
            * rot_x(-beta)
            * rot_z(q[2])
            * b3_in_m3.inverse()
    }

    #[test]
    fn the_product_of_joint_rotations_agrees_with_the_denavit_hartenberg_chain() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut next = || rng.random_range(-10.0..10.0);
        for _ in 0..1000 {
            let q = [next(), next(), next()];
            let poe = ModulePose::of(q).middles[3];
            let dh = m3_by_denavit_hartenberg(q);
            assert!(
                (poe.translation.vector - dh.translation.vector).norm() < 1e-12
                    && poe.rotation.angle_to(&dh.rotation) < 1e-9,
                "{q:?}: {poe} vs {dh}"
            );
        }
    }

    #[test]
    fn angles_wrap_into_one_turn() {
        assert!((wrap(3.0 * PI) - PI).abs() < 1e-12);
        assert!((wrap(-PI) - PI).abs() < 1e-12);
        // KDL's 1204.18 rad (002 §5.3.1) is 191 2/3 turns.
        assert!((wrap(1204.18) - (1204.18 - 384.0 * PI)).abs() < 1e-9);
    }
}
