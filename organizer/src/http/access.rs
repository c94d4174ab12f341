//! Who may reach the dashboard and how much they may send: the token,
//! the Host and Origin checks, the read-only refusal and the body limits.
//! Middleware apart from the pages, so that every route passes the same
//! guards in the one order the router sets.

use std::net::{Ipv4Addr, Ipv6Addr};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{App, read_only_page};

/// A read-only dashboard answers what changes something (a form posted, a
/// path drawn by walking the gait again) with why it cannot.
pub(super) async fn refuse_changes(
    State(app): State<App>,
    request: Request,
    next: Next,
) -> Response {
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
pub(super) async fn check_origin(State(app): State<App>, request: Request, next: Next) -> Response {
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
pub(super) async fn read_body(State(app): State<App>, request: Request, next: Next) -> Response {
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

pub(super) async fn check_token(State(app): State<App>, request: Request, next: Next) -> Response {
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
