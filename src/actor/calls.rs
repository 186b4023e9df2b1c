//! One call in flight: what the actor keeps for it, and the future its caller awaits. The
//! table of all of them, and every way a call ends, is in [`call_table`](super::call_table).
//!
//! The deadline is kept on the caller's side: the future returned to the caller sleeps until
//! the deadline, then asks the actor to expire the call (so the actor can send
//! `notifications/cancelled` and check the connection) and waits a short slack for that answer.
//! If the actor is gone or stuck, the caller still gets its error on time. Exactly one answer
//! reaches the caller either way: the future returns once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::actor::messages::{Call, Progress};
use crate::error::Error;
use crate::policy::deadline::saturating_add;
use crate::policy::retry::{is_safe_by_nature, RetryPolicy};

/// How long the caller's future waits for the actor to answer an expired call before it answers
/// `Timeout` on its own.
const EXPIRE_SLACK: Duration = Duration::from_millis(100);

/// What the actor keeps for one call.
///
/// An entry answers its caller exactly once: through [`CallEntry::answer`], or, if it is
/// dropped unanswered (its actor panicked or was stopped without a `Shutdown`), from its `Drop`,
/// with what is known of the call: a written call that is not safe by nature may have run.
pub(crate) struct CallEntry {
    server: Arc<str>,
    pub method: String,
    /// Params as sent (with our progress token, if the caller asked for progress).
    pub params: Option<Value>,
    /// `None` once answered.
    reply: Option<oneshot::Sender<Result<Value, Error>>>,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Times written to a connection (at most 2: the first send and one re-send).
    pub sends: u32,
    /// The request id of its latest write. A call written again (re-sent after a lost
    /// connection, or a round of a multi-round-trip request) goes out under a new id, so that
    /// an answer can only ever match the one request it answers.
    pub wire_id: u64,
    /// Not written yet under `wire_id`.
    pub fresh: bool,
    /// Written on the current connection and not answered yet.
    pub sent: bool,
    /// The server asked for input (2026-07-28): neither written nor waiting while the
    /// application's handler answers, then sent again for the next round.
    pub held: bool,
    /// Rounds of input asked for so far.
    pub rounds: u32,
    /// For `tools/call`: the tool's name, to look up its annotations.
    pub tool: Option<String>,
    pub progress: Option<ProgressRoute>,
    /// When the actor took the call, for its duration in its span and the metrics.
    started: Instant,
    /// `mcp.call`, a child of the caller's span; closed when the entry goes.
    span: tracing::Span,
}

impl Drop for CallEntry {
    fn drop(&mut self) {
        if self.reply.is_some() {
            let error = self.orphaned();
            self.finished(&Err(error.clone()));
            if let Some(reply) = self.reply.take() {
                let _ = reply.send(Err(error));
            }
        }
    }
}

/// Where progress for a call goes, and how it moves the deadline.
pub(crate) struct ProgressRoute {
    pub recipient: Option<Recipient<Progress>>,
    /// `(deadline sender, latest allowed deadline)` when progress restarts the timeout.
    pub reset: Option<(watch::Sender<Instant>, Instant)>,
}

impl CallEntry {
    /// The entry for call `call` to `server` under request id `id`, and its caller's side.
    /// `now` starts the timeout (the call's own, or `default_timeout`).
    pub fn open(
        server: &Arc<str>,
        id: u64,
        call: Call,
        default_timeout: Duration,
        now: Instant,
    ) -> (CallEntry, Receipt) {
        let timeout = call.options.timeout.unwrap_or(default_timeout);
        let deadline = saturating_add(now, timeout);
        let mut params = call.params;
        let mut moved_deadline = None;
        let progress = if call.options.progress.is_some()
            || call.options.reset_timeout_on_progress.is_some()
        {
            // Our id doubles as the progress token: unique, and no second map to keep.
            let mut object = match params.take() {
                Some(Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("progressToken".into(), json!(id));
            }
            params = Some(Value::Object(object));
            let reset = call.options.reset_timeout_on_progress.map(|max_total| {
                let (tx, rx) = watch::channel(deadline);
                moved_deadline = Some(rx);
                (tx, saturating_add(now, max_total.max(timeout)))
            });
            Some(ProgressRoute {
                recipient: call.options.progress,
                reset,
            })
        } else {
            None
        };
        let tool = (call.method == "tools/call")
            .then(|| params.as_ref()?.get("name")?.as_str().map(str::to_owned))
            .flatten();
        let span = tracing::info_span!(
            parent: &call.options.parent,
            "mcp.call",
            server = %server,
            method = %call.method,
            tool = tool.as_deref(),
            request_id = id,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        let (reply, rx) = oneshot::channel();
        let entry = CallEntry {
            server: server.clone(),
            method: call.method.clone(),
            params,
            reply: Some(reply),
            timeout,
            retry: call.options.retry,
            sends: 0,
            wire_id: id,
            fresh: true,
            sent: false,
            held: false,
            rounds: 0,
            tool,
            progress,
            started: now,
            span,
        };
        let receipt = Receipt {
            id,
            rx,
            deadline,
            moved_deadline,
            server: call.server,
            method: call.method,
            timeout,
        };
        (entry, receipt)
    }

    /// Answers the caller. A caller that already gave up is not an error.
    pub fn answer(mut self, outcome: Result<Value, Error>) {
        self.finished(&outcome);
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(outcome);
        }
    }

    /// Counts the call's end in the metrics: every answer passes here once.
    fn finished(&self, outcome: &Result<Value, Error>) {
        let code = match outcome {
            Ok(_) => "ok",
            Err(e) => e.code(),
        };
        if !self.span.is_disabled() {
            let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.span.record("outcome", code);
            self.span.record("duration_ms", ms);
        }
        crate::telemetry::call_finished(&self.server, &self.method, code, self.started);
    }

    /// The answer of a call whose actor went away without answering it.
    fn orphaned(&self) -> Error {
        let server = self.server.to_string();
        let why = if std::thread::panicking() {
            "the server's actor crashed"
        } else {
            "the server's actor stopped"
        };
        if self.sends == 0 {
            // Never reached the server. A crashed actor is replaced: try again.
            return if std::thread::panicking() {
                Error::Unavailable {
                    server,
                    reason: format!("{why} before the call was sent"),
                    attempts: 0,
                    stderr_tail: Vec::new(),
                }
            } else {
                Error::Stopped { server }
            };
        }
        if is_safe_by_nature(&self.method) {
            Error::Unavailable {
                server,
                reason: format!("{why} after the call was sent; it is safe to make again"),
                attempts: 0,
                stderr_tail: Vec::new(),
            }
        } else {
            Error::OutcomeUnknown {
                server,
                method: self.method.clone(),
                reason: format!("{why} after the call was sent"),
            }
        }
    }

    /// Restarts the timeout after progress, within the maximum total time.
    pub fn on_progress(&self, server: &str, params: &Value, now: Instant) {
        let Some(route) = &self.progress else { return };
        if let Some((deadline, latest)) = &route.reset {
            let _ = deadline.send(saturating_add(now, self.timeout).min(*latest));
        }
        if let Some(recipient) = &route.recipient {
            let progress = params
                .get("progress")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            recipient.do_send(Progress {
                server: server.to_owned(),
                progress,
                total: params.get("total").and_then(Value::as_f64),
                message: params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
    }
}

/// Tells the actor a call's deadline passed. The actor answers the call (and sends
/// `notifications/cancelled` if it had been written).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Expire {
    pub id: u64,
}

/// The caller's side of one call, as the call table hands it out: the answer to come and the
/// deadline, not yet tied to the actor that expires the call.
pub(crate) struct Receipt {
    pub id: u64,
    pub rx: oneshot::Receiver<Result<Value, Error>>,
    pub deadline: Instant,
    /// Moves the deadline when progress restarts the timeout.
    pub moved_deadline: Option<watch::Receiver<Instant>>,
    pub server: String,
    pub method: String,
    pub timeout: Duration,
}

impl Receipt {
    /// The future the caller awaits; `expire` is told when the deadline passes.
    pub fn waiter(self, expire: Recipient<Expire>) -> Waiter {
        Waiter {
            receipt: self,
            expire,
        }
    }
}

/// The caller's side of one call.
pub(crate) struct Waiter {
    receipt: Receipt,
    expire: Recipient<Expire>,
}

impl Waiter {
    /// Waits for the answer, or for the deadline.
    pub async fn wait(self) -> Result<Value, Error> {
        let Waiter {
            receipt:
                Receipt {
                    id,
                    mut rx,
                    mut deadline,
                    moved_deadline,
                    server,
                    method,
                    timeout,
                },
            expire,
        } = self;
        loop {
            tokio::select! {
                answer = &mut rx => {
                    // Every entry answers, from its `Drop` at the latest; should one not, say
                    // no more than is known: the call may have been sent.
                    return answer.unwrap_or_else(|_| Err(lost_answer(server, method)));
                }
                _ = tokio::time::sleep_until(deadline.into()) => {
                    match moved_deadline.as_ref().map(|d| *d.borrow()) {
                        Some(later) if later > deadline => deadline = later,
                        _ => break,
                    }
                }
            }
        }
        expire.do_send(Expire { id });
        match tokio::time::timeout(EXPIRE_SLACK, rx).await {
            Ok(Ok(answer)) => answer,
            _ => Err(Error::Timeout {
                server,
                method,
                timeout,
            }),
        }
    }
}

/// The answer of a call whose entry vanished without a word: it may or may not have been sent.
fn lost_answer(server: String, method: String) -> Error {
    if is_safe_by_nature(&method) {
        Error::Unavailable {
            server,
            reason: "the server's actor is gone; the call is safe to make again".into(),
            attempts: 0,
            stderr_tail: Vec::new(),
        }
    } else {
        Error::OutcomeUnknown {
            server,
            method,
            reason: "the server's actor is gone and the call may have been sent".into(),
        }
    }
}
