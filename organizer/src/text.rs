//! How hosts, runs and jobs read on a terminal and in JSON: a table header
//! and one row per value, or one JSON document per value. The CLI prints
//! them; a script client gets the same documents.
//!
//! Values are maximised and stored in m/s, which the headers say.

use serde_json::{Value, json};
use yamor_core::evaluation::BackendKind;

use crate::model::{Host, Job, Run};

fn kind(kind: Option<BackendKind>) -> &'static str {
    kind.map_or("?", BackendKind::short)
}

fn named_values(values: &[(String, f64)]) -> Vec<Value> {
    values
        .iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect()
}

/// The header of [`host_row`]s.
#[must_use]
pub fn host_header() -> String {
    format!(
        "{:>4}  {:<28} {:<5} {:<6} {:>7} {:>9} {:>8} {:>8}  robot",
        "id", "name", "kind", "state", "job", "seen (s)", "evals", "failures"
    )
}

#[must_use]
pub fn host_row(h: &Host) -> String {
    format!(
        "{:>4}  {:<28} {:<5} {:<6} {:>7} {:>9.1} {:>8} {:>8}  {}",
        h.id,
        h.name,
        kind(h.backend),
        h.state.as_str(),
        if h.current_job == 0 {
            "-".to_owned()
        } else {
            h.current_job.to_string()
        },
        h.last_seen.as_secs_f64(),
        h.evaluations,
        h.failures,
        h.robot
    )
}

#[must_use]
pub fn host_json(h: &Host) -> Value {
    json!({
        "id": h.id,
        "name": h.name,
        "address": h.address,
        "backend": kind(h.backend),
        "robot": h.robot,
        "state": h.state.as_str(),
        "current_job": (h.current_job > 0).then_some(h.current_job),
        "last_seen_s": h.last_seen.as_secs_f64(),
        "evaluations": h.evaluations,
        "failures": h.failures,
    })
}

/// The header of [`run_row`]s.
#[must_use]
pub fn run_header() -> String {
    format!(
        "{:>4}  {:<20} {:<8} {:<9} {:>7} {:>12} {:>9}",
        "id", "name", "plugin", "state", "evals", "best (m/s)", "time"
    )
}

#[must_use]
pub fn run_row(r: &Run) -> String {
    format!(
        "{:>4}  {:<20} {:<8} {:<9} {:>7} {:>12} {:>8.1}s  {}",
        r.id,
        r.name,
        r.optimizer,
        r.state.as_str(),
        r.evaluations,
        r.best_velocity
            .map_or("-".to_owned(), |v| format!("{:.4}", v)),
        r.elapsed_s,
        r.error
    )
}

#[must_use]
pub fn run_json(r: &Run) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "optimizer": r.optimizer,
        "settings": r.settings,
        "seed": r.seed,
        "state": r.state.as_str(),
        "evaluations": r.evaluations,
        "max_evaluations": r.max_evaluations,
        "max_seconds": r.max_seconds,
        "best": r.best_velocity,
        "best_parameters": named_values(&r.best_parameters),
        "error": r.error,
        "started_ms": r.started_ms,
        "finished_ms": r.finished_ms,
        "elapsed_s": r.elapsed_s,
    })
}

/// A run in detail: state, budget, settings, best value and parameters,
/// error; one line each.
#[must_use]
pub fn run_details(r: &Run) -> Vec<String> {
    let budget = if r.max_evaluations > 0 {
        format!(" of {}", r.max_evaluations)
    } else {
        String::new()
    };
    let settings: Vec<String> = r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut lines = vec![
        format!(
            "run {} ({}): {} with {}, seed {}",
            r.id,
            r.name,
            r.state.as_str(),
            r.optimizer,
            r.seed
        ),
        format!(
            "  {} evaluations{budget} in {:.1} s",
            r.evaluations, r.elapsed_s
        ),
        format!("  settings {}", settings.join(" ")),
        match r.best_velocity {
            Some(v) => format!("  best {v:.6}"),
            None => "  no result yet".to_owned(),
        },
    ];
    lines.extend(
        r.best_parameters
            .iter()
            .map(|(name, value)| format!("    {name:<16} {value:.6}")),
    );
    if !r.error.is_empty() {
        lines.push(format!("  error: {}", r.error));
    }
    lines
}

/// The header of [`job_row`]s.
#[must_use]
pub fn job_header() -> String {
    format!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  error",
        "id", "run", "state", "try", "host", "value"
    )
}

#[must_use]
pub fn job_row(j: &Job) -> String {
    format!(
        "{:>7} {:>5} {:<10} {:>3} {:<28} {:>12}  {}",
        j.id,
        j.run_id,
        j.state.as_str(),
        j.attempts,
        j.host,
        j.velocity().map_or("-".to_owned(), |v| format!("{v:.5}")),
        j.error
    )
}

#[must_use]
pub fn job_json(j: &Job) -> Value {
    json!({
        "id": j.id,
        "run": (j.run_id > 0).then_some(j.run_id),
        "index": j.seq,
        "owner": j.owner,
        "state": j.state.as_str(),
        "attempts": j.attempts,
        "host": j.host,
        "value": j.velocity(),
        "parameters": named_values(&j.request.job.parameters),
        "error": j.error,
        "submitted_ms": j.submitted_ms,
        "started_ms": j.started_ms,
        "finished_ms": j.finished_ms,
    })
}
