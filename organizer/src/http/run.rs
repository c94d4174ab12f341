//! `/runs/{id}` and what hangs off it: the live page and its chart, the
//! event stream that keeps it live, the downloads (best gait, evaluations
//! CSV) and the stop button's target.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use futures_util::stream::Stream;
use maud::{Markup, html};

use super::{
    App, PageError, Units, analysis, assets, best_so_far, internal, page, plot, progress, run_of,
    run_values,
};
use crate::model::{Run, RunState};

/// Best-so-far curve over every evaluation as a point, with axes and their
/// titles, and the reference gait's held-out velocity as a dashed line when
/// known. Each point names its evaluation when hovered and opens its job
/// when clicked; `jobs` are (job id, value) in the order the run learnt them.
fn chart(jobs: &[(u64, f64)], units: Units, reference: Option<f64>) -> Markup {
    let values: Vec<f64> = jobs.iter().map(|(_, v)| v * units.factor).collect();
    let reference = reference.map(|v| v * units.factor);
    let (w, h, pad) = (720.0, 300.0, 44.0);
    let finite: Vec<(usize, f64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let (lo, hi) = finite
        .iter()
        .map(|&(_, v)| v)
        .chain(reference)
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let span = (hi - lo).max(1e-12);
    let n = (values.len().max(2) - 1) as f64;
    let x = |i: usize| pad + i as f64 / n * (w - 2.0 * pad);
    let y = |v: f64| h - pad - (v - lo) / span * (h - 2.0 * pad);
    let axes = plot::Axes {
        width: w,
        height: h,
        pad,
        // Evaluation i + 1 is drawn at x(i).
        x: (1.0, n + 1.0),
        y: (lo, lo + span),
        x_title: "evaluation; dots: each result, red: best so far",
        y_title: units.title,
    };
    let best = plot::points(
        best_so_far(&values)
            .into_iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| (x(i), y(v))),
    );
    html! {
        svg #chart xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={ "0 0 " (w) " " (h) } {
            @if finite.is_empty() {
                text x="20" y="40" { "no evaluations yet" }
            } @else {
                (axes.draw())
                @for &(i, v) in &finite {
                    a href={ "/jobs/" (jobs[i].0) } {
                        circle.eval cx=(plot::px(x(i))) cy=(plot::px(y(v))) r="2" fill="#9ab" {
                            title { (format!("evaluation {}: {v:.4}{} (job {})", i + 1, units.suffix, jobs[i].0)) }
                        }
                    }
                }
                polyline #best fill="none" stroke="#c33" stroke-width="2" points=(best) {}
                @if let Some(v) = reference {
                    line #reference x1=(pad) y1=(plot::px(y(v))) x2=(w - pad) y2=(plot::px(y(v)))
                        stroke="#2a7" stroke-width="1.5" stroke-dasharray="6 4" {}
                    text x=(w - pad) y=(plot::px(y(v) - 4.0)) font-size="11" text-anchor="end" fill="#2a7" {
                        (format!("the given gait, held out: {v:.2}{}", units.suffix))
                    }
                }
            }
        }
    }
}

pub(super) async fn run_chart(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let jobs = run_values(&app.organizer.runs, &run).await?;
    let units = Units::of(jobs.iter().map(|(j, _)| j));
    let points: Vec<(u64, f64)> = jobs.iter().map(|(j, v)| (j.id, *v)).collect();
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml")],
        chart(&points, units, run.reference.map(|s| s.mean)).into_string(),
    )
        .into_response())
}

/// A run's page: its summary, live chart, best parameters, their analysis
/// and the best gait's path.
pub(super) async fn run_page(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Html<String>, PageError> {
    let runs = &app.organizer.runs;
    let r = run_of(runs, id)?;
    let jobs = run_values(runs, &r).await?;
    let points: Vec<(u64, f64)> = jobs.iter().map(|(j, v)| (j.id, *v)).collect();
    let units = Units::of(jobs.iter().map(|(j, _)| j));
    let settings: Vec<String> = r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    // A run whose problem no longer reads (a stored older format) is still
    // drawn, over what its evaluations span.
    let bounds = runs.bounds(id).await.unwrap_or_default();
    let best_walk = jobs
        .iter()
        .filter(|(j, v)| v.is_finite() && j.request.job.gait.is_some())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|_| app.options.replay.is_some());
    // The engines the run's walks were simulated with (hosts choose theirs).
    let mut engines: Vec<&str> = jobs
        .iter()
        .filter_map(|(j, _)| j.walk())
        .map(|w| w.engine.as_str())
        .filter(|e| !e.is_empty())
        .collect();
    engines.sort_unstable();
    engines.dedup();
    // The answer in the held-out worlds of each engine (runs over worlds).
    let by_engine = if engines.len() > 1 && r.held_out.is_some() {
        let held_out = app
            .organizer
            .scheduler
            .store()
            .read_async(move |s| s.held_out_jobs(id))
            .await
            .map_err(internal)?;
        crate::runs::held_out_by_engine(&held_out, &r.best_parameters)
    } else {
        Vec::new()
    };
    let grid = runs.grid_of(&r).ok().flatten();
    let body = html! {
        p {
            @if !r.robot.is_empty() { "robot " b #robot { (r.robot) } " · " }
            "optimizer " b { (r.optimizer) }
            " · state " b #state { (r.state.as_str()) }
            " · " span #progress { (progress(&r)) }
            " · best " b #bestvalue { (r.best_text()) }
            @if r.gait { " " span #direction { (r.direction.phrase()) } }
            " · elapsed " span #elapsed { (format!("{:.0} s", r.elapsed_s)) }
            @if !r.error.is_empty() { " " span.err { (r.error) } }
        }
        p #setup {
            small {
                "seed " (r.seed) " · settings " (settings.join(", "))
                @if !engines.is_empty() { " · walked by " (engines.join(", ")) }
                @if let Some(reference) = r.reference {
                    " · the given gait walks " span #reference-value { (reference.cm_s()) } " held out"
                }
            }
        }
        @if !by_engine.is_empty() {
            p #by-engine {
                "the answer in held-out worlds, by engine: "
                @for (k, (engine, spread)) in by_engine.iter().enumerate() {
                    @if k > 0 { " · " }
                    b { (engine) } " " (spread.cm_s())
                }
            }
        }
        p {
            a href={ "/runs/" (id) "/best.xml" } { "best gait (XML)" }
            " · " a href={ "/runs/" (id) "/evaluations.csv" } { "evaluations (CSV)" }
            " · " a href={ "/jobs?run=" (id) } { "jobs" }
            " · " a #trials-link href={ "/runs/" (id) "/trials" } { "every evaluation (sortable)" }
            @if let Some(grid) = &grid {
                " · " a #map-link href={ "/runs/" (id) "/map" } { "map of gaits (" (grid.cells()) " cells)" }
            }
            @if let Some(prior) = r.prior {
                " · " a #adaptation-link href={ "/runs/" (id) "/adaptation" } {
                    "adaptation from run " (prior) "'s map"
                }
            }
            @if r.state == RunState::Running {
                " " form method="post" action={ "/runs/" (id) "/stop" } style="display:inline" {
                    button #stop { "stop the run" }
                }
            }
        }
        div #chartbox { (chart(&points, units, r.reference.map(|s| s.mean))) }
        h2 { "Best parameters" }
        table #best-parameters {
            tr { th { "parameter" } th.num { "value" } }
            @for (name, v) in &r.best_parameters {
                tr { td { (name) } td.num { (format!("{v:.6}")) } }
            }
        }
        div #analysis { (analysis::panel(&jobs, &bounds, units)) }
        @if let Some((best, _)) = best_walk {
            p { a #replay-best href={ "/jobs/" (best.id) "/replay" } { "see the best walk in 3-D" } }
        }
        @if !r.best_gait_xml.is_empty() && !app.options.read_only {
            // Drawing it walks the best gait again on a host: automatic once
            // the run is over, on request while it still needs the hosts.
            h2 { "Best gait, seen from above" }
            div #trajectorybox {
                @if r.state == RunState::Running {
                    a href="#" onclick={ "this.outerHTML='<img src=/runs/" (id) "/trajectory.svg>';return false" } {
                        "walk the best gait so far again and draw it"
                    }
                } @else {
                    img #trajectory src={ "/runs/" (id) "/trajectory.svg" } alt="the best gait's path";
                }
            }
        }
        script src=(assets::path("run.js")) data-run=(id) {}
    };
    Ok(page(&format!("Run {id}: {}", r.name), body))
}

fn run_event_json(r: &Run) -> String {
    serde_json::json!({
        "state": r.state.as_str(),
        "evaluations": r.evaluations,
        "progress": progress(r),
        "best": r.best_text(),
        "elapsed_s": r.elapsed_s,
    })
    .to_string()
}

pub(super) async fn run_events(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, PageError> {
    let runs = app.organizer.runs.clone();
    let first = run_of(&runs, id)?;
    let mut events = runs.subscribe();
    let stream = async_stream(move |tx| async move {
        if tx
            .send(Event::default().data(run_event_json(&first)))
            .await
            .is_err()
            || first.state != RunState::Running
        {
            return;
        }
        loop {
            match events.recv().await {
                Ok(event) if event.run.id == id => {
                    let done = event.run.state != RunState::Running;
                    if tx
                        .send(Event::default().data(run_event_json(&event.run)))
                        .await
                        .is_err()
                        || done
                    {
                        return;
                    }
                }
                Ok(_) => {}
                // Lagged: the next event carries the whole state anyway.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A stream fed by a task through a channel (the task ends the stream by
/// returning).
fn async_stream<F, Fut>(task: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Event>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(task(tx));
    futures_util::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    )
}

pub(super) async fn best_xml(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let r = run_of(&app.organizer.runs, id)?;
    if r.best_gait_xml.is_empty() {
        return Err(PageError(
            StatusCode::NOT_FOUND,
            format!("run {id} has no best gait (yet, or it optimizes no gait)"),
        ));
    }
    Ok((
        [
            (header::CONTENT_TYPE, "application/xml".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"run-{id}-best.xml\""),
            ),
        ],
        r.best_gait_xml,
    )
        .into_response())
}

pub(super) async fn evaluations_csv(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let jobs = run_values(&app.organizer.runs, &run).await?;
    // Each row names its walk's start (`yamor sim --seed` walks it again)
    // and how fast it turned, how long it walked and whether it was stopped
    // early (its fitness then a partial one), as yamor run's
    // evaluations.csv does.
    let mut csv = String::from(
        "index,job,host,attempts,state,fitness,start_seed,turn_deg_s,walk_s,stopped_early_at",
    );
    if let Some((j, _)) = jobs.first() {
        for (name, _) in &j.request.job.parameters {
            let _ = write!(csv, ",{}", name.replace([',', '"', '\n'], "_"));
        }
    }
    csv.push('\n');
    for (j, v) in &jobs {
        let walk = j.walk();
        let _ = write!(
            csv,
            "{},{},{},{},{},{},{},{},{},{}",
            j.seq,
            j.id,
            j.host.replace([',', '"', '\n'], "_"),
            j.attempts,
            j.state.as_str(),
            if v.is_finite() {
                v.to_string()
            } else {
                String::new()
            },
            j.request.job.spec.seed,
            walk.map_or(String::new(), |w| w.turn_deg_s.to_string()),
            walk.map_or(String::new(), |w| w.simulated.to_string()),
            walk.and_then(|w| w.stopped_early)
                .map_or(String::new(), |k| k.to_string()),
        );
        for (_, x) in &j.request.job.parameters {
            let _ = write!(csv, ",{x}");
        }
        csv.push('\n');
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"run-{id}-evaluations.csv\""),
            ),
        ],
        csv,
    )
        .into_response())
}

pub(super) async fn stop_run(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Redirect, PageError> {
    let r = run_of(&app.organizer.runs, id)?;
    if r.state == RunState::Running {
        app.organizer.runs.stop(id).map_err(internal)?;
    }
    Ok(Redirect::to(&format!("/runs/{id}")))
}
