//! The tools (`echo`, `slow`, `counter`, `notify_resource`; in the modern era also `echo_region`,
//! `confirm` and the tools with invalid `x-mcp-header` annotations) and the resources the server
//! serves.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::handlers::{http_error, reply};
use super::listen;
use super::state::{lock, Shared};
use super::streams::{open_stream, sse_response, Direct};
use super::TOOLS;

/// Who runs a tool: a legacy session, or a modern request (no session).
pub(super) enum Caller {
    Session(String),
    Modern,
}

/// Where a running tool's progress notifications go.
pub(super) enum Emit {
    /// A stream of a legacy session (stored for resumption).
    Session { session: String, stream: u64 },
    /// A modern request's response stream.
    Direct(Direct),
}

impl Emit {
    fn emit(&self, state: &Shared, message: &Value) {
        match self {
            Emit::Session { session, stream } => state.emit(session, *stream, message, false),
            Emit::Direct(direct) => direct.send(message, false),
        }
    }
}

// ---- tools and resources ----

pub(super) fn tools_list() -> Value {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    json!({"tools": [
        {
            "name": "echo",
            "description": "Answers its text.",
            "inputSchema": object(json!({"text": {"type": "string"}}), &["text"]),
            "annotations": {"readOnlyHint": true},
        },
        {
            "name": "slow",
            "description": "Takes `seconds`, sending a progress notification after each of `steps` steps.",
            "inputSchema": object(
                json!({"seconds": {"type": "number"}, "steps": {"type": "integer"}}),
                &[],
            ),
            "annotations": {"readOnlyHint": true},
        },
        {
            "name": "counter",
            "description": "Increments the server's counter and answers its value.",
            "inputSchema": object(json!({}), &[]),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false},
        },
        {
            "name": "notify_resource",
            "description": "Sends notifications/resources/updated for `uri` if it is subscribed.",
            "inputSchema": object(json!({"uri": {"type": "string"}}), &["uri"]),
            "annotations": {"readOnlyHint": true},
        },
    ]})
}

/// `tools/call`: answered with JSON or with an SSE stream fed by the running tool.
pub(super) async fn tools_call(
    state: Arc<Shared>,
    session: String,
    id: Value,
    params: &Value,
) -> HttpResponse {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !TOOLS.contains(&name.as_str()) {
        let error = Err((-32602, format!("Unknown tool: {name}")));
        return HttpResponse::Ok().json(reply(&id, error));
    }
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let token = params.pointer("/_meta/progressToken").cloned();
    let (json_mode, budget) = {
        let mut faults = lock(&state.faults);
        if faults.json_responses {
            (true, None)
        } else {
            (false, faults.drop_sse_after.take())
        }
    };
    // The tool runs in its own task, so it finishes even if the client goes away.
    if json_mode {
        let (tx, rx) = oneshot::channel();
        let task_state = state.clone();
        actix_web::rt::spawn(async move {
            let caller = Caller::Session(session);
            let _ = tx.send(run_tool(&task_state, &caller, &name, &args, None).await);
        });
        let result = rx
            .await
            .unwrap_or_else(|_| Err((-32603, "tool task failed".to_owned())));
        return HttpResponse::Ok().json(reply(&id, result));
    }
    let Some((stream, rx)) = open_stream(&state, &session, false, budget) else {
        return http_error(StatusCode::NOT_FOUND, -32001, "Session not found");
    };
    let task_state = state.clone();
    actix_web::rt::spawn(async move {
        let progress = token.map(|token| {
            let session = session.clone();
            (token, Emit::Session { session, stream })
        });
        let caller = Caller::Session(session.clone());
        let result = run_tool(&task_state, &caller, &name, &args, progress).await;
        task_state.emit(&session, stream, &reply(&id, result), true);
    });
    sse_response(&state, rx)
}

/// Executes a tool. `progress`: the progress token and where to send notifications.
pub(super) async fn run_tool(
    state: &Shared,
    caller: &Caller,
    name: &str,
    args: &Value,
    progress: Option<(Value, Emit)>,
) -> Result<Value, (i64, String)> {
    *lock(&state.counters)
        .tool_calls
        .entry(name.to_owned())
        .or_default() += 1;
    let text = match name {
        "echo" => {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
            format!("{}{text}", lock(&state.faults).echo_prefix)
        }
        "counter" => (state.counter.fetch_add(1, Ordering::SeqCst) + 1).to_string(),
        "notify_resource" => {
            let uri = args.get("uri").and_then(Value::as_str).unwrap_or_default();
            match caller {
                Caller::Session(session) => notify_resource(state, session, uri),
                Caller::Modern => listen::resource_updated(state, uri),
            }
            "ok".to_owned()
        }
        "slow" => {
            slow(state, args, progress).await;
            "done".to_owned()
        }
        "echo_region" if matches!(caller, Caller::Modern) => {
            let region = args.get("region").and_then(Value::as_str);
            let text = args.get("text").and_then(Value::as_str);
            format!(
                "{}: {}",
                region.unwrap_or_default(),
                text.unwrap_or_default()
            )
        }
        bad if matches!(caller, Caller::Modern) && bad.starts_with("bad_") => {
            "this tool should have been dropped from the list".to_owned()
        }
        _ => return Err((-32602, format!("Unknown tool: {name}"))),
    };
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": false}))
}

/// The `slow` tool: `seconds` (default 1) split into `steps` (default 1) sleeps, each followed
/// by a progress notification when the call asked for progress.
pub(super) async fn slow(state: &Shared, args: &Value, progress: Option<(Value, Emit)>) {
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
    let seconds = if seconds.is_finite() {
        seconds.clamp(0.0, 3600.0)
    } else {
        0.0
    };
    let steps = args
        .get("steps")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .min(10_000);
    if steps == 0 {
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        return;
    }
    let step = Duration::from_secs_f64(seconds / steps as f64);
    for done in 1..=steps {
        tokio::time::sleep(step).await;
        if let Some((token, emit)) = &progress {
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": token,
                    "progress": done,
                    "total": steps,
                    "message": format!("step {done}/{steps}"),
                },
            });
            emit.emit(state, &notification);
        }
    }
}

/// Sends `notifications/resources/updated` on the session's standalone stream, if `uri` is
/// subscribed and a client is attached to that stream (otherwise the notification is lost).
pub(super) fn notify_resource(state: &Shared, session: &str, uri: &str) {
    let mut sessions = lock(&state.sessions);
    let Some(session) = sessions.get_mut(session) else {
        return;
    };
    if !session.subscriptions.contains(uri) {
        return;
    }
    let Some(stream) = session.standalone else {
        return;
    };
    if let Some(log) = session.streams.get_mut(&stream) {
        if log.attached() {
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": uri},
            });
            log.push(stream, &notification, false);
        }
    }
}

pub(super) fn subscribe(
    state: &Shared,
    session: &str,
    params: &Value,
    on: bool,
) -> Result<Value, (i64, String)> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err((-32602, "missing uri".to_owned()));
    };
    if let Some(session) = lock(&state.sessions).get_mut(session) {
        if on {
            session.subscriptions.insert(uri.to_owned());
        } else {
            session.subscriptions.remove(uri);
        }
    }
    Ok(json!({}))
}

pub(super) fn read_resource(params: &Value) -> Result<Value, (i64, String)> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err((-32602, "missing uri".to_owned()));
    };
    Ok(json!({"contents": [
        {"uri": uri, "mimeType": "text/plain", "text": format!("contents of {uri}")},
    ]}))
}

/// Sends `notifications/tools/list_changed` on every legacy session's standalone stream that
/// has a client attached ([`super::Faults::tools_changed`]).
pub(super) fn tools_changed(state: &Shared) {
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    for session in lock(&state.sessions).values_mut() {
        let Some(stream) = session.standalone else {
            continue;
        };
        if let Some(log) = session.streams.get_mut(&stream) {
            if log.attached() {
                log.push(stream, &notification, false);
            }
        }
    }
}
