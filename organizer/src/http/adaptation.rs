//! `/runs/{id}/adaptation`: a run that adapted from another run's map
//! (`ite`), walk by walk: the map as the map page draws it with the cells
//! walked numbered in order, what the model predicted for each walk
//! (mean ± standard deviation) against what the walk gave, and every walk
//! linking to its job; `/runs/{id}/adaptation.json`, the same walks.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, html};

use super::map::{MapQuery, MapView, Mark, heat_map};
use super::{App, PageError, Units, internal, page, plot, run_of};
use crate::runs::{Adaptation, Trial};

async fn adaptation_of(app: &App, id: u64) -> Result<Adaptation, PageError> {
    run_of(&app.organizer.runs, id)?;
    app.organizer
        .runs
        .adaptation(id)
        .await
        .map_err(internal)?
        .ok_or_else(|| {
            PageError(
                StatusCode::NOT_FOUND,
                format!(
                    "run {id} adapts from no map: it names no prior run (start an ite run \
                     with prior set to a map-elites run for one)"
                ),
            )
        })
}

/// Predicted (mean line, ± one standard deviation band) against walked
/// (dots), walk by walk.
fn prediction_chart(trials: &[Trial], units: Units) -> Markup {
    let (w, h, pad) = (720.0, 300.0, 44.0);
    let f = units.factor;
    let predicted: Vec<(usize, f64, f64)> = trials
        .iter()
        .filter_map(|t| t.predicted.map(|(m, s)| (t.walk, m * f, s * f)))
        .filter(|(_, m, s)| m.is_finite() && s.is_finite())
        .collect();
    let walked: Vec<(usize, f64)> = trials
        .iter()
        .filter_map(|t| t.value.map(|v| (t.walk, v * f)))
        .filter(|(_, v)| v.is_finite())
        .collect();
    let (lo, hi) = predicted
        .iter()
        .flat_map(|&(_, m, s)| [m - s, m + s])
        .chain(walked.iter().map(|&(_, v)| v))
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let span = (hi - lo).max(1e-12);
    let n = trials.len().max(2) as f64;
    // Walk 1 at the left edge, the last at the right.
    let x = |walk: usize| pad + (walk as f64 - 1.0) / (n - 1.0) * (w - 2.0 * pad);
    let y = |v: f64| h - pad - (v - lo) / span * (h - 2.0 * pad);
    let band = plot::points(
        predicted
            .iter()
            .map(|&(k, m, s)| (x(k), y(m + s)))
            .chain(predicted.iter().rev().map(|&(k, m, s)| (x(k), y(m - s)))),
    );
    let means = plot::points(predicted.iter().map(|&(k, m, _)| (x(k), y(m))));
    let axes = plot::Axes {
        width: w,
        height: h,
        pad,
        x: (1.0, n),
        y: (lo, lo + span),
        x_title: "walk; blue: predicted before the walk (± one sd), red dots: walked",
        y_title: units.title,
    };
    html! {
        svg #prediction xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={ "0 0 " (w) " " (h) } {
            @if predicted.is_empty() && walked.is_empty() {
                text x="20" y="40" { "no walks yet" }
            } @else {
                (axes.draw())
                @if !predicted.is_empty() {
                    polygon #band points=(band) fill="#9bd" fill-opacity="0.35" stroke="none" {}
                    polyline #predicted fill="none" stroke="#36a" stroke-width="1.5" points=(means) {}
                    @for &(k, m, s) in &predicted {
                        circle.predicted cx=(plot::px(x(k))) cy=(plot::px(y(m))) r="2.5" fill="#36a" {
                            title { (format!("walk {k}: predicted {m:.4} ± {s:.4}{}", units.suffix)) }
                        }
                    }
                }
                @for &(k, v) in &walked {
                    circle.walked cx=(plot::px(x(k))) cy=(plot::px(y(v))) r="3.5" fill="#c33" {
                        title { (format!("walk {k}: walked {v:.4}{}", units.suffix)) }
                    }
                }
            }
        }
    }
}

pub(super) async fn adaptation_page(
    State(app): State<App>,
    Path(id): Path<u64>,
    Query(query): Query<MapQuery>,
) -> Result<Html<String>, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let adaptation = adaptation_of(&app, id).await?;
    let map = &adaptation.map;
    let view = MapView::of(map, &query)?;
    let units = if run.gait {
        Units::VELOCITY
    } else {
        Units::VALUE
    };
    let value = |v: f64| format!("{:.4}", v * units.factor);
    let marks: Vec<Mark> = adaptation
        .trials
        .iter()
        .filter_map(|t| {
            t.cell.map(|cell| Mark {
                cell,
                label: t.walk.to_string(),
            })
        })
        .collect();
    let prior = adaptation.prior_run;
    let body = html! {
        p {
            "run " a href={ "/runs/" (id) } { (run.name) } " · optimizer " b { (run.optimizer) }
            " · state " b { (run.state.as_str()) }
            " · adapts from the " a #prior-map href={ "/runs/" (prior) "/map" } { "map of run " (prior) }
            " (" (adaptation.elites) " elites)"
        }
        p #adaptation-summary {
            b #walks { (adaptation.trials.len()) } " walks"
            @if let Some(best) = adaptation.best() {
                " · best walked " b #best-walk { (value(best.value.unwrap_or(f64::NAN))) (units.suffix) }
                " (walk " (best.walk) ", "
                a href={ "/jobs/" (best.job_id) } { "job " (best.job_id) } ")"
            }
            " · " a href={ "/runs/" (id) "/adaptation.json" } { "the walks (JSON)" }
        }
        @if let Some(why) = &adaptation.incomplete {
            p.err #incomplete { "The replay stopped early: " (why) }
        }
        p { (view.picker(map, &format!("/runs/{id}/adaptation"))) }
        p { small { "The prior's map as its own page draws it (each square the best elite \
                     over the axes not shown); the circles are the cells walked, numbered in \
                     the order they were walked." } }
        (heat_map(map, view, &marks))
        h2 { "Predicted and walked" }
        (prediction_chart(&adaptation.trials, units))
        h2 { "Walks" }
        table #trials {
            tr {
                th.num { "walk" } th { "job" } th.num { "cell" }
                @for a in map.grid.axes() { th.num { (a.name) } }
                th.num { "predicted" } th.num { "± sd" } th.num { (units.title) }
            }
            @for t in &adaptation.trials {
                tr {
                    td.num { (t.walk) }
                    td { a href={ "/jobs/" (t.job_id) } { "job " (t.job_id) } }
                    td.num { (t.cell.map_or("–".into(), |c| c.to_string())) }
                    @for k in 0..map.grid.axes().len() {
                        td.num {
                            (t.descriptors.get(k).map_or("–".into(), |d| format!("{d:.3}")))
                            @if let Some(d) = t.walked_descriptors.as_ref().and_then(|w| w.get(k)) {
                                " " small title="what the walk measured" { "(" (format!("{d:.3}")) ")" }
                            }
                        }
                    }
                    td.num { (t.predicted.map_or("–".into(), |p| value(p.0))) }
                    td.num { (t.predicted.map_or("–".into(), |p| value(p.1))) }
                    td.num { (t.value.map_or("failed".into(), value)) }
                }
            }
        }
    };
    Ok(page(&format!("Run {id}: adaptation"), body))
}

pub(super) async fn adaptation_json(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let adaptation = adaptation_of(&app, id).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        adaptation.to_json().to_string(),
    )
        .into_response())
}
