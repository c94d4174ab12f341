//! The physics seam: engines by name, the MuJoCo export, observed walks.

use rapier3d::math::{Pose, Rotation, Vector};
use yamor_core::evaluation::EvaluationSpec;
use yamor_sim::geometry::{BODY_HALF, Part};
use yamor_sim::mjcf::{MjcfError, MjcfOptions, to_mjcf};
use yamor_sim::physics::{Engine, part_index};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimSettings, Simulation, evaluate, evaluate_observed};

fn options() -> MjcfOptions {
    MjcfOptions {
        timestep: 1.0 / 240.0,
        ground_friction: 0.8,
        gains: Simulation::healthy_servo_gains(),
    }
}

fn numbers(node: roxmltree::Node, name: &str) -> Vec<f32> {
    node.attribute(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn local_pose(node: roxmltree::Node) -> Pose {
    let p = numbers(node, "pos");
    let q = numbers(node, "quat");
    Pose::from_parts(
        Vector::new(p[0], p[1], p[2]),
        Rotation::from_xyzw(q[1], q[2], q[3], q[0]),
    )
}

#[test]
fn engines_are_named_and_unknown_names_are_refused() {
    for engine in Engine::ALL {
        assert_eq!(engine.name().parse::<Engine>(), Ok(engine));
    }
    let e = "bogus".parse::<Engine>().unwrap_err().to_string();
    assert!(e.contains("bogus") && e.contains("rapier"), "{e}");
}

/// Composing the exported bodies, geoms and joints gives back every part
/// where the simulation has it, and every hinge on its module's servo axis
/// with the servo's sign.
#[test]
fn the_mujoco_model_is_the_robot() {
    let example = ExampleRobot::named("quadruped").unwrap();
    let sim = Simulation::new(&example.morphology().unwrap(), SimSettings::default()).unwrap();
    let topology = sim.topology();
    let xml = to_mjcf("quadruped", &topology, &options()).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();

    let mut parts_seen = 0;
    let mut joints_seen = 0;
    for body in doc.descendants().filter(|n| n.has_tag_name("body")) {
        let world = body
            .ancestors()
            .filter(|n| n.has_tag_name("body"))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .fold(Pose::IDENTITY, |pose, b| pose * local_pose(b));
        for child in body.children().filter(|n| n.is_element()) {
            match child.tag_name().name() {
                "geom" => {
                    let part: usize = child.attribute("name").unwrap()[4..].parse().unwrap();
                    let centre = if part.is_multiple_of(2) {
                        Vector::ZERO
                    } else {
                        Vector::new(yamor_sim::geometry::HANDLE_CENTRE, 0.0, 0.0)
                    };
                    let expected = sim.physics().part_state(part).pose * centre;
                    let got = (world * local_pose(child)).translation;
                    assert!((got - expected).length() < 1e-5, "part {part}");
                    parts_seen += 1;
                }
                "joint" => {
                    let m: usize = child.attribute("name").unwrap()[5..].parse().unwrap();
                    let body_pose = sim.physics().part_state(part_index(m, Part::Body)).pose;
                    let p = numbers(child, "pos");
                    let pos = world * Vector::new(p[0], p[1], p[2]);
                    let hinge = body_pose * Vector::new(BODY_HALF[0], 0.0, 0.0);
                    assert!((pos - hinge).length() < 1e-5, "hinge of module {m}");
                    let a = numbers(child, "axis");
                    let axis = world.rotation * Vector::new(a[0], a[1], a[2]);
                    // A positive joint angle must turn the handle as a
                    // positive servo angle does: about the body's y axis, or
                    // the body about the opposite axis when the body is the child.
                    let child_holds_handle = topology.hinges[m].unwrap().handle_cluster
                        == body.attribute("name").unwrap()[7..]
                            .parse::<usize>()
                            .unwrap();
                    let sign = if child_holds_handle { 1.0 } else { -1.0 };
                    assert!((axis - sign * (body_pose.rotation * Vector::Y)).length() < 1e-5);
                    joints_seen += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(parts_seen, topology.cluster_of.len());
    assert_eq!(joints_seen, topology.hinges.iter().flatten().count());
    assert_eq!(joints_seen, 8, "the quadruped has eight servos");
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("freejoint"))
            .count(),
        1
    );
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("position"))
            .count(),
        8
    );
}

/// Two active modules, each handle glued to the other's body: two hinges
/// between the same two clusters, a kinematic loop.
#[test]
fn a_robot_with_a_loop_has_no_mujoco_tree() {
    use yamor_sim::physics::{PartState, Topology};
    let parts = [PartState::at_rest(Pose::IDENTITY); 4];
    let connections = [
        (part_index(0, Part::Handle), part_index(1, Part::Body)),
        (part_index(1, Part::Handle), part_index(0, Part::Body)),
    ];
    let topology = Topology::new(&[false, false], &connections, &parts);
    assert_eq!(topology.clusters.len(), 2);
    let e = to_mjcf("ring", &topology, &options()).unwrap_err();
    assert!(matches!(e, MjcfError::Loop(_)), "{e}");
}

#[test]
fn an_observed_walk_is_the_walk_and_shows_every_tick() {
    let example = ExampleRobot::named("quadruped").unwrap();
    let (morphology, gait) = (example.morphology().unwrap(), example.gait().unwrap());
    let spec = EvaluationSpec::lasting(9.0).unwrap();
    let mut ticks = 0;
    let mut last_commands = Vec::new();
    let observed = evaluate_observed(
        &morphology,
        &gait,
        SimSettings::default(),
        &spec,
        &mut |sim| {
            ticks += 1;
            last_commands = sim.servo_commands().to_vec();
        },
    )
    .unwrap();
    let plain = evaluate(&morphology, &gait, SimSettings::default(), &spec).unwrap();
    assert_eq!(observed.velocity, plain.velocity);
    assert_eq!(ticks, plain.physics_steps);
    assert_eq!(last_commands.len(), morphology.modules.len());
    assert!(
        last_commands.iter().any(|c| c.stiffness > 0.0),
        "the gait drives its servos"
    );
}
