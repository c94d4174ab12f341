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
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prost::Message;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};
use yamor_core::optimize::OptimizationConfig;
use yamor_optimizer_api::{Bound, Outcome, Plugin, SettingKind, Settings, Space, Step};
use yamor_proto::v1 as pb;

use crate::now_ms;
use crate::scheduler::{Completion, ScheduleError, Scheduler};
use crate::store::{JobFilter, RunRow, Write};

/// What is being optimized.
enum Problem {
    /// A gait: a yamorconfig with <optimize> rules.
    Gait(Box<OptimizationConfig>),
    /// Bare named parameters (expression hosts).
    Bare,
}

struct Prepared {
    problem: Problem,
    space: Space,
    template: pb::JobRequest,
}

impl Prepared {
    /// `x` as named parameters, in space order.
    fn parameters(&self, x: &[f64]) -> Vec<pb::Parameter> {
        self.space
            .bounds
            .iter()
            .zip(x)
            .map(|(b, &value)| pb::Parameter {
                name: b.name.clone(),
                value,
            })
            .collect()
    }

    /// The job that evaluates `x`, or why `x` cannot be turned into one.
    fn job_for(&self, x: &[f64]) -> Result<pb::JobRequest, String> {
        let mut request = self.template.clone();
        let job = request.job.get_or_insert_with(Default::default);
        job.parameters = self.parameters(x);
        if let Problem::Gait(config) = &self.problem {
            let gait = config.apply(x).map_err(|e| e.to_string())?;
            job.gait_xml = gait.to_xml_string();
        }
        Ok(request)
    }

    fn best_gait(&self, x: &[f64]) -> String {
        match &self.problem {
            Problem::Gait(config) => config
                .apply(x)
                .map(|g| g.to_xml_string())
                .unwrap_or_default(),
            Problem::Bare => String::new(),
        }
    }
}

fn prepare(request: &pb::StartRunRequest) -> Result<Prepared, String> {
    let (problem, space) = match &request.problem {
        Some(pb::start_run_request::Problem::OptimizationXml(xml)) => {
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
                })
                .collect();
            let start = free.iter().map(|p| p.start).collect();
            let space = Space::new(bounds, start).map_err(|e| format!("optimization_xml: {e}"))?;
            (Problem::Gait(Box::new(config)), space)
        }
        Some(pb::start_run_request::Problem::Space(space)) => {
            let bounds: Vec<Bound> = space
                .bounds
                .iter()
                .map(|b| Bound {
                    name: b.name.clone(),
                    min: b.min,
                    max: b.max,
                })
                .collect();
            let start = space.bounds.iter().map(|b| b.start).collect();
            let space = Space::new(bounds, start).map_err(|e| format!("space: {e}"))?;
            (Problem::Bare, space)
        }
        None => return Err("problem: give optimization_xml or space".into()),
    };
    let backend = match pb::Backend::try_from(request.backend) {
        Ok(pb::Backend::Unspecified) => match problem {
            Problem::Gait(_) => pb::Backend::Simulation,
            Problem::Bare => pb::Backend::Expression,
        },
        Ok(b) => b,
        Err(_) => return Err(format!("backend: unknown value {}", request.backend)),
    };
    if !request.max_seconds.is_finite() || request.max_seconds < 0.0 {
        return Err(format!(
            "max_seconds must be non-negative, got {}",
            request.max_seconds
        ));
    }
    let template = pb::JobRequest {
        job: Some(pb::EvaluationJob {
            robot: request.robot.clone(),
            gait_xml: String::new(),
            parameters: Vec::new(),
            spec: request.spec.clone(),
        }),
        backend: backend as i32,
        max_attempts: 0,
        timeout_s: 0.0,
    };
    let prepared = Prepared {
        problem,
        space,
        template,
    };
    // Fail now, not in the middle of the run, if the start point cannot run.
    let start = prepared.space.start.clone();
    let job = prepared.job_for(&start)?;
    crate::scheduler::validate(&job)?;
    Ok(prepared)
}

struct RunEntry {
    view: pb::Run,
    stop: watch::Sender<bool>,
}

/// The registry of plugins and runs.
pub struct Runs {
    scheduler: Arc<Scheduler>,
    plugins: Vec<Arc<dyn Plugin>>,
    runs: Mutex<BTreeMap<u64, RunEntry>>,
    events: broadcast::Sender<pb::RunEvent>,
    next_id: Mutex<u64>,
}

fn settings_text(settings: &Settings) -> HashMap<String, String> {
    settings
        .0
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect()
}

impl Runs {
    /// Loads runs from the store and resumes those that were running.
    pub fn load(
        scheduler: Arc<Scheduler>,
        plugins: Vec<Arc<dyn Plugin>>,
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
        for row in runs.scheduler.store().runs()? {
            let view = row_view(&row);
            let (stop, _) = watch::channel(false);
            let running = row.state == pb::RunState::Running as i32;
            runs.lock().insert(row.id, RunEntry { view, stop });
            if running {
                match pb::StartRunRequest::decode(row.request.as_slice()) {
                    Ok(request) => {
                        tracing::info!(run = row.id, "resuming run");
                        runs.launch(
                            row.id,
                            request,
                            row.seed,
                            row.settings.clone(),
                            row.elapsed_s,
                            row.started_ms,
                        );
                    }
                    Err(e) => tracing::error!(run = row.id, "cannot resume: {e}"),
                }
            }
        }
        Ok(runs)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, RunEntry>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[must_use]
    pub fn optimizers(&self) -> Vec<pb::OptimizerInfo> {
        self.plugins
            .iter()
            .map(|p| {
                let info = p.info();
                pb::OptimizerInfo {
                    name: info.name,
                    author: info.author,
                    version: info.version,
                    description: info.description,
                    settings: info
                        .settings
                        .into_iter()
                        .map(|s| {
                            let (kind, min, max, options) = match s.kind {
                                SettingKind::Integer { min, max } => {
                                    (pb::SettingKind::Integer, min as f64, max as f64, vec![])
                                }
                                SettingKind::Float { min, max } => {
                                    (pb::SettingKind::Float, min, max, vec![])
                                }
                                SettingKind::Bool => (pb::SettingKind::Bool, 0.0, 0.0, vec![]),
                                SettingKind::File => (pb::SettingKind::File, 0.0, 0.0, vec![]),
                                SettingKind::Choice { options } => {
                                    (pb::SettingKind::Choice, 0.0, 0.0, options)
                                }
                            };
                            pb::SettingSpec {
                                name: s.name,
                                description: s.description,
                                kind: kind as i32,
                                min,
                                max,
                                options,
                                default_value: s.default.to_string(),
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn plugin(&self, name: &str) -> Result<&Arc<dyn Plugin>, String> {
        self.plugins
            .iter()
            .find(|p| p.info().name == name)
            .ok_or_else(|| {
                let known: Vec<String> = self.plugins.iter().map(|p| p.info().name).collect();
                format!("optimizer: unknown {name:?}; known: {}", known.join(", "))
            })
    }

    fn resolve_settings(&self, request: &pb::StartRunRequest) -> Result<Settings, String> {
        let plugin = self.plugin(&request.optimizer)?;
        let specs = plugin.info().settings;
        let pairs: Vec<String> = request
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let given = Settings::parse_pairs(&specs, pairs.iter().map(String::as_str))
            .map_err(|e| format!("settings: {e}"))?;
        Settings::resolve(&specs, &given).map_err(|e| format!("settings: {e}"))
    }

    /// Validates, persists and starts a run.
    pub async fn start(
        self: &Arc<Self>,
        request: pb::StartRunRequest,
    ) -> Result<pb::Run, ScheduleError> {
        let settings = self
            .resolve_settings(&request)
            .map_err(ScheduleError::Invalid)?;
        let prepared = prepare(&request).map_err(ScheduleError::Invalid)?;
        // Creating the optimizer validates the settings against the space.
        self.plugin(&request.optimizer)
            .map_err(ScheduleError::Invalid)?
            .create(&prepared.space, &settings, request.seed)
            .map_err(|e| ScheduleError::Invalid(format!("settings: {e}")))?;
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next - 1
        };
        let name = if request.name.is_empty() {
            format!("{}-{id}", request.optimizer)
        } else {
            request.name.clone()
        };
        let settings_json = serde_json::to_string(&settings).expect("settings serialise");
        let started = now_ms();
        let row = RunRow {
            id,
            name,
            optimizer: request.optimizer.clone(),
            settings: settings_json.clone(),
            seed: request.seed,
            request: request.encode_to_vec(),
            state: pb::RunState::Running as i32,
            evaluations: 0,
            best_velocity: None,
            best_parameters: "[]".into(),
            error: String::new(),
            started_ms: started,
            finished_ms: 0,
            elapsed_s: 0.0,
        };
        self.scheduler
            .store()
            .commit(Write::InsertRun(row.clone()))
            .await?;
        let view = row_view(&row);
        let (stop, _) = watch::channel(false);
        self.lock().insert(
            id,
            RunEntry {
                view: view.clone(),
                stop,
            },
        );
        self.launch(id, request, row.seed, settings_json, 0.0, started);
        Ok(view)
    }

    pub async fn batch_start(
        self: &Arc<Self>,
        request: pb::BatchStartRunsRequest,
    ) -> Result<Vec<pb::Run>, ScheduleError> {
        let base = request
            .base
            .ok_or_else(|| ScheduleError::Invalid("base: missing".into()))?;
        if request.variants.is_empty() {
            return Err(ScheduleError::Invalid(
                "variants: at least one is needed".into(),
            ));
        }
        // Check every variant before starting any: all or nothing.
        let mut requests = Vec::new();
        for (index, variant) in request.variants.into_iter().enumerate() {
            let mut r = base.clone();
            r.settings.extend(variant.settings);
            r.seed = variant.seed;
            if !variant.name.is_empty() {
                r.name = variant.name;
            }
            self.resolve_settings(&r)
                .map_err(|e| ScheduleError::Invalid(format!("variants[{index}]: {e}")))?;
            requests.push(r);
        }
        prepare(&base).map_err(ScheduleError::Invalid)?;
        let mut runs = Vec::new();
        for r in requests {
            runs.push(self.start(r).await?);
        }
        Ok(runs)
    }

    pub fn stop(&self, id: u64) -> Result<pb::Run, ScheduleError> {
        let runs = self.lock();
        let entry = runs
            .get(&id)
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))?;
        let _ = entry.stop.send(true);
        Ok(entry.view.clone())
    }

    pub fn get(&self, id: u64) -> Result<pb::Run, ScheduleError> {
        self.lock()
            .get(&id)
            .map(|e| e.view.clone())
            .ok_or_else(|| ScheduleError::NotFound(format!("run {id} does not exist")))
    }

    #[must_use]
    pub fn list(&self) -> Vec<pb::Run> {
        self.lock().values().map(|e| e.view.clone()).collect()
    }

    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<pb::RunEvent> {
        self.events.subscribe()
    }

    /// The run's current state, then every event about it. Subscribes
    /// before reading the state, so nothing in between is lost. A slow
    /// watcher only misses intermediate evaluations: each event carries the
    /// whole run again.
    pub fn watch(
        &self,
        run_id: u64,
    ) -> Result<std::pin::Pin<Box<dyn Stream<Item = pb::RunEvent> + Send>>, ScheduleError> {
        let events = BroadcastStream::new(self.subscribe());
        let first = pb::RunEvent {
            run: Some(self.get(run_id)?),
            evaluation: None,
        };
        let live = events.filter_map(move |event| match event {
            Ok(e) if e.run.as_ref().is_some_and(|r| r.id == run_id) => Some(e),
            _ => None,
        });
        Ok(Box::pin(tokio_stream::once(first).chain(live)))
    }

    /// Signals every run to stop and keep what it found (graceful shutdown).
    pub fn stop_all(&self) {
        for entry in self.lock().values() {
            let _ = entry.stop.send(true);
        }
    }

    fn launch(
        self: &Arc<Self>,
        id: u64,
        request: pb::StartRunRequest,
        seed: u64,
        settings_json: String,
        elapsed_before: f64,
        started_ms: i64,
    ) {
        let (sink, completions) = mpsc::unbounded_channel();
        self.scheduler.attach_run(id, sink);
        let stop = self.lock().get(&id).map(|e| e.stop.subscribe());
        let Some(stop) = stop else { return };
        let me = self.clone();
        tokio::spawn(async move {
            let outcome = me
                .drive(
                    id,
                    &request,
                    seed,
                    &settings_json,
                    elapsed_before,
                    started_ms,
                    completions,
                    stop,
                )
                .await;
            me.scheduler.detach_run(id);
            if let Err(message) = outcome {
                tracing::error!(run = id, "run failed: {message}");
                me.update(id, |v| {
                    v.state = pb::RunState::Failed as i32;
                    v.error = message.clone();
                    v.finished_ms = now_ms();
                });
                me.persist(id);
            }
        });
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut pb::Run)) -> Option<pb::Run> {
        let mut runs = self.lock();
        let entry = runs.get_mut(&id)?;
        f(&mut entry.view);
        Some(entry.view.clone())
    }

    fn persist(&self, id: u64) {
        let Ok(view) = self.get(id) else { return };
        let best: Vec<(String, f64)> = view
            .best_parameters
            .iter()
            .map(|p| (p.name.clone(), p.value))
            .collect();
        self.scheduler.store().write(Write::UpdateRun {
            id,
            state: view.state,
            evaluations: view.evaluations,
            best_velocity: view.best_velocity_m_s,
            best_parameters: serde_json::to_string(&best).expect("numbers serialise"),
            error: view.error.clone(),
            finished_ms: view.finished_ms,
            elapsed_s: view.elapsed_s,
        });
        let _ = self.events.send(pb::RunEvent {
            run: Some(view),
            evaluation: None,
        });
    }

    #[allow(clippy::too_many_arguments)]
    async fn drive(
        &self,
        id: u64,
        request: &pb::StartRunRequest,
        seed: u64,
        settings_json: &str,
        elapsed_before: f64,
        started_ms: i64,
        mut completions: mpsc::UnboundedReceiver<Completion>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), String> {
        let _ = started_ms;
        let settings: Settings =
            serde_json::from_str(settings_json).map_err(|e| format!("stored settings: {e}"))?;
        let prepared = prepare(request)?;
        let plugin = self.plugin(&request.optimizer)?.clone();
        let mut optimizer = plugin
            .create(&prepared.space, &settings, seed)
            .map_err(|e| e.to_string())?;

        // The stored history of this run, by proposal position.
        let history = self
            .scheduler
            .store()
            .jobs(&JobFilter {
                run_id: Some(id),
                ..JobFilter::default()
            })
            .map_err(|e| e.to_string())?;
        let mut stored: HashMap<u64, (u64, Vec<f64>, i32)> = HashMap::new();
        // Results the optimizer had already learnt, keyed by tell order.
        let mut ready: BTreeMap<u64, Completion> = BTreeMap::new();
        for row in &history {
            let request =
                pb::JobRequest::decode(row.request.as_slice()).map_err(|e| e.to_string())?;
            let x: Vec<f64> = request
                .job
                .map(|j| j.parameters.into_iter().map(|p| p.value).collect())
                .unwrap_or_default();
            stored.insert(row.seq, (row.id, x, row.state));
            if let Some(tell_seq) = row.tell_seq {
                let outcome = if row.state == pb::JobState::Done as i32 {
                    Ok(pb::EvaluationResult::decode(row.result.as_slice())
                        .map_err(|e| e.to_string())?)
                } else {
                    Err(row.error.clone())
                };
                ready.insert(
                    tell_seq,
                    Completion {
                        job_id: row.id,
                        seq: row.seq,
                        tell_seq,
                        outcome,
                    },
                );
            }
        }
        let replayed = ready.len();
        let mut next_tell = 0u64;
        let mut next_seq = 0u64;
        // job id → (optimizer tag, x)
        let mut pending: HashMap<u64, (u64, Vec<f64>)> = HashMap::new();
        let mut finished = false;
        let mut evaluations = 0u64;
        let mut best: Option<(f64, Vec<f64>)> = None;
        let clock = Instant::now();
        let elapsed = |clock: &Instant| elapsed_before + clock.elapsed().as_secs_f64();
        let out_of_time =
            |clock: &Instant| request.max_seconds > 0.0 && elapsed(clock) >= request.max_seconds;
        let mut stopped = false;

        loop {
            // Ask for everything the optimizer can propose now.
            while !finished && !stopped {
                let budget_left =
                    request.max_evaluations == 0 || next_seq < request.max_evaluations;
                if !budget_left || out_of_time(&clock) {
                    break;
                }
                match optimizer.ask() {
                    Step::Finished => finished = true,
                    Step::Wait => break,
                    Step::Evaluate(candidates) => {
                        let mut fresh = Vec::new();
                        for c in candidates {
                            if request.max_evaluations > 0 && next_seq >= request.max_evaluations {
                                break;
                            }
                            let seq = next_seq;
                            next_seq += 1;
                            if let Some((job_id, x, _)) = stored.get(&seq) {
                                if x.len() != c.x.len()
                                    || x.iter().zip(&c.x).any(|(a, b)| a.to_bits() != b.to_bits())
                                {
                                    return Err(format!(
                                        "cannot resume: proposal {seq} differs from the stored one (is the {} plugin deterministic?)",
                                        request.optimizer
                                    ));
                                }
                                pending.insert(*job_id, (c.tag, c.x));
                            } else {
                                let job = prepared.job_for(&c.x)?;
                                fresh.push((seq, c.tag, c.x, job));
                            }
                        }
                        if !fresh.is_empty() {
                            let jobs = fresh
                                .iter()
                                .map(|(seq, _, _, job)| (*seq, job.clone()))
                                .collect();
                            let ids = self
                                .scheduler
                                .submit(&format!("run-{id}"), id, jobs)
                                .await
                                .map_err(|e| e.to_string())?;
                            for (job_id, (_, tag, x, _)) in ids.into_iter().zip(fresh) {
                                pending.insert(job_id, (tag, x));
                            }
                        }
                    }
                }
            }
            if pending.is_empty() {
                break;
            }
            // The next result, strictly in tell order.
            let completion = loop {
                if let Some(c) = ready.remove(&next_tell) {
                    break Some(c);
                }
                tokio::select! {
                    c = completions.recv() => match c {
                        Some(c) => { ready.insert(c.tell_seq, c); }
                        None => return Err("the scheduler went away".into()),
                    },
                    changed = stop.changed() => {
                        if changed.is_err() || *stop.borrow() {
                            break None;
                        }
                    }
                    // Time budget: wake up when it runs out.
                    () = tokio::time::sleep(std::time::Duration::from_millis(250)), if request.max_seconds > 0.0 => {
                        if out_of_time(&clock) { break None; }
                    }
                }
            };
            let Some(completion) = completion else {
                stopped = true;
                let ids: Vec<u64> = pending.keys().copied().collect();
                self.scheduler
                    .cancel(&ids)
                    .await
                    .map_err(|e| e.to_string())?;
                break;
            };
            next_tell += 1;
            let Some((tag, x)) = pending.remove(&completion.job_id) else {
                return Err(format!(
                    "cannot resume: job {} was told before it was proposed",
                    completion.job_id
                ));
            };
            let (outcome, velocity) = match &completion.outcome {
                Ok(result) if result.velocity_m_s.is_finite() => (
                    Outcome::Fitness(result.velocity_m_s),
                    Some(result.velocity_m_s),
                ),
                _ => (Outcome::Failed, None),
            };
            optimizer.tell(tag, outcome);
            evaluations += 1;
            let improved = velocity.is_some_and(|v| best.as_ref().is_none_or(|(b, _)| v > *b));
            if improved {
                best = Some((velocity.expect("improved implies a value"), x.clone()));
            }
            // Replayed history is not news: only new results are broadcast.
            if evaluations as usize > replayed || improved {
                let view = self.update(id, |v| {
                    v.evaluations = evaluations;
                    v.elapsed_s = elapsed(&clock);
                    if let Some((b, bx)) = &best {
                        v.best_velocity_m_s = Some(*b);
                        v.best_parameters = prepared.parameters(bx);
                        if improved {
                            v.best_gait_xml = prepared.best_gait(bx);
                        }
                    }
                });
                if evaluations as usize > replayed {
                    if improved || evaluations.is_multiple_of(16) {
                        self.persist(id);
                    }
                    let _ = self.events.send(pb::RunEvent {
                        run: view,
                        evaluation: Some(pb::Evaluation {
                            job_id: completion.job_id,
                            index: evaluations,
                            parameters: prepared.parameters(&x),
                            velocity_m_s: velocity,
                            improved,
                        }),
                    });
                }
            }
        }
        let state = if stopped {
            pb::RunState::Stopped
        } else {
            pb::RunState::Finished
        };
        self.update(id, |v| {
            v.state = state as i32;
            v.evaluations = evaluations;
            v.elapsed_s = elapsed(&clock);
            v.finished_ms = now_ms();
        });
        self.persist(id);
        self.scheduler
            .store()
            .sync()
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(run = id, evaluations, "run ended: {state:?}");
        Ok(())
    }
}

fn row_view(row: &RunRow) -> pb::Run {
    let settings: Settings = serde_json::from_str(&row.settings).unwrap_or_default();
    let best: Vec<(String, f64)> = serde_json::from_str(&row.best_parameters).unwrap_or_default();
    let request = pb::StartRunRequest::decode(row.request.as_slice()).unwrap_or_default();
    let best_gait_xml = match (&request.problem, best.is_empty()) {
        (Some(pb::start_run_request::Problem::OptimizationXml(_)), false) => prepare(&request)
            .map(|p| p.best_gait(&best.iter().map(|(_, v)| *v).collect::<Vec<_>>()))
            .unwrap_or_default(),
        _ => String::new(),
    };
    pb::Run {
        id: row.id,
        name: row.name.clone(),
        optimizer: row.optimizer.clone(),
        settings: settings_text(&settings),
        seed: row.seed,
        state: row.state,
        evaluations: row.evaluations,
        max_evaluations: request.max_evaluations,
        max_seconds: request.max_seconds,
        best_velocity_m_s: row.best_velocity,
        best_parameters: best
            .into_iter()
            .map(|(name, value)| pb::Parameter { name, value })
            .collect(),
        best_gait_xml,
        error: row.error.clone(),
        started_ms: row.started_ms,
        finished_ms: row.finished_ms,
        elapsed_s: row.elapsed_s,
    }
}
