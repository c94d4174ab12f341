//! Every evaluation of a run as a table (`/runs/{id}/trials`: paged,
//! sorted and filtered on the server, [`super::trial_query`]; the matching
//! set exported whole as `trials.csv` or `trials.json`), each row linking to its job's whole
//! record (`/jobs/{id}`: request, start, what was measured, error, and
//! links to the views contributed for it, [`super::views`]).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{Html, IntoResponse, Response};
use maud::html;
use serde::{Deserialize, Serialize};
use yamor_core::evaluation::{Objective, Outcome};

use super::trial_query::{Column, Filter, PAGE_ROWS, QueryError, Row, Sort};
use super::views::{JobView, usable};
use super::{App, PageError, Units, internal, page, run_of};
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

/// Seconds the job took on its host, once it has started and ended.
fn job_seconds(job: &Job) -> Option<f64> {
    (job.started_ms > 0 && job.finished_ms >= job.started_ms)
        .then(|| (job.finished_ms - job.started_ms) as f64 / 1000.0)
}

fn seconds(job: &Job) -> String {
    job_seconds(job).map_or("–".into(), |s| format!("{s:.2}"))
}

/// What the trials table was asked: `?q=velocity > 10&sort=value&order=desc&page=2`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(super) struct TrialsQuery {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    q: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    sort: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    order: String,
    #[serde(default, skip_serializing_if = "is_first")]
    page: usize,
}

fn is_first(page: &usize) -> bool {
    *page == 0
}

impl TrialsQuery {
    /// This query's link with other sort or page.
    fn link(&self, path: &str, change: impl FnOnce(&mut TrialsQuery)) -> String {
        let mut other = self.clone();
        change(&mut other);
        let query = serde_urlencoded::to_string(&other).unwrap_or_default();
        if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        }
    }
}

/// A run's evaluations as the query leaves them: filtered and sorted, all
/// of them (a page is cut from it).
struct Table {
    units: Units,
    names: Vec<String>,
    /// Evaluations the run has, before the filter.
    total: usize,
    rows: Vec<(Job, Row)>,
    sort: Sort,
}

/// Run `id`'s evaluations as `query` asks; `Err` inside when the query
/// does not read (the page says why).
async fn table(
    app: &App,
    id: u64,
    query: &TrialsQuery,
) -> Result<Result<Table, QueryError>, PageError> {
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
    let parsed = Filter::parse(&query.q, &names)
        .and_then(|f| Ok((f, Sort::parse(&query.sort, query.order != "asc", &names)?)));
    let (filter, sort) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return Ok(Err(e)),
    };
    let total = jobs.len();
    let mut rows: Vec<(Job, Row)> = jobs
        .into_iter()
        .map(|job| {
            let row = row_of(&job, units);
            (job, row)
        })
        .filter(|(_, row)| filter.holds(row))
        .collect();
    sort.apply(&mut rows, |(_, row)| row);
    Ok(Ok(Table {
        units,
        names,
        total,
        rows,
        sort,
    }))
}

/// A job as the query sees it, in the table's units.
fn row_of(job: &Job, units: Units) -> Row {
    let value = job
        .fitness()
        .filter(|v| v.is_finite())
        .map(|v| v * units.factor);
    Row {
        evaluation: (job.seq + 1) as f64,
        value,
        parameters: job.request.job.parameters.iter().map(|p| p.1).collect(),
        host: job.host.clone(),
        seconds: job_seconds(job),
        state: job.state.as_str().to_owned(),
        error: job.error.clone(),
        text: format!(
            "{} {} {} {} {}",
            evaluation(job),
            shown(units, job.fitness()),
            job.host,
            job.state.as_str(),
            job.error
        ),
    }
}

pub(super) async fn trials_page(
    State(app): State<App>,
    Path(id): Path<u64>,
    Query(query): Query<TrialsQuery>,
) -> Result<Response, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let path = format!("/runs/{id}/trials");
    let form = html! {
        form #query method="get" action=(path) {
            input name="q" value=(query.q) size="60"
                placeholder="velocity > 10, amplitude_0 <= 0.5, state = done";
            @if !query.sort.is_empty() { input type="hidden" name="sort" value=(query.sort); }
            @if !query.order.is_empty() { input type="hidden" name="order" value=(query.order); }
            " " button #filter-button { "filter" }
        }
        p { small {
            "Conditions joined by , or and: a column (velocity, a parameter, evaluation, seconds) "
            "with < <= > >= = != and a number in the units shown; host, state or error with = != or ~ (contains); "
            "words alone match anywhere in a row."
        } }
    };
    let table = match table(&app, id, &query).await? {
        Ok(table) => table,
        Err(e) => {
            let body = html! {
                p { a href={ "/runs/" (id) } { "run " (id) } " (" (run.name) ")" }
                (form)
                p.err #query-error { (e.to_string()) }
            };
            return Ok((
                StatusCode::BAD_REQUEST,
                page(&format!("Run {id}: every evaluation"), body),
            )
                .into_response());
        }
    };
    let pages = table.rows.len().div_ceil(PAGE_ROWS).max(1);
    let page_no = query.page.min(pages - 1);
    let shown_rows = &table.rows[(page_no * PAGE_ROWS).min(table.rows.len())
        ..((page_no + 1) * PAGE_ROWS).min(table.rows.len())];
    let export = |format: &str| query.link(&format!("{path}.{format}"), |q| q.page = 0);
    // A header sorts by its column; again, the other way. The value
    // starts best first, every other column first to last.
    let header = |column: Column, label: &str, class: &str| {
        let name = column.name(&table.names);
        let current = table.sort.column == column && !query.sort.is_empty();
        let descending = if current {
            !table.sort.descending
        } else {
            column == Column::Value
        };
        let href = query.link(&path, |q| {
            q.sort = name.clone();
            q.order = if descending { "desc" } else { "asc" }.into();
            q.page = 0;
        });
        let mark = match (current, table.sort.descending) {
            (false, _) => "",
            (true, true) => " ▼",
            (true, false) => " ▲",
        };
        html! { th class=(class) data-column=(name) { a href=(href) { (label) (mark) } } }
    };
    let body = html! {
        p {
            a href={ "/runs/" (id) } { "run " (id) } " (" (run.name) "): "
            span #matching { (table.rows.len()) } " of " (table.total)
            " evaluations" @if !query.q.is_empty() { " match" } ", held-out re-walks marked; page "
            span #page { (page_no + 1) } " of " (pages) " (" (PAGE_ROWS) " rows a page). "
            "Export what matches: " a #export-csv href=(export("csv")) { "CSV" } " · "
            a #export-json href=(export("json")) { "JSON" }
        }
        (form)
        table #trials {
            thead {
                tr {
                    (header(Column::Evaluation, "evaluation", ""))
                    (header(Column::Value, table.units.title, "num"))
                    @for (i, name) in table.names.iter().enumerate() { (header(Column::Parameter(i), name, "num")) }
                    (header(Column::Host, "host", ""))
                    (header(Column::Seconds, "seconds", "num"))
                    (header(Column::State, "state", ""))
                    (header(Column::Error, "error", ""))
                }
            }
            tbody {
                @for (job, _) in shown_rows {
                    tr data-job=(job.id) {
                        td { a href={ "/jobs/" (job.id) } { (evaluation(job)) } }
                        td.num { (shown(table.units, job.fitness())) }
                        @for (_, v) in &job.request.job.parameters { td.num { (format!("{v:.4}")) } }
                        td { (job.host) }
                        td.num { (seconds(job)) }
                        td { (job.state.as_str()) }
                        td.err { (job.error) }
                    }
                }
            }
        }
        p {
            @if page_no > 0 {
                a #prev href=(query.link(&path, |q| q.page = page_no - 1)) { "← previous" } " "
            }
            @if page_no + 1 < pages {
                a #next href=(query.link(&path, |q| q.page = page_no + 1)) { "next →" }
            }
        }
    };
    Ok(page(&format!("Run {id}: every evaluation"), body).into_response())
}

/// The evaluations a query leaves, whole, for an export; a query that
/// does not read is answered 400 with why.
async fn matching(app: &App, id: u64, query: &TrialsQuery) -> Result<Table, PageError> {
    run_of(&app.organizer.runs, id)?;
    table(app, id, query)
        .await?
        .map_err(|e| PageError(StatusCode::BAD_REQUEST, e.to_string()))
}

/// `/runs/{id}/trials.csv`: what the table's `q`, `sort` and `order` leave,
/// every page.
pub(super) async fn trials_csv(
    State(app): State<App>,
    Path(id): Path<u64>,
    Query(query): Query<TrialsQuery>,
) -> Result<Response, PageError> {
    let table = matching(&app, id, &query).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["evaluation".into(), "job".into(), table.units.title.into()];
    header.extend(table.names.iter().cloned());
    header.extend(["host", "seconds", "state", "error"].map(String::from));
    out.write_record(&header).map_err(internal)?;
    for (job, row) in &table.rows {
        let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let mut record = vec![evaluation(job), job.id.to_string(), number(row.value)];
        record.extend(row.parameters.iter().map(f64::to_string));
        record.extend([
            row.host.clone(),
            number(row.seconds),
            row.state.clone(),
            row.error.clone(),
        ]);
        out.write_record(&record).map_err(internal)?;
    }
    let bytes = out.into_inner().map_err(internal)?;
    Ok(([(CONTENT_TYPE, "text/csv; charset=utf-8")], bytes).into_response())
}

/// `/runs/{id}/trials.json`: the same as [`trials_csv`], as JSON.
pub(super) async fn trials_json(
    State(app): State<App>,
    Path(id): Path<u64>,
    Query(query): Query<TrialsQuery>,
) -> Result<Response, PageError> {
    let table = matching(&app, id, &query).await?;
    let rows: Vec<serde_json::Value> = table
        .rows
        .iter()
        .map(|(job, row)| {
            let parameters: serde_json::Map<String, serde_json::Value> = table
                .names
                .iter()
                .cloned()
                .zip(row.parameters.iter().map(|v| serde_json::json!(v)))
                .collect();
            serde_json::json!({
                "evaluation": evaluation(job),
                "job": job.id,
                "value": row.value,
                "parameters": parameters,
                "host": row.host,
                "seconds": row.seconds,
                "state": row.state,
                "error": row.error,
            })
        })
        .collect();
    let body = serde_json::json!({
        "run": id,
        "units": table.units.title,
        "matching": table.rows.len(),
        "total": table.total,
        "trials": rows,
    });
    Ok(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
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
