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
