//! `/runs`: every run at a glance, newest first, a page at a time, with
//! its best-so-far sparkline; where runs are ticked for `/compare`.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Html;
use maud::{Markup, html};
use serde::Deserialize;

use super::{App, PageError, ago, best_so_far, compare, internal, page, plot, progress, script};
use crate::model::{Run, RunState};

/// A small SVG polyline of best-so-far values.
fn sparkline(values: &[f64], width: f64, height: f64) -> Markup {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let span = (hi - lo).max(1e-12);
    let n = finite.len().max(2) as f64 - 1.0;
    let line = plot::points(finite.iter().enumerate().map(|(i, v)| {
        (
            i as f64 / n * width,
            height - 2.0 - (v - lo) / span * (height - 4.0),
        )
    }));
    html! {
        svg width=(width) height=(height) {
            @if finite.len() >= 2 {
                polyline fill="none" stroke="#36c" stroke-width="1.5" points=(line) {}
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct RunsQuery {
    /// Show runs with ids below this (newest first).
    before: Option<u64>,
}

const RUNS_PAGE: usize = 50;

pub(super) async fn runs_page(
    State(app): State<App>,
    Query(q): Query<RunsQuery>,
) -> Result<Html<String>, PageError> {
    let mut list = app.organizer.runs.list();
    list.retain(|r| q.before.is_none_or(|before| r.id < before));
    list.sort_by_key(|r| std::cmp::Reverse(r.id));
    let more = list.len() > RUNS_PAGE;
    list.truncate(RUNS_PAGE);
    // One statement for the page's sparklines: a query per run made a page
    // of thousands of runs take seconds.
    let ids: Vec<u64> = list.iter().map(|r| r.id).collect();
    let told = app
        .organizer
        .scheduler
        .store()
        .read_async(move |s| s.told_velocities(&ids))
        .await
        .map_err(internal)?;
    // Per run, in proposal order: tell_seq and fitness.
    let mut told_by_run: HashMap<u64, Vec<(u64, f64)>> = HashMap::new();
    for (run_id, tell_seq, velocity) in told {
        told_by_run
            .entry(run_id)
            .or_default()
            .push((tell_seq, velocity));
    }
    // What a run learnt, as Run::learnt counts it (and run_values shows).
    let learnt = |r: &Run| -> Vec<f64> {
        told_by_run
            .get(&r.id)
            .into_iter()
            .flatten()
            .filter(|(tell_seq, _)| r.has_learnt(*tell_seq))
            .map(|(_, v)| *v)
            .collect()
    };
    let body = html! {
        p {
            a #new href="/runs/new" { "start runs" }
            " · "
            form #compare action="/compare" method="get" style="display:inline" {
                button #compare-button { "compare the ticked runs" }
            }
            " " small { "(at most " (compare::MAX_COMPARED) ")" }
        }
        table #runs {
            tr {
                th {} th { "id" } th { "name" } th { "robot" } th { "optimizer" } th { "settings" } th { "state" }
                th { "progress" } th.num { "best" } th { "best so far" } th { "started" }
                th.num { "elapsed" } th {}
            }
            @for r in &list {
                tr data-run=(r.id) {
                    td { input type="checkbox" name="run" value=(r.id) form="compare"; }
                    td { a href={ "/runs/" (r.id) } { (r.id) } }
                    td { a href={ "/runs/" (r.id) } { (r.name) } }
                    td.robot { @if r.robot.is_empty() { "–" } @else { (r.robot) } }
                    td { (r.optimizer) }
                    td { small { @for (k, v) in &r.settings { (k) "=" (v) " " } } }
                    td { (r.state.as_str()) }
                    td { (progress(r)) }
                    td.num { (r.best_text()) }
                    td { (sparkline(&best_so_far(&learnt(r)), 120.0, 24.0)) }
                    td { (ago(r.started_ms)) }
                    td.num { (format!("{:.0} s", r.elapsed_s)) }
                    td {
                        @if r.state == RunState::Running {
                            form method="post" action={ "/runs/" (r.id) "/stop" } { button { "stop" } }
                        }
                    }
                }
            }
        }
        @if more {
            p { a #older href={ "/runs?before=" (list.last().map_or(0, |r| r.id)) } { "older runs" } }
        }
        // Reloads to follow the runs, but not while runs are being ticked.
        (script("runs.js"))
    };
    Ok(page("Runs", body))
}
