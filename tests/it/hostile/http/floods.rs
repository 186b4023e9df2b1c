//! Floods from the server: they wait in TCP, and cost calls nothing — on the session's GET
//! stream, and on the 2026-07-28 revision's listen stream, which takes its place.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::*;

use super::*;
use crate::common::http_server::{Body, Canned};
use crate::common::*;
use crate::in_both_eras;

// ---- floods ----

/// Counts the log notifications a subscriber gets.
struct CountLogs(Arc<AtomicUsize>);

impl actix::Actor for CountLogs {
    type Context = actix::Context<Self>;
}

impl actix::Handler<ServerEvent> for CountLogs {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut actix::Context<Self>) {
        if matches!(event, ServerEvent::Log { .. }) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A flood of log notifications on the GET stream (read with backpressure: see the
/// transport's `a_flood_waits_in_tcp_while_the_actor_is_behind`) costs no call its answer and
/// the connection nothing, and reaches the subscriber.
async fn a_notification_flood_costs_calls_nothing() {
    use actix::Actor;
    const FLOOD: usize = 50_000;
    let server = http_server().await;
    let event = r#"data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a log line of the flood"}}"#;
    server.faults().canned(
        change_stream(),
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .stream(Body::Repeat {
                // A hundred events a chunk: the server must not be the bottleneck.
                chunk: format!("{event}\n\n").repeat(100).into_bytes(),
                count: Some(FLOOD / 100),
                every: Duration::ZERO,
                hold: true,
            }),
    );
    let count = Arc::new(AtomicUsize::new(0));
    let counter = CountLogs(count.clone()).start();
    let (sup, events) = start(&server).await;
    sup.send(SubscribeEvents(counter.recipient()))
        .await
        .unwrap();
    // Calls while the flood lasts (at least one, should it be over already).
    loop {
        let ok = sup
            .send(echo("x"))
            .await
            .unwrap()
            .expect("answered in the flood");
        assert_eq!(text_of(&ok), "x");
        if server.stats().chunks_sent() >= FLOOD / 100 {
            break;
        }
    }
    until("notifications delivered", || {
        count.load(Ordering::Relaxed) > 0
    })
    .await;
    let st = status(&sup, "web").await;
    assert_eq!(st.state, ServerState::Ready);
    assert_eq!(st.counters.reconnects, 0, "{:?}", events.messages("web"));
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(a_notification_flood_costs_calls_nothing);
