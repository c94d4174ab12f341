//! The best gait seen from above.
//!
//! Runs store summaries, not every sample of every walk (that would be
//! megabytes per run), so the path is walked again: the best job is
//! resubmitted once, as owner `dashboard`, asking for the full trajectory,
//! and the drawing is kept until the run finds a better gait.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use tokio::sync::broadcast::error::RecvError;
use yamor_core::evaluation::{Outcome, Sample};

use super::plot::{points, px};
use super::{App, PageError, internal, run_of, run_values};
use crate::model::Job;

/// How long a replay may take before the page gives up (it keeps running).
const REPLAY_WAIT: Duration = Duration::from_secs(300);

pub(super) async fn trajectory_svg(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    if run.best_gait_xml.is_empty() {
        return Err(PageError(
            StatusCode::NOT_FOUND,
            format!("run {id} has no best gait (yet, or it optimizes no gait)"),
        ));
    }
    let best = run_values(&app.organizer.runs, &run)
        .await?
        .into_iter()
        .filter(|(_, v)| v.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(job, _)| job)
        .ok_or_else(|| PageError(StatusCode::NOT_FOUND, format!("run {id} has no result yet")))?;
    let cached = app
        .trajectories
        .lock()
        .get(&id)
        .filter(|(job, _)| *job == best.id)
        .map(|(_, svg)| svg.clone());
    let svg = match cached {
        Some(svg) => svg,
        None => {
            let replay = replay(&app, &best).await?;
            let samples = match replay.outcome {
                Some(Outcome::Walk(walk)) => walk.samples,
                _ => Vec::new(),
            };
            let svg = draw(&samples, &best);
            app.trajectories.lock().insert(id, (best.id, svg.clone()));
            svg
        }
    };
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
}

/// Walks `best` again on a host, keeping every sample.
async fn replay(app: &App, best: &Job) -> Result<Job, PageError> {
    let scheduler = &app.organizer.scheduler;
    let mut request = best.request.clone();
    request.job.spec.full_trajectory = true;
    // Finer than a run samples: this path is looked at, not only measured.
    request.job.spec.sample_interval = request.job.spec.sample_interval.min(0.05);
    // Subscribed before submitting, so the finish cannot slip past.
    let mut events = scheduler.subscribe_jobs();
    let id = scheduler
        .submit("dashboard", 0, vec![(0, request)])
        .await
        .map_err(internal)?[0];
    let finished = async {
        loop {
            match events.recv().await {
                Ok(job) if job.id == id && !job.state.is_open() => return Ok(()),
                Ok(_) => {}
                // Missed events: ask for the job itself below.
                Err(RecvError::Lagged(_)) => {
                    if scheduler
                        .job(id, true)
                        .await
                        .is_ok_and(|j| !j.state.is_open())
                    {
                        return Ok(());
                    }
                }
                Err(RecvError::Closed) => return Err(internal("the organizer is stopping")),
            }
        }
    };
    tokio::time::timeout(REPLAY_WAIT, finished)
        .await
        .map_err(|_| {
            PageError(
                StatusCode::GATEWAY_TIMEOUT,
                format!("the replay (job {id}) has not finished yet; reload later"),
            )
        })??;
    let job = scheduler.job(id, false).await.map_err(internal)?;
    if job.outcome.is_none() {
        return Err(internal(format!(
            "the replay (job {id}) failed: {}",
            job.error
        )));
    }
    Ok(job)
}

/// The path in the ground plane, to scale, start green, end red.
fn draw(samples: &[Sample], best: &Job) -> String {
    let (w, h, pad) = (420.0, 420.0, 30.0);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for s in samples {
        x0 = x0.min(s.x);
        x1 = x1.max(s.x);
        y0 = y0.min(s.y);
        y1 = y1.max(s.y);
    }
    // One scale for both axes: a path seen from above keeps its shape.
    let span = (x1 - x0).max(y1 - y0).max(0.05);
    let scale = (w - 2.0 * pad) / span;
    let sx = |x: f64| pad + (x - x0) * scale;
    let sy = |y: f64| h - pad - (y - y0) * scale;
    let velocity = best.fitness().unwrap_or_default();
    let bar = scale_bar(span);
    html! {
        svg #trajectory xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={ "0 0 " (w) " " (h) } font-family="sans-serif" {
            @if let [first, .., last] = samples {
                polyline fill="none" stroke="#36c" stroke-width="1.5"
                    points=(points(samples.iter().map(|s| (sx(s.x), sy(s.y))))) {}
                circle cx=(px(sx(first.x))) cy=(px(sy(first.y))) r="5" fill="#2a2" {}
                circle cx=(px(sx(last.x))) cy=(px(sy(last.y))) r="5" fill="#c33" {}
                line x1=(pad) y1=(h - 10.0) x2=(px(pad + bar * scale)) y2=(h - 10.0) stroke="#333" stroke-width="2" {}
                text x=(pad) y=(h - 14.0) font-size="11" { (bar) " m" }
                text x=(w - pad) y="16" font-size="11" text-anchor="end" {
                    (format!("{:.1} s walked, {:.2} cm/s measured", last.t - first.t, velocity * 100.0))
                }
            } @else {
                text x="20" y="40" { "the host returned no trajectory" }
            }
        }
    }
    .into_string()
}

/// A round length near a fifth of `span`.
fn scale_bar(span: f64) -> f64 {
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&b| b >= raw)
        .unwrap_or(raw)
}
