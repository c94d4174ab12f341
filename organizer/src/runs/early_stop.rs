//! Early stopping: which walks may be cut short at a checkpoint. Its own
//! file because the rule is a judgement about the run's statistics, apart
//! from how the executor hands the bounds to its jobs.

use yamor_core::evaluation::{CHECKPOINT_FRACTIONS, EarlyStop};

/// Complete walks a run needs before it stops any early.
pub const EARLY_STOP_AFTER: usize = 24;

/// The recent complete walks the early-stop bounds are read from.
pub const EARLY_STOP_WINDOW: usize = 96;

/// The early-stop bounds for the next walks, from the run's complete walks
/// (`(velocity so far at each checkpoint, value)`, in tell order): at each
/// checkpoint, the lowest velocity so far of the best quarter of the last
/// [`EARLY_STOP_WINDOW`] complete walks. A walk below it is slower at that
/// point than every walk that went on to be among the run's best, so it is
/// very unlikely to be one (the successive-halving idea of Optuna's and Ray
/// Tune's pruners, judged against the run's best rather than its median, so
/// that ranks among the good walks, which the optimizer learns from, are
/// never cut). `None` until [`EARLY_STOP_AFTER`] complete walks.
pub(super) fn early_stop_bounds(complete: &[(Vec<f64>, f64)]) -> Option<EarlyStop> {
    if complete.len() < EARLY_STOP_AFTER {
        return None;
    }
    let mut recent: Vec<&(Vec<f64>, f64)> = complete
        [complete.len().saturating_sub(EARLY_STOP_WINDOW)..]
        .iter()
        .collect();
    recent.sort_by(|a, b| b.1.total_cmp(&a.1));
    let best = &recent[..recent.len().div_ceil(4)];
    let min_velocity = (0..CHECKPOINT_FRACTIONS.len())
        .map(|k| {
            best.iter()
                .filter_map(|(partials, _)| partials.get(k).copied())
                .min_by(f64::total_cmp)
        })
        .collect();
    Some(EarlyStop { min_velocity })
}
