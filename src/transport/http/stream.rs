//! Reading SSE streams — a POST's answer or the GET stream — into transport events, and
//! resuming an answer whose stream broke before its response.
//!
//! Its own room because resumption has rules of its own: GET + `Last-Event-ID`, after exactly
//! the server's `retry:` delay if it gave one (never under [`MIN_RETRY`], never over the
//! reconnect backoff's cap), else our backoff —
//! and never before the `Retry-After` of a 429/503 that refused a resumption —, at most
//! [`MAX_RESUMES`] times before the call is reported interrupted.
//!
//! Every message read is handed to the actor with an awaited send (see [`Shared::emit`]): a
//! reader whose actor is behind stops reading, so the server's flood waits in TCP, not here.

use std::time::Duration;

use awc::http::header::CONTENT_TYPE;
use futures_util::StreamExt;

use super::answer::encoded;
use super::overload::is_overloaded;
use super::{request, Response, Shared};
use crate::protocol::jsonrpc::{parse_frame, Inbound};
use crate::protocol::sse::{SseItem, SseParser};
use crate::protocol::text::server_text;
use crate::transport::TransportEvent;

/// Attempts to resume one broken response stream before giving the call up.
pub(super) const MAX_RESUMES: u32 = 3;
/// How long a response stream is still read after its answer, for the server to end it: over
/// HTTP/1.1 a stream read to its end gives its connection back to the pool, one dropped open
/// closes it, and the next request pays for a new connection (and TLS handshake). A server
/// ends the stream right after the answer (the spec says it should). One that keeps it open
/// past this wait loses the connection, and from then on its streams are dropped at the
/// answer (a settling stream holds one of the connector's connections, which are counted).
pub(super) const SETTLE: Duration = Duration::from_millis(100);
/// The shortest reconnection delay we honour, whatever `retry:` says: a server asking for 0 ms
/// must not make us spin.
const MIN_RETRY: Duration = Duration::from_millis(100);

/// Whether a response is an SSE stream: its media type (case-insensitive, whatever its
/// parameters, `charset` included) is `text/event-stream`.
pub(super) fn is_sse<T>(response: &awc::ClientResponse<T>) -> bool {
    media_type(response).is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
}

/// The media type of a response, without its parameters (`; charset=...`).
pub(super) fn media_type<T>(response: &awc::ClientResponse<T>) -> Option<&str> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or(value).trim())
}

/// Whether a response is an SSE stream we can read: 2xx, `text/event-stream`, not compressed.
pub(super) fn is_readable_sse<T>(response: &awc::ClientResponse<T>) -> bool {
    response.status().is_success() && is_sse(response) && encoded(response).is_none()
}

/// Parses one JSON-RPC payload and passes its messages on. True if it held the response to
/// `awaited`.
pub(super) async fn deliver(shared: &Shared, payload: &[u8], awaited: Option<u64>) -> bool {
    match parse_frame(payload) {
        Ok(messages) => {
            let mut answered = false;
            for message in messages {
                if matches!(message, Inbound::Request { .. }) {
                    // Its answer will need a POST: not while too many wait for theirs.
                    shared.room_to_answer().await;
                }
                if let (
                    Some(id),
                    Inbound::Response { id: got, .. } | Inbound::Error { id: Some(got), .. },
                ) = (awaited, &message)
                {
                    answered |= got.as_ours() == Some(id);
                }
                shared.emit(TransportEvent::Message(message)).await;
            }
            answered
        }
        Err(e) => {
            shared
                .skips
                .non_json
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::telemetry::message_skipped(&shared.server, "non_json");
            tracing::warn!(server = %shared.server, error = %server_text(&e.to_string()), "skipped a message that is not JSON-RPC");
            false
        }
    }
}

pub(super) enum Pumped {
    /// The awaited response arrived (see [`settle`] for the rest of the stream).
    Answered,
    /// The stream ended first; `retry` is the server's reconnection delay, if it gave one;
    /// `events` is how many messages it delivered.
    Ended {
        retry: Option<Duration>,
        events: usize,
    },
    /// The connection is being closed.
    Closed,
}

/// Reads an SSE stream, passing its messages on, until the response to `awaited` arrives or
/// the stream ends.
pub(super) async fn pump(
    shared: &Shared,
    response: &mut Response,
    parser: &mut SseParser,
    awaited: Option<u64>,
) -> Pumped {
    let mut retry = None;
    let mut events = 0;
    loop {
        let chunk = tokio::select! {
            chunk = response.next() => chunk,
            _ = shared.closed() => return Pumped::Closed,
        };
        let Some(Ok(chunk)) = chunk else {
            return Pumped::Ended { retry, events };
        };
        let mut answered = false;
        for item in parser.feed(&chunk) {
            match item {
                SseItem::Event { data, .. } => {
                    events += 1;
                    answered |= deliver(shared, data.as_bytes(), awaited).await;
                }
                // Honoured exactly, within bounds: neither a spin nor a year's wait.
                SseItem::Retry(delay) => {
                    retry = Some(delay.min(shared.retry_after_cap()).max(MIN_RETRY))
                }
                SseItem::Oversized { bytes } => shared.skipped_oversized_event(bytes),
            }
        }
        if answered {
            return Pumped::Answered;
        }
    }
}

/// Follows the SSE answer to request `id` until its response, resuming the stream if it ends
/// first.
///
/// In the 2026-07-28 revision (`modern`) a stream cannot be resumed: one that ends before its
/// response loses the request, and the actor's retry rules decide what happens to it.
pub(super) async fn follow_answer(shared: &Shared, mut response: Response, id: u64, modern: bool) {
    let mut parser = SseParser::new(shared.max_message_bytes);
    match pump(shared, &mut response, &mut parser, Some(id)).await {
        Pumped::Answered => settle(shared, &mut response, &mut parser).await,
        Pumped::Ended { .. } if modern => {
            shared
                .emit(TransportEvent::Interrupted {
                    ids: vec![id],
                    error: shared.connection_error("the response stream ended before its answer"),
                    socket: true,
                })
                .await
        }
        Pumped::Ended { retry, .. } => resume(shared, id, parser, retry).await,
        Pumped::Closed => {}
    }
}

/// Reads what follows an answer on its stream (passing any message on) until the server ends
/// the stream, for [`SETTLE`] at most, so that its connection can serve the next request.
/// Not over HTTP/2, whose streams share a connection that outlives them, nor once this
/// server has kept a stream open past the wait.
async fn settle(shared: &Shared, response: &mut Response, parser: &mut SseParser) {
    if !shared.settles.get() || response.version() == awc::http::Version::HTTP_2 {
        return;
    }
    if tokio::time::timeout(SETTLE, pump(shared, response, parser, None))
        .await
        .is_err()
    {
        shared.settles.set(false);
        tracing::debug!(server = %shared.server, settle_ms = SETTLE.as_millis() as u64, "a response stream stayed open after its answer: its connection is closed, and so are the next ones at their answers");
    }
}

/// Waits `delay`, unless the connection closes first (then false).
pub(super) async fn pause(shared: &Shared, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = shared.closed() => false,
    }
}

/// Resumes the response stream of request `id` with GET + `Last-Event-ID`. If that is
/// impossible, the call is reported interrupted and the actor applies its retry rules.
async fn resume(shared: &Shared, id: u64, mut parser: SseParser, mut retry: Option<Duration>) {
    // A 429/503's `Retry-After`, for the next attempt only.
    let mut not_before: Option<Duration> = None;
    for attempt in 0..MAX_RESUMES {
        let Some(last) = parser.last_event_id().map(str::to_owned) else {
            break;
        };
        let delay = retry.unwrap_or_else(|| shared.resume_backoff.base_delay(attempt));
        let delay = not_before.take().map_or(delay, |wait| wait.max(delay));
        tracing::debug!(server = %shared.server, id, last_event_id = %server_text(&last), delay_ms = delay.as_millis() as u64, "resuming a broken response stream");
        if !pause(shared, delay).await {
            return;
        }
        let request = match request::get(shared, Some(&last)) {
            Ok(request) => request,
            Err(e) => {
                tracing::debug!(server = %shared.server, error = %e, "the stream cannot be resumed");
                break;
            }
        };
        let mut response = match request.send().await {
            Ok(response) if is_readable_sse(&response) => response,
            Ok(response) if is_overloaded(response.status()) => {
                // Not now: try again, not before the server's `Retry-After`.
                not_before = shared.retry_after(&response);
                tracing::debug!(server = %shared.server, status = %response.status(), retry_after = ?not_before, "the server is too busy to resume the stream");
                continue;
            }
            Ok(response) => {
                tracing::debug!(server = %shared.server, status = %response.status(), "the server cannot resume the stream");
                break;
            }
            Err(e) => {
                tracing::debug!(server = %shared.server, error = %server_text(&e.to_string()), "resuming the stream failed");
                break;
            }
        };
        match pump(shared, &mut response, &mut parser, Some(id)).await {
            Pumped::Answered => return settle(shared, &mut response, &mut parser).await,
            Pumped::Closed => return,
            Pumped::Ended { retry: again, .. } => retry = again.or(retry),
        }
    }
    shared
        .emit(TransportEvent::Interrupted {
            ids: vec![id],
            error: shared.connection_error("the response stream broke and could not be resumed"),
            socket: false,
        })
        .await;
}
