// Behaviour of the simulated robot: servo, firmware, walking, determinism,
// supervisor commands. Included once per engine; the includer defines
// `engine()`.

use yamor_core::evaluation::{EvaluationSpec, LeadIn, Situation};
use yamor_core::{Connection, Connector, Morphology, RobotConfig};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimError, SimSettings, Simulation, evaluate};
use yamor_snp::{BROADCAST, DefectMode, SnpMessage, flags};

fn settings() -> SimSettings {
    SimSettings {
        engine: engine(),
        ..SimSettings::default()
    }
}

fn example(name: &str) -> (Morphology, RobotConfig) {
    let e = ExampleRobot::named(name).expect("embedded example");
    (e.morphology().unwrap(), e.gait().unwrap())
}

/// Two modules on the ground: a passive base and an active module whose
/// handle points up and can swing freely.
fn test_bench() -> Morphology {
    Morphology::from_xml_str(
        "bench.xml",
        r#"<morphology central="1">
             <module id="1" passive="true"/>
             <module id="2"/>
             <connect idfrom="2" connfrom="rear" idto="1" connto="top" angle="0"/>
           </morphology>"#,
    )
    .unwrap()
}

fn one_module_gait(
    id: u32,
    amplitude: f64,
    offset: f64,
    speed: f64,
    limits: (f64, f64),
) -> RobotConfig {
    RobotConfig::from_xml_str(
        "gait.xml",
        &format!(
            r#"<yamorconfig><modulelist>
                 <module id="{id}" amplitude="{amplitude}" offset="{offset}" speed="{speed}"
                         minangle="{}" maxangle="{}"/>
               </modulelist></yamorconfig>"#,
            limits.0, limits.1
        ),
    )
    .unwrap()
}

fn angle_of(sim: &Simulation, id: u32) -> f32 {
    sim.sensors()[sim.module_index(id).unwrap()].angle
}

#[test]
fn servo_step_response_is_speed_limited_and_settles() {
    let mut sim = Simulation::new(&test_bench(), settings()).unwrap();
    sim.configure(&one_module_gait(2, 0.0, 1.0, 0.0, (-1.57, 1.57)))
        .unwrap();
    // The offset converges with a 0.5 s time constant; the servo follows.
    let mut peak_speed = 0.0f32;
    while sim.time() < 3.0 {
        sim.tick();
        let i = sim.module_index(2).unwrap();
        peak_speed = peak_speed.max(sim.sensors()[i].velocity.abs());
    }
    let angle = angle_of(&sim, 2);
    assert!((angle - 1.0).abs() < 0.03, "settled at {angle}");
    assert!(peak_speed > 0.5, "it moved: {peak_speed}");
    assert!(
        peak_speed <= yamor_sim::geometry::SERVO_MAX_SPEED * 1.1,
        "no faster than the servo: {peak_speed}"
    );
}

#[test]
fn servo_without_motor_flag_does_not_track() {
    let mut sim = Simulation::new(&test_bench(), settings()).unwrap();
    sim.configure(&one_module_gait(2, 0.0, 1.0, 0.0, (-1.57, 1.57)))
        .unwrap();
    sim.deliver(
        2,
        &SnpMessage::Control {
            on: 0,
            off: flags::MOTOR,
        },
    )
    .unwrap();
    sim.run_until(3.0);
    assert!(angle_of(&sim, 2).abs() < 0.3, "limp handle stayed near 0");
}

#[test]
fn setpoints_respect_limit_angles() {
    let mut sim = Simulation::new(&test_bench(), settings()).unwrap();
    sim.configure(&one_module_gait(2, 1.2, 0.0, 3.0, (-0.3, 0.5)))
        .unwrap();
    let i = sim.module_index(2).unwrap();
    let (mut lowest, mut highest) = (f32::MAX, f32::MIN);
    while sim.time() < 6.0 {
        sim.tick();
        lowest = lowest.min(sim.setpoints()[i]);
        highest = highest.max(sim.setpoints()[i]);
    }
    assert!(
        lowest >= -0.3 - 1e-6 && highest <= 0.5 + 1e-6,
        "{lowest}..{highest}"
    );
    // The oscillator (amplitude 1.2) is clipped on both sides.
    assert!(lowest < -0.29 && highest > 0.49);
    let angle = angle_of(&sim, 2);
    assert!(
        (-0.35..=0.55).contains(&angle),
        "servo within limits: {angle}"
    );
}

#[test]
fn a_blocked_servo_stalls_at_its_torque() {
    // The arm of a module lying flat cannot push its handle through the ground.
    let bench = Morphology::from_xml_str(
        "flat.xml",
        r#"<morphology central="2"><module id="2"/></morphology>"#,
    )
    .unwrap();
    let mut sim = Simulation::new(&bench, settings()).unwrap();
    sim.configure(&one_module_gait(2, 0.0, 1.5, 0.0, (-1.57, 1.57)))
        .unwrap();
    sim.run_until(3.0);
    // Lifting a 0.2 kg body by 6 cm needs 0.2 * 9.81 * 0.06 ≈ 0.12 N·m, so
    // the servo wins: the handle ends near the set-point, standing on its tip.
    let free = angle_of(&sim, 2);
    assert!(free > 1.2, "a light load is lifted: {free}");
    let mut stuck = Simulation::new(&bench, settings()).unwrap();
    stuck
        .configure(&one_module_gait(2, 0.0, 1.5, 0.0, (-1.57, 1.57)))
        .unwrap();
    stuck.set_defect(2, DefectMode::Stuck).unwrap();
    stuck.run_until(3.0);
    assert!(
        angle_of(&stuck, 2).abs() < 0.05,
        "a stuck motor does not move"
    );
}

#[test]
fn defect_motors_limp_and_stuck() {
    let (morphology, gait) = example("quadruped");
    let mut limp = Simulation::new(&morphology, settings()).unwrap();
    limp.configure(&gait).unwrap();
    for id in [5, 6, 7, 8] {
        limp.set_defect(id, DefectMode::Limp).unwrap();
    }
    limp.run_until(4.0);
    let mut healthy = Simulation::new(&morphology, settings()).unwrap();
    healthy.configure(&gait).unwrap();
    healthy.run_until(4.0);
    // With limp knees the body sinks to the ground.
    assert!(
        limp.robot_position().z < healthy.robot_position().z - 0.005,
        "limp {} vs healthy {}",
        limp.robot_position().z,
        healthy.robot_position().z
    );
    assert_eq!(
        limp.set_defect(99, DefectMode::Limp),
        Err(SimError::UnknownModule(99))
    );
}

#[test]
fn quadruped_stands_when_commanded_to() {
    let (morphology, mut gait) = example("quadruped");
    for module in &mut gait.modules {
        module.amplitude = 0.0;
    }
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    let lying = sim.robot_position().z;
    sim.configure(&gait).unwrap();
    sim.run_until(5.0);
    let standing = sim.robot_position();
    assert!(
        standing.z > lying + 0.01,
        "stands up: {lying} -> {}",
        standing.z
    );
    sim.run_until(10.0);
    let later = sim.robot_position();
    assert!(
        (later - standing).length() < 0.005,
        "and stays put: {standing} -> {later}"
    );
}

#[test]
fn quadruped_reference_gait_walks_at_least_2_cm_per_s() {
    let (morphology, gait) = example("quadruped");
    let evaluation = evaluate(
        &morphology,
        &gait,
        settings(),
        &EvaluationSpec::default(),
    )
    .unwrap();
    assert!(
        evaluation.velocity >= 0.02,
        "velocity {} m/s",
        evaluation.velocity
    );
    assert!((evaluation.start.t - 8.0).abs() < 0.01 && (evaluation.end.t - 20.0).abs() < 0.01);
}

#[test]
fn a_lead_in_walks_another_gait_first_and_measures_after_the_switch() {
    let (morphology, gait) = example("quadruped");
    let spec = |lead_in: Option<LeadIn>| EvaluationSpec {
        warmup: 2.0,
        measure: 3.0,
        situation: Situation {
            lead_in,
            ..Situation::default()
        },
        ..EvaluationSpec::default()
    };
    let lead_in = |gait: &RobotConfig| {
        Some(LeadIn {
            gait: gait.clone(),
            seconds: 3.0,
        })
    };
    let from_standstill = evaluate(&morphology, &gait, settings(), &spec(None)).unwrap();
    // The quadruped standing still for the lead-in: a different body state
    // at the switch, so a different walk.
    let mut standing = gait.clone();
    for m in &mut standing.modules {
        m.amplitude = 0.0;
    }
    let after_standing =
        evaluate(&morphology, &gait, settings(), &spec(lead_in(&standing))).unwrap();
    assert!((after_standing.start.t - 5.0).abs() < 0.01, "{:?}", after_standing.start);
    assert!((after_standing.end.t - 8.0).abs() < 0.01, "{:?}", after_standing.end);
    assert_ne!(after_standing.velocity, from_standstill.velocity);
    // Leading in with another gait that walks moves the robot before the
    // window; the window itself is the evaluated gait's.
    let mut other = gait.clone();
    for m in &mut other.modules {
        m.offset = -m.offset;
    }
    let after_other = evaluate(&morphology, &gait, settings(), &spec(lead_in(&other))).unwrap();
    assert_ne!(after_other.velocity, after_standing.velocity);
    assert!(after_other.velocity.is_finite() && after_other.velocity > 0.0);
    // A lead-in out of range is refused, naming it.
    let bad = spec(Some(LeadIn {
        gait: standing,
        seconds: -1.0,
    }));
    let error = evaluate(&morphology, &gait, settings(), &bad).unwrap_err();
    assert!(error.to_string().contains("lead_in_s"), "{error}");
}

#[test]
fn snake_moves_with_its_appendix_a_parameters() {
    let (morphology, gait) = example("snake");
    let evaluation = evaluate(
        &morphology,
        &gait,
        settings(),
        &EvaluationSpec::default(),
    )
    .unwrap();
    assert!(
        evaluation.distance > 0.03,
        "moved {} m",
        evaluation.distance
    );
}

#[test]
fn every_example_robot_builds_and_stays_finite() {
    for name in ExampleRobot::names() {
        let (morphology, gait) = example(name);
        let spec = EvaluationSpec {
            warmup: 1.0,
            measure: 4.0,
            sample_interval: 0.1,
            full_trajectory: true,
            ..EvaluationSpec::default()
        };
        let evaluation = evaluate(&morphology, &gait, settings(), &spec).unwrap();
        assert!(evaluation.velocity.is_finite(), "{name}");
        assert!(!evaluation.samples.is_empty(), "{name}");
        assert!(
            evaluation.samples.iter().all(|s| s.z > -0.01 && s.z < 0.5),
            "{name}"
        );
    }
}

/// The bench of morphologies (docs/morphology.md): each robot's hand-made
/// gait walks, from three starts, on either engine. (Their speeds differ
/// by engine: the hexapod walks 9 cm/s on the articulated engine and 1.3
/// on rapier, so the bar is low; what fails it is a robot that stands.)
#[test]
fn every_bench_robot_walks_with_its_hand_gait() {
    for name in ["hexapod", "tripod", "salamander", "long-snake", "mudskipper"] {
        let (morphology, gait) = example(name);
        let mut velocities = Vec::new();
        for seed in 0..3 {
            let spec = EvaluationSpec {
                warmup: 4.0,
                measure: 8.0,
                seed,
                ..EvaluationSpec::default()
            };
            let walk = evaluate(&morphology, &gait, settings(), &spec).unwrap();
            velocities.push(walk.velocity);
        }
        let mean = velocities.iter().sum::<f64>() / 3.0;
        assert!(mean > 0.005, "{name} stands: {velocities:?} m/s");
    }
}

/// Two active modules side by side (1, 2) whose handles carry two passive
/// modules glued to each other (3, 4): two coaxial servos between the same
/// two rigid parts, a kinematic loop that closes as assembled.
fn double_servo() -> Morphology {
    Morphology::from_xml_str(
        "double.xml",
        r#"<morphology central="1">
             <module id="1"/>
             <module id="2"/>
             <module id="3" passive="true"/>
             <module id="4" passive="true"/>
             <connect idfrom="2" connfrom="right" idto="1" connto="left" angle="0"/>
             <connect idfrom="3" connfrom="rear" idto="1" connto="front" angle="0"/>
             <connect idfrom="4" connfrom="rear" idto="2" connto="front" angle="0"/>
             <connect idfrom="4" connfrom="right" idto="3" connto="left" angle="0"/>
           </morphology>"#,
    )
    .unwrap()
}

fn holding(offsets: [f64; 2]) -> RobotConfig {
    RobotConfig::from_xml_str(
        "hold.xml",
        &format!(
            r#"<yamorconfig><modulelist>
                 <module id="1" amplitude="0" offset="{}" speed="0" minangle="-1.57" maxangle="1.57"/>
                 <module id="2" amplitude="0" offset="{}" speed="0" minangle="-1.57" maxangle="1.57"/>
               </modulelist></yamorconfig>"#,
            offsets[0], offsets[1]
        ),
    )
    .unwrap()
}

#[test]
fn a_loop_of_two_servos_moves_as_one_joint() {
    let angles = |offsets: [f64; 2]| {
        let mut sim = Simulation::new(&double_servo(), settings()).unwrap();
        sim.configure(&holding(offsets)).unwrap();
        sim.run_until(3.0);
        let pins = (sim.module_position(3).unwrap() - sim.module_position(4).unwrap()).length();
        ([angle_of(&sim, 1), angle_of(&sim, 2)], pins)
    };
    // Agreeing servos lift the far pair together.
    let ([a, b], pins) = angles([-0.5, -0.5]);
    assert!((a + 0.5).abs() < 0.05 && (b + 0.5).abs() < 0.05, "{a} {b}");
    assert!((a - b).abs() < 0.01, "the loop bent: {a} {b}");
    assert!((pins - 0.055).abs() < 0.002, "the pair came apart: {pins} m");
    // Fighting servos of equal strength hold the joint between them, and
    // neither wins by bending the loop.
    let ([a, b], pins) = angles([0.6, -0.6]);
    assert!((a - b).abs() < 0.02, "the loop bent: {a} {b}");
    assert!(a.abs() < 0.2, "equal servos meet near the middle: {a}");
    assert!((pins - 0.055).abs() < 0.002, "the pair came apart: {pins} m");
}

#[test]
fn same_robot_gait_and_seed_give_the_same_trajectory_bit_for_bit() {
    let (morphology, gait) = example("quadruped");
    let run = |seed| {
        let spec = EvaluationSpec {
            warmup: 2.0,
            measure: 4.0,
            sample_interval: 0.0,
            full_trajectory: true,
            seed,
            ..EvaluationSpec::default()
        };
        evaluate(&morphology, &gait, settings(), &spec)
            .unwrap()
            .samples
    };
    let (a, b) = (run(7), run(7));
    assert!(a.iter().zip(&b).all(|(p, q)| p.x.to_bits() == q.x.to_bits()
        && p.y.to_bits() == q.y.to_bits()
        && p.z.to_bits() == q.z.to_bits()));
    assert_eq!(a.len(), b.len());
    assert_ne!(a, run(8), "the seed matters");
}

#[test]
fn reset_restores_the_initial_state_exactly() {
    let (morphology, gait) = example("quadruped");
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    let start = sim.robot_position();
    sim.configure(&gait).unwrap();
    sim.run_until(3.0);
    sim.reset();
    assert_eq!(sim.time(), 0.0);
    assert_eq!(sim.robot_position(), start);
    sim.configure(&gait).unwrap();
    sim.run_until(3.0);
    let mut fresh = Simulation::new(&morphology, settings()).unwrap();
    fresh.configure(&gait).unwrap();
    fresh.run_until(3.0);
    assert_eq!(sim.robot_position(), fresh.robot_position());
}

#[test]
fn disconnect_and_reconnect_leave_a_stable_world() {
    let (morphology, gait) = example("quadruped");
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    sim.configure(&gait).unwrap();
    sim.run_until(2.0);
    sim.disconnect(8).unwrap();
    assert!(!sim.morphology().connections.iter().any(|c| c.involves(8)));
    sim.run_until(4.0);
    let parked = sim.module_position(8).unwrap();
    assert!(
        (parked - sim.robot_position()).length() > 1.0,
        "module 8 was put away"
    );
    assert!(sim.physics().kinetic_energy() < 5.0, "nothing exploded");

    let again = Connection {
        id_from: 8,
        conn_from: Connector::Front,
        id_to: 3,
        conn_to: Connector::Front,
        angle_deg: 90,
    };
    // Back onto its hip, the leg would now sink 4 cm into the ground: refused.
    assert!(matches!(sim.connect(again), Err(SimError::NoRoom(8, _))));
    let again = Connection {
        conn_to: Connector::Top,
        id_to: 4,
        conn_from: Connector::Rear,
        angle_deg: 0,
        ..again
    };
    sim.connect(again).unwrap();
    sim.run_until(8.0);
    let (leg, hip) = (
        sim.module_position(8).unwrap(),
        sim.module_position(4).unwrap(),
    );
    assert!((leg - hip).length() < 0.25, "module 8 rides on the centre");
    assert!(sim.physics().kinetic_energy() < 5.0);
    assert!(sim.robot_position().z.is_finite() && sim.robot_position().z > 0.0);
}

#[test]
fn connect_refuses_what_cannot_be_built() {
    let (morphology, _) = example("quadruped");
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    let c = |id_from, conn_from, id_to, conn_to, angle_deg| Connection {
        id_from,
        conn_from,
        id_to,
        conn_to,
        angle_deg,
    };
    // Still connected to its hip.
    assert_eq!(
        sim.connect(c(5, Connector::Top, 4, Connector::Top, 0)),
        Err(SimError::SourceStillConnected(5))
    );
    // Connector already in use.
    sim.disconnect(5).unwrap();
    assert!(matches!(
        sim.connect(c(5, Connector::Rear, 4, Connector::Left, 0)),
        Err(SimError::Connection(
            yamor_core::Problem::ConnectorInUse { .. }
        ))
    ));
    // Unknown module.
    assert!(matches!(
        sim.connect(c(42, Connector::Rear, 4, Connector::Top, 0)),
        Err(SimError::Connection(yamor_core::Problem::UnknownModule(42)))
    ));
    // Under the centre, into the ground.
    assert!(matches!(
        sim.connect(c(5, Connector::Rear, 4, Connector::Bottom, 0)),
        Err(SimError::NoRoom(5, _))
    ));
    // The refused attempts changed nothing; a good one still works.
    sim.connect(c(5, Connector::Rear, 4, Connector::Top, 0))
        .unwrap();
    sim.run_until(1.0);
    assert!(sim.physics().kinetic_energy() < 5.0);
}

#[test]
fn drop_and_flip_put_the_robot_in_the_air_and_upside_down() {
    let (morphology, _) = example("quadruped");
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    sim.run_until(1.0);
    assert!(
        sim.robot_up() > 0.95,
        "upright as built: {}",
        sim.robot_up()
    );
    sim.drop_robot(0.3, true).unwrap();
    assert!(sim.physics().lowest_point() > 0.29);
    sim.run_until(3.0);
    assert!(sim.physics().lowest_point() < 0.01, "it fell");
    assert!(sim.robot_up() < -0.9, "upside down: {}", sim.robot_up());
    sim.drop_robot(0.3, false).unwrap();
    sim.run_until(5.0);
    assert!(sim.robot_up() < -0.9, "a plain drop keeps it upside down");
    assert!(sim.drop_robot(f64::NAN, false).is_err());
    assert!(sim.set_ground_friction(-1.0).is_err());
    sim.set_ground_friction(0.1).unwrap();
}

#[test]
fn modules_refuse_bad_messages_and_unknown_ids() {
    let (morphology, _) = example("quadruped");
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    let nack = |m: SnpMessage| matches!(m, SnpMessage::Nack { .. });
    assert!(nack(
        sim.deliver(
            0,
            &SnpMessage::LimitAngles {
                min: 1.0,
                max: -1.0
            }
        )
        .unwrap()
    ));
    assert!(nack(
        sim.deliver(
            0,
            &SnpMessage::CpgParams {
                amplitude: 9.0,
                offset: 0.0,
                speed: 1.0
            }
        )
        .unwrap()
    ));
    assert!(nack(
        sim.deliver(
            0,
            &SnpMessage::CpgStructure {
                links: vec![yamor_snp::WireLink {
                    to: 77,
                    phase: 0.0,
                    weight: 1.0
                }]
            }
        )
        .unwrap()
    ));
    assert_eq!(
        sim.deliver(77, &SnpMessage::QueryState),
        Err(SimError::UnknownModule(77))
    );
    sim.deliver(
        BROADCAST,
        &SnpMessage::Control {
            on: flags::CPG,
            off: 0,
        },
    )
    .unwrap();
    assert!(sim.modules().iter().all(|m| m.firmware.cpg_on()));
    let mut gait = example("quadruped").1;
    gait.modules[0].id = 60;
    assert_eq!(
        sim.configure(&gait),
        Err(SimError::GaitModuleNotInMorphology(60))
    );
}

#[test]
fn settings_out_of_range_are_refused() {
    let (morphology, _) = example("quadruped");
    for settings in [
        SimSettings {
            dt: 0.0,
            ..settings()
        },
        SimSettings {
            dt: f64::NAN,
            ..settings()
        },
        SimSettings {
            ground_friction: -0.5,
            ..settings()
        },
    ] {
        assert!(matches!(
            Simulation::new(&morphology, settings),
            Err(SimError::OutOfRange { .. })
        ));
    }
    assert!(
        EvaluationSpec::lasting(5.0).is_err(),
        "shorter than the warm-up"
    );
}

#[test]
fn a_rotating_joint_is_refused_on_a_yamor_robot() {
    let (morphology, mut gait) = example("quadruped");
    gait.modules[1].motion = yamor_core::Motion::Rotate;
    let id = gait.modules[1].id;
    let mut sim = Simulation::new(&morphology, settings()).unwrap();
    assert_eq!(sim.configure(&gait), Err(SimError::Rotating(id)));
}
