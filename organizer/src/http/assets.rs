//! The dashboard's scripts and style as files (`assets/*.js`, `style.css`), compiled in and
//! served at `/assets/{name}` with cache headers, rather than strings in
//! the Rust that writes the pages.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use super::{PageError, not_found};

/// Every asset: its name under `/assets/` and its text.
const ASSETS: [(&str, &str); 7] = [
    ("style.css", include_str!("assets/style.css")),
    ("run.js", include_str!("assets/run.js")),
    ("replay.js", include_str!("assets/replay.js")),
    ("robot-files.js", include_str!("assets/robot-files.js")),
    ("settings.js", include_str!("assets/settings.js")),
    ("runs.js", include_str!("assets/runs.js")),
    ("reload.js", include_str!("assets/reload.js")),
];

/// How long a browser keeps an asset: an hour, since a new build may
/// change one under the same name.
const CACHE: &str = "public, max-age=3600";

/// The path a page links an asset by; panics on a name not in [`ASSETS`],
/// which a test of every page would catch.
pub(super) fn path(name: &str) -> String {
    assert!(
        ASSETS.iter().any(|(known, _)| *known == name),
        "no asset {name}"
    );
    format!("/assets/{name}")
}

pub(super) async fn asset(Path(name): Path<String>) -> Result<Response, PageError> {
    let (_, text) = ASSETS
        .iter()
        .find(|(known, _)| *known == name)
        .ok_or_else(|| not_found(format!("asset {name}")))?;
    let kind = if name.ends_with(".css") {
        "text/css; charset=utf-8"
    } else {
        "text/javascript; charset=utf-8"
    };
    Ok(([(CONTENT_TYPE, kind), (CACHE_CONTROL, CACHE)], *text).into_response())
}
