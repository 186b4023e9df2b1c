//! The answers we owe a stdio server and cannot write yet, because it does not read its stdin:
//! a server that writes a burst of requests of its own before it reads on, and one that floods
//! us with requests while it does not read at all. Reading the server's stdout never waits for
//! its stdin (that would deadlock with the first), and what waits for its stdin is bounded
//! (the second would grow it without end).
//!
//! Both eras: a server of the 2026-07-28 revision may not send requests of its own, but one
//! that does gets a refusal for each, which is an answer like any other.

use std::time::Duration;

use futures_util::future::join_all;
use mcp_supervisor::{CallTool, Shutdown};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// Issue 22, item 9 (a): a server writes a burst of pings of its own before it reads its stdin
/// again, while our calls fill that stdin. Reading stopped while answers waited for stdin, so
/// the server blocked on its stdout, never read on, and every call timed out (the liveness
/// ping then failed and the process was killed). Reading now never waits on writing.
async fn a_server_that_writes_a_burst_before_it_reads_on_is_not_deadlocked() {
    // More pings than its stdout pipe holds (64 KiB), so the burst blocks unless we read.
    let script = json!({"rules": [{"method": "tools/call", "nth": 1, "do": [
        {"repeat": 5000, "do": [{"request": "ping", "id": "p"}]},
        {"default": true}
    ]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("burst", script)]);
    events.ready("burst", 1).await;
    // More than its stdin pipe holds (about 90 KB): our requests wait for it while it writes.
    let calls = (0..1000).map(|x| {
        sup.send(CallTool::new("burst", "echo", json!({ "x": x })).timeout(Duration::from_secs(10)))
    });
    for (x, outcome) in join_all(calls).await.into_iter().enumerate() {
        let result = outcome
            .expect("the supervisor is running")
            .unwrap_or_else(|e| panic!("call {x}: {e}"));
        assert_eq!(text_of(&result), format!("{{\"x\":{x}}}"));
    }
    assert_eq!(
        events.states("burst"),
        ["ready"],
        "the server was never taken for dead"
    );
    sup.send(Shutdown).await.unwrap();
}

/// Issue 22, item 9 (b): a server floods us with 100,000 pings while it does not read its
/// stdin, where a large request of ours is already stuck. The answers were limited by a count
/// only the writer task kept, as it took a batch: the stuck batch held one line, and all
/// 100,000 answers waited in our memory behind it unseen. Now once 64 answers wait for its
/// stdin, further answers are dropped (logged and counted). When it reads again it finds the
/// bounded few, nowhere near 100,000.
async fn answers_to_a_server_that_floods_us_without_reading_are_bounded() {
    let ping = json!({"request": "ping", "id": "p"});
    let answered = answers_to_a_flood("flood", ping).await;
    assert!(answered > 0, "the first requests were answered");
}

/// The same flood in lines that look like plain responses by their fixed parts (the reader
/// hands those out unparsed) and that the full parse finds are requests: they reach the
/// session as responses, and its answer to them must be bounded too. A bound the reader kept
/// missed these.
async fn answers_to_requests_that_look_like_responses_are_bounded_too() {
    // An id none of our requests has: the line answers no call of ours.
    let lookalike =
        json!({"raw": r#"{"jsonrpc":"2.0","id":999999999,"result":{},"method":"ping"}"#});
    answers_to_a_flood("lookalike", lookalike).await;
}

/// Sets off a flood of 100,000 `request`s from a server that does not read its stdin meanwhile,
/// behind a large request of ours stuck in its pipe; returns how many answers the server then
/// read, having checked that they are bounded and the drops logged.
async fn answers_to_a_flood(name: &str, request: serde_json::Value) -> u64 {
    const FLOOD: u64 = 100_000;
    let script = json!({"rules": [
        {"method": "tools/call", "nth": 1, "do": [
            {"repeat": FLOOD, "do": [request]},
            {"default": true}
        ]},
        {"method": "tools/call", "nth": 3, "do": [
            {"stderr": "answers read: {answers}"},
            {"default": true}
        ]}
    ]});
    let (logs, _guard) = logs::capture(tracing::Level::INFO);
    let (sup, events) = start_supervisor(quick_settings(), [hostile(name, script)]);
    events.ready(name, 1).await;
    let call = |args: serde_json::Value| {
        sup.send(CallTool::new(name, "echo", args).timeout(Duration::from_secs(20)))
    };
    // The first sets off the flood; the second, queued behind it, is more than the server's
    // stdin pipe holds (64 KiB): it is stuck there until the flood is over.
    let large = "x".repeat(200_000);
    let (flooded, stuck) =
        futures_util::join!(call(json!({"x": 1})), call(json!({ "large": large })));
    assert_eq!(
        text_of(&flooded.unwrap().expect("answered after the flood")),
        r#"{"x":1}"#
    );
    assert!(text_of(&stuck.unwrap().expect("answered after the flood")).contains(&large));
    // Queued behind every answer we wrote for the flood: the server reads them all first.
    call(json!({"x": 3}))
        .await
        .unwrap()
        .expect("answered after the answers");
    until("the server's count of answers", || {
        logs.text().contains("answers read: ")
    })
    .await;
    let text = logs.text();
    let answered: u64 = text
        .split("answers read: ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in the logs: {text}"));
    println!("{FLOOD} requests from `{name}`, not reading its stdin: {answered} answered");
    assert!(
        answered <= 1_000,
        "{answered} answers to {FLOOD} requests were held for a server that did not read them"
    );
    assert!(
        text.contains("not reading its stdin"),
        "the dropped answers are logged: {text}"
    );
    sup.send(Shutdown).await.unwrap();
    answered
}

in_both_eras!(
    a_server_that_writes_a_burst_before_it_reads_on_is_not_deadlocked,
    answers_to_a_server_that_floods_us_without_reading_are_bounded,
    answers_to_requests_that_look_like_responses_are_bounded_too,
);
