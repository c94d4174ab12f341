//! The organizer's dashboard and `/metrics`, over HTTP (axum).
//!
//! Server-rendered HTML with a few lines of plain JavaScript; charts are
//! inline SVG drawn here; nothing is fetched from outside the organizer, so
//! the dashboard works without internet. Pages read the same domain state
//! as the gRPC API ([`Scheduler`](crate::Scheduler), [`Runs`]); nothing here
//! knows protobuf.
//!
//! # Layout
//! - [`router`]: every route; [`serve`]: serve it until a shutdown future.
//! - Pages: `/hosts`, `/runs`, `/runs/{id}` (live through `/runs/{id}/events`,
//!   Server-Sent Events), `/jobs`, `/gaits`.
//! - Downloads: `/runs/{id}/best.xml`, `/runs/{id}/evaluations.csv`.
//! - `/runs/new` and `POST /runs`: start a run or a batch ([`launch`]).
//! - `/runs/{id}/trajectory.svg`: the best gait from above ([`trajectory`]).
//! - A run page's parameters, slices, best in parallel coordinates and
//!   importance ([`analysis`]).
//! - `/compare?run=1&run=2`: runs' curves overlaid and settings side by
//!   side ([`compare`]).
//! - `/runs/{id}/trials`: every evaluation, sortable and filtered, each
//!   linking to `/jobs/{id}`, its whole record ([`trials`]).
//! - `/jobs/{id}/replay`: the evaluation seen walking, boxes in 3-D
//!   ([`replay`]).
//! - `POST /runs/{id}/stop`; `/metrics` (Prometheus text format).
//! - Access: when a token is given, every request needs it, as
//!   `Authorization: Bearer <token>`, a `yamor_token` cookie, or once as
//!   `?token=` (which sets the cookie). Without one, loopback is the only
//!   guard, and web pages can reach loopback too: [`check_origin`] answers
//!   only to the dashboard's own names and refuses state changes from other
//!   sites' pages.

mod analysis;
mod compare;
mod launch;
mod plans;
mod plot;
pub mod replay;
mod trajectory;
mod trials;

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use futures_util::stream::Stream;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;
use tokio::net::TcpListener;
use yamor_proto::transport::Token;

use crate::Organizer;
use crate::model::{Job, JobFilter, JobState, Run, RunState};
use crate::runs::Runs;

/// The default optimization problem of a named robot (its yamorconfig
/// XML), or why there is none.
pub type ProblemForRobot = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Reads a user's robot as the start form uploads it (world.xml, gait.xml
/// and perhaps optimize.xml): checks that they fit together and answers
/// the morphology and the run's problem (optimize.xml, or one over the
/// gait's amplitudes, offsets and phase lags), or why not.
pub type OwnRobot =
    Arc<dyn Fn(&str, &str, Option<&str>) -> Result<(String, String), String> + Send + Sync>;

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
    let app = App {
        organizer,
        options,
        trajectories: Arc::default(),
    };
    Router::new()
        .route("/", get(|| async { Redirect::to("/runs") }))
        .route("/hosts", get(hosts_page))
        .route("/runs", get(runs_page).post(launch::launch))
        .route("/runs/new", get(launch::form_page))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/trajectory.svg", get(trajectory::trajectory_svg))
        .route("/runs/{id}/chart.svg", get(run_chart))
        .route("/runs/{id}/events", get(run_events))
        .route("/runs/{id}/best.xml", get(best_xml))
        .route("/runs/{id}/evaluations.csv", get(evaluations_csv))
        .route("/runs/{id}/stop", post(stop_run))
        .route("/compare", get(compare::compare_page))
        .route("/jobs", get(jobs_page))
        .route("/jobs/{id}", get(trials::job_page))
        .route("/jobs/{id}/plan", get(plans::plan_page))
        .route("/jobs/{id}/replay", get(replay::replay_page))
        .route("/jobs/{id}/replay.json", get(replay::replay_json))
        .route("/runs/{id}/trials", get(trials::trials_page))
        .route("/gaits", get(gaits_page))
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(app.clone(), read_body))
        .layer(middleware::from_fn_with_state(app.clone(), refuse_changes))
        .layer(middleware::from_fn_with_state(app.clone(), check_token))
        // Outermost: a request from elsewhere learns nothing, not even
        // whether it needs a token.
        .layer(middleware::from_fn_with_state(app.clone(), check_origin))
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

/// A read-only dashboard answers what changes something (a form posted, a
/// path drawn by walking the gait again) with why it cannot.
async fn refuse_changes(State(app): State<App>, request: Request, next: Next) -> Response {
    let changes = request.method() != axum::http::Method::GET
        && request.method() != axum::http::Method::HEAD
        || request.uri().path().ends_with("/trajectory.svg");
    if app.options.read_only && changes {
        return (StatusCode::METHOD_NOT_ALLOWED, read_only_page("Read-only")).into_response();
    }
    next.run(request).await
}

/// Refuses requests addressed to names the dashboard does not answer to,
/// and state changes sent by another site's page.
///
/// A browser lets any page send requests to loopback (a form posting to
/// `http://127.0.0.1:7080/runs`), and a page's own name may resolve to
/// loopback (DNS rebinding): the Host header names what the browser thinks
/// it talks to, and `Origin` / `Sec-Fetch-Site` who sent it. Tools like
/// curl send neither `Origin` nor `Sec-Fetch-Site` and pass.
async fn check_origin(State(app): State<App>, request: Request, next: Next) -> Response {
    let hosts = request.headers().get_all(header::HOST);
    // HTTP/1.0 tools may send no Host at all; a browser always does.
    let authority = request.uri().authority().map(|a| a.as_str());
    for host in hosts
        .iter()
        .map(|h| h.to_str().ok())
        .chain(authority.map(Some))
    {
        if !host.is_some_and(|h| allowed_host(h, &app.options.allowed_hosts)) {
            return refuse(format!(
                "this dashboard answers only to IP addresses, localhost and the names it was given (yamor organizer --http-host NAME), not to {:?}\n",
                host.unwrap_or("a Host that is not text")
            ));
        }
    }
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest);
        if !matches!((origin_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h)) {
            return refuse(format!(
                "a page from {:?} may not change this dashboard's state; use the dashboard's own pages\n",
                origin.to_str().unwrap_or("elsewhere")
            ));
        }
    } else if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
    {
        return refuse(
            "a page from another site may not change this dashboard's state; use the dashboard's own pages\n"
                .to_owned(),
        );
    }
    next.run(request).await
}

fn refuse(why: String) -> Response {
    (StatusCode::FORBIDDEN, why).into_response()
}

/// Whether the dashboard answers to `host` (a Host header: a name or an
/// address, and maybe a port).
fn allowed_host(host: &str, allowed: &[String]) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<Ipv6Addr>().is_err() {
            return false;
        }
        (
            None,
            after.strip_prefix(':').or(after.is_empty().then_some("")),
        )
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(host), Some("")),
        }
    };
    let Some(port) = port else { return false };
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    // An address (IPv6 above) is only reached by typing it: no page can
    // rebind it.
    name.is_none_or(|name| {
        name.parse::<Ipv4Addr>().is_ok()
            || name.eq_ignore_ascii_case("localhost")
            || (!name.is_empty()
                && allowed
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(host)))
    })
}

/// The most a request body may hold (axum's default limit for forms).
const BODY_LIMIT: usize = 2 << 20;

/// Reads the request body within [`Options::body_read_timeout`]: a client
/// that announces more than it sends must not hold a connection, nor a
/// handler, forever. Only the request is bounded: responses such as the
/// event stream take as long as they take.
async fn read_body(State(app): State<App>, request: Request, next: Next) -> Response {
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|n| n > BODY_LIMIT as u64) {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            format!("a request body holds at most {BODY_LIMIT} bytes\n"),
        )
            .into_response();
    }
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(
        app.options.body_read_timeout,
        axum::body::to_bytes(body, BODY_LIMIT),
    )
    .await
    {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONNECTION, "close")],
                format!(
                    "the request body could not be read whole (at most {BODY_LIMIT} bytes): {e}\n"
                ),
            )
                .into_response();
        }
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                format!(
                    "the request body did not arrive within {:?}\n",
                    app.options.body_read_timeout
                ),
            )
                .into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

async fn check_token(State(app): State<App>, request: Request, next: Next) -> Response {
    let Some(token) = &app.options.token else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = cookie_token(headers);
    let query = request.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|pair| pair.strip_prefix("token="))
            .map(str::to_owned)
    });
    let given = bearer.map(str::to_owned).or(cookie).or(query.clone());
    if !given.is_some_and(|g| token.matches(g.as_bytes())) {
        return (
            StatusCode::UNAUTHORIZED,
            "this organizer needs its token: Authorization: Bearer <token>, or open the page once with ?token=<token>\n",
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    if let Some(Ok(value)) =
        query.map(|given| format!("yamor_token={given}; Path=/; HttpOnly; SameSite=Strict").parse())
    {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("yamor_token=").map(str::to_owned))
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

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:0;color:#222}\
nav{background:#234;padding:8px 16px}nav a{color:#fff;margin-right:18px;text-decoration:none}\
main{padding:12px 16px}table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}\
th{background:#f3f3f3}.differs th,.differs td{background:#fff3cd}.free{color:#080}.busy{color:#a60}.down{color:#c00;font-weight:bold}\
.err{color:#c00}.num{text-align:right;font-variant-numeric:tabular-nums}svg{background:#fafafa}";

/// A dashboard page: the navigation, `title` as its heading, then `body`.
fn page(title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html {
                head {
                    meta charset="utf-8";
                    title { "yamor · " (title) }
                    style { (PreEscaped(STYLE)) }
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

/// A script of the page's own (its text is ours, not a user's).
fn script(code: &str) -> Markup {
    html! { script { (PreEscaped(code)) } }
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

async fn hosts_page(State(app): State<App>) -> Html<String> {
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
            (script("setTimeout(()=>location.reload(),2000)"))
        },
    )
}

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

/// Fitness values of the results `run` learnt ([`Run::learnt`], so pages
/// agree with its count), in proposal order (failed: NaN).
async fn run_values(runs: &Runs, run: &Run) -> Result<Vec<(Job, f64)>, PageError> {
    let mut jobs = run.learnt(runs.told_jobs(run.id).await.map_err(internal)?);
    jobs.sort_by_key(|j| j.seq);
    Ok(jobs
        .into_iter()
        .map(|j| {
            let v = j.outcome.as_ref().map_or(f64::NAN, |o| o.velocity);
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

#[derive(Deserialize)]
struct RunsQuery {
    /// Show runs with ids below this (newest first).
    before: Option<u64>,
}

const RUNS_PAGE: usize = 50;

async fn runs_page(
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
        (script("setTimeout(()=>{if(!document.querySelector('input[name=run]:checked'))location.reload()},3000)"))
    };
    Ok(page("Runs", body))
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

/// Best-so-far curve over every evaluation as a point, with axis titles,
/// and the reference gait's held-out velocity as a dashed line when known.
fn chart(values: &[f64], units: Units, reference: Option<f64>) -> Markup {
    let values: Vec<f64> = values.iter().map(|v| v * units.factor).collect();
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
        y_lo: format!("{lo:.4}{}", units.suffix),
        y_hi: format!("{hi:.4}{}", units.suffix),
        x_end: values.len().to_string(),
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
                    circle.eval cx=(plot::px(x(i))) cy=(plot::px(y(v))) r="2" fill="#9ab" {}
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

async fn run_chart(State(app): State<App>, Path(id): Path<u64>) -> Result<Response, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let jobs = run_values(&app.organizer.runs, &run).await?;
    let units = Units::of(jobs.iter().map(|(j, _)| j));
    let values: Vec<f64> = jobs.into_iter().map(|(_, v)| v).collect();
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml")],
        chart(&values, units, run.reference.map(|s| s.mean)).into_string(),
    )
        .into_response())
}

/// Rerenders the chart when the run changes (at most every 300 ms) and
/// keeps the summary line live, from the run's event stream.
const RUN_PAGE_SCRIPT: &str = "const id=document.currentScript.dataset.run;\
const es=new EventSource('/runs/'+id+'/events');let due=false;\
es.onmessage=e=>{const d=JSON.parse(e.data);\
document.getElementById('state').textContent=d.state;\
document.getElementById('progress').textContent=d.progress;\
document.getElementById('bestvalue').textContent=d.best;\
if(!due){due=true;setTimeout(()=>{due=false;fetch('/runs/'+id+'/chart.svg').then(r=>r.text())\
.then(t=>document.getElementById('chartbox').innerHTML=t)},300)}\
if(d.state!=='running')es.close()};";

/// A run's page: its summary, live chart, best parameters, their analysis
/// and the best gait's path.
async fn run_page(State(app): State<App>, Path(id): Path<u64>) -> Result<Html<String>, PageError> {
    let runs = &app.organizer.runs;
    let r = run_of(runs, id)?;
    let jobs = run_values(runs, &r).await?;
    let values: Vec<f64> = jobs.iter().map(|(_, v)| *v).collect();
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
        .filter_map(|(j, _)| j.outcome.as_ref().map(|o| o.engine.as_str()))
        .filter(|e| !e.is_empty())
        .collect();
    engines.sort_unstable();
    engines.dedup();
    let body = html! {
        p {
            @if !r.robot.is_empty() { "robot " b #robot { (r.robot) } " · " }
            "optimizer " b { (r.optimizer) }
            " · state " b #state { (r.state.as_str()) }
            " · " span #progress { (progress(&r)) }
            " · best " b #bestvalue { (r.best_text()) }
            " · elapsed " (format!("{:.0} s", r.elapsed_s))
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
        p {
            a href={ "/runs/" (id) "/best.xml" } { "best gait (XML)" }
            " · " a href={ "/runs/" (id) "/evaluations.csv" } { "evaluations (CSV)" }
            " · " a href={ "/jobs?run=" (id) } { "jobs" }
            " · " a #trials-link href={ "/runs/" (id) "/trials" } { "every evaluation (sortable)" }
            @if r.state == RunState::Running {
                " " form method="post" action={ "/runs/" (id) "/stop" } style="display:inline" {
                    button #stop { "stop the run" }
                }
            }
        }
        div #chartbox { (chart(&values, units, r.reference.map(|s| s.mean))) }
        h2 { "Best parameters" }
        table #best {
            tr { th { "parameter" } th.num { "value" } }
            @for (name, v) in &r.best_parameters {
                tr { td { (name) } td.num { (format!("{v:.6}")) } }
            }
        }
        (analysis::panel(&jobs, &bounds, units))
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
        script data-run=(id) { (PreEscaped(RUN_PAGE_SCRIPT)) }
    };
    Ok(page(&format!("Run {id}: {}", r.name), body))
}

fn run_event_json(r: &Run) -> String {
    serde_json::json!({
        "state": r.state.as_str(),
        "evaluations": r.evaluations,
        "progress": progress(r),
        "best": r.best_text(),
    })
    .to_string()
}

async fn run_events(
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

async fn best_xml(State(app): State<App>, Path(id): Path<u64>) -> Result<Response, PageError> {
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

async fn evaluations_csv(
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
            j.outcome
                .as_ref()
                .map_or(String::new(), |o| o.turn_deg_s.to_string()),
            j.outcome
                .as_ref()
                .map_or(String::new(), |o| o.simulated.to_string()),
            j.outcome
                .as_ref()
                .and_then(|o| o.stopped_early)
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

async fn stop_run(State(app): State<App>, Path(id): Path<u64>) -> Result<Redirect, PageError> {
    let r = run_of(&app.organizer.runs, id)?;
    if r.state == RunState::Running {
        app.organizer.runs.stop(id).map_err(internal)?;
    }
    Ok(Redirect::to(&format!("/runs/{id}")))
}

#[derive(Deserialize)]
struct JobsQuery {
    run: Option<u64>,
    state: Option<String>,
    /// Show jobs with ids below this (newest first).
    before: Option<u64>,
    after: Option<u64>,
}

const JOBS_PAGE: usize = 50;

async fn jobs_page(
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
            format!("{:.digits$}{}", o.velocity * units.factor, units.suffix)
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

async fn gaits_page(State(app): State<App>) -> Result<Html<String>, PageError> {
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
async fn metrics(State(app): State<App>, headers: axum::http::HeaderMap) -> Response {
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
