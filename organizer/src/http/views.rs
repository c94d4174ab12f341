//! Job views contributed from outside the organizer: a robot family draws
//! its own jobs (a Roombot planning job's build, step by step, lives with
//! the Roombots in `yamor-families`), and the dashboard only frames them.
//! A view named `plan` is served at `/jobs/{id}/plan?…`; the job's page
//! names the job's objective as a view describes it and links to every
//! view that [`JobView::shows`] the job.
//!
//! A view answers HTML built with maud, which escapes every value it
//! inserts; the organizer wraps it in its page frame.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use yamor_core::evaluation::Objective;

use super::{App, PageError, not_found, page};
use crate::model::Job;

pub use maud::Markup;

/// Names the dashboard's own pages under `/jobs/{id}/` take: a view cannot.
const TAKEN: [&str; 2] = ["replay", "replay.json"];

/// A page of a job drawn by someone other than the organizer (a robot
/// family), served at `/jobs/{id}/{name}`.
pub trait JobView: Send + Sync {
    /// The view's path segment under `/jobs/{id}/` (e.g. `plan`), also the
    /// id of the job page's link to it. One segment of letters, digits,
    /// `-` and `_`; not one of the dashboard's own (`replay`).
    fn name(&self) -> &str;

    /// What the page is of a job, after `Job {id}: ` in its title (e.g.
    /// `the build`).
    fn title(&self) -> &str;

    /// The text of the job page's link to the view.
    fn link_text(&self) -> &str;

    /// How the job page names `objective` when it is a task of the view's
    /// own (e.g. a planning task by what it builds), or `None`. A job
    /// whose objective a view names is no walk: its page leaves the
    /// walk's rows out.
    fn describe_objective(&self, objective: &Objective) -> Option<String> {
        let _ = objective;
        None
    }

    /// Whether the job page links to the view for `job` (it has something
    /// to draw).
    fn shows(&self, job: &Job) -> bool;

    /// The page's body for `job` (read whole, its outcome's text included)
    /// with the query's parameters, or why not. Runs on the request's
    /// task: it should be quick.
    fn render(&self, job: &Job, query: &BTreeMap<String, String>) -> Result<Markup, ViewError>;
}

/// Why a view draws no page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// Nothing to draw (e.g. `a plan in job 7 (not a finished planning
    /// job) not found`): 404.
    #[error("{0}")]
    NotFound(String),
    /// The query asks for something malformed: 400.
    #[error("{0}")]
    BadQuery(String),
    /// The job's record cannot be read as the view needs: 422.
    #[error("{0}")]
    Unreadable(String),
}

impl From<ViewError> for PageError {
    fn from(e: ViewError) -> Self {
        let status = match e {
            ViewError::NotFound(_) => StatusCode::NOT_FOUND,
            ViewError::BadQuery(_) => StatusCode::BAD_REQUEST,
            ViewError::Unreadable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        };
        PageError(status, e.to_string())
    }
}

/// Whether `name` can be a view's path segment.
pub(super) fn usable(name: &str) -> bool {
    !name.is_empty()
        && !TAKEN.contains(&name)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(super) async fn view_page(
    State(app): State<App>,
    Path((id, name)): Path<(u64, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<Html<String>, PageError> {
    let view = app
        .options
        .job_views
        .iter()
        .find(|v| v.name() == name && usable(v.name()))
        .cloned()
        .ok_or_else(|| not_found(format!("a view {name:?} of jobs")))?;
    let job = app.job(id).await?;
    let body = view.render(&job, &query)?;
    Ok(page(&format!("Job {id}: {}", view.title()), body))
}
