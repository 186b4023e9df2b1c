//! The modern (2026-07-28, stateless) service: what a POST classified modern (`era`) gets once
//! its headers pass the rules (`headers`). No sessions: no `Mcp-Session-Id` is ever minted or
//! looked at, no GET stream, no DELETE, no event ids, no resumption.
//!
//! - `server/discover` → `supportedVersions`, `capabilities`, `ttlMs`
//!   ([`super::Faults::discover_ttl_ms`]), `cacheScope: "private"` and
//!   `_meta["io.modelcontextprotocol/serverInfo"]`.
//! - `tools/list`, `resources/read` → as in the legacy era, with `ttlMs`
//!   ([`super::Faults::list_ttl_ms`]) and `cacheScope`; the list is `modern_tools::listed`.
//! - `tools/call` → an SSE stream (progress notifications, then the response) or JSON, by the
//!   same switches as the legacy era; a cut stream (`drop_sse_after`) loses the request, the
//!   tool still runs to its end. `confirm` is answered by `mrtr`; `requestState` or
//!   `inputResponses` on any other tool is `-32602`, a sign that a flow's state leaked.
//! - `subscriptions/listen` → `listen`.
//! - Anything else (`ping`, `initialize`'s friends, `resources/subscribe`, `logging/setLevel`:
//!   all removed) → HTTP 404 with `-32601`.
//!
//! Every result carries `resultType` (`"complete"` unless it is an `input_required`) and, unless
//! [`super::Faults::server_info`] is off, `_meta["io.modelcontextprotocol/serverInfo"]`.
//! Notifications and responses POSTed by the client get `202`, without header checks.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::era::reject;
use super::handlers::{http_error, reply, server_capabilities, server_info};
use super::headers::{check_params, check_request};
use super::state::{lock, Shared};
use super::streams::{sse_response, Direct};
use super::tools::{read_resource, run_tool, Caller, Emit};
use super::{listen, modern_tools, mrtr, tasks};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Serves one modern POST (already parsed, classified and counted).
pub(super) async fn post(
    req: &HttpRequest,
    state: Arc<Shared>,
    message: Map<String, Value>,
) -> HttpResponse {
    lock(&state.counters).modern_posts += 1;
    let message = Value::Object(message);
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let (Some(method), Some(id)) = (method, id) else {
        if method.is_some() || message.get("result").is_some() || message.get("error").is_some() {
            return HttpResponse::Accepted().finish();
        }
        return http_error(StatusCode::BAD_REQUEST, -32600, "Invalid Request");
    };
    let versions = lock(&state.faults).modern_versions.clone();
    if let Err(broken) = check_request(req, &message, &versions) {
        let status = StatusCode::BAD_REQUEST;
        return reject(
            &state,
            status,
            id,
            broken.code,
            &broken.message,
            broken.data,
        );
    }
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    match method {
        "server/discover" => answer(&state, &id, Ok(discover(&state))),
        "tools/list" => {
            let list = json!({"tools": modern_tools::listed(&state)});
            answer(&state, &id, Ok(cacheable(&state, list)))
        }
        "resources/read" => {
            let read = read_resource(&params).map(|r| cacheable(&state, r));
            answer(&state, &id, read)
        }
        "tools/call" => tools_call(req, state, id, &params).await,
        "tasks/get" | "tasks/cancel" => {
            let replica = req
                .headers()
                .get(tasks::REPLICA_HEADER)
                .and_then(|v| v.to_str().ok());
            let answered = tasks::answer(&state, method, &params, replica);
            answer(&state, &id, answered)
        }
        "subscriptions/listen" => match listen::listen(&state, id.clone(), &params) {
            Ok(stream) => stream,
            Err(message) => answer(&state, &id, Err((-32602, message))),
        },
        _ => reject(
            &state,
            StatusCode::NOT_FOUND,
            id,
            -32601,
            &format!("Method not found: {method}"),
            None,
        ),
    }
}

/// A modern result: `resultType` (`"complete"` unless set) and the server info in `_meta`.
pub(super) fn shaped(state: &Shared, mut result: Value) -> Value {
    let with_info = lock(&state.faults).server_info;
    if let Some(object) = result.as_object_mut() {
        object
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if with_info {
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(SERVER_INFO.to_owned(), server_info());
            }
        }
    }
    result
}

/// A JSON answer (`200`, errors in band).
fn answer(state: &Shared, id: &Value, result: Result<Value, (i64, String)>) -> HttpResponse {
    HttpResponse::Ok().json(reply(id, result.map(|r| shaped(state, r))))
}

/// `ttlMs` and `cacheScope`, as the revision wants on lists and reads.
fn cacheable(state: &Shared, mut result: Value) -> Value {
    let ttl = lock(&state.faults).list_ttl_ms;
    result["ttlMs"] = json!(ttl);
    result["cacheScope"] = json!("private");
    result
}

fn discover(state: &Shared) -> Value {
    let (versions, ttl) = {
        let faults = lock(&state.faults);
        (faults.modern_versions.clone(), faults.discover_ttl_ms)
    };
    json!({
        "supportedVersions": versions,
        "capabilities": server_capabilities(),
        "ttlMs": ttl,
        "cacheScope": "private",
    })
}

async fn tools_call(
    req: &HttpRequest,
    state: Arc<Shared>,
    id: Value,
    params: &Value,
) -> HttpResponse {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(schema) = modern_tools::input_schema(&name) else {
        return answer(&state, &id, Err((-32602, format!("Unknown tool: {name}"))));
    };
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    if !name.starts_with("bad_") {
        if let Err(broken) = check_params(req, &schema, &args) {
            let status = StatusCode::BAD_REQUEST;
            return reject(
                &state,
                status,
                id,
                broken.code,
                &broken.message,
                broken.data,
            );
        }
    }
    if name == "job" {
        let created = if tasks::declares_tasks(params) {
            tasks::create(&state, &args)
        } else {
            tasks::run_in_request(&args).await
        };
        return answer(&state, &id, Ok(created));
    }
    let mrtr_params =
        params.get("requestState").is_some() || params.get("inputResponses").is_some();
    if name != "confirm" && mrtr_params {
        let message =
            format!("Invalid params: {name} asked for no input: no requestState or inputResponses");
        return answer(&state, &id, Err((-32602, message)));
    }
    if name == "confirm" && !mrtr::declares_elicitation(params) {
        let data = json!({"requiredCapabilities": {"elicitation": {}}});
        let message = "Missing required client capability: elicitation";
        return reject(
            &state,
            StatusCode::BAD_REQUEST,
            id,
            -32021,
            message,
            Some(data),
        );
    }
    let (json_mode, budget) = {
        let mut faults = lock(&state.faults);
        if faults.json_responses {
            (true, None)
        } else {
            (false, faults.drop_sse_after.take())
        }
    };
    let token = params.pointer("/_meta/progressToken").cloned();
    let params = params.clone();
    let run = move |state: Arc<Shared>, progress: Option<Emit>| async move {
        let result = if name == "confirm" {
            mrtr::confirm(&state, &id, &params)
        } else {
            let progress = token.zip(progress);
            run_tool(&state, &Caller::Modern, &name, &args, progress).await
        };
        reply(&id, result.map(|r| shaped(&state, r)))
    };
    // The tool runs in its own task, so it finishes even if the client goes away.
    if json_mode {
        let (tx, rx) = oneshot::channel();
        let task = run(state.clone(), None);
        actix_web::rt::spawn(async move {
            let _ = tx.send(task.await);
        });
        let response = rx.await.unwrap_or_else(|_| {
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "tool task failed"}})
        });
        return HttpResponse::Ok().json(response);
    }
    let (direct, rx) = Direct::open(budget);
    let task_state = state.clone();
    actix_web::rt::spawn(async move {
        let response = run(task_state, Some(Emit::Direct(direct.clone()))).await;
        direct.send(&response, true);
    });
    sse_response(&state, rx)
}
