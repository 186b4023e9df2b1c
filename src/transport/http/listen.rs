//! The GET stream for messages the server sends outside any request.
//!
//! Its own room because it is the only long-lived reader and has its own give-up rules: a GET
//! refused with a 5xx or a 429 is retried with backoff (never sooner than the server's
//! `Retry-After`); an answer that is no readable SSE stream — a 405, a 409, another 4xx, a 2xx
//! that is not `text/event-stream` (HTML, empty, compressed), a redirect, a head that cannot be
//! parsed — means the server has no GET stream for us, and we go on without it; a server that
//! keeps ending the stream empty is not reopened. Its loss after failures (the server
//! unreachable, 5xx to the end) is how an idle connection notices that the server went away, or
//! forgot the session.

use std::rc::Rc;

use awc::error::SendRequestError;
use awc::http::StatusCode;

use super::answer::{encoded, error_detail, session_gone, session_lost};
use super::overload::is_overloaded;
use super::stream::{is_readable_sse, media_type, pause, pump, Pumped, MAX_RESUMES};
use super::{authorize, request, Shared};
use crate::protocol::sse::SseParser;
use crate::transport::TransportEvent;

/// A GET stream that ends this many times in a row without delivering anything is given up.
const MAX_EMPTY_STREAMS: u32 = 5;

/// The GET stream for messages the server sends outside any request. It ending for good (the
/// server went away, or forgot the session) is how an idle connection notices.
pub(super) async fn listen(shared: Rc<Shared>) {
    let mut parser = SseParser::new(shared.max_message_bytes);
    let mut retry = None;
    // Refused GETs in a row, and streams in a row that ended without delivering anything.
    let mut failures = 0u32;
    let mut empty = 0u32;
    // A GET refused for its token is re-sent once with a new one, like a POST (`authorize`).
    let mut rounds = authorize::Rounds::default();
    loop {
        // A stream re-opened after an hour idle must not go out with the token that expired
        // meanwhile: tokens are renewed ahead of expiry here as before every POST.
        let generation = match &shared.auth {
            Some(auth) => {
                tokio::select! {
                    _ = auth.fresh() => {}
                    _ = shared.closed() => return,
                }
                auth.generation()
            }
            None => 0,
        };
        let request = match request::get(&shared, parser.last_event_id()) {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(server = %shared.server, error = %e, "the GET stream is not opened");
                return;
            }
        };
        let response = tokio::select! {
            response = request.send() => response,
            _ = shared.closed() => return,
        };
        let response = match response {
            Ok(r) if matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
                match authorize::on_refusal(&shared, r, None, generation, &mut rounds).await {
                    authorize::Next::Answer(r) => Ok(r),
                    authorize::Next::Resend => continue,
                    authorize::Next::Done => return,
                }
            }
            other => other,
        };
        let mut response = match response {
            Ok(r) if is_readable_sse(&r) => {
                // Accepted: a later refusal (the next token's expiry) gets its re-send too.
                rounds = authorize::Rounds::default();
                r
            }
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!(server = %shared.server, "the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::CONFLICT => {
                tracing::warn!(server = %shared.server, "the server says a GET stream is already open for this session; not opening another");
                return;
            }
            Ok(r) if r.status().is_success() || r.status().is_redirection() => {
                // A 200 with HTML, an empty 2xx, a compressed stream, a redirect (never
                // followed): no GET stream we can use, which is what a 405 says. The connection
                // is fine; it must not be torn down for it.
                tracing::warn!(
                    server = %shared.server,
                    status = %r.status(),
                    content_type = ?media_type(&r),
                    content_encoding = ?encoded(&r),
                    "the GET stream was not answered with an SSE stream we can read; going on without it",
                );
                return;
            }
            Ok(mut r) => {
                let status = r.status();
                let retry_after = shared.retry_after(&r);
                let detail = error_detail(&mut r).await;
                let had_session = shared.session.borrow().is_some();
                if session_gone(had_session, status, &detail) {
                    shared
                        .emit(TransportEvent::Closed(session_lost(
                            &shared, status, &detail,
                        )))
                        .await;
                    return;
                }
                tracing::warn!(server = %shared.server, status = %status, retry_after = ?retry_after, "the GET stream was refused");
                if status.is_client_error() && !is_overloaded(status) {
                    return;
                }
                failures += 1;
                // Never sooner than the server's `Retry-After` (429/503), itself capped.
                let delay = shared
                    .resume_backoff
                    .base_delay(failures)
                    .max(retry_after.unwrap_or_default());
                if failures > MAX_RESUMES || !pause(&shared, delay).await {
                    if status == StatusCode::TOO_MANY_REQUESTS {
                        // Rate-limited, not gone: a new session would only add requests.
                        tracing::warn!(server = %shared.server, "the server keeps refusing the GET stream as too many requests; going on without it");
                        return;
                    }
                    shared
                        .emit(TransportEvent::Closed(shared.connection_error(format!(
                            "the GET stream failed: HTTP {status}"
                        ))))
                        .await;
                    return;
                }
                continue;
            }
            Err(SendRequestError::Response(e)) => {
                // The answer's head could not be parsed (oversized or malformed): it will not
                // parse next time either. The POSTs tell whether the server is usable.
                tracing::warn!(server = %shared.server, error = %e, "the answer to the GET stream could not be read; going on without it");
                return;
            }
            Err(e @ SendRequestError::Connect(_)) => {
                shared
                    .emit(TransportEvent::Closed(
                        shared.connection_error(format!("the GET stream failed: {e}")),
                    ))
                    .await;
                return;
            }
            Err(e) => {
                // One exchange failed (a reset socket): try again like after a 5xx.
                failures += 1;
                if failures > MAX_RESUMES
                    || !pause(&shared, shared.resume_backoff.base_delay(failures)).await
                {
                    shared
                        .emit(TransportEvent::Closed(
                            shared.connection_error(format!("the GET stream failed: {e}")),
                        ))
                        .await;
                    return;
                }
                continue;
            }
        };
        failures = 0;
        match pump(&shared, &mut response, &mut parser, None).await {
            Pumped::Closed => return,
            Pumped::Answered => {}
            Pumped::Ended {
                retry: again,
                events,
            } => {
                retry = again.or(retry);
                empty = if events == 0 { empty + 1 } else { 0 };
            }
        }
        if empty >= MAX_EMPTY_STREAMS {
            tracing::warn!(server = %shared.server, "the server keeps ending the GET stream without sending anything; not reopening it");
            return;
        }
        // Streams that deliver nothing back off like failures, so that a server that closes
        // them at once cannot make us spin.
        let delay = retry
            .unwrap_or_else(|| shared.resume_backoff.initial())
            .max(shared.resume_backoff.base_delay(empty));
        if !pause(&shared, delay).await {
            return;
        }
    }
}
