//! The header rules of a modern POST, what the server records of every request, and the
//! `x-mcp-header` tool (`echo_region`) with the lists its switches shape.

use serde_json::{json, Value};

use super::client::*;
use crate::common::http_server::{Era, TestHttpServer, INVALID_HEADER_TOOLS};

#[actix::test]
async fn every_header_rule_is_enforced_with_the_requests_id() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let list = Req::modern(json!("L"), "tools/list", json!({}));
    let read = Req::modern(json!(9), "resources/read", json!({"uri": "test://r"}));
    let mut twice = read.clone();
    twice
        .headers
        .push(("Mcp-Name".to_owned(), "test://r".to_owned()));
    let cases: Vec<(&str, Req, i64)> = vec![
        (
            "no MCP-Protocol-Version",
            list.clone().without("MCP-Protocol-Version"),
            -32020,
        ),
        (
            "MCP-Protocol-Version differs from _meta",
            list.clone().header("MCP-Protocol-Version", "2025-11-25"),
            -32020,
        ),
        (
            "an unsupported version",
            list.clone()
                .header("MCP-Protocol-Version", "2099-01-01")
                .meta(META_VERSION, Some(json!("2099-01-01"))),
            -32022,
        ),
        (
            "no _meta protocol version",
            list.clone().meta(META_VERSION, None),
            -32602,
        ),
        (
            "no client capabilities",
            list.clone().meta(META_CAPABILITIES, None),
            -32602,
        ),
        ("no Mcp-Method", list.clone().without("Mcp-Method"), -32020),
        (
            "Mcp-Method not the body's",
            list.clone().header("Mcp-Method", "tools/call"),
            -32020,
        ),
        (
            "Mcp-Method in another case",
            list.clone().header("Mcp-Method", "Tools/List"),
            -32020,
        ),
        ("no Mcp-Name", read.clone().without("Mcp-Name"), -32020),
        (
            "Mcp-Name not the uri",
            read.clone().header("Mcp-Name", "test://other"),
            -32020,
        ),
        (
            "Mcp-Name not the tool",
            call(3, "echo", json!({"text": "x"})).header("Mcp-Name", "counter"),
            -32020,
        ),
        ("Mcp-Name sent twice", twice, -32020),
        (
            "Mcp-Name encoded needlessly but wrongly",
            read.clone().header("Mcp-Name", &sentinel("test://s")),
            -32020,
        ),
    ];
    for (what, req, code) in cases {
        let answer = req.send(&url).await;
        assert_eq!(answer.status, 400, "{what}");
        let body = answer.json().await;
        assert_eq!(error_code(&body), Some(code), "{what}: {body}");
        assert_eq!(body["id"], req.body["id"], "{what}: the request's id");
        if code == -32022 {
            assert_eq!(body["error"]["data"]["supported"], json!([VERSION]));
            assert_eq!(body["error"]["data"]["requested"], json!("2099-01-01"));
        }
    }
    assert_eq!(server.stats().rejected(-32020), 10);
    assert_eq!(server.stats().rejected(-32602), 2);
    assert_eq!(server.stats().rejected(-32022), 1);
    assert_eq!(server.stats().tool_calls("echo"), 0, "nothing refused ran");

    // The well-formed requests pass, an encoded Mcp-Name is decoded before comparing.
    let answer = list.send(&url).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json().await["result"]["resultType"], "complete");
    let odd = "test://räksmörgås ";
    let read_odd = Req::modern(json!(10), "resources/read", json!({"uri": odd}))
        .header("Mcp-Name", &sentinel(odd));
    let body = read_odd.send(&url).await.json().await;
    assert_eq!(body["result"]["contents"][0]["uri"], odd, "{body}");
    let raw = read_odd.clone().header("Mcp-Name", "=?base64?not base64?=");
    assert_eq!(error_code(&raw.send(&url).await.json().await), Some(-32020));

    // Another supported list: 2026-07-28 is then refused with it.
    server.faults().modern_versions(&["2099-01-01"]);
    let answer = list.send(&url).await;
    assert_eq!(answer.status, 400);
    let body = answer.json().await;
    assert_eq!(body["error"]["data"]["supported"], json!(["2099-01-01"]));
    assert_eq!(body["error"]["data"]["requested"], json!(VERSION));
    server.stop().await;
}

#[actix::test]
async fn the_headers_of_every_request_are_recorded() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    server.faults().json_responses(true);
    call(1, "echo", json!({"text": "x"}))
        .header("Mcp-Param-Anything", "")
        .send(&server.url())
        .await
        .json()
        .await;
    let seen = server.stats().last_post("tools/call").expect("seen");
    assert!(seen.modern);
    assert_eq!(seen.http_method, "POST");
    assert_eq!(seen.id, Some(json!(1)));
    assert_eq!(seen.header("mcp-method"), Some("tools/call"));
    assert_eq!(seen.header("MCP-NAME"), Some("echo"));
    assert_eq!(seen.header("mcp-protocol-version"), Some(VERSION));
    assert_eq!(seen.header("mcp-session-id"), None);
    assert_eq!(
        seen.param_headers(),
        vec![("anything".to_owned(), String::new())],
        "an empty value is kept"
    );
    assert_eq!(seen.meta().expect("_meta")[META_VERSION], VERSION);
    let legacy = Req::legacy(
        json!(2),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    legacy.send(&server.url()).await.json().await;
    assert!(!server.stats().last_post("initialize").expect("seen").modern);
    assert_eq!(server.stats().modern_posts(), 1);
    server.stop().await;
}

#[actix::test]
async fn echo_region_checks_its_param_headers_and_the_lists_follow_their_switches() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let region = |id, region: &str, header: Option<&str>| {
        let req = call(id, "echo_region", json!({"region": region, "text": "hi"}));
        match header {
            Some(value) => req.header("Mcp-Param-Region", value),
            None => req,
        }
    };
    let ok = region(1, "us-west1", Some("us-west1")).send(&url).await;
    assert_eq!(text(&ok.response().await), "us-west1: hi");
    let encoded = region(2, "Région 1", Some(&sentinel("Région 1")))
        .send(&url)
        .await;
    assert_eq!(text(&encoded.response().await), "Région 1: hi");
    for (what, req) in [
        ("a wrong value", region(3, "us-west1", Some("eu-west1"))),
        ("no header", region(4, "us-west1", None)),
        ("non-ASCII sent raw", region(5, "Région", Some("Région"))),
        (
            "a header for an absent argument",
            region(6, "us", Some("us")).header("Mcp-Param-Priority", "1"),
        ),
        (
            "an integer that differs",
            call(
                7,
                "echo_region",
                json!({"region": "us", "text": "t", "priority": 5}),
            )
            .header("Mcp-Param-Region", "us")
            .header("Mcp-Param-Priority", "6"),
        ),
    ] {
        let answer = req.send(&url).await;
        assert_eq!(answer.status, 400, "{what}");
        assert_eq!(error_code(&answer.json().await), Some(-32020), "{what}");
    }
    let priority = call(
        8,
        "echo_region",
        json!({"region": "us", "text": "t", "priority": 5}),
    )
    .header("Mcp-Param-Region", "us")
    .header("Mcp-Param-Priority", "5");
    assert_eq!(text(&priority.send(&url).await.response().await), "us: t");
    assert_eq!(server.stats().tool_calls("echo_region"), 3);

    let names = |body: Value| -> Vec<String> {
        body["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let list = Req::modern(json!(9), "tools/list", json!({}));
    let listed = list.send(&url).await.json().await;
    assert_eq!(
        names(listed.clone()),
        ["echo", "slow", "counter", "notify_resource"],
        "by default both eras list the same tools"
    );
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["cacheScope"], "private");
    assert_eq!(listed["result"]["ttlMs"], 0);
    server.faults().modern_tools(true);
    server.faults().invalid_header_tools(true);
    let listed = names(list.send(&url).await.json().await);
    assert_eq!(listed.len(), 4 + 2 + INVALID_HEADER_TOOLS.len());
    assert_eq!(&listed[4..6], ["echo_region", "confirm"]);
    assert_eq!(&listed[6..], INVALID_HEADER_TOOLS);
    server.stop().await;
}
