//! The cached tool list says whether it is the server's whole list: a list cut short at the
//! handshake or at a refresh shows in the status with why, and a whole one clears it.

use super::*;

fn tools(names: &[&str]) -> Vec<Tool> {
    names
        .iter()
        .map(|name| {
            serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .unwrap()
        })
        .collect()
}

fn listed(names: &[&str], cut: Option<&str>) -> Listed<Tool> {
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
