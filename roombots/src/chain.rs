//! Modules joined connector to connector: the four connection types of
//! 002 §2.1.3, the meta-module (two modules joined `C3X`–`C0X`, six
//! joints), and the forward kinematics of any tree of joined modules.
//!
//! Two joined connectors face each other: their origins meet, their Z axes
//! oppose, and one of four quarter-turns about the shared normal sets how
//! they sit. For two modules joined end to end, the quarter-turn decides
//! how the two diagonal joints at the joint meet, which is what the seed's
//! four keywords name: their axes parallel ([`ConnectionType::Parallel`]),
//! meeting at a shared corner of the cubes ([`ConnectionType::Perpendicular`];
//! the seed's "orthogonal planes" are at 70.5°, the only other angle two
//! cube diagonals make), or skew, one way or its mirror image (shear Z and
//! shear S). The seed's figure telling Z from S is lost; here shear Z is
//! the skew pair whose second axis passes the first on the right-handed
//! side, `(p2 - p1) · (d1 × d2) > 0` with both axes along the chain.

use std::f64::consts::{FRAC_PI_2, PI};
use std::fmt;
use std::str::FromStr;

use nalgebra::{Isometry3, UnitQuaternion, Vector3};

use crate::module::{Connector, Joints, ModulePose};

/// How two modules joined end to end (`C3X` of the first on `C0X` of the
/// second) sit: the seed's four keywords (003 calls them PAR, PER, SRZ,
/// SRS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectionType {
    Parallel,
    Perpendicular,
    ShearZ,
    ShearS,
}

impl ConnectionType {
    pub const ALL: [ConnectionType; 4] = [
        ConnectionType::Parallel,
        ConnectionType::Perpendicular,
        ConnectionType::ShearZ,
        ConnectionType::ShearS,
    ];

    /// The quarter-turn of the joined connectors that gives this type
    /// (checked against the geometry in the tests).
    #[must_use]
    pub fn quarter_turns(self) -> u8 {
        match self {
            ConnectionType::Parallel => 1,
            ConnectionType::Perpendicular => 3,
            ConnectionType::ShearZ => 0,
            ConnectionType::ShearS => 2,
        }
    }

    /// 003's short name.
    #[must_use]
    pub fn short(self) -> &'static str {
        match self {
            ConnectionType::Parallel => "PAR",
            ConnectionType::Perpendicular => "PER",
            ConnectionType::ShearZ => "SRZ",
            ConnectionType::ShearS => "SRS",
        }
    }

    /// The type two diagonal joint axes make (each a point and a
    /// direction along the chain), as the seed's visual rule reads them.
    #[must_use]
    pub fn of_axes(
        p1: Vector3<f64>,
        d1: Vector3<f64>,
        p2: Vector3<f64>,
        d2: Vector3<f64>,
    ) -> ConnectionType {
        let normal = d1.cross(&d2);
        if normal.norm() < 1e-9 {
            return ConnectionType::Parallel;
        }
        let skew = (p2 - p1).dot(&normal.normalize());
        if skew.abs() < 1e-9 {
            ConnectionType::Perpendicular
        } else if skew > 0.0 {
            ConnectionType::ShearZ
        } else {
            ConnectionType::ShearS
        }
    }
}

impl fmt::Display for ConnectionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectionType::Parallel => "parallel",
            ConnectionType::Perpendicular => "perpendicular",
            ConnectionType::ShearZ => "shear-z",
            ConnectionType::ShearS => "shear-s",
        })
    }
}

/// A name that is not a connection type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown connection type {0:?} (known: parallel, perpendicular, shear-z, shear-s, or PAR, PER, SRZ, SRS)"
)]
pub struct UnknownConnectionType(pub String);

impl FromStr for ConnectionType {
    type Err = UnknownConnectionType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ConnectionType::ALL
            .into_iter()
            .find(|t| t.to_string().eq_ignore_ascii_case(s) || t.short().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownConnectionType(s.to_owned()))
    }
}

/// The frame of a connector joined onto `onto` (a connector's frame) with
/// `quarter_turns` quarter-turns: origins together, Z axes opposed.
#[must_use]
pub fn joined(onto: &Isometry3<f64>, quarter_turns: u8) -> Isometry3<f64> {
    let flip = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), PI);
    let turn =
        UnitQuaternion::from_axis_angle(&Vector3::z_axis(), f64::from(quarter_turns) * FRAC_PI_2);
    onto * Isometry3::from_parts(Default::default(), flip * turn)
}

/// A module joined to one before it in a [`Tree`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// The module it hangs from (an earlier index).
    pub parent: usize,
    /// The parent's connector it is locked onto, and its own.
    pub parent_connector: Connector,
    pub connector: Connector,
    pub quarter_turns: u8,
}

/// Modules joined connector to connector, without loops: module 0 is the
/// root, held at `root_pose` by its submodule `root_submodule`'s `M` frame;
/// every other module hangs from an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub root_submodule: u8,
    pub root_pose: Isometry3<f64>,
    pub links: Vec<Link>,
}

impl Tree {
    /// Every module's submodule frames in the world, for each module's
    /// joints (`q[k]` for module `k`).
    ///
    /// # Panics
    /// When `q` has fewer entries than modules, or a link names a later
    /// parent.
    #[must_use]
    pub fn poses(&self, q: &[Joints]) -> Vec<ModulePose> {
        let root = ModulePose::of(q[0]).rerooted(self.root_submodule);
        let mut poses = vec![world(&root, &self.root_pose)];
        for (k, link) in self.links.iter().enumerate() {
            assert!(link.parent <= k, "module {} hangs from a later one", k + 1);
            let onto = poses[link.parent].connector(link.parent_connector);
            let mine = joined(&onto, link.quarter_turns);
            // The module held by the submodule of its connector.
            let own = ModulePose::of(q[k + 1]).rerooted(link.connector.submodule);
            let held = mine * link.connector.in_middle_frame().inverse();
            poses.push(world(&own, &held));
        }
        poses
    }
}

fn world(pose: &ModulePose, at: &Isometry3<f64>) -> ModulePose {
    ModulePose {
        middles: pose.middles.map(|m| at * m),
    }
}

/// Two modules joined `C3X` on `C0X` by `connection`: six joints, the
/// first module's `M0` the frame (002 §4: the seed's experiments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MetaModule {
    pub connection: ConnectionType,
}

impl MetaModule {
    #[must_use]
    pub fn new(connection: ConnectionType) -> Self {
        MetaModule { connection }
    }

    /// As a [`Tree`] held by the first module's `M0` at the origin.
    #[must_use]
    pub fn tree(&self) -> Tree {
        Tree {
            root_submodule: 0,
            root_pose: Isometry3::identity(),
            links: vec![Link {
                parent: 0,
                parent_connector: Connector::C3X,
                connector: Connector::C0X,
                quarter_turns: self.connection.quarter_turns(),
            }],
        }
    }

    /// Both modules' frames in the first module's `M0`.
    #[must_use]
    pub fn poses(&self, q: [f64; 6]) -> [ModulePose; 2] {
        let first = ModulePose::of([q[0], q[1], q[2]]);
        let onto = first.connector(Connector::C3X);
        let held = joined(&onto, self.connection.quarter_turns())
            * Connector::C0X.in_middle_frame().inverse();
        let second = ModulePose::of([q[3], q[4], q[5]]);
        [first, world(&second, &held)]
    }

    /// The end connector (`C3X` of the second module) in the first's `M0`:
    /// what `reachfw` places.
    #[must_use]
    pub fn end(&self, q: [f64; 6]) -> Isometry3<f64> {
        self.poses(q)[1].connector(Connector::C3X)
    }

    /// The four cube centres in chain order, in the first module's `M0`.
    #[must_use]
    pub fn cube_centres(&self, q: [f64; 6]) -> [Vector3<f64>; 4] {
        let [a, b] = self.poses(q);
        [
            a.cube_centre(0).coords,
            a.cube_centre(1).coords,
            b.cube_centre(0).coords,
            b.cube_centre(1).coords,
        ]
    }

    /// The six joints' axes in the first module's `M0`, in chain order.
    #[must_use]
    pub fn joint_axes(&self, q: [f64; 6]) -> [crate::module::JointAxis; 6] {
        let [a, b] = self.poses(q);
        [
            a.joint_axis(0),
            a.joint_axis(1),
            a.joint_axis(2),
            b.joint_axis(0),
            b.joint_axis(1),
            b.joint_axis(2),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_connection_type_is_the_geometry_it_names() {
        for t in ConnectionType::ALL {
            let axes = MetaModule::new(t).joint_axes([0.0; 6]);
            let (a, b) = (axes[2], axes[3]);
            let seen = ConnectionType::of_axes(
                a.point.coords,
                a.direction.into_inner(),
                b.point.coords,
                b.direction.into_inner(),
            );
            assert_eq!(seen, t);
            assert_eq!(t.to_string().parse::<ConnectionType>().unwrap(), t);
            assert_eq!(t.short().parse::<ConnectionType>().unwrap(), t);
        }
        assert!("diagonal".parse::<ConnectionType>().is_err());
    }

    #[test]
    fn seen_from_its_far_end_a_meta_module_is_the_same_chain_reversed() {
        // What reachbw relies on: the second module's M3 holding, the
        // first module's C0X is the end, and the angles run backwards.
        let q = [0.3, -1.2, 2.0, 0.7, 4.0, -0.4];
        let mut reversed = q;
        reversed.reverse();
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            let [first, second] = meta.poses(q);
            let seen = second.middles[3].inverse() * first.connector(Connector::C0X);
            let same = meta.end(reversed);
            assert!(
                (seen.translation.vector - same.translation.vector).norm() < 1e-12,
                "{t}"
            );
            assert!(seen.rotation.angle_to(&same.rotation) < 1e-9, "{t}");
        }
    }

    #[test]
    fn a_tree_of_two_is_the_meta_module() {
        let q = [0.3, -1.2, 2.0, 0.7, 4.0, -0.4];
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            let tree = meta.tree().poses(&[[q[0], q[1], q[2]], [q[3], q[4], q[5]]]);
            let direct = meta.poses(q);
            for (m, n) in tree.iter().zip(&direct) {
                for (x, y) in m.middles.iter().zip(&n.middles) {
                    assert!((x.translation.vector - y.translation.vector).norm() < 1e-12);
                    assert!(x.rotation.angle_to(&y.rotation) < 1e-9);
                }
            }
        }
    }
}
