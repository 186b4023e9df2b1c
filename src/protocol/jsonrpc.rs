//! JSON-RPC 2.0 messages as MCP uses them: serializing our requests and notifications, and
//! parsing one inbound frame into typed items. Pure: no IO.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::response::RawResult;

/// JSON-RPC error codes used by this crate.
pub mod codes {
    /// The method does not exist / is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Invalid method parameter(s); for the Tasks extension's requests, a task the server does
    /// not know.
    pub const INVALID_PARAMS: i64 = -32602;
}

/// A request id as it appears on the wire. Ours are always numbers; servers may use strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl Id {
    /// The id as one of ours (non-negative number), if it is one.
    pub fn as_ours(&self) -> Option<u64> {
        match self {
            Id::Number(n) => u64::try_from(*n).ok(),
            Id::String(_) => None,
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// Hands out the request ids of one server. Every request on its connections (the handshake,
/// calls, liveness pings, tool-list refreshes) takes the next one, so no id is ever used twice:
/// a late or duplicated answer can match nothing but the request it was for. Clones share the
/// sequence.
#[derive(Debug, Clone, Default)]
pub struct RequestIds(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl RequestIds {
    /// The next unused id.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// The error member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// Error code.
    pub code: i64,
    /// Short description.
    pub message: String,
    /// Additional information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message, no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// One message received from a server.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// A successful response to one of our requests.
    Response {
        /// The id of our request.
        id: Id,
        /// The result, as its JSON text: parsed once, by whoever knows what it should be
        /// (straight into a typed call's output, say), and not before.
        result: RawResult,
    },
    /// An error response. `id` is `None` when the server could not tell which request failed.
    Error {
        /// The id of our request, if the server knew it.
        id: Option<Id>,
        /// The error.
        error: RpcError,
    },
    /// A request from the server (e.g. `roots/list`, `sampling/createMessage`, `ping`).
    Request {
        /// The server's id, to be echoed in our answer.
        id: Id,
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Value>,
    },
    /// A notification from the server.
    Notification {
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Value>,
    },
}

/// Why a frame could not be turned into messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not JSON at all.
    NotJson(String),
    /// JSON, but not a JSON-RPC message.
    NotJsonRpc(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::NotJson(e) => write!(f, "not JSON: {e}"),
            FrameError::NotJsonRpc(e) => write!(f, "not a JSON-RPC message: {e}"),
        }
    }
}

/// Keeps an explicit `null` apart from an absent member (`"result": null` is still a result).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// [`present`], for a member kept as its JSON text.
fn present_raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present_raw")]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Parses one frame (a line on stdio, a body or SSE event on HTTP) into messages: one, or several
/// for a JSON-RPC batch.
pub fn parse_frame(bytes: &[u8]) -> Result<Vec<Inbound>, FrameError> {
    let mut messages = Vec::new();
    parse_frame_into(bytes, &mut messages)?;
    Ok(messages)
}

/// [`parse_frame`], appending the messages to `out` (a reader's queue): a frame of one
/// message, the usual, allocates no list of its own. A batch is all or nothing, as there.
pub(crate) fn parse_frame_into(
    bytes: &[u8],
    out: &mut impl Extend<Inbound>,
) -> Result<(), FrameError> {
    // Straight into the message's fields, without an intermediate `Value` tree: this runs for
    // every message, so one walk over the bytes matters.
    let batch = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    if batch {
        let raws: Vec<RawMessage> =
            serde_json::from_slice(bytes).map_err(|e| frame_error(bytes, e))?;
        let messages = raws
            .into_iter()
            .map(classify)
            .collect::<Result<Vec<_>, _>>()?;
        out.extend(messages);
    } else {
        let raw: RawMessage = serde_json::from_slice(bytes).map_err(|e| frame_error(bytes, e))?;
        out.extend(std::iter::once(classify(raw)?));
    }
    Ok(())
}

/// [`parse_frame_into`] for a stdio line: a response of a plain shape is taken by its fixed
/// parts (see [`plain_response`](super::response::plain_response)), its result parsed only by
/// its caller, who confirms it.
#[cfg(feature = "stdio")]
pub(crate) fn parse_line_into(
    line: &bytes::Bytes,
    out: &mut impl Extend<Inbound>,
) -> Result<(), FrameError> {
    match super::response::plain_response(line) {
        Some((id, result)) => {
            out.extend(std::iter::once(Inbound::Response {
                id: Id::Number(id),
                result,
            }));
            Ok(())
        }
        None => parse_frame_into(line, out),
    }
}

/// Tells "not JSON" from "JSON, but not JSON-RPC" (only on the error path).
fn frame_error(bytes: &[u8], error: serde_json::Error) -> FrameError {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => FrameError::NotJsonRpc(error.to_string()),
        Err(_) => FrameError::NotJson(error.to_string()),
    }
}

fn classify(raw: RawMessage) -> Result<Inbound, FrameError> {
    let id = match raw.id {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(Id::Number(n)),
            None => {
                return Err(FrameError::NotJsonRpc(
                    "id must be an integer or a string".into(),
                ))
            }
        },
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(_) => {
            return Err(FrameError::NotJsonRpc(
                "id must be a number or a string".into(),
            ))
        }
    };
    match (raw.method, id, raw.result, raw.error) {
        (Some(method), Some(id), _, _) => Ok(Inbound::Request {
            id,
            method,
            params: raw.params,
        }),
        (Some(method), None, _, _) => Ok(Inbound::Notification {
            method,
            params: raw.params,
        }),
        (None, id, _, Some(error)) => Ok(Inbound::Error { id, error }),
        (None, Some(id), Some(result), None) => Ok(Inbound::Response {
            id,
            result: RawResult::of_text(result),
        }),
        _ => Err(FrameError::NotJsonRpc(
            "neither a request, a notification nor a response".into(),
        )),
    }
}

#[derive(Serialize)]
struct OutRequest<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct OutNotification<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct OutResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

fn to_line<T: Serialize>(msg: &T) -> Vec<u8> {
    // Serializing our own structs of strings and `Value`s cannot fail (no maps with non-string
    // keys, no failing Serialize impls).
    // Room for a typical request at once (`to_vec` starts smaller and grows on every call).
    let mut line = Vec::with_capacity(256);
    if serde_json::to_writer(&mut line, msg).is_err() {
        line.clear();
    }
    line.push(b'\n');
    line
}

/// A request, newline-terminated.
pub fn request_line(id: u64, method: &str, params: Option<&Value>) -> Vec<u8> {
    to_line(&OutRequest {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// A request whose params are the JSON text `pieces` put together (which must make one JSON
/// value; no pieces, no params), newline-terminated, appended to `out` (a writer's buffer):
/// params serialized once are copied as they are, not serialized again.
///
/// The envelope is written by hand, byte for byte what serde writes for it (a test holds the
/// two together): on the hot path, serde's serializer cost several times the rest of the
/// request.
pub(crate) fn write_request(out: &mut Vec<u8>, id: u64, method: &str, pieces: &[&[u8]]) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(b",\"method\":");
    write_string(out, method);
    if !pieces.is_empty() {
        out.extend_from_slice(b",\"params\":");
        for piece in pieces {
            out.extend_from_slice(piece);
        }
    }
    out.extend_from_slice(b"}\n");
}

/// `text` as a JSON string: as it is between quotes when nothing in it needs escaping (a
/// method name always), otherwise as serde escapes it.
fn write_string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, text).is_err() {
        // Writing to a Vec does not fail; an empty string keeps the line valid JSON anyway.
        out.extend_from_slice(b"\"\"");
    }
}

/// A notification, newline-terminated.
pub fn notification_line(method: &str, params: Option<&Value>) -> Vec<u8> {
    to_line(&OutNotification {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// A response to a server's request, newline-terminated.
pub fn response_line(id: &Id, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    to_line(&OutResponse {
        jsonrpc: "2.0",
        id,
        result,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_each_kind() {
        let got = parse_frame(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#).unwrap();
        match &got[..] {
            [Inbound::Response { id, result }] => {
                assert_eq!(id, &Id::Number(3));
                let result: Value = result.to_value().unwrap();
                assert_eq!(result, json!({"a":1}));
            }
            other => panic!("expected one response, got {other:?}"),
        }
        let got = parse_frame(br#"{"jsonrpc":"2.0","id":4,"result":null}"#).unwrap();
        assert!(matches!(
            &got[0],
            Inbound::Response { result, .. } if result.to_value().unwrap() == Value::Null
        ));
        let got =
            parse_frame(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
                .unwrap();
        assert!(matches!(&got[0], Inbound::Error { id: None, error } if error.code == -32700));
        let got = parse_frame(br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#).unwrap();
        assert!(
            matches!(&got[0], Inbound::Request { id: Id::String(s), method, .. } if s == "s1" && method == "roots/list")
        );
        let got = parse_frame(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#)
            .unwrap();
        assert!(matches!(&got[0], Inbound::Notification { .. }));
    }

    #[test]
    fn batches_yield_several_messages() {
        let got = parse_frame(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]"#,
        )
        .unwrap();
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(matches!(parse_frame(b"hello"), Err(FrameError::NotJson(_))));
        assert!(matches!(
            parse_frame(b"{\"a\":"),
            Err(FrameError::NotJson(_))
        ));
        assert!(matches!(parse_frame(b"42"), Err(FrameError::NotJsonRpc(_))));
        assert!(matches!(parse_frame(b"{}"), Err(FrameError::NotJsonRpc(_))));
        assert!(matches!(
            parse_frame(br#"{"id":{"x":1},"result":1}"#),
            Err(FrameError::NotJsonRpc(_))
        ));
        assert!(matches!(
            parse_frame(br#"{"id":1,"error":"bad"}"#),
            Err(FrameError::NotJsonRpc(_))
        ));
    }

    #[test]
    fn serializes_requests_and_responses() {
        let line = request_line(7, "tools/call", Some(&json!({"name":"echo"})));
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n"
        );
        let line = notification_line("notifications/initialized", None);
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
        let line = response_line(&Id::String("a".into()), &Err(RpcError::new(-32601, "no")));
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32601,\"message\":\"no\"}}\n"
        );
        assert_eq!(Id::Number(-1).as_ours(), None);
        assert_eq!(Id::Number(5).as_ours(), Some(5));
    }

    /// What serde writes for a request: the hand-written envelope must be the same bytes.
    fn as_serde_writes(id: u64, method: &str, params: Option<&Value>) -> Vec<u8> {
        request_line(id, method, params)
    }

    fn written(id: u64, method: &str, params: Option<&Value>) -> Vec<u8> {
        let mut out = b"before".to_vec();
        let json = params.map(|p| serde_json::to_vec(p).unwrap());
        let pieces: Vec<&[u8]> = json.iter().map(Vec::as_slice).collect();
        write_request(&mut out, id, method, &pieces);
        assert!(out.starts_with(b"before"), "appended, not replaced");
        out.split_off(6)
    }

    #[test]
    fn a_written_request_is_the_bytes_serde_writes() {
        let params = json!({"name": "echo", "arguments": {"text": "hé \"q\" \n"}});
        for id in [0, 7, 10, 4_294_967_296, u64::MAX] {
            for method in [
                "tools/call",
                "",
                "a\"b",
                "back\\slash",
                "tab\there",
                "\u{1}",
                "é/∂",
                "\u{7f}",
            ] {
                for params in [None, Some(&params)] {
                    assert_eq!(
                        String::from_utf8(written(id, method, params)).unwrap(),
                        String::from_utf8(as_serde_writes(id, method, params)).unwrap(),
                        "id {id}, method {method:?}"
                    );
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_method_and_id_are_written_as_serde_writes_them(id in proptest::num::u64::ANY, method in proptest::prelude::any::<String>()) {
            proptest::prop_assert_eq!(written(id, &method, None), as_serde_writes(id, &method, None));
        }
    }
}
