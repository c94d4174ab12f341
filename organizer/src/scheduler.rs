//! The simulation organizer of thesis 5.7.2, done properly: a queue of
//! submitted jobs, a semaphore whose permits are the free hosts, and one
//! manager task per running job.
//!
//! - **Fair share.** Each owner (a run, or a client submitting directly) has
//!   its own FIFO; a free host takes the head of the next owner in
//!   round-robin order, so a PSO with 30 queued jobs cannot starve a Powell
//!   run waiting for one.
//! - **Retries.** A job whose host dies, times out or fails goes back to the
//!   front of its queue until `max_attempts`; a job that is itself invalid
//!   fails at once.
//! - **Leases.** A host must heartbeat (or answer a probe) within the lease;
//!   otherwise it is marked down and its running job is aborted and re-queued,
//!   so no job stays "running" after its host vanished. It is re-admitted
//!   when it heartbeats again.
//! - **Exactly once.** Each attempt carries a number; a late answer from an
//!   aborted attempt is ignored, and the store refuses to finish a finished job.
//!
//! State lives in memory behind one mutex that is never held across an
//! `.await`; the store is told about every change in order.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

// tokio's clock, not the machine's: leases, probes and timeouts follow
// `tokio::time::pause`/`advance`, so tests control time instead of sleeping.
use tokio::time::Instant;

use tokio::sync::{broadcast, mpsc, oneshot};
use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome, RobotSource};

use crate::metrics::Metrics;
use crate::model::{Host, HostInfo, HostState, Job, JobFilter, JobRequest, JobState};
use crate::now_ms;
use crate::store::{Store, Write};

/// A boxed future that may move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a call to a host failed, as far as scheduling cares.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    /// The job itself cannot run: it fails at once and the host is not to blame.
    #[error("{0}")]
    InvalidJob(String),
    /// The host is gone or cannot be reached: it is marked down and the job
    /// tried again elsewhere.
    #[error("{0}")]
    Unavailable(String),
    /// This attempt failed; another may not.
    #[error("{0}")]
    Failed(String),
}

impl HostError {
    /// Whether another attempt may succeed.
    #[must_use]
    pub fn retryable(&self) -> bool {
        !matches!(self, HostError::InvalidJob(_))
    }
}

/// One evaluation host as the scheduler drives it. The futures own what
/// they need: dropping one abandons the call (and cancels the evaluation).
pub trait HostClient: Send + Sync {
    fn info(&self) -> BoxFuture<'static, Result<HostInfo, HostError>>;
    fn evaluate(
        &self,
        job_id: u64,
        attempt: u32,
        job: &EvaluationJob,
    ) -> BoxFuture<'static, Result<Outcome, HostError>>;
}

/// Makes a [`HostClient`] for an address.
pub trait HostConnector: Send + Sync {
    fn connect(&self, address: &str) -> Result<Arc<dyn HostClient>, String>;
}

/// Timing and retry policy.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    pub heartbeat_interval: Duration,
    pub lease: Duration,
    pub default_attempts: u32,
    pub default_timeout: Duration,
}

impl SchedulerConfig {
    /// The policy from seconds as a user gives them: every time positive
    /// and finite, the lease longer than the heartbeat, at least one attempt.
    pub fn from_seconds(
        heartbeat: f64,
        lease: f64,
        attempts: u32,
        job_timeout: f64,
    ) -> Result<Self, ScheduleError> {
        for (name, v) in [
            ("heartbeat", heartbeat),
            ("lease", lease),
            ("job timeout", job_timeout),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ScheduleError::Invalid(format!(
                    "the {name} must be a positive number of seconds, got {v}"
                )));
            }
        }
        if lease <= heartbeat {
            return Err(ScheduleError::Invalid(format!(
                "the lease ({lease} s) must be longer than the heartbeat ({heartbeat} s)"
            )));
        }
        Ok(SchedulerConfig {
            heartbeat_interval: Duration::from_secs_f64(heartbeat),
            lease: Duration::from_secs_f64(lease),
            default_attempts: attempts.max(1),
            default_timeout: Duration::from_secs_f64(job_timeout),
        })
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            heartbeat_interval: Duration::from_secs(1),
            lease: Duration::from_secs(5),
            default_attempts: 3,
            default_timeout: Duration::from_secs(600),
        }
    }
}

/// Why a request was refused; the gRPC service turns these into `Status`.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("cannot reach host {address}: {why}")]
    Unreachable { address: String, why: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A finished job, delivered to the run that submitted it.
#[derive(Debug, Clone)]
pub struct Completion {
    pub job_id: u64,
    pub seq: u64,
    /// The order in which the run must learn results (persisted with them).
    pub tell_seq: u64,
    pub outcome: Result<Outcome, String>,
}

struct HostEntry {
    name: String,
    address: String,
    client: Arc<dyn HostClient>,
    backend: Option<BackendKind>,
    robot: String,
    objectives: Vec<String>,
    state: HostState,
    current_job: u64,
    last_seen: Instant,
    evaluations: u64,
    failures: u64,
    probing: bool,
}

struct LiveJob {
    run_id: u64,
    owner: String,
    seq: u64,
    request: Arc<JobRequest>,
    state: JobState,
    attempts: u32,
    host: String,
    host_id: u64,
    submitted_ms: i64,
    started_ms: i64,
    abort: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Core {
    hosts: BTreeMap<u64, HostEntry>,
    jobs: HashMap<u64, LiveJob>,
    queues: HashMap<String, VecDeque<u64>>,
    /// Owners with queued jobs, in round-robin order.
    turn: VecDeque<String>,
    run_sinks: HashMap<u64, mpsc::UnboundedSender<Completion>>,
    tell_seqs: HashMap<u64, u64>,
    next_job: u64,
    next_host: u64,
}

pub struct Scheduler {
    core: Mutex<Core>,
    store: Store,
    config: SchedulerConfig,
    connector: Arc<dyn HostConnector>,
    job_events: broadcast::Sender<Job>,
    metrics: Arc<Metrics>,
    started: Instant,
    /// Set on the way out: nothing new is sent to a host.
    stopping: std::sync::atomic::AtomicBool,
}

/// Hosts by state and queued jobs by run (0: jobs outside runs).
#[derive(Debug, Clone, Default)]
pub struct Load {
    pub hosts: Vec<(HostState, i64)>,
    pub queued: Vec<(u64, i64)>,
}

/// How an attempt ended.
enum AttemptEnd {
    Done(Outcome),
    Failed(HostError),
    TimedOut,
}

impl Scheduler {
    /// Loads hosts and unfinished jobs from `store`; running jobs of the last
    /// life are queued again. Call [`Scheduler::start`] to begin work.
    pub fn load(
        store: Store,
        config: SchedulerConfig,
        connector: Arc<dyn HostConnector>,
    ) -> Result<Arc<Scheduler>, ScheduleError> {
        let (max_host, _, max_job) = store.max_ids()?;
        let mut core = Core {
            next_job: max_job + 1,
            next_host: max_host + 1,
            ..Core::default()
        };
        let stale = Instant::now()
            .checked_sub(config.lease)
            .unwrap_or_else(Instant::now);
        for row in store.hosts()? {
            let client = connector
                .connect(&row.address)
                .map_err(ScheduleError::Invalid)?;
            core.hosts.insert(
                row.id,
                HostEntry {
                    name: row.name,
                    address: row.address,
                    client,
                    backend: None,
                    robot: String::new(),
                    objectives: Vec::new(),
                    state: HostState::Down,
                    current_job: 0,
                    last_seen: stale,
                    evaluations: 0,
                    failures: 0,
                    probing: false,
                },
            );
        }
        let unfinished = store.jobs(&JobFilter {
            states: vec![JobState::Queued, JobState::Running],
            ..JobFilter::default()
        })?;
        for row in unfinished {
            if row.state == JobState::Running {
                store.write(Write::JobRequeued {
                    id: row.id,
                    attempts: row.attempts,
                });
            }
            core.jobs.insert(
                row.id,
                LiveJob {
                    run_id: row.run_id,
                    owner: row.owner.clone(),
                    seq: row.seq,
                    request: Arc::new(row.request),
                    state: JobState::Queued,
                    attempts: row.attempts,
                    host: String::new(),
                    host_id: 0,
                    submitted_ms: row.submitted_ms,
                    started_ms: 0,
                    abort: None,
                },
            );
            enqueue(&mut core, row.owner, row.id, false);
        }
        core.tell_seqs = store.next_tell_seqs()?.into_iter().collect();
        let (job_events, _) = broadcast::channel(4096);
        let metrics = Arc::new(Metrics::new(store.commit_seconds()));
        Ok(Arc::new(Scheduler {
            core: Mutex::new(core),
            metrics,
            started: Instant::now(),
            store,
            config,
            connector,
            job_events,
            stopping: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// Starts the lease monitor and dispatches what is queued.
    pub fn start(self: &Arc<Self>) {
        // A weak handle: the monitor ends when the organizer is dropped.
        let me = Arc::downgrade(self);
        tokio::spawn(Scheduler::watch_leases(me));
        self.dispatch();
    }

    /// When this organizer life began (rates are per this life).
    #[must_use]
    pub fn started(&self) -> Instant {
        self.started
    }

    #[must_use]
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Hosts by state and queued jobs by run (0: outside runs), for metrics.
    #[must_use]
    pub fn load_snapshot(&self) -> Load {
        let core = self.lock();
        let mut hosts: BTreeMap<&'static str, (HostState, i64)> = BTreeMap::new();
        for state in [HostState::Free, HostState::Busy, HostState::Down] {
            hosts.insert(state.as_str(), (state, 0));
        }
        for h in core.hosts.values() {
            hosts.entry(h.state.as_str()).or_insert((h.state, 0)).1 += 1;
        }
        let mut queued: BTreeMap<u64, i64> = BTreeMap::new();
        for job in core.jobs.values() {
            if job.state == JobState::Queued {
                *queued.entry(job.run_id).or_default() += 1;
            }
        }
        Load {
            hosts: hosts.into_values().collect(),
            queued: queued.into_iter().collect(),
        }
    }

    #[must_use]
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Routes the completions of `run_id`'s jobs to `sink`.
    pub fn attach_run(&self, run_id: u64, sink: mpsc::UnboundedSender<Completion>) {
        self.lock().run_sinks.insert(run_id, sink);
    }

    pub fn detach_run(&self, run_id: u64) {
        self.lock().run_sinks.remove(&run_id);
    }

    #[must_use]
    pub fn subscribe_jobs(&self) -> broadcast::Receiver<Job> {
        self.job_events.subscribe()
    }

    // ---------------------------------------------------------------- hosts

    /// Adds or updates a host by name and probes it once.
    pub async fn register_host(
        self: &Arc<Self>,
        name: &str,
        address: &str,
    ) -> Result<Host, ScheduleError> {
        let address = address.trim();
        if address.is_empty() {
            return Err(ScheduleError::Invalid("address: missing".into()));
        }
        // On a full disk the host is told so before anything changes; it
        // registers again later.
        self.store.check_writable()?;
        let name = if name.trim().is_empty() {
            address
        } else {
            name.trim()
        };
        let client = self
            .connector
            .connect(address)
            .map_err(|e| ScheduleError::Invalid(format!("address {address:?}: {e}")))?;
        let info = tokio::time::timeout(
            self.config.heartbeat_interval.max(Duration::from_secs(2)),
            client.info(),
        )
        .await
        .map_err(|_| ScheduleError::Unreachable {
            address: address.to_owned(),
            why: "no answer".into(),
        })?
        .map_err(|e| ScheduleError::Unreachable {
            address: address.to_owned(),
            why: e.to_string(),
        })?;
        let (id, host, moved) = {
            let mut core = self.lock();
            // One address is one host. Alive under another name: refuse. Down:
            // the address has moved to this host (a container restarted with
            // a new name got an old address), and the old entry would reach
            // this host through it, so it goes.
            let clash = core
                .hosts
                .iter()
                .find(|(_, h)| h.address == address && h.name != name)
                .map(|(id, h)| (*id, h.state, h.name.clone()));
            let moved = match clash {
                Some((other, state, other_name)) if state != HostState::Down => {
                    return Err(ScheduleError::Invalid(format!(
                        "address {address} is already host {other_name:?} (id {other}); \
                         register under that name, or remove it first (yamor hosts remove {other_name})"
                    )));
                }
                Some((other, _, other_name)) => {
                    tracing::info!(host = other_name, address, "address taken over by {name}");
                    core.hosts.remove(&other);
                    Some(other)
                }
                None => None,
            };
            let existing = core
                .hosts
                .iter()
                .find(|(_, h)| h.name == name)
                .map(|(id, _)| *id);
            let id = existing.unwrap_or_else(|| {
                core.next_host += 1;
                core.next_host - 1
            });
            let entry = core.hosts.entry(id).or_insert_with(|| HostEntry {
                name: name.to_owned(),
                address: address.to_owned(),
                client: client.clone(),
                backend: None,
                robot: String::new(),
                objectives: Vec::new(),
                state: HostState::Free,
                current_job: 0,
                last_seen: Instant::now(),
                evaluations: 0,
                failures: 0,
                probing: false,
            });
            if entry.address != address {
                entry.address = address.to_owned();
                entry.client = client;
            }
            entry.backend = info.backend;
            entry.robot = info.robot;
            entry.objectives = info.objectives;
            entry.last_seen = Instant::now();
            if entry.state == HostState::Down {
                entry.state = HostState::Free;
            }
            (id, host_view(id, entry), moved)
        };
        if let Some(old) = moved {
            // Memory has moved the address already: the row must follow.
            self.store.commit(Write::DeleteHost(old)).await?;
        }
        self.store
            .commit_or_refuse(Write::UpsertHost(crate::store::HostRow {
                id,
                name: name.to_owned(),
                address: address.to_owned(),
            }))
            .await?;
        tracing::info!(host = name, address, "host registered");
        self.dispatch();
        Ok(host)
    }

    /// Renews a host's lease. A heartbeat proves only that the host reaches
    /// the organizer: a host that was down, or whose backend is not known
    /// (restored from the database), is probed, and only an answer from it
    /// admits it, so a host the organizer cannot reach is not given jobs.
    pub fn heartbeat(self: &Arc<Self>, host_id: u64) -> Result<HostState, ScheduleError> {
        let (state, probe) = {
            let mut core = self.lock();
            let host = core.hosts.get_mut(&host_id).ok_or_else(|| {
                ScheduleError::NotFound(format!("host {host_id} is not registered"))
            })?;
            host.last_seen = Instant::now();
            let unproven = host.state == HostState::Down || host.backend.is_none();
            let probe = (unproven && !host.probing).then(|| {
                host.probing = true;
                host.client.clone()
            });
            (host.state, probe)
        };
        match probe {
            Some(client) => {
                let me = self.clone();
                tokio::spawn(async move { me.probe(host_id, client).await });
            }
            None => self.dispatch(),
        }
        Ok(state)
    }

    /// A host going away for now (shutting down, restarting): down at once,
    /// its job re-queued without waiting for the lease; it keeps its id.
    pub fn host_leaving(self: &Arc<Self>, host_id: u64, name: &str) -> Result<(), ScheduleError> {
        {
            let mut core = self.lock();
            let id = host_by_id_or_name(&core, host_id, name)?;
            let host = core.hosts.get_mut(&id).expect("found above");
            tracing::info!(host = host.name, "host leaving");
            host.state = HostState::Down;
            let job = std::mem::take(&mut host.current_job);
            if job != 0 {
                self.requeue_locked(&mut core, job, "its host shut down");
            }
        }
        self.dispatch();
        Ok(())
    }

    pub async fn deregister_host(
        self: &Arc<Self>,
        host_id: u64,
        name: &str,
    ) -> Result<(), ScheduleError> {
        // Refused before memory changes, so that a retry finds the host.
        self.store.check_writable()?;
        let id = {
            let mut core = self.lock();
            let id = host_by_id_or_name(&core, host_id, name)?;
            let host = core.hosts.remove(&id).expect("found above");
            if host.current_job != 0 {
                self.requeue_locked(&mut core, host.current_job, "its host was removed");
            }
            id
        };
        self.store.commit(Write::DeleteHost(id)).await?;
        self.dispatch();
        Ok(())
    }

    #[must_use]
    pub fn hosts(&self) -> Vec<Host> {
        let core = self.lock();
        core.hosts.iter().map(|(id, h)| host_view(*id, h)).collect()
    }

    /// Whether any registered host, up or down, could take `request`.
    #[must_use]
    pub fn serves(&self, request: &JobRequest) -> bool {
        let core = self.lock();
        core.hosts
            .values()
            .any(|h| fits(request, h.backend, &h.objectives))
    }

    // ----------------------------------------------------------------- jobs

    /// Validates and queues jobs; returns their ids once they are durable.
    pub async fn submit(
        self: &Arc<Self>,
        owner: &str,
        run_id: u64,
        jobs: Vec<(u64, JobRequest)>,
    ) -> Result<Vec<u64>, ScheduleError> {
        for (index, (_, job)) in jobs.iter().enumerate() {
            validate(job).map_err(|e| ScheduleError::Invalid(format!("jobs[{index}]: {e}")))?;
        }
        // A client's new jobs are refused on a full disk; a run's go on
        // queueing (its jobs are owed to a run already accepted).
        if run_id == 0 {
            self.store.check_writable()?;
        }
        let owner = if owner.is_empty() { "client" } else { owner };
        let now = now_ms();
        let ids = {
            let mut core = self.lock();
            let mut rows = Vec::with_capacity(jobs.len());
            let mut ids = Vec::with_capacity(jobs.len());
            for (seq, request) in jobs {
                let id = core.next_job;
                core.next_job += 1;
                rows.push(Job {
                    id,
                    run_id,
                    owner: owner.to_owned(),
                    seq,
                    tell_seq: None,
                    state: JobState::Queued,
                    request: request.clone(),
                    attempts: 0,
                    host: String::new(),
                    outcome: None,
                    error: String::new(),
                    submitted_ms: now,
                    started_ms: 0,
                    finished_ms: 0,
                });
                core.jobs.insert(
                    id,
                    LiveJob {
                        run_id,
                        owner: owner.to_owned(),
                        seq,
                        request: Arc::new(request),
                        state: JobState::Queued,
                        attempts: 0,
                        host: String::new(),
                        host_id: 0,
                        submitted_ms: now,
                        started_ms: 0,
                        abort: None,
                    },
                );
                enqueue(&mut core, owner.to_owned(), id, false);
                ids.push(id);
            }
            // Queued in order before any later write about these jobs.
            self.store.write(Write::InsertJobs(rows));
            ids
        };
        self.dispatch();
        self.store.sync().await?;
        Ok(ids)
    }

    /// Cancels queued or running jobs; returns how many were cancelled.
    pub async fn cancel(self: &Arc<Self>, ids: &[u64]) -> Result<u32, ScheduleError> {
        // Refused before anything is cancelled: a retry then cancels them.
        self.store.check_writable()?;
        let mut cancelled = 0;
        {
            let mut core = self.lock();
            for id in ids {
                let Some(job) = core.jobs.get_mut(id) else {
                    continue;
                };
                if !matches!(job.state, JobState::Queued | JobState::Running) {
                    continue;
                }
                job.state = JobState::Cancelled;
                if let Some(abort) = job.abort.take() {
                    let _ = abort.send(());
                }
                let (owner, host_id) = (job.owner.clone(), job.host_id);
                if let Some(q) = core.queues.get_mut(&owner) {
                    q.retain(|j| j != id);
                }
                if let Some(host) = core.hosts.get_mut(&host_id)
                    && host.current_job == *id
                {
                    host.current_job = 0;
                    host.state = HostState::Free;
                }
                let job = core.jobs.remove(id).expect("present");
                self.store.write(Write::JobFinished {
                    id: *id,
                    state: JobState::Cancelled,
                    tell_seq: None,
                    outcome: None,
                    error: "cancelled".into(),
                    finished_ms: now_ms(),
                });
                self.publish(*id, &job, JobState::Cancelled, None, "cancelled", now_ms());
                cancelled += 1;
            }
        }
        self.dispatch();
        self.store.sync().await?;
        Ok(cancelled)
    }

    /// A job by id: live state first, then the database.
    pub async fn job(&self, id: u64, brief: bool) -> Result<Job, ScheduleError> {
        if let Some(job) = self.lock().jobs.get(&id) {
            return Ok(live_view(id, job, brief));
        }
        // A job that just left the live set may not be committed yet: a
        // watcher reading its stale state would wait for an event already sent.
        self.store.settle().await?;
        match self.store.read_async(move |s| s.job(id)).await? {
            Some(job) if brief => Ok(job.brief()),
            Some(job) => Ok(job),
            None => Err(ScheduleError::NotFound(format!("job {id} does not exist"))),
        }
    }

    pub async fn list_jobs(
        &self,
        filter: JobFilter,
        brief: bool,
    ) -> Result<Vec<Job>, ScheduleError> {
        // The database has every job (inserts are ordered before updates);
        // live jobs overlay their newer state.
        let states = filter.states.clone();
        self.store.settle().await?;
        let rows = self.store.read_async(move |s| s.jobs(&filter)).await?;
        let core = self.lock();
        Ok(rows
            .into_iter()
            .map(|row| match core.jobs.get(&row.id) {
                Some(job) => live_view(row.id, job, brief),
                None if brief => row.brief(),
                None => row,
            })
            .filter(|j| states.is_empty() || states.contains(&j.state))
            .collect())
    }

    /// Every job of `run_id` its optimizer learnt, in the order it learnt
    /// them: parameters, outcome and gait of each.
    pub async fn told_jobs(&self, run_id: u64) -> Result<Vec<Job>, ScheduleError> {
        Ok(self.store.read_async(move |s| s.told_jobs(run_id)).await?)
    }

    // ------------------------------------------------------------- dispatch

    /// Pairs free hosts with queued jobs (the semaphore of free hosts).
    pub fn dispatch(self: &Arc<Self>) {
        self.dispatch_inner();
    }

    /// Sends no further job to any host, for good: an organizer on its way
    /// out lets running jobs finish (or leaves them to be re-queued at the
    /// next start) but starts nothing it would abandon.
    pub fn stop_dispatching(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn dispatch_inner(self: &Arc<Self>) {
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut core = self.lock();
        if core.turn.is_empty() {
            return;
        }
        let free: Vec<u64> = core
            .hosts
            .iter()
            .filter(|(_, h)| h.state == HostState::Free)
            .map(|(id, _)| *id)
            .collect();
        for host_id in free {
            let Some(job_id) = next_job_for(&mut core, host_id) else {
                continue;
            };
            let started = now_ms();
            let (abort_tx, abort_rx) = oneshot::channel();
            let host = core.hosts.get_mut(&host_id).expect("listed above");
            host.state = HostState::Busy;
            host.current_job = job_id;
            let client = host.client.clone();
            let host_name = host.name.clone();
            let job = core.jobs.get_mut(&job_id).expect("queued jobs are live");
            job.state = JobState::Running;
            job.attempts += 1;
            job.host = host_name.clone();
            job.host_id = host_id;
            job.started_ms = started;
            job.abort = Some(abort_tx);
            let attempt = job.attempts;
            let timeout = job.request.timeout.unwrap_or(self.config.default_timeout);
            let call = client.evaluate(job_id, attempt, &job.request.job);
            self.metrics.jobs_started.inc();
            self.store.write(Write::JobStarted {
                id: job_id,
                attempts: attempt,
                host: host_name,
                started_ms: started,
            });
            if self.job_events.receiver_count() > 0 {
                let view = live_view(job_id, job, true);
                let _ = self.job_events.send(view);
            }
            let me = self.clone();
            tokio::spawn(async move {
                me.manage(job_id, attempt, host_id, call, timeout, abort_rx)
                    .await;
            });
        }
    }

    /// The simulation manager: runs one attempt of one job on one host.
    async fn manage(
        self: Arc<Self>,
        job_id: u64,
        attempt: u32,
        host_id: u64,
        call: BoxFuture<'static, Result<Outcome, HostError>>,
        timeout: Duration,
        abort: oneshot::Receiver<()>,
    ) {
        let end = tokio::select! {
            answer = tokio::time::timeout(timeout, call) => match answer {
                Ok(Ok(outcome)) => AttemptEnd::Done(outcome),
                Ok(Err(e)) => AttemptEnd::Failed(e),
                Err(_) => AttemptEnd::TimedOut,
            },
            // Aborted by whoever took the job away (lease expiry, cancel);
            // dropping the call cancels the host's evaluation.
            _ = abort => return,
        };
        self.finish_attempt(job_id, attempt, host_id, end).await;
    }

    async fn finish_attempt(
        self: &Arc<Self>,
        job_id: u64,
        attempt: u32,
        host_id: u64,
        end: AttemptEnd,
    ) {
        let finished = {
            let mut core = self.lock();
            let current = core.jobs.get(&job_id).is_some_and(|j| {
                j.state == JobState::Running && j.attempts == attempt && j.host_id == host_id
            });
            if !current {
                // A stale attempt: the job was re-queued, cancelled or finished.
                return;
            }
            let max_attempts = self.max_attempts(&core.jobs[&job_id]);
            let host = core.hosts.get_mut(&host_id);
            match end {
                AttemptEnd::Done(result) => {
                    if let Some(host) = host {
                        host.state = HostState::Free;
                        host.current_job = 0;
                        host.evaluations += 1;
                        host.last_seen = Instant::now();
                    }
                    Some(self.finish_locked(&mut core, job_id, Ok(result)))
                }
                AttemptEnd::Failed(error) => {
                    let job_fault = !error.retryable();
                    let host_gone = matches!(error, HostError::Unavailable(_));
                    if let Some(host) = host {
                        host.current_job = 0;
                        host.failures += u64::from(!job_fault);
                        if host_gone {
                            tracing::warn!(host = host.name, "host failed: {error}");
                            host.state = HostState::Down;
                        } else {
                            host.state = HostState::Free;
                        }
                    }
                    let message = error.to_string();
                    if job_fault || attempt >= max_attempts {
                        Some(self.finish_locked(&mut core, job_id, Err(message)))
                    } else {
                        self.requeue_locked(&mut core, job_id, &message);
                        None
                    }
                }
                AttemptEnd::TimedOut => {
                    if let Some(host) = host {
                        host.current_job = 0;
                        host.failures += 1;
                        host.state = HostState::Down;
                    }
                    if attempt >= max_attempts {
                        Some(self.finish_locked(&mut core, job_id, Err("timed out".into())))
                    } else {
                        self.requeue_locked(&mut core, job_id, "timed out");
                        None
                    }
                }
            }
        };
        self.dispatch();
        if let Some((completion, sink)) = finished {
            self.deliver(completion, sink).await;
        }
    }

    /// Attempts a job gets before it fails for good.
    fn max_attempts(&self, job: &LiveJob) -> u32 {
        if job.request.max_attempts > 0 {
            job.request.max_attempts
        } else {
            self.config.default_attempts
        }
    }

    /// Tells the job's run once the result is on disk: the optimizer never
    /// learns something a restart would forget. On a full disk that waits
    /// until space returns.
    async fn deliver(
        &self,
        completion: Completion,
        sink: Option<mpsc::UnboundedSender<Completion>>,
    ) {
        if let Err(e) = self.store.sync().await {
            tracing::error!("result of job {} not persisted: {e}", completion.job_id);
            return;
        }
        if let Some(sink) = sink {
            let _ = sink.send(completion);
        }
    }

    /// Ends a job for good (under the lock); returns what its run must learn.
    fn finish_locked(
        &self,
        core: &mut Core,
        job_id: u64,
        outcome: Result<Outcome, String>,
    ) -> (Completion, Option<mpsc::UnboundedSender<Completion>>) {
        let job = core.jobs.remove(&job_id).expect("caller checked");
        let tell_seq = if job.run_id > 0 {
            let next = core.tell_seqs.entry(job.run_id).or_insert(0);
            *next += 1;
            Some(*next - 1)
        } else {
            None
        };
        let finished = now_ms();
        let (state, error) = match &outcome {
            Ok(_) => (JobState::Done, String::new()),
            Err(e) => (JobState::Failed, e.clone()),
        };
        match state {
            JobState::Done => {
                self.metrics.jobs_finished.inc();
                if job.started_ms > 0 {
                    let seconds = (finished - job.started_ms).max(0) as f64 / 1000.0;
                    self.metrics.evaluation_seconds.observe(seconds);
                }
            }
            _ => {
                self.metrics.jobs_failed.inc();
            }
        }
        self.store.write(Write::JobFinished {
            id: job_id,
            state,
            tell_seq,
            outcome: outcome.as_ref().ok().cloned().map(Box::new),
            error: error.clone(),
            finished_ms: finished,
        });
        self.publish(job_id, &job, state, outcome.as_ref().ok(), &error, finished);
        let completion = Completion {
            job_id,
            seq: job.seq,
            tell_seq: tell_seq.unwrap_or(0),
            outcome,
        };
        (completion, core.run_sinks.get(&job.run_id).cloned())
    }

    fn requeue_locked(&self, core: &mut Core, job_id: u64, why: &str) {
        let Some(job) = core.jobs.get_mut(&job_id) else {
            return;
        };
        if let Some(abort) = job.abort.take() {
            let _ = abort.send(());
        }
        tracing::info!(job = job_id, attempt = job.attempts, "re-queued: {why}");
        self.metrics.jobs_retried.inc();
        job.state = JobState::Queued;
        job.host.clear();
        job.host_id = 0;
        let owner = job.owner.clone();
        self.store.write(Write::JobRequeued {
            id: job_id,
            attempts: job.attempts,
        });
        enqueue(core, owner, job_id, true);
    }

    fn publish(
        &self,
        id: u64,
        job: &LiveJob,
        state: JobState,
        outcome: Option<&Outcome>,
        error: &str,
        finished_ms: i64,
    ) {
        if self.job_events.receiver_count() == 0 {
            return;
        }
        let mut view = live_view(id, job, true);
        view.state = state;
        view.outcome = outcome.cloned();
        view.error = error.to_owned();
        view.finished_ms = finished_ms;
        let _ = self.job_events.send(view);
    }

    // --------------------------------------------------------------- leases

    async fn watch_leases(me: std::sync::Weak<Self>) {
        loop {
            let Some(this) = me.upgrade() else {
                return;
            };
            let tick = (this.config.heartbeat_interval / 2).max(Duration::from_millis(20));
            drop(this);
            tokio::time::sleep(tick).await;
            let Some(this) = me.upgrade() else {
                return;
            };
            this.check_leases();
        }
    }

    fn check_leases(self: &Arc<Self>) {
        {
            let mut probes = Vec::new();
            {
                let mut core = self.lock();
                let mut orphaned = Vec::new();
                for (id, host) in &mut core.hosts {
                    let silent = host.last_seen.elapsed();
                    if host.state != HostState::Down && silent > self.config.lease {
                        tracing::warn!(
                            host = host.name,
                            "lease expired after {silent:?}: host down"
                        );
                        host.state = HostState::Down;
                        if host.current_job != 0 {
                            orphaned.push(host.current_job);
                            host.current_job = 0;
                            host.failures += 1;
                        }
                    }
                    if silent > self.config.heartbeat_interval && !host.probing {
                        host.probing = true;
                        probes.push((*id, host.client.clone()));
                    }
                }
                for job in orphaned {
                    let attempts_left = core
                        .jobs
                        .get(&job)
                        .is_some_and(|j| j.attempts < self.max_attempts(j));
                    if attempts_left {
                        self.requeue_locked(&mut core, job, "its host's lease expired");
                    } else if core.jobs.contains_key(&job) {
                        if let Some(abort) = core.jobs.get_mut(&job).and_then(|j| j.abort.take()) {
                            let _ = abort.send(());
                        }
                        let (completion, sink) = self.finish_locked(
                            &mut core,
                            job,
                            Err("every host it ran on vanished".into()),
                        );
                        let me = self.clone();
                        tokio::spawn(async move { me.deliver(completion, sink).await });
                    }
                }
            }
            for (id, client) in probes {
                let me = self.clone();
                tokio::spawn(async move { me.probe(id, client).await });
            }
            self.dispatch();
        }
    }

    /// Hosts added by hand do not heartbeat: a successful probe counts as one.
    async fn probe(self: Arc<Self>, id: u64, client: Arc<dyn HostClient>) {
        let answer = tokio::time::timeout(
            self.config
                .heartbeat_interval
                .max(Duration::from_millis(200)),
            client.info(),
        )
        .await;
        {
            let mut core = self.lock();
            let Some(host) = core.hosts.get_mut(&id) else {
                return;
            };
            host.probing = false;
            if let Ok(Ok(info)) = answer {
                host.last_seen = Instant::now();
                host.backend = info.backend.or(host.backend);
                host.robot = info.robot;
                host.objectives = info.objectives;
                if host.state == HostState::Down {
                    tracing::info!(host = host.name, "host is back");
                    host.state = HostState::Free;
                }
            }
        }
        self.dispatch();
    }
}

fn host_by_id_or_name(core: &Core, host_id: u64, name: &str) -> Result<u64, ScheduleError> {
    core.hosts
        .iter()
        .find(|(id, h)| **id == host_id || (!name.is_empty() && h.name == name))
        .map(|(id, _)| *id)
        .ok_or_else(|| {
            ScheduleError::Invalid(format!(
                "unknown host: no host with id {host_id} or name {name:?}"
            ))
        })
}

fn enqueue(core: &mut Core, owner: String, job_id: u64, front: bool) {
    let queue = core.queues.entry(owner.clone()).or_default();
    if front {
        queue.push_front(job_id);
    } else {
        queue.push_back(job_id);
    }
    if !core.turn.contains(&owner) {
        core.turn.push_back(owner);
    }
}

/// Round robin over owners: the first owner (in turn order) whose head job
/// fits the host gives it up and goes to the back of the line.
fn next_job_for(core: &mut Core, host_id: u64) -> Option<u64> {
    let host = &core.hosts[&host_id];
    let (backend, objectives) = (host.backend, host.objectives.clone());
    for position in 0..core.turn.len() {
        let owner = core.turn[position].clone();
        let Some(queue) = core.queues.get_mut(&owner) else {
            continue;
        };
        let Some(&head) = queue.front() else {
            continue;
        };
        let fits = core
            .jobs
            .get(&head)
            .is_some_and(|j| fits(&j.request, backend, &objectives));
        if !fits {
            continue;
        }
        queue.pop_front();
        let empty = queue.is_empty();
        core.turn.remove(position);
        if empty {
            core.queues.remove(&owner);
        } else {
            core.turn.push_back(owner);
        }
        return Some(head);
    }
    None
}

/// Whether a host of kind `backend` serving `objectives` may take `request`.
fn fits(request: &JobRequest, backend: Option<BackendKind>, objectives: &[String]) -> bool {
    let kind_fits = request.backend.is_none() || request.backend == backend;
    kind_fits && request.job.objective.served_by(backend, objectives)
}

/// Checks what the wire conversion cannot: that a job can run at all.
pub fn validate(job: &JobRequest) -> Result<(), String> {
    if let RobotSource::Morphology(xml) = &job.job.robot {
        yamor_core::Morphology::from_xml_str("robot.morphology_xml", xml)
            .map_err(|e| e.to_string())?;
    }
    for (name, value) in &job.job.parameters {
        if !value.is_finite() {
            return Err(format!("parameter {name} = {value} is not finite"));
        }
    }
    job.job.spec.check().map_err(|e| e.to_string())?;
    if job.max_attempts > 100 {
        return Err(format!(
            "max_attempts must be at most 100, got {}",
            job.max_attempts
        ));
    }
    Ok(())
}

fn host_view(id: u64, h: &HostEntry) -> Host {
    Host {
        id,
        name: h.name.clone(),
        address: h.address.clone(),
        backend: h.backend,
        robot: h.robot.clone(),
        objectives: h.objectives.clone(),
        state: h.state,
        current_job: h.current_job,
        last_seen: h.last_seen.elapsed(),
        evaluations: h.evaluations,
        failures: h.failures,
    }
}

fn request_view(request: &JobRequest, brief: bool) -> JobRequest {
    if !brief {
        return request.clone();
    }
    JobRequest {
        job: EvaluationJob {
            objective: request.job.objective.clone(),
            robot: RobotSource::Default,
            gait: None,
            parameters: request.job.parameters.clone(),
            spec: request.job.spec.clone(),
        },
        ..*request
    }
}

fn live_view(id: u64, job: &LiveJob, brief: bool) -> Job {
    Job {
        id,
        run_id: job.run_id,
        owner: job.owner.clone(),
        seq: job.seq,
        tell_seq: None,
        state: job.state,
        request: request_view(&job.request, brief),
        attempts: job.attempts,
        host: job.host.clone(),
        outcome: None,
        error: String::new(),
        submitted_ms: job.submitted_ms,
        started_ms: job.started_ms,
        finished_ms: 0,
    }
}
