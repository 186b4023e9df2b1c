//! Requests from the server: floods of them, and a handler that never answers. We hold a
//! bounded number, answer every one, and stay usable. A server of the 2026-07-28 revision has
//! no requests to send (it asks for input in its results): its flood is refused at once,
//! request by request, and the handler is never asked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{CallTool, ServerRequest, Supervisor};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// A request handler that never answers, and counts what it was asked.
struct Silent(Arc<AtomicUsize>);

impl Actor for Silent {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Silent {
    type Result = ResponseFuture<Result<serde_json::Value, mcp_supervisor::RpcError>>;
    fn handle(&mut self, _: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::pending())
    }
}

/// A server that sends 5,000 `roots/list` requests at once to a handler that never answers:
/// at most 64 wait for the handler (each for at most the call timeout), the rest are refused
/// at once, and the server still answers our calls. A modern server's are all refused at once,
/// the handler never asked.
async fn a_flood_of_server_requests_holds_a_bounded_number() {
    // A modern server's requests are refused as they are read, and the hostile server reads
    // nothing while it floods: its flood is kept within what its stdin pipe holds of our
    // refusals, or it would be held up by its own pipe (see `bounded_memory`).
    let requests = match era() {
        "modern" => 256,
        _ => 5000,
    };
    let script = json!({"after_initialized": [
        {"repeat": requests, "do": [{"request": "roots/list", "id": "r", "params": {}}]}
    ]});
    let asked = Arc::new(AtomicUsize::new(0));
    let handler = Silent(asked.clone()).start();
    let (events, recipient) = Events::start();
    let mut settings = quick_settings();
    settings.call_timeout = Duration::from_secs(30);
    let sup = Supervisor::builder()
        .settings(settings)
        .server(hostile("asks", script))
        .subscriber(recipient)
        .request_handler(handler.recipient(), json!({"roots": {}}))
        .start()
        .unwrap();
    events.ready("asks", 1).await;
    // The flood came before the answer to the opening's tools/list (stdout is read in order):
    // in the modern era it has been refused by now.
    let share = match era() {
        "modern" => 0,
        _ => 64,
    };
    until("the handler holds its share", || {
        asked.load(Ordering::Relaxed) >= share
    })
    .await;
    // Round trips give any further request time to reach the handler: none may.
    for x in 0..3 {
        let echo =
            CallTool::new("asks", "echo", json!({ "x": x })).timeout(Duration::from_secs(10));
        let result = sup
            .send(echo)
            .await
            .unwrap()
            .expect("the server is still usable");
        assert_eq!(text_of(&result), format!("{{\"x\":{x}}}"));
    }
    assert_eq!(
        asked.load(Ordering::Relaxed),
        share,
        "requests handed to the handler at once"
    );
}

in_both_eras!(a_flood_of_server_requests_holds_a_bounded_number);
