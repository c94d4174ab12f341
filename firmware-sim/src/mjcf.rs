//! The robot as a MuJoCo model (MJCF), so that the same robot can be
//! simulated by MuJoCo side by side with our engines (`bench/peers/`).
//!
//! Each rigid cluster becomes a MuJoCo body carrying the boxes of its parts;
//! the root cluster gets a free joint, every servo a hinge joint with the
//! handle's range and a position actuator with the servo's PD gains and
//! torque limit. Contacts, friction and gravity are MuJoCo's with our
//! values. The joint angle of every hinge is the servo angle as the
//! simulation reads it, so a servo's target is its actuator's control:
//! `angle* + damping/stiffness · velocity*` is exactly our PD law.

use std::fmt::Write;

use rapier3d::math::{Pose, Vector};

use crate::geometry::HANDLE_RANGE;
use crate::physics::{Hinge, Topology};

/// The servo's PD law as MuJoCo's position actuator states it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActuatorGains {
    pub stiffness: f32,
    pub damping: f32,
    pub max_torque: f32,
}

/// What the model is simulated with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MjcfOptions {
    /// MuJoCo's time step (s).
    pub timestep: f64,
    pub ground_friction: f64,
    pub gains: ActuatorGains,
}

/// Why a robot has no MJCF model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MjcfError {
    #[error(
        "the servo of module index {0} closes a kinematic loop; MJCF export handles tree-shaped robots only"
    )]
    Loop(usize),
    #[error("cluster {0} is not connected to the rest of the robot by any servo")]
    Detached(usize),
}

/// The MJCF text of a robot whose servos are all at 0 rad in `topology`.
/// Actuators come in module order of the hinges, named `servo<module index>`.
pub fn to_mjcf(
    name: &str,
    topology: &Topology,
    options: &MjcfOptions,
) -> Result<String, MjcfError> {
    let n = topology.clusters.len();
    let mut parent: Vec<Option<(usize, Hinge)>> = vec![None; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut reached = vec![false; n];
    reached[0] = true;
    let mut frontier = vec![0];
    let hinges: Vec<Hinge> = topology.hinges.iter().flatten().copied().collect();
    let mut used = vec![false; hinges.len()];
    while let Some(c) = frontier.pop() {
        for (k, hinge) in hinges.iter().enumerate() {
            if used[k] || (hinge.body_cluster != c && hinge.handle_cluster != c) {
                continue;
            }
            used[k] = true;
            let other = if hinge.body_cluster == c {
                hinge.handle_cluster
            } else {
                hinge.body_cluster
            };
            if reached[other] {
                return Err(MjcfError::Loop(hinge.module));
            }
            reached[other] = true;
            parent[other] = Some((c, *hinge));
            children[c].push(other);
            frontier.push(other);
        }
    }
    if let Some(c) = reached.iter().position(|r| !r) {
        return Err(MjcfError::Detached(c));
    }

    let mut xml = String::new();
    let mu = options.ground_friction;
    let _ = writeln!(xml, "<mujoco model=\"{name}\">");
    let _ = writeln!(xml, "  <compiler angle=\"radian\"/>");
    let _ = writeln!(
        xml,
        "  <option timestep=\"{}\" gravity=\"0 0 -9.81\" integrator=\"implicitfast\"/>",
        options.timestep
    );
    let _ = writeln!(xml, "  <default>");
    let _ = writeln!(xml, "    <geom friction=\"{mu} 0.005 0.0001\"/>");
    let _ = writeln!(xml, "  </default>");
    let _ = writeln!(xml, "  <worldbody>");
    let _ = writeln!(
        xml,
        "    <geom name=\"ground\" type=\"plane\" size=\"50 50 0.1\"/>"
    );
    write_cluster(&mut xml, topology, &children, &parent, 0, Pose::IDENTITY, 2);
    let _ = writeln!(xml, "  </worldbody>");
    let _ = writeln!(xml, "  <actuator>");
    let g = options.gains;
    for hinge in &hinges {
        let _ = writeln!(
            xml,
            "    <position name=\"servo{m}\" joint=\"servo{m}\" kp=\"{}\" kv=\"{}\" forcelimited=\"true\" forcerange=\"{} {}\"/>",
            g.stiffness,
            g.damping,
            -g.max_torque,
            g.max_torque,
            m = hinge.module
        );
    }
    let _ = writeln!(xml, "  </actuator>");
    let _ = writeln!(xml, "</mujoco>");
    Ok(xml)
}

fn write_cluster(
    xml: &mut String,
    topology: &Topology,
    children: &[Vec<usize>],
    parent: &[Option<(usize, Hinge)>],
    c: usize,
    parent_pose: Pose,
    indent: usize,
) {
    let pad = " ".repeat(indent * 2);
    let pose = topology.clusters[c].state.pose;
    let local = parent_pose.inverse() * pose;
    let _ = writeln!(
        xml,
        "{pad}<body name=\"cluster{c}\" {}>",
        pose_attributes(local)
    );
    match parent[c] {
        None => {
            let _ = writeln!(xml, "{pad}  <freejoint/>");
        }
        Some((_, hinge)) => {
            // The joint angle must be the servo angle (handle relative to
            // body), so a body-side child turns the axis round.
            let (frame, sign) = if hinge.handle_cluster == c {
                (hinge.frame_on_handle, 1.0)
            } else {
                (hinge.frame_on_body, -1.0)
            };
            let axis = frame.rotation * Vector::X * sign;
            let _ = writeln!(
                xml,
                "{pad}  <joint name=\"servo{}\" type=\"hinge\" pos=\"{}\" axis=\"{}\" limited=\"true\" range=\"{} {}\"/>",
                hinge.module,
                vector(frame.translation),
                vector(axis),
                -HANDLE_RANGE,
                HANDLE_RANGE
            );
        }
    }
    for b in &topology.clusters[c].boxes {
        let _ = writeln!(
            xml,
            "{pad}  <geom name=\"part{}\" type=\"box\" size=\"{} {} {}\" mass=\"{}\" {}/>",
            b.part,
            b.half[0],
            b.half[1],
            b.half[2],
            b.mass,
            pose_attributes(b.pose)
        );
    }
    for &child in &children[c] {
        write_cluster(xml, topology, children, parent, child, pose, indent + 1);
    }
    let _ = writeln!(xml, "{pad}</body>");
}

fn vector(v: Vector) -> String {
    format!("{} {} {}", v.x, v.y, v.z)
}

fn pose_attributes(pose: Pose) -> String {
    let q = pose.rotation;
    format!(
        "pos=\"{}\" quat=\"{} {} {} {}\"",
        vector(pose.translation),
        q.w,
        q.x,
        q.y,
        q.z
    )
}
