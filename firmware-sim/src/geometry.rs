//! The physical YaMoR module and the rule that places a module against
//! another one (thesis 5.4.2, "Module Positioning").
//!
//! The thesis gives only the 180° handle range, the five connectors plus the
//! handle screw and the 15° connection steps; it gives no dimensions, masses
//! or servo figures. The constants below are approximations of the published
//! YaMoR module (Moeckel et al., 2006: a module of roughly 10 cm length and
//! about 250 g with a standard-size hobby servo), rounded and stated here so
//! every experiment can be traced to them:
//!
//! | quantity | value | note |
//! |---|---|---|
//! | body box | 60 × 55 × 55 mm | electronics, battery and servo |
//! | handle box | 40 × 50 × 50 mm, 5 mm from the hinge | the moving part, front connector at its tip |
//! | module length at 0 rad | 105 mm | body + hinge gap + handle |
//! | body mass | 0.20 kg | |
//! | handle mass | 0.05 kg | |
//! | servo stall torque | 1.0 N·m | ≈ 10 kg·cm, a standard-size hobby servo |
//! | servo no-load speed | 5.5 rad/s | ≈ 0.19 s per 60° |
//! | handle range | ±90° | thesis chapter 1: 180° |
//!
//! Frames (right-handed, metres): the body frame has x pointing to the handle,
//! z up, y to the left. The hinge axis is the body y axis through the centre
//! of the front face; a positive servo angle turns the handle tip towards −z.
//! A connector frame has its x axis along the outward normal and its z axis
//! along the connector's "north" (thesis figure 5.5).

use rapier3d::math::{Pose, Rotation, Vector};
use yamor_core::Connector;

/// Half extents of the body box (m).
pub const BODY_HALF: [f32; 3] = [0.030, 0.0275, 0.0275];
/// Half extents of the handle box (m).
pub const HANDLE_HALF: [f32; 3] = [0.020, 0.025, 0.025];
/// Distance from the hinge axis to the handle box centre along the handle (m).
pub const HANDLE_CENTRE: f32 = 0.025;
/// Distance from the hinge axis to the front connector (m).
pub const HANDLE_TIP: f32 = HANDLE_CENTRE + HANDLE_HALF[0];
pub const BODY_MASS: f32 = 0.20;
pub const HANDLE_MASS: f32 = 0.05;
/// Servo stall torque (N·m).
pub const SERVO_STALL_TORQUE: f32 = 1.0;
/// Servo no-load speed (rad/s).
pub const SERVO_MAX_SPEED: f32 = 5.5;
/// Mechanical range of the handle (rad).
pub const HANDLE_RANGE: f32 = yamor_snp::limits::HANDLE_RANGE as f32;

/// Which rigid part of a module a connector sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    Body,
    Handle,
}

impl Part {
    #[must_use]
    pub fn of(connector: Connector) -> Part {
        if connector == Connector::Front {
            Part::Handle
        } else {
            Part::Body
        }
    }
}

/// Pose of the hinge frame in the body frame at servo angle `angle`.
/// The hinge frame's x axis runs along the handle.
#[must_use]
pub fn handle_in_body(angle: f32) -> Pose {
    Pose::from_parts(
        Vector::new(BODY_HALF[0], 0.0, 0.0),
        Rotation::from_axis_angle(Vector::Y, angle),
    )
}

/// Hinge frame as a joint frame: rapier's revolute axis is the frame's x
/// axis, so rotate x onto the hinge axis (body y).
#[must_use]
pub fn hinge_joint_frame() -> Pose {
    Pose::from_rotation(Rotation::from_rotation_z(std::f32::consts::FRAC_PI_2))
}

/// Pose of a connector frame in the frame of the part that carries it.
#[must_use]
pub fn connector_in_part(connector: Connector) -> Pose {
    let (position, normal, north) = match connector {
        Connector::Front => (Vector::new(HANDLE_TIP, 0.0, 0.0), Vector::X, Vector::Z),
        Connector::Rear => (Vector::new(-BODY_HALF[0], 0.0, 0.0), -Vector::X, Vector::Z),
        Connector::Left => (Vector::new(0.0, BODY_HALF[1], 0.0), Vector::Y, Vector::Z),
        Connector::Right => (Vector::new(0.0, -BODY_HALF[1], 0.0), -Vector::Y, Vector::Z),
        Connector::Top => (Vector::new(0.0, 0.0, BODY_HALF[2]), Vector::Z, Vector::X),
        Connector::Bottom => (Vector::new(0.0, 0.0, -BODY_HALF[2]), -Vector::Z, Vector::X),
    };
    let basis = rapier3d::math::Matrix::from_cols(normal, north.cross(normal), north);
    Pose::from_parts(position, Rotation::from_mat3(&basis))
}

/// The mating transform between two connector frames: normals opposite, the
/// north of one rotated by `angle_deg` about the other's normal. It is its own
/// inverse up to the sign of the angle, so the rule is symmetric.
#[must_use]
pub fn mate(angle_deg: i32) -> Pose {
    let angle = (angle_deg as f32).to_radians();
    Pose::from_rotation(
        Rotation::from_rotation_x(angle) * Rotation::from_rotation_z(std::f32::consts::PI),
    )
}

/// Given the world pose of the destination part and the connection, the world
/// pose of the source part so that the two connectors mate.
#[must_use]
pub fn place_against(
    destination_part: Pose,
    destination: Connector,
    source: Connector,
    angle_deg: i32,
) -> Pose {
    let destination_connector = destination_part * connector_in_part(destination);
    let source_connector = destination_connector * mate(angle_deg);
    source_connector * connector_in_part(source).inverse()
}

/// The eight corners of a box, in the frame of its part.
pub fn box_corners(centre: Vector, half: [f32; 3]) -> impl Iterator<Item = Vector> {
    (0..8).map(move |i| {
        let sign = |bit: i32| if i & bit == 0 { -1.0 } else { 1.0 };
        centre + Vector::new(sign(1) * half[0], sign(2) * half[1], sign(4) * half[2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vector, b: Vector) -> bool {
        (a - b).length() < 1e-5
    }

    #[test]
    fn connector_frames_are_orthonormal_and_outward() {
        for c in Connector::ALL {
            let pose = connector_in_part(c);
            let normal = pose.rotation * Vector::X;
            let centre = if c == Connector::Front {
                Vector::new(HANDLE_CENTRE, 0.0, 0.0)
            } else {
                Vector::ZERO
            };
            assert!((pose.translation - centre).dot(normal) > 0.0, "{c}");
            assert!((pose.rotation.length() - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn mated_connectors_touch_with_opposite_normals() {
        let dest = Pose::from_parts(
            Vector::new(0.1, -0.2, 0.3),
            Rotation::from_axis_angle(Vector::new(1.0, 2.0, 3.0).normalize(), 0.7),
        );
        for angle in (-180..=180).step_by(15) {
            for (d, s) in [
                (Connector::Left, Connector::Rear),
                (Connector::Top, Connector::Front),
            ] {
                let src = place_against(dest, d, s, angle);
                let cd = dest * connector_in_part(d);
                let cs = src * connector_in_part(s);
                assert!(close(cd.translation, cs.translation));
                assert!(close(cd.rotation * Vector::X, -(cs.rotation * Vector::X)));
                let north_angle = (cd.rotation * Vector::Z)
                    .angle_between(cs.rotation * Vector::Z)
                    .to_degrees();
                assert!((north_angle - (angle as f32).abs()).abs() < 1e-2, "{angle}");
            }
        }
    }

    #[test]
    fn placement_is_symmetric() {
        let a = Pose::IDENTITY;
        let b = place_against(a, Connector::Right, Connector::Rear, 45);
        let back = place_against(b, Connector::Rear, Connector::Right, 45);
        assert!(close(back.translation, a.translation));
        assert!((back.rotation.dot(a.rotation).abs() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn positive_servo_angle_turns_the_tip_down() {
        let tip = handle_in_body(0.5) * Vector::new(HANDLE_TIP, 0.0, 0.0);
        assert!(tip.z < 0.0);
    }
}
