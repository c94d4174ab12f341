//! `/compare?run=1&run=2`: chosen runs side by side. Their best-so-far
//! curves overlaid against evaluations and against wall time (which tells
//! a run that is cheap per evaluation from one that is quick to a good
//! gait), and their settings in one table, a row per setting: what they
//! were asked differently is marked and said in a sentence; seeds and
//! outcomes are shown, never counted as a difference of intent.

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
        x: (0.0, x_max.max(1e-12)),
        y: (y_lo, y_lo + span),
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

/// What a row of the settings table says about the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// What was asked (robot, optimizer, budget, settings): a difference
    /// is a difference of intent, marked and listed.
    Intent,
    /// The seed: shown, never counted as a difference of intent (a batch
    /// counts seeds up).
    Seed,
    /// What happened (state, evaluations, figures): shown, not marked.
    Outcome,
}

/// Whether runs differ in what they were asked: among the runs that have
/// the value at all (a setting of another optimizer is not a difference).
fn differs(values: &[Option<String>]) -> bool {
    let had: BTreeSet<&String> = values.iter().flatten().collect();
    had.len() > 1
}

/// One row of the settings table: a name and each run's value (`–` where
/// a run has none); an intent row whose runs differ is marked.
fn setting_row(name: &str, values: &[Option<String>], row: Row) -> Markup {
    let class = match row {
        Row::Intent if differs(values) => Some("differs"),
        Row::Seed => Some("seed"),
        Row::Intent | Row::Outcome => None,
    };
    html! {
        tr class=[class] {
            th { (name) }
            @for v in values { td { (v.as_deref().unwrap_or("–")) } }
        }
    }
}

/// The rows of intent the runs differ in, said in a sentence.
fn differences(rows: &[(String, Vec<Option<String>>)]) -> String {
    let differing: Vec<&str> = rows
        .iter()
        .filter(|(_, values)| differs(values))
        .map(|(name, _)| name.as_str())
        .collect();
    if differing.is_empty() {
        "These runs were asked the same, seeds aside: how far their figures differ is the seed's doing.".to_owned()
    } else {
        format!(
            "These runs differ in what they were asked by: {} (seeds aside).",
            differing.join(", ")
        )
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
    let each = |f: &dyn Fn(&Run) -> Option<String>| -> Vec<Option<String>> {
        chosen_runs.iter().map(|(run, _)| f(run)).collect()
    };
    let names: BTreeSet<&String> = chosen_runs
        .iter()
        .flat_map(|(run, _)| run.settings.keys())
        .collect();
    let mut intent: Vec<(String, Vec<Option<String>>)> = vec![
        (
            "robot".into(),
            each(&|r| (!r.robot.is_empty()).then(|| r.robot.clone())),
        ),
        ("optimizer".into(), each(&|r| Some(r.optimizer.clone()))),
        (
            "budget".into(),
            each(&|r| Some(r.max_evaluations.to_string())),
        ),
        (
            "direction".into(),
            each(&|r| r.gait.then(|| r.direction.name().to_owned())),
        ),
    ];
    for name in names {
        intent.push((name.clone(), each(&|r| r.settings.get(name).cloned())));
    }
    let outcome: Vec<(&str, Vec<Option<String>>)> = vec![
        ("name", each(&|r| Some(r.name.clone()))),
        ("state", each(&|r| Some(r.state.as_str().to_owned()))),
        ("evaluations", each(&|r| Some(r.evaluations.to_string()))),
        ("best", each(&|r| Some(r.best_text()))),
        ("the given gait", each(&|r| r.reference.map(|s| s.cm_s()))),
        ("elapsed", each(&|r| Some(format!("{:.0} s", r.elapsed_s)))),
    ];
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
        p #differences { (differences(&intent)) }
        table #settings {
            tr {
                th {}
                @for (run, _) in &chosen_runs { th { "run " (run.id) } }
            }
            @for (name, values) in &intent { (setting_row(name, values, Row::Intent)) }
            (setting_row("seed", &each(&|r| Some(r.seed.to_string())), Row::Seed))
            @for (name, values) in &outcome { (setting_row(name, values, Row::Outcome)) }
        }
        p { small {
            "Marked: what the runs were asked differently (a setting only some runs' optimizer has "
            "is not a difference). Seeds and what happened are shown, not marked."
        } }
    };
    Ok(page("Compare runs", body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_runs_were_asked_differently_is_a_difference() {
        let some = |v: &str| Some(v.to_owned());
        // A setting only one run's optimizer has is not a difference.
        assert!(!differs(&[some("24"), None]));
        assert!(differs(&[some("10"), some("20")]));
        assert!(!differs(&[some("pso"), some("pso")]));
        let rows = vec![
            ("optimizer".to_owned(), vec![some("cmaes"), some("pso")]),
            ("population".to_owned(), vec![some("24"), None]),
            ("particles".to_owned(), vec![None, some("10")]),
        ];
        assert_eq!(
            differences(&rows),
            "These runs differ in what they were asked by: optimizer (seeds aside)."
        );
        let same = vec![("particles".to_owned(), vec![some("10"), some("10")])];
        assert!(differences(&same).contains("asked the same, seeds aside"));
        let row = setting_row("seed", &[some("1"), some("2")], Row::Seed).into_string();
        assert!(row.starts_with("<tr class=\"seed\">"), "{row}");
    }

    #[test]
    fn a_query_names_each_run_once_and_at_most_ten() {
        assert_eq!(chosen(Some("run=3&run=1&run=3&x=9")).unwrap(), [3, 1]);
        assert!(chosen(None).unwrap().is_empty());
        assert!(chosen(Some("run=abc")).is_err());
        let many: Vec<String> = (1..=11).map(|i| format!("run={i}")).collect();
        assert!(chosen(Some(&many.join("&"))).is_err());
    }
}
