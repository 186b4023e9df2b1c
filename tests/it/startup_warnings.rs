//! (e) of the core checks: it counts WARN lines, of its own thread only (`common::logs`), so
//! that the retries of the tests beside it are not counted.

use crate::common::*;
use mcp_supervisor::*;

/// (e) Start-up failing twice, then succeeding: Ready after exactly two WARN retries.
#[actix::test]
async fn startup_failing_twice_is_ready_after_two_retries() {
    let (logs, _guard) = logs::capture(tracing::Level::DEBUG);
    let dir = tempdir();
    let config = demo("flaky", dir.path()).env("DEMO_FAIL_STARTS", "2");
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("flaky", 1).await;

    assert_eq!(
        events.messages("flaky"),
        [
            "Reconnecting to MCP server (attempt 1/3)…",
            "Reconnecting to MCP server (attempt 2/3)…",
            "Connected"
        ]
    );
    let warn_retries = logs
        .lines()
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("Reconnecting to MCP server (attempt"))
        .count();
    assert_eq!(warn_retries, 2, "{:#?}", logs.lines());
    assert!(logs
        .lines()
        .iter()
        .any(|l| l.contains("WARN") && l.contains("flaky") && l.contains("attempt=2")));
    sup.send(Shutdown).await.unwrap();
}
