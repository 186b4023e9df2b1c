//! The HTTP header rules of the 2026-07-28 revision: which headers mirror a request's body, and
//! what a tool's `x-mcp-header` annotations ask for (spec `basic/transports/streamable-http.mdx`
//! §Request Metadata and `server/tools.mdx` §x-mcp-header; our digest §3.1–3.3 and the
//! conformance scenarios `http-standard-headers`, `http-custom-headers` and
//! `http-invalid-tool-headers`, §7.3).
//!
//! - [`standard_headers`]: `Mcp-Method` on every request, `Mcp-Name` on `tools/call`,
//!   `prompts/get` and `resources/read`, and on the Tasks extension's `tasks/*` requests.
//! - [`header_value`] (in `value`): the encoding both `Mcp-Name` and `Mcp-Param-*` use: plain when
//!   safe, otherwise the Base64 sentinel `=?base64?…?=`.
//! - `annotations`: a tool's [`ParamBinding`]s, or why the tool is invalid and must be left out
//!   of the tool list ([`validate_tools`]).
//! - `mirror`: a call's arguments as `Mcp-Param-{Name}` headers ([`param_headers`]).
//!
//! Pure, like the rest of [`protocol`](crate::protocol): no IO and no HTTP types, names and values
//! are strings that are always valid in a header (names: `Mcp-` and RFC 9110 tokens; values:
//! visible ASCII and internal spaces), so the HTTP transport adds them as they are and every
//! rule is tested here without a server. `MCP-Protocol-Version` is the transport's, as it is
//! the same on every request.

mod annotations;
mod mirror;
mod value;

pub use annotations::{
    dropped_tool_message, param_bindings, tool_bindings, validate_tools, InvalidHeaderAnnotation,
    ParamBinding, Primitive, X_MCP_HEADER,
};
pub use mirror::{param_header, param_headers, Omitted, MAX_SAFE_INTEGER};
pub use value::{
    decode_header_value, header_value, needs_encoding, InvalidSentinel, SENTINEL_PREFIX,
    SENTINEL_SUFFIX,
};

use serde_json::Value;

/// The header that mirrors a request's `method`.
pub const MCP_METHOD: &str = "Mcp-Method";
/// The header that mirrors `params.name` (`tools/call`, `prompts/get`), `params.uri`
/// (`resources/read`) or `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`).
pub const MCP_NAME: &str = "Mcp-Name";
/// The start of every header that mirrors a tool argument: `Mcp-Param-{x-mcp-header}`.
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";

/// The body field `Mcp-Name` mirrors for `method`, if it has one.
pub fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The Tasks extension: so that a load balancer routes a task's requests to the
        // instance that holds it.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The standard headers of a request with this `method` and `params`: `Mcp-Method`, then
/// `Mcp-Name` where [`name_field`] names a field, both encoded with [`header_value`].
///
/// `Mcp-Name` is left out when that field is absent or not a string: such a body is invalid,
/// and the server's answer to it says so better than a header could. A method is a plain name
/// in practice and goes out as it is; one with characters no header can carry would be
/// wrapped like any value, so the result is always a valid header.
pub fn standard_headers(method: &str, params: Option<&Value>) -> Vec<(&'static str, String)> {
    let mut headers = vec![(MCP_METHOD, header_value(method))];
    let name = name_field(method).and_then(|field| params?.get(field)?.as_str());
    if let Some(name) = name {
        headers.push((MCP_NAME, header_value(name)));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(method: &str, params: Value) -> Vec<(&'static str, String)> {
        standard_headers(method, Some(&params))
    }

    #[test]
    fn every_request_has_mcp_method_and_only_three_have_mcp_name() {
        for method in [
            "server/discover",
            "subscriptions/listen",
            "tools/list",
            "resources/list",
            "prompts/list",
            "completion/complete",
        ] {
            assert_eq!(
                headers(method, json!({"name": "x", "uri": "y"})),
                [(MCP_METHOD, method.to_owned())]
            );
        }
        assert_eq!(
            standard_headers("tools/list", None),
            [(MCP_METHOD, "tools/list".to_owned())]
        );
    }

    #[test]
    fn mcp_name_is_the_raw_name_or_uri_when_it_is_safe() {
        // The http-standard-headers scenario compares these byte for byte.
        let cases = [
            (
                "tools/call",
                json!({"name": "test_headers", "arguments": {}}),
                "test_headers",
            ),
            (
                "tools/call",
                json!({"name": "my-hyphenated-tool"}),
                "my-hyphenated-tool",
            ),
            ("prompts/get", json!({"name": "test_prompt"}), "test_prompt"),
            (
                "resources/read",
                json!({"uri": "file:///path/to/file%20name.txt", "name": "not this"}),
                "file:///path/to/file%20name.txt",
            ),
            (
                "resources/read",
                json!({"uri": "https://example.com/resource?id=123"}),
                "https://example.com/resource?id=123",
            ),
            ("tasks/get", json!({"taskId": "786512e2"}), "786512e2"),
            (
                "tasks/update",
                json!({"taskId": "t-1", "inputResponses": {}}),
                "t-1",
            ),
            ("tasks/cancel", json!({"taskId": "t-1"}), "t-1"),
        ];
        for (method, params, name) in cases {
            assert_eq!(
                headers(method, params),
                [(MCP_METHOD, method.to_owned()), (MCP_NAME, name.to_owned())]
            );
        }
    }

    #[test]
    fn an_unsafe_name_is_wrapped_and_a_missing_one_is_left_out() {
        assert_eq!(
            headers("tools/call", json!({"name": "Hello, 世界"})),
            [
                (MCP_METHOD, "tools/call".to_owned()),
                (MCP_NAME, "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned())
            ]
        );
        for params in [json!({}), json!({"name": 42}), json!({"uri": "file:///a"})] {
            assert_eq!(
                headers("tools/call", params),
                [(MCP_METHOD, "tools/call".to_owned())]
            );
        }
        assert_eq!(
            standard_headers("resources/read", None),
            [(MCP_METHOD, "resources/read".to_owned())]
        );
    }

    #[test]
    fn a_method_no_header_can_carry_is_still_a_valid_header() {
        let out = headers("tools/call\r\nX-Injected: 1", json!({}));
        assert_eq!(out[0].1, header_value("tools/call\r\nX-Injected: 1"));
        assert!(out[0].1.starts_with(SENTINEL_PREFIX));
    }
}
