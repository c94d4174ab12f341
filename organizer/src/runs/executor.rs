//! The executor: one run's optimizer driven through its ask/tell loop,
//! its stored history replayed first (see "Resuming" in `runs`), its
//! proposals turned into jobs within the budget, and its end recorded.

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, watch};
// The run's time budget on tokio's clock, which tests can pause and advance.
use tokio::time::Instant;
use yamor_core::evaluation::{CHECKPOINT_FRACTIONS, Outcome};
use yamor_core::starts::candidate_seed;
use yamor_core::world::candidate_world_seed;
use yamor_optimizer_api::{Fitness, Optimizer, Settings, Step};

use super::early_stop::early_stop_bounds;
use super::prepare::{Prepared, create, prepare};
use super::{RunError, Runs, step_lost};
use crate::model::{
    HELD_OUT_SEQ, JobRequest, Recommendation, RunEvaluation, RunEvent, RunSpec, RunState, Scoring,
    Starts, now_ms, told_value,
};
use crate::scheduler::Completion;

impl Runs {
    /// Runs one optimizer from its stored history (if any) to its end.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn drive(
        &self,
        id: u64,
        spec: &RunSpec,
        seed: u64,
        settings: &Settings,
        elapsed_before: f64,
        mut completions: mpsc::UnboundedReceiver<Completion>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), RunError> {
        let mut run = self
            .executor(id, spec, seed, settings, elapsed_before)
            .await?;
        loop {
            run.propose(self).await?;
            if run.pending.is_empty() {
                break;
            }
            let Some(completion) = run.next_completion(&mut completions, &mut stop).await? else {
                // A run out of time has ended as its budget said and still
                // earns its figure; one told to stop ends now.
                run.stopped = !run.out_of_time() || *stop.borrow();
                let ids: Vec<u64> = run.pending.keys().copied().collect();
                self.scheduler.cancel(&ids).await?;
                break;
            };
            run.learn(self, completion)?;
        }
        if !run.stopped {
            run.re_walk(self, &mut completions, &mut stop).await?;
        }
        run.finish(self).await
    }

    /// A fresh optimizer and the run's stored history, ready to replay.
    async fn executor<'a>(
        &self,
        id: u64,
        spec: &'a RunSpec,
        seed: u64,
        settings: &Settings,
        elapsed_before: f64,
    ) -> Result<Executor<'a>, RunError> {
        let prepared = prepare(spec).map_err(RunError::Invalid)?;
        let prior = match spec.prior {
            Some(run) => Some(
                self.prior(run, &prepared.space)
                    .await
                    .map_err(|e| RunError::Optimizer(e.to_string()))?,
            ),
            None => None,
        };
        let optimizer = create(
            &self.plugins,
            spec,
            &prepared.space,
            settings,
            seed,
            prior.as_ref(),
        )
        .map_err(|e| RunError::Optimizer(e.to_string()))?;
        let history = self.every_job(id).await?;
        let mut stored = HashMap::new();
        let mut ready = BTreeMap::new();
        let mut re_walked = HashMap::new();
        for job in history {
            if job.seq >= HELD_OUT_SEQ {
                re_walked.insert(job.seq, job);
                continue;
            }
            let x: Vec<f64> = job.request.job.parameters.iter().map(|(_, v)| *v).collect();
            stored.insert(job.seq, (job.id, x));
            if let Some(tell_seq) = job.tell_seq {
                let outcome = match job.outcome {
                    Some(o) if job.state == crate::model::JobState::Done => Ok(o),
                    _ => Err(job.error),
                };
                ready.insert(
                    tell_seq,
                    Completion {
                        job_id: job.id,
                        seq: job.seq,
                        tell_seq,
                        outcome,
                    },
                );
            }
        }
        // Shown at once: the stored row's count lags (it is saved every few
        // results), the recorded results do not.
        let recorded = ready.len() as u64;
        self.update(id, |v| v.evaluations = v.evaluations.max(recorded));
        let descriptors = optimizer.descriptors();
        Ok(Executor {
            id,
            descriptors,
            spec,
            prepared,
            optimizer: Some(optimizer),
            replayed: ready.len(),
            stored,
            ready,
            next_tell: 0,
            next_seq: 0,
            pending: HashMap::new(),
            finished: false,
            stopped: false,
            evaluations: 0,
            best: None,
            first_error: None,
            learnt: Vec::new(),
            complete: Vec::new(),
            re_walked,
            clock: Instant::now(),
            elapsed_before,
        })
    }
}

/// The value a result is told with (its velocity under the run's turn
/// constraint); `None` for a walk that failed or whose fitness is not
/// finite, told as [`Fitness::Failed`]. Shared with the replay of an
/// adaptation (`adaptation`), which must tell exactly what the run told.
pub(super) fn told_velocity(outcome: Option<&Outcome>, scoring: Scoring) -> Option<f64> {
    outcome
        .map(|o| told_value(o, scoring))
        .filter(|v| v.is_finite())
}

/// A result's descriptors in the order the optimizer names them; `None`
/// when it names none or the result lacks one.
pub(super) fn told_descriptors(outcome: Option<&Outcome>, names: &[String]) -> Option<Vec<f64>> {
    if names.is_empty() {
        return None;
    }
    let outcome = outcome?;
    names.iter().map(|name| outcome.descriptor(name)).collect()
}

/// A new proposal: (position, optimizer tag, x, its job).
type Fresh = (u64, u64, Vec<f64>, JobRequest);

/// One run being driven: the optimizer, what is stored of its past, and
/// what is in flight.
pub(super) struct Executor<'a> {
    pub(super) id: u64,
    pub(super) spec: &'a RunSpec,
    pub(super) prepared: Prepared,
    /// `None` only while an `ask` runs on a blocking thread.
    optimizer: Option<Box<dyn Optimizer>>,
    /// The behaviour descriptors the optimizer is told with each result
    /// (a map's axes); empty for one of the one number.
    descriptors: Vec<String>,
    /// The stored proposals by position: (job id, x).
    stored: HashMap<u64, (u64, Vec<f64>)>,
    /// Results waiting to be told, by tell order; the stored ones first.
    ready: BTreeMap<u64, Completion>,
    replayed: usize,
    next_tell: u64,
    next_seq: u64,
    /// job id → (optimizer tag, x)
    pending: HashMap<u64, (u64, Vec<f64>)>,
    finished: bool,
    pub(super) stopped: bool,
    evaluations: u64,
    best: Option<(f64, Vec<f64>)>,
    /// The first failure learnt: a run where nothing succeeded reports it.
    first_error: Option<String>,
    /// Every value learnt with its point: the re-walk's finalists.
    pub(super) learnt: Vec<(f64, Vec<f64>)>,
    /// The complete walks learnt (not stopped early): their velocity so far
    /// at each checkpoint and their velocity, for the early-stop bounds.
    complete: Vec<(Vec<f64>, f64)>,
    /// The stored held-out re-walks, by proposal number.
    pub(super) re_walked: HashMap<u64, crate::model::Job>,
    clock: Instant,
    elapsed_before: f64,
}

impl Executor<'_> {
    fn elapsed(&self) -> f64 {
        self.elapsed_before + self.clock.elapsed().as_secs_f64()
    }

    fn out_of_time(&self) -> bool {
        self.spec.max_seconds > 0.0 && self.elapsed() >= self.spec.max_seconds
    }

    fn budget_left(&self) -> bool {
        self.spec.max_evaluations == 0 || self.next_seq < self.spec.max_evaluations
    }

    /// The optimizer's next step, computed on a blocking thread: an optimizer
    /// may think for a while (Powell's line search runs on its own thread and
    /// `ask` waits for it), and the runtime must not wait with it.
    async fn ask(&mut self) -> Result<Step, RunError> {
        let mut optimizer = self
            .optimizer
            .take()
            .ok_or_else(|| RunError::Optimizer("the optimizer was lost".into()))?;
        let (optimizer, step) = tokio::task::spawn_blocking(move || {
            let step = optimizer.ask();
            (optimizer, step)
        })
        .await
        .map_err(step_lost)?;
        self.optimizer = Some(optimizer);
        Ok(step)
    }

    /// Asks for everything the optimizer can propose now; stored proposals
    /// are matched, new ones become jobs.
    async fn propose(&mut self, runs: &Runs) -> Result<(), RunError> {
        while !self.finished && !self.stopped && self.budget_left() && !self.out_of_time() {
            match self.ask().await? {
                Step::Finished => self.finished = true,
                Step::Wait => break,
                Step::Evaluate(candidates) => {
                    let fresh = self.take(candidates)?;
                    self.submit(runs, fresh).await?;
                }
            }
        }
        Ok(())
    }

    /// Numbers candidates within the budget; returns those not yet stored.
    fn take(
        &mut self,
        candidates: Vec<yamor_optimizer_api::Candidate>,
    ) -> Result<Vec<Fresh>, RunError> {
        let mut fresh = Vec::new();
        let early_stop = if self.spec.early_stop {
            early_stop_bounds(&self.complete)
        } else {
            None
        };
        for c in candidates {
            if !self.budget_left() {
                break;
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some((job_id, x)) = self.stored.get(&seq) {
                if x.len() != c.x.len()
                    || x.iter().zip(&c.x).any(|(a, b)| a.to_bits() != b.to_bits())
                {
                    return Err(RunError::Diverged {
                        seq,
                        optimizer: self.spec.optimizer.clone(),
                    });
                }
                self.pending.insert(*job_id, (c.tag, c.x));
            } else {
                let mut job = self.prepared.job_for(&c.x).map_err(RunError::Invalid)?;
                if self.spec.starts == Starts::Fresh {
                    job.job.spec.seed = candidate_seed(self.spec.seed, seq);
                }
                if let Some(worlds) = self.spec.worlds.distribution() {
                    job.job
                        .spec
                        .walk_in(worlds.draw(candidate_world_seed(self.spec.seed, seq)));
                }
                job.job.spec.early_stop.clone_from(&early_stop);
                fresh.push((seq, c.tag, c.x, job));
            }
        }
        Ok(fresh)
    }

    async fn submit(&mut self, runs: &Runs, fresh: Vec<Fresh>) -> Result<(), RunError> {
        if fresh.is_empty() {
            return Ok(());
        }
        let jobs = fresh
            .iter()
            .map(|(seq, _, _, job)| (*seq, job.clone()))
            .collect();
        let ids = runs
            .scheduler
            .submit(&format!("run-{}", self.id), self.id, jobs)
            .await?;
        for (job_id, (_, tag, x, _)) in ids.into_iter().zip(fresh) {
            self.pending.insert(job_id, (tag, x));
        }
        Ok(())
    }

    /// The next result, strictly in tell order; `None` when the run is
    /// stopped or out of time.
    async fn next_completion(
        &mut self,
        completions: &mut mpsc::UnboundedReceiver<Completion>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<Completion>, RunError> {
        loop {
            if let Some(c) = self.ready.remove(&self.next_tell) {
                self.next_tell += 1;
                return Ok(Some(c));
            }
            tokio::select! {
                c = completions.recv() => match c {
                    Some(c) => { self.ready.insert(c.tell_seq, c); }
                    None => return Err(RunError::SchedulerGone),
                },
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return Ok(None);
                    }
                }
                // Time budget: wake up when it runs out.
                () = tokio::time::sleep(std::time::Duration::from_millis(250)), if self.spec.max_seconds > 0.0 => {
                    if self.out_of_time() { return Ok(None); }
                }
            }
        }
    }

    /// Tells the optimizer one result and publishes what changed.
    fn learn(&mut self, runs: &Runs, completion: Completion) -> Result<(), RunError> {
        let Some((tag, x)) = self.pending.remove(&completion.job_id) else {
            return Err(RunError::ToldBeforeProposed(completion.job_id));
        };
        let velocity = told_velocity(completion.outcome.as_ref().ok(), self.spec.scoring());
        if velocity.is_none() {
            self.first_error
                .get_or_insert_with(|| match &completion.outcome {
                    Ok(Outcome::Walk(w)) if self.spec.direction.velocity(w).is_none() => format!(
                        "job {}: the walk reports no heading, which direction {} needs (a walker that cannot tell which way the robot faces: a Roombot walk, a robot seen with one LED)",
                        completion.job_id, self.spec.direction
                    ),
                    Ok(o) => format!(
                        "job {}: the {}'s fitness {} is not finite",
                        completion.job_id,
                        o.kind(),
                        o.fitness()
                    ),
                    Err(e) => format!("job {}: {e}", completion.job_id),
                });
        }
        if let (Some(v), Ok(Outcome::Walk(o))) = (velocity, &completion.outcome)
            && o.stopped_early.is_none()
            && o.partial_velocities.len() == CHECKPOINT_FRACTIONS.len()
        {
            self.complete.push((o.partial_velocities.clone(), v));
        }
        let descriptors = told_descriptors(completion.outcome.as_ref().ok(), &self.descriptors);
        self.optimizer
            .as_mut()
            .ok_or_else(|| RunError::Optimizer("the optimizer was lost".into()))?
            .tell_described(
                tag,
                velocity.map_or(Fitness::Failed, Fitness::Value),
                descriptors.as_deref(),
            );
        self.evaluations += 1;
        if let Some(v) = velocity {
            self.learnt.push((v, x.clone()));
        }
        let improved = velocity.is_some_and(|v| self.best.as_ref().is_none_or(|(b, _)| v > *b));
        if improved {
            self.best = Some((velocity.expect("improved implies a value"), x.clone()));
        }
        let fresh = self.evaluations as usize > self.replayed;
        // Replayed history is not news: only new results are broadcast.
        if !fresh && !improved {
            return Ok(());
        }
        let (evaluations, elapsed) = (self.evaluations, self.elapsed());
        let recommendation = self.recommendation();
        let best = self.best.as_ref().map(|(b, bx)| {
            (
                *b,
                self.prepared.parameters(bx),
                improved.then(|| self.prepared.best_gait(bx)),
            )
        });
        let view = runs.update(self.id, |v| {
            // A replay recounts from zero; the count shown never goes back.
            v.evaluations = v.evaluations.max(evaluations);
            v.elapsed_s = elapsed;
            if recommendation.is_some() {
                v.recommendation = recommendation;
            }
            if let Some((b, parameters, gait)) = best {
                v.best_velocity = Some(b);
                v.best_parameters = parameters;
                if let Some(gait) = gait {
                    v.best_gait_xml = gait;
                }
            }
        });
        if fresh {
            if improved || evaluations.is_multiple_of(16) {
                runs.persist(self.id);
            }
            if let Some(run) = view {
                let _ = runs.events.send(RunEvent {
                    run,
                    evaluation: Some(RunEvaluation {
                        job_id: completion.job_id,
                        index: evaluations,
                        parameters: self.prepared.parameters(&x),
                        velocity,
                        improved,
                    }),
                });
            }
        }
        Ok(())
    }

    /// The points the optimizer wants re-walked instead of the best few
    /// (a map's elites), when it names them.
    pub(super) fn optimizer_finalists(&self) -> Option<Vec<Vec<f64>>> {
        self.optimizer.as_ref().and_then(|o| o.finalists())
    }

    /// The optimizer's recommendation now, when it gives one inside the
    /// space.
    pub(super) fn recommended_point(&self) -> Option<Vec<f64>> {
        self.optimizer
            .as_ref()
            .and_then(|o| o.recommendation())
            .filter(|x| self.prepared.space.contains(x))
    }

    fn recommendation(&self) -> Option<Recommendation> {
        self.recommended_point().map(|x| Recommendation {
            parameters: self.prepared.parameters(&x),
            held_out: None,
        })
    }

    /// Records how the run ended and waits until that is on disk.
    async fn finish(self, runs: &Runs) -> Result<(), RunError> {
        // A run that learnt nothing but failures has failed, however it
        // ended: a "finished" with no result would hide what went wrong.
        let failure = match (&self.best, &self.first_error) {
            (None, Some(first)) if self.evaluations > 0 => Some(format!(
                "no evaluation succeeded ({} failed); the first: {first}",
                self.evaluations
            )),
            _ => None,
        };
        let state = if failure.is_some() {
            RunState::Failed
        } else if self.stopped {
            RunState::Stopped
        } else {
            RunState::Finished
        };
        let (evaluations, elapsed) = (self.evaluations, self.elapsed());
        runs.update(self.id, |v| {
            v.state = state;
            if let Some(failure) = failure {
                v.error = failure;
            }
            v.evaluations = evaluations;
            v.elapsed_s = elapsed;
            v.finished_ms = now_ms();
        });
        runs.persist(self.id);
        runs.scheduler.store().sync().await?;
        tracing::info!(run = self.id, evaluations, "run ended: {state:?}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_walk_breaking_the_turn_constraint_ranks_below_every_walk_keeping_it() {
        use crate::model::constrained_value;
        assert_eq!(constrained_value(0.2, 3.0, None), 0.2);
        assert_eq!(constrained_value(0.2, -4.0, Some(5.0)), 0.2);
        let slightly = constrained_value(0.3, 6.0, Some(5.0));
        let badly = constrained_value(0.3, -50.0, Some(5.0));
        // Below a walk going backwards that keeps it, and ordered by excess.
        assert!(slightly < constrained_value(-0.5, 0.0, Some(5.0)));
        assert!(badly < slightly);
    }
}
