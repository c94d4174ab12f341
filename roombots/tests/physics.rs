//! Roombot modules in the engine: its bodies against the chain of
//! transforms, servos holding a pose under gravity, locks that hold.

use nalgebra::{Isometry3, Matrix3, Rotation3, Translation3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_roombots::chain::{ConnectionType, Link, MetaModule, Tree};
use yamor_roombots::module::{Connector, HALF, Joints, ModulePose};
use yamor_roombots::physics::{PhysicsError, Robot, RobotSettings};

/// A random tree of `n` modules: each hangs by a random real connector from
/// a free real connector of an earlier one, in a random quarter-turn.
fn random_tree(rng: &mut ChaCha8Rng, n: usize) -> Tree {
    let mut used: Vec<Vec<Connector>> = vec![Vec::new(); n];
    let mut links = Vec::new();
    for k in 1..n {
        let parent = rng.random_range(0..k);
        let free: Vec<Connector> = Connector::ALL
            .into_iter()
            .filter(|c| !used[parent].contains(c))
            .collect();
        let parent_connector = free[rng.random_range(0..free.len())];
        let connector = Connector::ALL[rng.random_range(0..Connector::ALL.len())];
        used[parent].push(parent_connector);
        used[k].push(connector);
        links.push(Link {
            parent,
            parent_connector,
            connector,
            quarter_turns: rng.random_range(0..4),
        });
    }
    Tree {
        root_submodule: rng.random_range(0..4),
        root_pose: Isometry3::new(Vector3::new(0.3, -0.2, 0.5), Vector3::new(0.4, -1.1, 0.7)),
        links,
    }
}

fn random_angles(rng: &mut ChaCha8Rng, n: usize) -> Vec<Joints> {
    (0..n)
        .map(|_| std::array::from_fn(|_| rng.random_range(-9.0..9.0)))
        .collect()
}

/// Largest distance (m) and angle (rad) between two sets of frames.
fn worst(a: &[ModulePose], b: &[ModulePose]) -> (f64, f64) {
    let mut d: f64 = 0.0;
    let mut r: f64 = 0.0;
    for (ma, mb) in a.iter().zip(b) {
        for (fa, fb) in ma.middles.iter().zip(&mb.middles) {
            d = d.max((fa.translation.vector - fb.translation.vector).norm());
            r = r.max(fa.rotation.angle_to(&fb.rotation));
        }
    }
    (d, r)
}

#[test]
fn the_engine_bodies_agree_with_the_chain_of_transforms() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let settings = RobotSettings::default();
    for trial in 0..60 {
        let n = 1 + trial % 5;
        let tree = random_tree(&mut rng, n);
        let q = random_angles(&mut rng, n);
        // Built at the angles: the engine's tree of hinges reproduces them.
        let robot = Robot::build(&tree, &q, &settings).unwrap();
        let (d, r) = worst(&robot.module_poses(), &tree.poses(&q));
        assert!(d < 1e-9 && r < 1e-9, "trial {trial}: {d} m, {r} rad");
        for (m, angles) in robot.angles().iter().enumerate() {
            for j in 0..3 {
                assert!((angles[j] - q[m][j]).abs() < 1e-12, "unwrapped angles");
            }
        }
        // Built at home and turned in the engine's own coordinates: its
        // hinge frames against the product of exponentials, independently.
        let mut turned = Robot::build(&tree, &vec![[0.0; 3]; n], &settings).unwrap();
        for (m, angles) in q.iter().enumerate() {
            for (j, a) in angles.iter().enumerate() {
                turned.set_joint(m, j, *a);
            }
        }
        let (d, r) = worst(&turned.module_poses(), &tree.poses(&q));
        assert!(d < 1e-9 && r < 1e-9, "trial {trial} turned: {d} m, {r} rad");
    }
}

#[test]
fn angles_for_every_module_are_required() {
    let tree = MetaModule::new(ConnectionType::Parallel).tree();
    let e = Robot::build(&tree, &[[0.0; 3]], &RobotSettings::default()).err();
    assert_eq!(
        e,
        Some(PhysicsError::Angles {
            expected: 2,
            given: 1
        })
    );
}

/// A meta-module standing on the floor connector at the origin, its
/// module 0's `C0X` facing down.
fn standing(connection: ConnectionType) -> Tree {
    let upright = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[
        -Vector3::z(),
        Vector3::y(),
        Vector3::x(),
    ]));
    let mut tree = MetaModule::new(connection).tree();
    tree.root_pose = Isometry3::from_parts(
        Translation3::new(0.0, 0.0, HALF),
        UnitQuaternion::from_rotation_matrix(&upright),
    );
    tree
}

#[test]
fn a_locked_meta_module_holds_a_pose_it_would_topple_from_unlocked() {
    for connection in ConnectionType::ALL {
        let tree = standing(connection);
        // Module 0's first joint turned a radian: the three cubes above lean
        // far out over the base (unlocked, this pose falls over).
        let q = vec![[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]];
        let mut robot = Robot::build(&tree, &q, &RobotSettings::default()).unwrap();
        let floor = Isometry3::identity();
        let lock = robot.lock_to_floor(0, Connector::C0X, &floor).unwrap();
        for (m, angles) in q.iter().enumerate() {
            for (j, a) in angles.iter().enumerate() {
                robot.command(m, j, *a, 0.0);
            }
        }
        for _ in 0..480 {
            robot.step();
        }
        let (gap, tilt) = robot.lock_gap(lock).unwrap();
        assert!(
            gap < 1e-3 && tilt < 1e-2,
            "{connection}: lock gives {gap} m, {tilt} rad"
        );
        for (m, angles) in robot.angles().iter().enumerate() {
            for j in 0..3 {
                let sag = (angles[j] - q[m][j]).abs();
                assert!(sag < 0.05, "{connection}: joint {m}.{j} sags {sag} rad");
            }
        }
        assert!(robot.kinetic_energy() < 1e-3, "{connection}: still moving");
        // Unlocked, it falls over and comes to rest on the floor.
        assert!(robot.unlock(lock).unwrap());
        for _ in 0..1440 {
            robot.step();
        }
        let lowest = robot.lowest_point();
        assert!(
            lowest.abs() < 3e-3,
            "{connection}: rests on the floor at {lowest}"
        );
        let top = robot
            .module_poses()
            .iter()
            .flat_map(|m| m.middles)
            .map(|f| f.translation.z)
            .fold(f64::MIN, f64::max);
        assert!(top < 0.1, "{connection}: fallen over, its top at {top} m");
    }
}

#[test]
fn a_lock_of_a_module_that_does_not_exist_is_refused() {
    let tree = MetaModule::new(ConnectionType::Parallel).tree();
    let mut robot = Robot::build(&tree, &[[0.0; 3], [0.0; 3]], &RobotSettings::default()).unwrap();
    assert_eq!(
        robot.lock_to_floor(5, Connector::C0X, &Isometry3::identity()),
        Err(PhysicsError::UnknownModule(5))
    );
}

/// A meta-module curled into a ring: its end connector (module 1's `C3X`)
/// facing a connector of its own first cube, and the angles that do it.
fn ring() -> Option<(ConnectionType, [f64; 6], Connector)> {
    use yamor_roombots::chain::joined;
    use yamor_roombots::ik::Solver;
    for connection in ConnectionType::ALL {
        let solver = Solver::new(MetaModule::new(connection));
        for c in [Connector::C0Y, Connector::C0Z] {
            for k in 0..4 {
                let target = joined(&ModulePose::of([0.0; 3]).connector(c), k);
                if let Ok(solution) = solver.solve(&target, [0.0; 6]) {
                    return Some((connection, solution.q, c));
                }
            }
        }
    }
    None
}

#[test]
fn a_lock_between_two_modules_closes_a_loop_that_holds_and_reopens() {
    let (connection, q, onto) = ring().expect("a meta-module can curl into a ring");
    let mut tree = MetaModule::new(connection).tree();
    tree.root_pose = Isometry3::translation(0.0, 0.0, 0.3);
    let angles = vec![[q[0], q[1], q[2]], [q[3], q[4], q[5]]];
    let mut robot = Robot::build(&tree, &angles, &RobotSettings::default()).unwrap();
    // Connectors that do not face each other do not lock.
    assert!(matches!(
        robot.lock_modules(1, Connector::C3X, 0, Connector::C1Y),
        Err(PhysicsError::Apart { .. })
    ));
    assert_eq!(robot.closed_loops(), 0);
    let lock = robot.lock_modules(1, Connector::C3X, 0, onto).unwrap();
    assert_eq!(robot.closed_loops(), 1, "the lock closed the ring");
    assert!(robot.loop_gap() < 1e-6, "closed as built");
    let hold = |robot: &mut Robot, angles: &[Joints]| {
        for (m, a) in angles.iter().enumerate() {
            for (j, v) in a.iter().enumerate() {
                robot.command(m, j, *v, 0.0);
            }
        }
    };
    hold(&mut robot, &angles);
    // It falls onto the floor and lands, the ring closed.
    let mut worst: f64 = 0.0;
    for _ in 0..480 {
        robot.step();
        worst = worst.max(robot.loop_gap());
    }
    assert!(worst < 1e-3, "the ring opened by {worst} m while landing");
    // One joint asked to turn against the ring: the loop holds.
    let mut pushed = angles.clone();
    pushed[0][1] += 0.5;
    hold(&mut robot, &pushed);
    for _ in 0..240 {
        robot.step();
        worst = worst.max(robot.loop_gap());
    }
    assert!(worst < 2e-3, "the ring opened by {worst} m when pushed");
    assert!(robot.kinetic_energy().is_finite());
    // Unlocked, the ring is a chain again: no joint closes a loop.
    assert!(robot.unlock(lock).unwrap());
    assert_eq!(robot.closed_loops(), 0);
    assert!(!robot.unlock(lock).unwrap(), "unlocked once");
}
