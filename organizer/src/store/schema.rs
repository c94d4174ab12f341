//! The tables this version writes and how a file of any earlier version
//! is brought to them: kept apart from the handle so that every schema
//! change (and its upgrade path) reads in one place.

use std::path::Path;

use rusqlite::{Connection, params};

use super::{StoreError, legacy, v0};

/// The schema version this code writes (`PRAGMA user_version`). Version 0
/// is the layout before versions: protobuf blobs and proto enum numbers;
/// version 1 had no job objectives; version 2 kept one velocity per gait
/// (its last window), not the mean of its windows; version 3 kept no
/// optimizer's recommendation with its run; version 4 kept every job's
/// result in a walk's fields (`velocity` holding a value or a plan's
/// fitness, a plan as text).
pub const SCHEMA_VERSION: i64 = 5;

/// Version 5. States are text; a job's request is columns (the objective,
/// the robot, the gait XML, parameters and spec as JSON); an outcome is JSON
/// of core's `Outcome`, tagged with its kind (`walk`, `value`, `plan`), and
/// its fitness a column. Nothing here depends on the wire format.
pub(super) const SCHEMA: &str = "
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
    recommendation TEXT NOT NULL DEFAULT '[]',
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
    fitness REAL,
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
    last_used_ms INTEGER NOT NULL,
    windows INTEGER NOT NULL DEFAULT 1,
    velocity_m2 REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS gaits_by_body ON gaits (body);
CREATE TABLE IF NOT EXISTS gait_predecessors (
    gait_id INTEGER NOT NULL REFERENCES gaits (id),
    predecessor_id INTEGER NOT NULL,
    symptom TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS predecessors_by_gait ON gait_predecessors (gait_id);
";

pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
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

/// Runs `alter` unless `table` has `column` already: brings an older
/// file's table to the columns this version adds.
fn add_columns(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    column: &str,
    alter: &str,
) -> rusqlite::Result<()> {
    let has: bool = tx.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        params![table, column],
        |r| r.get(0),
    )?;
    if !has {
        tx.execute_batch(alter)?;
    }
    Ok(())
}

/// Brings the file to [`SCHEMA_VERSION`]: creates an empty one, migrates
/// an older one in one transaction, refuses a newer one.
pub(super) fn upgrade(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
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
    if version == 0 && !has_jobs {
        tx.execute_batch(SCHEMA)?;
    } else {
        if version == 0 {
            v0::migrate(&tx, SCHEMA).map_err(|why| StoreError::Migration {
                path: path.to_owned(),
                why,
            })?;
        }
        if version == 1 {
            // Rows without an objective are read as gaits, or as "any
            // expression host" for bare problems (see `legacy_objective`).
            tx.execute_batch("ALTER TABLE jobs ADD COLUMN objective TEXT NOT NULL DEFAULT ''")?;
        }
        // A gait's stored velocity counts as one window (all that was kept).
        add_columns(
            &tx,
            "gaits",
            "windows",
            "ALTER TABLE gaits ADD COLUMN windows INTEGER NOT NULL DEFAULT 1;
             ALTER TABLE gaits ADD COLUMN velocity_m2 REAL NOT NULL DEFAULT 0;",
        )?;
        if (1..5).contains(&version) {
            legacy::type_outcomes(&tx).map_err(|why| StoreError::Migration {
                path: path.to_owned(),
                why,
            })?;
        }
        // No run kept its optimizer's recommendation.
        add_columns(
            &tx,
            "runs",
            "recommendation",
            "ALTER TABLE runs ADD COLUMN recommendation TEXT NOT NULL DEFAULT '[]'",
        )?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}
