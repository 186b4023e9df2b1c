//! Results nested deeper than a JSON value can be held: one rule, whichever way the result is
//! asked for. A raw `Call` cannot build a `Value` that deep (serde_json's recursion limit
//! protects the stack, which building and dropping it would use), so a typed call, whose parse
//! could skip an unknown member of any depth, refuses it too: both are `invalid_response`, and
//! a result just within the bound is read by both.

use std::time::Duration;

use mcp_supervisor::{Call, CallTool, ErrorKind, ListTools};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// Deepest nesting of a result that is read (see `protocol::response::MAX_RESULT_DEPTH`).
const MAX: usize = 126;

/// `[[...]]`, `depth` levels deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A server whose tool results carry an unknown member `deep` of `depth` levels (at the
/// result's top level, or inside its text block), and whose second tool list one in a tool.
fn deep_server(name: &str, depth: usize) -> mcp_supervisor::ServerConfig {
    let member = nested(depth - 1); // The result itself is one level.
    let in_block = nested(depth - 3); // The result, `content` and the block are three.
    let call = json!([
        {"raw": format!(r#"{{"jsonrpc":"2.0","id":{{id}},"result":{{"content":[{{"type":"text","text":"top"}}],"deep":{member}}}}}"#)},
    ]);
    let block = json!([
        {"raw": format!(r#"{{"jsonrpc":"2.0","id":{{id}},"result":{{"content":[{{"type":"text","text":"block","deep":{in_block}}}]}}}}"#)},
    ]);
    let tools = json!([
        {"raw": format!(r#"{{"jsonrpc":"2.0","id":{{id}},"result":{{"tools":[{{"name":"echo","inputSchema":{{"type":"object"}}}}],"deep":{member}}}}}"#)},
    ]);
    hostile(
        name,
        json!({"rules": [
            {"method": "tools/call", "nth": 1, "do": call},
            {"method": "tools/call", "nth": 2, "do": call},
            {"method": "tools/call", "nth": 3, "do": block},
            {"method": "tools/call", "nth": 4, "do": block},
            {"method": "tools/list", "from": 2, "do": tools}
        ]}),
    )
}

/// The four tool calls, typed and raw alike, and the tool list, typed and raw.
async fn outcomes(depth: usize) -> Vec<(&'static str, Result<String, ErrorKind>)> {
    let (sup, events) = start_supervisor(quick_settings(), [deep_server("deep", depth)]);
    events.ready("deep", 1).await;
    let typed = || CallTool::new("deep", "echo", json!({})).timeout(Duration::from_secs(10));
    let raw = || {
        Call::new("deep", "tools/call", Some(json!({"name": "echo"})))
            .timeout(Duration::from_secs(10))
    };
    let mut got = Vec::new();
    for what in ["top", "block"] {
        let answer = sup.send(typed()).await.unwrap();
        got.push((what, answer.map(|r| text_of(&r)).map_err(|e| e.kind())));
        let answer = sup.send(raw()).await.unwrap();
        let text = |v: serde_json::Value| v["content"][0]["text"].as_str().unwrap_or("").to_owned();
        got.push((what, answer.map(text).map_err(|e| e.kind())));
    }
    let answer = sup.send(ListTools::new("deep")).await.unwrap();
    got.push((
        "list",
        answer
            .map(|l| l.tools[0].name.to_string())
            .map_err(|e| e.kind()),
    ));
    let answer = sup
        .send(Call::new("deep", "tools/list", None))
        .await
        .unwrap();
    let name = |v: serde_json::Value| v["tools"][0]["name"].as_str().unwrap_or("").to_owned();
    got.push(("list", answer.map(name).map_err(|e| e.kind())));
    got
}

/// Item 10 of issue 22: a result with an unknown member nested more than 128 deep was `ok`
/// (its content read, the member skipped) through `CallTool` and `invalid_response`
/// ("recursion limit exceeded") through `Call`.
async fn a_result_nested_too_deep_is_invalid_typed_and_raw_alike() {
    for (what, outcome) in outcomes(MAX + 1).await {
        assert_eq!(outcome, Err(ErrorKind::InvalidResponse), "{what}");
    }
}

/// Just within the bound, both read it.
async fn a_result_nested_as_deep_as_allowed_is_read_typed_and_raw_alike() {
    let expected = ["top", "top", "block", "block", "echo", "echo"];
    for ((what, outcome), want) in outcomes(MAX).await.into_iter().zip(expected) {
        assert_eq!(outcome.as_deref(), Ok(want), "{what}");
    }
}

in_both_eras!(
    a_result_nested_too_deep_is_invalid_typed_and_raw_alike,
    a_result_nested_as_deep_as_allowed_is_read_typed_and_raw_alike,
);
