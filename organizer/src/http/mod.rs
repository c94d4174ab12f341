//! The organizer's dashboard and `/metrics`, over HTTP (axum).
//!
//! Server-rendered HTML with a few lines of plain JavaScript; charts are
//! inline SVG drawn here; nothing is fetched from outside the organizer, so
//! the dashboard works without internet. Pages read the same domain state
//! as the gRPC API ([`Scheduler`](crate::Scheduler), [`Runs`]); nothing here
//! knows protobuf.
//!
//! # Layout
//! - this file: [`router`], every route; [`serve`]: serve it until a
//!   shutdown future; the page frame and the helpers pages share (a run's
//!   values, units, error pages).
//! - `/runs`: every run, a page at a time (`runs`).
//! - `/runs/{id}`, live through `/runs/{id}/events` (Server-Sent Events),
//!   its chart, its downloads `/runs/{id}/best.xml` and
//!   `/runs/{id}/evaluations.csv`, and `POST /runs/{id}/stop` (`run`).
//! - `/hosts`, `/jobs`, `/gaits` and `/metrics` (Prometheus text format)
//!   (`status`).
//! - `/runs/new` and `POST /runs`: start a run or a batch ([`launch`]).
//! - `/runs/{id}/trajectory.svg`: the best gait from above ([`trajectory`]).
//! - A run page's parameters, slices, best in parallel coordinates and
//!   importance ([`analysis`]).
//! - `/compare?run=1&run=2`: runs' curves overlaid and settings side by
//!   side ([`compare`]).
//! - `/runs/{id}/trials`: every evaluation, sortable and filtered, each
//!   linking to `/jobs/{id}`, its whole record ([`trials`]).
//! - `/runs/{id}/map`: a quality-diversity run's map of gaits as a heat
//!   map, each square opening its elite's walk; `/runs/{id}/map.json`,
//!   the whole map ([`map`]).
//! - `/runs/{id}/adaptation`: a run that adapted from another run's map,
//!   its walks numbered on that map and what its model predicted against
//!   what they walked; `/runs/{id}/adaptation.json` ([`adaptation`]).
//! - `/jobs/{id}/replay`: the evaluation seen walking, boxes in 3-D
//!   ([`replay`]).
//! - `/jobs/{id}/{view}`: a job drawn by a view contributed from outside
//!   ([`views`], [`Options::job_views`]), e.g. a Roombot planning job's
//!   build step by step (`/jobs/{id}/plan?step=K`, drawn by
//!   `yamor-families`); the job page names objectives and links to views
//!   as they say.
//! - Access (`access`): when a token is given, every request needs it, as
//!   `Authorization: Bearer <token>`, a `yamor_token` cookie, or once as
//!   `?token=` (which sets the cookie). Without one, loopback is the only
//!   guard, and web pages can reach loopback too: the dashboard answers
//!   only to its own names and refuses state changes from other sites'
//!   pages (`access::check_origin`).

mod access;
mod adaptation;
mod analysis;
mod assets;
mod compare;
mod launch;
mod map;
mod plot;
pub mod replay;
mod run;
mod runs;
mod status;
mod trajectory;
mod trial_query;
mod trials;
pub mod views;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use maud::{DOCTYPE, Markup, html};
use tokio::net::TcpListener;
use yamor_proto::transport::Token;

use crate::Organizer;
use crate::model::{Job, Run};
use crate::runs::Runs;

/// Why a callback the dashboard was given ([`ProblemForRobot`],
/// [`OwnRobot`], [`Replayer`]) cannot answer: each embedder has its own
/// error type, and the dashboard only shows the message.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync>;

/// The default optimization problem of a named robot (its yamorconfig
/// XML), or why there is none.
pub type ProblemForRobot = Arc<dyn Fn(&str) -> Result<String, CallbackError> + Send + Sync>;

/// Reads a user's robot as the start form uploads it (world.xml, gait.xml
/// and perhaps optimize.xml): checks that they fit together and answers
/// the morphology and the run's problem (optimize.xml, or one over the
/// gait's amplitudes, offsets and phase lags), or why not.
pub type OwnRobot =
    Arc<dyn Fn(&str, &str, Option<&str>) -> Result<(String, String), CallbackError> + Send + Sync>;

/// How the dashboard is served.
#[derive(Clone)]
pub struct Options {
    /// With a token, each request must carry it.
    pub token: Option<Token>,
    /// Robots the start form offers.
    pub robots: Vec<String>,
    /// Where the start form finds a robot's problem; `None`: the form
    /// takes bare parameters only.
    pub problem_for_robot: Option<ProblemForRobot>,
    /// Host names the dashboard is reached by (e.g. `yamor.lab`, or the
    /// name a proxy in front of it is reached by), beside IP addresses and
    /// `localhost`, which it always answers to. A name answers on any port,
    /// `name:port` on that port only; case does not matter. Other names are
    /// refused, so that a web page cannot reach a loopback dashboard
    /// through a name it controls (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// How long a client may take to send a request's line and headers
    /// (also how long an idle connection stays open).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
    /// Reads uploaded robot files for the start form; `None`: the form
    /// offers examples and earlier runs' robots only.
    pub own_robot: Option<OwnRobot>,
    /// Walks a job again in this process to replay it in the browser
    /// (`/jobs/{id}/replay`); `None`: no replays.
    pub replay: Option<replay::Replayer>,
    /// Pages of jobs drawn from outside the organizer (a robot family's
    /// own, e.g. a planning job's build), each at `/jobs/{id}/{name}`.
    pub job_views: Vec<Arc<dyn views::JobView>>,
    /// A view of a database (`yamor dashboard`): pages only; starting or
    /// stopping runs and drawing paths (which walks a gait again) are
    /// refused.
    pub read_only: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            token: None,
            robots: Vec::new(),
            problem_for_robot: None,
            allowed_hosts: Vec::new(),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            read_only: false,
            replay: None,
            own_robot: None,
            job_views: Vec::new(),
        }
    }
}

#[derive(Clone)]
struct App {
    organizer: Organizer,
    options: Options,
    /// Per run: the best job drawn and its drawing.
    trajectories: Arc<Mutex<HashMap<u64, (u64, String)>>>,
}

/// Every dashboard route over `organizer`.
pub fn router(organizer: Organizer, options: Options) -> Router {
    for view in &options.job_views {
        if !views::usable(view.name()) {
            tracing::warn!(
                "dashboard: a job view cannot be named {:?}; it is left out",
                view.name()
            );
        }
    }
    let app = App {
        organizer,
        options,
        trajectories: Arc::default(),
    };
    Router::new()
        .route("/", get(|| async { Redirect::to("/runs") }))
        .route("/hosts", get(status::hosts_page))
        .route("/runs", get(runs::runs_page).post(launch::launch))
        .route("/runs/new", get(launch::form_page))
        .route("/runs/{id}", get(run::run_page))
        .route("/runs/{id}/trajectory.svg", get(trajectory::trajectory_svg))
        .route("/runs/{id}/chart.svg", get(run::run_chart))
        .route("/runs/{id}/events", get(run::run_events))
        .route("/runs/{id}/best.xml", get(run::best_xml))
        .route("/runs/{id}/evaluations.csv", get(run::evaluations_csv))
        .route("/runs/{id}/stop", post(run::stop_run))
        .route("/compare", get(compare::compare_page))
        .route("/jobs", get(status::jobs_page))
        .route("/jobs/{id}", get(trials::job_page))
        .route("/jobs/{id}/replay", get(replay::replay_page))
        .route("/jobs/{id}/replay.json", get(replay::replay_json))
        .route("/jobs/{id}/{view}", get(views::view_page))
        .route("/runs/{id}/trials", get(trials::trials_page))
        .route("/runs/{id}/trials.csv", get(trials::trials_csv))
        .route("/runs/{id}/trials.json", get(trials::trials_json))
        .route("/runs/{id}/map", get(map::map_page))
        .route("/runs/{id}/map.json", get(map::map_json))
        .route("/runs/{id}/adaptation", get(adaptation::adaptation_page))
        .route(
            "/runs/{id}/adaptation.json",
            get(adaptation::adaptation_json),
        )
        .route("/gaits", get(status::gaits_page))
        .route("/metrics", get(status::metrics))
        .route("/assets/{name}", get(assets::asset))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            access::read_body,
        ))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            access::refuse_changes,
        ))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            access::check_token,
        ))
        // Outermost: a request from elsewhere learns nothing, not even
        // whether it needs a token.
        .layer(middleware::from_fn_with_state(
            app.clone(),
            access::check_origin,
        ))
        .with_state(app)
}

/// Serves the dashboard on `listener` until `shutdown` resolves, then
/// waits for open connections to finish.
///
/// Through hyper rather than `axum::serve`, which cannot bound the time a
/// client takes to send its headers: a client that never finishes its
/// request line must not hold a connection forever.
pub async fn serve(
    listener: TcpListener,
    organizer: Organizer,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    let router = router(organizer, options);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // The client gave up before we took it: nothing to serve.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors, most likely: connections may
                // close meanwhile; retrying at once would spin.
                tracing::error!("dashboard: accepting a connection: {e}");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        let connection = graceful.watch(http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        ));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("dashboard connection: {e}");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// The page titled `title` that says a read-only dashboard changes nothing.
fn read_only_page(title: &str) -> Html<String> {
    page(
        title,
        html! { p.err #error { (crate::store::StoreError::ViewOnly) } },
    )
}

/// An error page with its status.
#[derive(Debug)]
struct PageError(StatusCode, String);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        (self.0, page("error", html! { p.err { (self.1) } })).into_response()
    }
}

impl App {
    /// Job `id` whole, or a page saying there is none.
    async fn job(&self, id: u64) -> Result<crate::model::Job, PageError> {
        self.organizer
            .scheduler
            .job(id, false)
            .await
            .map_err(|_| not_found(format!("job {id}")))
    }
}

fn not_found(what: impl std::fmt::Display) -> PageError {
    PageError(StatusCode::NOT_FOUND, format!("{what} not found"))
}

fn internal(e: impl std::fmt::Display) -> PageError {
    PageError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// A dashboard page: the navigation, `title` as its heading, then `body`.
fn page(title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html {
                head {
                    meta charset="utf-8";
                    title { "yamor · " (title) }
                    link rel="stylesheet" href=(assets::path("style.css"));
                }
                body {
                    nav {
                        a href="/runs" { "Runs" }
                        a href="/hosts" { "Hosts" }
                        a href="/jobs" { "Jobs" }
                        a href="/gaits" { "Gaits" }
                        a href="/metrics" { "Metrics" }
                    }
                    main {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
        .into_string(),
    )
}

/// A script of the dashboard's own, by its asset name ([`assets`]).
fn script(name: &str) -> Markup {
    html! { script src=(assets::path(name)) {} }
}

fn ago(ms: i64) -> String {
    if ms <= 0 {
        return "–".into();
    }
    let s = (crate::model::now_ms() - ms).max(0) / 1000;
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        _ => format!("{:.1} h ago", s as f64 / 3600.0),
    }
}

/// Fitness values of the results `run` learnt ([`Run::learnt`], so pages
/// agree with its count), in proposal order (failed: NaN).
async fn run_values(runs: &Runs, run: &Run) -> Result<Vec<(Job, f64)>, PageError> {
    let mut jobs = run.learnt(runs.told_jobs(run.id).await.map_err(internal)?);
    jobs.sort_by_key(|j| j.seq);
    Ok(jobs
        .into_iter()
        .map(|j| {
            let v = j.fitness().unwrap_or(f64::NAN);
            (j, v)
        })
        .collect())
}

fn best_so_far(values: &[f64]) -> Vec<f64> {
    let mut best = f64::NEG_INFINITY;
    values
        .iter()
        .map(|&v| {
            if v > best {
                best = v;
            }
            best
        })
        .collect()
}

fn progress(r: &Run) -> String {
    if r.max_evaluations > 0 {
        format!(
            "{} / {} ({:.0} %)",
            r.evaluations,
            r.max_evaluations,
            100.0 * r.evaluations as f64 / r.max_evaluations as f64
        )
    } else {
        r.evaluations.to_string()
    }
}

fn run_of(runs: &Runs, id: u64) -> Result<Run, PageError> {
    runs.get(id).map_err(|_| not_found(format!("run {id}")))
}

/// How a run's values read to people: a gait's velocity in cm/s (files
/// keep m/s and say so in their headers), a bare problem's value as it is.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Units {
    factor: f64,
    title: &'static str,
    suffix: &'static str,
}

impl Units {
    const VELOCITY: Units = Units {
        factor: 100.0,
        title: "velocity (cm/s)",
        suffix: " cm/s",
    };
    const VALUE: Units = Units {
        factor: 1.0,
        title: "value",
        suffix: "",
    };

    /// The units of a run whose results are `jobs`: a gait's when its jobs
    /// walk gaits.
    fn of<'a>(mut jobs: impl Iterator<Item = &'a Job>) -> Units {
        if jobs.next().is_some_and(|j| j.request.job.gait.is_some()) {
            Units::VELOCITY
        } else {
            Units::VALUE
        }
    }
}
