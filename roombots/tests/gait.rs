//! Roombot robots as `world.xml` describes them, and their walks.

use std::sync::atomic::AtomicBool;

use yamor_core::evaluation::{EvaluationSpec, Situation};
use yamor_core::{Motion, RobotConfig};
use yamor_roombots::gait::{DescriptionError, RoombotExample, RoombotRobot, WalkError, walk};

fn refused(text: &str) -> String {
    match RoombotRobot::from_xml_str("robot.xml", text) {
        Err(e @ (DescriptionError::Invalid { .. } | DescriptionError::Xml { .. })) => {
            let message = e.to_string();
            assert!(
                message.starts_with("robot.xml: "),
                "names the file: {message}"
            );
            message
        }
        Ok(robot) => panic!("accepted: {robot:?}"),
    }
}

fn robot(body: &str) -> String {
    format!("<morphology family=\"roombots\">{body}</morphology>")
}

#[test]
fn every_bad_description_is_refused_with_what_is_wrong() {
    let two = "<module id=\"0\"/><module id=\"1\"/>";
    for (text, expected) in [
        (
            "<morphology family=\"roombots\"><module id=\"0\">".to_owned(),
            "not XML",
        ),
        (
            "<morphology><module id=\"0\"/></morphology>".to_owned(),
            "family",
        ),
        (robot(""), "at least one <module>"),
        (
            robot("<module id=\"0\"/><module id=\"0\"/>"),
            "declared twice",
        ),
        (robot("<module id=\"x\"/>"), "whole number"),
        (
            robot("<module id=\"0\" angles=\"1 2\"/>"),
            "three finite radians",
        ),
        (
            robot("<module id=\"0\" angles=\"1 2 nan\"/>"),
            "three finite radians",
        ),
        (
            robot("<module id=\"0\"/><wheel/>"),
            "unexpected element <wheel>",
        ),
        (robot(two), "module 1 is not connected"),
        (
            robot(&format!(
                "{two}<connect idfrom=\"1\" connfrom=\"C9X\" idto=\"0\" connto=\"C3X\"/>"
            )),
            "unknown connector",
        ),
        (
            robot(&format!(
                "{two}<connect idfrom=\"1\" connfrom=\"C1X\" idto=\"0\" connto=\"C3X\"/>"
            )),
            "unknown connector \"C1X\"",
        ),
        (
            robot(&format!(
                "{two}<connect idfrom=\"1\" connfrom=\"C0X\" idto=\"7\" connto=\"C3X\"/>"
            )),
            "not declared",
        ),
        (
            robot(&format!(
                "{two}<connect idfrom=\"1\" connfrom=\"C0X\" idto=\"0\" connto=\"C3X\" turns=\"4\"/>"
            )),
            "turns",
        ),
        (
            robot(&format!(
                "{two}<connect idfrom=\"1\" connfrom=\"C0X\" idto=\"0\" connto=\"C3X\"/>\
                 <connect idfrom=\"1\" connfrom=\"C0Y\" idto=\"0\" connto=\"C0Y\"/>"
            )),
            "close a loop",
        ),
        (
            robot(
                "<module id=\"0\"/><module id=\"1\"/><module id=\"2\"/>\
                 <connect idfrom=\"1\" connfrom=\"C0X\" idto=\"0\" connto=\"C3X\"/>\
                 <connect idfrom=\"2\" connfrom=\"C0X\" idto=\"0\" connto=\"C3X\"/>",
            ),
            "already in use",
        ),
    ] {
        let message = refused(&text);
        assert!(message.contains(expected), "{text}: {message}");
    }
}

#[test]
fn the_examples_are_the_robots_their_comments_say() {
    let meta = RoombotExample::named("roombots-meta")
        .unwrap()
        .robot()
        .unwrap();
    assert_eq!(meta.ids, vec![0, 1]);
    assert_eq!(meta.oscillators(), vec![0, 1, 2, 3, 4, 5]);
    let quad = RoombotExample::named("roombots-quadruped").unwrap();
    let robot = quad.robot().unwrap();
    assert_eq!(robot.ids.len(), 6);
    // The legs' middle joints turn round.
    let gait = quad.gait().unwrap();
    let rotating: Vec<u32> = gait
        .modules
        .iter()
        .filter(|m| m.motion == Motion::Rotate)
        .map(|m| m.id)
        .collect();
    assert_eq!(rotating, vec![7, 10, 13, 16]);
    // Lying on the floor: its lowest point touches it.
    let on_floor = robot
        .on_floor(&yamor_roombots::physics::RobotSettings::default())
        .unwrap();
    assert!(on_floor.lowest_point().abs() < 2e-3);
}

fn spec(seed: u64) -> EvaluationSpec {
    EvaluationSpec {
        seed,
        ..EvaluationSpec::lasting_after(1.0, 4.0).unwrap()
    }
}

#[test]
fn a_walk_is_the_same_from_the_same_start_and_another_from_another() {
    let example = RoombotExample::named("roombots-quadruped").unwrap();
    let (robot, gait) = (example.robot().unwrap(), example.gait().unwrap());
    let never = AtomicBool::new(false);
    let a = walk(&robot, &gait, &spec(1), &never).unwrap();
    let again = walk(&robot, &gait, &spec(1), &never).unwrap();
    let other = walk(&robot, &gait, &spec(2), &never).unwrap();
    assert_eq!(a.velocity, again.velocity);
    assert_ne!(a.velocity, other.velocity);
    assert!(a.velocity > 0.0 && a.velocity.is_finite());
    assert!((a.simulated - 4.0).abs() < 0.01);
    // Standing still: a gait of no amplitude and no rotation barely moves.
    let mut still = gait.clone();
    for m in &mut still.modules {
        m.amplitude = 0.0;
        m.motion = Motion::Oscillate;
    }
    let rest = walk(&robot, &still, &spec(1), &never).unwrap();
    assert!(rest.velocity < 0.002, "{}", rest.velocity);
}

#[test]
fn bad_walks_are_refused_and_a_cancelled_one_stops() {
    let example = RoombotExample::named("roombots-meta").unwrap();
    let (robot, gait) = (example.robot().unwrap(), example.gait().unwrap());
    let never = AtomicBool::new(false);
    let mut stray = gait.clone();
    stray.modules[0].id = 40;
    assert_eq!(
        walk(&robot, &stray, &spec(1), &never).unwrap_err(),
        WalkError::UnknownOscillator(40)
    );
    let upside_down = EvaluationSpec {
        situation: Situation {
            upside_down: true,
            ..Situation::default()
        },
        ..spec(1)
    };
    assert!(matches!(
        walk(&robot, &gait, &upside_down, &never),
        Err(WalkError::Unsupported(_))
    ));
    let cancelled = AtomicBool::new(true);
    assert!(matches!(
        walk(&robot, &gait, &spec(1), &cancelled),
        Err(WalkError::Cancelled(_))
    ));
    let bad: RobotConfig = gait;
    let negative = EvaluationSpec {
        measure: -1.0,
        ..spec(1)
    };
    assert!(matches!(
        walk(&robot, &bad, &negative, &never),
        Err(WalkError::Spec(_))
    ));
}

#[test]
fn a_rotation_faster_than_a_joint_turns_and_a_stray_link_are_refused() {
    let example = RoombotExample::named("roombots-quadruped").unwrap();
    let (robot, gait) = (example.robot().unwrap(), example.gait().unwrap());
    let never = AtomicBool::new(false);
    let mut fast = gait.clone();
    let rotating = fast
        .modules
        .iter_mut()
        .find(|m| m.motion == Motion::Rotate)
        .unwrap();
    rotating.speed = 4.0;
    let id = rotating.id;
    assert!(matches!(
        walk(&robot, &fast, &spec(1), &never),
        Err(WalkError::TooFast { oscillator, .. }) if oscillator == id
    ));
    let mut stray = gait;
    stray.modules[0].cpg_links[0].to = 60;
    assert!(matches!(
        walk(&robot, &stray, &spec(1), &never),
        Err(WalkError::UnknownCoupling { to: 60, .. })
    ));
}
