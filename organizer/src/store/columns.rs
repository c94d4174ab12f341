//! How domain values are stored in columns and read back: states as text,
//! specs and outcomes as JSON, the whole row in one place per table.

use super::*;
use std::collections::BTreeMap;

use yamor_optimizer_api::SettingValue;

pub(super) fn job_state_from(text: &str) -> Result<JobState, StoreError> {
    JobState::parse(text).ok_or_else(|| corrupt("job state", text))
}

pub(super) fn run_state_from(text: &str) -> Result<RunState, StoreError> {
    RunState::parse(text).ok_or_else(|| corrupt("run state", text))
}

pub(super) fn backend_from(text: Option<&str>) -> Result<Option<BackendKind>, StoreError> {
    text.map(|t| BackendKind::parse(t).ok_or_else(|| corrupt("backend", t)))
        .transpose()
}

/// Runs and jobs written before objectives existed: a bare problem meant
/// "any expression host", which is now the empty expression.
pub(super) fn legacy_objective(stored: Objective, bare: bool) -> Objective {
    match stored {
        Objective::Gait if bare => Objective::Expression(String::new()),
        other => other,
    }
}

pub(super) fn corrupt(what: &str, why: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_owned(),
        why: why.to_string(),
    }
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data serialises")
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e))
}

pub(super) const JOB_COLUMNS: &str = "id, run_id, owner, seq, tell_seq, state, robot_kind, robot, gait_xml, parameters, spec, backend, max_attempts, timeout_s, attempts, host, fitness, outcome, error, submitted_ms, started_ms, finished_ms, objective";
pub(super) const RUN_COLUMNS: &str = "id, name, optimizer, settings, seed, spec, state, evaluations, best_velocity, best_parameters, error, started_ms, finished_ms, elapsed_s, recommendation";

pub(super) fn job_row(r: &rusqlite::Row<'_>) -> Result<Job, StoreError> {
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

pub(super) fn run_row(r: &rusqlite::Row<'_>) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: r.get::<_, i64>(0)? as u64,
        name: r.get(1)?,
        optimizer: r.get(2)?,
        settings: r.get(3)?,
        seed: r.get::<_, i64>(4)? as u64,
        spec: {
            let mut spec: RunSpec = from_json("run spec", &r.get::<_, String>(5)?)?;
            let settings: BTreeMap<String, SettingValue> =
                from_json("run settings", &r.get::<_, String>(3)?)?;
            spec.settings = settings
                .into_iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect();
            let bare = matches!(spec.problem, crate::model::Problem::Space(_));
            spec.objective = legacy_objective(spec.objective, bare);
            spec
        },
        state: run_state_from(&r.get::<_, String>(6)?)?,
        evaluations: r.get::<_, i64>(7)? as u64,
        best_velocity: r.get(8)?,
        best_parameters: from_json("best parameters", &r.get::<_, String>(9)?)?,
        recommendation: from_json("recommendation", &r.get::<_, String>(14)?)?,
        error: r.get(10)?,
        started_ms: r.get(11)?,
        finished_ms: r.get(12)?,
        elapsed_s: r.get(13)?,
    })
}

pub(super) fn insert_job(tx: &rusqlite::Transaction<'_>, j: &Job) -> rusqlite::Result<()> {
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
        j.fitness(),
        j.outcome.as_ref().map(to_json),
        j.error,
        j.submitted_ms,
        j.started_ms,
        j.finished_ms,
        j.request.job.objective.to_text()
    ])?;
    Ok(())
}

pub(super) fn insert_run(tx: &rusqlite::Transaction<'_>, r: &RunRow) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)"
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
        r.elapsed_s,
        to_json(&r.recommendation)
    ])?;
    Ok(())
}

pub(super) fn insert_predecessor(
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
