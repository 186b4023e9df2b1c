//! The modern revision over Streamable HTTP: no session, the revision's headers on every
//! request, `x-mcp-header` arguments mirrored, invalid tools left out, and a server upgraded
//! from dual-era to modern-only while it is supervised.

use std::time::Duration;

use mcp_supervisor::protocol::era::Era as ClientEra;
use mcp_supervisor::{Call, CallTool, ErrorKind, ServerConfig};
use serde_json::json;

use crate::common::header_limit::HeaderLimit;
use crate::common::http_server::{Era, TestHttpServer, INVALID_HEADER_TOOLS};
use crate::common::*;

#[actix::test]
async fn modern_requests_carry_the_revisions_headers_and_no_session() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().modern_tools(true);
    server.faults().invalid_header_tools(true);
    let (sup, events) =
        start_supervisor(quick_settings(), [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    let st = status(&sup, "web").await;
    assert_eq!(st.era, Some(ClientEra::Modern));
    // Tools with invalid x-mcp-header annotations are left out; the valid ones are kept.
    let names: Vec<String> = st.tools.iter().map(|t| t.name.to_string()).collect();
    for bad in INVALID_HEADER_TOOLS {
        assert!(!names.iter().any(|n| n == bad), "{bad} kept: {names:?}");
    }
    assert!(names.iter().any(|n| n == "echo_region"), "{names:?}");

    let call = CallTool::new(
        "web",
        "echo_region",
        json!({"region": "us west 1", "text": "hi", "priority": 3}),
    )
    .timeout(Duration::from_secs(5));
    let result = sup
        .send(call)
        .await
        .unwrap()
        .expect("the server checked our headers");
    assert_eq!(text_of(&result), "us west 1: hi");
    let seen = server
        .stats()
        .last_post("tools/call")
        .expect("the call was seen");
    assert_eq!(seen.header("mcp-method"), Some("tools/call"));
    assert_eq!(seen.header("mcp-name"), Some("echo_region"));
    assert_eq!(seen.header("mcp-protocol-version"), Some("2026-07-28"));
    let params = seen.param_headers();
    assert!(
        params.contains(&("region".into(), "us west 1".into())),
        "{params:?}"
    );
    assert!(
        params.contains(&("priority".into(), "3".into())),
        "{params:?}"
    );
    // No session, no GET stream, no DELETE in this revision.
    for request in server.stats().seen() {
        assert!(request.header("mcp-session-id").is_none(), "{request:?}");
    }
    sup.send(mcp_supervisor::Shutdown).await.unwrap();
    assert_eq!(server.stats().gets(), 0);
    assert_eq!(server.stats().deletes(), 0);
    // Never called a tool it left out.
    for bad in INVALID_HEADER_TOOLS {
        assert_eq!(server.stats().tool_calls(bad), 0);
    }
}

/// `echo_region` with a region of `bytes` bytes, which goes out as the `Mcp-Param-Region`
/// header too.
fn echo_region(bytes: usize) -> CallTool {
    let region = "r".repeat(bytes);
    CallTool::new(
        "web",
        "echo_region",
        json!({"region": region, "text": "hi"}),
    )
    .timeout(Duration::from_secs(10))
}

/// A request the server refuses before it runs (here a 266 KB argument mirrored into a header:
/// actix-web answers 431 and closes the connection while the request is still being written)
/// is `refused`, saying what the request weighed, never `outcome_unknown`; and the connection
/// carries on.
#[actix::test]
async fn a_call_refused_for_its_header_size_did_not_run_and_says_why() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().modern_tools(true);
    let (sup, events) =
        start_supervisor(quick_settings(), [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    let error = sup
        .send(echo_region(266 * 1024))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Refused, "{error}");
    let text = error.to_string();
    assert!(text.contains("before running it"), "{text}");
    assert!(
        text.contains("Mcp-Param-Region"),
        "names the header: {text}"
    );
    assert!(text.contains("266."), "says its size: {text}");
    assert_eq!(server.stats().tool_calls("echo_region"), 0);
    let result = sup
        .send(echo_region(2))
        .await
        .unwrap()
        .expect("the server is fine");
    assert_eq!(text_of(&result), "rr: hi");
    assert_eq!(status(&sup, "web").await.state.name(), "ready");
    sup.send(mcp_supervisor::Shutdown).await.unwrap();
}

/// A larger request in front of a server that refuses heads over 16 KiB as Node's does: it
/// answers 431 and resets the connection while the request is still being written, so the
/// client never reads the 431. The request did not run: it is written once more on a new
/// connection (a stale pooled connection fails the same way), then `refused`.
#[actix::test]
async fn a_call_cut_off_while_it_was_written_did_not_run_and_says_why() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().modern_tools(true);
    let limit = HeaderLimit::start(server.port(), 16 * 1024).await;
    let url = format!("http://127.0.0.1:{}/mcp", limit.port);
    let (sup, events) = start_supervisor(quick_settings(), [ServerConfig::http("web", url)]);
    events.ready("web", 1).await;
    let error = sup
        .send(echo_region(2 * 1024 * 1024))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Refused, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("Mcp-Param-Region"),
        "names the header: {text}"
    );
    // Cut off while it was written, it was written once more; had the client read the 431
    // first, once.
    assert!((1..=2).contains(&limit.refused()), "{}", limit.refused());
    assert_eq!(server.stats().tool_calls("echo_region"), 0);
    let result = sup
        .send(echo_region(2))
        .await
        .unwrap()
        .expect("the server is fine");
    assert_eq!(text_of(&result), "rr: hi");
    sup.send(mcp_supervisor::Shutdown).await.unwrap();
}

#[actix::test]
async fn auto_falls_back_to_sessions_on_a_legacy_server_and_speaks_modern_to_a_dual_one() {
    let legacy = TestHttpServer::start_with(Era::Legacy).await;
    let dual = TestHttpServer::start_with(Era::Dual).await;
    let (sup, events) = start_supervisor(
        quick_settings(),
        [
            ServerConfig::http("old", legacy.url()),
            ServerConfig::http("new", dual.url()),
        ],
    );
    events.ready("old", 1).await;
    events.ready("new", 1).await;
    assert_eq!(status(&sup, "old").await.era, Some(ClientEra::Legacy));
    assert_eq!(status(&sup, "new").await.era, Some(ClientEra::Modern));
    for name in ["old", "new"] {
        let echo = Call::new(
            name,
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"text": name}})),
        )
        .timeout(Duration::from_secs(5));
        sup.send(echo).await.unwrap().expect("answered in its era");
    }
    assert_eq!(
        legacy.stats().sessions(),
        1,
        "the legacy server has its session"
    );
    assert_eq!(
        dual.stats().sessions(),
        0,
        "the dual one was spoken to the modern way"
    );
}

/// The issue's check: a server upgraded from dual-era to modern-only while supervised comes
/// back Ready in the modern era after one failed attempt, with the reason in `last_error`.
#[actix::test]
async fn a_server_upgraded_to_modern_only_comes_back_modern_with_the_reason() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let config = ServerConfig::http("web", server.url())
        .protocol(mcp_supervisor::protocol::era::ProtocolChoice::Auto);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("web", 1).await;
    // Pin it to the session era first: a legacy-only restart, then back to dual ...
    server.faults().era(Era::Legacy);
    sup.send(mcp_supervisor::Reconnect {
        server: "web".into(),
    })
    .await
    .unwrap()
    .unwrap();
    events.ready("web", 2).await;
    assert_eq!(status(&sup, "web").await.era, Some(ClientEra::Legacy));
    // ... then the upgrade: modern only. The session is gone, the handshake refused.
    server.faults().era(Era::Modern);
    sup.send(mcp_supervisor::Reconnect {
        server: "web".into(),
    })
    .await
    .unwrap()
    .unwrap();
    events.ready("web", 3).await;
    let st = status(&sup, "web").await;
    assert_eq!(st.era, Some(ClientEra::Modern));
    let why = st.last_error.expect("the reason is kept").to_string();
    assert!(
        why.contains("no longer speaks the legacy protocol era"),
        "{why}"
    );
    let echo =
        CallTool::new("web", "echo", json!({"text": "modern"})).timeout(Duration::from_secs(5));
    assert_eq!(text_of(&sup.send(echo).await.unwrap().unwrap()), "modern");
}
