//! (e) of the core checks, in a test binary of its own: it counts WARN lines, and only a
//! process-wide subscriber sees every log line reliably (thread-local ones race with other
//! tests' in the same binary).

mod common;

use common::*;
use mcp_supervisor::*;

/// (e) Start-up failing twice, then succeeding: Ready after exactly two WARN retries.
#[actix::test]
async fn startup_failing_twice_is_ready_after_two_retries() {
    let logs = LogCapture::default();
    logs.install_global();
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
