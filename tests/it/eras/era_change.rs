//! A live connection whose server is replaced by one of the other era, with nothing but the
//! next request to tell: over HTTP without a GET stream (as a stateless server serves the
//! session era), a legacy request answered `-32022` by a modern-only server.

use std::time::Duration;

use mcp_supervisor::protocol::era::Era as ClientEra;
use mcp_supervisor::{CallTool, ServerConfig};
use serde_json::json;

use crate::common::http_server::{Era, GetMode, TestHttpServer};
use crate::common::*;

/// The TypeScript SDK v2 server upgraded from dual-era (whose session era is stateless over
/// HTTP) to modern-only on the same port: the first call after the upgrade is refused with
/// `-32022` for its era. That refusal is the server's news, not the call's answer: the call,
/// refused unprocessed, is answered on the connection of the new era, and the reason is kept.
#[actix::test]
async fn a_call_refused_for_its_era_switches_the_connection_and_is_answered() {
    let server = TestHttpServer::start_with(Era::Legacy).await;
    server.faults().get_stream(GetMode::MethodNotAllowed);
    let (sup, events) =
        start_supervisor(quick_settings(), [ServerConfig::http("web", server.url())]);
    events.ready("web", 1).await;
    assert_eq!(status(&sup, "web").await.era, Some(ClientEra::Legacy));

    server.faults().era(Era::Modern);
    let echo = CallTool::new("web", "echo", json!({"text": "hi"})).timeout(Duration::from_secs(10));
    let result = sup
        .send(echo)
        .await
        .unwrap()
        .expect("answered in the modern era");
    assert_eq!(text_of(&result), "hi");
    let st = status(&sup, "web").await;
    assert_eq!(st.era, Some(ClientEra::Modern));
    let why = st.last_error.expect("the reason is kept").to_string();
    assert!(
        why.contains("no longer speaks the legacy protocol era"),
        "{why}"
    );
    events.ready("web", 2).await;
}
