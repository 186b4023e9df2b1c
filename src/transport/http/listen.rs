//! The GET stream for messages the server sends outside any request.
//!
//! Its own room because it is the only long-lived reader and has its own give-up rules: a
//! refused GET is retried with backoff (a 4xx, a 405 or a 409 ends it quietly), and a server
//! that keeps ending the stream empty is not reopened. Its loss after failures is how an idle
//! connection notices that the server went away, or forgot the session.

use std::rc::Rc;

use awc::http::StatusCode;

use super::answer::{error_detail, session_gone, session_lost};
use super::stream::{is_sse, pause, pump, Pumped, MAX_RESUMES};
use super::{request, Shared};
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
    loop {
        let response = tokio::select! {
            response = request::get(&shared, parser.last_event_id()).send() => response,
            _ = shared.closed() => return,
        };
        let mut response = match response {
            Ok(r) if r.status().is_success() && is_sse(&r) => r,
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!(server = %shared.server, "the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::CONFLICT => {
                tracing::warn!(server = %shared.server, "the server says a GET stream is already open for this session; not opening another");
                return;
            }
            Ok(mut r) => {
                let status = r.status();
                let detail = error_detail(&mut r).await;
                let had_session = shared.session.borrow().is_some();
                if session_gone(had_session, status, &detail) {
                    shared.emit(TransportEvent::Closed(session_lost(
                        &shared, status, &detail,
                    )));
                    return;
                }
                tracing::warn!(server = %shared.server, status = %status, "the GET stream was refused");
                if status.is_client_error() {
                    return;
                }
                failures += 1;
                if failures > MAX_RESUMES
                    || !pause(&shared, shared.resume_backoff.base_delay(failures)).await
                {
                    shared.emit(TransportEvent::Closed(
                        shared.connection_error(format!("the GET stream failed: HTTP {status}")),
                    ));
                    return;
                }
                continue;
            }
            Err(e) => {
                shared.emit(TransportEvent::Closed(
                    shared.connection_error(format!("the GET stream failed: {e}")),
                ));
                return;
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
