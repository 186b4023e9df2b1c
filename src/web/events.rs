//! `GET /status/events`: the supervisor's [`ServerEvent`]s as Server-Sent Events, bounded per
//! subscriber and in number.
//!
//! Each stream opens with an `event: status` whose data is every server's status (the JSON of
//! `GET /status`), taken after the stream subscribed, so that every change after that snapshot
//! follows in the stream; then one SSE event per [`ServerEvent`], named by its `type`
//! (`state_changed`, `tools_changed`, ...), its JSON as `data`; and a `: keep-alive` comment
//! every [`KEEP_ALIVE`] so that proxies keep an idle stream open. A request that gets the
//! redacted view (`visibility`) gets the snapshot and the events in their redacted forms
//! (`redacted`).
//!
//! Bounds: a stream's events pass through a channel of [`STREAM_BUFFER`], and its forwarding
//! actor answers the fan-out only once the event is in that channel. A client that does not
//! read therefore holds back its own delivery, and the fan-out's per-subscriber queue does the
//! rest (`src/actor/fanout.rs`: at most 256 events, state changes coalesced, notifications
//! dropped and counted in the servers' counters). At most [`MAX_EVENT_STREAMS`] streams are
//! open in the process at once; one more is answered 503 with `Retry-After`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix::prelude::*;
use actix_web::http::header::{self, HeaderValue};
use actix_web::web::{Bytes, Data};
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use tokio::sync::mpsc;

use super::redacted;
use super::scope::{supervisor_gone, Shared};
use super::visibility::View;
use crate::actor::messages::{GetStatus, ServerEvent, SubscribeEvents};

/// Event streams open at once in this process, at most.
pub const MAX_EVENT_STREAMS: usize = 64;
/// Events buffered for one stream between the supervisor and the client's socket.
pub const STREAM_BUFFER: usize = 16;
/// How often an idle stream gets a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Streams open now, across every scope of the process.
static OPEN_STREAMS: AtomicUsize = AtomicUsize::new(0);

/// Receives one stream's events from the fan-out and hands them to the stream's channel.
struct Forwarder {
    tx: mpsc::Sender<ServerEvent>,
}

impl Actor for Forwarder {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Forwarder {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) -> Self::Result {
        let tx = self.tx.clone();
        // The fan-out waits for this answer before it sends the next event: a slow client
        // backs up into the fan-out's bounded queue, not into memory here.
        Box::pin(
            async move { tx.send(event).await.is_ok() }
                .into_actor(self)
                .map(|open, _, ctx| {
                    if !open {
                        ctx.stop();
                    }
                }),
        )
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Close;

impl Handler<Close> for Forwarder {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Held by a stream for as long as it is open: counts it, and stops its forwarder (which
/// unsubscribes it from the fan-out) when the client goes away.
struct Open {
    forwarder: Option<Addr<Forwarder>>,
}

impl Open {
    /// Counts one more stream, unless [`MAX_EVENT_STREAMS`] are open.
    fn claim() -> Option<Open> {
        OPEN_STREAMS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_EVENT_STREAMS).then_some(n + 1)
            })
            .ok()
            .map(|_| Open { forwarder: None })
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN_STREAMS.fetch_sub(1, Ordering::AcqRel);
        if let Some(forwarder) = self.forwarder.take() {
            forwarder.do_send(Close);
        }
    }
}

/// One SSE event: `event: <name>`, the JSON on one `data:` line (serde_json escapes line
/// breaks inside strings, so it is one line).
fn frame(name: &str, data: &impl Serialize) -> Bytes {
    match serde_json::to_string(data) {
        Ok(json) => Bytes::from(format!("event: {name}\ndata: {json}\n\n")),
        Err(_) => Bytes::from_static(b": an event could not be serialized\n\n"),
    }
}

/// `event` as a frame of `view`.
fn event_frame(view: View, event: &ServerEvent) -> Bytes {
    match view {
        View::Full => frame(event.type_name(), event),
        View::Redacted => frame(event.type_name(), &redacted::Event::from(event)),
    }
}

/// The `GET /status/events` handler.
pub(super) async fn stream(shared: Data<Shared>, req: HttpRequest) -> HttpResponse {
    // Decided once: the stream shows what its first request was allowed to see.
    let view = shared.visibility.view_for(&req);
    let Some(mut open) = Open::claim() else {
        return HttpResponse::ServiceUnavailable()
            .insert_header((header::RETRY_AFTER, HeaderValue::from_static("5")))
            .body("too many event streams are open");
    };
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let forwarder = Forwarder { tx }.start();
    open.forwarder = Some(forwarder.clone());
    let supervisor = &shared.supervisor;
    if supervisor
        .send(SubscribeEvents(forwarder.recipient()))
        .await
        .is_err()
    {
        return supervisor_gone();
    }
    // The supervisor has passed the subscription on to every server's actor before it asks
    // them for their status, and each actor handles its messages in order: the snapshot is
    // taken after the subscription, and no change falls between the two.
    let snapshot = match (supervisor.send(GetStatus::all()).await, view) {
        (Ok(Ok(all)), View::Full) => frame("status", &all),
        (Ok(Ok(all)), View::Redacted) => frame("status", &redacted::statuses(&all)),
        (Ok(Err(e)), View::Full) => frame("error", &e),
        (Ok(Err(e)), View::Redacted) => frame("error", &redacted::Code::from(&e)),
        (Err(_), _) => return supervisor_gone(),
    };
    let start = tokio::time::Instant::now()
        .checked_add(KEEP_ALIVE)
        .unwrap_or_else(tokio::time::Instant::now);
    let keep_alive = tokio::time::interval_at(start, KEEP_ALIVE);
    let state = (Some(snapshot), rx, keep_alive, open);
    let events = futures_util::stream::unfold(
        state,
        move |(first, mut rx, mut keep_alive, open)| async move {
            let bytes = match first {
                Some(snapshot) => snapshot,
                None => tokio::select! {
                    event = rx.recv() => event_frame(view, &event?),
                    _ = keep_alive.tick() => Bytes::from_static(b": keep-alive\n\n"),
                },
            };
            Some((Ok::<_, Infallible>(bytes), (None, rx, keep_alive, open)))
        },
    );
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .insert_header(("x-accel-buffering", HeaderValue::from_static("no")))
        .streaming(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test of this process that opens streams: the count is all its own.
    #[test]
    fn at_most_max_event_streams_are_open_and_a_closed_one_frees_its_place() {
        let open: Vec<Open> = (0..MAX_EVENT_STREAMS)
            .map_while(|_| Open::claim())
            .collect();
        assert_eq!(open.len(), MAX_EVENT_STREAMS);
        assert!(Open::claim().is_none(), "one more is refused");
        drop(open.into_iter().next());
        assert!(Open::claim().is_some(), "a closed stream frees its place");
    }

    /// A client that does not read holds back its own delivery: its forwarder takes no more
    /// than the channel holds (plus the one it waits to put in), and the fan-out's bounded
    /// queue keeps the rest, dropping and counting what does not fit.
    #[actix_rt::test]
    async fn a_client_that_does_not_read_backs_up_into_the_fanouts_bounded_queue() {
        use crate::actor::fanout::{Fanout, QUEUE_CAPACITY};
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let forwarder = Forwarder { tx }.start();
        let mut fanout = Fanout::default();
        fanout.subscribe(forwarder.recipient());
        let notification = ServerEvent::Notification {
            server: "s".into(),
            method: "notifications/x".into(),
            params: None,
        };
        let batch = 1000;
        for _ in 0..batch {
            fanout.emit(&notification);
        }
        let first_dropped = fanout.counts().dropped;
        assert_eq!(first_dropped, (batch - QUEUE_CAPACITY) as u64);
        // Let the drain fill the channel and park the next event in the forwarder.
        for _ in 0..10_000 {
            if rx.len() == STREAM_BUFFER {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(rx.len(), STREAM_BUFFER, "the channel fills and no more");
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        for _ in 0..batch {
            fanout.emit(&notification);
        }
        let second_dropped = fanout.counts().dropped - first_dropped;
        // The queue had room only for what went on into the channel and the forwarder.
        let room = (STREAM_BUFFER + 1) as u64;
        assert!(
            (batch as u64 - room..=batch as u64 - STREAM_BUFFER as u64).contains(&second_dropped),
            "{second_dropped} of {batch} dropped"
        );
        assert_eq!(rx.len(), STREAM_BUFFER);
    }

    #[test]
    fn a_frame_is_one_event_with_one_data_line() {
        let frame = frame("log", &serde_json::json!({"text": "two\nlines"}));
        assert_eq!(
            &frame[..],
            b"event: log\ndata: {\"text\":\"two\\nlines\"}\n\n"
        );
    }
}
