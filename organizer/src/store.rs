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

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

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
    pub expected_velocity: f64,
    pub last_used_ms: i64,
    /// `(gait in use before a switch to this one, symptom of the switch)`.
    pub predecessors: Vec<(u64, String)>,
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
        error: String,
        finished_ms: i64,
        elapsed_s: f64,
    },
    /// A new gait; its predecessors too.
    InsertGait(GaitRow),
    /// A stored gait was taken into use again.
    GaitUsed {
        id: u64,
        last_used_ms: i64,
        expected_velocity: f64,
        /// The gait it replaced and why, when a switch.
        predecessor: Option<(u64, String)>,
    },
    /// Writes nothing; its ack means everything before it is committed
    /// (or, for a write that failed other than for want of space, dropped
    /// with an error).
    Barrier,
    /// Writes one header field with its own value: how the writer finds out
    /// whether a full disk has space again when nothing else waits.
    #[doc(hidden)]
    Probe,
    /// `true`: the database may not grow, as on a full disk; `false`: it
    /// may again. How tests fill the disk.
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
}

/// The schema version this code writes (`PRAGMA user_version`). Version 0
/// is the layout before versions: protobuf blobs and proto enum numbers;
/// version 1 had no job objectives.
pub const SCHEMA_VERSION: i64 = 2;

/// Version 2. States are text; a job's request is columns (the objective,
/// the robot, the gait XML, parameters and spec as JSON); an outcome is JSON
/// of core's `Outcome`. Nothing here depends on the wire format.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    optimizer TEXT NOT NULL,
    settings TEXT NOT NULL,
    seed INTEGER NOT NULL,
    spec TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'finished', 'stopped', 'failed')),
    evaluations INTEGER NOT NULL,
    best_velocity REAL,
    best_parameters TEXT NOT NULL,
    error TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER NOT NULL,
    elapsed_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    owner TEXT NOT NULL,
    seq INTEGER NOT NULL,
    tell_seq INTEGER,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    robot_kind TEXT NOT NULL CHECK (robot_kind IN ('default', 'example', 'morphology')),
    robot TEXT NOT NULL,
    gait_xml TEXT,
    parameters TEXT NOT NULL,
    spec TEXT NOT NULL,
    backend TEXT CHECK (backend IN ('simulation', 'real', 'expression')),
    max_attempts INTEGER NOT NULL,
    timeout_s REAL,
    attempts INTEGER NOT NULL,
    host TEXT NOT NULL,
    velocity REAL,
    outcome TEXT,
    error TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER NOT NULL,
    objective TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_by_run ON jobs (run_id, seq);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);
CREATE TABLE IF NOT EXISTS gaits (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    gait_xml TEXT NOT NULL,
    orientation TEXT NOT NULL,
    expected_velocity REAL NOT NULL,
    last_used_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS gaits_by_body ON gaits (body);
CREATE TABLE IF NOT EXISTS gait_predecessors (
    gait_id INTEGER NOT NULL REFERENCES gaits (id),
    predecessor_id INTEGER NOT NULL,
    symptom TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS predecessors_by_gait ON gait_predecessors (gait_id);
";

fn open(path: &Path) -> Result<Connection, StoreError> {
    let wrap = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let conn = Connection::open(path).map_err(wrap)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(wrap)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(wrap)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(wrap)?;
    Ok(conn)
}

/// Brings the file to [`SCHEMA_VERSION`]: creates an empty one, migrates
/// an older one in one transaction, refuses a newer one.
fn upgrade(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found: version,
            known: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction()?;
    let has_jobs: bool = tx.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'",
        [],
        |r| r.get(0),
    )?;
    if version == 1 {
        // Rows without an objective are read as gaits, or as "any
        // expression host" for bare problems (see `legacy_objective`).
        tx.execute_batch("ALTER TABLE jobs ADD COLUMN objective TEXT NOT NULL DEFAULT ''")?;
    } else if has_jobs {
        v0::migrate(&tx).map_err(|why| StoreError::Migration {
            path: path.to_owned(),
            why,
        })?;
    } else {
        tx.execute_batch(SCHEMA)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
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
        })
    }

    /// Why the database cannot be written, while it cannot (a full disk);
    /// `None` while commits succeed.
    #[must_use]
    pub fn unwritable(&self) -> Option<String> {
        self.unwritable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// [`StoreError::Unwritable`] while the database cannot be written:
    /// for requests that should be refused rather than wait.
    pub fn check_writable(&self) -> Result<(), StoreError> {
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
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn)
    }

    pub fn hosts(&self) -> Result<Vec<HostRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare("SELECT id, name, address FROM hosts ORDER BY id")?;
            let rows = stmt.query_map([], |r| {
                Ok(HostRow {
                    id: r.get::<_, i64>(0)? as u64,
                    name: r.get(1)?,
                    address: r.get(2)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"))?;
            let mut rows = stmt.query([])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(run_row(r)?);
            }
            Ok(out)
        })
    }

    /// Jobs matching a filter, by id.
    pub fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        let mut sql =
            format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id > ?1 AND (?2 = 0 OR run_id = ?2)");
        if !filter.states.is_empty() {
            let list: Vec<String> = filter
                .states
                .iter()
                .map(|s| format!("'{}'", s.as_str()))
                .collect();
            sql.push_str(&format!(" AND state IN ({})", list.join(",")));
        }
        sql.push_str(if filter.before_id.is_some() {
            " AND id < ?4 ORDER BY id DESC LIMIT ?3"
        } else {
            " AND ?4 >= 0 ORDER BY id LIMIT ?3"
        });
        // SQLite integers are i64: ids beyond that do not exist, so clamp
        // rather than wrap (u64::MAX would read as -1).
        let clamp = |id: u64| i64::try_from(id).unwrap_or(i64::MAX);
        let after = clamp(filter.after_id);
        let before = clamp(filter.before_id.unwrap_or(0));
        let run = clamp(filter.run_id.unwrap_or(0));
        let limit = filter.limit.map_or(-1, i64::from);
        self.read(|c| {
            let mut stmt = c.prepare(&sql)?;
            let mut rows = stmt.query(params![after, run, limit, before])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(job_row(r)?);
            }
            Ok(out)
        })
    }

    pub fn job(&self, id: u64) -> Result<Option<Job>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"))?;
            let mut rows = stmt.query([id as i64])?;
            match rows.next()? {
                Some(r) => Ok(Some(job_row(r)?)),
                None => Ok(None),
            }
        })
    }

    /// Every job of `run_id` its optimizer learnt, in the order it learnt them.
    pub fn told_jobs(&self, run_id: u64) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.jobs(&JobFilter {
            run_id: Some(run_id),
            ..JobFilter::default()
        })?;
        jobs.retain(|j| j.tell_seq.is_some());
        jobs.sort_by_key(|j| j.tell_seq);
        Ok(jobs)
    }

    /// The fitness of every told job of `run_ids` as `(run_id, tell_seq,
    /// seq, velocity)` (NaN when it failed), by run and proposal order: the
    /// values of [`Store::told_jobs`] for many runs in one statement, without
    /// decoding whole jobs (a page of runs' sparklines).
    pub fn told_velocities(
        &self,
        run_ids: &[u64],
    ) -> Result<Vec<(u64, u64, u64, f64)>, StoreError> {
        // Ids beyond i64 do not exist in SQLite.
        let ids: Vec<i64> = run_ids
            .iter()
            .filter_map(|&id| i64::try_from(id).ok())
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT run_id, tell_seq, seq, velocity FROM jobs WHERE tell_seq IS NOT NULL AND run_id IN ({}) ORDER BY run_id, seq, tell_seq",
            vec!["?"; ids.len()].join(",")
        );
        self.read(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(&ids), |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, i64>(1)? as u64,
                    r.get::<_, i64>(2)? as u64,
                    // The column is the outcome's velocity (a NaN one reads
                    // back NULL), NULL without an outcome.
                    r.get::<_, Option<f64>>(3)?.unwrap_or(f64::NAN),
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Every stored gait learnt on `body` (all gaits when `None`), oldest
    /// first, with their predecessors.
    pub fn gaits(&self, body: Option<&str>) -> Result<Vec<GaitRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT id, body, gait_xml, orientation, expected_velocity, last_used_ms FROM gaits WHERE ?1 IS NULL OR body = ?1 ORDER BY id",
            )?;
            let mut rows = stmt
                .query_map([body], |r| {
                    Ok(GaitRow {
                        id: r.get::<_, i64>(0)? as u64,
                        body: r.get(1)?,
                        gait_xml: r.get(2)?,
                        orientation: r.get(3)?,
                        expected_velocity: r.get(4)?,
                        last_used_ms: r.get(5)?,
                        predecessors: Vec::new(),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut before = c.prepare_cached(
                "SELECT predecessor_id, symptom FROM gait_predecessors WHERE gait_id = ?1 ORDER BY rowid",
            )?;
            for row in &mut rows {
                row.predecessors = before
                    .query_map([row.id as i64], |r| {
                        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, String>(1)?))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
            }
            Ok(rows)
        })
    }

    /// The largest gait id in use.
    pub fn max_gait_id(&self) -> Result<u64, StoreError> {
        self.read(|c| Ok(max_id(c, "gaits")?))
    }

    /// The largest ids in use, so new ids continue after a restart.
    pub fn max_ids(&self) -> Result<(u64, u64, u64), StoreError> {
        self.read(|c| Ok((max_id(c, "hosts")?, max_id(c, "runs")?, max_id(c, "jobs")?)))
    }

    /// Per run, the next tell sequence number (one past the largest stored).
    pub fn next_tell_seqs(&self) -> Result<Vec<(u64, u64)>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT run_id, MAX(tell_seq) FROM jobs WHERE run_id > 0 AND tell_seq IS NOT NULL GROUP BY run_id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64 + 1))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }
}

/// The largest `id` of `table` (one of ours), 0 when it is empty.
fn max_id(c: &Connection, table: &str) -> rusqlite::Result<u64> {
    c.query_row(
        &format!("SELECT COALESCE(MAX(id), 0) FROM {table}"),
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|v| v as u64)
}

// ------------------------------------------------------------- columns

fn job_state_from(text: &str) -> Result<JobState, StoreError> {
    JobState::parse(text).ok_or_else(|| corrupt("job state", text))
}

fn run_state_from(text: &str) -> Result<RunState, StoreError> {
    RunState::parse(text).ok_or_else(|| corrupt("run state", text))
}

fn backend_from(text: Option<&str>) -> Result<Option<BackendKind>, StoreError> {
    text.map(|t| BackendKind::parse(t).ok_or_else(|| corrupt("backend", t)))
        .transpose()
}

/// Runs and jobs written before objectives existed: a bare problem meant
/// "any expression host", which is now the empty expression.
fn legacy_objective(stored: Objective, bare: bool) -> Objective {
    match stored {
        Objective::Gait if bare => Objective::Expression(String::new()),
        other => other,
    }
}

fn corrupt(what: &str, why: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_owned(),
        why: why.to_string(),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data serialises")
}

fn from_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e))
}

const JOB_COLUMNS: &str = "id, run_id, owner, seq, tell_seq, state, robot_kind, robot, gait_xml, parameters, spec, backend, max_attempts, timeout_s, attempts, host, velocity, outcome, error, submitted_ms, started_ms, finished_ms, objective";
const RUN_COLUMNS: &str = "id, name, optimizer, settings, seed, spec, state, evaluations, best_velocity, best_parameters, error, started_ms, finished_ms, elapsed_s";

fn job_row(r: &rusqlite::Row<'_>) -> Result<Job, StoreError> {
    let id = r.get::<_, i64>(0)? as u64;
    let robot_kind: String = r.get(6)?;
    let robot_text: String = r.get(7)?;
    let robot = match robot_kind.as_str() {
        "default" => RobotSource::Default,
        "example" => RobotSource::Example(robot_text),
        "morphology" => RobotSource::Morphology(robot_text),
        other => return Err(corrupt("robot kind", other)),
    };
    let gait = match r.get::<_, Option<String>>(8)? {
        None => None,
        Some(xml) => Some(
            yamor_core::RobotConfig::from_xml_str("stored gait", &xml)
                .map_err(|e| corrupt(&format!("gait of job {id}"), e))?,
        ),
    };
    let parameters: Vec<(String, f64)> = from_json("parameters", &r.get::<_, String>(9)?)?;
    let spec: EvaluationSpec = from_json("spec", &r.get::<_, String>(10)?)?;
    let backend = backend_from(r.get::<_, Option<String>>(11)?.as_deref())?;
    let objective = legacy_objective(
        Objective::parse(&r.get::<_, String>(22)?),
        backend == Some(BackendKind::Expression),
    );
    let outcome = match r.get::<_, Option<String>>(17)? {
        None => None,
        Some(text) => Some(from_json::<Outcome>("outcome", &text)?),
    };
    Ok(Job {
        id,
        run_id: r.get::<_, i64>(1)? as u64,
        owner: r.get(2)?,
        seq: r.get::<_, i64>(3)? as u64,
        tell_seq: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
        state: job_state_from(&r.get::<_, String>(5)?)?,
        request: JobRequest {
            job: EvaluationJob {
                objective,
                robot,
                gait,
                parameters,
                spec,
            },
            backend,
            max_attempts: r.get(12)?,
            timeout: r
                .get::<_, Option<f64>>(13)?
                .map(std::time::Duration::from_secs_f64),
        },
        attempts: r.get(14)?,
        host: r.get(15)?,
        outcome,
        error: r.get(18)?,
        submitted_ms: r.get(19)?,
        started_ms: r.get(20)?,
        finished_ms: r.get(21)?,
    })
}

fn run_row(r: &rusqlite::Row<'_>) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        optimizer: r.get(2)?,
        settings: r.get(3)?,
        seed: r.get::<_, i64>(4)? as u64,
        spec: {
            let mut spec: RunSpec = from_json("run spec", &r.get::<_, String>(5)?)?;
            let bare = matches!(spec.problem, crate::model::Problem::Space(_));
            spec.objective = legacy_objective(spec.objective, bare);
            spec
        },
        state: run_state_from(&r.get::<_, String>(6)?)?,
        evaluations: r.get::<_, i64>(7)? as u64,
        best_velocity: r.get(8)?,
        best_parameters: from_json("best parameters", &r.get::<_, String>(9)?)?,
        error: r.get(10)?,
        started_ms: r.get(11)?,
        finished_ms: r.get(12)?,
        elapsed_s: r.get(13)?,
    })
}

fn insert_job(tx: &rusqlite::Transaction<'_>, j: &Job) -> rusqlite::Result<()> {
    let (robot_kind, robot) = match &j.request.job.robot {
        RobotSource::Default => ("default", ""),
        RobotSource::Example(name) => ("example", name.as_str()),
        RobotSource::Morphology(xml) => ("morphology", xml.as_str()),
    };
    tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO jobs ({JOB_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)"
    ))?
    .execute(params![
        j.id as i64,
        j.run_id as i64,
        j.owner,
        j.seq as i64,
        j.tell_seq.map(|v| v as i64),
        j.state.as_str(),
        robot_kind,
        robot,
        j.request.job.gait.as_ref().map(|g| g.to_xml_string()),
        to_json(&j.request.job.parameters),
        to_json(&j.request.job.spec),
        j.request.backend.map(BackendKind::as_str),
        j.request.max_attempts,
        j.request.timeout.map(|t| t.as_secs_f64()),
        j.attempts,
        j.host,
        j.velocity(),
        j.outcome.as_ref().map(to_json),
        j.error,
        j.submitted_ms,
        j.started_ms,
        j.finished_ms,
        j.request.job.objective.to_text()
    ])?;
    Ok(())
}

fn insert_run(tx: &rusqlite::Transaction<'_>, r: &RunRow) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)"
    ))?
    .execute(params![
        r.id as i64,
        r.name,
        r.optimizer,
        r.settings,
        r.seed as i64,
        to_json(&r.spec),
        r.state.as_str(),
        r.evaluations as i64,
        r.best_velocity,
        to_json(&r.best_parameters),
        r.error,
        r.started_ms,
        r.finished_ms,
        r.elapsed_s
    ])?;
    Ok(())
}

fn insert_predecessor(
    tx: &rusqlite::Transaction<'_>,
    gait: u64,
    from: u64,
    symptom: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO gait_predecessors (gait_id, predecessor_id, symptom) VALUES (?1,?2,?3)",
    )?
    .execute(params![gait as i64, from as i64, symptom])?;
    Ok(())
}

/// The writer thread's state: the only write connection and what it tells
/// the rest of the organizer about its health.
struct Writer {
    conn: Connection,
    commit_seconds: prometheus_client::metrics::histogram::Histogram,
    unwritable: Unwritable,
    /// When commits began to fail and when that was last logged, while they do.
    failing_since: Option<(std::time::Instant, std::time::Instant)>,
}

/// Writes grouped into one transaction at most.
const MAX_BATCH: usize = 4096;
/// The wait before a failed commit is tried again, doubling to the maximum.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(1);

impl Writer {
    /// Blocks for one write, takes whatever else is queued (bounded),
    /// applies all in one transaction, then acks. A batch that fails for a
    /// reason that may pass is kept and tried again; nothing behind it is
    /// applied first, so the database always holds a prefix of the writes.
    fn run(mut self, rx: &mpsc::Receiver<Envelope>) {
        let mut pending: Vec<Envelope> = Vec::new();
        let mut retry = RETRY_FIRST;
        let mut open = true;
        loop {
            if pending.is_empty() {
                match self.next_write(rx, retry) {
                    Some(envelope) => pending.push(envelope),
                    None => return,
                }
            }
            open &= take_queued(rx, &mut pending);
            self.take_disk_caps(&mut pending);
            if pending.is_empty() {
                continue;
            }
            let began = std::time::Instant::now();
            match apply(&mut self.conn, &pending) {
                Ok(()) => {
                    self.commit_seconds.observe(began.elapsed().as_secs_f64());
                    // Barriers alone commit an empty transaction, which
                    // says nothing about the disk.
                    if pending.iter().any(|e| !matches!(e.write, Write::Barrier)) {
                        self.recovered(pending.len());
                    }
                    for mut envelope in pending.drain(..) {
                        envelope.answer(Ok(()));
                    }
                    retry = RETRY_FIRST;
                }
                Err(e) if may_pass(&e) => {
                    let reason = e.to_string();
                    self.failing(&reason, pending.len());
                    refuse_waiting(&mut pending, &reason);
                    if !open {
                        tracing::error!(
                            "the organizer stops with {} writes the database could not take ({reason}); \
                             their jobs run again when it starts",
                            pending.len()
                        );
                        return;
                    }
                    open = wait_to_retry(rx, &mut pending, retry, &reason);
                    retry = (retry * 2).min(RETRY_MAX);
                }
                Err(e) => {
                    tracing::error!("database write failed ({e}); writing one by one");
                    self.write_one_by_one(&mut pending);
                }
            }
            if !open && pending.is_empty() {
                return;
            }
        }
    }

    /// The next write, blocking; while the disk is full and nothing waits,
    /// a probe after `retry`. `None` once every sender is gone.
    fn next_write(
        &self,
        rx: &mpsc::Receiver<Envelope>,
        retry: std::time::Duration,
    ) -> Option<Envelope> {
        if self.failing_since.is_none() {
            return rx.recv().ok();
        }
        match rx.recv_timeout(retry) {
            Ok(envelope) => Some(envelope),
            Err(mpsc::RecvTimeoutError::Timeout) => Some(Envelope {
                write: Write::Probe,
                wait: Wait::No,
                ack: None,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Not the disk: one bad write must not hold back the rest. Should the
    /// disk fill meanwhile, that write and all behind it stay in `pending`
    /// and wait as any failed batch does.
    fn write_one_by_one(&mut self, pending: &mut Vec<Envelope>) {
        let mut rest = std::mem::take(pending).into_iter();
        while let Some(mut envelope) = rest.next() {
            match apply(&mut self.conn, std::slice::from_ref(&envelope)) {
                Ok(()) => envelope.answer(Ok(())),
                Err(e) if may_pass(&e) => {
                    pending.push(envelope);
                    pending.extend(rest);
                    return;
                }
                Err(e) => {
                    tracing::error!("a database write was dropped: {e}");
                    envelope.answer(Err(StoreError::Write(e.to_string())));
                }
            }
        }
    }

    /// Applies [`Write::DiskFull`] at once: a full disk must be able to
    /// clear while writes queued before it wait for space.
    fn take_disk_caps(&mut self, pending: &mut Vec<Envelope>) {
        pending.retain_mut(|envelope| {
            let Write::DiskFull(full) = envelope.write else {
                return true;
            };
            // SQLite raises a cap below the file's size to that size.
            let pages: i64 = if full { 1 } else { 1 << 30 };
            let set = self
                .conn
                .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
                .map_err(StoreError::from);
            envelope.answer(set);
            false
        });
    }

    fn failing(&mut self, reason: &str, pending: usize) {
        let now = std::time::Instant::now();
        match &mut self.failing_since {
            None => {
                tracing::error!(
                    "the database cannot be written: {reason}; {pending} writes are kept and tried \
                     again every second, new runs are refused until it can be written"
                );
                self.failing_since = Some((now, now));
                *self.unwritable.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(reason.to_owned());
            }
            Some((since, logged)) if now.duration_since(*logged).as_secs() >= 30 => {
                tracing::error!(
                    "the database still cannot be written after {} s: {reason}; {pending} writes wait",
                    now.duration_since(*since).as_secs()
                );
                *logged = now;
            }
            Some(_) => {}
        }
    }

    fn recovered(&mut self, written: usize) {
        if let Some((since, _)) = self.failing_since.take() {
            tracing::warn!(
                "the database can be written again after {:.1} s; {written} waiting writes saved",
                since.elapsed().as_secs_f64()
            );
            *self.unwritable.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

/// Whether a failed commit may succeed later unchanged: the disk was full
/// or failed, or the file was busy, rather than the write being wrong.
fn may_pass(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{
        CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, ReadOnly, SystemIoFailure,
    };
    matches!(
        e.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | CannotOpen | DatabaseBusy | DatabaseLocked | ReadOnly)
    )
}

/// Adds what is queued to `pending` (bounded by [`MAX_BATCH`]); `false`
/// once every sender is gone.
fn take_queued(rx: &mpsc::Receiver<Envelope>, pending: &mut Vec<Envelope>) -> bool {
    while pending.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(envelope) => pending.push(envelope),
            Err(mpsc::TryRecvError::Empty) => break,
            Err(mpsc::TryRecvError::Disconnected) => return false,
        }
    }
    true
}

/// Waits `retry` before a failed batch is tried again, adding what comes
/// meanwhile to `pending` and refusing at once what would rather be
/// refused; `false` once every sender is gone.
fn wait_to_retry(
    rx: &mpsc::Receiver<Envelope>,
    pending: &mut Vec<Envelope>,
    retry: std::time::Duration,
    reason: &str,
) -> bool {
    let until = std::time::Instant::now() + retry;
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(mut envelope) if envelope.wait == Wait::OrRefuse => {
                envelope.answer(Err(StoreError::Unwritable {
                    reason: reason.to_owned(),
                }));
            }
            Ok(envelope) => pending.push(envelope),
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
    true
}

/// Withdraws the writes whose callers would rather be refused than wait.
fn refuse_waiting(pending: &mut Vec<Envelope>, reason: &str) {
    pending.retain_mut(|envelope| {
        if envelope.wait != Wait::OrRefuse {
            return true;
        }
        envelope.answer(Err(StoreError::Unwritable {
            reason: reason.to_owned(),
        }));
        false
    });
}

fn apply(conn: &mut Connection, batch: &[Envelope]) -> rusqlite::Result<()> {
    // A failed COMMIT whose rollback failed too would leave a transaction
    // open, and every later BEGIN would fail as if the writes were wrong.
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK")?;
    }
    let tx = conn.transaction()?;
    for envelope in batch {
        match &envelope.write {
            Write::InsertJobs(rows) => {
                for j in rows {
                    insert_job(&tx, j)?;
                }
            }
            Write::JobStarted {
                id,
                attempts,
                host,
                started_ms,
            } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 'running', attempts = ?2, host = ?3, started_ms = ?4 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![*id as i64, attempts, host, started_ms])?;
            }
            Write::JobRequeued { id, attempts } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 'queued', attempts = ?2 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![*id as i64, attempts])?;
            }
            Write::JobFinished {
                id,
                state,
                tell_seq,
                outcome,
                error,
                finished_ms,
            } => {
                // Only an unfinished job can finish: a result is never recorded twice.
                tx.prepare_cached(
                    "UPDATE jobs SET state = ?2, tell_seq = ?3, outcome = ?4, velocity = ?5, error = ?6, finished_ms = ?7 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![
                    *id as i64,
                    state.as_str(),
                    tell_seq.map(|v| v as i64),
                    outcome.as_ref().map(to_json),
                    outcome.as_ref().map(|o| o.velocity),
                    error,
                    finished_ms
                ])?;
            }
            Write::UpsertHost(h) => {
                tx.prepare_cached(
                    "INSERT INTO hosts (id, name, address) VALUES (?1, ?2, ?3)
                     ON CONFLICT(id) DO UPDATE SET name = excluded.name, address = excluded.address",
                )?
                .execute(params![h.id as i64, h.name, h.address])?;
            }
            Write::Barrier => {}
            Write::Probe => {
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            }
            // Applied by the writer as it arrives, ahead of the queue.
            Write::DiskFull(_) => {}
            Write::InsertGait(g) => {
                tx.prepare_cached(
                    "INSERT INTO gaits (id, body, gait_xml, orientation, expected_velocity, last_used_ms) VALUES (?1,?2,?3,?4,?5,?6)",
                )?
                .execute(params![
                    g.id as i64,
                    g.body,
                    g.gait_xml,
                    g.orientation,
                    g.expected_velocity,
                    g.last_used_ms
                ])?;
                for (from, symptom) in &g.predecessors {
                    insert_predecessor(&tx, g.id, *from, symptom)?;
                }
            }
            Write::GaitUsed {
                id,
                last_used_ms,
                expected_velocity,
                predecessor,
            } => {
                tx.prepare_cached(
                    "UPDATE gaits SET last_used_ms = ?2, expected_velocity = ?3 WHERE id = ?1",
                )?
                .execute(params![*id as i64, last_used_ms, expected_velocity])?;
                if let Some((from, symptom)) = predecessor {
                    insert_predecessor(&tx, *id, *from, symptom)?;
                }
            }
            Write::DeleteHost(id) => {
                tx.prepare_cached("DELETE FROM hosts WHERE id = ?1")?
                    .execute([*id as i64])?;
            }
            Write::InsertRun(r) => insert_run(&tx, r)?,
            Write::UpdateRun {
                id,
                state,
                evaluations,
                best_velocity,
                best_parameters,
                error,
                finished_ms,
                elapsed_s,
            } => {
                tx.prepare_cached(
                    "UPDATE runs SET state = ?2, evaluations = ?3, best_velocity = ?4, best_parameters = ?5, error = ?6, finished_ms = ?7, elapsed_s = ?8 WHERE id = ?1",
                )?
                .execute(params![
                    *id as i64,
                    state.as_str(),
                    *evaluations as i64,
                    best_velocity,
                    to_json(best_parameters),
                    error,
                    finished_ms,
                    elapsed_s
                ])?;
            }
        }
    }
    tx.commit()
}

/// Version 0, the layout before [`SCHEMA_VERSION`] 1: jobs and run requests
/// as protobuf blobs, states as proto enum numbers. The only code in the
/// store that knows that encoding; it runs once per old file.
mod v0 {
    use prost::Message;
    use rusqlite::Transaction;
    use yamor_proto::v1 as pb;

    use super::{Job, RunRow, SCHEMA, insert_job, insert_run};
    use crate::model::{JobState, RunState};

    fn job_state(n: i32) -> Result<JobState, String> {
        Ok(match n {
            1 => JobState::Queued,
            2 => JobState::Running,
            3 => JobState::Done,
            4 => JobState::Failed,
            5 => JobState::Cancelled,
            other => return Err(format!("unknown job state {other}")),
        })
    }

    fn run_state(n: i32) -> Result<RunState, String> {
        Ok(match n {
            1 => RunState::Running,
            2 => RunState::Finished,
            3 => RunState::Stopped,
            4 => RunState::Failed,
            other => return Err(format!("unknown run state {other}")),
        })
    }

    /// Moves the old tables aside, creates version 1 and copies every row
    /// over, decoding each blob once. Hosts and gaits keep their layout.
    pub(super) fn migrate(tx: &Transaction<'_>) -> Result<(), String> {
        let sql = |e: rusqlite::Error| e.to_string();
        tx.execute_batch(
            "DROP INDEX IF EXISTS jobs_by_run;
             DROP INDEX IF EXISTS jobs_by_state;
             ALTER TABLE jobs RENAME TO jobs_v0;
             ALTER TABLE runs RENAME TO runs_v0;",
        )
        .map_err(sql)?;
        tx.execute_batch(SCHEMA).map_err(sql)?;
        let mut runs = tx
            .prepare("SELECT id, name, optimizer, settings, seed, request, state, evaluations, best_velocity, best_parameters, error, started_ms, finished_ms, elapsed_s FROM runs_v0 ORDER BY id")
            .map_err(sql)?;
        let mut rows = runs.query([]).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            let id = r.get::<_, i64>(0).map_err(sql)? as u64;
            let blob: Vec<u8> = r.get(5).map_err(sql)?;
            let request = pb::StartRunRequest::decode(blob.as_slice())
                .map_err(|e| format!("run {id}: request: {e}"))?;
            let spec = crate::grpc::run_spec(request).map_err(|e| format!("run {id}: {e}"))?;
            let best: String = r.get(9).map_err(sql)?;
            let row = RunRow {
                id,
                name: r.get(1).map_err(sql)?,
                optimizer: r.get(2).map_err(sql)?,
                settings: r.get(3).map_err(sql)?,
                seed: r.get::<_, i64>(4).map_err(sql)? as u64,
                spec,
                state: run_state(r.get(6).map_err(sql)?).map_err(|e| format!("run {id}: {e}"))?,
                evaluations: r.get::<_, i64>(7).map_err(sql)? as u64,
                best_velocity: r.get(8).map_err(sql)?,
                best_parameters: serde_json::from_str(&best)
                    .map_err(|e| format!("run {id}: best parameters: {e}"))?,
                error: r.get(10).map_err(sql)?,
                started_ms: r.get(11).map_err(sql)?,
                finished_ms: r.get(12).map_err(sql)?,
                elapsed_s: r.get(13).map_err(sql)?,
            };
            insert_run(tx, &row).map_err(sql)?;
        }
        drop(rows);
        drop(runs);
        let mut jobs = tx
            .prepare("SELECT id, run_id, owner, seq, tell_seq, state, request, attempts, host, result, error, submitted_ms, started_ms, finished_ms FROM jobs_v0 ORDER BY id")
            .map_err(sql)?;
        let mut rows = jobs.query([]).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            let id = r.get::<_, i64>(0).map_err(sql)? as u64;
            let blob: Vec<u8> = r.get(6).map_err(sql)?;
            let request = pb::JobRequest::decode(blob.as_slice())
                .map_err(|e| format!("job {id}: request: {e}"))?;
            let request =
                crate::grpc::job_request(request).map_err(|e| format!("job {id}: {e}"))?;
            let result: Vec<u8> = r.get(9).map_err(sql)?;
            let state = job_state(r.get(5).map_err(sql)?).map_err(|e| format!("job {id}: {e}"))?;
            let outcome = if state == JobState::Done {
                let result = pb::EvaluationResult::decode(result.as_slice())
                    .map_err(|e| format!("job {id}: result: {e}"))?;
                Some(
                    yamor_proto::evaluation::outcome(Some(result))
                        .map_err(|e| format!("job {id}: {e}"))?,
                )
            } else {
                None
            };
            let job = Job {
                id,
                run_id: r.get::<_, i64>(1).map_err(sql)? as u64,
                owner: r.get(2).map_err(sql)?,
                seq: r.get::<_, i64>(3).map_err(sql)? as u64,
                tell_seq: r.get::<_, Option<i64>>(4).map_err(sql)?.map(|v| v as u64),
                state,
                request,
                attempts: r.get(7).map_err(sql)?,
                host: r.get(8).map_err(sql)?,
                outcome,
                error: r.get(10).map_err(sql)?,
                submitted_ms: r.get(11).map_err(sql)?,
                started_ms: r.get(12).map_err(sql)?,
                finished_ms: r.get(13).map_err(sql)?,
            };
            insert_job(tx, &job).map_err(sql)?;
        }
        drop(rows);
        drop(jobs);
        tx.execute_batch("DROP TABLE jobs_v0; DROP TABLE runs_v0;")
            .map_err(sql)?;
        Ok(())
    }
}
