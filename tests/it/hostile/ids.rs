//! Answers whose ids do not match what we asked: duplicates, ids of every JSON type, answers to
//! nothing. An answer reaches the call it answers, or nobody.

use std::time::Duration;

use mcp_supervisor::{Call, CallTool, GetStatus};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// Defect 1: a `tools/list` answer sent twice during start-up must not be taken for the answer
/// to the application's first call. One id sequence per connection makes that impossible: the
/// handshake's ids are never used again.
async fn a_late_duplicate_of_a_handshake_answer_reaches_no_call() {
    let script = json!({"rules": [
        // The duplicate of the tools/list answer comes 300 ms late, while our first call is in
        // flight (its answer takes 600 ms).
        {"method": "tools/list", "nth": 1, "do": [
            {"default": true},
            {"spawn": [{"sleep_ms": 300}, {"default": true}]}
        ]},
        {"method": "tools/call", "do": [{"spawn": [{"sleep_ms": 600}, {"default": true}]}]}
    ]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("dup", script)]);
    events.ready("dup", 1).await;

    let raw = Call::new(
        "dup",
        "tools/call",
        Some(json!({"name": "echo", "arguments": {"n": 1}})),
    )
    .timeout(Duration::from_secs(5));
    let result = sup.send(raw).await.unwrap().expect("the echo's own answer");
    assert_eq!(
        result["content"][0]["text"], "{\"n\":1}",
        "the call got someone else's answer: {result}"
    );
    let typed = CallTool::new("dup", "echo", json!({"n": 2})).timeout(Duration::from_secs(5));
    let typed = sup.send(typed).await.unwrap().expect("a tool result");
    assert_eq!(text_of(&typed), "{\"n\":2}");

    let status = sup.send(GetStatus::server("dup")).await.unwrap().unwrap();
    assert_eq!(status[0].era.map(|e| e.name()), Some(era()));
    assert_eq!(
        status[0].counters.unknown_responses, 1,
        "the duplicate is counted as an answer to nothing"
    );
}

in_both_eras!(a_late_duplicate_of_a_handshake_answer_reaches_no_call);
