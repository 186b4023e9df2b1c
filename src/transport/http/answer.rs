//! What an answer to a POST means, by status and content type: the one place where a status
//! becomes a transport event.
//!
//! 2xx: nothing (202, or no call waits), the JSON response, or an SSE stream to follow. Any
//! other status: the session is gone (a 404, or a 400 that names the session — the request was
//! not processed and the connection is over), a refusal of this call alone (401/403, 4xx), or
//! a server failure whose call follows the retry rules (5xx). The GET stream reads its own
//! refusals with the same [`error_detail`] and [`session_gone`].

use std::time::Duration;

use awc::http::StatusCode;

use super::stream::{self, deliver, is_sse};
use super::{Response, Shared};
use crate::error::Error;
use crate::transport::TransportEvent;

/// How much of an error body we read to explain an error.
const ERROR_BODY_LIMIT: usize = 8 * 1024;

pub(super) async fn on_response(
    shared: &Shared,
    response: Response,
    id: Option<u64>,
    method: &str,
    had_session: bool,
) {
    let status = response.status();
    if let Err(error) = shared.capture_session(&response) {
        if let Some(id) = id {
            shared.emit(TransportEvent::CallFailed { id, error });
        }
        return;
    }
    if !status.is_success() {
        refused(shared, response, id, method, had_session).await;
        return;
    }
    let Some(id) = id else { return }; // 202 for a notification or a response of ours.
    if status == StatusCode::ACCEPTED {
        return;
    }
    if is_sse(&response) {
        stream::follow_answer(shared, response, id).await;
    } else {
        json_answer(shared, response, id, method).await;
    }
}

/// A JSON answer: it must hold the response to request `id`.
async fn json_answer(shared: &Shared, mut response: Response, id: u64, method: &str) {
    let body = tokio::select! {
        body = response.body().limit(shared.max_message_bytes) => body,
        _ = shared.closed() => return,
    };
    match body {
        Ok(body) => {
            if !deliver(shared, &body, Some(id)) {
                // Nothing else will answer this call: say so now, not at its deadline.
                let preview: String = String::from_utf8_lossy(&body).chars().take(120).collect();
                shared.emit(TransportEvent::CallFailed {
                    id,
                    error: Error::invalid_response(
                        &shared.server,
                        method,
                        format!("the JSON answer holds no response to this request: {preview}"),
                    ),
                });
            }
        }
        Err(e) => shared.emit(TransportEvent::CallFailed {
            id,
            error: Error::invalid_response(
                &shared.server,
                method,
                format!("reading the response body failed: {e}"),
            ),
        }),
    };
}

/// An answer that is not 2xx.
async fn refused(
    shared: &Shared,
    mut response: Response,
    id: Option<u64>,
    method: &str,
    had_session: bool,
) {
    let status = response.status();
    let detail = error_detail(&mut response).await;
    if session_gone(had_session, status, &detail) {
        if let Some(id) = id {
            shared.emit(TransportEvent::Rejected(vec![id]));
        }
        shared.emit(TransportEvent::Closed(session_lost(
            shared, status, &detail,
        )));
        return;
    }
    let error = match status.as_u16() {
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
                Some(id) => shared.emit(TransportEvent::Interrupted {
                    ids: vec![id],
                    error,
                }),
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
        _ => Error::invalid_response(
            &shared.server,
            method,
            format!("HTTP {}: {detail}", status.as_u16()),
        ),
    };
    match id {
        Some(id) => shared.emit(TransportEvent::CallFailed { id, error }),
        None => {
            tracing::warn!(server = %shared.server, method, error = %error, "a notification was refused")
        }
    }
}

/// A short explanation of an error answer: `WWW-Authenticate` or the start of the body.
pub(super) async fn error_detail(response: &mut Response) -> String {
    if let Some(auth) = response.headers().get("www-authenticate") {
        return String::from_utf8_lossy(auth.as_bytes()).into_owned();
    }
    let body = tokio::time::timeout(
        Duration::from_secs(2),
        response.body().limit(ERROR_BODY_LIMIT),
    )
    .await;
    match body {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).chars().take(300).collect(),
        _ => String::new(),
    }
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
