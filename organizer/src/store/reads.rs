//! The store's reads, each a query on the reader connection: what the
//! organizer loads at start-up and what its pages and clients ask for.
//! Apart from the handle and its writes, which wait for the writer.

use rusqlite::{Connection, params};

use super::columns::{JOB_COLUMNS, RUN_COLUMNS, job_row, run_row};
use super::{GaitRow, HostRow, RunRow, Store, StoreError};
use crate::model::{HELD_OUT_SEQ, Job, JobFilter};

impl Store {
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

    /// Run `id`, when there is one.
    pub fn run(&self, id: u64) -> Result<Option<RunRow>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))?;
            let mut rows = stmt.query([id as i64])?;
            match rows.next()? {
                Some(r) => Ok(Some(run_row(r)?)),
                None => Ok(None),
            }
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

    /// Every job of `run_id` its optimizer learnt, in the order it learnt
    /// them (its held-out re-walks are not among them).
    pub fn told_jobs(&self, run_id: u64) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.jobs(&JobFilter {
            run_id: Some(run_id),
            ..JobFilter::default()
        })?;
        jobs.retain(|j| j.tell_seq.is_some() && j.seq < HELD_OUT_SEQ);
        jobs.sort_by_key(|j| j.tell_seq);
        Ok(jobs)
    }

    /// The held-out re-walks of `run_id` ([`crate::model::HeldOut`]), by
    /// proposal number.
    /// Read at start-up for every run: only these rows are decoded, not
    /// the run's whole history.
    pub fn held_out_jobs(&self, run_id: u64) -> Result<Vec<Job>, StoreError> {
        let sql =
            format!("SELECT {JOB_COLUMNS} FROM jobs WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq");
        self.read(|c| {
            let mut stmt = c.prepare(&sql)?;
            let mut rows = stmt.query(params![run_id as i64, HELD_OUT_SEQ as i64])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(job_row(r)?);
            }
            Ok(out)
        })
    }

    /// Per run, how many results its optimizer has been told.
    pub fn told_counts(&self) -> Result<Vec<(u64, u64)>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT run_id, COUNT(*) FROM jobs WHERE run_id > 0 AND tell_seq IS NOT NULL AND seq < ?1 GROUP BY run_id",
            )?;
            let rows = stmt.query_map([HELD_OUT_SEQ as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// The fitness of every told job of `run_ids` as `(run_id, tell_seq,
    /// velocity)` (NaN when it failed), by run and proposal order: the
    /// values of [`Store::told_jobs`] for many runs in one statement, without
    /// decoding whole jobs (a page of runs' sparklines).
    pub fn told_velocities(&self, run_ids: &[u64]) -> Result<Vec<(u64, u64, f64)>, StoreError> {
        // Ids beyond i64 do not exist in SQLite.
        let ids: Vec<i64> = run_ids
            .iter()
            .filter_map(|&id| i64::try_from(id).ok())
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT run_id, tell_seq, fitness FROM jobs WHERE tell_seq IS NOT NULL AND seq < {HELD_OUT_SEQ} AND run_id IN ({}) ORDER BY run_id, seq, tell_seq",
            vec!["?"; ids.len()].join(",")
        );
        self.read(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(&ids), |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, i64>(1)? as u64,
                    // The column is the outcome's velocity (a NaN one reads
                    // back NULL), NULL without an outcome.
                    r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
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
                "SELECT id, body, gait_xml, orientation, expected_velocity, last_used_ms, windows, velocity_m2 FROM gaits WHERE ?1 IS NULL OR body = ?1 ORDER BY id",
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
                        windows: r.get::<_, i64>(6)? as u64,
                        velocity_m2: r.get(7)?,
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
