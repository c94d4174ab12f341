use std::sync::atomic::AtomicBool;
use yamor_core::RobotConfig;
use yamor_core::evaluation::EvaluationSpec;
use yamor_roombots::gait::{RoombotRobot, walk};
#[test]
fn dbg() {
    for name in ["roombots-meta", "roombots-quadruped"] {
        let dir = format!("{}/../examples/robots/{name}", env!("CARGO_MANIFEST_DIR"));
        let robot = RoombotRobot::from_xml_str(
            "w",
            &std::fs::read_to_string(format!("{dir}/world.xml")).unwrap(),
        )
        .unwrap();
        let mut gait = RobotConfig::from_xml_str(
            "g",
            &std::fs::read_to_string(format!("{dir}/gait.xml")).unwrap(),
        )
        .unwrap();
        for variant in 0..3 {
            if variant == 1 {
                for m in &mut gait.modules {
                    if m.id % 3 == 1 {
                        m.motion = yamor_core::Motion::Rotate;
                        m.speed = 2.0;
                    }
                }
            }
            if variant == 2 {
                for m in &mut gait.modules {
                    m.motion = yamor_core::Motion::Oscillate;
                    m.amplitude = 1.0;
                    m.speed = 6.0;
                }
            }
            for seed in [1u64, 2, 3] {
                let spec = EvaluationSpec {
                    seed,
                    ..EvaluationSpec::lasting_after(4.0, 8.0).unwrap()
                };
                let t = std::time::Instant::now();
                let o = walk(&robot, &gait, &spec, &AtomicBool::new(false));
                match o {
                    Ok(o) => println!(
                        "{name} v{variant} seed {seed}: {:.2} cm/s, wall {:?} zmax {:.3}",
                        o.velocity * 100.0,
                        t.elapsed(),
                        o.max_height
                    ),
                    Err(e) => println!("{name} v{variant}: {e}"),
                }
            }
        }
    }
}
