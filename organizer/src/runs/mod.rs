//! The optimizer runtime: one task per run drives a plugin's ask/tell loop,
//! turns proposals into jobs, and owns the budget, termination, persistence
//! and the best-so-far stream.
//!
//! # Resuming
//! Plugins are deterministic state machines (see `yamor-optimizer-api`), so a
//! run's checkpoint is its job log: every proposal is a job row with its
//! position `seq`, and every result is stored with the order `tell_seq` in
//! which the optimizer learnt it. After a restart a fresh optimizer with the
//! run's own settings and seed is replayed: its proposals are matched
//! against the stored ones (a mismatch stops the run with an error rather
//! than mixing two histories), stored results are told in their stored
//! order, jobs still queued are simply awaited, and only new proposals
//! become new jobs. No evaluation runs twice.

//!
//! # Layout
//! - this file: the [`Runs`] service (load and resume, start, batches,
//!   stop, the views and their persistence) and [`RunError`].
//! - `prepare`: a run's problem, optimizer and settings checked and made
//!   ready ([`check_run`]).
//! - `executor`: one run's ask/tell loop, replay and end.
//! - `held_out`: the finalists' re-walk from held-out starts.
//! - `map`: a quality-diversity run's map, rebuilt from its stored results
//!   ([`RunMap`]).
//! - `adaptation`: a run adapting from another run's map, replayed walk
//!   by walk with what its model predicted before each ([`Adaptation`]).
//! - `early_stop`: the bounds below which a walk stops early.
//! - `naming`: the names of runs their request leaves unnamed.

mod adaptation;
mod early_stop;
mod executor;
mod held_out;
mod map;
mod naming;
mod prepare;

pub use adaptation::{Adaptation, Trial};
pub use early_stop::{EARLY_STOP_AFTER, EARLY_STOP_WINDOW};
pub use held_out::held_out_by_engine;
pub use map::{MapCell, RunMap};
pub use prepare::{PrepareError, check_run};

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};
use yamor_optimizer_api::{Bound, Plugin, PluginInfo, Settings};

use crate::model::{
    Problem, REFERENCE_SEQ, Recommendation, Run, RunEvent, RunSpec, RunState, RunVariant, now_ms,
};
use crate::scheduler::{ScheduleError, Scheduler};
use crate::store::{RunRow, StoreError, Write};

use held_out::{re_walk_winner, reference_spread, spread_of};
use naming::variant_name;
use prepare::{checked, create, prepare, resolve_settings};

/// The most runs one batch may start: each is a live optimizer, and a
/// form or client asking for thousands is a mistake, not a plan.
pub const MAX_BATCH_VARIANTS: usize = 256;

/// Why a run stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("stored {0}")]
    StoredSettings(PrepareError),
    #[error(transparent)]
    Invalid(#[from] PrepareError),
    #[error("{0}")]
    Optimizer(String),
    #[error(
        "cannot resume: proposal {seq} differs from the stored one (is the {optimizer} plugin deterministic?)"
    )]
    Diverged { seq: u64, optimizer: String },
    #[error("cannot resume: job {0} was told before it was proposed")]
    ToldBeforeProposed(u64),
    #[error("the scheduler went away")]
    SchedulerGone,
    /// The runtime cancelled the optimizer's step: the organizer is shutting
    /// down, and the run resumes at the next start (it did not fail).
    #[error("the organizer is shutting down")]
    ShuttingDown,
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why the optimizer's step on a blocking thread gave no answer: the
/// runtime cancels a step not yet started when it shuts down (the run is
/// resumed at the next start), else the step panicked (the run fails).
fn step_lost(e: tokio::task::JoinError) -> RunError {
    if e.is_cancelled() {
        RunError::ShuttingDown
    } else {
        RunError::Optimizer(format!("the optimizer panicked: {e}"))
    }
}

impl RunError {
    /// Whether the run is marked failed; one the organizer leaves because
    /// it is shutting down stays running in the store, and the next start
    /// resumes it.
    fn fails_the_run(&self) -> bool {
        !matches!(self, RunError::ShuttingDown)
    }
}

struct RunEntry {
    view: Run,
    stop: watch::Sender<bool>,
}

/// The registry of plugins and runs.
pub struct Runs {
    scheduler: Arc<Scheduler>,
    plugins: Vec<Arc<dyn Plugin>>,
    runs: Mutex<BTreeMap<u64, RunEntry>>,
    events: broadcast::Sender<RunEvent>,
    next_id: Mutex<u64>,
}

impl Runs {
    /// Loads runs from the store and resumes those that were running.
    pub fn load(
        scheduler: Arc<Scheduler>,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> Result<Arc<Runs>, ScheduleError> {
        Self::load_with(scheduler, plugins, true)
    }

    /// Loads runs from the store as they were recorded, resuming none (a
    /// read-only view: those recorded running show as running).
    pub fn load_view(
        scheduler: Arc<Scheduler>,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> Result<Arc<Runs>, ScheduleError> {
        Self::load_with(scheduler, plugins, false)
    }

    fn load_with(
        scheduler: Arc<Scheduler>,
        plugins: Vec<Arc<dyn Plugin>>,
        resume: bool,
    ) -> Result<Arc<Runs>, ScheduleError> {
        let (_, max_run, _) = scheduler.store().max_ids()?;
        let (events, _) = broadcast::channel(4096);
        let runs = Arc::new(Runs {
            scheduler,
            plugins,
            runs: Mutex::new(BTreeMap::new()),
            events,
            next_id: Mutex::new(max_run + 1),
        });
        // A run's row saves its count every few results; the results are
        // recorded at once. Shown from the first answer after a restart,
        // whether the run resumes or ended while its row lagged.
        let recorded: HashMap<u64, u64> =
            runs.scheduler.store().told_counts()?.into_iter().collect();
        for row in runs.scheduler.store().runs()? {
            let mut view = row_view(&row);
            view.evaluations = view
                .evaluations
                .max(recorded.get(&row.id).copied().unwrap_or(0));
            if row.spec.held_out.is_on() {
                let stored = runs.scheduler.store().held_out_jobs(row.id)?;
                let walks: Vec<(u64, Option<(f64, f64)>)> = stored
                    .iter()
                    .map(|j| (j.seq, j.ranked(row.spec.direction)))
                    .collect();
                view.held_out = re_walk_winner(
                    row.spec.held_out.starts,
                    row.spec.max_turn_deg_s,
                    walks.iter().copied(),
                )
                .map(|(_, spread)| spread);
                view.reference = reference_spread(walks);
                if let Some(recommendation) = &mut view.recommendation {
                    // Its walks are the held-out ones of its very point.
                    recommendation.held_out = spread_of(
                        stored
                            .iter()
                            .filter(|j| {
                                j.seq < REFERENCE_SEQ
                                    && j.request.job.parameters == recommendation.parameters
                            })
                            .map(|j| (j.seq, j.ranked(row.spec.direction))),
                    );
                }
            }
            let (stop, _) = watch::channel(false);
            let running = resume && row.state == RunState::Running;
            runs.runs.lock().insert(row.id, RunEntry { view, stop });
            if running {
                tracing::info!(run = row.id, "resuming run");
                match runs.resolve_settings(&row.spec) {
                    Ok(settings) => {
                        runs.launch(row.id, row.spec, row.seed, settings, row.elapsed_s);
                    }
                    Err(e) => runs.fail(row.id, &RunError::StoredSettings(e)),
                }
            }
        }
        Ok(runs)
    }

    /// What every loaded optimizer is and which settings it takes.
    #[must_use]
    pub fn optimizers(&self) -> Vec<PluginInfo> {
        self.plugins.iter().map(|p| p.info()).collect()
    }

    fn resolve_settings(&self, spec: &RunSpec) -> Result<Settings, PrepareError> {
        resolve_settings(&self.plugins, spec)
    }

    /// Validates, persists and starts a run.
    pub async fn start(self: &Arc<Self>, spec: RunSpec) -> Result<Run, ScheduleError> {
        spec.spec
            .check()
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        let settings = self
            .resolve_settings(&spec)
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        self.start_resolved(spec, settings).await
    }

    async fn start_resolved(
        self: &Arc<Self>,
        mut spec: RunSpec,
        settings: Settings,
    ) -> Result<Run, ScheduleError> {
        let prepared = checked(&self.plugins, &spec, &settings)
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        if let Some(prior) = spec.prior {
            // The map must exist and fit before the run is stored.
            let map = self.prior(prior, &prepared.space).await?;
            create(
                &self.plugins,
                &spec,
                &prepared.space,
                &settings,
                spec.seed,
                Some(&map),
            )
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        }
        // A run nobody can serve would wait forever without a word.
        let served = self
            .scheduler
            .serves_after_restart(&prepared.template)
            .await;
        if served != Ok(true) {
            let silent = match served {
                Err(names) => format!(
                    "; the hosts known from before the organizer started ({}) have not \
                     answered yet",
                    names.join(", ")
                ),
                Ok(_) => String::new(),
            };
            return Err(ScheduleError::Invalid(format!(
                "no registered host serves {}{}{silent}: register one first (yamor host …)",
                spec.objective,
                prepared
                    .template
                    .backend
                    .map_or(String::new(), |k| format!(" on a {} host", k.as_str()))
            )));
        }
        let id = {
            let mut next = self.next_id.lock();
            *next += 1;
            *next - 1
        };
        let name = if spec.name.is_empty() {
            naming::default_name(&spec, id)
        } else {
            spec.name.clone()
        };
        // From here on the run names every setting, defaults included, so
        // a later default changes no run already started.
        spec.settings = settings.to_text();
        let row = RunRow {
            id,
            name,
            optimizer: spec.optimizer.clone(),
            settings: serde_json::to_string(&settings).expect("settings serialise"),
            seed: spec.seed,
            spec,
            state: RunState::Running,
            evaluations: 0,
            best_velocity: None,
            best_parameters: Vec::new(),
            recommendation: Vec::new(),
            error: String::new(),
            started_ms: now_ms(),
            finished_ms: 0,
            elapsed_s: 0.0,
        };
        self.scheduler
            .store()
            .commit_or_refuse(Write::InsertRun(Box::new(row.clone())))
            .await?;
        let view = row_view(&row);
        let (stop, _) = watch::channel(false);
        self.runs.lock().insert(
            id,
            RunEntry {
                view: view.clone(),
                stop,
            },
        );
        tracing::info!(
            run = id,
            name = view.name,
            optimizer = view.optimizer,
            "run started"
        );
        self.scheduler.metrics().runs_started.inc();
        self.launch(id, row.spec, row.seed, settings, 0.0);
        Ok(view)
    }

    /// The state `/metrics` reports, read now.
    #[must_use]
    pub fn metrics_snapshot(&self) -> crate::metrics::Snapshot {
        let crate::scheduler::Load { hosts, queued } = self.scheduler.load_snapshot();
        let runs = self.list();
        let by_state = RunState::ALL
            .iter()
            .map(|&state| {
                let n = runs.iter().filter(|r| r.state == state).count();
                (state.as_str(), i64::try_from(n).unwrap_or(i64::MAX))
            })
            .collect();
        crate::metrics::Snapshot {
            hosts: hosts.into_iter().map(|(s, n)| (s.as_str(), n)).collect(),
            queued,
            runs: by_state,
            run_best: runs
                .iter()
                .map(|r| (r.id, r.name.clone(), r.gait, r.best_velocity, r.evaluations))
                .collect(),
            database_writable: self.scheduler.store().unwritable().is_none(),
        }
    }

    /// The Prometheus text exposition of this organizer.
    #[must_use]
    pub fn metrics_text(&self) -> String {
        self.scheduler.metrics().render(&self.metrics_snapshot())
    }

    /// Many runs of `base` with other settings and seeds; all or nothing.
    pub async fn batch_start(
        self: &Arc<Self>,
        base: RunSpec,
        variants: Vec<RunVariant>,
    ) -> Result<Vec<Run>, ScheduleError> {
        if variants.is_empty() {
            return Err(ScheduleError::Invalid(
                "variants: at least one is needed".into(),
            ));
        }
        if variants.len() > MAX_BATCH_VARIANTS {
            return Err(ScheduleError::Invalid(format!(
                "variants: a batch holds at most {MAX_BATCH_VARIANTS} variants, got {}",
                variants.len()
            )));
        }
        base.spec
            .check()
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        // Check every variant before starting any: all or nothing (a full
        // disk too, though it may still fill between two starts).
        self.scheduler.store().check_writable()?;
        let mut specs = Vec::new();
        for (index, variant) in variants.into_iter().enumerate() {
            let mut r = base.clone();
            r.seed = variant.seed;
            r.name = if variant.name.is_empty() {
                variant_name(&base, &variant.settings, variant.seed)
            } else {
                variant.name
            };
            r.settings.extend(variant.settings);
            let settings = self
                .resolve_settings(&r)
                .map_err(|e| ScheduleError::Invalid(format!("variants[{index}]: {e}")))?;
            specs.push((r, settings));
        }
        prepare(&base).map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        let mut runs = Vec::new();
        for (r, settings) in specs {
            runs.push(self.start_resolved(r, settings).await?);
        }
        Ok(runs)
    }

    pub fn stop(&self, id: u64) -> Result<Run, ScheduleError> {
        let runs = self.runs.lock();
        let entry = runs
            .get(&id)
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))?;
        let _ = entry.stop.send(true);
        Ok(entry.view.clone())
    }

    /// The free parameters of run `id` with their bounds, in the order its
    /// jobs list them (what a page draws a parameter's range from).
    pub async fn bounds(&self, id: u64) -> Result<Vec<Bound>, ScheduleError> {
        Ok(self.space(id).await?.bounds)
    }

    /// The space run `id` searches (its bounds and start point).
    pub async fn space(&self, id: u64) -> Result<yamor_optimizer_api::Space, ScheduleError> {
        let row = self.stored(id).await?;
        let prepared = prepare(&row.spec).map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        Ok(prepared.space)
    }

    /// What run `id` was asked to do, every setting named.
    pub async fn spec(&self, id: u64) -> Result<RunSpec, ScheduleError> {
        Ok(self.stored(id).await?.spec)
    }

    /// Run `id` as stored: its spec and settings as it was started.
    async fn stored(&self, id: u64) -> Result<crate::store::RunRow, ScheduleError> {
        self.scheduler
            .store()
            .read_async(move |s| s.run(id))
            .await?
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))
    }

    pub fn get(&self, id: u64) -> Result<Run, ScheduleError> {
        self.runs
            .lock()
            .get(&id)
            .map(|e| e.view.clone())
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))
    }

    #[must_use]
    pub fn list(&self) -> Vec<Run> {
        self.runs.lock().values().map(|e| e.view.clone()).collect()
    }

    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.events.subscribe()
    }

    /// The run's current state, then every event about it. Subscribes
    /// before reading the state, so nothing in between is lost. A slow
    /// watcher only misses intermediate evaluations: each event carries the
    /// whole run again.
    pub fn watch(
        &self,
        run_id: u64,
    ) -> Result<std::pin::Pin<Box<dyn Stream<Item = RunEvent> + Send>>, ScheduleError> {
        let events = BroadcastStream::new(self.subscribe());
        let first = RunEvent {
            run: self.get(run_id)?,
            evaluation: None,
        };
        let live = events.filter_map(move |event| match event {
            Ok(e) if e.run.id == run_id => Some(e),
            _ => None,
        });
        Ok(Box::pin(tokio_stream::once(first).chain(live)))
    }

    /// Every evaluation `run_id`'s optimizer learnt, in the order it learnt
    /// them, with parameters, outcome and gait.
    /// Every job of run `id` as stored, whatever its state.
    pub(super) async fn every_job(
        &self,
        id: u64,
    ) -> Result<Vec<crate::model::Job>, crate::store::StoreError> {
        self.scheduler
            .store()
            .read_async(move |s| {
                s.jobs(&crate::model::JobFilter {
                    run_id: Some(id),
                    ..Default::default()
                })
            })
            .await
    }

    pub async fn told_jobs(&self, run_id: u64) -> Result<Vec<crate::model::Job>, ScheduleError> {
        self.scheduler.told_jobs(run_id).await
    }

    fn launch(
        self: &Arc<Self>,
        id: u64,
        spec: RunSpec,
        seed: u64,
        settings: Settings,
        elapsed_before: f64,
    ) {
        let (sink, completions) = mpsc::unbounded_channel();
        self.scheduler.attach_run(id, sink);
        let stop = self.runs.lock().get(&id).map(|e| e.stop.subscribe());
        let Some(stop) = stop else { return };
        let me = self.clone();
        tokio::spawn(async move {
            let outcome = me
                .drive(
                    id,
                    &spec,
                    seed,
                    &settings,
                    elapsed_before,
                    completions,
                    stop,
                )
                .await;
            me.scheduler.detach_run(id);
            if let Err(error) = &outcome
                && error.fails_the_run()
            {
                me.fail(id, error);
            }
        });
    }

    fn fail(&self, id: u64, error: &RunError) {
        let message = error.to_string();
        tracing::error!(run = id, "run failed: {message}");
        self.update(id, |v| {
            v.state = RunState::Failed;
            v.error = message;
            v.finished_ms = now_ms();
        });
        self.persist(id);
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Run)) -> Option<Run> {
        let mut runs = self.runs.lock();
        let entry = runs.get_mut(&id)?;
        f(&mut entry.view);
        Some(entry.view.clone())
    }

    fn persist(&self, id: u64) {
        let Ok(view) = self.get(id) else { return };
        self.scheduler.store().write(Write::UpdateRun {
            id,
            state: view.state,
            evaluations: view.evaluations,
            best_velocity: view.best_velocity,
            best_parameters: view.best_parameters.clone(),
            recommendation: view
                .recommendation
                .as_ref()
                .map(|r| r.parameters.clone())
                .unwrap_or_default(),
            error: view.error.clone(),
            finished_ms: view.finished_ms,
            elapsed_s: view.elapsed_s,
        });
        let _ = self.events.send(RunEvent {
            run: view,
            evaluation: None,
        });
    }
}

fn row_view(row: &RunRow) -> Run {
    let best_gait_xml = match (&row.spec.problem, row.best_parameters.is_empty()) {
        (Problem::OptimizationXml(_), false) => prepare(&row.spec)
            .map(|p| {
                p.best_gait(
                    &row.best_parameters
                        .iter()
                        .map(|(_, v)| *v)
                        .collect::<Vec<_>>(),
                )
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    Run {
        id: row.id,
        name: row.name.clone(),
        robot: row.spec.robot_label(),
        gait: matches!(row.spec.problem, Problem::OptimizationXml(_)),
        optimizer: row.optimizer.clone(),
        settings: row.spec.settings.clone(),
        seed: row.seed,
        state: row.state,
        evaluations: row.evaluations,
        max_evaluations: row.spec.max_evaluations,
        max_seconds: row.spec.max_seconds,
        best_velocity: row.best_velocity,
        best_parameters: row.best_parameters.clone(),
        best_gait_xml,
        error: row.error.clone(),
        started_ms: row.started_ms,
        finished_ms: row.finished_ms,
        held_out: None,
        reference: None,
        recommendation: (!row.recommendation.is_empty()).then(|| Recommendation {
            parameters: row.recommendation.clone(),
            held_out: None,
        }),
        elapsed_s: row.elapsed_s,
        prior: row.spec.prior,
        direction: row.spec.direction,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_step_the_shutdown_cancels_leaves_the_run_to_resume_and_a_panic_fails_it() {
        // A task that never ends, cancelled as the runtime cancels a step.
        let cancelled = tokio::spawn(std::future::pending::<()>());
        cancelled.abort();
        let panicked = tokio::task::spawn_blocking(|| panic!("the optimizer's bug"));
        let (Err(cancelled), Err(panicked)) = (cancelled.await, panicked.await) else {
            panic!("both steps fail");
        };
        let error = step_lost(cancelled);
        assert!(matches!(error, RunError::ShuttingDown));
        assert!(!error.fails_the_run());
        let error = step_lost(panicked);
        assert!(matches!(&error, RunError::Optimizer(m) if m.contains("panicked")));
        assert!(error.fails_the_run());
    }
}
