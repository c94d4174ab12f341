//! The organizer-wide pages beside the runs: its hosts, its job queue,
//! the lifelong gaits database, and `/metrics` for scrapers.

use std::fmt::Write as _;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::{App, PageError, Units, internal, page, script};
use crate::model::{Job, JobFilter, JobState};

pub(super) async fn hosts_page(State(app): State<App>) -> Html<String> {
    let since = app.organizer.scheduler.started();
    let minutes = since.elapsed().as_secs_f64() / 60.0;
    let hosts = app.organizer.scheduler.hosts();
    page(
        "Hosts",
        html! {
            table #hosts {
                tr {
                    th { "id" } th { "name" } th { "address" } th { "backend" } th { "state" }
                    th { "current job" } th { "last heartbeat" } th.num { "evaluations" }
                    th.num { "failures" } th.num { "per minute" }
                }
                @for h in &hosts {
                    tr data-host=(h.name) {
                        td { (h.id) }
                        td { (h.name) }
                        td { (h.address) }
                        td {
                            (h.backend.map_or("unknown", |k| k.as_str()))
                            @if !h.robot.is_empty() { " (" (h.robot) ")" }
                        }
                        // A read-only view hears no heartbeats, and the
                        // store keeps none: its hosts are not live, not down.
                        @if app.options.read_only {
                            td.recorded { "not live" }
                        } @else {
                            td class=(h.state.as_str()) { (h.state.as_str()) }
                        }
                        td {
                            @if h.current_job > 0 {
                                a href={ "/jobs/" (h.current_job) } { (h.current_job) }
                            } @else { "–" }
                        }
                        @if app.options.read_only {
                            td { "not live (a read-only view)" }
                        } @else {
                            td { (format!("{:.1} s ago", h.last_seen.as_secs_f64())) }
                        }
                        td.num { (h.evaluations) }
                        td.num { (h.failures) }
                        td.num {
                            (format!("{:.1}", if minutes > 0.0 { h.evaluations as f64 / minutes } else { 0.0 }))
                        }
                    }
                }
            }
            (script("reload.js"))
        },
    )
}

#[derive(Deserialize)]
pub(super) struct JobsQuery {
    run: Option<u64>,
    state: Option<String>,
    /// Show jobs with ids below this (newest first).
    before: Option<u64>,
    after: Option<u64>,
}

const JOBS_PAGE: usize = 50;

pub(super) async fn jobs_page(
    State(app): State<App>,
    Query(q): Query<JobsQuery>,
) -> Result<Html<String>, PageError> {
    let state = q.state.as_deref().filter(|s| !s.is_empty());
    let states = match state {
        None => Vec::new(),
        Some(s) => vec![JobState::parse(s).ok_or_else(|| {
            PageError(StatusCode::BAD_REQUEST, format!("unknown job state {s:?}"))
        })?],
    };
    // One more than a page tells whether there are older ones.
    let filter = JobFilter {
        run_id: q.run,
        states,
        after_id: q.after.unwrap_or(0),
        before_id: Some(q.before.unwrap_or(u64::MAX)),
        limit: Some(JOBS_PAGE as u32 + 1),
    };
    let mut jobs = app
        .organizer
        .scheduler
        .list_jobs(filter, true)
        .await
        .map_err(internal)?;
    let more = jobs.len() > JOBS_PAGE;
    jobs.truncate(JOBS_PAGE);
    let fitness = |j: &Job| {
        j.outcome.as_ref().map_or("–".into(), |o| {
            let units = Units::of(std::iter::once(j));
            // cm/s to the hundredth; a bare value as precise as before.
            let digits = if units == Units::VELOCITY { 2 } else { 5 };
            format!("{:.digits$}{}", o.fitness() * units.factor, units.suffix)
        })
    };
    let mut older = format!("/jobs?before={}", jobs.last().map_or(0, |j| j.id));
    if let Some(run) = q.run {
        let _ = write!(older, "&run={run}");
    }
    if let Some(state) = state {
        let _ = write!(older, "&state={state}");
    }
    let body = html! {
        form method="get" {
            "run " input name="run" size="5" value=[q.run];
            " state "
            select name="state" {
                option value="" { "any" }
                @for s in JobState::ALL {
                    option selected[state == Some(s.as_str())] { (s.as_str()) }
                }
            }
            " " button { "filter" }
        }
        table #jobs {
            tr {
                th { "id" } th { "run" } th { "index" } th { "state" } th { "host" }
                th.num { "attempts" } th.num { "fitness" } th { "error" }
            }
            @for j in &jobs {
                tr {
                    td { a href={ "/jobs/" (j.id) } { (j.id) } }
                    td {
                        @if j.run_id > 0 { a href={ "/runs/" (j.run_id) } { (j.run_id) } } @else { "–" }
                    }
                    td { (j.seq) }
                    td { (j.state.as_str()) }
                    td { (j.host) }
                    td.num { (j.attempts) }
                    td.num { (fitness(j)) }
                    td.err { (j.error.chars().take(120).collect::<String>()) }
                }
            }
        }
        @if more {
            p { a #older href=(older) { "older jobs" } }
        }
    };
    Ok(page("Jobs", body))
}

pub(super) async fn gaits_page(State(app): State<App>) -> Result<Html<String>, PageError> {
    let store = app.organizer.scheduler.store().clone();
    let gaits = store
        .read_async(move |s| s.gaits(None))
        .await
        .map_err(internal)?;
    let body = html! {
        p {
            "Lifelong learning's gaits database (thesis 7.8.2): each gait a robot \
             learnt or switched to, for the body and orientation it walked in, with the \
             velocity of every window the robot walked it (mean ± standard error). It \
             fills while " code { "yamor lifelong" } " runs; plain optimization runs do \
             not write it."
        }
        table #gaits {
            tr {
                th { "id" } th { "body" } th { "orientation" }
                th.num { "velocity over the robot's windows" }
                th { "predecessors (symptom that switched)" }
            }
            @for g in &gaits {
                tr {
                    td { (g.id) }
                    td { (g.body) }
                    td { (g.orientation) }
                    td.num { (g.velocity_text()) }
                    td {
                        @for (k, (id, symptom)) in g.predecessors.iter().enumerate() {
                            @if k > 0 { ", " }
                            (id) " (" (symptom) ")"
                        }
                    }
                }
            }
        }
    };
    Ok(page("Gaits", body))
}

/// The metrics as OpenMetrics text to a scraper that asks for it
/// (Prometheus does, in its `Accept`); to anyone else (a browser, an older
/// scraper) Prometheus' classic text format 0.0.4, which `text/plain`
/// means to a scraper, and which a browser shows instead of downloading.
pub(super) async fn metrics(State(app): State<App>, headers: axum::http::HeaderMap) -> Response {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let text = app.organizer.runs.metrics_text();
    if openmetrics {
        (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            crate::metrics::classic_text(&text),
        )
            .into_response()
    }
}
