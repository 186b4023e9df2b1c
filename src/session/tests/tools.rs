//! The cached tool list says whether it is the server's whole list: a list cut short at the
//! handshake or at a refresh shows in the status with why, and a whole one clears it.

use super::*;

fn tools(names: &[&str]) -> Vec<ListedTool> {
    names
        .iter()
        .map(|name| {
            serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .unwrap()
        })
        .collect()
}

fn listed(names: &[&str], cut: Option<&str>) -> Listed<ListedTool> {
    Listed {
        items: tools(names),
        cut: cut.map(str::to_owned),
    }
}

#[test]
fn a_tool_list_cut_short_shows_in_the_status_until_a_whole_one_replaces_it() {
    let mut h = Harness::new(&legacy_stdio(), settings());
    let cut = "more than 10000 tools; kept the first 10000";
    h.open_listed(legacy(), false, listed(&["a"], Some(cut)));
    let status = h.session.status(h.now);
    assert_eq!(status.tools_truncated.as_deref(), Some(cut));
    assert_eq!(status.tool_count(), 1);

    h.session
        .tools_refreshed(Ok(listed(&["a", "b"], None)), h.now);
    h.drive();
    assert_eq!(h.session.status(h.now).tools_truncated, None, "whole now");

    let circle = "its cursors go round in a circle after 3 pages; kept the first 2";
    h.session
        .tools_refreshed(Ok(listed(&["a", "b"], Some(circle))), h.now);
    h.drive();
    assert_eq!(
        h.session.status(h.now).tools_truncated.as_deref(),
        Some(circle)
    );

    // A refresh that fails leaves the list, and what is known of it, as they were.
    h.session
        .tools_refreshed(Err(Error::connection("demo", "gone")), h.now);
    h.drive();
    let status = h.session.status(h.now);
    assert_eq!(status.tools_truncated.as_deref(), Some(circle));
    assert_eq!(status.tool_count(), 2);

    // The next connection's list decides anew.
    h.lose("the process exited");
    h.await_attempt();
    h.open_listed(legacy(), false, listed(&["a"], None));
    assert_eq!(h.session.status(h.now).tools_truncated, None);
}

/// A tool's every member survives the cache: `execution`, `_meta` and a member no revision has
/// yet reach the status as the server listed them, and a refresh that changes only such a member
/// is reported as a changed tool.
#[test]
fn every_member_of_a_tool_reaches_the_status_and_a_change_in_any_is_news() {
    let page = |future: Value| {
        json!({"tools": [{
            "name": "report",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"},
            "_meta": {"io.example/owner": "ops"},
            "x-future": future
        }, {"name": "plain", "inputSchema": {"type": "object"}}]})
    };
    let listed = |future: Value| {
        let (items, next) =
            crate::protocol::lifecycle::parse_tools_page("demo", page(future)).unwrap();
        assert_eq!(next, None);
        Listed { items, cut: None }
    };
    let mut h = Harness::new(&legacy_stdio(), settings());
    h.open_listed(legacy(), false, listed(json!({"level": 1})));

    let status = h.session.status(h.now);
    let tool = &status.tools[0];
    assert_eq!(tool.name, "report");
    assert_eq!(
        tool.object()["execution"],
        json!({"taskSupport": "optional"})
    );
    assert_eq!(tool.object()["_meta"], json!({"io.example/owner": "ops"}));
    assert_eq!(tool.object()["x-future"], json!({"level": 1}));
    assert_eq!(tool.task_support(), crate::TaskSupport::Optional);
    assert_eq!(
        status.tools[1].task_support(),
        crate::TaskSupport::Forbidden
    );
    // What a status serializes is the object the server sent.
    assert_eq!(
        serde_json::to_value(tool).unwrap(),
        page(json!({"level": 1}))["tools"][0]
    );

    h.emitted.clear();
    h.session
        .tools_refreshed(Ok(listed(json!({"level": 2}))), h.now);
    h.drive();
    let changed = h
        .emitted
        .iter()
        .find(|e| matches!(e, ServerEvent::ToolsChanged { .. }));
    assert!(
        matches!(changed, Some(ServerEvent::ToolsChanged { added, removed, changed, .. })
            if added.is_empty() && removed.is_empty() && changed == &["report"]),
        "{:?}",
        h.emitted
    );
    let status = h.session.status(h.now);
    assert_eq!(status.tools[0].object()["x-future"], json!({"level": 2}));

    // The same list again is no news.
    h.emitted.clear();
    h.session
        .tools_refreshed(Ok(listed(json!({"level": 2}))), h.now);
    h.drive();
    assert!(
        !h.emitted
            .iter()
            .any(|e| matches!(e, ServerEvent::ToolsChanged { .. })),
        "{:?}",
        h.emitted
    );
}
