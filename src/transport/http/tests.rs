//! The HTTP transport against a raw TCP peer, where a test must see what the server's socket
//! sees: whether we keep reading while nobody takes our events.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_rt::net::TcpListener;
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use serde_json::json;

use super::{connect, EVENTS_CAPACITY};
use crate::config::{HttpConfig, Settings};
use crate::protocol::jsonrpc::{self, Inbound};
use crate::transport::backlog::MAX_BACKLOG;
use crate::transport::{Connection, SkipCounters, TransportEvent};

/// What the flood server writes before it stops on its own: far more than the socket buffers
/// on both sides hold (the receive buffer is not tuned up while the reader does not read).
const FLOOD_BYTES: usize = 48 * 1024 * 1024;

/// A raw HTTP/1.1 peer: every GET is answered with an SSE stream of `message`s, written as
/// fast as the socket takes them until [`FLOOD_BYTES`] (`written` counts them); every POST is
/// never answered.
async fn flood(listener: TcpListener, message: String, written: Arc<AtomicUsize>) {
    while let Ok((socket, _)) = listener.accept().await {
        actix::spawn(serve(socket, message.clone(), written.clone()));
    }
}

async fn serve(mut socket: actix_rt::net::TcpStream, message: String, written: Arc<AtomicUsize>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    if !head.starts_with(b"GET") {
        // A POST: read, never answered.
        std::future::pending::<()>().await;
    }
    let answer =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if socket.write_all(answer).await.is_err() {
        return;
    }
    // One HTTP chunk per event.
    let event = format!("data: {message}\n\n");
    let event = format!("{:x}\r\n{event}\r\n", event.len());
    while written.load(Ordering::Relaxed) < FLOOD_BYTES {
        if socket.write_all(event.as_bytes()).await.is_err() {
            return;
        }
        written.fetch_add(event.len(), Ordering::Relaxed);
    }
    std::future::pending::<()>().await;
}

/// A connection to a [`flood`] peer of `message`s, with its GET stream open; the counter of
/// what the peer wrote.
async fn flooded(message: String, settings: &Settings) -> (Connection, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let written = Arc::new(AtomicUsize::new(0));
    actix::spawn(flood(listener, message, written.clone()));
    let config = HttpConfig {
        url: format!("http://127.0.0.1:{port}/mcp"),
        mode: crate::config::HttpMode::StreamableHttp,
        headers: Default::default(),
        oauth: None,
    };
    let connection = connect(
        &Arc::from("flood"),
        &config,
        settings,
        Arc::new(SkipCounters::default()),
    )
    .expect("a connection");
    connection.closer.initialized("2025-06-18");
    (connection, written)
}

/// Waits until `written` has not grown for a while (or the flood is all out), bounded.
async fn settled(written: &AtomicUsize) -> usize {
    let mut last = usize::MAX;
    let mut still = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written.load(Ordering::Relaxed);
        if now >= FLOOD_BYTES {
            return now;
        }
        still = if now == last { still + 1 } else { 0 };
        if still == 3 {
            return now;
        }
        last = now;
    }
    written.load(Ordering::Relaxed)
}

/// Defect 10: a notification flood on the GET stream while the actor is behind (here: does
/// not read at all) must wait in TCP, not in our memory. Before, the transport read the whole
/// flood into an unbounded channel (+90 MiB for 100k notifications).
#[actix::test]
async fn a_flood_waits_in_tcp_while_the_actor_is_behind() {
    let padding = "x".repeat(400);
    let message = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{padding}"}}}}"#
    );
    // Nobody takes the events the GET stream reads.
    let (mut connection, written) = flooded(message, &Settings::default()).await;
    let stalled = settled(&written).await;
    assert!(
        stalled < FLOOD_BYTES / 2,
        "the transport read {stalled} bytes while nobody took its events"
    );

    // It is backpressure, not a stall: taking events lets the flood go on.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while written.load(Ordering::Relaxed) <= stalled {
        let event = tokio::time::timeout_at(deadline, connection.events.next())
            .await
            .expect("the flood goes on as its events are taken");
        assert!(
            matches!(event, Some(TransportEvent::Message(_))),
            "{event:?}"
        );
    }
    connection.closer.kill().await;
}

/// A server's request flood must not pile up answers in the send loop: while more than
/// `MAX_BACKLOG` answers wait for their POSTs (here: the server never answers one), the
/// server's requests are not read.
#[actix::test]
async fn a_request_flood_waits_while_its_answers_cannot_be_sent() {
    let message = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_owned();
    let settings = Settings {
        // Each answer's POST is waited for this long, so the first one holds up the rest.
        ping_timeout: Duration::from_secs(60),
        ..Settings::default()
    };
    let (mut connection, written) = flooded(message, &settings).await;
    // Act as the actor: answer every request at once.
    let mut delivered = 0;
    while let Ok(event) =
        tokio::time::timeout(Duration::from_secs(1), connection.events.next()).await
    {
        let Some(TransportEvent::Message(Inbound::Request { id, .. })) = event else {
            panic!("{event:?}");
        };
        delivered += 1;
        assert!(connection
            .outbound
            .send(jsonrpc::response_line(&id, &Ok(json!({})))));
        assert!(
            delivered <= MAX_BACKLOG + EVENTS_CAPACITY + 32,
            "{delivered} requests handed over while their answers could not be sent"
        );
    }
    assert!(
        written.load(Ordering::Relaxed) > 100 * 1024,
        "the server offered far more"
    );
    connection.closer.kill().await;
}
