//! Physics the engine must get right, each against a closed form or a
//! conservation law.

use nalgebra::{Isometry3, Point3, Vector3};
use yamor_dynamics::{
    Anchor, BodySpec, BodyState, Hinge, LoopHinge, Model, ModelError, Servo, Settings, SolidBox,
    Weld, World,
};

fn solid(half: [f64; 3], mass: f64, at: Vector3<f64>) -> SolidBox {
    SolidBox {
        pose: Isometry3::translation(at.x, at.y, at.z),
        half: Vector3::from(half),
        mass,
    }
}

fn at_rest(x: f64, y: f64, z: f64) -> BodyState {
    BodyState {
        pose: Isometry3::translation(x, y, z),
        angvel: Vector3::zeros(),
        linvel: Vector3::zeros(),
    }
}

fn one_box(settings: Settings, start: BodyState) -> World {
    let model = Model::new(vec![BodySpec {
        boxes: vec![solid([0.05, 0.05, 0.05], 1.0, Vector3::zeros())],
        hinge: None,
        contact_points: None,
    }])
    .unwrap();
    World::new(model, settings, &[start])
}

/// Two boxes joined by a hinge about y at x = 0.1: a body and an arm.
fn two_links(settings: Settings, z: f64) -> World {
    let model = Model::new(vec![
        BodySpec {
            boxes: vec![solid([0.05, 0.05, 0.05], 0.5, Vector3::zeros())],
            hinge: None,
            contact_points: None,
        },
        BodySpec {
            boxes: vec![solid([0.05, 0.02, 0.02], 0.2, Vector3::new(0.05, 0.0, 0.0))],
            hinge: Some(Hinge {
                parent: 0,
                // The hinge frame's x axis along world y.
                frame_in_parent: Isometry3::new(
                    Vector3::new(0.05, 0.0, 0.0),
                    Vector3::z() * std::f64::consts::FRAC_PI_2,
                ),
                frame_in_child: Isometry3::rotation(Vector3::z() * std::f64::consts::FRAC_PI_2),
                limits: [-1.5, 1.5],
            }),
            contact_points: None,
        },
    ])
    .unwrap();
    World::new(
        model,
        settings,
        &[at_rest(0.0, 0.0, z), at_rest(0.05, 0.0, z)],
    )
}

/// A gentle servo on the arm of [`two_links`], heading for `angle`.
fn arm_servo(angle: f64) -> Servo {
    Servo {
        angle,
        velocity: 0.0,
        stiffness: 5.0,
        damping: 0.2,
        max_torque: 0.5,
    }
}

fn centre_of_mass(world: &World) -> Vector3<f64> {
    let model = world.model();
    let mut total = 0.0;
    let mut sum = Vector3::zeros();
    for b in 0..model.body_count() {
        let state = world.body_state(b);
        // Both test bodies have one box, whose centre is the centre of mass.
        let centre = if b == 0 {
            Vector3::zeros()
        } else {
            Vector3::new(0.05, 0.0, 0.0)
        };
        sum += model.mass(b) * (state.pose * Point3::from(centre)).coords;
        total += model.mass(b);
    }
    sum / total
}

#[test]
fn a_box_falls_as_a_stone() {
    let settings = Settings::default();
    let mut world = one_box(settings, at_rest(0.0, 0.0, 10.0));
    let steps = 240;
    for _ in 0..steps {
        world.step();
    }
    let t = steps as f64 * settings.dt;
    let state = world.body_state(0);
    // Semi-implicit Euler: the velocity is exact, the position off by g·t·h/2.
    assert!((state.linvel.z + 9.81 * t).abs() < 1e-9);
    let expected = 10.0 - 0.5 * 9.81 * t * t;
    assert!((state.pose.translation.z - expected).abs() < 9.81 * t * settings.dt);
}

#[test]
fn a_box_rests_on_the_ground_without_creeping() {
    let mut world = one_box(Settings::default(), at_rest(0.3, -0.2, 0.051));
    for _ in 0..(240 * 5) {
        world.step();
    }
    let state = world.body_state(0);
    let drift = (state.pose.translation.x - 0.3).hypot(state.pose.translation.y + 0.2);
    // The goal for a standing robot is under 1 mm/s; this is µm in 5 s.
    assert!(drift < 1e-4, "crept {drift} m");
    let sag = 0.05 - state.pose.translation.z;
    assert!(sag.abs() < 0.002, "sank {sag} m");
    assert!(world.kinetic_energy() < 1e-8);
}

/// Coulomb friction stops a sliding box after v²/(2μg).
#[test]
fn a_sliding_box_stops_where_coulomb_says() {
    let settings = Settings {
        friction: 0.5,
        ..Settings::default()
    };
    let mut world = one_box(settings, at_rest(0.0, 0.0, 0.05));
    for _ in 0..240 {
        world.step();
    }
    let start = world.body_state(0).pose.translation.x;
    let mut sliding = world.body_state(0);
    sliding.linvel = Vector3::new(1.0, 0.0, 0.0);
    let model = world.model().clone();
    let mut world = World::new(model, settings, &[sliding]);
    for _ in 0..480 {
        world.step();
    }
    let distance = world.body_state(0).pose.translation.x - start;
    let expected = 1.0 / (2.0 * 0.5 * 9.81);
    assert!(
        (distance - expected).abs() < 0.05 * expected,
        "slid {distance} m, Coulomb says {expected} m"
    );
    assert!(world.body_state(0).linvel.norm() < 1e-6, "it stopped");
}

/// In free fall without gravity a servo moving the hinge moves neither the
/// centre of mass nor the total momentum, and a free hinge keeps its
/// kinetic energy.
#[test]
fn internal_motion_conserves_momentum_and_energy() {
    let settings = Settings {
        gravity: Vector3::zeros(),
        ..Settings::default()
    };
    let mut world = two_links(settings, 1.0);
    let before = centre_of_mass(&world);
    world.set_servo(1, arm_servo(1.0));
    for _ in 0..240 {
        world.step();
    }
    let (angle, _) = world.hinge(1);
    assert!((angle - 1.0).abs() < 0.05, "the servo reached {angle}");
    let moved = (centre_of_mass(&world) - before).norm();
    assert!(moved < 1e-9, "centre of mass moved {moved} m");

    let mut spinning = two_links(settings, 1.0);
    let mut arm = spinning.body_state(1);
    arm.angvel = Vector3::new(0.0, 3.0, 0.0);
    let model = spinning.model().clone();
    let base = spinning.body_state(0);
    spinning = World::new(model, settings, &[base, arm]);
    let energy = spinning.kinetic_energy();
    // A quarter second: the arm turns well short of its stops.
    for _ in 0..60 {
        spinning.step();
    }
    let after = spinning.kinetic_energy();
    assert!(
        (after - energy).abs() < 0.02 * energy,
        "energy {energy} J became {after} J"
    );
}

#[test]
fn a_hinge_stops_at_its_limit() {
    let mut world = two_links(
        Settings {
            gravity: Vector3::zeros(),
            ..Settings::default()
        },
        1.0,
    );
    world.set_servo(1, arm_servo(3.0));
    for _ in 0..480 {
        world.step();
    }
    let (angle, _) = world.hinge(1);
    assert!(
        angle > 1.45 && angle < 1.52,
        "the stop is at 1.5, the arm at {angle}"
    );
}

#[test]
fn a_weak_servo_cannot_lift_what_a_strong_one_can() {
    let lift = |max_torque: f64| {
        let mut world = two_links(Settings::default(), 0.0501);
        world.set_servo(
            1,
            Servo {
                angle: -1.0,
                velocity: 0.0,
                stiffness: 20.0,
                damping: 0.5,
                max_torque,
            },
        );
        for _ in 0..480 {
            world.step();
        }
        world.hinge(1).0
    };
    // Holding the 0.2-kg arm out takes 0.2·9.81·0.05 ≈ 0.1 N·m.
    assert!(lift(1.0) < -0.9, "a strong servo lifts the arm");
    assert!(lift(0.05) > -0.2, "a weak one cannot");
}

#[test]
fn bodies_must_hang_from_earlier_bodies() {
    let e = Model::new(vec![BodySpec {
        boxes: vec![solid([0.1, 0.1, 0.1], 1.0, Vector3::zeros())],
        hinge: Some(Hinge {
            parent: 0,
            frame_in_parent: Isometry3::identity(),
            frame_in_child: Isometry3::identity(),
            limits: [-1.0, 1.0],
        }),
        contact_points: None,
    }])
    .unwrap_err();
    assert!(e.to_string().contains("does not come before"), "{e}");
    let e = Model::new(vec![BodySpec {
        boxes: vec![solid([0.1, 0.1, 0.1], -1.0, Vector3::zeros())],
        hinge: None,
        contact_points: None,
    }])
    .unwrap_err();
    assert!(e.to_string().contains("mass"), "{e}");
}

/// A parallelogram four-bar in the xy plane, floating without gravity: a
/// base (0) from (0, 0) to (L, 0), cranks (1, 2) up from either end, and a
/// coupler (3) hung from crank 1, whose far end a loop hinge pins to the
/// top of crank 2. Every hinge turns about z.
fn parallelogram() -> World {
    const L: f64 = 0.2;
    const H: f64 = 0.1;
    let about_z = || Isometry3::rotation(Vector3::y() * -std::f64::consts::FRAC_PI_2);
    let at = |x: f64, y: f64| Isometry3::translation(x, y, 0.0) * about_z();
    let hinge = |parent: usize, frame_in_parent: Isometry3<f64>| {
        Some(Hinge {
            parent,
            frame_in_parent,
            frame_in_child: about_z(),
            limits: [-1.5, 1.5],
        })
    };
    let bar_x = |mass: f64| solid([L / 2.0, 0.01, 0.01], mass, Vector3::new(L / 2.0, 0.0, 0.0));
    let bar_y = || solid([0.01, H / 2.0, 0.01], 0.1, Vector3::new(0.0, H / 2.0, 0.0));
    let model = Model::new(vec![
        BodySpec {
            boxes: vec![bar_x(0.5)],
            hinge: None,
            contact_points: None,
        },
        BodySpec {
            boxes: vec![bar_y()],
            hinge: hinge(0, at(0.0, 0.0)),
            contact_points: None,
        },
        BodySpec {
            boxes: vec![bar_y()],
            hinge: hinge(0, at(L, 0.0)),
            contact_points: None,
        },
        BodySpec {
            boxes: vec![bar_x(0.2)],
            hinge: hinge(1, at(0.0, H)),
            contact_points: None,
        },
    ])
    .unwrap()
    .with_loop(LoopHinge {
        bodies: [2, 3],
        frames: [at(0.0, H), at(L, 0.0)],
        limits: [-1.5, 1.5],
    })
    .unwrap();
    let settings = Settings {
        gravity: Vector3::zeros(),
        ..Settings::default()
    };
    World::new(
        model,
        settings,
        &[
            at_rest(0.0, 0.0, 1.0),
            at_rest(0.0, 0.0, 1.0),
            at_rest(L, 0.0, 1.0),
            at_rest(0.0, H, 1.0),
        ],
    )
}

/// Distance between a loop hinge's two pins and the coupler's turn
/// relative to the base, which a parallelogram keeps at zero.
fn parallelogram_errors(world: &World) -> (f64, f64) {
    let crank_top = world.body_state(2).pose * Point3::new(0.0, 0.1, 0.0);
    let coupler_end = world.body_state(3).pose * Point3::new(0.2, 0.0, 0.0);
    let turn = world
        .body_state(0)
        .pose
        .rotation
        .angle_to(&world.body_state(3).pose.rotation);
    ((crank_top - coupler_end).norm(), turn)
}

#[test]
fn a_loop_hinge_closes_a_four_bar_that_a_tree_servo_drives() {
    let mut world = parallelogram();
    world.set_servo(1, arm_servo(0.4));
    let mut widest = 0.0f64;
    for _ in 0..480 {
        world.step();
        widest = widest.max(parallelogram_errors(&world).0);
    }
    let (crank, _) = world.hinge(1);
    let (other_crank, _) = world.hinge(2);
    let (closing, _) = world.loop_hinge(0);
    assert!((crank - 0.4).abs() < 0.02, "the driven crank is at {crank}");
    assert!(
        (other_crank - crank).abs() < 0.005,
        "the cranks of a parallelogram turn together: {crank} and {other_crank}"
    );
    assert!(
        (closing + crank).abs() < 0.005,
        "the loop hinge reads {closing}"
    );
    let (gap, turn) = parallelogram_errors(&world);
    assert!(widest < 5e-4, "the pins came {widest} m apart");
    assert!(
        gap < 1e-4 && turn < 0.005,
        "gap {gap} m, coupler turned {turn} rad"
    );
}

#[test]
fn a_loop_hinge_servo_drives_the_four_bar() {
    let mut world = parallelogram();
    world.set_loop_servo(0, arm_servo(-0.3));
    for _ in 0..480 {
        world.step();
    }
    let (crank, _) = world.hinge(1);
    let (closing, rate) = world.loop_hinge(0);
    assert!(
        (closing + 0.3).abs() < 0.02,
        "the loop hinge is at {closing}"
    );
    assert!((crank - 0.3).abs() < 0.02, "the cranks follow it: {crank}");
    assert!(rate.abs() < 0.05, "and settle: {rate} rad/s");
    assert!(parallelogram_errors(&world).0 < 1e-4);
}

#[test]
fn a_loop_hinge_needs_two_bodies_of_the_model() {
    let model = || {
        Model::new(vec![BodySpec {
            boxes: vec![solid([0.1, 0.1, 0.1], 1.0, Vector3::zeros())],
            hinge: None,
            contact_points: None,
        }])
        .unwrap()
    };
    for bodies in [[0, 0], [0, 1]] {
        let e = model()
            .with_loop(LoopHinge {
                bodies,
                frames: [Isometry3::identity(); 2],
                limits: [-1.0, 1.0],
            })
            .unwrap_err();
        assert!(e.to_string().contains("loop hinge 0"), "{e}");
    }
}

/// Two free boxes side by side, 0.1 m apart, their bottoms at `z`.
fn two_boxes(z: f64) -> World {
    let spec = || BodySpec {
        boxes: vec![solid([0.05, 0.05, 0.05], 0.5, Vector3::zeros())],
        hinge: None,
        contact_points: None,
    };
    let model = Model::new(vec![spec(), spec()]).unwrap();
    World::new(
        model,
        Settings::default(),
        &[at_rest(0.0, 0.0, z + 0.05), at_rest(0.1, 0.0, z + 0.05)],
    )
}

#[test]
fn a_box_welded_in_the_air_hangs_there_until_released() {
    let mut world = two_boxes(0.3);
    let held = Isometry3::translation(0.0, 0.0, 0.35);
    let id = world
        .weld(Weld {
            body: 0,
            frame: Isometry3::identity(),
            anchor: Anchor::Ground(held),
        })
        .unwrap();
    for _ in 0..480 {
        world.step();
    }
    let hanging = world.body_state(0).pose.translation.vector;
    assert!(
        (hanging - held.translation.vector).norm() < 1e-3,
        "the weld gives {hanging:?}"
    );
    // The other box, not welded, has fallen onto the ground meanwhile.
    assert!(world.body_state(1).pose.translation.vector.z < 0.06);
    assert!(world.release(id));
    assert!(!world.release(id), "a weld is released once");
    for _ in 0..480 {
        world.step();
    }
    let landed = world.body_state(0).pose.translation.vector.z;
    assert!((landed - 0.05).abs() < 3e-3, "released, it lands: {landed}");
}

#[test]
fn two_welded_boxes_fall_and_land_as_one() {
    let mut world = two_boxes(0.2);
    // One box starts spinning and sliding: the weld must carry it all to
    // the other box.
    world = {
        let model = world.model().clone();
        let mut spun = [world.body_state(0), world.body_state(1)];
        spun[1].angvel = Vector3::new(0.0, 2.0, 1.0);
        spun[1].linvel = Vector3::new(0.3, 0.0, 0.0);
        World::new(model, Settings::default(), &spun)
    };
    let relative = world.body_state(0).pose.inverse() * world.body_state(1).pose;
    world
        .weld(Weld {
            body: 1,
            frame: Isometry3::identity(),
            anchor: Anchor::Body(0, relative),
        })
        .unwrap();
    let mut worst: f64 = 0.0;
    for _ in 0..960 {
        world.step();
        let now = world.body_state(0).pose.inverse() * world.body_state(1).pose;
        worst = worst.max((now.translation.vector - relative.translation.vector).norm());
    }
    assert!(worst < 1e-3, "the weld gave {worst} m");
    // Landed flat and at rest, the pair's momentum is gone: the weld's
    // impulses were counted in each box's tree.
    let (a, b) = (world.body_state(0), world.body_state(1));
    assert!((a.pose.translation.z - 0.05).abs() < 3e-3);
    assert!((b.pose.translation.z - 0.05).abs() < 3e-3);
    assert!(a.linvel.norm() < 1e-2 && b.linvel.norm() < 1e-2);
}

#[test]
fn a_weld_needs_two_distinct_bodies_of_the_model() {
    let mut world = two_boxes(0.0);
    let weld = |body, anchor| Weld {
        body,
        frame: Isometry3::identity(),
        anchor,
    };
    assert_eq!(
        world.weld(weld(2, Anchor::Ground(Isometry3::identity()))),
        Err(ModelError::WeldBody(2))
    );
    assert_eq!(
        world.weld(weld(0, Anchor::Body(0, Isometry3::identity()))),
        Err(ModelError::WeldBody(0))
    );
    assert_eq!(
        world.weld(weld(0, Anchor::Body(7, Isometry3::identity()))),
        Err(ModelError::WeldBody(7))
    );
    // Two bodies of one tree: the weld would close a loop.
    let mut arm = two_links(Settings::default(), 0.5);
    assert_eq!(
        arm.weld(weld(1, Anchor::Body(0, Isometry3::identity()))),
        Err(ModelError::WeldInTree(1, 0))
    );
}

#[test]
fn a_body_touches_the_ground_with_its_contact_points_not_its_box() {
    // A ball's mass in a small box, its surface as points of radius 0.07.
    let points: Vec<Vector3<f64>> = (0..64)
        .map(|k| {
            // A Fibonacci sphere: points spread evenly.
            let z = 1.0 - (2 * k + 1) as f64 / 64.0;
            let a = k as f64 * 2.399_963_229_728_653;
            let r = (1.0 - z * z).sqrt();
            Vector3::new(r * a.cos(), r * a.sin(), z) * 0.07
        })
        .collect();
    let model = Model::new(vec![BodySpec {
        boxes: vec![solid([0.01, 0.01, 0.01], 1.0, Vector3::zeros())],
        hinge: None,
        contact_points: Some(points),
    }])
    .unwrap();
    let mut world = World::new(model, Settings::default(), &[at_rest(0.0, 0.0, 0.2)]);
    for _ in 0..720 {
        world.step();
    }
    let lowest = world.lowest_point();
    assert!(lowest.abs() < 3e-3, "rests on its points: {lowest}");
    // The box alone would sink to 0.01; the points hold it near 0.07.
    let centre = world.body_state(0).pose.translation.z;
    assert!(centre > 0.06, "held up by its points: {centre}");
    let bad = Model::new(vec![BodySpec {
        boxes: vec![solid([0.01, 0.01, 0.01], 1.0, Vector3::zeros())],
        hinge: None,
        contact_points: Some(vec![Vector3::new(f64::NAN, 0.0, 0.0)]),
    }]);
    assert!(matches!(bad, Err(ModelError::Invalid { .. })));
}
