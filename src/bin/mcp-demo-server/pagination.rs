//! Cursor pagination of a list result (`tools/list`).
//!
//! Cursors are the start index as a decimal string: opaque to clients, trivial for us. Kept
//! apart so a client's handling of `nextCursor` can be tested against any page size
//! (`DEMO_TOOLS_PAGE_SIZE`) without reading the tools.

use serde_json::{json, Value};

use super::jsonrpc::{Args, Reply, RpcError};

/// The page of `items` that `params.cursor` asks for, under `key`, with `nextCursor` unless it
/// is the last page.
pub(crate) fn page(key: &str, items: &[Value], params: &Args, page_size: usize) -> Reply {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => cursor
            .parse::<usize>()
            .ok()
            .filter(|&start| start <= items.len())
            .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor: {cursor:?}")))?,
        Some(_) => return Err(RpcError::invalid_params("cursor must be a string")),
    };
    let end = start.saturating_add(page_size).min(items.len());
    let mut result = json!({ key: &items[start..end] });
    if end < items.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    Ok(result)
}
