//! JSON-RPC frames (`protocol::jsonrpc`) and the plain-response fast path
//! (`protocol::response`): any bytes give messages or a frame error, and the fast path agrees
//! with the full parse.

use bytes::Bytes;
use mcp_supervisor::protocol::jsonrpc::{parse_frame, Id, Inbound};
use mcp_supervisor::protocol::response::plain_response;

/// Fuzz entry: any bytes parse into messages or a frame error, never a panic; and a line taken
/// for a plain response by its fixed parts alone is exactly what the full parse makes of it.
pub fn fuzz_jsonrpc_frame(data: &[u8]) {
    let full = parse_frame(data);
    check_plain_response(data, &full);
}

/// The rule of the plain-response fast path: a line it takes is confirmed exactly when the
/// full parse makes it that one response (then its result is the same), and otherwise the
/// line goes where the full parse puts it; a result that parses is always the full parse's.
pub fn check_plain_response(
    data: &[u8],
    full: &Result<Vec<Inbound>, mcp_supervisor::protocol::jsonrpc::FrameError>,
) {
    let Some((id, result)) = plain_response(&Bytes::copy_from_slice(data)) else {
        return;
    };
    let full_response = match full.as_deref() {
        Ok([Inbound::Response { id: got, result }]) if *got == Id::Number(id) => {
            Some(result.to_value())
        }
        _ => None,
    };
    assert_eq!(
        result.unless_plain().is_none(),
        full_response.is_some(),
        "confirmed exactly when the full parse finds this response"
    );
    if let Ok(value) = result.to_value() {
        let full_value = full_response.expect("a result that parses is the full parse's");
        assert_eq!(full_value.ok(), Some(value));
    }
}
