//! The era switch ([`Era`]): which protocol revisions the server speaks, how each POST is
//! classified as modern (2026-07-28, stateless) or legacy (the session era), and what a server
//! that does not speak a request's era answers.
//!
//! A POST is *modern* when its `MCP-Protocol-Version` header names a modern version, or when its
//! body's `params._meta` carries `io.modelcontextprotocol/protocolVersion` (an envelope). An
//! `initialize` is never modern: it is the legacy handshake whatever it carries. A GET or DELETE
//! is modern when its version header is. The era setting then decides:
//!
//! | request | `Dual` (default) | `Legacy` | `Modern` |
//! |---|---|---|---|
//! | legacy POST | served as before | served as before | requests `400 -32022`, notifications `202` |
//! | modern POST | the modern service (`modern`) | `400 -32000` "Server not initialized", `id: null` (a TS v1 server) | the modern service |
//! | `initialize` | a session, as before | a session, as before | `400 -32022` |
//! | GET/DELETE | modern: `405`, legacy: as before | as before | `405` |
//!
//! Switching to `Modern` at run time drops every session (their GET streams end), as a server
//! restarted modern-only would; switching to `Legacy` cuts every listen stream abruptly.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::handlers::{header_value, rpc_error};
use super::state::{lock, Shared};

/// The modern revision this server speaks by default ([`super::Faults::modern_versions`]).
pub const MODERN_VERSION: &str = "2026-07-28";
/// The `_meta` key of a modern request's protocol version.
pub(super) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The version a request without `MCP-Protocol-Version` is taken to speak (the spec's default).
const DEFAULT_LEGACY_VERSION: &str = "2025-03-26";

/// Which protocol revisions the server speaks ([`super::Faults::era`],
/// [`super::TestHttpServer::start_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Era {
    /// Both: the era is decided per request (a dual-era server, as TS v2 and python 2.3 are).
    #[default]
    Dual,
    /// The session era only, exactly as before the modern revision; a modern POST gets what a
    /// TypeScript SDK v1 server answers: `400 {"code":-32000,"message":"Bad Request: Server not
    /// initialized"}` with `id: null`.
    Legacy,
    /// 2026-07-28 only (TS v2 `legacy: 'reject'`): `initialize` and every legacy request get
    /// `400 -32022` naming the supported versions; GET and DELETE get `405`.
    Modern,
}

/// The protocol version a request's `params._meta` names, if it has an envelope.
pub(super) fn meta_version(message: &Value) -> Option<&Value> {
    message.get("params")?.get("_meta")?.get(META_VERSION)
}

/// Whether a version header names a modern revision (the default one or a configured one).
fn modern_header(req: &HttpRequest, versions: &[String]) -> bool {
    header_value(req, "mcp-protocol-version")
        .is_some_and(|v| v == MODERN_VERSION || versions.contains(&v))
}

/// Whether a POSTed message is a modern request (see the module doc).
pub(super) fn is_modern_post(req: &HttpRequest, message: &Value, versions: &[String]) -> bool {
    if message.get("method").and_then(Value::as_str) == Some("initialize") {
        return false;
    }
    modern_header(req, versions) || meta_version(message).is_some()
}

/// Whether a GET or DELETE speaks the modern revision.
pub(super) fn is_modern_head(req: &HttpRequest, versions: &[String]) -> bool {
    modern_header(req, versions)
}

/// A JSON-RPC error answer with an HTTP status, counted in `Stats::rejected`.
pub(super) fn reject(
    state: &Shared,
    status: StatusCode,
    id: Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> HttpResponse {
    *lock(&state.counters).rejected.entry(code).or_default() += 1;
    let mut body = rpc_error(id, code, message);
    if let Some(data) = data {
        body["error"]["data"] = data;
    }
    HttpResponse::build(status).json(body)
}

/// What a legacy-only (TS v1, stateful) server answers to a modern POST.
pub(super) fn not_initialized(state: &Shared) -> HttpResponse {
    reject(
        state,
        StatusCode::BAD_REQUEST,
        Value::Null,
        -32000,
        "Bad Request: Server not initialized",
        None,
    )
}

/// `-32022 UnsupportedProtocolVersion` with the versions the server speaks, HTTP 400.
pub(super) fn unsupported_version(state: &Shared, id: Value, requested: &str) -> HttpResponse {
    let supported = lock(&state.faults).modern_versions.clone();
    reject(
        state,
        StatusCode::BAD_REQUEST,
        id,
        -32022,
        &format!("Unsupported protocol version: {requested}"),
        Some(json!({"supported": supported, "requested": requested})),
    )
}

/// A modern-only server's answer to a legacy POST: requests (and `initialize`) get `-32022`,
/// notifications and responses `202`.
pub(super) fn refuse_legacy(state: &Shared, req: &HttpRequest, message: &Value) -> HttpResponse {
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let Some(id) = id.filter(|_| message.get("method").is_some()) else {
        return HttpResponse::Accepted().finish();
    };
    let requested = message
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| header_value(req, "mcp-protocol-version"))
        .unwrap_or_else(|| DEFAULT_LEGACY_VERSION.to_owned());
    unsupported_version(state, id, &requested)
}

/// `405 Method Not Allowed` for a GET or DELETE in the modern era.
pub(super) fn method_not_allowed() -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, "POST"))
        .finish()
}
