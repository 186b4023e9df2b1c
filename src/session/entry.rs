//! One call in flight: what the session keeps for it from the moment it takes the call until
//! its one answer, and where that answer goes ([`Replier`]): the caller's [`Reply`] (the actor's
//! reply channel, behind a trait so that the session knows no actix), or the session itself
//! for its own calls (the liveness check, a subscription change).
//!
//! Exactly one answer reaches a caller whatever happens: the entry answers once, and if it is
//! dropped unanswered (its actor stopped or panicked) its `Drop` answers, with what
//! [`outcome`](super::outcome) decides for a call whose actor went away.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::Error;
use crate::policy::deadline::saturating_add;
use crate::policy::retry::RetryPolicy;
use crate::protocol::response::RawResult;
use crate::session::outcome::{self, Fate, Why};
use crate::session::request::{CallRequest, Params, ProgressSink};

/// A call's result as it reaches its caller: the JSON text of the server's answer (parsed only
/// by the caller's [`Reply`], into the caller's type), or a value already parsed (a result the
/// session had to look into, or made itself).
#[derive(Debug)]
pub(crate) enum Payload {
    Raw(RawResult),
    Parsed(Value),
    /// The server runs the call as this task, and the caller asked to be told so at once
    /// ([`StartTask`](crate::StartTask)).
    Task(Box<crate::tasks::TaskHandle>),
}

impl From<RawResult> for Payload {
    fn from(raw: RawResult) -> Self {
        Payload::Raw(raw)
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Parsed(value)
    }
}

/// The caller's end of a call's answer, as its entry holds it.
pub(crate) trait Reply {
    /// Delivers the outcome of the call to `server` (at most once; later ones are ignored).
    fn answer(&self, server: &str, outcome: Result<Payload, Error>);

    /// Delivers `result` if it turns into the caller's type; if it does not, delivers nothing
    /// and says why (whoever offered it decides what the result was).
    fn offer(&self, server: &str, result: Payload) -> Result<(), Error>;

    /// The caller stopped waiting (it dropped its future): the call is abandoned. A caller that
    /// never waited (a fire-and-forget send) has not left: its call runs.
    fn is_abandoned(&self) -> bool;
}

/// The session's own calls, whose answers the session acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Internal {
    /// The liveness check after a timeout, on connection `seq`.
    Liveness { seq: u64 },
    /// A subscription change made after a handshake (session era): only logged if it fails.
    Subscription { method: &'static str, uri: String },
    /// A `tasks/get` of task `task_id` (the Tasks extension).
    TaskPoll { task_id: String },
    /// The `tasks/update` that answers task `task_id`'s input requests.
    TaskUpdate { task_id: String },
    /// The `tasks/result` that fetches an ended experimental task's outcome.
    TaskResult { task_id: String },
}

/// Where a call's answer goes.
pub(crate) enum Replier {
    Caller(Rc<dyn Reply>),
    Session(Internal),
}

/// Where progress for a call goes, and how it moves the deadline.
pub(crate) struct ProgressRoute {
    pub sink: Option<Box<dyn ProgressSink>>,
    /// The latest allowed deadline, when progress restarts the timeout.
    pub latest: Option<Instant>,
}

/// What the session keeps for one call.
pub(crate) struct CallEntry {
    server: Arc<str>,
    pub method: Cow<'static, str>,
    /// Params as sent (with our progress token, if the caller asked for progress), as the
    /// JSON text they were serialized to once.
    pub params: Option<Params>,
    /// A `tools/call`'s tool, when the call came with it apart (see [`CallEntry::tool`]).
    tool: Option<String>,
    /// `None` once answered.
    reply: Option<Replier>,
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
    /// The server closed a connection before it had read this request whole once already
    /// (HTTP): it did not run, and was written again; the next time it is answered `refused`.
    pub cut_off: bool,
    /// Rounds of input asked for so far.
    pub rounds: u32,
    /// Answered with the task's handle, should the server run it as a task (see
    /// [`RequestOptions::start_task`](crate::session::request::RequestOptions)).
    pub start_task: bool,
    /// Sent task-augmented (see
    /// [`RequestOptions::task_augmented`](crate::session::request::RequestOptions)).
    pub task_augmented: bool,
    /// The params of the original request, kept once the server asks for input: a re-send
    /// after a lost connection starts the rounds over from them (the server that gave the
    /// state of the later rounds may be gone, and a replacement refuses it).
    pub first_round: Option<Params>,
    pub progress: Option<ProgressRoute>,
    /// When the session took the call, for its duration in its span and the metrics, and for
    /// what a timeout says after progress moved the deadline.
    pub started: Instant,
    /// `mcp.call`, a child of the caller's span; closed when the entry goes.
    span: tracing::Span,
}

impl Drop for CallEntry {
    fn drop(&mut self) {
        if let Some(Replier::Caller(reply)) = self.reply.take() {
            let why = Why::ActorGone {
                panicked: std::thread::panicking(),
            };
            let Fate::Answer(error) = outcome::decide(&self.server, &self.facts(None, false), why)
            else {
                return; // An actor that is gone re-sends nothing.
            };
            self.finished(Some(error.code()));
            reply.answer(&self.server, Err(error));
        }
    }
}

impl CallEntry {
    /// The entry for call `call` to `server` under request id `id`, answered by `reply`.
    /// `now` starts the timeout (the call's own, or `default_timeout`).
    pub fn open(
        server: &Arc<str>,
        id: u64,
        call: CallRequest,
        reply: Replier,
        default_timeout: Duration,
        now: Instant,
    ) -> CallEntry {
        let options = call.options;
        let timeout = options.timeout.unwrap_or(default_timeout);
        let deadline = saturating_add(now, timeout);
        let mut params = call.params;
        let progress = if options.progress.is_some() || options.reset_timeout_on_progress.is_some()
        {
            // Our id doubles as the progress token: unique, and no second map to keep.
            params = Some(Params::with_progress_token(params.as_ref(), id));
            let latest = options
                .reset_timeout_on_progress
                .map(|max_total| saturating_add(now, max_total.max(timeout)));
            Some(ProgressRoute {
                sink: options.progress,
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
            let make = || {
                tracing::info_span!(
                    parent: &options.parent,
                    "mcp.call",
                    server = %server,
                    method = %call.method,
                    tool = tracing::field::Empty,
                    request_id = id,
                    outcome = tracing::field::Empty,
                    duration_ms = tracing::field::Empty,
                )
            };
            // The child of a span belongs to the parent's subscriber: the caller's span may be
            // another subscriber's than this thread's default (an `McpClient` caller on a
            // thread of its own), and a subscriber asked about a parent id it never issued
            // may panic.
            match options
                .parent
                .with_subscriber(|(_, parents)| parents.clone())
            {
                Some(parents) => tracing::dispatcher::with_default(&parents, make),
                None => make(),
            }
        };
        let entry = CallEntry {
            server: server.clone(),
            method: call.method,
            params,
            tool: call.tool,
            reply: Some(reply),
            timeout,
            deadline,
            retry: options.retry,
            sends: 0,
            wire_id: id,
            fresh: true,
            sent: false,
            held: false,
            rounds: 0,
            start_task: options.start_task,
            task_augmented: options.task_augmented,
            first_round: None,
            cut_off: false,
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

    /// What the one decision about an unanswered call needs to know of this one (`hints`:
    /// its tool's cached annotations, `trusted`: whether they may be believed).
    pub fn facts(
        &self,
        hints: Option<crate::policy::retry::ToolHints>,
        trusted: bool,
    ) -> outcome::Facts<'_> {
        outcome::Facts {
            method: &self.method,
            retry: self.retry,
            sends: self.sends,
            hints,
            trusted,
        }
    }

    /// Whether the caller is the session itself.
    pub fn is_internal(&self) -> bool {
        matches!(self.reply, Some(Replier::Session(_)))
    }

    /// Whether the caller stopped waiting for this call.
    pub fn is_abandoned(&self) -> bool {
        matches!(&self.reply, Some(Replier::Caller(reply)) if reply.is_abandoned())
    }

    /// Answers the caller. A caller that already gave up is not an error. The session's own
    /// calls hand their outcome back, for the session to act on.
    #[must_use]
    pub fn answer(
        mut self,
        outcome: Result<Payload, Error>,
    ) -> Option<(Internal, Result<Payload, Error>)> {
        self.finished(outcome.as_ref().err().map(Error::code));
        match self.reply.take()? {
            Replier::Caller(reply) => {
                reply.answer(&self.server, outcome);
                None
            }
            Replier::Session(internal) => Some((internal, outcome)),
        }
    }

    /// Ends the call without an answer: its caller is gone.
    pub fn abandon(mut self) {
        self.finished(Some("abandoned"));
        self.reply = None;
    }

    /// Answers the caller with `result` if it turns into the caller's type; if not, the entry
    /// is left as it was (still unanswered) and the error says why. The session's own calls
    /// take any result.
    pub fn offer(&mut self, result: Payload) -> Result<Option<(Internal, Payload)>, Error> {
        let internal = match &self.reply {
            None => return Ok(None),
            Some(Replier::Caller(reply)) => {
                reply.offer(&self.server, result)?;
                None
            }
            Some(Replier::Session(internal)) => Some((internal.clone(), result)),
        };
        self.finished(None);
        self.reply = None;
        Ok(internal)
    }

    /// Closes the call's span with its outcome and counts it in the metrics: every end of a
    /// call passes here once (`code`: `None` for a result).
    fn finished(&self, code: Option<&'static str>) {
        let code = code.unwrap_or("ok");
        let elapsed_ms = || u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if !self.span.is_disabled() {
            self.span.record("outcome", code);
            self.span.record("duration_ms", elapsed_ms());
        }
        // One event per call as well as the span: `RUST_LOG=mcp_supervisor=debug` then shows
        // every call without span-close events switched on. Its fields are only computed when
        // the event is enabled.
        tracing::debug!(
            server = %self.server,
            method = %self.method,
            tool = self.tool().as_deref(),
            outcome = code,
            duration_ms = elapsed_ms(),
            "call finished"
        );
        crate::telemetry::call_finished(&self.server, &self.method, code, self.started);
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
        if let Some(sink) = &route.sink {
            let progress = params
                .get("progress")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            sink.progress(
                server,
                progress,
                params.get("total").and_then(Value::as_f64),
                params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            );
        }
        if let Some(deadline) = moved {
            self.deadline = deadline;
        }
        moved
    }
}
