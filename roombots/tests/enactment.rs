//! Supervisor command files enacted on the simulated meta-module.

use yamor_roombots::chain::ConnectionType;
use yamor_roombots::enactment::Enactment;
use yamor_roombots::supervisor::{End, parse};

const INCHWORM: &str = include_str!("../../examples/roombots/inchworm.txt");

#[test]
fn the_inchworm_walks_in_the_simulation_where_the_plan_says() {
    for connection in ConnectionType::ALL {
        let mut enactment = Enactment::new(connection).unwrap();
        let mut handed_over = 0;
        for command in parse(INCHWORM).unwrap() {
            let held_by = enactment.stage().held_by();
            let report = enactment.apply(&command).unwrap();
            handed_over += usize::from(enactment.stage().held_by() != held_by);
            assert!(report.reached, "{connection}: {command:?}: {report:?}");
            assert!(
                report.lock_gap < 2e-3,
                "{connection}: {command:?}: {report:?}"
            );
            assert!(
                report.plan_error < 0.01,
                "{connection}: {command:?}: {report:?}"
            );
        }
        // The base changed ends twice and the world kept simulating.
        assert_eq!(handed_over, 2, "{connection}");
        assert_eq!(enactment.stage().held_by(), End::Forward);
        assert_eq!(enactment.cells(), enactment.stage().cells(), "{connection}");
        assert!(enactment.robot().kinetic_energy() < 1e-2);
    }
}

#[test]
fn a_refused_command_moves_nothing_in_the_simulation() {
    let mut enactment = Enactment::new(ConnectionType::ShearZ).unwrap();
    let before = enactment.robot().module_poses();
    let clock = enactment.clock();
    for command in parse("unlock 0 C0X\nlock 1 C3X\nreachbw 1 0 0\n").unwrap() {
        assert!(enactment.apply(&command).is_err());
    }
    assert_eq!(enactment.clock(), clock);
    assert_eq!(enactment.robot().module_poses(), before);
}
