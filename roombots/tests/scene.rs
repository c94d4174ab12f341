//! The acrobat: three modules, one traded between the other two.

use yamor_roombots::chain::ConnectionType;
use yamor_roombots::scene::acrobat;

#[test]
fn the_acrobat_hands_a_module_over_and_the_new_pair_stands_up() {
    for connection in ConnectionType::ALL {
        let report = acrobat(connection).unwrap_or_else(|| panic!("{connection}: no acrobat"));
        let [x, y] = report.partner;
        // Module 0 stayed where it stood; module 1 now stands on module 2.
        assert_eq!(report.cells[0], [[0, 0, 0], [0, 0, 1]], "{connection}");
        assert_eq!(report.cells[2], [[x, y, 0], [x, y, 1]], "{connection}");
        assert_eq!(report.cells[1], [[x, y, 3], [x, y, 2]], "{connection}");
        assert!(
            report.reach_error < 5e-3,
            "{connection}: {}",
            report.reach_error
        );
        assert!(report.lock_gap < 2e-3, "{connection}: {}", report.lock_gap);
        assert_eq!(report.moments.len(), 3);
    }
}

#[test]
fn two_meta_modules_climb_the_stool_over_a_concave_and_a_convex_edge_and_form_the_chairs_back() {
    use yamor_roombots::enactment::LOCK_REACH;
    use yamor_roombots::scene::{CHAIR_CLIMBERS, chair};
    let mut climbed = Vec::new();
    for connection in ConnectionType::ALL {
        let Some(report) = chair(connection) else {
            continue;
        };
        climbed.push(connection);
        for (meta, (_, [x, y, z])) in CHAIR_CLIMBERS.iter().enumerate() {
            // Standing upright on the stool's back edge, side by side.
            let column: Vec<[i64; 3]> = (0..4).map(|k| [*x, *y, z + k]).collect();
            let mut cells = report.cells[meta].to_vec();
            cells.sort_unstable();
            assert_eq!(cells, column, "{connection}, meta-module {meta}");
            // It locked onto the stool's side (from the floor: a concave
            // edge) and onto its top (over the side's edge: a convex one).
            let locks: Vec<&str> = report.reports[meta]
                .iter()
                .map(|r| r.plan.as_str())
                .filter(|p| p.starts_with("locked"))
                .collect();
            let side = locks
                .iter()
                .position(|l| l.contains(" side of the structure"));
            let top = locks
                .iter()
                .rposition(|l| l.contains("top of the structure"));
            assert!(
                matches!((side, top), (Some(a), Some(b)) if a < b),
                "{connection}, meta-module {meta}: side, then top: {locks:?}"
            );
            assert!(
                locks[0].contains("side"),
                "{connection}: from the floor onto a side: {locks:?}"
            );
            // The locks hold well inside the latches' reach, swinging
            // the whole meta-module from one of them; a tall meta-module
            // held by one end sags a centimetre or so under its weight.
            for r in &report.reports[meta] {
                assert!(r.reached, "{connection}: {r:?}");
                assert!(r.lock_gap < LOCK_REACH / 2.0, "{connection}: {r:?}");
                assert!(r.plan_error < 2.0 * LOCK_REACH, "{connection}: {r:?}");
            }
            assert!(
                report.plan_errors[meta] < 2.0 * LOCK_REACH,
                "{connection}: {:?}",
                report.plan_errors
            );
            assert!(
                report.lines[meta].iter().any(|l| l.starts_with("reachbw")),
                "{connection}: the base changed ends"
            );
        }
    }
    // The planner finds no way for two parallel meta-modules (docs).
    assert!(climbed.len() >= 3, "{climbed:?}");
}
