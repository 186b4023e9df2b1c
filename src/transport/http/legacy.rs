//! The HTTP+SSE transport of protocol revision 2024-11-05: a GET opens an SSE stream whose
//! first event, `endpoint`, names the URL every message is POSTed to; everything the server
//! sends — responses, its requests, notifications — comes as `message` events on that stream.
//!
//! Its own room because only the stream is new: the POSTs go through the send loop and are
//! read by `answer` as Streamable HTTP's are (with the flag that says every 2xx is an
//! acknowledgement), with the same headers, OAuth tokens and refusals. What is decided here:
//!
//! - the endpoint is resolved against the SSE URL and must be of the same origin (scheme, host,
//!   port): an endpoint elsewhere would get our headers and tokens, so it is refused and the
//!   connection is over. Only the first `endpoint` event counts;
//! - messages wait (in the actor's channel) until the endpoint is known: the send loop starts
//!   then;
//! - the stream ending, or failing, is the connection lost: 2024-11-05 has no resumption, and
//!   the server forgets the session with its stream. The actor's rules settle the calls in
//!   flight (re-sent, or `outcome_unknown`) and reconnect with backoff;
//! - the GET answered with anything but a readable SSE stream (a 404, HTML, a redirect — never
//!   followed) is a failed attempt that says what the URL answered.
//!
//! Events are bounded by `max_message_bytes` (the parser drops a larger one whole, counted),
//! and the stream is read only while the actor keeps up (see [`Shared::emit`]).

use std::rc::Rc;

use awc::error::SendRequestError;
use awc::http::StatusCode;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::answer::{error_detail, redirect};
use super::stream::{deliver, is_readable_sse, media_type};
use super::{authorize, request, send, Response, Shared};
use crate::config::redact_url;
use crate::error::Error;
use crate::protocol::sse::{SseItem, SseParser};
use crate::protocol::text::server_text;
use crate::transport::{Outgoing, TransportEvent};

/// Opens the SSE stream, waits for its endpoint, starts the send loop, and reads the stream
/// until it ends; then the connection is over.
pub(super) async fn run(shared: Rc<Shared>, outgoing: mpsc::UnboundedReceiver<Outgoing>) {
    let Some(mut response) = open(&shared).await else {
        return;
    };
    let why = read(&shared, &mut response, outgoing).await;
    if let Some(why) = why {
        shared.emit(TransportEvent::Closed(why)).await;
    }
}

/// GETs the SSE stream (once more after a refusal the OAuth provider can help with). `None`
/// if there is none: the reason has been emitted.
async fn open(shared: &Rc<Shared>) -> Option<Response> {
    let mut rounds = authorize::Rounds::default();
    loop {
        let generation = match &shared.auth {
            Some(auth) => {
                tokio::select! {
                    _ = auth.fresh() => {}
                    _ = shared.closed() => return None,
                }
                auth.generation()
            }
            None => 0,
        };
        let request = match request::get(shared, None) {
            Ok(request) => request,
            Err(error) => {
                shared.emit(TransportEvent::Closed(error)).await;
                return None;
            }
        };
        let response = tokio::select! {
            response = request.send() => response,
            _ = shared.closed() => return None,
        };
        let mut response = match response {
            Ok(r) if matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
                let status = r.status().as_u16();
                match authorize::on_refusal(shared, r, None, generation, &mut rounds).await {
                    authorize::Next::Answer(r) => r,
                    authorize::Next::Resend => continue,
                    authorize::Next::Done => {
                        let error = Error::unauthorized(
                            &shared.server,
                            status,
                            "the SSE stream was refused",
                        );
                        shared.emit(TransportEvent::Closed(error)).await;
                        return None;
                    }
                }
            }
            Ok(r) => r,
            Err(e) => {
                let why = match e {
                    SendRequestError::Connect(e) => {
                        format!("cannot connect to {}: {e}", shared.shown_url)
                    }
                    e => format!("the GET of the SSE stream failed: {e}"),
                };
                let error = shared.connection_error(why);
                shared.emit(TransportEvent::Closed(error)).await;
                return None;
            }
        };
        if is_readable_sse(&response) {
            return Some(response);
        }
        // The URL answered, but serves no SSE stream of ours.
        shared.not_sse.set(true);
        let status = response.status();
        let error = if matches!(status.as_u16(), 401 | 403) {
            let detail = error_detail(&mut response).await;
            Error::unauthorized(&shared.server, status.as_u16(), detail)
        } else {
            let detail = match redirect(&response) {
                Some(detail) => detail,
                None if status.is_success() => format!(
                    "the answer is not an SSE stream (Content-Type: {})",
                    media_type(&response).unwrap_or("none")
                ),
                None => error_detail(&mut response).await,
            };
            shared.connection_error(format!(
                "the GET of the SSE stream at {} was answered HTTP {}: {}",
                shared.shown_url,
                status.as_u16(),
                detail.trim()
            ))
        };
        shared.emit(TransportEvent::Closed(error)).await;
        return None;
    }
}

/// Reads the stream: its endpoint first (then the send loop starts with `outgoing`), then the
/// server's messages. Returns why it ended, `None` if the connection was closed.
async fn read(
    shared: &Rc<Shared>,
    response: &mut Response,
    outgoing: mpsc::UnboundedReceiver<Outgoing>,
) -> Option<Error> {
    let mut parser = SseParser::new(shared.max_message_bytes);
    let mut outgoing = Some(outgoing);
    loop {
        let chunk = tokio::select! {
            chunk = response.next() => chunk,
            _ = shared.closed() => return None,
        };
        let chunk = match chunk {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => {
                let why = format!("the SSE stream failed: {e}");
                return Some(shared.connection_error(why));
            }
            None if outgoing.is_some() => {
                shared.not_sse.set(true);
                let why = "the SSE stream ended before its endpoint event";
                return Some(shared.connection_error(why));
            }
            None => return Some(shared.connection_error("the server ended the SSE stream")),
        };
        for item in parser.feed(&chunk) {
            match item {
                SseItem::Event { event, data, .. } => match event.as_deref() {
                    Some("endpoint") => {
                        let Some(rx) = outgoing.take() else {
                            tracing::debug!(server = %shared.server, "another endpoint event; the first one stands");
                            continue;
                        };
                        match resolve_endpoint(&shared.url, &data) {
                            Ok(endpoint) => {
                                tracing::debug!(server = %shared.server, endpoint = %redact_url(&endpoint), "the SSE stream named its endpoint");
                                *shared.endpoint.borrow_mut() = Some(endpoint);
                                actix::spawn(send::send_loop(shared.clone(), rx));
                            }
                            Err(why) => {
                                shared.not_sse.set(true);
                                return Some(shared.connection_error(why));
                            }
                        }
                    }
                    // `message` is the type of an event that names none.
                    None | Some("message") => {
                        deliver(shared, data.as_bytes(), None).await;
                    }
                    Some(other) => {
                        tracing::debug!(server = %shared.server, event = %server_text(other), "an SSE event of an unknown type; ignored");
                    }
                },
                // 2024-11-05 has no resumption: a lost stream is a lost session.
                SseItem::Retry(_) => {}
                SseItem::Oversized { bytes } => shared.skipped_oversized_event(bytes),
            }
        }
    }
}

/// The URL an `endpoint` event names, resolved against the SSE stream's `base`; an error (for
/// the connection's) if it is no URL, not HTTP(S), or of another origin than the stream.
pub(super) fn resolve_endpoint(base: &str, data: &str) -> Result<String, String> {
    let base = url::Url::parse(base).map_err(|e| format!("the SSE URL cannot be parsed: {e}"))?;
    let named = data.trim();
    let endpoint = base.join(named).map_err(|e| {
        format!(
            "the endpoint event names no URL ({e}): {}",
            server_text(&named.chars().take(200).collect::<String>())
        )
    })?;
    if !matches!(endpoint.scheme(), "http" | "https") || endpoint.origin() != base.origin() {
        return Err(format!(
            "the endpoint event names a URL of another origin ({}) than the SSE stream's ({}): refused, so that our headers and tokens go nowhere else",
            redact_url(&endpoint.origin().ascii_serialization()),
            redact_url(&base.origin().ascii_serialization()),
        ));
    }
    Ok(endpoint.into())
}

#[cfg(test)]
mod tests {
    use super::resolve_endpoint;

    #[test]
    fn an_endpoint_is_resolved_against_the_stream_and_kept_to_its_origin() {
        let base = "http://127.0.0.1:8080/mcp/sse?key=k";
        assert_eq!(
            resolve_endpoint(base, "/messages?sessionId=abc").as_deref(),
            Ok("http://127.0.0.1:8080/messages?sessionId=abc")
        );
        assert_eq!(
            resolve_endpoint(base, "messages?sessionId=abc\n").as_deref(),
            Ok("http://127.0.0.1:8080/mcp/messages?sessionId=abc")
        );
        assert_eq!(
            resolve_endpoint(base, "http://127.0.0.1:8080/m").as_deref(),
            Ok("http://127.0.0.1:8080/m")
        );
        for other in [
            "http://127.0.0.1:8081/messages",
            "https://127.0.0.1:8080/messages",
            "http://evil.example/messages",
            "//evil.example/messages",
            "file:///etc/passwd",
        ] {
            let refused = resolve_endpoint(base, other);
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.contains("another origin")),
                "{other}: {refused:?}"
            );
        }
    }
}
