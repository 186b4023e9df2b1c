//! The outgoing side: one POST per message the actor queues, and what it means when the
//! exchange itself fails (the server unreachable, a reset socket) before there is an answer.
//!
//! Its own room because ordering and cancellation live here: notifications and answers go one
//! after the other (each waited for a bounded time), requests concurrently, each in a task an
//! abandoned call aborts. What an
//! answer means is [`super::answer`]'s business.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use awc::error::{ConnectError, SendRequestError};
use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::{answer, authorize, request, Shared};
use crate::error::Error;
use crate::transport::{Outgoing, TransportEvent};

/// What a message brings along: for a request of the 2026-07-28 revision, its headers (which
/// may be none); for the session era's, nothing (the session holds its headers).
type Modern = Option<Vec<(String, String)>>;

/// The id and method of one of our outgoing messages.
#[derive(Deserialize, Default)]
struct Header {
    id: Option<u64>,
    method: Option<String>,
}

/// POSTs messages as the actor queues them: notifications and answers one after the other (so
/// that `notifications/initialized` arrives before the next request), requests concurrently,
/// each in a task that an abandoned call aborts. What waits is taken off the channel at once,
/// so that its length — the backlog the readers look at, past
/// [`MAX_BACKLOG`](crate::transport::backlog::MAX_BACKLOG) lines — is known.
pub(super) async fn send_loop(shared: Rc<Shared>, mut rx: mpsc::UnboundedReceiver<Outgoing>) {
    let requests: Rc<RefCell<HashMap<u64, AbortHandle>>> = Rc::default();
    // Each line with what the 2026-07-28 revision brings along, if it is of that revision.
    let mut queue: VecDeque<(Vec<u8>, Modern)> = VecDeque::new();
    // The serial POST under way, if any.
    let mut serial: Option<LocalBoxFuture<'static, ()>> = None;
    loop {
        // Start what may start, in order: requests at once, the next serial POST once the last
        // one is done, so that nothing overtakes a notification.
        while serial.is_none() {
            let Some((line, modern)) = queue.pop_front() else {
                break;
            };
            serial = start(&shared, &requests, line, modern);
        }
        shared
            .backlog
            .set(queue.len() + usize::from(serial.is_some()));
        tokio::select! {
            biased;
            outgoing = rx.recv() => {
                let Some(outgoing) = outgoing else { return };
                if shared.closed.get() {
                    return;
                }
                match outgoing {
                    Outgoing::Line(line) => queue.push_back((line, None)),
                    Outgoing::Modern { line, headers } => queue.push_back((line, Some(headers))),
                    Outgoing::Abandon(id) => {
                        if let Some(request) = requests.borrow_mut().remove(&id) {
                            request.abort();
                        }
                    }
                }
            }
            () = async {
                match serial.as_mut() {
                    Some(serial) => serial.await,
                    None => std::future::pending().await,
                }
            }, if serial.is_some() => {
                serial = None;
            }
        }
    }
}

/// Sends one line: a request in a task of its own (`None`), anything else as the serial POST
/// to wait for.
fn start(
    shared: &Rc<Shared>,
    requests: &Rc<RefCell<HashMap<u64, AbortHandle>>>,
    mut line: Vec<u8>,
    modern: Modern,
) -> Option<LocalBoxFuture<'static, ()>> {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let header: Header = serde_json::from_slice(&line).unwrap_or_default();
    // Only requests have ids of ours; the id of an answer to a server request is the server's
    // and may collide with one of ours.
    let id = header.id.filter(|_| header.method.is_some());
    let post = post(
        shared.clone(),
        Bytes::from(line),
        id,
        header.method.clone(),
        modern,
    );
    if let Some(id) = id {
        let registry = requests.clone();
        let task = actix::spawn(async move {
            post.await;
            registry.borrow_mut().remove(&id);
        });
        requests.borrow_mut().insert(id, task.abort_handle());
        return None;
    }
    // In order, but a server that never answers a notification must not hold up everything
    // after it: its answer is awaited for `ping_timeout`, then left to finish on its own (it
    // ends with the connection at the latest).
    let shared = shared.clone();
    Some(Box::pin(async move {
        let mut post = actix::spawn(post);
        let wait = shared.notification_wait;
        if tokio::time::timeout(wait, &mut post).await.is_err() {
            tracing::warn!(server = %shared.server, method = header.method.as_deref().unwrap_or(""), waited_ms = wait.as_millis() as u64, "the server has not answered a notification; sending on without waiting for it");
        }
    }))
}

async fn post(
    shared: Rc<Shared>,
    body: Bytes,
    id: Option<u64>,
    method: Option<String>,
    headers: Modern,
) {
    // Requests of the 2026-07-28 revision come with their own headers, and no session.
    let modern = headers.is_some();
    // Re-sends after an authorization refusal (`authorize`): bounded there.
    let mut rounds = authorize::Rounds::default();
    loop {
        let generation = match &shared.auth {
            Some(auth) => {
                auth.fresh().await;
                auth.generation()
            }
            None => 0,
        };
        let (request, had_session) = match request::post(
            &shared,
            method.as_deref(),
            headers.as_deref(),
        ) {
            Ok(built) => built,
            // The token cannot be presented: the request does not go out without it.
            Err(error) => {
                match id {
                    Some(id) => shared.emit(TransportEvent::CallFailed { id, error }).await,
                    None => {
                        tracing::warn!(server = %shared.server, error = %error, "a notification was not sent")
                    }
                }
                return;
            }
        };
        let sent = tokio::select! {
            sent = request.send_body(body.clone()) => sent,
            _ = shared.closed() => return,
        };
        let response = match sent {
            Ok(response) => response,
            // awc reports a socket that closed after the request was written, before the answer's
            // head came, as `Connect(Disconnected)`: the server may well have run it (killed
            // mid-call), so it is an interrupted exchange, not one that never got there.
            Err(SendRequestError::Connect(e)) if !matches!(e, ConnectError::Disconnected) => {
                // The server cannot be reached: the connection is over, and this request never
                // got there, so it can be sent again whatever its retry policy.
                if let Some(id) = id {
                    shared.emit(TransportEvent::Rejected(vec![id])).await;
                }
                shared
                    .emit(TransportEvent::Closed(shared.connection_error(format!(
                        "cannot connect to {}: {e}",
                        shared.shown_url
                    ))))
                    .await;
                return;
            }
            // Writing the request failed: the server closed the connection before it had read
            // it whole (a server refusing headers over its limit answers 431 and closes while
            // we still write; so does a stale pooled connection). A request the server never
            // had whole did not run: it is written once more, then refused (see
            // `CallTable::cut_off`). A failure after the last byte was written comes as
            // another error below.
            Err(SendRequestError::Send(e)) => {
                let why = format!(
                    "the server closed the connection before it had read the whole request ({e}); {}",
                    request::size_of(&shared, headers.as_deref(), body.len())
                );
                match id {
                    Some(id) => {
                        let method = method.as_deref().unwrap_or("");
                        let error = Error::refused(&shared.server, method, None, why);
                        shared.emit(TransportEvent::Unwritten { id, error }).await
                    }
                    None => {
                        tracing::warn!(server = %shared.server, error = %why, "a notification was not sent")
                    }
                }
                return;
            }
            Err(e) => {
                // This one exchange failed (a reset socket, a garbled answer): the session may
                // well be fine. Its call follows the retry rules.
                // Its socket closed before the answer's head, or was reset while it was read.
                let socket = match &e {
                    SendRequestError::Connect(ConnectError::Disconnected) => true,
                    SendRequestError::Response(parse) => std::error::Error::source(parse)
                        .is_some_and(|source| source.is::<std::io::Error>()),
                    _ => false,
                };
                let error = shared.connection_error(format!("POST failed: {e}"));
                match id {
                    Some(id) => {
                        shared
                            .emit(TransportEvent::Interrupted {
                                ids: vec![id],
                                error,
                                socket,
                            })
                            .await
                    }
                    None => {
                        tracing::warn!(server = %shared.server, error = %error, "a notification could not be sent")
                    }
                }
                return;
            }
        };
        let response =
            match authorize::on_refusal(&shared, response, id, generation, &mut rounds).await {
                authorize::Next::Answer(response) => response,
                authorize::Next::Resend => continue,
                authorize::Next::Done => return,
            };
        answer::on_response(
            &shared,
            response,
            answer::Asked {
                id,
                method: method.as_deref().unwrap_or(""),
                had_session,
                modern,
                headers: headers.as_deref(),
                body_len: body.len(),
            },
        )
        .await;
        return;
    }
}
