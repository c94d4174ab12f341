//! 002 §5.3 rebuilt end to end for one connection type: every target the
//! reachability map proves reachable is solved free of collision by ours,
//! and every random reachable target too.

use yamor_roombots::chain::ConnectionType;
use yamor_roombots::experiment;

#[test]
fn every_proven_target_is_solved_and_the_seeds_variants_are_counted() {
    let report = experiment::run(ConnectionType::ShearS, 12);
    assert_eq!(report.targets, 192);
    assert!(report.proven > 0, "the plane has reachable targets");
    let ours = report.tallies.last().unwrap();
    assert!(ours.name.starts_with("ours"));
    assert_eq!(ours.missed_proven, 0, "{ours:?}");
    assert!(ours.free >= report.proven, "{ours:?}");
    // Solved counts converged poses, free or not.
    assert!(report.tallies.iter().all(|t| t.free <= t.solved));
    assert_eq!(report.tallies.len(), 8);
    assert_eq!(report.our_micros.len(), ours.free);
    assert_eq!(report.random_solved, report.random_targets);
}
