//! What an answer to a POST means, by status and content type: the one place where a status
//! becomes a transport event.
//!
//! 2xx: nothing (202, or no call waits), the JSON response, or an SSE stream to follow; a
//! compressed body (we ask for none) is refused rather than misread. Any other status: the
//! session is gone (a 404, or a 400 that names the session — the request was not processed and
//! the connection is over), the server is overloaded (429/503: `overloaded`, with its
//! `Retry-After`, the request unprocessed), a refusal of this call alone (401/403, a redirect —
//! never followed, so our credentials never reach another origin —, any other 4xx: `refused`,
//! it did not run; 413 and 431 say what the request weighed), or a server
//! failure whose call follows the retry rules (other 5xx). The GET stream reads its own refusals
//! with the same [`error_detail`] and [`session_gone`]. Over the legacy HTTP+SSE transport every
//! 2xx is an acknowledgement (the answer comes on the SSE stream), and every POST carries the
//! session (the endpoint names it); an `initialize` of Streamable HTTP refused with 400, 404 or
//! 405 is noted for the opening, which may try the legacy transport next.

use std::time::Duration;

use awc::http::StatusCode;

use super::overload::{is_overloaded, overloaded};
use super::stream::{self, deliver, is_sse};
use super::{request, Response, Shared};
use crate::config::redact_url;
use crate::error::Error;
use crate::protocol::jsonrpc::{parse_frame, Id, Inbound};
use crate::transport::TransportEvent;

/// How much of an error body we read to explain an error.
const ERROR_BODY_LIMIT: usize = 8 * 1024;

/// What a POST asked, for reading its answer.
#[derive(Clone, Copy)]
pub(super) struct Asked<'a> {
    /// Our request id; `None` for a notification or an answer of ours.
    pub id: Option<u64>,
    pub method: &'a str,
    /// Whether it carried our session id.
    pub had_session: bool,
    /// A request of the 2026-07-28 revision: no session to capture, errors in the body
    /// whatever the status, no resumption.
    pub modern: bool,
    /// Its own headers (2026-07-28), and its body's size: what a refusal as too large is
    /// explained with.
    pub headers: Option<&'a [(String, String)]>,
    pub body_len: usize,
}

pub(super) async fn on_response(shared: &Shared, mut response: Response, asked: Asked<'_>) {
    let Asked {
        id, method, modern, ..
    } = asked;
    let status = response.status();
    if shared.legacy_sse && status.is_success() {
        // Accepted (202, or 200 "Accepted"): the answer comes on the SSE stream.
        discard(&mut response).await;
        return;
    }
    if !modern && !shared.legacy_sse {
        if let Err(error) = shared.capture_session(&response) {
            if let Some(id) = id {
                shared.emit(TransportEvent::CallFailed { id, error }).await;
            }
            return;
        }
    }
    if !status.is_success() {
        refused(shared, response, asked).await;
        return;
    }
    // 202 for a notification or a response of ours; whatever else a server sends there (an SSE
    // stream the spec does not allow) is discarded.
    let Some(id) = id else {
        discard(&mut response).await;
        return;
    };
    if status == StatusCode::ACCEPTED {
        discard(&mut response).await;
        if modern {
            // The 2026-07-28 revision answers every request on its own POST; 202 is for
            // notifications only.
            let error = Error::invalid_response(
                &shared.server,
                method,
                "the server answered 202 Accepted to a request, as if it were a notification",
            );
            shared.emit(TransportEvent::CallFailed { id, error }).await;
        }
        // In the session era its response may still come on the GET stream; if not, its call
        // times out.
        return;
    }
    if let Some(encoding) = encoded(&response) {
        let error = Error::invalid_response(
            &shared.server,
            method,
            format!("the answer is compressed (Content-Encoding: {encoding}), which we did not ask for and cannot read"),
        );
        shared.emit(TransportEvent::CallFailed { id, error }).await;
        return;
    }
    if is_sse(&response) {
        stream::follow_answer(shared, response, id, modern).await;
    } else {
        json_answer(shared, response, id, method).await;
    }
}

/// Reads a body nobody needs to its end, bounded ([`ERROR_BODY_LIMIT`], [`stream::SETTLE`]):
/// over HTTP/1.1 a body left unread closes the connection instead of giving it back to the
/// pool for the next request.
async fn discard(response: &mut Response) {
    let _ = tokio::time::timeout(stream::SETTLE, response.body().limit(ERROR_BODY_LIMIT)).await;
}

/// A JSON answer: it must hold the response to request `id`.
async fn json_answer(shared: &Shared, mut response: Response, id: u64, method: &str) {
    let body = tokio::select! {
        body = response.body().limit(shared.max_message_bytes) => body,
        _ = shared.closed() => return,
    };
    match body {
        Ok(body) => {
            if !deliver(shared, &body, Some(id)).await {
                // Nothing else will answer this call: say so now, not at its deadline.
                let preview: String = String::from_utf8_lossy(&body).chars().take(120).collect();
                shared
                    .emit(TransportEvent::CallFailed {
                        id,
                        error: Error::invalid_response(
                            &shared.server,
                            method,
                            format!("the JSON answer holds no response to this request: {preview}"),
                        ),
                    })
                    .await;
            }
        }
        Err(e) => {
            shared
                .emit(TransportEvent::CallFailed {
                    id,
                    error: Error::invalid_response(
                        &shared.server,
                        method,
                        format!("reading the response body failed: {e}"),
                    ),
                })
                .await
        }
    };
}

/// An answer that is not 2xx.
async fn refused(shared: &Shared, mut response: Response, asked: Asked<'_>) {
    let Asked {
        id,
        method,
        had_session,
        modern,
        ..
    } = asked;
    let status = response.status();
    let retry_after = shared.retry_after(&response);
    let authorization = matches!(status.as_u16(), 401 | 403);
    let (detail, body) = match redirect(&response) {
        Some(detail) => (detail, None),
        None if !is_overloaded(status) && !authorization => {
            let body = error_body(&mut response).await;
            let detail = String::from_utf8_lossy(&body).chars().take(300).collect();
            (detail, Some(body))
        }
        None => (error_detail(&mut response).await, None),
    };
    if !modern && session_gone(had_session, status, &detail) {
        if let Some(id) = id {
            shared.emit(TransportEvent::Rejected(vec![id])).await;
        }
        shared
            .emit(TransportEvent::Closed(session_lost(
                shared, status, &detail,
            )))
            .await;
        return;
    }
    // A JSON-RPC error in the body is the server's answer to this request: the 2026-07-28
    // revision answers its errors (-32020, -32022, ...) that way, and a modern-only server
    // refuses a legacy `initialize` with -32022 so.
    if let (Some(id), Some(body)) = (id, &body) {
        if rpc_error_answer(shared, body, id).await {
            return;
        }
    }
    if method == "initialize" && !shared.legacy_sse && matches!(status.as_u16(), 400 | 404 | 405) {
        // No JSON-RPC answer: perhaps a server of the legacy HTTP+SSE transport, which the
        // opening may try next.
        shared.initialize_refused.set(Some(status.as_u16()));
    }
    let error = match status.as_u16() {
        // Refused unprocessed: the caller may try again, after the server's `Retry-After`; a
        // connection attempt (initialize) waits at least that long before the next one.
        _ if is_overloaded(status) => overloaded(shared, status, retry_after, &detail),
        401 | 403 => Error::unauthorized(&shared.server, status.as_u16(), detail),
        500..=599 => {
            // The server failed this request; it may have done part of it. Only this call is
            // affected: it follows the retry rules. Whether the server is gone altogether, the
            // GET stream or the next request will tell.
            let error = shared.connection_error(format!(
                "HTTP {} from the server: {detail}",
                status.as_u16()
            ));
            match id {
                Some(id) => {
                    shared
                        .emit(TransportEvent::Interrupted {
                            ids: vec![id],
                            error,
                            socket: false,
                        })
                        .await
                }
                None => {
                    tracing::warn!(server = %shared.server, method, error = %error, "a notification was refused")
                }
            }
            return;
        }
        _ if method == "initialize" => shared.connection_error(format!(
            "initialize answered HTTP {}: {detail}",
            status.as_u16()
        )),
        // Refused before it ran (400, 405, 413, 431, ...): the call did not happen.
        400..=499 => {
            let mut reason = format!("HTTP {status}");
            // What the request weighed first: the server's text after it may be long.
            if matches!(status.as_u16(), 413 | 431) {
                let size = request::size_of(shared, asked.headers, asked.body_len);
                reason.push_str(&format!(" ({size})"));
            }
            if !detail.trim().is_empty() {
                reason.push_str(&format!(": {}", detail.trim()));
            }
            Error::refused(&shared.server, method, Some(status.as_u16()), reason)
        }
        _ => Error::invalid_response(
            &shared.server,
            method,
            format!("HTTP {}: {detail}", status.as_u16()),
        ),
    };
    match id {
        Some(id) => shared.emit(TransportEvent::CallFailed { id, error }).await,
        None => {
            tracing::warn!(server = %shared.server, method, error = %error, "a notification was refused")
        }
    }
}

/// The start of an error answer's body (bounded in size and time).
async fn error_body(response: &mut Response) -> bytes::Bytes {
    let body = tokio::time::timeout(
        Duration::from_secs(2),
        response.body().limit(ERROR_BODY_LIMIT),
    )
    .await;
    match body {
        Ok(Ok(bytes)) => bytes,
        _ => bytes::Bytes::new(),
    }
}

/// Delivers an error answer's body as the answer to request `id` if it is a JSON-RPC error
/// response (a server that could not tell which request failed says `"id": null`; this answer
/// can only be for the one we sent). False if it is something else.
async fn rpc_error_answer(shared: &Shared, body: &[u8], id: u64) -> bool {
    let Ok(messages) = parse_frame(body) else {
        return false;
    };
    let error = messages.into_iter().find_map(|m| match m {
        Inbound::Error { id: got, error }
            if got.is_none() || got.as_ref().and_then(Id::as_ours) == Some(id) =>
        {
            Some(error)
        }
        _ => None,
    });
    let Some(error) = error else { return false };
    shared
        .emit(TransportEvent::Message(Inbound::Error {
            id: Some(Id::Number(id as i64)),
            error,
        }))
        .await;
    true
}

/// A short explanation of an error answer: `WWW-Authenticate` or the start of the body.
pub(super) async fn error_detail(response: &mut Response) -> String {
    if let Some(auth) = response.headers().get("www-authenticate") {
        return String::from_utf8_lossy(auth.as_bytes()).into_owned();
    }
    let body = error_body(response).await;
    String::from_utf8_lossy(&body).chars().take(300).collect()
}

/// What a redirect (3xx) says, if the answer is one: we never follow redirects, so the
/// configured headers (credentials) can never reach another origin.
pub(super) fn redirect(response: &Response) -> Option<String> {
    if !response.status().is_redirection() {
        return None;
    }
    let location = response
        .headers()
        .get("location")
        .map(|v| redact_url(&String::from_utf8_lossy(v.as_bytes())));
    Some(match location {
        Some(location) => format!("redirects are not followed (Location: {location})"),
        None => "redirects are not followed".to_owned(),
    })
}

/// The `Content-Encoding` of a body we cannot read: we ask for none (`Accept-Encoding:
/// identity`) and decompress nothing.
pub(super) fn encoded<T>(response: &awc::ClientResponse<T>) -> Option<String> {
    let value = response.headers().get("content-encoding")?;
    let value = String::from_utf8_lossy(value.as_bytes());
    let value = value.trim();
    (!value.is_empty() && !value.eq_ignore_ascii_case("identity")).then(|| value.to_owned())
}

/// Whether an error answer says our session is gone: 404 per the spec, or a 400 that names
/// the session (the TypeScript reference server). Without a session, neither means that: a
/// stateless server may simply have no GET endpoint.
pub(super) fn session_gone(had_session: bool, status: StatusCode, detail: &str) -> bool {
    had_session
        && (status == StatusCode::NOT_FOUND
            || (status == StatusCode::BAD_REQUEST
                && detail.to_ascii_lowercase().contains("session")))
}

/// Why the connection is over when [`session_gone`] says so.
pub(super) fn session_lost(shared: &Shared, status: StatusCode, detail: &str) -> Error {
    shared.connection_error(format!(
        "the server no longer knows our session (HTTP {}): {detail}",
        status.as_u16()
    ))
}
