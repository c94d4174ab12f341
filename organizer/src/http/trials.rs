//! Every evaluation of a run as a table (`/runs/{id}/trials`: sortable by
//! any column, filtered by any text), each row linking to its job's whole
//! record (`/jobs/{id}`: request, start, what was measured, error).

use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::response::Html;

use super::{App, PageError, Units, esc, internal, page, run_of};
use crate::model::{HELD_OUT_SEQ, Job, JobFilter};

/// A value as the table shows it: in the run's units, `–` when absent.
fn shown(units: Units, v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or("–".into(), |v| format!("{:.4}", v * units.factor))
}

/// Which evaluation of its run a job is: its number, or its held-out
/// re-walk's.
fn evaluation(job: &Job) -> String {
    if job.seq >= HELD_OUT_SEQ {
        format!("held-out {}", job.seq - HELD_OUT_SEQ)
    } else {
        (job.seq + 1).to_string()
    }
}

fn seconds(job: &Job) -> String {
    if job.started_ms > 0 && job.finished_ms >= job.started_ms {
        format!("{:.2}", (job.finished_ms - job.started_ms) as f64 / 1000.0)
    } else {
        "–".into()
    }
}

/// Sorting by a header's column (numbers as numbers) and filtering rows by
/// text: a few lines of plain JavaScript, nothing fetched.
const TABLE_SCRIPT: &str = "<script>\
const t=document.getElementById('trials');\
document.getElementById('filter').oninput=e=>{const q=e.target.value.toLowerCase();\
for(const r of t.tBodies[0].rows)r.hidden=!r.textContent.toLowerCase().includes(q)};\
t.tHead.querySelectorAll('th').forEach((h,i)=>{h.style.cursor='pointer';h.onclick=()=>{\
const down=h.dataset.dir!=='down';t.tHead.querySelectorAll('th').forEach(o=>delete o.dataset.dir);h.dataset.dir=down?'down':'up';\
const key=r=>{const s=r.cells[i].textContent;const n=parseFloat(s);return isNaN(n)?s:n};\
const rows=[...t.tBodies[0].rows].sort((a,b)=>{const x=key(a),y=key(b);\
const c=typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y));return down?-c:c});\
rows.forEach(r=>t.tBodies[0].appendChild(r))}});</script>";

pub(super) async fn trials_page(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Html<String>, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let filter = JobFilter {
        run_id: Some(id),
        ..JobFilter::default()
    };
    // Through the scheduler: running jobs show their live state.
    let mut jobs = app
        .organizer
        .scheduler
        .list_jobs(filter, false)
        .await
        .map_err(internal)?;
    jobs.sort_by_key(|j| j.seq);
    let units = Units::of(jobs.iter());
    let names = jobs.first().map(Job::parameter_names).unwrap_or_default();
    let mut body = format!(
        "<p><a href=/runs/{id}>run {id}</a> ({name}): {n} evaluations, held-out re-walks marked. \
         Click a column to sort; type to filter.</p><p><input id=filter placeholder=\"filter rows\" size=40></p>\
         <table id=trials><thead><tr><th>evaluation</th><th class=num>{title}</th>",
        name = esc(&run.name),
        n = jobs.len(),
        title = esc(units.title),
    );
    for name in &names {
        let _ = write!(body, "<th class=num>{}</th>", esc(name));
    }
    body.push_str(
        "<th>host</th><th class=num>seconds</th><th>state</th><th>error</th></tr></thead><tbody>",
    );
    for job in &jobs {
        let evaluation = evaluation(job);
        let _ = write!(
            body,
            "<tr data-job={jid}><td><a href=/jobs/{jid}>{evaluation}</a></td><td class=num>{value}</td>",
            jid = job.id,
            value = shown(units, job.velocity()),
        );
        for (_, v) in &job.request.job.parameters {
            let _ = write!(body, "<td class=num>{v:.4}</td>");
        }
        let _ = write!(
            body,
            "<td>{}</td><td class=num>{}</td><td>{}</td><td class=err>{}</td></tr>",
            esc(&job.host),
            seconds(job),
            job.state.as_str(),
            esc(&job.error),
        );
    }
    body.push_str("</tbody></table>");
    body.push_str(TABLE_SCRIPT);
    Ok(page(&format!("Run {id}: every evaluation"), &body))
}

pub(super) async fn job_page(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Html<String>, PageError> {
    let job = app
        .organizer
        .scheduler
        .job(id, false)
        .await
        .map_err(|_| super::not_found(format!("job {id}")))?;
    let units = Units::of(std::iter::once(&job));
    let request = &job.request.job;
    let mut rows: Vec<(&str, String)> = vec![
        ("run", job.run_id.to_string()),
        ("evaluation", evaluation(&job)),
        ("state", job.state.as_str().to_owned()),
        ("host", job.host.clone()),
        ("attempts", job.attempts.to_string()),
        ("seconds on the host", seconds(&job)),
        ("objective", request.objective.to_string()),
        ("start (oscillator seed)", request.spec.seed.to_string()),
        (
            "walk",
            format!(
                "{} s warm-up, {} s measured",
                request.spec.warmup, request.spec.measure
            ),
        ),
    ];
    for (name, v) in &request.parameters {
        rows.push(("parameter", format!("{name} = {v}")));
    }
    if let Some(o) = &job.outcome {
        rows.push((
            "value",
            format!("{}{}", shown(units, Some(o.velocity)), units.suffix),
        ));
        rows.push(("distance", format!("{:.4} m", o.distance)));
        rows.push(("path length", format!("{:.4} m", o.path_length)));
        rows.push(("turn", format!("{:+.1} °/s", o.turn_deg_s)));
        rows.push((
            "height",
            format!("{:.3}–{:.3} m", o.min_height, o.max_height),
        ));
        rows.push((
            "measured",
            format!(
                "t = {:.2}–{:.2} s, {} samples",
                o.start.t, o.end.t, o.sample_count
            ),
        ));
        if let Some(k) = o.stopped_early {
            rows.push(("stopped early", format!("at checkpoint {k}")));
        }
        rows.push(("robot seconds", format!("{:.2}", o.simulated)));
    }
    if !job.error.is_empty() {
        rows.push(("error", job.error.clone()));
    }
    let mut body = String::from("<table id=job>");
    for (name, value) in rows {
        let _ = write!(
            body,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(name),
            esc(&value)
        );
    }
    let spec = serde_json::to_string_pretty(&request.spec).map_err(internal)?;
    let _ = write!(
        body,
        "</table><h2>Its evaluation spec</h2><pre id=spec>{}</pre>",
        esc(&spec)
    );
    if app.options.replay.is_some() && request.gait.is_some() {
        let _ = write!(
            body,
            "<p><a id=replay href=/jobs/{id}/replay>see it walk (3-D replay)</a></p>"
        );
    }
    if job.run_id > 0 {
        let _ = write!(
            body,
            "<p><a href=/runs/{0}/trials>every evaluation of run {0}</a></p>",
            job.run_id
        );
    }
    Ok(page(&format!("Job {id}"), &body))
}
