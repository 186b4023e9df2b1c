//! The header-value codec of the 2026-07-28 revision (`protocol::headers`, `value.rs`): a value
//! goes out plain when it is a safe field value, otherwise as the Base64 sentinel
//! `=?base64?…?=`.
//!
//! Sending (any UTF-8 text): the result is a valid header value (visible ASCII and internal
//! spaces only), plain exactly when `needs_encoding` says so, no longer than its Base64 form,
//! and it decodes back to the text; `Mcp-Method` and `Mcp-Name` are that encoding.
//! Receiving (any text): a value not in the sentinel form decodes to itself; one in it decodes
//! only from canonical padded Base64 of UTF-8 (encoding the result again gives the same
//! Base64); and whatever decodes, encoded again, decodes to the same text.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use mcp_supervisor::protocol::headers::{
    decode_header_value, header_value, needs_encoding, standard_headers, MCP_METHOD, MCP_NAME,
    SENTINEL_PREFIX, SENTINEL_SUFFIX,
};
use serde_json::json;

/// Fuzz entry: the input as a value to send (when it is UTF-8) and as one received.
pub fn fuzz_header_value(data: &[u8]) {
    if let Ok(value) = std::str::from_utf8(data) {
        check_sending(value);
    }
    check_receiving(&String::from_utf8_lossy(data));
}

/// What the client sends for `value`.
pub fn check_sending(value: &str) {
    let out = header_value(value);
    assert!(is_header_value(&out), "{value:?} went out as {out:?}");
    assert_eq!(out == value, !needs_encoding(value), "{value:?} → {out:?}");
    assert_eq!(out.is_empty(), value.is_empty());
    let base64_len = SENTINEL_PREFIX.len() + value.len().div_ceil(3) * 4 + SENTINEL_SUFFIX.len();
    assert!(out.len() <= base64_len.max(value.len()));
    assert_eq!(decode_header_value(&out).as_deref(), Ok(value));
    // The standard headers are that encoding: a method or a tool name is any server's text.
    let headers = standard_headers("tools/call", Some(&json!({ "name": value })));
    assert_eq!(
        headers,
        [
            (MCP_METHOD, "tools/call".to_owned()),
            (MCP_NAME, out.clone())
        ]
    );
    let headers = standard_headers(value, None);
    assert_eq!(headers[0], (MCP_METHOD, out));
}

/// What a server makes of a header value `received`.
pub fn check_receiving(received: &str) {
    let inner = received
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX));
    match (decode_header_value(received), inner) {
        (Ok(decoded), None) => assert_eq!(decoded, received),
        (Ok(decoded), Some(inner)) => {
            assert_eq!(STANDARD.encode(decoded.as_bytes()), inner, "not canonical")
        }
        (Err(e), None) => panic!("a plain value was refused: {e}"),
        (Err(_), Some(_)) => return,
    }
    let decoded = decode_header_value(received).unwrap_or_default();
    assert_eq!(
        decode_header_value(&header_value(&decoded)).as_ref(),
        Ok(&decoded)
    );
}

/// A valid HTTP field value as the codec promises it: visible ASCII and internal spaces only.
pub fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
}
