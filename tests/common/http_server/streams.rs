//! SSE streams: opening one in a session, resuming one after `Last-Event-ID`, a [`Direct`]
//! stream outside any session (the modern era's: no event ids, nothing kept, no resumption),
//! and the response body that feeds an attached client (keep-alives while quiet, an abrupt end
//! on `Abort`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::mpsc;

use super::handlers::http_error;
use super::state::{lock, Chunk, EventLog, Live, Shared};

// ---- SSE streams ----

/// Creates a stream in `session` and attaches a new client to it. `None` if the session is gone.
pub(super) fn open_stream(
    state: &Shared,
    session: &str,
    standalone: bool,
    budget: Option<usize>,
) -> Option<(u64, mpsc::UnboundedReceiver<Chunk>)> {
    let (retry, priming) = {
        let faults = lock(&state.faults);
        (faults.retry_ms, faults.priming)
    };
    let (tx, rx) = mpsc::unbounded_channel();
    if let Some(ms) = retry {
        let _ = tx.send(Chunk::Data(Bytes::from(format!("retry: {ms}\n\n"))));
    }
    let mut sessions = lock(&state.sessions);
    let session = sessions.get_mut(session)?;
    let stream = session.next_stream;
    session.next_stream += 1;
    let mut log = EventLog::default();
    if priming {
        let (_, id) = log.next_id(stream);
        let _ = tx.send(Chunk::Data(Bytes::from(format!("id: {id}\ndata: \n\n"))));
    }
    if budget == Some(0) {
        let _ = tx.send(Chunk::Abort);
    } else {
        log.live = Some(Live { tx, budget });
    }
    session.streams.insert(stream, log);
    if standalone {
        session.standalone = Some(stream);
    }
    Some((stream, rx))
}

/// A response stream of one modern request: data events without ids, not stored, so a cut
/// stream loses what was not delivered. Clones feed the same stream.
#[derive(Clone)]
pub(super) struct Direct(Arc<Mutex<Option<Live>>>);

impl Direct {
    /// A new stream; `budget` as for [`open_stream`] (`drop_sse_after`).
    pub(super) fn open(budget: Option<usize>) -> (Direct, mpsc::UnboundedReceiver<Chunk>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let live = if budget == Some(0) {
            let _ = tx.send(Chunk::Abort);
            None
        } else {
            Some(Live { tx, budget })
        };
        (Direct(Arc::new(Mutex::new(live))), rx)
    }

    /// Sends `message` if the client is still attached; `last`: the response, which ends the
    /// stream.
    pub(super) fn send(&self, message: &Value, last: bool) {
        let frame = Bytes::from(format!("data: {message}\n\n"));
        Live::deliver(&mut lock(&self.0), frame, last);
    }
}

/// Replays the events after `last_event_id` of its stream, then keeps the client attached
/// until the stream's final response (POST streams) or for good (standalone streams).
pub(super) fn resume(state: &Arc<Shared>, session: &str, last_event_id: &str) -> HttpResponse {
    let parsed = last_event_id
        .split_once('-')
        .and_then(|(stream, seq)| Some((stream.parse::<u64>().ok()?, seq.parse::<u64>().ok()?)));
    let unknown = || {
        http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: unknown Last-Event-ID",
        )
    };
    let Some((stream, seq)) = parsed else {
        return unknown();
    };
    let retry = lock(&state.faults).retry_ms;
    let (tx, rx) = mpsc::unbounded_channel();
    if let Some(ms) = retry {
        let _ = tx.send(Chunk::Data(Bytes::from(format!("retry: {ms}\n\n"))));
    }
    let mut sessions = lock(&state.sessions);
    let Some(log) = sessions
        .get_mut(session)
        .and_then(|s| s.streams.get_mut(&stream))
    else {
        return unknown();
    };
    for (_, frame) in log.events.iter().filter(|(s, _)| *s > seq) {
        let _ = tx.send(Chunk::Data(frame.clone()));
    }
    if !log.done {
        // Replaces (and so ends) any earlier attachment.
        log.live = Some(Live { tx, budget: None });
    }
    sse_response(state, rx)
}

pub(super) fn sse_response(
    state: &Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Chunk>,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(sse_body(state.clone(), rx))
}

/// The body of an SSE response: the chunks sent to `rx`, with keep-alive comments while quiet,
/// until every sender is gone (a clean end) or an `Abort` comes (an abrupt end).
pub(super) fn sse_body(
    state: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Chunk>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(Some(rx), move |rx| {
        let state = state.clone();
        async move {
            let mut rx = rx?;
            let chunk = loop {
                // Read each time, so the switch applies to streams already open.
                let keepalive = lock(&state.faults).keepalive_ms.map(Duration::from_millis);
                let wait = keepalive.unwrap_or(Duration::from_millis(100));
                match tokio::time::timeout(wait.max(Duration::from_millis(1)), rx.recv()).await {
                    Ok(chunk) => break chunk,
                    Err(_) if keepalive.is_some() => {
                        return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Some(rx)));
                    }
                    Err(_) => {}
                }
            };
            match chunk {
                Some(Chunk::Data(bytes)) => Some((Ok(bytes), Some(rx))),
                Some(Chunk::Abort) => {
                    // Let the dispatcher flush what was sent before failing the body, which
                    // closes the connection without the terminating chunk.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let error =
                        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "dropped");
                    Some((Err(error), None))
                }
                None => None,
            }
        }
    })
}
