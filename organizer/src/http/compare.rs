//! `/compare?run=1&run=2`: chosen runs side by side. Their best-so-far
//! curves overlaid against evaluations and against wall time (which tells
//! a run that is cheap per evaluation from one that is quick to a good
//! gait), and their settings in one table, a row per setting, differences
//! marked.

use std::collections::BTreeSet;

use axum::extract::{RawQuery, State};
use axum::response::Html;
use maud::{Markup, html};

use super::plot::{Axes, points};
use super::{App, PageError, Units, best_so_far, page, run_of, run_values};
use crate::model::Run;

/// Runs one page compares at most: beyond it the curves cannot be told apart.
pub(super) const MAX_COMPARED: usize = 10;

/// One colour per run, in order; distinct also for red-green blindness.
const COLOURS: [&str; MAX_COMPARED] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// The run ids of a query: each `run=ID`, once, in order.
fn chosen(query: Option<&str>) -> Result<Vec<u64>, PageError> {
    let mut ids = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let Some(("run", value)) = pair.split_once('=') else {
            continue;
        };
        let id: u64 = value.parse().map_err(|_| {
            PageError(
                axum::http::StatusCode::BAD_REQUEST,
                format!("run={value}: not a run id"),
            )
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.len() > MAX_COMPARED {
        return Err(PageError(
            axum::http::StatusCode::BAD_REQUEST,
            format!(
                "{} runs chosen: a comparison shows at most {MAX_COMPARED}",
                ids.len()
            ),
        ));
    }
    Ok(ids)
}

/// A run's curve: its best so far after each evaluation, and after each
/// second of wall time since it started (what it had found by then).
struct Curves {
    by_evaluation: Vec<(f64, f64)>,
    by_time: Vec<(f64, f64)>,
}

fn curves(run: &Run, results: &[(crate::model::Job, f64)], units: Units) -> Curves {
    let values: Vec<f64> = results.iter().map(|(_, v)| *v).collect();
    let by_evaluation = best_so_far(&values)
        .into_iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| ((i + 1) as f64, v * units.factor))
        .collect();
    let mut timed: Vec<(i64, f64)> = results
        .iter()
        .map(|(job, v)| (job.finished_ms, *v))
        .collect();
    timed.sort_by_key(|(at, _)| *at);
    let values: Vec<f64> = timed.iter().map(|(_, v)| *v).collect();
    let by_time = best_so_far(&values)
        .into_iter()
        .zip(&timed)
        .filter(|(v, _)| v.is_finite())
        .map(|(v, (at, _))| {
            (
                (at - run.started_ms).max(0) as f64 / 1000.0,
                v * units.factor,
            )
        })
        .collect();
    Curves {
        by_evaluation,
        by_time,
    }
}

/// Step curves of several series on shared axes, with titles.
fn overlay(id: &str, series: &[(&str, &[(f64, f64)])], x_title: &str, y_title: &str) -> Markup {
    let (w, h, pad) = (720.0, 300.0, 48.0);
    let (mut x_max, mut y_lo, mut y_hi) = (0.0_f64, f64::MAX, f64::MIN);
    for &(x, y) in series.iter().flat_map(|(_, s)| s.iter()) {
        x_max = x_max.max(x);
        y_lo = y_lo.min(y);
        y_hi = y_hi.max(y);
    }
    let span = (y_hi - y_lo).max(1e-12);
    let x = |v: f64| pad + v / x_max.max(1e-12) * (w - 2.0 * pad);
    let y = |v: f64| h - pad - (v - y_lo) / span * (h - 2.0 * pad);
    // A step curve: the best so far holds until the next improvement.
    let steps = |curve: &[(f64, f64)]| {
        let mut path = Vec::with_capacity(curve.len() * 2);
        let mut last_y = None;
        for &(px, py) in curve {
            if let Some(ly) = last_y {
                path.push((x(px), y(ly)));
            }
            path.push((x(px), y(py)));
            last_y = Some(py);
        }
        points(path)
    };
    let axes = Axes {
        width: w,
        height: h,
        pad,
        y_lo: format!("{y_lo:.4}"),
        y_hi: format!("{y_hi:.4}"),
        // Seconds of a short run would all read 0.
        x_end: if x_max < 10.0 {
            format!("{x_max:.1}")
        } else {
            format!("{x_max:.0}")
        },
        x_title,
        y_title,
    };
    html! {
        svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) } {
            @if y_lo > y_hi {
                text x="20" y="40" { "no results yet" }
            } @else {
                (axes.draw())
                @for (k, (label, curve)) in series.iter().enumerate() {
                    polyline.curve data-run=(label) fill="none" stroke=(COLOURS[k % COLOURS.len()])
                        stroke-width="2" points=(steps(curve)) {}
                }
            }
        }
    }
}

/// One row of the settings table: a setting and each run's value of it;
/// the row is marked when the runs differ.
fn setting_row(name: &str, values: &[String]) -> Markup {
    let differs = values.windows(2).any(|w| w[0] != w[1]);
    html! {
        tr class=[differs.then_some("differs")] {
            th { (name) }
            @for v in values { td { (v) } }
        }
    }
}

pub(super) async fn compare_page(
    State(app): State<App>,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, PageError> {
    let ids = chosen(query.as_deref())?;
    if ids.is_empty() {
        return Ok(page(
            "Compare runs",
            html! {
                p {
                    "Tick the runs to compare on the " a href="/runs" { "runs page" } ", then "
                    em { "compare" } " (or ask for " code { "/compare?run=1&run=2" } ")."
                }
            },
        ));
    }
    let runs = &app.organizer.runs;
    let mut chosen_runs = Vec::new();
    for id in &ids {
        let run = run_of(runs, *id)?;
        let results = run_values(runs, &run).await?;
        chosen_runs.push((run, results));
    }
    let units = Units::of(
        chosen_runs
            .iter()
            .flat_map(|(_, r)| r.iter().map(|(j, _)| j)),
    );
    let drawn: Vec<(String, Curves)> = chosen_runs
        .iter()
        .map(|(run, results)| (run.id.to_string(), curves(run, results, units)))
        .collect();
    let by_evaluation: Vec<(&str, &[(f64, f64)])> = drawn
        .iter()
        .map(|(id, c)| (id.as_str(), c.by_evaluation.as_slice()))
        .collect();
    let by_time: Vec<(&str, &[(f64, f64)])> = drawn
        .iter()
        .map(|(id, c)| (id.as_str(), c.by_time.as_slice()))
        .collect();
    let title = format!("best so far, {}", units.title);
    let each = |f: &dyn Fn(&Run) -> String| -> Vec<String> {
        chosen_runs.iter().map(|(run, _)| f(run)).collect()
    };
    let names: BTreeSet<&String> = chosen_runs
        .iter()
        .flat_map(|(run, _)| run.settings.keys())
        .collect();
    let body = html! {
        p #legend {
            @for (k, (run, _)) in chosen_runs.iter().enumerate() {
                span style={ "color:" (COLOURS[k % COLOURS.len()]) } { "■" } " "
                a href={ "/runs/" (run.id) } { "run " (run.id) " " (run.name) }
                "  "
            }
        }
        p { small {
            "Curves: the best single walk so far (provisional); " em { "best" }
            " below: each run's reported figure (held-out, once earned)."
        } }
        h2 { "Against evaluations" }
        (overlay("by-evaluation", &by_evaluation, "evaluation", &title))
        h2 { "Against wall time" }
        (overlay("by-time", &by_time, "seconds since the run started", &title))
        h2 { "Settings" }
        table #settings {
            tr {
                th {}
                @for (run, _) in &chosen_runs { th { "run " (run.id) } }
            }
            (setting_row("name", &each(&|r| r.name.clone())))
            (setting_row("robot", &each(&|r| if r.robot.is_empty() { "–".into() } else { r.robot.clone() })))
            (setting_row("optimizer", &each(&|r| r.optimizer.clone())))
            (setting_row("seed", &each(&|r| r.seed.to_string())))
            (setting_row("state", &each(&|r| r.state.as_str().to_owned())))
            (setting_row("evaluations", &each(&|r| format!("{} of {}", r.evaluations, r.max_evaluations))))
            (setting_row("best", &each(&|r| r.best_text())))
            (setting_row("the given gait", &each(&|r| r.reference.map_or("–".into(), |s| s.cm_s()))))
            (setting_row("elapsed", &each(&|r| format!("{:.0} s", r.elapsed_s))))
            @for name in names {
                (setting_row(name, &each(&|r| r.settings.get(name).cloned().unwrap_or_else(|| "–".into()))))
            }
        }
        p { small { "Rows where the runs differ are marked." } }
    };
    Ok(page("Compare runs", body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_each_run_once_and_at_most_ten() {
        assert_eq!(chosen(Some("run=3&run=1&run=3&x=9")).unwrap(), [3, 1]);
        assert!(chosen(None).unwrap().is_empty());
        assert!(chosen(Some("run=abc")).is_err());
        let many: Vec<String> = (1..=11).map(|i| format!("run={i}")).collect();
        assert!(chosen(Some(&many.join("&"))).is_err());
    }
}
