//! What the randomized fault soak (`tests/soak/`) found, each minimised to a small case. A
//! case that still fails is `#[ignore = "finding: ..."]` until its defect is fixed; one whose
//! defect has been fixed stays here as a regression test of the road the soak took to it.

use std::time::Duration;

use mcp_supervisor::{CallTool, ServerConfig, Shutdown};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// Soak `MCP_SOAK_MAX_RECONNECTS=3 MCP_SOAK_FAULTS=restart` on eb0b4fe: with
/// `max_reconnect_attempts` set, an HTTP server down for a second or two used up its
/// reconnect attempts, went `Failed`, and stayed `Failed` after it was back (calls
/// `unavailable` for good). That is defect 13 by the other road to `Failed` (a Ready connection
/// that broke, not the start-up retries); fixed with it (32b32f3), and checked here end to end.
async fn a_server_failed_by_max_reconnect_attempts_is_revived_once_it_is_back() {
    let server = http_server().await;
    let port = server.port();
    let config = ServerConfig::http("web", server.url()).max_reconnect_attempts(Some(2));
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("web", 1).await;

    server.stop().await;
    events.state("web", "failed", 1).await;
    let _server = http_server_on(port).await;

    // Revival follows the reconnect backoff (capped at 30 s by default): well within 45 s.
    events
        .wait_count("web ready again", 2, Duration::from_secs(45), |e| {
            state_of(e, "web").is_some_and(|s| s.is_ready())
        })
        .await;
    let echo =
        CallTool::new("web", "echo", json!({"text": "back"})).timeout(Duration::from_secs(5));
    assert_eq!(text_of(&sup.send(echo).await.unwrap().unwrap()), "back");
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(a_server_failed_by_max_reconnect_attempts_is_revived_once_it_is_back);
