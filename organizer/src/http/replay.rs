//! An evaluation seen walking: `/jobs/{id}/replay` walks the job again in
//! this process (a simulator the dashboard was given, [`Replayer`]) and
//! plays it in the browser — the modules as shaded boxes in 3-D on a
//! canvas, drawn by a few lines of our own JavaScript, with the path from
//! above beside it. Nothing is fetched from outside.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use maud::html;

use super::{App, CallbackError, PageError, internal, page};
use crate::model::Job;
use yamor_core::evaluation::Outcome;

/// A recorded walk as the page plays it (a family records it, see
/// [`yamor_core::family::Walker::record`]).
pub use yamor_core::family::Recording;

/// Walks a job again and records it; `Err` says why it cannot (a job of
/// a host's own robot, an expression). Runs on a blocking thread.
pub type Replayer = Arc<dyn Fn(&Job) -> Result<Recording, CallbackError> + Send + Sync>;

async fn record(app: &App, id: u64) -> Result<Recording, PageError> {
    let replayer = app.options.replay.clone().ok_or_else(|| {
        PageError(
            StatusCode::NOT_FOUND,
            "this dashboard has no simulator to replay walks with".into(),
        )
    })?;
    let job = app.job(id).await?;
    let recorded_velocity = job
        .outcome
        .as_ref()
        .and_then(Outcome::walk)
        .map(|w| w.velocity);
    let mut recording = tokio::task::spawn_blocking(move || replayer(&job))
        .await
        .map_err(internal)?
        .map_err(|why| PageError(StatusCode::UNPROCESSABLE_ENTITY, why.to_string()))?;
    recording.recorded_velocity = recorded_velocity;
    Ok(recording)
}

pub(super) async fn replay_json(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let recording = record(&app, id).await?;
    let json = serde_json::to_string(&recording).map_err(internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

pub(super) async fn replay_page(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Html<String>, PageError> {
    if app.options.replay.is_none() {
        return Err(PageError(
            StatusCode::NOT_FOUND,
            "this dashboard has no simulator to replay walks with".into(),
        ));
    }
    let body = html! {
        p {
            a href={ "/jobs/" (id) } { "job " (id) }
            ", walked again here from its own start with this dashboard's simulator (its default \
             engine and step): the velocity measured here beside the job's recorded one says \
             whether it is the walk its host saw. It plays by itself once loaded (pause, \
             speed and the slider below)."
        }
        p {
            button #play { "play" } " "
            select #speed title="playback speed" {
                option value="0.25" { "¼×" } option value="0.5" { "½×" }
                option value="1" selected { "1×" } option value="2" { "2×" } option value="4" { "4×" }
            } " "
            input #time type="range" min="0" value="0" style="width:360px"; " "
            span #clock { "loading…" }
        }
        p { small { "Drag the scene to turn the camera, scroll to come closer; it follows the robot." } }
        canvas #scene width="640" height="420" style="background:#f4f6f8;border:1px solid #ccc" {}
        " "
        canvas #path width="300" height="300" style="background:#fafafa;border:1px solid #ccc" {}
        script src=(super::assets::path("replay.js")) data-replay={ "/jobs/" (id) "/replay.json" } {}
    };
    Ok(page(&format!("Job {id}: the walk"), body))
}
