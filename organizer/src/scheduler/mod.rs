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
//!
//! # Layout
//! - this file: the types, the shared state, loading and the accessors.
//! - `hosts`: registration, heartbeats, leases and probes.
//! - `jobs`: submission, cancellation, dispatch and how an attempt ends.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

// tokio's clock, not the machine's: leases, probes and timeouts follow
// `tokio::time::pause`/`advance`, so tests control time instead of sleeping.
use tokio::time::Instant;

use tokio::sync::{broadcast, mpsc, oneshot};
use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome, RobotSource};

mod hosts;
mod jobs;

use jobs::enqueue;

use crate::metrics::Metrics;
use crate::model::now_ms;
use crate::model::{Host, HostInfo, HostState, Job, JobFilter, JobRequest, JobState};
use crate::store::{Store, Write};
use yamor_proto::transport::TransportError;

/// A boxed future that may move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a call to a host failed, as far as scheduling cares.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostCallError {
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
    /// The host refused: it is still busy (with an evaluation it was sent
    /// before, e.g. one the organizer gave up on while the host was
    /// paused). Nothing ran: the attempt does not count, and the host gets
    /// no job until a probe finds it free.
    #[error("{0}")]
    Busy(String),
}

impl HostCallError {
    /// Whether another attempt may succeed.
    #[must_use]
    pub fn retryable(&self) -> bool {
        !matches!(self, HostCallError::InvalidJob(_))
    }
}

/// One evaluation host as the scheduler drives it. The futures own what
/// they need: dropping one abandons the call (and cancels the evaluation).
pub trait HostClient: Send + Sync {
    fn info(&self) -> BoxFuture<'static, Result<HostInfo, HostCallError>>;
    fn evaluate(
        &self,
        job_id: u64,
        attempt: u32,
        job: &EvaluationJob,
    ) -> BoxFuture<'static, Result<Outcome, HostCallError>>;
}

/// Makes a [`HostClient`] for an address.
pub trait HostConnector: Send + Sync {
    fn connect(&self, address: &str) -> Result<Arc<dyn HostClient>, TransportError>;
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
    /// The error is the host's message, stored with the job and shown:
    /// data, not an error to match on.
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
    /// Bumped at every registration, so a caller can await a host's
    /// admission instead of polling for it.
    registrations: tokio::sync::watch::Sender<u64>,
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
    Done(Box<Outcome>),
    Failed(HostCallError),
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
                .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
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
            registrations: tokio::sync::watch::Sender::new(0),
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
        let core = self.core.lock();
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

    /// Routes the completions of `run_id`'s jobs to `sink`.
    pub fn attach_run(&self, run_id: u64, sink: mpsc::UnboundedSender<Completion>) {
        self.core.lock().run_sinks.insert(run_id, sink);
    }

    pub fn detach_run(&self, run_id: u64) {
        self.core.lock().run_sinks.remove(&run_id);
    }

    #[must_use]
    pub fn subscribe_jobs(&self) -> broadcast::Receiver<Job> {
        self.job_events.subscribe()
    }
}
