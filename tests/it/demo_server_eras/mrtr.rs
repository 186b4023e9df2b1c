//! Multi-round-trip requests: `confirm` asks `rounds` times, echoes nothing but the state it gave,
//! refuses a state it did not give (or one re-serialized), may start with a state-only round;
//! `ask_client` is one round; in the 2025 era `confirm` is a real elicitation request.

use serde_json::{json, Value};

use super::pipe::{modern, text, Demo};

fn confirm(arguments: Value) -> Value {
    modern(json!({"name": "confirm", "arguments": arguments}))
}

/// A retry of `confirm` carrying `state` (verbatim) and an accepting answer `ok`.
fn retry(arguments: Value, state: &Value, ok: bool) -> Value {
    let mut params = confirm(arguments);
    params["requestState"] = state.clone();
    params["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": ok}}});
    params
}

fn expected_request() -> Value {
    json!({"confirm": {"method": "elicitation/create", "params": {
        "message": "Proceed?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}})
}

#[test]
fn confirm_asks_each_round_with_a_fresh_state() {
    let mut demo = Demo::start(&[]);
    let args = json!({"rounds": 2});
    let first = demo.result(json!(1), "tools/call", confirm(args.clone()));
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first["inputRequests"], expected_request());
    let state = first["requestState"].clone();
    assert!(state.is_string(), "{first}");

    let second = demo.result(json!(2), "tools/call", retry(args.clone(), &state, false));
    assert_eq!(second["resultType"], "input_required");
    assert_eq!(second["inputRequests"], expected_request());
    assert_ne!(
        second["requestState"], state,
        "each round has its own state"
    );

    let done = demo.result(
        json!(3),
        "tools/call",
        retry(args, &second["requestState"], true),
    );
    assert_eq!(done["resultType"], "complete");
    assert_eq!(
        done["content"],
        json!([{"type": "text", "text": "confirmed: true"}])
    );
    for line in [
        "modern mrtr confirm id=1 state=none responses=none -> input_required 1/2",
        "modern mrtr confirm id=2 state=valid responses=present -> input_required 2/2",
        "modern mrtr confirm id=3 state=valid responses=present -> complete",
    ] {
        demo.assert_logged(line);
    }
}

#[test]
fn confirm_can_start_with_a_state_only_round() {
    let mut demo = Demo::start(&[]);
    let args = json!({"state_only": true});
    let first = demo.result(json!("a"), "tools/call", confirm(args.clone()));
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first.get("inputRequests"), None, "{first}");
    let mut params = confirm(args.clone());
    params["requestState"] = first["requestState"].clone();
    let second = demo.result(json!("b"), "tools/call", params);
    assert_eq!(second["inputRequests"], expected_request());
    let done = demo.result(
        json!("c"),
        "tools/call",
        retry(args, &second["requestState"], false),
    );
    assert_eq!(text(&done), "confirmed: false");
    demo.assert_logged(r#"modern mrtr confirm id="a" state=none responses=none -> state_only"#);
    demo.assert_logged(
        r#"modern mrtr confirm id="b" state=valid responses=none -> input_required 1/1"#,
    );
}

#[test]
fn confirm_refuses_a_state_it_did_not_give() {
    let mut demo = Demo::start(&[]);
    let args = json!({});
    let first = demo.result(json!(1), "tools/call", confirm(args.clone()));
    let state = first["requestState"].as_str().expect("a state").to_owned();

    // Parsed and written again: no longer the same text.
    let reserialized = serde_json::from_str::<Value>(&state)
        .expect("JSON")
        .to_string();
    assert_ne!(reserialized, state);
    let error = demo.error(
        json!(2),
        "tools/call",
        retry(args.clone(), &json!(reserialized), true),
    );
    assert_eq!(error["code"], -32602);
    let mut missing = retry(args.clone(), &Value::Null, true);
    missing
        .as_object_mut()
        .expect("params")
        .remove("requestState");
    assert_eq!(demo.error(json!(3), "tools/call", missing)["code"], -32602);
    let mut unanswered = confirm(args.clone());
    unanswered["requestState"] = json!(state);
    assert_eq!(
        demo.error(json!(4), "tools/call", unanswered)["code"],
        -32602
    );
    // Another tool never takes a flow's fields.
    let mut leaked = modern(json!({"name": "echo", "arguments": {"text": "x"}}));
    leaked["requestState"] = json!(state);
    assert_eq!(demo.error(json!(5), "tools/call", leaked)["code"], -32602);

    // The refusals did not use the state up; the right retry does, once.
    let done = demo.result(
        json!(6),
        "tools/call",
        retry(args.clone(), &json!(state), true),
    );
    assert_eq!(text(&done), "confirmed: true");
    let replay = demo.error(json!(7), "tools/call", retry(args, &json!(state), true));
    assert_eq!(replay["code"], -32602);
    demo.assert_logged("modern mrtr confirm id=2 state=invalid responses=present -> error -32602");
    demo.assert_logged("modern mrtr confirm id=3 state=none responses=present -> error -32602");
    demo.assert_logged("modern mrtr echo id=5 stray requestState");
}

#[test]
fn confirm_checks_its_arguments() {
    let mut demo = Demo::start(&[]);
    for (id, rounds) in [(1, json!(0)), (2, json!(1001)), (3, json!("two"))] {
        let error = demo.error(json!(id), "tools/call", confirm(json!({"rounds": rounds})));
        assert_eq!(error["code"], -32602, "{rounds}");
    }
}

#[test]
fn ask_client_is_one_round_in_the_modern_era() {
    let mut demo = Demo::start(&[]);
    let ask = || modern(json!({"name": "ask_client", "arguments": {"method": "roots/list"}}));
    let first = demo.result(json!(1), "tools/call", ask());
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(
        first["inputRequests"],
        json!({"ask": {"method": "roots/list"}})
    );
    let mut params = ask();
    params["requestState"] = first["requestState"].clone();
    params["inputResponses"] = json!({"ask": {"roots": [{"uri": "file:///srv"}]}});
    let done = demo.result(json!(2), "tools/call", params);
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text(&done), r#"{"roots":[{"uri":"file:///srv"}]}"#);
}

#[test]
fn confirm_elicits_for_real_in_the_session_era() {
    let mut demo = Demo::start(&[("DEMO_LIST_CONFIRM", "1"), ("DEMO_TOOLS_PAGE_SIZE", "100")]);
    demo.initialize(json!(1));
    let listed = demo.result(json!(2), "tools/list", json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"confirm"), "{names:?}");

    let call = json!({"name": "confirm", "arguments": {"rounds": 2}});
    demo.send_request(json!(3), "tools/call", call);
    for (round, ok) in [(1, false), (2, true)] {
        let asked = demo.next();
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(asked["params"], expected_request()["confirm"]["params"]);
        let answer = json!({"action": "accept", "content": {"ok": ok}});
        demo.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
        demo.assert_logged(&format!(
            "mrtr confirm id=3 ask {round}/2 {}",
            asked["id"].as_str().expect("a string id")
        ));
    }
    let done = demo.response(&json!(3));
    assert_eq!(text(&done["result"]), "confirmed: true");
    assert_eq!(done["result"].get("resultType"), None);
}

#[test]
fn confirm_is_not_listed_by_default() {
    for era in ["legacy", "modern"] {
        let mut demo = Demo::start(&[("DEMO_TOOLS_PAGE_SIZE", "100")]);
        let params = if era == "modern" {
            modern(json!({}))
        } else {
            json!({})
        };
        let listed = demo.result(json!(1), "tools/list", params);
        assert_eq!(
            listed["tools"].as_array().map(Vec::len),
            Some(10),
            "{era}: {listed}"
        );
    }
}
