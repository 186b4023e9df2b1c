//! The era switch: `server/discover` and no session on a dual-era server, what a legacy-only
//! and a modern-only server answer to the other era, and an upgrade at run time.

use serde_json::{json, Value};

use super::client::*;
use crate::common::http_server::{Era, TestHttpServer};
use crate::common::until;

#[actix::test]
async fn discover_describes_the_server_and_no_session_is_made() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    server.faults().discover_ttl_ms(1234);
    let url = server.url();
    let answer = Req::modern(json!(1), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(answer.status, 200);
    assert!(answer.headers.get("mcp-session-id").is_none());
    let result = answer.json().await["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([VERSION]));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["ttlMs"], 1234);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-http-server"
    );
    assert!(result.get("serverInfo").is_none(), "not a body field");
    server.faults().server_info(false);
    let result = Req::modern(json!(2), "server/discover", json!({}))
        .send(&url)
        .await
        .json()
        .await["result"]
        .clone();
    assert!(result.get("_meta").is_none(), "{result}");

    // Removed methods and unknown ones: 404 with -32601.
    for method in [
        "ping",
        "resources/subscribe",
        "logging/setLevel",
        "initialize/x",
    ] {
        let answer = Req::modern(json!(3), method, json!({})).send(&url).await;
        assert_eq!(answer.status, 404, "{method}");
        assert_eq!(error_code(&answer.json().await), Some(-32601), "{method}");
    }
    // A notification is accepted without a session.
    let note = Req::modern(json!(null), "notifications/whatever", json!({})).notification();
    assert_eq!(note.send(&url).await.status, 202);
    // No GET stream and no DELETE for the modern era, even on a dual-era server.
    let head = Req::modern(json!(4), "x", json!({}));
    assert_eq!(head.send_as(&url, awc::http::Method::GET).await.status, 405);
    assert_eq!(
        head.send_as(&url, awc::http::Method::DELETE).await.status,
        405
    );
    // A legacy GET still gets the legacy answer (no session: 400).
    let legacy = Req::legacy(json!(5), "x", json!({}));
    assert_eq!(
        legacy.send_as(&url, awc::http::Method::GET).await.status,
        400
    );
    assert_eq!(server.stats().sessions(), 0);
    assert!(server
        .stats()
        .seen()
        .iter()
        .filter(|s| s.modern)
        .all(|s| s.header("mcp-session-id").is_none()));
    server.stop().await;
}

#[actix::test]
async fn a_legacy_only_server_answers_a_modern_post_as_a_ts_v1_server() {
    let server = TestHttpServer::start_with(Era::Legacy).await;
    let url = server.url();
    let answer = Req::modern(json!(1), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json().await,
        json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32000, "message": "Bad Request: Server not initialized",
        }})
    );
    // Only the envelope, no version header: the same.
    let enveloped = Req::modern(json!(2), "tools/list", json!({})).without("MCP-Protocol-Version");
    assert_eq!(
        error_code(&enveloped.send(&url).await.json().await),
        Some(-32000)
    );
    // A GET with the modern version header gets the legacy answer.
    let head = Req::modern(json!(3), "x", json!({}));
    assert_eq!(head.send_as(&url, awc::http::Method::GET).await.status, 400);
    // initialize works as ever.
    let init = Req::legacy(
        json!(4),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    assert!(answer.headers.get("mcp-session-id").is_some());
    assert_eq!(
        answer.json().await["result"]["protocolVersion"],
        "2025-11-25"
    );
    assert_eq!(server.stats().modern_posts(), 0);
    server.stop().await;
}

#[actix::test]
async fn a_modern_only_server_refuses_initialize_and_every_legacy_request() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let url = server.url();
    let init = Req::legacy(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    assert_eq!(answer.status, 400);
    assert!(answer.headers.get("mcp-session-id").is_none());
    let body = answer.json().await;
    assert_eq!(body["id"], 1);
    assert_eq!(error_code(&body), Some(-32022));
    assert_eq!(
        body["error"]["data"],
        json!({"supported": [VERSION], "requested": "2025-11-25"})
    );
    let list = Req::legacy(json!(2), "tools/list", json!({}))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", "made-up");
    assert_eq!(
        error_code(&list.send(&url).await.json().await),
        Some(-32022)
    );
    let note = Req::legacy(json!(null), "notifications/initialized", json!({})).notification();
    assert_eq!(note.send(&url).await.status, 202);
    for method in [awc::http::Method::GET, awc::http::Method::DELETE] {
        let answer = Req::legacy(json!(3), "x", json!({}))
            .send_as(&url, method)
            .await;
        assert_eq!(answer.status, 405);
    }
    let discover = Req::modern(json!(4), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(discover.status, 200);
    assert_eq!(server.stats().sessions(), 0);
    server.stop().await;
}

#[actix::test]
async fn a_dual_era_server_decides_per_request_and_can_be_upgraded_at_run_time() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let init = Req::legacy(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    let session = answer
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let legacy_list = Req::legacy(json!(2), "tools/list", json!({}))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &session);
    assert_eq!(
        legacy_list.send(&url).await.json().await["result"]["tools"][0]["name"],
        "echo"
    );
    let modern_list = Req::modern(json!(3), "tools/list", json!({}));
    let body = modern_list.send(&url).await.json().await;
    assert_eq!(body["result"]["resultType"], "complete");
    // A legacy GET stream is open while the server is upgraded: the session goes, its stream
    // ends, and the next legacy request is refused the modern-only way.
    let get = Req::legacy(json!(4), "x", json!({}))
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session);
    let mut stream = get.send_as(&url, awc::http::Method::GET).await.sse();
    let stats = server.stats();
    until("the GET stream is open", || stats.gets() == 1).await;
    server.faults().era(Era::Modern);
    assert_eq!(stream.rest().await, Vec::<Value>::new());
    assert_eq!(server.stats().sessions(), 0);
    let body = legacy_list.send(&url).await.json().await;
    assert_eq!(error_code(&body), Some(-32022));
    assert_eq!(modern_list.send(&url).await.status, 200);
    server.stop().await;
}
