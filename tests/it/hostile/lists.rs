//! Lists that never end: cursors that go round in a circle, pages without end, lists too long
//! to keep. The handshake and the refresh after `tools/list_changed` share one bounded walk.

use std::time::Duration;

use mcp_supervisor::{GetStatus, Ping, ServerEvent};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

fn cycling_cursors(name: &str, first_page_too: bool) -> mcp_supervisor::ServerConfig {
    let cycle = json!({"reply_cycle": [
        {"tools": [], "nextCursor": "a"},
        {"tools": [], "nextCursor": "b"}
    ]});
    let from = if first_page_too { 1 } else { 2 };
    hostile(
        name,
        json!({
            "after_initialized": [{"notify": "notifications/tools/list_changed"}],
            "rules": [{"method": "tools/list", "from": from, "do": [cycle]}]
        }),
    )
}

/// Defect 2: the refresh after `notifications/tools/list_changed` had no page bound; cursors
/// cycling `a`, `b`, `a`, ... drew 131,826 requests in 11 s. It now stops at the first cursor
/// it has seen before, keeps what it fetched and says so.
async fn a_refresh_whose_cursors_go_round_stops() {
    let (sup, events) = start_supervisor(quick_settings(), [cycling_cursors("loop", false)]);
    events.ready("loop", 1).await;
    // The refresh is done when the (now empty) list replaces the handshake's.
    events
        .wait_count(
            "tools changed",
            1,
            Duration::from_secs(10),
            |e| matches!(e, ServerEvent::ToolsChanged { removed, .. } if removed == &["echo"]),
        )
        .await;
    let pages = status(&sup, "loop").await.counters.calls_ok;
    assert_eq!(pages, 3, "a, b, then a again: the circle is closed");
    // Nothing keeps fetching behind our back.
    for _ in 0..5 {
        sup.send(Ping::new("loop"))
            .await
            .unwrap()
            .expect("the server answers");
    }
    let after = sup.send(GetStatus::server("loop")).await.unwrap().unwrap();
    assert_eq!(after[0].counters.calls_ok, pages + 5);
    assert_eq!(after[0].state.name(), "ready");
}

/// The same cursors at the handshake: the server still connects, with what its pages held.
async fn a_handshake_whose_cursors_go_round_still_connects() {
    let (sup, events) = start_supervisor(quick_settings(), [cycling_cursors("hs", true)]);
    events.ready("hs", 1).await;
    sup.send(Ping::new("hs")).await.unwrap().expect("usable");
    assert!(status(&sup, "hs").await.tools.is_empty());
}

in_both_eras!(
    a_refresh_whose_cursors_go_round_stops,
    a_handshake_whose_cursors_go_round_still_connects,
);
