//! The `/mcp` endpoint's handlers — POST, GET, DELETE — and the HTTP helpers they share.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::{json, Value};

use super::bearer;
use super::canned::{self, Target};
use super::era::{self, Era};
use super::modern;
use super::state::{lock, EventLog, Shared};
use super::streams::{open_stream, resume, sse_response};
use super::tools::{read_resource, subscribe, tools_call, tools_list};
use super::{GetMode, SessionGone, PROTOCOL_VERSIONS, SESSION_HEADER};

// ---- HTTP helpers ----

pub(super) fn header_value(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

pub(super) fn accepts(req: &HttpRequest, types: &[&str]) -> bool {
    let accept: Vec<String> = req
        .headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
        .collect();
    let accept = accept.join(",");
    types.iter().all(|t| accept.contains(t))
}

pub(super) fn is_json_content(req: &HttpRequest) -> bool {
    header_value(req, "content-type").is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v == "application/json" || v.starts_with("application/json;")
    })
}

pub(super) fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

pub(super) fn reply(id: &Value, result: Result<Value, (i64, String)>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => rpc_error(id.clone(), code, &message),
    }
}

/// An HTTP error answer with a JSON-RPC error body (`id: null`).
pub(super) fn http_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(rpc_error(Value::Null, code, message))
}

/// The `status_override` answer, if that switch is on.
pub(super) fn overridden(state: &Shared) -> Option<HttpResponse> {
    let status = lock(&state.faults).status_override?;
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(code);
    if code == StatusCode::UNAUTHORIZED {
        response.insert_header((header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\""));
    }
    Some(
        response
            .content_type("text/plain")
            .body(format!("status override: {status}")),
    )
}

/// The live session named by the request's `Mcp-Session-Id`, or the error answer.
pub(super) fn check_session(
    state: &Shared,
    req: &HttpRequest,
) -> Result<String, Box<HttpResponse>> {
    let Some(id) = header_value(req, SESSION_HEADER) else {
        return Err(Box::new(http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
        )));
    };
    if lock(&state.sessions).contains_key(&id) {
        return Ok(id);
    }
    Err(Box::new(match lock(&state.faults).session_gone {
        SessionGone::NotFound => http_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
        SessionGone::BadRequest => http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: No valid session ID provided",
        ),
    }))
}

// ---- handlers ----

pub(super) async fn post(req: HttpRequest, body: Bytes, state: web::Data<Shared>) -> HttpResponse {
    if let Some(refused) = bearer::refuse(&state, &req) {
        return refused;
    }
    let delay = lock(&state.faults).delay_ms;
    let response = handle_post(&req, &body, state.into_inner()).await;
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    response
}

pub(super) async fn handle_post(
    req: &HttpRequest,
    body: &[u8],
    state: Arc<Shared>,
) -> HttpResponse {
    let message = serde_json::from_slice::<Value>(body);
    let (era, versions) = {
        let faults = lock(&state.faults);
        (faults.era, faults.modern_versions.clone())
    };
    let modern = message
        .as_ref()
        .is_ok_and(|m| era::is_modern_post(req, m, &versions));
    state.see(req, message.as_ref().ok(), modern);
    if let Ok(Some(method)) = message
        .as_ref()
        .map(|m| m.get("method").and_then(Value::as_str))
    {
        let mut counters = lock(&state.counters);
        *counters.posts.entry(method.to_owned()).or_default() += 1;
        counters
            .post_times
            .entry(method.to_owned())
            .or_default()
            .push(Instant::now());
    }
    if let Ok(message) = &message {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let target = Target::Post(method.to_owned());
        if let Some(response) = canned::take(&state, &target, message.get("id")).await {
            return response;
        }
    }
    if let Some(response) = overridden(&state) {
        return response;
    }
    if !accepts(req, &["application/json", "text/event-stream"]) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
    }
    if !is_json_content(req) {
        return http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let message = match message {
        Ok(Value::Object(message)) => message,
        Ok(Value::Array(_)) => {
            return http_error(StatusCode::BAD_REQUEST, -32600, "Batches are not supported")
        }
        Ok(_) => return http_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request"),
        Err(_) => return http_error(StatusCode::BAD_REQUEST, -32700, "Parse error"),
    };
    match (era, modern) {
        (Era::Legacy, true) => return era::not_initialized(&state),
        (_, true) => return modern::post(req, state, message).await,
        (Era::Modern, false) => {
            return era::refuse_legacy(&state, req, &Value::Object(message));
        }
        _ => {}
    }
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    if let (Some("initialize"), Some(id)) = (method, &id) {
        // Always a new session, whatever session id the request carries.
        return initialize(&state, id, &params);
    }
    let session = match check_session(&state, req) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    match (method, id) {
        (Some(method), Some(id)) => request(state, session, id, method, params).await,
        (Some(_), None) => HttpResponse::Accepted().finish(),
        (None, Some(_)) if message.contains_key("result") || message.contains_key("error") => {
            HttpResponse::Accepted().finish()
        }
        _ => http_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request"),
    }
}

/// The server's capabilities, the same in both eras.
pub(super) fn server_capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true},
        "logging": {},
    })
}

/// The server's `Implementation`, the same in both eras.
pub(super) fn server_info() -> Value {
    json!({"name": "test-http-server", "version": "1.0.0"})
}

pub(super) fn initialize(state: &Shared, id: &Value, params: &Value) -> HttpResponse {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    let result = json!({
        "protocolVersion": version,
        "capabilities": server_capabilities(),
        "serverInfo": server_info(),
    });
    let session = state.new_session();
    HttpResponse::Ok()
        .insert_header((SESSION_HEADER, session))
        .json(reply(id, Ok(result)))
}

pub(super) async fn request(
    state: Arc<Shared>,
    session: String,
    id: Value,
    method: &str,
    params: Value,
) -> HttpResponse {
    let result = match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools_list()),
        "tools/call" => return tools_call(state, session, id, &params).await,
        "resources/subscribe" | "resources/unsubscribe" => {
            subscribe(&state, &session, &params, method == "resources/subscribe")
        }
        "resources/read" => read_resource(&params),
        _ => Err((-32601, format!("Method not found: {method}"))),
    };
    HttpResponse::Ok().json(reply(&id, result))
}

/// Whether a GET or DELETE speaks the modern revision, and whether it is answered `405` as
/// the modern era does.
fn modern_head(state: &Shared, req: &HttpRequest) -> (bool, bool) {
    let faults = lock(&state.faults);
    let modern = era::is_modern_head(req, &faults.modern_versions);
    let refused = match faults.era {
        Era::Modern => true,
        Era::Dual => modern,
        Era::Legacy => false,
    };
    (modern, refused)
}

pub(super) async fn get(req: HttpRequest, state: web::Data<Shared>) -> HttpResponse {
    if let Some(refused) = bearer::refuse(&state, &req) {
        return refused;
    }
    let state = state.into_inner();
    let (modern, refused) = modern_head(&state, &req);
    state.see(&req, None, modern);
    let last_event_id = header_value(&req, "last-event-id");
    {
        let mut counters = lock(&state.counters);
        counters.gets += 1;
        counters.get_times.push(Instant::now());
        counters.resumed_gets += usize::from(last_event_id.is_some());
    }
    if let Some(response) = canned::take(&state, &Target::Get, None).await {
        return response;
    }
    if let Some(response) = overridden(&state) {
        return response;
    }
    if refused {
        return era::method_not_allowed();
    }
    let mode = lock(&state.faults).get_mode;
    if mode == GetMode::MethodNotAllowed {
        return HttpResponse::MethodNotAllowed()
            .insert_header((header::ALLOW, "POST, DELETE"))
            .finish();
    }
    if !accepts(&req, &["text/event-stream"]) {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let session = match check_session(&state, &req) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Some(last_event_id) = last_event_id {
        return resume(&state, &session, &last_event_id);
    }
    let conflict = || {
        http_error(
            StatusCode::CONFLICT,
            -32000,
            "Conflict: Only one SSE stream is allowed per session",
        )
    };
    if mode == GetMode::Conflict {
        return conflict();
    }
    let open = lock(&state.sessions).get(&session).is_some_and(|s| {
        s.standalone
            .and_then(|stream| s.streams.get(&stream))
            .is_some_and(EventLog::attached)
    });
    if open {
        return conflict();
    }
    match open_stream(&state, &session, true, None) {
        Some((_, rx)) => sse_response(&state, rx),
        None => http_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
    }
}

pub(super) async fn delete(req: HttpRequest, state: web::Data<Shared>) -> HttpResponse {
    if let Some(refused) = bearer::refuse(&state, &req) {
        return refused;
    }
    lock(&state.counters).deletes += 1;
    let (modern, refused) = modern_head(&state, &req);
    state.see(&req, None, modern);
    if let Some(response) = overridden(&state) {
        return response;
    }
    if refused {
        return era::method_not_allowed();
    }
    match check_session(&state, &req) {
        Ok(session) => {
            lock(&state.sessions).remove(&session);
            HttpResponse::Ok().finish()
        }
        Err(response) => *response,
    }
}
