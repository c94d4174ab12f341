//! How hosts, runs and jobs read on a terminal and in JSON: a table header
//! and one row per value, or one JSON document per value. The CLI prints
//! them; a script client gets the same documents.
//!
//! Values are maximised. A gait's are velocities: a person reads them in
//! cm/s, a script in m/s under field names that say so (`velocity_m_s`,
//! `best_velocity_m_s`, `held_out_m_s`); a bare objective's values have no
//! unit and are printed and named as plain values (`value`, `best_value`).
//!
//! The functions taking a [`Format`] return a command's whole answer as
//! printed, with every line ended: a table or sentences for a person, one
//! pretty JSON document for a script.

use serde_json::{Value, json};
use yamor_core::evaluation::{BackendKind, Outcome};
use yamor_optimizer_api::PluginInfo;

use crate::model::{Host, Job, Run, RunState};

/// How a command answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// Why a run has no best gait to print.
#[derive(Debug, thiserror::Error)]
pub enum NoBest {
    #[error("run {0} has no result yet")]
    NoResult(u64),
    #[error("run {0} optimizes bare parameters, not a gait: use --params")]
    NotAGait(u64),
}

/// `value` as one pretty JSON document, ended by a newline.
#[must_use]
pub fn document(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialise");
    format!("{text}\n")
}

/// Each of `lines` ended by a newline.
fn ended(lines: impl IntoIterator<Item = String>) -> String {
    lines.into_iter().map(|line| line + "\n").collect()
}

/// `header`, then a row per item; or a JSON array of them.
fn listing<T>(
    items: &[T],
    format: Format,
    header: String,
    row: fn(&T) -> String,
    to_json: fn(&T) -> Value,
) -> String {
    match format {
        Format::Json => document(&items.iter().map(to_json).collect()),
        Format::Text => ended(std::iter::once(header).chain(items.iter().map(row))),
    }
}

#[must_use]
pub fn hosts(hosts: &[Host], format: Format) -> String {
    listing(hosts, format, host_header(), host_row, host_json)
}

#[must_use]
pub fn host_added(h: &Host, format: Format) -> String {
    match format {
        Format::Json => document(&host_json(h)),
        Format::Text => format!("added host {} ({}) as id {}\n", h.name, h.address, h.id),
    }
}

#[must_use]
pub fn runs(runs: &[Run], format: Format) -> String {
    listing(runs, format, run_header(), run_row, run_json)
}

#[must_use]
pub fn runs_started(runs: &[Run], format: Format) -> String {
    match format {
        Format::Json => document(&runs.iter().map(run_json).collect()),
        Format::Text => ended(
            runs.iter()
                .map(|r| format!("started run {} ({})", r.id, r.name)),
        ),
    }
}

/// One run in detail.
#[must_use]
pub fn run(r: &Run, format: Format) -> String {
    match format {
        Format::Json => document(&run_json(r)),
        Format::Text => ended(run_details(r)),
    }
}

/// A run's best gait as yamorconfig XML, or with `params` its parameters
/// (`name value` per line).
pub fn best(r: &Run, format: Format, params: bool) -> Result<String, NoBest> {
    if r.best_velocity.is_none() {
        return Err(NoBest::NoResult(r.id));
    }
    if format == Format::Json {
        Ok(document(&run_json(r)["best_parameters"]))
    } else if params {
        Ok(ended(
            r.best_parameters
                .iter()
                .map(|(name, value)| format!("{name} {value}")),
        ))
    } else if r.best_gait_xml.is_empty() {
        Err(NoBest::NotAGait(r.id))
    } else {
        Ok(r.best_gait_xml.clone())
    }
}

/// What a stop did: `r` is the run as it was asked.
#[must_use]
pub fn run_stopping(r: &Run) -> String {
    if r.state == RunState::Running {
        format!("stopping run {}; it keeps what it found\n", r.id)
    } else {
        format!(
            "run {} is already {} ({} evaluations): nothing to stop\n",
            r.id,
            r.state.as_str(),
            r.evaluations
        )
    }
}

/// Each optimizer with its settings and their defaults.
#[must_use]
pub fn optimizers(optimizers: &[PluginInfo], format: Format) -> String {
    if format == Format::Json {
        return document(&json!(optimizers));
    }
    let mut lines = Vec::new();
    for o in optimizers {
        lines.push(format!(
            "{} {} by {}: {}",
            o.name, o.version, o.author, o.description
        ));
        lines.extend(o.settings.iter().map(|s| {
            format!(
                "    {:<16} default {:<10} {}",
                s.name, s.default, s.description
            )
        }));
    }
    ended(lines)
}

#[must_use]
pub fn jobs(jobs: &[Job], format: Format) -> String {
    listing(jobs, format, job_header(), job_row, job_json)
}

/// One job as it changes: a row, or one JSON object per line (a stream has
/// no end to close an array); not ended.
#[must_use]
pub fn job_line(j: &Job, format: Format) -> String {
    match format {
        Format::Json => job_json(j).to_string(),
        Format::Text => job_row(j),
    }
}

/// The command that lists the next page of jobs, older than `oldest`, as
/// the page itself was asked for (its run, page size and format).
#[must_use]
pub fn older_jobs(run: u64, oldest: u64, limit: u32, format: Format) -> String {
    let run = if run > 0 {
        format!(" --run {run}")
    } else {
        String::new()
    };
    let json = if format == Format::Json {
        " --json"
    } else {
        ""
    };
    format!("older jobs remain: yamor jobs list{json}{run} --limit {limit} --before {oldest}")
}

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
        "{:>4}  {:<20} {:<18} {:<8} {:<9} {:>7} {:>12} {:>9}",
        "id", "name", "robot", "plugin", "state", "evals", "best", "time"
    )
}

#[must_use]
pub fn run_row(r: &Run) -> String {
    format!(
        "{:>4}  {:<20} {:<18} {:<8} {:<9} {:>7} {:>12} {:>8.1}s  {}",
        r.id,
        r.name,
        if r.robot.is_empty() { "-" } else { &r.robot },
        r.optimizer,
        r.state.as_str(),
        r.evaluations,
        r.best_velocity.map_or("-".to_owned(), |v| {
            // People read a gait's velocity in cm/s (files keep m/s).
            if r.gait {
                format!("{:.2} cm/s", v * 100.0)
            } else {
                format!("{v:.4}")
            }
        }),
        r.elapsed_s,
        r.error
    )
}

#[must_use]
pub fn run_json(r: &Run) -> Value {
    let mut run = json!({
        "id": r.id,
        "name": r.name,
        "robot": r.robot,
        "gait": r.gait,
        "optimizer": r.optimizer,
        "settings": r.settings,
        "seed": r.seed,
        "state": r.state.as_str(),
        "evaluations": r.evaluations,
        "max_evaluations": r.max_evaluations,
        "max_seconds": r.max_seconds,
        "best_parameters": named_values(&r.best_parameters),
        "error": r.error,
        "started_ms": r.started_ms,
        "finished_ms": r.finished_ms,
        "elapsed_s": r.elapsed_s,
    });
    // The names carry the unit where there is one.
    let (best, held_out, reference) = if r.gait {
        ("best_velocity_m_s", "held_out_m_s", "reference_m_s")
    } else {
        ("best_value", "held_out", "reference")
    };
    run[best] = json!(r.best_velocity);
    run[held_out] = json!(r.held_out);
    run[reference] = json!(r.reference);
    run["recommendation"] = match &r.recommendation {
        Some(rec) => {
            let mut value = json!({ "parameters": named_values(&rec.parameters) });
            value[held_out] = json!(rec.held_out);
            value
        }
        None => Value::Null,
    };
    run
}

/// A run in detail: state, budget, settings, best value and parameters,
/// error; one line each.
#[must_use]
fn best_line(r: &Run) -> String {
    match r.best_velocity {
        Some(_) => format!("  best {}", r.best_text()),
        None => "  no result yet".to_owned(),
    }
}

pub fn run_details(r: &Run) -> Vec<String> {
    let budget = if r.max_evaluations > 0 {
        format!(" of {}", r.max_evaluations)
    } else {
        String::new()
    };
    let settings: Vec<String> = r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut lines = vec![
        format!(
            "run {} ({}): {} with {}{}, seed {}",
            r.id,
            r.name,
            r.state.as_str(),
            r.optimizer,
            if r.robot.is_empty() {
                " over bare parameters".to_owned()
            } else {
                format!(" on {}", r.robot)
            },
            r.seed
        ),
        format!(
            "  {} evaluations{budget} in {:.1} s",
            r.evaluations, r.elapsed_s
        ),
        format!("  settings {}", settings.join(" ")),
        best_line(r),
    ];
    if let Some(reference) = r.reference {
        lines.push(format!(
            "  the gait as given: {} held out",
            reference.cm_s()
        ));
    }
    lines.extend(
        r.best_parameters
            .iter()
            .map(|(name, value)| format!("    {name:<16} {value:.6}")),
    );
    if let Some(rec) = &r.recommendation {
        let walked = match rec.held_out {
            Some(spread) if r.gait => format!(": {} held out", spread.cm_s()),
            Some(spread) => format!(": {} held out", spread.plain()),
            None => String::new(),
        };
        lines.push(format!("  the optimizer's recommendation{walked}"));
        lines.extend(
            rec.parameters
                .iter()
                .map(|(name, value)| format!("    {name:<16} {value:.6}")),
        );
    }
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
        job_value(j),
        j.error
    )
}

/// A job's value as a listing shows it; a walk stopped early is marked, its
/// value being a partial one.
fn job_value(j: &Job) -> String {
    match &j.outcome {
        None => "-".to_owned(),
        // People read a walk's velocity in cm/s.
        Some(Outcome::Walk(w)) => {
            let v = format!("{:.2} cm/s", w.velocity * 100.0);
            if w.stopped_early.is_some() {
                format!("{v} (early)")
            } else {
                v
            }
        }
        Some(Outcome::Value { value, .. }) => format!("{value:.5}"),
        Some(Outcome::Plan(p)) if p.built => format!("built in {} moves", p.moves),
        Some(Outcome::Plan(p)) => format!(
            "unfinished: {} of {} places after {} moves",
            p.filled, p.seeds, p.moves
        ),
    }
}

#[must_use]
pub fn job_json(j: &Job) -> Value {
    let mut json = json!({
        "id": j.id,
        "run": (j.run_id > 0).then_some(j.run_id),
        "index": j.seq,
        "owner": j.owner,
        "state": j.state.as_str(),
        "attempts": j.attempts,
        "host": j.host,
        "result": j.outcome.as_ref().map(Outcome::kind),
        "fitness": j.fitness(),
        "parameters": named_values(&j.request.job.parameters),
        "error": j.error,
        "submitted_ms": j.submitted_ms,
        "started_ms": j.started_ms,
        "finished_ms": j.finished_ms,
    });
    if let (Some(o), Some(fields)) = (&j.outcome, json.as_object_mut())
        && let Value::Object(own) = result_json(o)
    {
        fields.extend(own);
    }
    json
}

/// A result's own fields, named for what they hold: a walk's velocity
/// names its unit, a bare objective's value has none, a plan tells its
/// figures.
fn result_json(o: &Outcome) -> Value {
    match o {
        Outcome::Walk(w) => json!({
            "velocity_m_s": w.velocity,
            "turn_deg_s": w.turn_deg_s,
            // The checkpoint the walk was stopped at as hopeless: the
            // velocity is then its velocity so far, never a complete result.
            "stopped_early_at": w.stopped_early,
            "walk_s": w.simulated,
            "engine": w.engine,
        }),
        Outcome::Value { value, .. } => json!({ "value": value }),
        Outcome::Plan(p) => json!({
            "built": p.built,
            "moves": p.moves,
            "rounds": p.rounds,
            "collisions": p.collisions,
            "deadlock": p.deadlock,
            "filled": p.filled,
            "places": p.seeds,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished run; a gait's when `best_gait_xml` is not empty.
    fn run(best_gait_xml: &str) -> Run {
        Run {
            id: 3,
            name: "walk".into(),
            robot: if best_gait_xml.is_empty() {
                ""
            } else {
                "quadruped"
            }
            .into(),
            gait: !best_gait_xml.is_empty(),
            optimizer: "cmaes".into(),
            settings: Default::default(),
            seed: 1,
            state: crate::model::RunState::Finished,
            evaluations: 10,
            max_evaluations: 10,
            max_seconds: 0.0,
            best_velocity: Some(0.2046),
            best_parameters: Vec::new(),
            best_gait_xml: best_gait_xml.into(),
            error: String::new(),
            started_ms: 0,
            finished_ms: 0,
            elapsed_s: 1.0,
            held_out: None,
            reference: None,
            recommendation: None,
            prior: None,
            direction: Default::default(),
        }
    }

    #[test]
    fn a_gaits_best_reads_in_cm_s_and_a_bare_problems_as_it_is() {
        let gait = run_row(&run("<yamorconfig/>"));
        assert!(gait.contains("20.46 cm/s"), "{gait}");
        let bare = run_row(&run(""));
        assert!(bare.contains("0.2046") && !bare.contains("cm/s"), "{bare}");
    }

    /// A bare objective's held-out spread carries no gait unit, and the
    /// JSON names the unit where there is one.
    #[test]
    fn values_that_are_not_velocities_get_no_gait_units() {
        let spread = yamor_core::starts::Spread::of(&[-0.001, 0.001]).unwrap();
        let mut bare = run("");
        bare.held_out = Some(spread);
        let shown = run_details(&bare).join("\n");
        assert!(!shown.contains("cm/s"), "{shown}");
        assert!(shown.contains("over bare parameters"), "{shown}");
        let json = run_json(&bare);
        assert_eq!(json["best_value"], 0.2046);
        assert!(json.get("best_velocity_m_s").is_none(), "{json}");
        let gait = run_json(&run("<yamorconfig/>"));
        assert_eq!(gait["best_velocity_m_s"], 0.2046);
        assert_eq!(gait["robot"], "quadruped");
        assert!(gait.get("best_value").is_none(), "{gait}");
    }

    #[test]
    fn the_next_page_hint_keeps_the_pages_run_size_and_format() {
        assert_eq!(
            older_jobs(3, 120, 50, Format::Json),
            "older jobs remain: yamor jobs list --json --run 3 --limit 50 --before 120"
        );
        assert_eq!(
            older_jobs(0, 7, 20, Format::Text),
            "older jobs remain: yamor jobs list --limit 20 --before 7"
        );
    }
}
