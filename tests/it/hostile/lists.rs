//! Lists that never end: cursors that go round in a circle, pages without end, lists too long
//! to keep. The handshake and the refresh after `tools/list_changed` share one bounded walk,
//! and a list it cut short says so in the server's status (`tools_truncated`).

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
    assert_eq!(
        after[0].tools_truncated.as_deref(),
        Some("its cursors go round in a circle after 3 pages; kept the first 0")
    );
}

/// The same cursors at the handshake: the server still connects, with what its pages held.
async fn a_handshake_whose_cursors_go_round_still_connects() {
    let (sup, events) = start_supervisor(quick_settings(), [cycling_cursors("hs", true)]);
    events.ready("hs", 1).await;
    sup.send(Ping::new("hs")).await.unwrap().expect("usable");
    let st = status(&sup, "hs").await;
    assert!(st.tools.is_empty());
    assert_eq!(
        st.tools_truncated.as_deref(),
        Some("its cursors go round in a circle after 3 pages; kept the first 0")
    );
}

/// A server whose first tool list has 10,001 tools (one page), whose second is whole, and
/// whose later ones hand out fresh cursors without end; each tool call announces a change.
fn overlong_lists(name: &str) -> mcp_supervisor::ServerConfig {
    let tool = r#"{"name":"t","inputSchema":{"type":"object"}}"#;
    let huge = json!([
        {"partial": r#"{"jsonrpc":"2.0","id":{id},"result":{"tools":["#},
        {"repeat": 10_000, "do": [{"partial": format!("{tool},")}]},
        {"raw": format!("{tool}]}}}}")}
    ]);
    let endless = r#"{"jsonrpc":"2.0","id":{id},"result":{"tools":[],"nextCursor":"c{n}"}}"#;
    hostile(
        name,
        json!({"rules": [
            {"method": "tools/list", "nth": 1, "do": huge},
            {"method": "tools/list", "nth": 2, "do": [{"default": true}]},
            {"method": "tools/list", "from": 3, "do": [{"raw": endless}]},
            {"method": "tools/call", "do": [
                {"notify": "notifications/tools/list_changed"},
                {"default": true}
            ]}
        ]}),
    )
}

/// Issue 22 item 11: the tool cache keeps at most 10,000 tools and 1,000 pages of a list, and
/// the cut showed only in a WARN line. It is in the status, set by the handshake's list and by
/// each refresh, and cleared by a whole list.
async fn a_tool_list_cut_short_says_so_in_the_status() {
    let (sup, events) = start_supervisor(quick_settings(), [overlong_lists("long")]);
    events.ready("long", 1).await;
    let st = status(&sup, "long").await;
    assert_eq!(st.tool_count(), 10_000);
    assert_eq!(
        st.tools_truncated.as_deref(),
        Some("more than 10000 tools; kept the first 10000")
    );

    let changed = |n: usize| {
        events.wait_count("tools changed", n, Duration::from_secs(20), |e| {
            matches!(e, ServerEvent::ToolsChanged { .. })
        })
    };
    let echo = || mcp_supervisor::CallTool::new("long", "echo", json!({}));
    sup.send(echo()).await.unwrap().expect("the echo");
    changed(1).await;
    let st = status(&sup, "long").await;
    assert_eq!(st.tool_count(), 1);
    assert_eq!(st.tools_truncated, None, "the whole list");

    sup.send(echo()).await.unwrap().expect("the echo");
    changed(2).await;
    let st = status(&sup, "long").await;
    assert_eq!(
        st.tools_truncated.as_deref(),
        Some("more than 1000 pages; kept the first 0")
    );
    assert_eq!(st.state.name(), "ready");
}

in_both_eras!(
    a_refresh_whose_cursors_go_round_stops,
    a_handshake_whose_cursors_go_round_still_connects,
    a_tool_list_cut_short_says_so_in_the_status,
);
