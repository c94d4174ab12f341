//! What the portfolio's tests share: the runtime's ask/tell loop.

use std::collections::BTreeMap;

use yamor_optimizer_api::{Candidate, Fitness, Optimizer, Step};

/// Drives `opt` like the runtime, to its end or to `budget` proposals
/// (a batch cut there, as the runtime cuts it), each batch told in
/// reverse; the value of a proposal is `walk(x, n)` for its `n`-th
/// evaluation of `x` in proposal order (a walk's noise belongs to the
/// proposal, not to the tell order); NaN stands for a failed walk.
/// Returns every batch as proposed.
pub fn drive(
    opt: &mut dyn Optimizer,
    budget: Option<usize>,
    walk: &dyn Fn(&[f64], usize) -> f64,
) -> Vec<Vec<Candidate>> {
    let mut count: BTreeMap<Vec<u64>, usize> = BTreeMap::new();
    let mut batches: Vec<Vec<Candidate>> = Vec::new();
    let mut proposed = 0;
    while budget.is_none_or(|b| proposed < b) {
        match opt.ask() {
            Step::Evaluate(mut batch) => {
                if let Some(b) = budget {
                    batch.truncate(b - proposed);
                }
                let values: Vec<f64> = batch
                    .iter()
                    .map(|c| {
                        let n = count
                            .entry(c.x.iter().map(|v| v.to_bits()).collect())
                            .or_default();
                        *n += 1;
                        walk(&c.x, *n - 1)
                    })
                    .collect();
                for (c, v) in batch.iter().zip(values).rev() {
                    let outcome = if v.is_nan() {
                        Fitness::Failed
                    } else {
                        Fitness::Value(v)
                    };
                    opt.tell(c.tag, outcome);
                }
                proposed += batch.len();
                batches.push(batch);
            }
            Step::Wait => panic!("waits with nothing outstanding"),
            Step::Finished => break,
        }
    }
    batches
}
