//! Runs a sequential optimisation algorithm as an ask/tell [`Optimizer`].
//!
//! Powell is naturally written as straight-line code that calls the
//! objective ("line search, then the next direction..."). Turning it into a
//! hand-written state machine would obscure the thesis' algorithm, so it runs
//! on its own thread and *asks* through an [`Evaluator`]: each
//! `evaluate(points)` becomes one [`Step::Evaluate`] batch (evaluated in
//! parallel by the runtime) and blocks until every result is told. The
//! thread is deterministic, so the plugin keeps the replay contract. When
//! the optimizer is dropped, the channels close and the thread unwinds.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use yamor_optimizer_api::{Candidate, Fitness, Optimizer, Step};

/// The optimizer went away; the algorithm should return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// The algorithm's handle on the objective.
pub struct Evaluator {
    requests: SyncSender<Vec<Vec<f64>>>,
    results: Receiver<Vec<Fitness>>,
}

impl Evaluator {
    /// Evaluates every point (in parallel, as far as the runtime can).
    pub fn evaluate(&mut self, points: Vec<Vec<f64>>) -> Result<Vec<Fitness>, Stopped> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        self.requests.send(points).map_err(|_| Stopped)?;
        self.results.recv().map_err(|_| Stopped)
    }
}

struct Batch {
    first_tag: u64,
    outcomes: Vec<Option<Fitness>>,
}

/// An [`Optimizer`] backed by an algorithm thread.
pub struct Threaded {
    requests: Option<Receiver<Vec<Vec<f64>>>>,
    results: Option<SyncSender<Vec<Fitness>>>,
    batch: Option<Batch>,
    next_tag: u64,
    finished: bool,
    thread: Option<JoinHandle<()>>,
}

impl Threaded {
    /// Starts `algorithm` on its own thread.
    pub fn spawn(
        algorithm: impl FnOnce(&mut Evaluator) -> Result<(), Stopped> + Send + 'static,
    ) -> Self {
        let (request_tx, request_rx) = sync_channel(1);
        let (result_tx, result_rx) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("yamor-powell".into())
            .spawn(move || {
                let mut evaluator = Evaluator {
                    requests: request_tx,
                    results: result_rx,
                };
                // Stopped only means nobody listens any more.
                let _ = algorithm(&mut evaluator);
            })
            .expect("spawning the optimizer thread");
        Threaded {
            requests: Some(request_rx),
            results: Some(result_tx),
            batch: None,
            next_tag: 0,
            finished: false,
            thread: Some(thread),
        }
    }
}

impl Optimizer for Threaded {
    fn ask(&mut self) -> Step {
        if self.finished {
            return Step::Finished;
        }
        if let Some(batch) = &self.batch {
            if batch.outcomes.iter().any(Option::is_none) {
                return Step::Wait;
            }
            let outcomes = batch
                .outcomes
                .iter()
                .map(|o| o.expect("all told"))
                .collect();
            self.batch = None;
            if self
                .results
                .as_ref()
                .is_none_or(|r| r.send(outcomes).is_err())
            {
                self.finished = true;
                return Step::Finished;
            }
        }
        // The algorithm thread computes for microseconds between requests.
        match self.requests.as_ref().map(Receiver::recv) {
            Some(Ok(points)) => {
                let first_tag = self.next_tag;
                self.next_tag += points.len() as u64;
                self.batch = Some(Batch {
                    first_tag,
                    outcomes: vec![None; points.len()],
                });
                Step::Evaluate(
                    points
                        .into_iter()
                        .enumerate()
                        .map(|(i, x)| Candidate {
                            tag: first_tag + i as u64,
                            x,
                        })
                        .collect(),
                )
            }
            _ => {
                self.finished = true;
                Step::Finished
            }
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        if let Some(batch) = &mut self.batch
            && let Some(index) = tag.checked_sub(batch.first_tag)
            && let Some(slot) = batch.outcomes.get_mut(index as usize)
        {
            *slot = Some(outcome);
        }
    }
}

impl Drop for Threaded {
    fn drop(&mut self) {
        // Closing both channels makes the algorithm's next call fail.
        self.requests = None;
        self.results = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
