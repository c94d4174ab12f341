//! SQLite persistence with exactly one writer.
//!
//! Every write goes through one thread that owns the only write connection
//! and groups whatever has queued up into one transaction ("group commit"),
//! so "database is locked" cannot happen and thousands of results per second
//! cost a handful of commits. Callers that must not run ahead of the disk
//! (a result before the optimizer learns it) wait for the commit's ack.
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit
//! survives the organizer being killed (the OS has the WAL); only a power
//! loss may lose the last commits.
//!
//! # When the disk is full
//!
//! A commit that fails for want of space (or any I/O failure that may pass)
//! loses nothing: the writer keeps every write in order and tries again
//! every second or so until it lands, and says loudly that it cannot write
//! meanwhile ([`Store::unwritable`]). Callers that wait for durability
//! ([`Store::commit`], [`Store::sync`]) wait that long: a result is told to
//! its run only once it is on disk, so a run pauses while the disk is full
//! and goes on when space returns. Requests that may be refused instead
//! ([`Store::commit_or_refuse`]: a new run, a host's registration) get
//! [`StoreError::Unwritable`] at once, and their write is withdrawn. A write
//! that fails for any other reason (a bug, never the disk) is isolated and
//! dropped with an error so that it cannot block the ones behind it.
//!
//! # Layout
//! - this file: the [`Store`] handle (opening, views, writes queued to the
//!   writer) and the row types.
//! - `schema`: the tables of [`SCHEMA_VERSION`] and the upgrades to them.
//! - `reads`: every query the organizer reads the store with.
//! - `writer`: the one writer thread, group commit, the full-disk loop.
//! - `columns`: how domain values are stored in columns and read back.
//! - `v0`: the migration from the layout before schema versions.

mod columns;
mod legacy;
mod reads;
mod schema;
mod v0;
mod writer;

use columns::*;
pub use schema::SCHEMA_VERSION;
use schema::{open, upgrade};
use writer::Writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use parking_lot::Mutex;

use rusqlite::{Connection, params};
use tokio::sync::oneshot;
use yamor_core::evaluation::{
    BackendKind, EvaluationJob, EvaluationSpec, Objective, Outcome, RobotSource,
};

pub use crate::model::JobFilter;
use crate::model::{Job, JobRequest, JobState, RunSpec, RunState};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error(
        "the database cannot be written now ({reason}); nothing acknowledged is lost: \
         results wait in memory and are saved when it can be written again, and new runs \
         and registrations are refused until then"
    )]
    Unwritable { reason: String },
    #[error("database write failed: {0}")]
    Write(String),
    #[error(
        "database {path} is an empty file, not a yamor database; refusing to start over on it \
         (move it away to start a new organizer)"
    )]
    EmptyFile { path: PathBuf },
    #[error(
        "database {path} is read-only; the organizer records every job in it \
         (check the file's permissions and that its file system is mounted read-write)"
    )]
    ReadOnly { path: PathBuf },
    #[error(
        "database {path} has schema version {found}, newer than the {known} this organizer knows: use a newer yamor"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "this is a read-only view of the database (yamor dashboard): it starts, stops and \
         records nothing; use the organizer or yamor run that owns it"
    )]
    ViewOnly,
    #[error(
        "database {path} has schema version {found}, older than the {known} this yamor reads; \
         open it once with yamor organizer --db or yamor run --db to bring it up to date"
    )]
    TooOld {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("database {path}: migrating from version 0: {why}")]
    Migration { path: PathBuf, why: String },
    #[error("database: stored {what} is not valid: {why}")]
    Corrupt { what: String, why: String },
    #[error("database reader task: {0}")]
    Task(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostRow {
    pub id: u64,
    pub name: String,
    pub address: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: u64,
    pub name: String,
    pub optimizer: String,
    /// The resolved settings as JSON.
    pub settings: String,
    pub seed: u64,
    /// The run as requested.
    pub spec: RunSpec,
    pub state: RunState,
    pub evaluations: u64,
    pub best_velocity: Option<f64>,
    pub best_parameters: Vec<(String, f64)>,
    /// The optimizer's own recommendation as it last gave it (empty: none,
    /// or a run stored before version 4).
    pub recommendation: Vec<(String, f64)>,
    pub error: String,
    pub started_ms: i64,
    pub finished_ms: i64,
    pub elapsed_s: f64,
}

/// One gait of the gaits database (thesis 7.8.2).
#[derive(Debug, Clone, PartialEq)]
pub struct GaitRow {
    pub id: u64,
    /// The body key of the morphology it was learnt on.
    pub body: String,
    /// yamorconfig XML.
    pub gait_xml: String,
    pub orientation: String,
    /// Mean velocity of the robot's measured windows with this gait (m/s):
    /// the one it was stored with and one per later switch to it. Each
    /// window walked from wherever the robot stood, so the mean is a
    /// held-out figure, not the window the gait was chosen on.
    pub expected_velocity: f64,
    /// Windows in that mean (a new row: 1, whatever the insert says).
    pub windows: u64,
    /// Sum of squared deviations of those windows from their mean
    /// (Welford's running form; the standard error needs two windows).
    pub velocity_m2: f64,
    pub last_used_ms: i64,
    /// `(gait in use before a switch to this one, symptom of the switch)`.
    pub predecessors: Vec<(u64, String)>,
}

/// A stored gait's velocity as people read it: `7.00 ± 1.53 cm/s (3
/// windows)`, or without a standard error while there is one window.
#[must_use]
pub fn gait_velocity_text(mean_m_s: f64, se_m_s: Option<f64>, windows: u64) -> String {
    let plural = if windows == 1 { "" } else { "s" };
    match se_m_s {
        Some(se) => format!(
            "{:.2} ± {:.2} cm/s ({windows} window{plural})",
            mean_m_s * 100.0,
            se * 100.0
        ),
        None => format!("{:.2} cm/s ({windows} window{plural})", mean_m_s * 100.0),
    }
}

impl GaitRow {
    /// [`gait_velocity_text`] of this gait.
    #[must_use]
    pub fn velocity_text(&self) -> String {
        gait_velocity_text(self.expected_velocity, self.standard_error(), self.windows)
    }

    /// The standard error of [`Self::expected_velocity`], from two windows on.
    #[must_use]
    pub fn standard_error(&self) -> Option<f64> {
        (self.windows >= 2).then(|| {
            let n = self.windows as f64;
            (self.velocity_m2 / (n - 1.0) / n).sqrt()
        })
    }
}

/// A write; applied in submission order.
#[derive(Debug)]
pub enum Write {
    InsertJobs(Vec<Job>),
    JobStarted {
        id: u64,
        attempts: u32,
        host: String,
        started_ms: i64,
    },
    JobRequeued {
        id: u64,
        attempts: u32,
    },
    /// Only an open job finishes: a result is never recorded twice.
    JobFinished {
        id: u64,
        state: JobState,
        tell_seq: Option<u64>,
        outcome: Option<Box<Outcome>>,
        error: String,
        finished_ms: i64,
    },
    UpsertHost(HostRow),
    DeleteHost(u64),
    InsertRun(Box<RunRow>),
    UpdateRun {
        id: u64,
        state: RunState,
        evaluations: u64,
        best_velocity: Option<f64>,
        best_parameters: Vec<(String, f64)>,
        recommendation: Vec<(String, f64)>,
        error: String,
        finished_ms: i64,
        elapsed_s: f64,
    },
    /// A new gait; its predecessors too.
    InsertGait(GaitRow),
    /// A stored gait was taken into use again and walked a window at
    /// `velocity`, which joins its mean.
    GaitUsed {
        id: u64,
        last_used_ms: i64,
        velocity: f64,
        /// The gait it replaced and why, when a switch.
        predecessor: Option<(u64, String)>,
    },
    /// Another process is taking over a database shared by processes that
    /// each bring their own hosts (`yamor run`'s store of every run): the
    /// runs recorded as running were an ended process's, so they end as
    /// stopped with `error`, their queued and running jobs are cancelled,
    /// and the recorded hosts (that process's loopback addresses) are
    /// forgotten, rather than resumed on hosts that walk another robot.
    EndOrphans {
        error: String,
        finished_ms: i64,
    },
    /// Ends the writer once everything before it is committed: it
    /// checkpoints the WAL into the file and closes its connection before
    /// the ack ([`Store::close`]).
    Close,
    /// Writes nothing; its ack means everything before it is committed
    /// (or, for a write that failed other than for want of space, dropped
    /// with an error).
    Barrier,
    /// Writes one header field with its own value: how the writer finds out
    /// whether a full disk has space again when nothing else waits.
    #[doc(hidden)]
    Probe,
    /// `true`: the database may not grow, as on a full disk; `false`: it
    /// may again. How tests fill the disk: only with the `test-hooks`
    /// feature, which the organizer's own tests turn on.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    DiskFull(bool),
}

/// How a caller waits for its write.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wait {
    /// Fire and forget: kept and retried until committed.
    No,
    /// Until it is committed, however long the disk stays full.
    Durable,
    /// Until it is committed, or refused (and withdrawn) if the database
    /// cannot be written now.
    OrRefuse,
}

struct Envelope {
    write: Write,
    wait: Wait,
    ack: Option<oneshot::Sender<Result<(), StoreError>>>,
}

impl Envelope {
    fn answer(&mut self, outcome: Result<(), StoreError>) {
        if let Some(ack) = self.ack.take() {
            let _ = ack.send(outcome);
        }
    }
}

/// Why the writer cannot commit, while it cannot; shared with callers.
type Unwritable = Arc<Mutex<Option<String>>>;

/// Handle to the database: cheap to clone.
#[derive(Clone)]
pub struct Store {
    writes: mpsc::Sender<Envelope>,
    /// Seconds per group commit, observed by the writer.
    commit_seconds: prometheus_client::metrics::histogram::Histogram,
    /// Reads go through their own connection; WAL lets them run beside the writer.
    reader: Arc<Mutex<Connection>>,
    unwritable: Unwritable,
    /// Opened by [`Store::open_view`]: every write is dropped, every
    /// commit refused.
    view: Option<Arc<ViewedFile>>,
}

/// The file a view reads, and whether its WAL files (`-wal`, `-shm`) were
/// absent when the view opened it: then the view made them, and
/// [`Store::close_view`] takes them away again.
struct ViewedFile {
    path: PathBuf,
    made_wal_files: bool,
}

impl Store {
    /// Opens (creating or migrating if needed) the database at `path` and
    /// starts the writer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        // SQLite would take a 0-byte file for a new database and serve an
        // empty organizer over what was probably a lost one.
        if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            return Err(StoreError::EmptyFile {
                path: path.to_owned(),
            });
        }
        let mut writer = open(path)?;
        // SQLite opens a file it cannot write read-only, without a word;
        // every later write would fail.
        if writer.is_readonly(rusqlite::MAIN_DB)? {
            return Err(StoreError::ReadOnly {
                path: path.to_owned(),
            });
        }
        upgrade(&mut writer, path)?;
        let reader = open(path)?;
        let (tx, rx) = mpsc::channel::<Envelope>();
        let commit_seconds = crate::metrics::commit_histogram();
        let unwritable = Unwritable::default();
        let writer_state = Writer {
            conn: writer,
            commit_seconds: commit_seconds.clone(),
            unwritable: unwritable.clone(),
            failing_since: None,
        };
        std::thread::Builder::new()
            .name("yamor-db-writer".into())
            .spawn(move || writer_state.run(&rx))
            .expect("spawning the database writer");
        Ok(Store {
            writes: tx,
            commit_seconds,
            reader: Arc::new(Mutex::new(reader)),
            unwritable,
            view: None,
        })
    }

    /// The database at `path` to read only, as it stands, beside whatever
    /// process writes it (WAL lets readers in): no migration, no writer.
    /// Fire-and-forget writes vanish; commits are refused with
    /// [`StoreError::ViewOnly`].
    pub fn open_view(path: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let beside = |suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        let made_wal_files = !beside("-wal").exists() && !beside("-shm").exists();
        let wrap = |source| StoreError::Open {
            path: path.to_owned(),
            source,
        };
        let reader = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(wrap)?;
        reader
            .busy_timeout(std::time::Duration::from_secs(10))
            .map_err(wrap)?;
        let version: i64 = reader
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(wrap)?;
        let too = |found| (path.to_owned(), found, SCHEMA_VERSION);
        if version > SCHEMA_VERSION {
            let (path, found, known) = too(version);
            return Err(StoreError::TooNew { path, found, known });
        }
        if version < SCHEMA_VERSION {
            let (path, found, known) = too(version);
            return Err(StoreError::TooOld { path, found, known });
        }
        let (tx, rx) = mpsc::channel::<Envelope>();
        std::thread::Builder::new()
            .name("yamor-db-view".into())
            .spawn(move || {
                for mut envelope in rx {
                    // Nothing is ever pending: a barrier holds at once.
                    let answer = match envelope.write {
                        Write::Barrier => Ok(()),
                        _ => Err(StoreError::ViewOnly),
                    };
                    envelope.answer(answer);
                }
            })
            .expect("spawning the database view's writer");
        Ok(Store {
            writes: tx,
            commit_seconds: crate::metrics::commit_histogram(),
            reader: Arc::new(Mutex::new(reader)),
            unwritable: Unwritable::default(),
            view: Some(Arc::new(ViewedFile {
                path: path.to_owned(),
                made_wal_files,
            })),
        })
    }

    /// Why the database cannot be written, while it cannot (a full disk);
    /// `None` while commits succeed.
    #[must_use]
    pub fn unwritable(&self) -> Option<String> {
        self.unwritable.lock().clone()
    }

    /// Ends a view ([`Store::open_view`]; nothing for a store that writes):
    /// its connection closes, and WAL files it made are taken away. A
    /// read-only connection cannot remove them, so a connection that may
    /// write opens the file and closes at once, writing nothing: SQLite's
    /// last connection to close removes them, and while another process
    /// has the database open they stay, as they must.
    pub fn close_view(&self) {
        let Some(view) = &self.view else { return };
        if let Ok(memory) = Connection::open_in_memory() {
            *self.reader.lock() = memory;
        }
        if view.made_wal_files
            && let Ok(conn) = Connection::open(&view.path)
        {
            // Opening is lazy: a read makes the connection take part.
            let _ = conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
            let _ = conn.close();
        }
    }

    /// [`StoreError::Unwritable`] while the database cannot be written:
    /// for requests that should be refused rather than wait.
    pub fn check_writable(&self) -> Result<(), StoreError> {
        if self.view.is_some() {
            return Err(StoreError::ViewOnly);
        }
        match self.unwritable() {
            Some(reason) => Err(StoreError::Unwritable { reason }),
            None => Ok(()),
        }
    }

    /// The group-commit latency histogram (for the metrics registry).
    #[must_use]
    pub fn commit_seconds(&self) -> prometheus_client::metrics::histogram::Histogram {
        self.commit_seconds.clone()
    }

    /// Queues a write; it lands with the next group commit (or, while the
    /// disk is full, with the first that succeeds).
    pub fn write(&self, write: Write) {
        let envelope = Envelope {
            write,
            wait: Wait::No,
            ack: None,
        };
        if self.writes.send(envelope).is_err() {
            tracing::error!("database writer gone; a write was dropped");
        }
    }

    async fn send(&self, write: Write, wait: Wait) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        self.writes
            .send(Envelope {
                write,
                wait,
                ack: Some(ack),
            })
            .map_err(|_| StoreError::WriterGone)?;
        done.await.unwrap_or(Err(StoreError::WriterGone))
    }

    /// Queues a write and waits until it is committed, however long the
    /// database stays unwritable.
    pub async fn commit(&self, write: Write) -> Result<(), StoreError> {
        self.send(write, Wait::Durable).await
    }

    /// Queues a write and waits until it is committed; if the database
    /// cannot be written now, the write is withdrawn and
    /// [`StoreError::Unwritable`] returned instead.
    pub async fn commit_or_refuse(&self, write: Write) -> Result<(), StoreError> {
        self.send(write, Wait::OrRefuse).await
    }

    /// Commits everything queued, checkpoints the WAL into the database
    /// file and closes both connections, so that a normal end leaves no
    /// `-wal`/`-shm` files beside it. Every later write is refused and
    /// every later read fails: call it last.
    pub async fn close(&self) -> Result<(), StoreError> {
        self.commit(Write::Close).await?;
        // The file's last connection: closing it lets SQLite remove the
        // WAL and shared-memory files (disk work, off the async workers).
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let old = std::mem::replace(&mut *reader.lock(), Connection::open_in_memory()?);
            old.close().map_err(|(_, e)| StoreError::Sql(e))
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// Waits until everything queued so far is committed.
    pub async fn sync(&self) -> Result<(), StoreError> {
        self.commit(Write::Barrier).await
    }

    /// [`Store::sync`] for at most `limit`: on the way out, a full disk must
    /// not hold the process; what is not saved was never told to a run.
    pub async fn sync_within(&self, limit: std::time::Duration) -> Result<(), StoreError> {
        match tokio::time::timeout(limit, self.sync()).await {
            Ok(synced) => synced,
            Err(_) => Err(StoreError::Unwritable {
                reason: self
                    .unwritable()
                    .unwrap_or_else(|| "it did not answer".into()),
            }),
        }
    }

    /// Waits until everything queued so far is committed, or answers
    /// [`StoreError::Unwritable`] at once while the database cannot be
    /// written: for reads that must see every queued write.
    pub async fn settle(&self) -> Result<(), StoreError> {
        self.commit_or_refuse(Write::Barrier).await
    }

    /// Runs a read on the blocking pool: SQLite must not stall the async
    /// runtime's workers.
    pub async fn read_async<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
    }

    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = self.reader.lock();
        f(&conn)
    }
}
