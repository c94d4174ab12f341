//! The dashboard's scripts as files (`assets/*.js`), compiled in and
//! served at `/assets/{name}` with cache headers, rather than strings in
//! the Rust that writes the pages.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use super::{PageError, not_found};

/// Every asset: its name under `/assets/` and its text.
const ASSETS: [(&str, &str); 1] = [("run.js", include_str!("assets/run.js"))];

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
    Ok((
        [
            (CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (CACHE_CONTROL, CACHE),
        ],
        *text,
    )
        .into_response())
}
