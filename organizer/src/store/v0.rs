//! Version 0, the layout before [`SCHEMA_VERSION`](super::SCHEMA_VERSION) 1: jobs and run requests
//! as protobuf blobs, states as proto enum numbers. The only code in the
//! store that knows that encoding; it runs once per old file.

use prost::Message;
use rusqlite::Transaction;
use yamor_proto::v1 as pb;

use super::columns::{insert_job, insert_run};
use super::{Job, RunRow};
use crate::model::{JobState, RunState};

/// A result as version 0 wrote it, before results were typed: every kind
/// in a walk's fields (tags 1–3, reserved in today's message).
#[derive(Clone, PartialEq, prost::Message)]
struct StoredResult {
    #[prost(double, tag = "1")]
    velocity_m_s: f64,
    #[prost(message, optional, tag = "2")]
    trajectory: Option<pb::TrajectorySummary>,
    #[prost(message, optional, tag = "3")]
    timings: Option<pb::Timings>,
}

impl StoredResult {
    /// Today's message: a walk for a job that walked a gait, a value (an
    /// expression's) otherwise.
    fn typed(self, walked_a_gait: bool) -> pb::EvaluationResult {
        use pb::evaluation_result::Kind;
        let kind = if walked_a_gait {
            Kind::Walk(pb::WalkResult {
                velocity_m_s: self.velocity_m_s,
                trajectory: self.trajectory,
                timings: self.timings,
                descriptors: Default::default(),
            })
        } else {
            Kind::Value(pb::ValueResult {
                value: self.velocity_m_s,
                wall_s: self.timings.map_or(0.0, |t| t.wall_s),
                descriptors: Default::default(),
            })
        };
        pb::EvaluationResult { kind: Some(kind) }
    }
}

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

/// Moves the old tables aside, creates the tables of `schema` (today's,
/// handed in by the caller that owns it) and copies every row over,
/// decoding each blob once. Hosts and gaits keep their layout.
// The text becomes `StoreError::Migration { why }`, like every helper here.
pub(super) fn migrate(tx: &Transaction<'_>, schema: &str) -> Result<(), String> {
    let sql = |e: rusqlite::Error| e.to_string();
    tx.execute_batch(
        "DROP INDEX IF EXISTS jobs_by_run;
         DROP INDEX IF EXISTS jobs_by_state;
         ALTER TABLE jobs RENAME TO jobs_v0;
         ALTER TABLE runs RENAME TO runs_v0;",
    )
    .map_err(sql)?;
    tx.execute_batch(schema).map_err(sql)?;
    let mut runs = tx
        .prepare("SELECT id, name, optimizer, settings, seed, request, state, evaluations, best_velocity, best_parameters, error, started_ms, finished_ms, elapsed_s FROM runs_v0 ORDER BY id")
        .map_err(sql)?;
    let mut rows = runs.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let id = r.get::<_, i64>(0).map_err(sql)? as u64;
        let blob: Vec<u8> = r.get(5).map_err(sql)?;
        let request = pb::StartRunRequest::decode(blob.as_slice())
            .map_err(|e| format!("run {id}: request: {e}"))?;
        let mut spec = crate::convert::run_spec(request).map_err(|e| format!("run {id}: {e}"))?;
        // Version-0 runs walked every candidate from one start and
        // re-walked nothing.
        spec.starts = crate::model::Starts::Fixed;
        spec.held_out = crate::model::HeldOut::off();
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
            recommendation: Vec::new(),
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
        let request = crate::convert::job_request(request).map_err(|e| format!("job {id}: {e}"))?;
        let result: Vec<u8> = r.get(9).map_err(sql)?;
        let state = job_state(r.get(5).map_err(sql)?).map_err(|e| format!("job {id}: {e}"))?;
        let outcome = if state == JobState::Done {
            let result = StoredResult::decode(result.as_slice())
                .map_err(|e| format!("job {id}: result: {e}"))?
                .typed(request.job.gait.is_some());
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
