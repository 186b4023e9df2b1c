//! The network cut between the supervisor and a server that stays up, after a call was written
//! and before its answer's head came back: the server may have run it, so the caller hears
//! `outcome_unknown` and the call is not sent again (awc reports this as a failure to
//! connect, which once made it look never sent, and re-sent: the tool ran twice).

use std::time::Duration;

use mcp_supervisor::*;
use serde_json::json;

use crate::common::cutting_proxy::CuttingProxy;
use crate::common::http_server::{Era, TestHttpServer};
use crate::common::*;

async fn a_call_cut_before_its_answer_is_outcome_unknown_and_runs_once(era: Era) {
    let server = TestHttpServer::start_with(era).await;
    let proxy = CuttingProxy::start(server.port()).await;
    // JSON answers: the head of the answer comes only when the tool is done.
    server.faults().json_responses(true);
    let url = format!("http://127.0.0.1:{}/mcp", proxy.port);
    let (sup, events) = start_supervisor(quick_settings(), [ServerConfig::http("web", url)]);
    events.ready("web", 1).await;
    let slow =
        CallTool::new("web", "slow", json!({ "seconds": 3 })).timeout(Duration::from_secs(20));
    let pending = sup.send(slow);
    until("the slow call reached the server", || {
        server.stats().posts("tools/call") == 1
    })
    .await;
    assert!(proxy.cut_all() > 0, "the call's connection was cut");
    let err = pending.await.unwrap().expect_err("its answer cannot come");
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{era:?}: {err}");
    // The next call goes through (on a new socket) and is the only other tools/call the
    // server saw: the cut one was not sent again.
    let ok = sup
        .send(
            CallTool::new("web", "echo", json!({ "text": "after" }))
                .timeout(Duration::from_secs(20)),
        )
        .await
        .unwrap()
        .expect("calls work after the cut");
    assert_eq!(text_of(&ok), "after");
    assert_eq!(
        server.stats().posts("tools/call"),
        2,
        "{era:?}: the cut call was re-sent"
    );
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_call_cut_before_its_answer_is_outcome_unknown_in_the_session_era() {
    a_call_cut_before_its_answer_is_outcome_unknown_and_runs_once(Era::Legacy).await
}

#[actix::test]
async fn a_call_cut_before_its_answer_is_outcome_unknown_in_the_modern_era() {
    a_call_cut_before_its_answer_is_outcome_unknown_and_runs_once(Era::Modern).await
}
