//! `subscriptions/listen`, the modern era's change notifications (spec
//! `basic/patterns/subscriptions.mdx`; our digest §4): the POST's answer is a long-lived SSE
//! stream that starts with `notifications/subscriptions/acknowledged` (the subset of the filter
//! the server honours) and then carries the notifications that filter asked for, each with
//! `params._meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id.
//!
//! The server honours `toolsListChanged` and `resourceSubscriptions` (it has `tools.listChanged`
//! and `resources.subscribe`), never `promptsListChanged` or `resourcesListChanged`. A listen
//! ends when the client closes its stream, gracefully when the server ends it (the listen's
//! JSON-RPC result, then the end of the stream: [`super::Faults::end_listens`],
//! [`super::Faults::end_listens_after`]), or abruptly ([`super::Faults::cut_listens`]). The
//! `drop_sse_after` switch does not apply to listens: it is for the next call's stream.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::state::{lock, Chunk, Shared};
use super::streams::sse_body;

/// The `_meta` key naming the subscription a message belongs to.
pub(super) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// At most this many URIs in one filter (more are refused with `-32602`).
const MAX_URIS: usize = 1000;

/// The open listens (streams whose client went away are pruned as they are found).
#[derive(Default)]
pub(super) struct Listens {
    next_key: u64,
    open: Vec<Listen>,
    /// Listens acknowledged since the server started.
    pub(super) opened: usize,
}

struct Listen {
    key: u64,
    /// The listen request's id: the subscription id.
    id: Value,
    /// The honoured filter, as acknowledged.
    filter: Value,
    tx: mpsc::UnboundedSender<Chunk>,
}

impl Listen {
    fn send(&self, message: &Value) -> bool {
        let frame = Bytes::from(format!("data: {message}\n\n"));
        self.tx.send(Chunk::Data(frame)).is_ok()
    }

    fn wants_uri(&self, uri: &str) -> bool {
        self.filter["resourceSubscriptions"]
            .as_array()
            .is_some_and(|uris| uris.iter().any(|u| u == uri))
    }

    /// The JSON-RPC result that ends the listen gracefully.
    fn end(&self) {
        let result = json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: self.id}});
        self.send(&json!({"jsonrpc": "2.0", "id": self.id, "result": result}));
    }
}

/// The subset of a requested filter that the server honours, or why the filter is invalid.
fn honoured(requested: Option<&Value>) -> Result<Value, String> {
    let Some(requested) = requested.and_then(Value::as_object) else {
        return Err("Invalid params: notifications must be an object".to_owned());
    };
    let mut filter = Map::new();
    if requested.get("toolsListChanged") == Some(&Value::Bool(true)) {
        filter.insert("toolsListChanged".into(), Value::Bool(true));
    }
    if let Some(uris) = requested.get("resourceSubscriptions") {
        let uris = uris
            .as_array()
            .filter(|uris| uris.len() <= MAX_URIS && uris.iter().all(Value::is_string))
            .ok_or("Invalid params: resourceSubscriptions must be at most 1000 strings")?;
        filter.insert("resourceSubscriptions".into(), Value::Array(uris.clone()));
    }
    Ok(Value::Object(filter))
}

/// Answers a modern `subscriptions/listen` (its headers already checked): the SSE stream, or
/// the `-32602` for an invalid filter.
pub(super) fn listen(
    state: &Arc<Shared>,
    id: Value,
    params: &Value,
) -> Result<HttpResponse, String> {
    let filter = honoured(params.get("notifications"))?;
    let (tx, rx) = mpsc::unbounded_channel();
    let (lifetime, ack_delay) = {
        let faults = lock(&state.faults);
        (faults.listen_lifetime_ms, faults.listen_ack_delay_ms)
    };
    let opened = state.clone();
    let open = move || {
        let key = {
            let mut listens = lock(&opened.listens);
            let key = listens.next_key;
            listens.next_key += 1;
            listens.opened += 1;
            let listen = Listen {
                key,
                id: id.clone(),
                filter: filter.clone(),
                tx,
            };
            // Registered and acknowledged under one lock: nothing can come before the ack.
            listen.send(&json!({
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": filter, "_meta": {SUBSCRIPTION_ID: id}},
            }));
            listens.open.push(listen);
            key
        };
        if let Some(ms) = lifetime {
            actix_web::rt::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                end_where(&opened, |listen| listen.key == key, false);
            });
        }
    };
    if ack_delay == 0 {
        open();
    } else {
        actix_web::rt::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ack_delay)).await;
            open();
        });
    }
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(sse_body(state.clone(), rx)))
}

/// Sends a notification to every open listen `wanted` picks, with its subscription id.
fn deliver(state: &Shared, method: &str, params: Value, wanted: impl Fn(&Listen) -> bool) {
    let mut listens = lock(&state.listens);
    listens.open.retain(|listen| {
        if listen.tx.is_closed() {
            return false;
        }
        if wanted(listen) {
            let mut params = params.clone();
            params["_meta"] = json!({SUBSCRIPTION_ID: listen.id});
            listen.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        }
        true
    });
}

/// `notifications/resources/updated` to every listen subscribed to `uri`.
pub(super) fn resource_updated(state: &Shared, uri: &str) {
    deliver(
        state,
        "notifications/resources/updated",
        json!({"uri": uri}),
        |listen| listen.wants_uri(uri),
    );
}

/// `notifications/tools/list_changed` to every listen that asked for it.
pub(super) fn tools_changed(state: &Shared) {
    deliver(
        state,
        "notifications/tools/list_changed",
        json!({}),
        |listen| listen.filter["toolsListChanged"] == Value::Bool(true),
    );
}

/// Ends the listens `which` picks: gracefully (their result, then the end of the stream) or
/// abruptly (`cut`: the connection drops without a result).
fn end_where(state: &Shared, which: impl Fn(&Listen) -> bool, cut: bool) {
    let mut listens = lock(&state.listens);
    listens.open.retain(|listen| {
        if !which(listen) {
            return !listen.tx.is_closed();
        }
        if cut {
            let _ = listen.tx.send(Chunk::Abort);
        } else {
            listen.end();
        }
        // Dropping the sender ends the body once the chunks above are sent.
        false
    });
}

/// Ends every open listen (see [`end_where`]).
pub(super) fn end_all(state: &Shared, cut: bool) {
    end_where(state, |_| true, cut);
}

/// The honoured filters of the open listens, oldest first.
pub(super) fn open_filters(state: &Shared) -> Vec<(Value, Value)> {
    let mut listens = lock(&state.listens);
    listens.open.retain(|listen| !listen.tx.is_closed());
    listens
        .open
        .iter()
        .map(|listen| (listen.id.clone(), listen.filter.clone()))
        .collect()
}
