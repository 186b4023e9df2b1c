//! Which WARNs a service sees: retries at start-up, and none for a normal shutdown.
//!
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

/// The WARN lines of a capture.
fn warnings(logs: &logs::LogCapture) -> Vec<String> {
    logs.lines()
        .into_iter()
        .filter(|l| l.contains(" WARN "))
        .collect()
}

/// A normal shutdown is not news: servers of both transports and eras, after calls and a tool
/// list change, stop without a single WARN. (The exact case the session era warned of,
/// "refreshing the tool list failed … was stopped", is the next test's: there the shutdown
/// meets the refresh's request in flight, which here it does not.)
async fn a_normal_shutdown_logs_no_warning() {
    let (logs, _guard) = logs::capture(tracing::Level::INFO);
    let dir = tempdir();
    let web = http_server().await;
    let configs = [
        demo("demo", dir.path()),
        ServerConfig::http("web", web.url()),
    ];
    let (sup, events) = start_supervisor(quick_settings(), configs);
    events.ready("demo", 1).await;
    events.ready("web", 1).await;
    let echo = CallTool::new("web", "echo", serde_json::json!({"text": "hi"}));
    sup.send(echo).await.unwrap().expect("echoed");
    let notify = || {
        CallTool::new(
            "demo",
            "notify",
            serde_json::json!({"kind": "tools_changed"}),
        )
    };
    sup.send(notify()).await.unwrap().expect("notified");
    events
        .wait_count(
            "the first tool list change",
            1,
            std::time::Duration::from_secs(10),
            |e| matches!(e, ServerEvent::ToolsChanged { .. }),
        )
        .await;
    // Once more, and the shutdown right behind it, while the refresh waits out its debounce.
    sup.send(notify()).await.unwrap().expect("notified");
    sup.send(Shutdown).await.unwrap();
    let warnings = warnings(&logs);
    assert!(warnings.is_empty(), "{warnings:#?}");
    assert!(
        events.states("demo").ends_with(&["stopped"]),
        "{:?}",
        events.states("demo")
    );
}

crate::in_both_eras!(a_normal_shutdown_logs_no_warning);

/// The session era's case exactly: the shutdown comes while the tool list the server said had
/// changed is being fetched again (the server never answers that second `tools/list`).
#[actix::test]
async fn a_shutdown_during_a_tool_list_refresh_logs_no_warning() {
    let (logs, _guard) = logs::capture(tracing::Level::INFO);
    let script = serde_json::json!({
        "after_initialized": [{"notify": "notifications/tools/list_changed", "params": {}}],
        "rules": [{"method": "tools/list", "from": 2, "do": [{"stderr": "listing again"}]}]
    });
    let (sup, events) = start_supervisor(quick_settings(), [hostile("lister", script)]);
    events.ready("lister", 1).await;
    until("the refresh's tools/list", || {
        logs.lines().iter().any(|l| l.contains("listing again"))
    })
    .await;
    sup.send(Shutdown).await.unwrap();
    let warnings = warnings(&logs);
    assert!(warnings.is_empty(), "{warnings:#?}");
}
