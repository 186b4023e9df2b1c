//! The one call every client makes: `tools/call echo` with 100 bytes of text, against
//! `mcp-echo-server` over stdio or the test server over HTTP; the JSON-RPC shapes the raw
//! clients write and read; and the check that the echo came back right.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) const ECHO_BIN: &str = env!("CARGO_BIN_EXE_mcp-echo-server");
/// The text every echo call carries: 100 bytes.
pub(crate) const TEXT: &str = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs! 0123456789 abcd";

#[derive(Serialize)]
pub(crate) struct RawRequest<'a, P> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: u64,
    pub(crate) method: &'a str,
    pub(crate) params: P,
}

#[derive(Serialize)]
pub(crate) struct EchoParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: EchoArgs<'a>,
}

#[derive(Serialize)]
pub(crate) struct EchoArgs<'a> {
    pub(crate) text: &'a str,
}

impl EchoParams<'static> {
    /// `{"name": "echo", "arguments": {"text": TEXT}}`, serialized without a `Value`.
    pub(crate) fn echo() -> Self {
        EchoParams {
            name: "echo",
            arguments: EchoArgs { text: TEXT },
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct RawResponse {
    pub(crate) id: Option<u64>,
    #[serde(default)]
    pub(crate) result: Option<Value>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// `result.content[0].text` (without `Value::pointer`, which allocates per segment).
pub(crate) fn echo_text(result: &Value) -> Option<&Value> {
    result.get("content")?.get(0)?.get("text")
}

pub(crate) fn check_text(text: Option<&str>) {
    assert_eq!(text, Some(TEXT), "the echo came back wrong");
}

/// Checks an untyped `tools/call` result, as a raw client or `Call` gets it.
pub(crate) fn check_raw_result(result: Option<&Value>) {
    check_text(result.and_then(echo_text).and_then(Value::as_str));
}

/// Checks a typed tool result: its first content block is the echoed text.
pub(crate) fn check_result(result: &rmcp::model::CallToolResult) {
    check_text(
        result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str()),
    );
}
