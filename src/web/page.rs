//! `GET /status/page` and `GET /status/page.js`: the operators' status page, one HTML file and
//! its script, compiled into the crate (nothing is loaded from elsewhere).
//!
//! The page lists every server (state, time in state, pid, era and protocol version, tools,
//! counters, and the last error with its stderr tail) and follows the event stream: a state
//! change shows at once, and the counters are re-read from `GET /status` (at most a few
//! times a second). What servers wrote reaches the page only as text (`textContent`, never
//! HTML), and the Content-Security-Policy allows only the page's own script and connections,
//! so that a server's stderr cannot run code in an operator's browser.

use actix_web::http::header::{self, HeaderValue};
use actix_web::HttpResponse;

const HTML: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");

/// Only our script, our style, our connections; no frames, forms, images or plugins.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; \
    connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub(super) async fn html() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        ))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(POLICY),
        ))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(HTML)
}

pub(super) async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/javascript; charset=utf-8"),
        ))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(SCRIPT)
}
