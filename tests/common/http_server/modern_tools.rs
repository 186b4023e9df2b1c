//! The tools only the modern era has: `echo_region`, whose arguments are mirrored into
//! `Mcp-Param-*` headers (`x-mcp-header`), `confirm`, which asks for input by multi round-trip
//! (`mrtr`), and, behind [`super::Faults::invalid_header_tools`], tools whose annotations are
//! invalid and that a client must leave out of its list.
//!
//! All of them can be called in the modern era whether listed or not; they are listed only
//! when their switch is on, so that by default both eras list the same four tools and a test
//! that counts them holds in either.

use serde_json::{json, Value};

use super::state::{lock, Shared};
use super::tools::tools_list;

/// The names of the tools with invalid annotations.
pub const INVALID_HEADER_TOOLS: [&str; 5] = [
    "bad_number_header",
    "bad_name_header",
    "bad_duplicate_header",
    "bad_array_header",
    "bad_empty_header",
];

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// `echo_region {region, text, priority?}` and `confirm {}`.
fn header_and_input_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "echo_region",
            "description": "Answers `<region>: <text>`; `region` and `priority` travel as headers too.",
            "inputSchema": object(
                json!({
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "text": {"type": "string"},
                    "priority": {"type": "integer", "x-mcp-header": "Priority"},
                }),
                &["region", "text"],
            ),
            "annotations": {"readOnlyHint": true},
        }),
        json!({
            "name": "confirm",
            "description": "Asks the user to confirm (multi round-trip), then answers `confirmed: <ok>`.",
            "inputSchema": object(json!({}), &[]),
            "annotations": {"readOnlyHint": true},
        }),
    ]
}

/// One tool per rule a client must enforce: a `number` property, a name that is not a token,
/// two names equal but for case, one under `items` (not statically reachable), an empty name.
fn invalid_header_tools() -> Vec<Value> {
    let tool = |name: &str, properties: Value| {
        json!({
            "name": name,
            "description": "Its x-mcp-header annotation is invalid: a client must drop it.",
            "inputSchema": object(properties, &[]),
        })
    };
    vec![
        tool(
            INVALID_HEADER_TOOLS[0],
            json!({"n": {"type": "number", "x-mcp-header": "N"}}),
        ),
        tool(
            INVALID_HEADER_TOOLS[1],
            json!({"region": {"type": "string", "x-mcp-header": "My Region"}}),
        ),
        tool(
            INVALID_HEADER_TOOLS[2],
            json!({
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "dup"},
            }),
        ),
        tool(
            INVALID_HEADER_TOOLS[3],
            json!({"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}),
        ),
        tool(
            INVALID_HEADER_TOOLS[4],
            json!({"a": {"type": "string", "x-mcp-header": ""}}),
        ),
    ]
}

/// The modern era's `tools/list`: the four tools, then those whose switch is on.
pub(super) fn listed(state: &Shared) -> Vec<Value> {
    let (extra, invalid) = {
        let faults = lock(&state.faults);
        (faults.modern_tools, faults.invalid_header_tools)
    };
    let mut tools = tools_list()["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if extra {
        tools.extend(header_and_input_tools());
    }
    if invalid {
        tools.extend(invalid_header_tools());
    }
    tools
}

/// The `inputSchema` of a tool the modern era can call, listed or not.
pub(super) fn input_schema(name: &str) -> Option<Value> {
    let base = tools_list()["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    base.into_iter()
        .chain(header_and_input_tools())
        .chain(invalid_header_tools())
        .find(|tool| tool["name"] == name)
        .map(|tool| tool["inputSchema"].clone())
        .or_else(|| (name == "job").then(super::tasks::job_schema))
}
