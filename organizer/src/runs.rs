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

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use tokio::sync::{broadcast, mpsc, watch};
// The run's time budget on tokio's clock, which tests can pause and advance.
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};
use yamor_core::evaluation::{
    BackendKind, CHECKPOINT_FRACTIONS, EarlyStop, EvaluationJob, Objective, RobotSource,
};
use yamor_core::optimize::OptimizationConfig;
use yamor_core::starts::{Spread, candidate_seed, held_out_seeds};
use yamor_optimizer_api::{Bound, Fitness, Optimizer, Plugin, PluginInfo, Settings, Space, Step};

use crate::model::{
    HELD_OUT_SEQ, JobRequest, Problem, REFERENCE_SEQ, Recommendation, Run, RunEvaluation, RunEvent,
    RunSpec, RunState, RunVariant, Starts, constrained_value,
};
use crate::model::{JobState, now_ms};
use crate::scheduler::{Completion, ScheduleError, Scheduler};
use crate::store::{RunRow, StoreError, Write};

/// The most runs one batch may start: each is a live optimizer, and a
/// form or client asking for thousands is a mistake, not a plan.
pub const MAX_BATCH_VARIANTS: usize = 256;

/// Why a run stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("stored {0}")]
    StoredSettings(String),
    #[error("{0}")]
    Invalid(String),
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

/// How a point of the space becomes a job.
enum Blueprint {
    /// A gait: a yamorconfig with <optimize> rules.
    Gait(Box<OptimizationConfig>),
    /// Bare named parameters of an expression or external objective.
    Bare,
}

struct Prepared {
    blueprint: Blueprint,
    space: Space,
    template: JobRequest,
}

impl Prepared {
    /// `x` as named parameters, in space order.
    fn parameters(&self, x: &[f64]) -> Vec<(String, f64)> {
        self.space
            .bounds
            .iter()
            .zip(x)
            .map(|(b, &value)| (b.name.clone(), value))
            .collect()
    }

    /// The job that evaluates `x`, or why `x` cannot be turned into one.
    fn job_for(&self, x: &[f64]) -> Result<JobRequest, String> {
        let mut request = self.template.clone();
        request.job.parameters = self.parameters(x);
        if let Blueprint::Gait(config) = &self.blueprint {
            request.job.gait = Some(config.apply(x).map_err(|e| e.to_string())?);
        }
        Ok(request)
    }

    fn best_gait(&self, x: &[f64]) -> String {
        match &self.blueprint {
            Blueprint::Gait(config) => config
                .apply(x)
                .map(|g| g.to_xml_string())
                .unwrap_or_default(),
            Blueprint::Bare => String::new(),
        }
    }
}

fn prepare(spec: &RunSpec) -> Result<Prepared, String> {
    let (blueprint, space) = match &spec.problem {
        Problem::OptimizationXml(xml) => {
            let config = OptimizationConfig::from_xml_str("optimization_xml", xml)
                .map_err(|e| e.to_string())?;
            let free = config.free_parameters();
            if free.is_empty() {
                return Err(
                    "optimization_xml: no <optimize param min max> rule, nothing to optimize"
                        .into(),
                );
            }
            let bounds = free
                .iter()
                .map(|p| Bound {
                    name: p.name.clone(),
                    min: p.min,
                    max: p.max,
                    periodic: p.periodic,
                })
                .collect();
            let start = free.iter().map(|p| p.start).collect();
            let space = Space::new(bounds, start).map_err(|e| format!("optimization_xml: {e}"))?;
            (Blueprint::Gait(Box::new(config)), space)
        }
        Problem::Space(bounds) => {
            let start = bounds.iter().map(|b| b.start).collect();
            let bounds = bounds
                .iter()
                .map(|b| Bound::new(b.name.clone(), b.min, b.max))
                .collect();
            let space = Space::new(bounds, start).map_err(|e| format!("space: {e}"))?;
            (Blueprint::Bare, space)
        }
    };
    // Gaits default to simulation; a bare objective goes to whichever host
    // serves it, whatever its kind.
    let backend = match (&blueprint, spec.backend) {
        (_, Some(kind)) => Some(kind),
        (Blueprint::Gait(_), None) => Some(BackendKind::Simulation),
        (Blueprint::Bare, None) => None,
    };
    match (&blueprint, &spec.objective) {
        (Blueprint::Bare, Objective::Gait) => {
            return Err(
                "a run over bare parameters must name its objective: an expression (expr:<text>) or an external objective's name"
                    .into(),
            );
        }
        (Blueprint::Gait(_), objective @ (Objective::Expression(_) | Objective::Named(_))) => {
            return Err(format!(
                "optimization_xml describes a gait, but the objective is {objective}"
            ));
        }
        _ => {}
    }
    if let Some(max) = spec.max_turn_deg_s
        && !(max.is_finite() && max > 0.0)
    {
        return Err(format!(
            "max_turn_deg_s must be a positive number of degrees per second, got {max}"
        ));
    }
    spec.held_out.check()?;
    if !spec.max_seconds.is_finite() || spec.max_seconds < 0.0 {
        return Err(format!(
            "max_seconds must be non-negative, got {}",
            spec.max_seconds
        ));
    }
    let template = JobRequest {
        job: EvaluationJob {
            objective: spec.objective.clone(),
            robot: spec.robot.clone(),
            gait: None,
            parameters: Vec::new(),
            spec: spec.spec.clone(),
        },
        backend,
        max_attempts: 0,
        timeout: None,
    };
    let prepared = Prepared {
        blueprint,
        space,
        template,
    };
    // Fail now, not in the middle of the run, if the start point cannot run.
    let start = prepared.space.start.clone();
    let job = prepared.job_for(&start)?;
    job.check()?;
    Ok(prepared)
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
                let walks: Vec<(u64, Option<(f64, f64)>)> =
                    stored.iter().map(|j| (j.seq, j.walked())).collect();
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
                            .map(|j| (j.seq, j.walked())),
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

    fn resolve_settings(&self, spec: &RunSpec) -> Result<Settings, String> {
        resolve_settings(&self.plugins, spec)
    }

    /// Validates, persists and starts a run.
    pub async fn start(self: &Arc<Self>, spec: RunSpec) -> Result<Run, ScheduleError> {
        spec.spec
            .check()
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        let settings = self
            .resolve_settings(&spec)
            .map_err(ScheduleError::Invalid)?;
        self.start_resolved(spec, settings).await
    }

    async fn start_resolved(
        self: &Arc<Self>,
        mut spec: RunSpec,
        settings: Settings,
    ) -> Result<Run, ScheduleError> {
        let prepared = checked(&self.plugins, &spec, &settings).map_err(ScheduleError::Invalid)?;
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
            // The robot first: a list of runs reads by what was walked.
            let robot = match &spec.robot {
                _ if matches!(spec.problem, Problem::Space(_)) => "",
                _ if !spec.robot_name.trim().is_empty() => spec.robot_name.trim(),
                RobotSource::Example(example) => example,
                _ => "",
            };
            if robot.is_empty() {
                format!("{}-{id}", spec.optimizer)
            } else {
                format!("{robot}-{}-{id}", spec.optimizer)
            }
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
        prepare(&base).map_err(ScheduleError::Invalid)?;
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
        let row = self
            .scheduler
            .store()
            .read_async(move |s| s.run(id))
            .await?
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))?;
        let prepared = prepare(&row.spec).map_err(ScheduleError::Invalid)?;
        Ok(prepared.space.bounds)
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

    /// Runs one optimizer from its stored history (if any) to its end.
    #[allow(clippy::too_many_arguments)]
    async fn drive(
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
        let plugin = plugin(&self.plugins, &spec.optimizer)
            .map_err(RunError::Invalid)?
            .clone();
        let optimizer = plugin
            .create(&prepared.space, settings, seed, budget_of(spec))
            .map_err(|e| RunError::Optimizer(e.to_string()))?;
        let history = self
            .scheduler
            .store()
            .read_async(move |s| {
                s.jobs(&crate::model::JobFilter {
                    run_id: Some(id),
                    ..Default::default()
                })
            })
            .await?;
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
        Ok(Executor {
            id,
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

/// A new proposal: (position, optimizer tag, x, its job).
type Fresh = (u64, u64, Vec<f64>, JobRequest);

/// One run being driven: the optimizer, what is stored of its past, and
/// what is in flight.
struct Executor<'a> {
    id: u64,
    spec: &'a RunSpec,
    prepared: Prepared,
    /// `None` only while an `ask` runs on a blocking thread.
    optimizer: Option<Box<dyn Optimizer>>,
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
    stopped: bool,
    evaluations: u64,
    best: Option<(f64, Vec<f64>)>,
    /// The first failure learnt: a run where nothing succeeded reports it.
    first_error: Option<String>,
    /// Every value learnt with its point: the re-walk's finalists.
    learnt: Vec<(f64, Vec<f64>)>,
    /// The complete walks learnt (not stopped early): their velocity so far
    /// at each checkpoint and their velocity, for the early-stop bounds.
    complete: Vec<(Vec<f64>, f64)>,
    /// The stored held-out re-walks, by proposal number.
    re_walked: HashMap<u64, crate::model::Job>,
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
        let max_turn = self.spec.max_turn_deg_s;
        let velocity = match &completion.outcome {
            Ok(o) if o.velocity.is_finite() => {
                Some(constrained_value(o.velocity, o.turn_deg_s, max_turn))
            }
            Ok(o) => {
                self.first_error.get_or_insert_with(|| {
                    format!(
                        "job {}: the value {} is not finite",
                        completion.job_id, o.velocity
                    )
                });
                None
            }
            Err(e) => {
                self.first_error
                    .get_or_insert_with(|| format!("job {}: {e}", completion.job_id));
                None
            }
        };
        if let (Some(v), Ok(o)) = (velocity, &completion.outcome)
            && o.stopped_early.is_none()
            && o.partial_velocities.len() == CHECKPOINT_FRACTIONS.len()
        {
            self.complete.push((o.partial_velocities.clone(), v));
        }
        self.optimizer
            .as_mut()
            .ok_or_else(|| RunError::Optimizer("the optimizer was lost".into()))?
            .tell(tag, velocity.map_or(Fitness::Failed, Fitness::Value));
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

    /// The optimizer's recommendation now, when it gives one inside the
    /// space.
    fn recommended_point(&self) -> Option<Vec<f64>> {
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
    async fn re_walk(
        &mut self,
        runs: &Runs,
        completions: &mut mpsc::UnboundedReceiver<Completion>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), RunError> {
        let plan = self.spec.held_out;
        if !plan.is_on() {
            return Ok(());
        }
        let finalists = self.finalists(plan.candidates as usize);
        let mut waiting = HashMap::new();
        let mut fresh = Vec::new();
        // Proposal number → velocity (`None`: the walk failed).
        let mut walked = HashMap::new();
        // The finalists' blocks of walks, then the reference gait's (a
        // gait's start point; a bare problem's start is no reference).
        let reference = matches!(self.prepared.blueprint, Blueprint::Gait(_))
            .then(|| (REFERENCE_SEQ, &self.prepared.space.start));
        let blocks = finalists
            .iter()
            .enumerate()
            .map(|(k, x)| (HELD_OUT_SEQ + k as u64 * u64::from(plan.starts), x))
            .chain(reference);
        for (first, x) in blocks {
            for (i, seed) in held_out_seeds(plan.starts).enumerate() {
                let seq = first + i as u64;
                match self.re_walked.get(&seq) {
                    Some(job) if matches!(job.state, JobState::Queued | JobState::Running) => {
                        waiting.insert(job.id, seq);
                    }
                    Some(job) => {
                        walked.insert(seq, job.walked());
                    }
                    None => {
                        let mut job = self.prepared.job_for(x).map_err(RunError::Invalid)?;
                        job.job.spec.seed = seed;
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
                        walked.insert(seq, c.outcome.ok().map(|o| (o.velocity, o.turn_deg_s)));
                    }
                }
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        self.stopped = true;
                        let ids: Vec<u64> = waiting.keys().copied().collect();
                        runs.scheduler.cancel(&ids).await?;
                        return Ok(());
                    }
                }
            }
        }
        let walked: Vec<(u64, Option<(f64, f64)>)> = walked.into_iter().collect();
        let reference = reference_spread(walked.iter().copied());
        let recommended = self.recommended_point().and_then(|x| {
            let k = finalists.iter().position(|f| same_point(f, &x))?;
            let first = HELD_OUT_SEQ + k as u64 * u64::from(plan.starts);
            let block = first..first + u64::from(plan.starts);
            Some(Recommendation {
                parameters: self.prepared.parameters(&x),
                held_out: spread_of(
                    walked
                        .iter()
                        .filter(|(seq, _)| block.contains(seq))
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
        let Some((k, spread)) = re_walk_winner(plan.starts, self.spec.max_turn_deg_s, walked)
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

/// Of a run's held-out re-walks, `(proposal number, (velocity, turn
/// rate))` with `starts` starts per finalist, the finalist with the best
/// mean velocity (its index) and its spread over the starts it walked
/// (failed walks left out; a finalist needs two successful walks to be
/// compared). Under a turn constraint the winner is taken among the
/// finalists whose mean absolute turn rate keeps it, when any does.
fn re_walk_winner(
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
fn reference_spread(walks: impl IntoIterator<Item = (u64, Option<(f64, f64)>)>) -> Option<Spread> {
    spread_of(walks.into_iter().filter(|(seq, _)| *seq >= REFERENCE_SEQ))
}

/// The spread of `walks`' velocities, failed walks left out; two needed.
fn spread_of(walks: impl IntoIterator<Item = (u64, Option<(f64, f64)>)>) -> Option<Spread> {
    let velocities: Vec<f64> = walks
        .into_iter()
        .filter_map(|(_, walk)| walk.map(|(v, _)| v).filter(|v| v.is_finite()))
        .collect();
    (velocities.len() >= 2)
        .then(|| Spread::of(&velocities))
        .flatten()
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
    }
}

fn plugin<'a>(plugins: &'a [Arc<dyn Plugin>], name: &str) -> Result<&'a Arc<dyn Plugin>, String> {
    plugins
        .iter()
        .find(|p| p.info().name == name)
        .ok_or_else(|| {
            let known: Vec<String> = plugins.iter().map(|p| p.info().name).collect();
            format!("optimizer: unknown {name:?}; known: {}", known.join(", "))
        })
}

/// The one place a run's settings (text, from a request or the store)
/// become the typed values its optimizer is made with. A gait run gets the
/// gait-run defaults ([`crate::model::gait_run_settings`]) for what it does
/// not set, whichever way it came in (gRPC, the form, a local run); a
/// stored run names every setting already.
fn resolve_settings(plugins: &[Arc<dyn Plugin>], spec: &RunSpec) -> Result<Settings, String> {
    let plugin = plugin(plugins, &spec.optimizer)?;
    let mut given = spec.settings.clone();
    if matches!(spec.problem, Problem::OptimizationXml(_)) {
        crate::model::gait_run_settings(&spec.optimizer, &mut given);
    }
    Settings::parse(
        &plugin.info().settings,
        given.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(|e| format!("settings: {e}"))
}

/// What a run is checked for before anything of it is stored: its
/// objective and problem ([`prepare`]), and its settings against the
/// optimizer made over its space.
fn checked(
    plugins: &[Arc<dyn Plugin>],
    spec: &RunSpec,
    settings: &Settings,
) -> Result<Prepared, String> {
    if spec.objective == Objective::Expression(String::new()) {
        return Err("objective: expr: needs an expression, e.g. expr:-(x*x + y*y)".into());
    }
    let prepared = prepare(spec)?;
    // Creating the optimizer validates the settings against the space.
    plugin(plugins, &spec.optimizer)?
        .create(&prepared.space, settings, spec.seed, budget_of(spec))
        .map_err(|e| format!("settings: {e}"))?;
    Ok(prepared)
}

/// Everything [`Runs::start`] checks of `spec` that needs neither a
/// database nor hosts: a local run checks it before it writes anything.
pub fn check_run(plugins: &[Arc<dyn Plugin>], spec: &RunSpec) -> Result<(), String> {
    spec.spec.check().map_err(|e| e.to_string())?;
    let settings = resolve_settings(plugins, spec)?;
    checked(plugins, spec, &settings).map(drop)
}

/// The budget a plugin may plan with (0 means the optimizer's own schedule).
fn budget_of(spec: &RunSpec) -> Option<u64> {
    (spec.max_evaluations > 0).then_some(spec.max_evaluations)
}

/// An unnamed batch run is named after what sets it apart: its settings
/// (or its seed when it changes none), after the batch's name or optimizer.
fn variant_name(base: &RunSpec, settings: &BTreeMap<String, String>, seed: u64) -> String {
    let prefix = if base.name.is_empty() {
        &base.optimizer
    } else {
        &base.name
    };
    if settings.is_empty() {
        format!("{prefix} seed={seed}")
    } else {
        let pairs: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{prefix} {}", pairs.join(","))
    }
}

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
fn early_stop_bounds(complete: &[(Vec<f64>, f64)]) -> Option<EarlyStop> {
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
