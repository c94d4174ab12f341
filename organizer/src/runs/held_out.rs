//! The held-out re-walk that earns a run's reported figure: the finalists
//! walked again from starts the optimizer never saw, and how their walks
//! (live, or read back from the store after a restart) pick the answer.
//! Apart from the executor because loading a run after a restart
//! (`Runs::load`) reads the same walks the same way.

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, watch};
use yamor_core::starts::{Spread, held_out_seeds};

use super::executor::Executor;
use super::prepare::Blueprint;
use super::{RunError, Runs};
use crate::model::{
    HELD_OUT_SEQ, Job, JobState, MAP_CELL_STARTS, REFERENCE_SEQ, Recommendation, ranked,
};
use crate::scheduler::Completion;

impl Executor<'_> {
    /// The candidates the re-walk compares: the run's `count` best
    /// distinct points by the mean of the values learnt for each (an
    /// optimizer that handles noise asks a point more than once), best
    /// first, then the optimizer's own recommendation when it has one
    /// that is not among them (CMA-ES's averaged late means: under noise
    /// often better than any point walked).
    fn finalists(&self, count: usize) -> Vec<Vec<f64>> {
        // Points in the order first learnt; a point's bits find its entry.
        let mut points: Vec<(&Vec<f64>, f64, usize)> = Vec::new();
        let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
        for (v, x) in &self.learnt {
            let key = x.iter().map(|c| c.to_bits()).collect();
            match index.get(&key) {
                Some(&i) => {
                    points[i].1 += v;
                    points[i].2 += 1;
                }
                None => {
                    index.insert(key, points.len());
                    points.push((x, *v, 1));
                }
            }
        }
        let mean = |(_, sum, n): &(&Vec<f64>, f64, usize)| sum / *n as f64;
        // A stable sort: equal means keep the order they were learnt in.
        points.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
        let mut finalists: Vec<Vec<f64>> = points
            .into_iter()
            .take(count)
            .map(|(x, _, _)| x.clone())
            .collect();
        if let Some(x) = self.recommended_point()
            && !finalists.iter().any(|f| same_point(f, &x))
        {
            finalists.push(x);
        }
        finalists
    }

    /// Earns the reported figure (see [`crate::model::HeldOut`]): walks
    /// the finalists from the held-out starts, on every free host, and
    /// makes the one with the best mean the run's answer. Walks recorded
    /// before a restart are not walked again. Stopping the run meanwhile
    /// leaves the best single walk as the (provisional) answer.
    ///
    /// A map's finalists are its elites ([`yamor_optimizer_api::Optimizer::finalists`]):
    /// each is walked from the first [`MAP_CELL_STARTS`] held-out starts (its
    /// cell's value), and the best `candidates` of them by that mean from
    /// all the plan's starts, among which the answer is chosen as for any
    /// run: never on three walks out of a thousand cells.
    pub(super) async fn re_walk(
        &mut self,
        runs: &Runs,
        completions: &mut mpsc::UnboundedReceiver<Completion>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), RunError> {
        let plan = self.spec.held_out;
        if !plan.is_on() {
            return Ok(());
        }
        let starts = u64::from(plan.starts);
        let block = |k: usize| HELD_OUT_SEQ + k as u64 * starts;
        // The reference gait's block (a gait's start point; a bare
        // problem's start is no reference).
        let reference = matches!(self.prepared.blueprint, Blueprint::Gait(_)).then(|| {
            (
                REFERENCE_SEQ,
                self.prepared.space.start.clone(),
                0..plan.starts,
            )
        });
        let (finalists, contenders, walked) = match self.optimizer_finalists() {
            Some(mut elites) => {
                // Every block of re-walks stays below the reference's.
                let most = (REFERENCE_SEQ - HELD_OUT_SEQ) / starts.max(1);
                elites.truncate(usize::try_from(most).unwrap_or(usize::MAX));
                let first = plan.starts.min(MAP_CELL_STARTS);
                let cells = elites
                    .iter()
                    .enumerate()
                    .map(|(k, x)| (block(k), x.clone(), 0..first))
                    .chain(reference)
                    .collect();
                let Some(mut walked) = self.walk_blocks(runs, completions, stop, cells).await?
                else {
                    return Ok(());
                };
                let contenders = best_blocks(&walked, elites.len(), starts, plan.candidates);
                let rest = contenders
                    .iter()
                    .map(|&k| (block(k), elites[k].clone(), first..plan.starts))
                    .collect();
                let Some(more) = self.walk_blocks(runs, completions, stop, rest).await? else {
                    return Ok(());
                };
                walked.extend(more);
                (elites, Some(contenders), walked)
            }
            None => {
                let finalists = self.finalists(plan.candidates as usize);
                let blocks = finalists
                    .iter()
                    .enumerate()
                    .map(|(k, x)| (block(k), x.clone(), 0..plan.starts))
                    .chain(reference)
                    .collect();
                let Some(walked) = self.walk_blocks(runs, completions, stop, blocks).await? else {
                    return Ok(());
                };
                (finalists, None, walked)
            }
        };
        let walked: Vec<(u64, Option<(f64, f64)>)> = walked.into_iter().collect();
        let reference = reference_spread(walked.iter().copied());
        let recommended = self.recommended_point().and_then(|x| {
            let k = finalists.iter().position(|f| same_point(f, &x))?;
            let range = block(k)..block(k) + starts;
            Some(Recommendation {
                parameters: self.prepared.parameters(&x),
                held_out: spread_of(
                    walked
                        .iter()
                        .filter(|(seq, _)| range.contains(seq))
                        .copied(),
                ),
            })
        });
        runs.update(self.id, |v| {
            v.reference = reference;
            if recommended.is_some() {
                v.recommendation = recommended;
            }
        });
        // A map's answer is chosen among the elites walked from every start.
        let compared = walked.into_iter().filter(|(seq, _)| {
            contenders.as_ref().is_none_or(|c| {
                (HELD_OUT_SEQ..REFERENCE_SEQ).contains(seq)
                    && c.contains(&(((seq - HELD_OUT_SEQ) / starts.max(1)) as usize))
            })
        });
        let Some((k, spread)) = re_walk_winner(plan.starts, self.spec.max_turn_deg_s, compared)
        else {
            runs.persist(self.id);
            return Ok(());
        };
        let x = &finalists[k];
        let (parameters, gait) = (self.prepared.parameters(x), self.prepared.best_gait(x));
        runs.update(self.id, |v| {
            v.best_velocity = Some(spread.mean);
            v.best_parameters = parameters;
            v.best_gait_xml = gait;
            v.held_out = Some(spread);
        });
        runs.persist(self.id);
        tracing::info!(run = self.id, "held-out figure: {}", spread.cm_s());
        Ok(())
    }

    /// Walks each block's point from its range of held-out starts (start
    /// `i` is proposal number `first + i`), on every free host; walks
    /// recorded before a restart are read, not walked again. The result
    /// by proposal number (`None`: the walk failed); `None` when the run
    /// was stopped meanwhile.
    async fn walk_blocks(
        &mut self,
        runs: &Runs,
        completions: &mut mpsc::UnboundedReceiver<Completion>,
        stop: &mut watch::Receiver<bool>,
        blocks: Vec<(u64, Vec<f64>, std::ops::Range<u32>)>,
    ) -> Result<Option<BTreeMap<u64, Option<(f64, f64)>>>, RunError> {
        let mut waiting = HashMap::new();
        let mut fresh = Vec::new();
        let mut walked = BTreeMap::new();
        for (first, x, range) in &blocks {
            let seeds = held_out_seeds(range.end)
                .enumerate()
                .skip(range.start as usize);
            for (i, seed) in seeds {
                let seq = first + i as u64;
                match self.re_walked.get(&seq) {
                    Some(job) if matches!(job.state, JobState::Queued | JobState::Running) => {
                        waiting.insert(job.id, seq);
                    }
                    Some(job) => {
                        walked.insert(seq, job.ranked(self.spec.direction));
                    }
                    None => {
                        let mut job = self.prepared.job_for(x).map_err(RunError::Invalid)?;
                        job.job.spec.seed = seed;
                        // Each held-out start in its own held-out world:
                        // worlds the run never learnt in.
                        if let Some(worlds) = self.spec.worlds.held_out_distribution() {
                            job.job.spec.walk_in(worlds.draw(seed));
                        }
                        fresh.push((seq, job));
                    }
                }
            }
        }
        if !fresh.is_empty() {
            let seqs: Vec<u64> = fresh.iter().map(|(seq, _)| *seq).collect();
            let ids = runs
                .scheduler
                .submit(&format!("run-{}", self.id), self.id, fresh)
                .await?;
            waiting.extend(ids.into_iter().zip(seqs));
        }
        tracing::info!(
            run = self.id,
            walks = waiting.len(),
            "re-walking the finalists from held-out starts"
        );
        while !waiting.is_empty() {
            tokio::select! {
                c = completions.recv() => {
                    let Some(c) = c else { return Err(RunError::SchedulerGone) };
                    // The completion carries the walk's result: nothing to read back.
                    if let Some(seq) = waiting.remove(&c.job_id) {
                        walked.insert(seq, c.outcome.ok().map(|o| ranked(&o, self.spec.direction)));
                    }
                }
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        self.stopped = true;
                        let ids: Vec<u64> = waiting.keys().copied().collect();
                        runs.scheduler.cancel(&ids).await?;
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some(walked))
    }
}

/// Of `count` blocks of `starts` proposal numbers from [`HELD_OUT_SEQ`],
/// the `take` whose walks in `walked` have the best mean (two successful
/// walks needed; ties to the lower block), best first.
fn best_blocks(
    walked: &BTreeMap<u64, Option<(f64, f64)>>,
    count: usize,
    starts: u64,
    take: u32,
) -> Vec<usize> {
    let mut means: Vec<(usize, f64)> = (0..count)
        .filter_map(|k| {
            let first = HELD_OUT_SEQ + k as u64 * starts;
            let values: Vec<f64> = walked
                .range(first..first + starts)
                .filter_map(|(_, w)| w.map(|(v, _)| v).filter(|v| v.is_finite()))
                .collect();
            (values.len() >= 2).then(|| (k, values.iter().sum::<f64>() / values.len() as f64))
        })
        .collect();
    means.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    means
        .into_iter()
        .take(take as usize)
        .map(|(k, _)| k)
        .collect()
}

/// The held-out walks of the point `parameters` (of a run's held-out
/// jobs, the reference gait's left out) by the engine each walked on, in
/// the engines' order: how much of its speed a gait keeps from one engine
/// to the other, the figure a gait learnt over worlds is judged by. Failed
/// walks are left out; an engine with a single walk has a spread of one.
#[must_use]
pub fn held_out_by_engine(jobs: &[Job], parameters: &[(String, f64)]) -> Vec<(String, Spread)> {
    let mut by_engine: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for job in jobs
        .iter()
        .filter(|j| (HELD_OUT_SEQ..REFERENCE_SEQ).contains(&j.seq))
        .filter(|j| j.request.job.parameters == parameters)
    {
        if let Some(walk) = job.walk() {
            by_engine
                .entry(walk.engine.as_str())
                .or_default()
                .push(walk.velocity);
        }
    }
    by_engine
        .into_iter()
        .filter_map(|(engine, v)| Some((engine.to_owned(), Spread::of(&v)?)))
        .collect()
}

/// Of a run's held-out re-walks, `(proposal number, (velocity, turn
/// rate))` with `starts` starts per finalist, the finalist with the best
/// mean velocity (its index) and its spread over the starts it walked
/// (failed walks left out; a finalist needs two successful walks to be
/// compared). Under a turn constraint the winner is taken among the
/// finalists whose mean absolute turn rate keeps it, when any does.
pub(super) fn re_walk_winner(
    starts: u32,
    max_turn: Option<f64>,
    walks: impl IntoIterator<Item = (u64, Option<(f64, f64)>)>,
) -> Option<(usize, Spread)> {
    let starts = u64::from(starts.max(1));
    let mut by_finalist: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for (seq, walk) in walks
        .into_iter()
        .filter(|(seq, _)| (HELD_OUT_SEQ..REFERENCE_SEQ).contains(seq))
    {
        let values = by_finalist
            .entry((seq - HELD_OUT_SEQ) / starts)
            .or_default();
        if let Some(walk) = walk.filter(|(v, _)| v.is_finite()) {
            values.push(walk);
        }
    }
    let compared: Vec<(usize, Spread, bool)> = by_finalist
        .into_iter()
        .filter(|(_, walks)| walks.len() >= 2)
        .filter_map(|(k, walks)| {
            let velocities: Vec<f64> = walks.iter().map(|(v, _)| *v).collect();
            let turn = walks.iter().map(|(_, t)| t.abs()).sum::<f64>() / walks.len() as f64;
            let keeps = max_turn.is_none_or(|max| turn <= max);
            Some((usize::try_from(k).ok()?, Spread::of(&velocities)?, keeps))
        })
        .collect();
    let any_keeps = compared.iter().any(|(_, _, keeps)| *keeps);
    compared
        .into_iter()
        .filter(|(_, _, keeps)| *keeps || !any_keeps)
        .map(|(k, spread, _)| (k, spread))
        .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
}

/// The reference gait's spread over its held-out re-walks (seq from
/// [`REFERENCE_SEQ`]; failed walks left out, two needed).
pub(super) fn reference_spread(
    walks: impl IntoIterator<Item = (u64, Option<(f64, f64)>)>,
) -> Option<Spread> {
    spread_of(walks.into_iter().filter(|(seq, _)| *seq >= REFERENCE_SEQ))
}

/// The spread of `walks`' velocities, failed walks left out; two needed.
pub(super) fn spread_of(
    walks: impl IntoIterator<Item = (u64, Option<(f64, f64)>)>,
) -> Option<Spread> {
    let velocities: Vec<f64> = walks
        .into_iter()
        .filter_map(|(_, walk)| walk.map(|(v, _)| v).filter(|v| v.is_finite()))
        .collect();
    (velocities.len() >= 2)
        .then(|| Spread::of(&velocities))
        .flatten()
}

/// Two points with bit-identical coordinates (what asking a point again gives).
fn same_point(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two finalists of two starts: the fast one circles, the slow one
    /// walks straight.
    fn walks() -> Vec<(u64, Option<(f64, f64)>)> {
        vec![
            (HELD_OUT_SEQ, Some((0.20, 12.0))),
            (HELD_OUT_SEQ + 1, Some((0.22, -14.0))),
            (HELD_OUT_SEQ + 2, Some((0.10, 1.0))),
            (HELD_OUT_SEQ + 3, Some((0.12, -2.0))),
        ]
    }

    #[test]
    fn a_maps_contenders_are_its_best_cells_by_their_first_walks() {
        // Four elites of blocks of 20 starts, each walked from its first 3.
        let mut walked = BTreeMap::new();
        for (k, values) in [
            (0u64, vec![Some(0.10), Some(0.12), Some(0.11)]),
            (1, vec![Some(0.30), None, Some(0.28)]),
            (2, vec![Some(0.50), None, None]),
            (3, vec![Some(0.20), Some(0.22), Some(0.21)]),
        ] {
            for (i, v) in values.into_iter().enumerate() {
                walked.insert(HELD_OUT_SEQ + k * 20 + i as u64, v.map(|v| (v, 0.0)));
            }
        }
        // Elite 2 walked once: not compared; elite 1 on its two walks.
        assert_eq!(best_blocks(&walked, 4, 20, 2), vec![1, 3]);
        assert_eq!(best_blocks(&walked, 4, 20, 10), vec![1, 3, 0]);
    }

    #[test]
    fn the_held_out_winner_keeps_the_turn_constraint_when_a_finalist_does() {
        let (k, spread) = re_walk_winner(2, None, walks()).unwrap();
        assert_eq!(k, 0);
        assert!((spread.mean - 0.21).abs() < 1e-12);
        // Mean |turn| 13 °/s breaks a 5 °/s limit; 1.5 °/s keeps it.
        let (k, spread) = re_walk_winner(2, Some(5.0), walks()).unwrap();
        assert_eq!(k, 1);
        assert!((spread.mean - 0.11).abs() < 1e-12);
        // When none keeps it, the fastest is still the answer.
        assert_eq!(re_walk_winner(2, Some(0.5), walks()).unwrap().0, 0);
        // A finalist with one successful walk is not compared.
        let mut one = walks();
        one[3].1 = None;
        assert_eq!(re_walk_winner(2, Some(5.0), one).unwrap().0, 0);
    }
}
