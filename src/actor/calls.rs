//! One call in flight: what the actor keeps for it, and what an internal caller of the actor
//! awaits. The table of all of them, and every way a call ends (its deadline included), is in
//! [`call_table`](super::call_table); where an answer goes, in [`reply`](super::reply).
//!
//! The deadline is kept by the actor, in its call table: one timer for the earliest deadline,
//! not one per call. Exactly one answer reaches the caller whatever happens: the entry answers
//! once, and if it is dropped unanswered (its actor stopped or panicked) its `Drop` answers.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::actor::messages::Progress;
use crate::actor::reply::{Answer, Payload};
use crate::actor::request::{CallRequest, Params};
use crate::error::Error;
use crate::policy::deadline::saturating_add;
use crate::policy::retry::{is_safe_by_nature, RetryPolicy};

/// What the actor keeps for one call.
///
/// An entry answers its caller exactly once: through [`CallEntry::answer`], or, if it is
/// dropped unanswered (its actor panicked or was stopped without a `Shutdown`), from its `Drop`,
/// with what is known of the call: a written call that is not safe by nature may have run.
pub(crate) struct CallEntry {
    server: Arc<str>,
    pub method: Cow<'static, str>,
    /// Params as sent (with our progress token, if the caller asked for progress), as the
    /// JSON text they were serialized to once.
    pub params: Option<Params>,
    /// A `tools/call`'s tool, when the call came with it apart (see [`CallEntry::tool`]).
    tool: Option<String>,
    /// `None` once answered.
    reply: Option<Rc<dyn Answer>>,
    pub timeout: Duration,
    /// When the call is answered `Timeout` (or, unsent, `Unavailable`).
    pub deadline: Instant,
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
            self.finished(Some(&error));
            if let Some(reply) = self.reply.take() {
                reply.answer(&self.server, Err(error));
            }
        }
    }
}

/// Where progress for a call goes, and how it moves the deadline.
pub(crate) struct ProgressRoute {
    pub recipient: Option<Recipient<Progress>>,
    /// The latest allowed deadline, when progress restarts the timeout.
    pub latest: Option<Instant>,
}

impl CallEntry {
    /// The entry for call `call` to `server` under request id `id`, answered on `reply`.
    /// `now` starts the timeout (the call's own, or `default_timeout`).
    pub fn open(
        server: &Arc<str>,
        id: u64,
        call: CallRequest,
        reply: Rc<dyn Answer>,
        default_timeout: Duration,
        now: Instant,
    ) -> CallEntry {
        let timeout = call.options.timeout.unwrap_or(default_timeout);
        let deadline = saturating_add(now, timeout);
        let mut params = call.params;
        let progress = if call.options.progress.is_some()
            || call.options.reset_timeout_on_progress.is_some()
        {
            // Our id doubles as the progress token: unique, and no second map to keep.
            params = Some(Params::with_progress_token(params.as_ref(), id));
            let latest = call
                .options
                .reset_timeout_on_progress
                .map(|max_total| saturating_add(now, max_total.max(timeout)));
            Some(ProgressRoute {
                recipient: call.options.progress,
                latest,
            })
        } else {
            None
        };
        // Without any subscriber there is nobody to see a span, and making one costs as much
        // as a tenth of the rest of a call.
        let span = if !tracing::dispatcher::has_been_set() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                parent: &call.options.parent,
                "mcp.call",
                server = %server,
                method = %call.method,
                tool = tracing::field::Empty,
                request_id = id,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            )
        };
        let entry = CallEntry {
            server: server.clone(),
            method: call.method,
            params,
            tool: call.tool,
            reply: Some(reply),
            timeout,
            deadline,
            retry: call.options.retry,
            sends: 0,
            wire_id: id,
            fresh: true,
            sent: false,
            held: false,
            rounds: 0,
            progress,
            started: now,
            span,
        };
        if !entry.span.is_disabled() {
            if let Some(tool) = entry.tool() {
                entry.span.record("tool", tool.as_ref());
            }
        }
        entry
    }

    /// For `tools/call`: the tool's name, to look up its annotations (only after a lost
    /// connection): the one the call came with, or else read from the params then rather
    /// than copied for every call.
    pub fn tool(&self) -> Option<Cow<'_, str>> {
        if self.method != "tools/call" {
            return None;
        }
        match &self.tool {
            Some(tool) => Some(Cow::Borrowed(tool)),
            None => self.params.as_ref()?.name(),
        }
    }

    /// Answers the caller. A caller that already gave up is not an error.
    pub fn answer(mut self, outcome: Result<Payload, Error>) {
        self.finished(outcome.as_ref().err());
        if let Some(reply) = self.reply.take() {
            reply.answer(&self.server, outcome);
        }
    }

    /// Answers the caller with `result` if it turns into the caller's type; if not, the entry
    /// is left as it was (still unanswered) and the error says why.
    pub fn offer(&mut self, result: Payload) -> Result<(), Error> {
        let Some(reply) = &self.reply else {
            return Ok(());
        };
        reply.offer(&self.server, result)?;
        self.finished(None);
        self.reply = None;
        Ok(())
    }

    /// Closes the call's span with its outcome and counts it in the metrics: every answer
    /// passes here once (`error`: `None` for a result).
    fn finished(&self, error: Option<&Error>) {
        let code = error.map_or("ok", Error::code);
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
                method: self.method.to_string(),
                reason: format!("{why} after the call was sent"),
            }
        }
    }

    /// Restarts the timeout after progress, within the maximum total time: the new deadline,
    /// if it moved.
    pub fn on_progress(&mut self, server: &str, params: &Value, now: Instant) -> Option<Instant> {
        let route = self.progress.as_ref()?;
        let mut moved = None;
        if let Some(latest) = route.latest {
            let deadline = saturating_add(now, self.timeout).min(latest);
            if deadline > self.deadline {
                moved = Some(deadline);
            }
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
        if let Some(deadline) = moved {
            self.deadline = deadline;
        }
        moved
    }
}

/// What an internal caller of the actor (a liveness ping, a subscription) awaits: the answer,
/// which the entry gives by the call's deadline at the latest.
pub(crate) struct Waiter {
    pub rx: oneshot::Receiver<Result<Value, Error>>,
    pub server: String,
    pub method: String,
}

impl Waiter {
    /// Waits for the answer.
    pub async fn wait(self) -> Result<Value, Error> {
        // Every entry answers, from its `Drop` at the latest; should one not, say no more than
        // is known: the call may have been sent.
        self.rx
            .await
            .unwrap_or_else(|_| Err(lost_answer(self.server, self.method)))
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
