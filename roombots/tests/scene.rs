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
fn the_chair_climbs_the_stool_over_a_concave_and_a_convex_edge_and_stands_on_its_back() {
    use yamor_roombots::scene::{CHAIR_BACK, chair};
    let mut climbed = Vec::new();
    for connection in ConnectionType::ALL {
        let Some(report) = chair(connection) else {
            continue;
        };
        climbed.push(connection);
        // Standing upright on the stool's back edge: the chair's back.
        let [x, y, z] = CHAIR_BACK;
        let column: Vec<[i64; 3]> = (0..4).map(|k| [x, y, z + k]).collect();
        let mut cells = report.cells.to_vec();
        cells.sort_unstable();
        assert_eq!(cells, column, "{connection}");
        // It locked onto the stool's side (from the floor: a concave edge)
        // and onto its top (over the side's edge: a convex one).
        let locks: Vec<&str> = report
            .reports
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
            "{connection}: side, then top: {locks:?}"
        );
        assert!(
            locks[0].contains("side"),
            "{connection}: from the floor onto a side: {locks:?}"
        );
        for r in &report.reports {
            assert!(r.reached, "{connection}: {r:?}");
            assert!(r.lock_gap < 2e-3, "{connection}: {r:?}");
        }
        assert!(
            report.lines.iter().any(|l| l.starts_with("reachbw")),
            "{connection}: the base changed ends"
        );
    }
    // The greedy plan finds no way for the parallel meta-module (docs).
    assert!(climbed.len() >= 3, "{climbed:?}");
}
