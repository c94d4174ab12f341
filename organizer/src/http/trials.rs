//! Every evaluation of a run as a table (`/runs/{id}/trials`: sortable by
//! any column, filtered by any text), each row linking to its job's whole
//! record (`/jobs/{id}`: request, start, what was measured, error, and
//! links to the views contributed for it, [`super::views`]).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Html;
use maud::html;
use yamor_core::evaluation::{Objective, Outcome};

use super::views::{JobView, usable};
use super::{App, PageError, Units, internal, page, run_of, script};
use crate::model::{HELD_OUT_SEQ, Job, JobFilter, REFERENCE_SEQ};

/// A value as the table shows it: in the run's units, `–` when absent.
fn shown(units: Units, v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or("–".into(), |v| format!("{:.4}", v * units.factor))
}

/// Which evaluation of its run a job is: its number, or its held-out
/// re-walk's.
fn evaluation(job: &Job) -> String {
    if job.seq >= REFERENCE_SEQ {
        format!("the given gait, held-out {}", job.seq - REFERENCE_SEQ)
    } else if job.seq >= HELD_OUT_SEQ {
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
const TABLE_SCRIPT: &str = "\
const t=document.getElementById('trials');\
document.getElementById('filter').oninput=e=>{const q=e.target.value.toLowerCase();\
for(const r of t.tBodies[0].rows)r.hidden=!r.textContent.toLowerCase().includes(q)};\
t.tHead.querySelectorAll('th').forEach((h,i)=>{h.style.cursor='pointer';h.onclick=()=>{\
const down=h.dataset.dir!=='down';t.tHead.querySelectorAll('th').forEach(o=>delete o.dataset.dir);h.dataset.dir=down?'down':'up';\
const key=r=>{const s=r.cells[i].textContent;const n=parseFloat(s);return isNaN(n)?s:n};\
const rows=[...t.tBodies[0].rows].sort((a,b)=>{const x=key(a),y=key(b);\
const c=typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y));return down?-c:c});\
rows.forEach(r=>t.tBodies[0].appendChild(r))}});";

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
    let body = html! {
        p {
            a href={ "/runs/" (id) } { "run " (id) } " (" (run.name) "): " (jobs.len())
            " evaluations, held-out re-walks marked. Click a column to sort; type to filter."
        }
        p { input #filter placeholder="filter rows" size="40"; }
        table #trials {
            thead {
                tr {
                    th { "evaluation" }
                    th.num { (units.title) }
                    @for name in &names { th.num { (name) } }
                    th { "host" } th.num { "seconds" } th { "state" } th { "error" }
                }
            }
            tbody {
                @for job in &jobs {
                    tr data-job=(job.id) {
                        td { a href={ "/jobs/" (job.id) } { (evaluation(job)) } }
                        td.num { (shown(units, job.fitness())) }
                        @for (_, v) in &job.request.job.parameters { td.num { (format!("{v:.4}")) } }
                        td { (job.host) }
                        td.num { (seconds(job)) }
                        td { (job.state.as_str()) }
                        td.err { (job.error) }
                    }
                }
            }
        }
        (script(TABLE_SCRIPT))
    };
    Ok(page(&format!("Run {id}: every evaluation"), body))
}

/// An objective as a job's page names it: as a view names a task of its
/// own (a planning task by what it builds and how, not as its JSON), else
/// its text; and whether a view named it.
fn named_objective(views: &[&Arc<dyn JobView>], objective: &Objective) -> (String, bool) {
    match views.iter().find_map(|v| v.describe_objective(objective)) {
        Some(said) => (said, true),
        None => (objective.to_string(), false),
    }
}

pub(super) async fn job_page(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Html<String>, PageError> {
    let job = app.job(id).await?;
    let units = Units::of(std::iter::once(&job));
    let request = &job.request.job;
    let views: Vec<&Arc<dyn JobView>> = app
        .options
        .job_views
        .iter()
        .filter(|v| usable(v.name()))
        .collect();
    let (objective, a_task) = named_objective(&views, &request.objective);
    let mut rows: Vec<(&str, String)> = vec![
        ("run", job.run_id.to_string()),
        ("evaluation", evaluation(&job)),
        ("state", job.state.as_str().to_owned()),
        ("host", job.host.clone()),
        ("attempts", job.attempts.to_string()),
        ("seconds on the host", seconds(&job)),
        ("objective", objective),
    ];
    // A planning job, or any task a view names, is no walk.
    let planning = job.outcome.as_ref().is_some_and(|o| o.plan().is_some()) || a_task;
    if planning {
        rows.push((
            "start (seed of the random start)",
            request.spec.seed.to_string(),
        ));
    } else {
        rows.push(("start (oscillator seed)", request.spec.seed.to_string()));
        rows.push((
            "walk",
            format!(
                "{} s warm-up, {} s measured",
                request.spec.warmup, request.spec.measure
            ),
        ));
        // A run over worlds: the world this walk was drawn into.
        if !request.spec.world.is_nominal() {
            rows.push((
                "world",
                request.spec.world.describe(request.spec.ground_friction),
            ));
        }
    }
    for (name, v) in &request.parameters {
        rows.push(("parameter", format!("{name} = {v}")));
    }
    if let Some(o) = &job.outcome {
        rows.push((
            "value",
            format!("{}{}", shown(units, Some(o.fitness())), units.suffix),
        ));
        if let Outcome::Plan(p) = o {
            rows.push((
                "build",
                format!(
                    "{}: {} of {} seeds filled in {} rounds, {} moves, {} collisions{}",
                    if p.built { "built" } else { "not built" },
                    p.filled,
                    p.seeds,
                    p.rounds,
                    p.moves,
                    p.collisions,
                    if p.deadlock { ", deadlocked" } else { "" }
                ),
            ));
            rows.push((
                "planning time",
                format!("{:.1} ms", p.wall.as_secs_f64() * 1e3),
            ));
        } else if let Outcome::Walk(o) = o {
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
    }
    if !job.error.is_empty() {
        rows.push(("error", job.error.clone()));
    }
    let spec = serde_json::to_string_pretty(&request.spec).map_err(internal)?;
    let body = html! {
        table #job {
            @for (name, value) in &rows { tr { th { (name) } td { (value) } } }
        }
        h2 { "Its evaluation spec" }
        pre #spec { (spec) }
        @if app.options.replay.is_some() && request.gait.is_some() {
            p { a #replay href={ "/jobs/" (id) "/replay" } { "see it walk (3-D replay)" } }
        }
        @for view in views.iter().filter(|v| v.shows(&job)) {
            p { a id=(view.name()) href={ "/jobs/" (id) "/" (view.name()) } { (view.link_text()) } }
        }
        @if job.run_id > 0 {
            p { a href={ "/runs/" (job.run_id) "/trials" } { "every evaluation of run " (job.run_id) } }
        }
    };
    Ok(page(&format!("Job {id}"), body))
}
