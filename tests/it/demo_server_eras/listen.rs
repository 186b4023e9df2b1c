//! `subscriptions/listen`: the acknowledgement, deliveries that name their subscription, several
//! listens at once, ending one by `notifications/cancelled` or by `DEMO_LISTEN_END_AFTER_MS`;
//! and the 2025 era's notifications, unchanged.

use serde_json::{json, Value};

use super::pipe::{modern, Demo};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn listen(demo: &mut Demo, id: Value, filter: Value) -> Value {
    demo.send_request(
        id.clone(),
        "subscriptions/listen",
        modern(json!({"notifications": filter})),
    );
    let ack = demo.next();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id, "{ack}");
    ack["params"]["notifications"].clone()
}

fn notify(demo: &mut Demo, id: u64, kind: &str) {
    let params = modern(json!({"name": "notify", "arguments": {"kind": kind}}));
    demo.send_request(json!(id), "tools/call", params);
}

#[test]
fn a_listen_is_acknowledged_then_hears_what_it_asked_for() {
    let mut demo = Demo::start(&[]);
    let honoured = listen(
        &mut demo,
        json!("L1"),
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourceSubscriptions": ["demo://clock"]}),
    );
    // Prompt-list changes are not offered (discover says listChanged: false).
    assert_eq!(
        honoured,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["demo://clock"]})
    );
    // A second listen, with a numeric id: its JSON type is kept.
    let honoured = listen(&mut demo, json!(7), json!({"toolsListChanged": true}));
    assert_eq!(honoured, json!({"toolsListChanged": true}));

    notify(&mut demo, 1, "tools_changed");
    let mut heard = Vec::new();
    for _ in 0..2 {
        let message = demo.next();
        assert_eq!(
            message["method"], "notifications/tools/list_changed",
            "{message}"
        );
        heard.push(message["params"]["_meta"][SUBSCRIPTION_ID].clone());
    }
    assert_eq!(heard, vec![json!("L1"), json!(7)]);
    assert_eq!(
        demo.next()["id"],
        1,
        "nothing else before the tool's answer"
    );

    notify(&mut demo, 2, "resource_updated");
    let updated = demo.next();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "demo://clock");
    assert_eq!(updated["params"]["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(demo.next()["id"], 2, "only L1 asked for the clock");
    demo.assert_logged(
        r#"modern listen "L1" {"resourceSubscriptions":["demo://clock"],"toolsListChanged":true}"#,
    );
    demo.assert_logged(r#"modern deliver 7 notifications/tools/list_changed"#);
}

#[test]
fn without_a_listen_the_modern_era_sends_no_change_notifications() {
    let mut demo = Demo::start(&[]);
    notify(&mut demo, 1, "tools_changed");
    assert_eq!(demo.next()["id"], 1);
    notify(&mut demo, 2, "resource_updated");
    assert_eq!(demo.next()["id"], 2);
}

#[test]
fn cancelling_a_listen_ends_it_with_its_result() {
    let mut demo = Demo::start(&[]);
    listen(&mut demo, json!("L1"), json!({"toolsListChanged": true}));
    listen(&mut demo, json!("L2"), json!({"toolsListChanged": true}));
    demo.cancel(json!("L1"));
    let ended = demo.next();
    assert_eq!(ended["id"], "L1");
    assert_eq!(
        ended["result"],
        json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: "L1"}})
    );
    notify(&mut demo, 1, "tools_changed");
    let changed = demo.next();
    assert_eq!(
        changed["params"]["_meta"][SUBSCRIPTION_ID], "L2",
        "{changed}"
    );
    assert_eq!(demo.next()["id"], 1, "L1 hears nothing more");
    demo.assert_logged(r#"modern listen-end "L1" cancelled"#);

    // Its id may be used again.
    listen(&mut demo, json!("L1"), json!({}));
}

#[test]
fn a_listen_ends_gracefully_after_the_switch_and_can_be_reopened() {
    let mut demo = Demo::start(&[("DEMO_LISTEN_END_AFTER_MS", "100")]);
    listen(&mut demo, json!(1), json!({"toolsListChanged": true}));
    let ended = demo.next();
    assert_eq!(ended["id"], 1);
    assert_eq!(
        ended["result"],
        json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 1}})
    );
    demo.assert_logged("modern listen-end 1 timer");
    listen(&mut demo, json!(1), json!({"toolsListChanged": true}));
    assert_eq!(demo.next()["id"], 1, "the re-opened listen ends too");
}

#[test]
fn a_listen_needs_a_filter_and_its_own_id() {
    let mut demo = Demo::start(&[]);
    let error = demo.error(json!(1), "subscriptions/listen", modern(json!({})));
    assert_eq!(error["code"], -32602);
    let filter = json!({"resourceSubscriptions": "demo://clock"});
    let params = modern(json!({"notifications": filter}));
    assert_eq!(
        demo.error(json!(2), "subscriptions/listen", params)["code"],
        -32602
    );
    listen(&mut demo, json!(3), json!({}));
    let params = modern(json!({"notifications": {}}));
    assert_eq!(
        demo.error(json!(3), "subscriptions/listen", params)["code"],
        -32600
    );
}

#[test]
fn the_session_era_notifications_are_unchanged() {
    let mut demo = Demo::start(&[]);
    demo.initialize(json!(1));
    demo.result(
        json!(2),
        "resources/subscribe",
        json!({"uri": "demo://clock"}),
    );
    let call = |kind: &str| json!({"name": "notify", "arguments": {"kind": kind}});
    demo.send_request(json!(3), "tools/call", call("tools_changed"));
    assert_eq!(
        demo.next_line(),
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
    );
    assert_eq!(demo.next()["id"], 3);
    demo.send_request(json!(4), "tools/call", call("resource_updated"));
    assert_eq!(
        demo.next_line(),
        r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://clock"}}"#
    );
    assert_eq!(
        demo.next_line(),
        r#"{"id":4,"jsonrpc":"2.0","result":{"content":[{"text":"notified","type":"text"}],"isError":false}}"#
    );
}
