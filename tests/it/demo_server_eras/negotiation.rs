//! Which era a request is served in: `server/discover`, the `_meta` envelope, `-32022`, the
//! pinning of a dual-era connection both ways, and the `DEMO_ERA` switch.

use serde_json::{json, Value};

use super::pipe::{modern, text, Demo};

#[test]
fn discover_describes_the_server_and_pins_nothing() {
    let mut demo = Demo::start(&[("DEMO_DISCOVER_TTL_MS", "1500")]);
    let found = demo.result(json!(1), "server/discover", modern(json!({})));
    assert_eq!(found["resultType"], "complete");
    assert_eq!(found["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(found["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(found["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(found["ttlMs"], 1500);
    assert_eq!(found["cacheScope"], "private");
    let info = &found["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "mcp-demo-server");
    assert!(info["version"].is_string(), "{found}");

    // The probe decided nothing: an initialize still gets a 2025 session.
    let session = demo.initialize(json!(2));
    assert_eq!(session["protocolVersion"], "2025-11-25");
    assert_eq!(session["serverInfo"]["name"], "mcp-demo-server");
    let echoed = demo.result(
        json!(3),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(
        echoed.get("resultType"),
        None,
        "legacy results are as they were: {echoed}"
    );
    demo.assert_logged("modern server/discover 1");
    demo.assert_logged("initialize 2025-11-25");
    demo.assert_logged("call echo");
}

#[test]
fn the_ttl_defaults_to_zero_and_a_bare_probe_is_answered() {
    let mut demo = Demo::start(&[]);
    let found = demo.result(json!("d"), "server/discover", json!({}));
    assert_eq!(found["ttlMs"], 0);
    assert_eq!(found["supportedVersions"], json!(["2026-07-28"]));
}

#[test]
fn a_modern_request_is_served_without_initialize() {
    let mut demo = Demo::start(&[]);
    let params = modern(json!({"name": "add", "arguments": {"a": 2, "b": 3}}));
    let added = demo.result(json!(1), "tools/call", params);
    assert_eq!(added["resultType"], "complete");
    assert_eq!(added["structuredContent"], json!({"sum": 5}));

    let listed = demo.result(json!(2), "tools/list", modern(json!({})));
    assert_eq!(listed["resultType"], "complete");
    assert_eq!(listed["ttlMs"], 0);
    assert_eq!(listed["cacheScope"], "private");
    assert_eq!(
        listed["tools"].as_array().map(Vec::len),
        Some(2),
        "paginated: {listed}"
    );

    // The 2026-07-28 code for an unknown resource; removed methods are unknown.
    let params = modern(json!({"uri": "demo://nope"}));
    assert_eq!(
        demo.error(json!(3), "resources/read", params)["code"],
        -32602
    );
    assert_eq!(
        demo.error(json!(4), "ping", modern(json!({})))["code"],
        -32601
    );
    let params = modern(json!({"level": "info"}));
    assert_eq!(
        demo.error(json!(5), "logging/setLevel", params)["code"],
        -32601
    );
    demo.assert_logged("modern tools/call 1");
    demo.assert_logged("modern call add");
    demo.assert_logged("modern ping 4");
}

#[test]
fn a_modern_request_must_declare_its_capabilities() {
    let mut demo = Demo::start(&[]);
    let mut params = json!({"name": "echo", "arguments": {"text": "hi"}});
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    assert_eq!(demo.error(json!(1), "tools/call", params)["code"], -32602);
    let mut params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    assert_eq!(demo.error(json!(2), "tools/call", params)["code"], -32602);
    demo.assert_logged("modern refused tools/call 1 -32602");

    // Refused requests pin nothing.
    assert_eq!(demo.initialize(json!(3))["protocolVersion"], "2025-11-25");
}

#[test]
fn an_unsupported_version_is_answered_32022_with_what_is_supported() {
    let mut demo = Demo::start(&[]);
    for (id, asked) in [
        (1, json!("2099-01-01")),
        (2, json!("2025-11-25")),
        (3, json!(7)),
    ] {
        let mut params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = asked.clone();
        let error = demo.error(json!(id), "tools/call", params);
        assert_eq!(error["code"], -32022, "{error}");
        assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
        assert_eq!(error["data"]["requested"], asked);
    }
    let mut params = modern(json!({}));
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    assert_eq!(
        demo.error(json!(4), "server/discover", params)["code"],
        -32022
    );
    demo.assert_logged("modern refused tools/call 1 -32022");
    assert_eq!(demo.initialize(json!(5))["protocolVersion"], "2025-11-25");
}

#[test]
fn the_supported_versions_and_a_first_rejection_can_be_switched() {
    let mut demo = Demo::start(&[("DEMO_MODERN_VERSIONS", "2099-01-01, 2098-06-01")]);
    let found = demo.result(json!(1), "server/discover", json!({}));
    assert_eq!(
        found["supportedVersions"],
        json!(["2099-01-01", "2098-06-01"])
    );
    let error = demo.error(json!(2), "tools/list", modern(json!({})));
    assert_eq!(
        error["data"]["supported"],
        json!(["2099-01-01", "2098-06-01"])
    );

    // Like the conformance suite's request-metadata server: the first modern request is refused
    // whatever it asks for, and the same request again is served.
    let mut demo = Demo::start(&[("DEMO_REJECT_FIRST_MODERN", "1")]);
    let error = demo.error(json!(1), "server/discover", modern(json!({})));
    assert_eq!(error["code"], -32022);
    assert_eq!(error["data"]["requested"], "2026-07-28");
    let found = demo.result(json!(2), "server/discover", modern(json!({})));
    assert_eq!(found["resultType"], "complete");
}

#[test]
fn a_modern_request_pins_the_connection_modern() {
    let mut demo = Demo::start(&[]);
    let params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    assert_eq!(text(&demo.result(json!(1), "tools/call", params)), "hi");

    let error = demo.error(
        json!(2),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    assert_eq!(error["code"], -32022);
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(error["data"]["requested"], "2025-11-25");
    // Nor is a request without the envelope served any more.
    assert_eq!(
        demo.error(json!(3), "tools/list", json!({}))["code"],
        -32602
    );
    assert_eq!(demo.error(json!(4), "ping", Value::Null)["code"], -32602);
    demo.assert_logged("refused initialize 2 -32022");
    assert!(!demo.log().iter().any(|l| l.starts_with("initialize")));
}

#[test]
fn an_initialize_pins_the_connection_legacy() {
    let mut demo = Demo::start(&[]);
    demo.initialize(json!(1));
    let params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    assert_eq!(demo.error(json!(2), "tools/call", params)["code"], -32600);
    assert_eq!(
        demo.error(json!(3), "server/discover", modern(json!({})))["code"],
        -32600
    );
    let params = modern(json!({"notifications": {"toolsListChanged": true}}));
    assert_eq!(
        demo.error(json!(4), "subscriptions/listen", params)["code"],
        -32600
    );
    // The session itself carries on as before.
    assert_eq!(demo.result(json!(5), "ping", Value::Null), json!({}));
    let echoed = demo.result(
        json!(6),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert_eq!(text(&echoed), "x");
    demo.assert_logged("modern refused tools/call 2 -32600");
}

#[test]
fn legacy_only_knows_nothing_of_the_modern_revision() {
    let mut demo = Demo::start(&[("DEMO_ERA", "legacy")]);
    let error = demo.error(json!(1), "server/discover", modern(json!({})));
    assert_eq!(error["code"], -32601);
    // Today's answer, byte for byte, to a probe without the envelope.
    demo.send_request(json!(2), "server/discover", json!({}));
    assert_eq!(
        demo.next_line(),
        r#"{"error":{"code":-32601,"message":"method not found: server/discover"},"id":2,"jsonrpc":"2.0"}"#
    );
    let params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    assert_eq!(demo.error(json!(3), "tools/call", params)["code"], -32601);
    let params = modern(json!({"notifications": {"toolsListChanged": true}}));
    assert_eq!(
        demo.error(json!(4), "subscriptions/listen", params)["code"],
        -32601
    );
    assert_eq!(demo.initialize(json!(5))["protocolVersion"], "2025-11-25");
    let echoed = demo.result(
        json!(6),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert_eq!(text(&echoed), "x");
}

#[test]
fn modern_only_refuses_initialize_with_32022() {
    let mut demo = Demo::start(&[("DEMO_ERA", "modern")]);
    let error = demo.error(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18"}),
    );
    assert_eq!(error["code"], -32022);
    assert_eq!(
        error["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
    );
    assert_eq!(
        demo.error(json!(2), "tools/list", json!({}))["code"],
        -32602
    );
    // Still open for the modern way, probe first or not.
    let found = demo.result(json!(3), "server/discover", modern(json!({})));
    assert_eq!(found["supportedVersions"], json!(["2026-07-28"]));
    let params = modern(json!({"name": "echo", "arguments": {"text": "hi"}}));
    assert_eq!(text(&demo.result(json!(4), "tools/call", params)), "hi");
    let error = demo.error(
        json!(5),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    assert_eq!(error["data"]["requested"], "2025-11-25");
}

#[test]
fn slow_is_cancelled_by_notifications_cancelled_in_both_eras() {
    for era in ["legacy", "modern"] {
        let mut demo = Demo::start(&[]);
        let with_meta = |params: Value| {
            if era == "modern" {
                modern(params)
            } else {
                params
            }
        };
        if era == "legacy" {
            demo.initialize(json!(0));
        }
        let mut params =
            with_meta(json!({"name": "slow", "arguments": {"seconds": 0.4, "steps": 4}}));
        params["_meta"]["progressToken"] = json!("p");
        demo.send_request(json!("s"), "tools/call", params);
        demo.wait_for("the first progress", |m| {
            m["method"] == "notifications/progress"
        });
        demo.cancel(json!("s"));
        // A second call that ends well after the first would have: the first must never answer.
        let params = with_meta(json!({"name": "slow", "arguments": {"seconds": 0.6, "steps": 1}}));
        demo.send_request(json!("t"), "tools/call", params);
        let mut seen = Vec::new();
        loop {
            let message = demo.next();
            if message["id"] == "t" {
                assert_eq!(text(&message["result"]), "done after 0.6s", "{era}");
                break;
            }
            assert_ne!(message["id"], "s", "{era}: the cancelled call answered");
            seen.push(message);
        }
        demo.assert_logged("cancelled \"s\"");
    }
}

#[test]
fn a_log_message_needs_a_log_level_in_the_modern_era() {
    let mut demo = Demo::start(&[]);
    let params = modern(json!({"name": "notify", "arguments": {"kind": "log"}}));
    demo.send_request(json!(1), "tools/call", params);
    assert_eq!(
        demo.next()["id"],
        1,
        "no notifications/message without a log level"
    );
    let mut params = modern(json!({"name": "notify", "arguments": {"kind": "log"}}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    demo.send_request(json!(2), "tools/call", params);
    assert_eq!(demo.next()["method"], "notifications/message");
    assert_eq!(demo.next()["id"], 2);
}
