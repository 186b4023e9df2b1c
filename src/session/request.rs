//! A call's request as the session takes it: its params serialized once, into the JSON text
//! that goes on the wire, and kept as that text (not a `Value`) for a re-send after a lost
//! connection or the next round of a multi-round-trip request; and the caller's options.
//!
//! A typed call serializes straight from its fields (a [`CallTool`](crate::CallTool)'s name and
//! arguments, without a `Value` built around them); an untyped [`Call`](crate::Call) from its
//! `Value`, which goes with it. Only the rare paths read the text back (a progress token put
//! in, the rounds of 2026-07-28, the headers of a modern HTTP request).

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::policy::retry::RetryPolicy;

/// A call on its way into the call table.
pub(crate) struct CallRequest {
    /// Server name.
    pub server: String,
    /// JSON-RPC method: a typed call's is static.
    pub method: Cow<'static, str>,
    pub params: Option<Params>,
    /// For `tools/call`, the tool's name when the call came with it apart (a typed call):
    /// otherwise it is read from the params, on the paths that need it.
    pub tool: Option<String>,
    pub options: RequestOptions,
}

impl CallRequest {
    /// A request of `method` with `params` (as a `Value`) and default options: the session's
    /// own calls, and untyped ones.
    pub fn of_value(
        server: impl Into<String>,
        method: impl Into<Cow<'static, str>>,
        params: Option<&Value>,
    ) -> Self {
        CallRequest {
            server: server.into(),
            method: method.into(),
            params: params.map(Params::of_value),
            tool: None,
            options: RequestOptions::default(),
        }
    }
}

/// What the caller asked of its call beyond the request: the session's view of
/// [`CallOptions`](crate::CallOptions), with the actor's progress recipient behind
/// [`ProgressSink`].
pub(crate) struct RequestOptions {
    /// The server's `call_timeout` when `None`.
    pub timeout: Option<Duration>,
    pub retry: RetryPolicy,
    /// Where `notifications/progress` for this call go.
    pub progress: Option<Box<dyn ProgressSink>>,
    /// With progress: each notification restarts the timeout, within this total.
    pub reset_timeout_on_progress: Option<Duration>,
    /// The parent of the call's `mcp.call` span.
    pub parent: tracing::Span,
    /// A `tools/call` the server runs as a task is answered with the task's handle at once
    /// ([`StartTask`](crate::StartTask)), not with its end.
    pub start_task: bool,
    /// A session-era `tools/call` sent task-augmented (`params.task`, the 2025-11-25
    /// revision's experimental tasks): its answer may be a task.
    pub task_augmented: bool,
}

impl Default for RequestOptions {
    /// The server's timeout, the default retry policy, no progress, no parent span.
    fn default() -> Self {
        RequestOptions {
            timeout: None,
            retry: RetryPolicy::default(),
            progress: None,
            reset_timeout_on_progress: None,
            parent: tracing::Span::none(),
            start_task: false,
            task_augmented: false,
        }
    }
}

/// Where a call's progress notifications go (the application's `Recipient<Progress>`, in the
/// actor).
pub(crate) trait ProgressSink {
    /// One `notifications/progress` for the call, from `server`.
    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>);
}

/// Room for the params of a typical call at once: a buffer that grows while it is written costs
/// more than the rest of serializing it.
const TYPICAL_PARAMS: usize = 256;

/// A request's params as JSON text, serialized once.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// Our own compact serialization of a JSON value (UTF-8; kept as bytes, since it goes on
    /// the wire as bytes and checking it again would cost as much as copying it).
    json: Vec<u8>,
    /// An object without a `_meta` member: the 2026-07-28 revision's metadata can be put in
    /// front of its members as they are, without reading them.
    plain_object: bool,
}

impl Params {
    /// The params `value`.
    pub fn of_value(value: &Value) -> Params {
        let plain_object = value
            .as_object()
            .is_some_and(|map| !map.contains_key("_meta"));
        Params::of(value, plain_object)
    }

    /// The params `value` serializes to; `plain_object`: an object without `_meta`.
    pub fn of<T: Serialize + ?Sized>(value: &T, plain_object: bool) -> Params {
        let mut json = Vec::with_capacity(TYPICAL_PARAMS);
        // Only a map with non-string keys or a failing `Serialize` could fail; ours are
        // `Value`s and strings. Should one, the server gets empty params and says why.
        if serde_json::to_writer(&mut json, value).is_err() {
            json = b"{}".to_vec();
        }
        Params { json, plain_object }
    }

    /// The JSON text.
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    /// The members of a plain object (see [`Params::of`]) as JSON text, without the braces:
    /// empty for `{}`.
    pub fn members(&self) -> Option<&[u8]> {
        if !self.plain_object {
            return None;
        }
        // Our own serialization: compact, so the object is `{` members `}` exactly.
        self.json.strip_prefix(b"{")?.strip_suffix(b"}")
    }

    /// The params as a `Value`, for the paths that look into them.
    pub fn to_value(&self) -> Value {
        // The text is our own serialization of a `Value`: it parses.
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// The `name` member (a tool's or a prompt's), if the params are an object with one.
    pub fn name(&self) -> Option<Cow<'_, str>> {
        // Our own compact serialization: an object starts with its brace (a derived struct
        // would also read an array's first element as its `name`).
        if !self.json.starts_with(b"{") {
            return None;
        }
        #[derive(Deserialize)]
        struct Named<'a> {
            #[serde(borrow, default)]
            name: Option<Cow<'a, str>>,
        }
        serde_json::from_slice::<Named>(&self.json).ok()?.name
    }

    /// The params with `token` as `_meta.progressToken` (params that are not an object
    /// become an object with only `_meta`, as before they could carry none).
    pub fn with_progress_token(params: Option<&Params>, token: u64) -> Params {
        let mut object = match params.map(Params::to_value) {
            Some(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("progressToken".into(), json!(token));
        }
        Params::of(&object, false)
    }
}

/// `{"name": .., "arguments": ..}` of a tool call or a prompt, serialized from the call's own
/// fields.
#[derive(Serialize)]
pub(crate) struct NameAndArguments<'a> {
    pub name: &'a str,
    pub arguments: &'a serde_json::Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_object_gives_its_members() {
        let params = Params::of_value(&json!({"name": "echo", "arguments": {"a": 1}}));
        assert_eq!(
            params.members(),
            Some(&br#""arguments":{"a":1},"name":"echo""#[..])
        );
        assert_eq!(params.name().as_deref(), Some("echo"));
        assert_eq!(Params::of_value(&json!({})).members(), Some(&b""[..]));
        assert_eq!(Params::of_value(&json!({"_meta": {}})).members(), None);
        assert_eq!(Params::of_value(&json!([1])).members(), None);
        assert_eq!(Params::of_value(&json!(["echo"])).name(), None);
    }

    #[test]
    fn a_typed_call_serializes_from_its_fields() {
        let arguments = json!({"text": "a \"quoted\"\nline"});
        let fields = NameAndArguments {
            name: "echo",
            arguments: arguments.as_object().unwrap(),
        };
        let params = Params::of(&fields, true);
        assert_eq!(
            params.to_value(),
            json!({"name": "echo", "arguments": {"text": "a \"quoted\"\nline"}})
        );
        assert_eq!(params.name().as_deref(), Some("echo"));
    }

    #[test]
    fn the_progress_token_goes_into_meta_and_keeps_the_rest() {
        let params = Params::of_value(&json!({"name": "t", "_meta": {"trace": "x"}}));
        let with = Params::with_progress_token(Some(&params), 7);
        assert_eq!(
            with.to_value(),
            json!({"name": "t", "_meta": {"trace": "x", "progressToken": 7}})
        );
        assert_eq!(with.members(), None, "it has a _meta now");
        let none = Params::with_progress_token(None, 8);
        assert_eq!(none.to_value(), json!({"_meta": {"progressToken": 8}}));
        let odd = Params::of_value(&json!([1, 2]));
        assert_eq!(
            Params::with_progress_token(Some(&odd), 9).to_value(),
            json!({"_meta": {"progressToken": 9}})
        );
    }
}
