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

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

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
}

/// One persisted job row.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub id: u64,
    pub run_id: u64,
    pub owner: String,
    /// Position of the proposal in its run (0-based); 0 for direct jobs.
    pub seq: u64,
    /// Order in which the run's optimizer learnt the result; `None` until then.
    pub tell_seq: Option<u64>,
    pub state: i32,
    /// Encoded `JobRequest`.
    pub request: Vec<u8>,
    pub attempts: u32,
    pub host: String,
    /// Encoded `EvaluationResult`, empty without a result.
    pub result: Vec<u8>,
    pub velocity: Option<f64>,
    pub error: String,
    pub submitted_ms: i64,
    pub started_ms: i64,
    pub finished_ms: i64,
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
    /// Encoded `StartRunRequest` as submitted.
    pub request: Vec<u8>,
    pub state: i32,
    pub evaluations: u64,
    pub best_velocity: Option<f64>,
    /// Best parameters as JSON `[[name, value], ...]`.
    pub best_parameters: String,
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
    InsertJobs(Vec<JobRow>),
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
    JobFinished {
        id: u64,
        state: i32,
        tell_seq: Option<u64>,
        result: Vec<u8>,
        velocity: Option<f64>,
        error: String,
        finished_ms: i64,
    },
    UpsertHost(HostRow),
    DeleteHost(u64),
    InsertRun(RunRow),
    UpdateRun {
        id: u64,
        state: i32,
        evaluations: u64,
        best_velocity: Option<f64>,
        best_parameters: String,
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
    /// Writes nothing; its ack means everything before it is committed.
    Barrier,
}

struct Envelope {
    write: Write,
    ack: Option<oneshot::Sender<Result<(), String>>>,
}

/// Handle to the database: cheap to clone.
#[derive(Clone)]
pub struct Store {
    writes: mpsc::Sender<Envelope>,
    /// Reads go through their own connection; WAL lets them run beside the writer.
    reader: Arc<Mutex<Connection>>,
}

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
    request BLOB NOT NULL,
    state INTEGER NOT NULL,
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
    state INTEGER NOT NULL,
    request BLOB NOT NULL,
    attempts INTEGER NOT NULL,
    host TEXT NOT NULL,
    result BLOB NOT NULL,
    velocity REAL,
    error TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_run ON jobs (run_id, seq);
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
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);
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

impl Store {
    /// Opens (creating if needed) the database at `path` and starts the writer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let writer = open(path)?;
        writer.execute_batch(SCHEMA)?;
        let reader = open(path)?;
        let (tx, rx) = mpsc::channel::<Envelope>();
        std::thread::Builder::new()
            .name("yamor-db-writer".into())
            .spawn(move || write_loop(writer, rx))
            .expect("spawning the database writer");
        Ok(Store {
            writes: tx,
            reader: Arc::new(Mutex::new(reader)),
        })
    }

    /// Queues a write; it lands with the next group commit.
    pub fn write(&self, write: Write) {
        if self.writes.send(Envelope { write, ack: None }).is_err() {
            tracing::error!("database writer gone; a write was dropped");
        }
    }

    /// Queues a write and waits until it is committed.
    pub async fn commit(&self, write: Write) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        self.writes
            .send(Envelope {
                write,
                ack: Some(ack),
            })
            .map_err(|_| StoreError::WriterGone)?;
        match done.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(StoreError::Sql(rusqlite::Error::InvalidParameterName(
                message,
            ))),
            Err(_) => Err(StoreError::WriterGone),
        }
    }

    /// Waits until everything queued so far is committed.
    pub async fn sync(&self) -> Result<(), StoreError> {
        self.commit(Write::Barrier).await
    }

    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(&conn)?)
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
            rows.collect()
        })
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY id"))?;
            let rows = stmt.query_map([], run_row)?;
            rows.collect()
        })
    }

    /// Jobs matching a filter, by id.
    pub fn jobs(&self, filter: &JobFilter) -> Result<Vec<JobRow>, StoreError> {
        let mut sql =
            format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id > ?1 AND (?2 = 0 OR run_id = ?2)");
        if !filter.states.is_empty() {
            let list: Vec<String> = filter.states.iter().map(i32::to_string).collect();
            sql.push_str(&format!(" AND state IN ({})", list.join(",")));
        }
        sql.push_str(" ORDER BY id LIMIT ?3");
        let after = filter.after_id as i64;
        let run = filter.run_id.unwrap_or(0) as i64;
        let limit = filter.limit.map_or(-1, i64::from);
        self.read(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(params![after, run, limit], job_row)?;
            rows.collect()
        })
    }

    pub fn job(&self, id: u64) -> Result<Option<JobRow>, StoreError> {
        self.read(|c| {
            c.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [id as i64],
                job_row,
            )
            .optional()
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
        self.read(|c| max_id(c, "gaits"))
    }

    /// The largest ids in use, so new ids continue after a restart.
    pub fn max_ids(&self) -> Result<(u64, u64, u64), StoreError> {
        self.read(|c| Ok((max_id(c, "hosts")?, max_id(c, "runs")?, max_id(c, "jobs")?)))
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

/// Which jobs to read.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub run_id: Option<u64>,
    pub states: Vec<i32>,
    pub after_id: u64,
    pub limit: Option<u32>,
}

const JOB_COLUMNS: &str = "id, run_id, owner, seq, tell_seq, state, request, attempts, host, result, velocity, error, submitted_ms, started_ms, finished_ms";
const RUN_COLUMNS: &str = "id, name, optimizer, settings, seed, request, state, evaluations, best_velocity, best_parameters, error, started_ms, finished_ms, elapsed_s";

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get::<_, i64>(0)? as u64,
        run_id: r.get::<_, i64>(1)? as u64,
        owner: r.get(2)?,
        seq: r.get::<_, i64>(3)? as u64,
        tell_seq: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
        state: r.get(5)?,
        request: r.get(6)?,
        attempts: r.get(7)?,
        host: r.get(8)?,
        result: r.get(9)?,
        velocity: r.get(10)?,
        error: r.get(11)?,
        submitted_ms: r.get(12)?,
        started_ms: r.get(13)?,
        finished_ms: r.get(14)?,
    })
}

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        optimizer: r.get(2)?,
        settings: r.get(3)?,
        seed: r.get::<_, i64>(4)? as u64,
        request: r.get(5)?,
        state: r.get(6)?,
        evaluations: r.get::<_, i64>(7)? as u64,
        best_velocity: r.get(8)?,
        best_parameters: r.get(9)?,
        error: r.get(10)?,
        started_ms: r.get(11)?,
        finished_ms: r.get(12)?,
        elapsed_s: r.get(13)?,
    })
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

/// The writer thread: block for one write, take whatever else is queued
/// (bounded), apply all in one transaction, then ack.
fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Envelope>) {
    const MAX_BATCH: usize = 4096;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(e) => batch.push(e),
                Err(_) => break,
            }
        }
        let outcome = apply(&mut conn, &batch).map_err(|e| e.to_string());
        if let Err(e) = &outcome {
            tracing::error!("database write failed: {e}");
        }
        for envelope in batch {
            if let Some(ack) = envelope.ack {
                let _ = ack.send(outcome.clone());
            }
        }
    }
}

fn apply(conn: &mut Connection, batch: &[Envelope]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for envelope in batch {
        match &envelope.write {
            Write::InsertJobs(rows) => {
                let mut stmt = tx.prepare_cached(&format!(
                    "INSERT OR REPLACE INTO jobs ({JOB_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)"
                ))?;
                for j in rows {
                    stmt.execute(params![
                        j.id as i64,
                        j.run_id as i64,
                        j.owner,
                        j.seq as i64,
                        j.tell_seq.map(|v| v as i64),
                        j.state,
                        j.request,
                        j.attempts,
                        j.host,
                        j.result,
                        j.velocity,
                        j.error,
                        j.submitted_ms,
                        j.started_ms,
                        j.finished_ms
                    ])?;
                }
            }
            Write::JobStarted {
                id,
                attempts,
                host,
                started_ms,
            } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 2, attempts = ?2, host = ?3, started_ms = ?4 WHERE id = ?1 AND state IN (1, 2)",
                )?
                .execute(params![*id as i64, attempts, host, started_ms])?;
            }
            Write::JobRequeued { id, attempts } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 1, attempts = ?2 WHERE id = ?1 AND state IN (1, 2)",
                )?
                .execute(params![*id as i64, attempts])?;
            }
            Write::JobFinished {
                id,
                state,
                tell_seq,
                result,
                velocity,
                error,
                finished_ms,
            } => {
                // Only an unfinished job can finish: a result is never recorded twice.
                tx.prepare_cached(
                    "UPDATE jobs SET state = ?2, tell_seq = ?3, result = ?4, velocity = ?5, error = ?6, finished_ms = ?7 WHERE id = ?1 AND state IN (1, 2)",
                )?
                .execute(params![
                    *id as i64,
                    state,
                    tell_seq.map(|v| v as i64),
                    result,
                    velocity,
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
            Write::InsertRun(r) => {
                tx.prepare_cached(&format!(
                    "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)"
                ))?
                .execute(params![
                    r.id as i64,
                    r.name,
                    r.optimizer,
                    r.settings,
                    r.seed as i64,
                    r.request,
                    r.state,
                    r.evaluations as i64,
                    r.best_velocity,
                    r.best_parameters,
                    r.error,
                    r.started_ms,
                    r.finished_ms,
                    r.elapsed_s
                ])?;
            }
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
                    state,
                    *evaluations as i64,
                    best_velocity,
                    best_parameters,
                    error,
                    finished_ms,
                    elapsed_s
                ])?;
            }
        }
    }
    tx.commit()
}

impl Store {
    /// Per run, the next tell sequence number (one past the largest stored).
    pub fn next_tell_seqs(&self) -> Result<Vec<(u64, u64)>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT run_id, MAX(tell_seq) FROM jobs WHERE run_id > 0 AND tell_seq IS NOT NULL GROUP BY run_id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64 + 1))
            })?;
            rows.collect()
        })
    }
}
