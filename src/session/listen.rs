//! Change notifications in the 2026-07-28 revision: one `subscriptions/listen` stream per
//! connection carries the resource updates the application subscribed to and the server's
//! tool-list changes, instead of the session era's `resources/subscribe` and GET stream.
//!
//! - It is opened once the connection is Ready, with the application's current subscriptions,
//!   and again after every reconnect or respawn (the revision says a client must: the server
//!   keeps no state).
//! - Its filter cannot be changed: a new subscription opens a new listen, and the old one is
//!   cancelled once the new one is acknowledged; `Subscribe` answers at that acknowledgement,
//!   or with a timeout when none came within the call timeout (the subscription is kept, and a
//!   late acknowledgement still puts the listen in force).
//! - A listen the server ends gracefully (its result) is opened again, no sooner than
//!   [`REOPEN_AFTER`] after the last; one lost by error (its stream broke) is a lost
//!   connection, as the GET stream's loss is in the session era; `-32601` means the server has
//!   none, and no more is asked.
//! - A listen that never opened (its request failed before the acknowledgement: an answer that
//!   is no stream we can read, a redirect, a head too large) is, as such a GET stream is in the
//!   session era, no listen stream: the connection is fine and stays, the subscriptions waiting
//!   for it hear why, and none is asked for again until they change or the next connection. One
//!   refused as overloaded is asked for again after the server's `Retry-After`.
//!
//! - With the Tasks extension (both sides declare it), a listen also names the running tasks
//!   (`taskIds`, the oldest [`MAX_TASK_IDS`]), and the server pushes `notifications/tasks` for
//!   those its acknowledgement names: their polls are then a slow safety net. A task learnt
//!   while a listen is waiting for its acknowledgement is named by the next one, opened at that
//!   acknowledgement, so that a burst of tasks costs a few listens, not one each; ended ones
//!   drop out when it next opens. A server that refuses a listen naming tasks is asked once
//!   more without them on that connection: the task ids are an extra, and must not cost the
//!   tool-list changes and subscriptions.
//!
//! The request is not a call: it lives as long as the connection, outside the call table.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::ServerCapabilities;
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind};
use crate::policy::deadline::saturating_add;
use crate::protocol::jsonrpc::{codes, Id, RpcError};
use crate::session::entry::{Payload, Reply};
use crate::session::wire::Wire;

/// A listen the server ends at once is opened again no sooner than this after the last one.
pub(crate) const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// The most tasks one listen names (the oldest running ones): the request carries every id
/// each time it is opened again, and servers bound what they take.
pub(crate) const MAX_TASK_IDS: usize = 1024;

/// The `_meta` key that names the listen a notification belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// No task is covered.
static NO_TASKS: BTreeSet<String> = BTreeSet::new();

/// What to ask a listen for, if anything: the tool-list changes and the application's
/// resource subscriptions, as far as the server offers them, and the `tasks` to hear of (the
/// caller decides whether the server takes any).
pub(crate) fn filter(
    caps: &ServerCapabilities,
    subscriptions: &BTreeSet<String>,
    tasks: &[String],
) -> Option<Value> {
    let tools = caps
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    let resources = caps
        .resources
        .as_ref()
        .and_then(|r| r.subscribe)
        .unwrap_or(false)
        && !subscriptions.is_empty();
    if !tools && !resources && tasks.is_empty() {
        return None;
    }
    let mut filter = json!({});
    if tools {
        filter["toolsListChanged"] = json!(true);
    }
    if resources {
        filter["resourceSubscriptions"] = json!(subscriptions.iter().collect::<Vec<_>>());
    }
    if !tasks.is_empty() {
        filter["taskIds"] = json!(tasks);
    }
    Some(filter)
}

/// The task ids a filter (ours, or the one a server acknowledged) names.
fn task_ids(filter: Option<&Value>) -> impl Iterator<Item = &str> {
    filter
        .and_then(|f| f.get("taskIds"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The listen stream of one connection.
pub(crate) struct Listen {
    server: Arc<str>,
    /// The request id of the newest listen.
    id: u64,
    opened: Instant,
    acknowledged: bool,
    /// The server ended it (its result or error): nothing to cancel.
    finished: bool,
    /// What it asked for.
    filter: Value,
    /// The tasks it named, and of those, the ones its acknowledgement says the server tells of
    /// (empty until then, and once it ended).
    tasks: BTreeSet<String>,
    covering: BTreeSet<String>,
    /// The listen this one replaces, cancelled once this one is acknowledged.
    replaces: Option<u64>,
    /// `Subscribe`/`Unsubscribe` callers waiting for this listen's acknowledgement.
    waiting: Vec<Rc<dyn Reply>>,
}

/// Answers a subscription's caller: its change is in force (or kept for the next connection).
fn done(server: &str, waiter: Rc<dyn Reply>, outcome: Result<(), Error>) {
    waiter.answer(server, outcome.map(|()| Payload::Parsed(Value::Null)));
}

impl Drop for Listen {
    fn drop(&mut self) {
        // The connection is gone: the subscriptions are kept, and sent with the next one.
        for waiter in self.waiting.drain(..) {
            done(&self.server, waiter, Ok(()));
        }
    }
}

/// What to do after a listen ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Nothing (the replaced one ended, or the server has none).
    Nothing,
    /// Open it again at this instant.
    ReopenAt(Instant),
}

/// The listen of one connection, if one is open.
#[derive(Default)]
pub(crate) struct ListenStream {
    current: Option<Listen>,
    /// The server refused the listen as overloaded: none is asked for before this instant
    /// (a subscription changed meanwhile waits for it).
    refused_until: Option<Instant>,
    /// Tasks were learnt while the current listen waited for its acknowledgement: a listen
    /// naming them follows that acknowledgement.
    stale: bool,
    /// The server refused a listen that named tasks: none is named on this connection.
    tasks_refused: bool,
    /// The listen could not be had on this connection (refused, or it never opened): new
    /// tasks do not ask for it again (a change of the subscriptions does).
    given_up: bool,
}

impl ListenStream {
    /// Opens a listen request `id` with `filter` (replacing the one open, if any); `waiter` is
    /// answered at its acknowledgement. With no filter, the open one is closed.
    pub fn open(
        &mut self,
        server: &Arc<str>,
        filter: Option<Value>,
        waiter: Option<Rc<dyn Reply>>,
        wire: &Wire,
        next_id: impl FnOnce() -> u64,
        now: Instant,
    ) {
        if self.refused_until.is_some_and(|until| now < until) {
            if let Some(waiting) = self.current.as_mut() {
                // Opened with the filter of the time once the wait is over.
                waiting.waiting.extend(waiter);
                return;
            }
        }
        self.refused_until = None;
        self.stale = false;
        self.given_up = false;
        let old = self.current.take();
        let Some(filter) = filter else {
            // Nothing to listen for any more.
            if let Some(mut old) = old {
                if !old.finished {
                    wire.cancel(old.id, "no longer needed");
                }
                for waiter in old.waiting.drain(..).chain(waiter) {
                    done(server, waiter, Ok(()));
                }
            } else if let Some(waiter) = waiter {
                done(server, waiter, Ok(()));
            }
            return;
        };
        let id = next_id();
        wire.request_value(
            id,
            "subscriptions/listen",
            Some(&json!({ "notifications": filter })),
        );
        let tasks = task_ids(Some(&filter)).map(str::to_owned).collect();
        let mut listen = Listen {
            server: server.clone(),
            id,
            opened: now,
            acknowledged: false,
            finished: false,
            filter,
            tasks,
            covering: BTreeSet::new(),
            replaces: None,
            waiting: waiter.into_iter().collect(),
        };
        if let Some(mut old) = old {
            listen.waiting.append(&mut old.waiting);
            // An acknowledged one keeps delivering until the new one is; an unacknowledged
            // one is replaced outright.
            if old.acknowledged && !old.finished {
                listen.replaces = Some(old.id);
                // What it covers stays covered until then.
                listen.covering = std::mem::take(&mut old.covering);
            } else {
                if !old.finished {
                    wire.cancel(old.id, "replaced");
                }
                // The acknowledged one it was to replace keeps delivering until this one is
                // acknowledged (and is then cancelled), not left open unowned.
                if let Some(replaced) = old.replaces.take() {
                    listen.replaces = Some(replaced);
                    listen.covering = std::mem::take(&mut old.covering);
                }
            }
        }
        self.current = Some(listen);
    }

    /// `notifications/subscriptions/acknowledged`: the listen it names is in force, telling of
    /// the tasks it names (of those asked for). Whether a listen naming newer tasks should
    /// follow it: see [`ListenStream::take_stale`].
    pub fn acknowledged(&mut self, params: Option<&Value>, wire: &Wire) {
        let named = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .and_then(Value::as_u64);
        let Some(listen) = self.current.as_mut().filter(|l| Some(l.id) == named) else {
            return;
        };
        listen.acknowledged = true;
        // Only ids it asked for count: what a server names beyond them is no promise of ours
        // to keep.
        listen.covering = task_ids(params.and_then(|p| p.get("notifications")))
            .filter(|id| listen.tasks.contains(*id))
            .map(str::to_owned)
            .collect();
        if listen.covering.len() < listen.tasks.len() {
            tracing::debug!(server = %listen.server, asked = listen.tasks.len(), covered = listen.covering.len(), "the listen stream tells of fewer tasks than it named; the others are polled");
        }
        if let Some(old) = listen.replaces.take() {
            wire.cancel(old, "replaced");
        }
        for waiter in listen.waiting.drain(..) {
            done(&listen.server, waiter, Ok(()));
        }
    }

    /// Whether request `id` is a listen (the newest or the one it replaces): its end is not an
    /// answer for the call table.
    pub fn is_listen(&self, id: &Id) -> bool {
        let Some(listen) = &self.current else {
            return false;
        };
        let id = id.as_ours();
        id == Some(listen.id) || (id.is_some() && id == listen.replaces)
    }

    /// A listen ended: with its result (gracefully: open it again), or with an error.
    pub fn ended(
        &mut self,
        id: &Id,
        outcome: Result<(), RpcError>,
        wire: &Wire,
        now: Instant,
    ) -> Ended {
        let Some(listen) = self.current.as_mut() else {
            return Ended::Nothing;
        };
        if id.as_ours() != Some(listen.id) {
            // The replaced one ended: what it told of is told of no longer, until this one's
            // acknowledgement says what this one tells of.
            listen.replaces = None;
            if !listen.acknowledged {
                listen.covering.clear();
            }
            return Ended::Nothing;
        }
        listen.finished = true;
        listen.covering.clear();
        match outcome {
            Ok(()) => {
                let at = saturating_add(listen.opened, REOPEN_AFTER).max(now);
                tracing::debug!(server = %listen.server, wait_ms = at.saturating_duration_since(now).as_millis() as u64, "the server ended the listen stream; opening it again");
                Ended::ReopenAt(at)
            }
            Err(error)
                if error.code != codes::METHOD_NOT_FOUND
                    && !listen.acknowledged
                    && !listen.tasks.is_empty()
                    && !self.tasks_refused =>
            {
                // Perhaps for the tasks (too many, or none it takes): asked again without.
                self.tasks_refused = true;
                tracing::warn!(server = %listen.server, code = error.code, tasks = listen.tasks.len(), "the server refused a listen stream naming tasks; listening without them (the tasks are polled)");
                let at = saturating_add(listen.opened, REOPEN_AFTER).max(now);
                Ended::ReopenAt(at)
            }
            Err(error) => {
                self.given_up = true;
                let unsupported = error.code == codes::METHOD_NOT_FOUND;
                if !unsupported {
                    tracing::warn!(server = %listen.server, code = error.code, "the server refused the listen stream: no change notifications until the next connection");
                }
                if let Some(mut listen) = self.current.take() {
                    // The one it was to replace would otherwise be left open, unowned.
                    if let Some(replaced) = listen.replaces.take() {
                        wire.cancel(replaced, "no longer needed");
                    }
                    let refused = Error::rpc(&listen.server, "subscriptions/listen", error);
                    for waiter in listen.waiting.drain(..) {
                        let outcome = if unsupported {
                            Ok(())
                        } else {
                            Err(refused.clone())
                        };
                        done(&listen.server, waiter, outcome);
                    }
                }
                Ended::Nothing
            }
        }
    }

    /// `waiter` waits for the acknowledgement of the current listen, if one is open and not
    /// acknowledged yet; otherwise it is handed back (nothing to wait for).
    pub fn wait_for_ack(&mut self, waiter: Rc<dyn Reply>) -> Result<(), Rc<dyn Reply>> {
        match self
            .current
            .as_mut()
            .filter(|l| !l.acknowledged && !l.finished)
        {
            Some(listen) => {
                listen.waiting.push(waiter);
                Ok(())
            }
            None => Err(waiter),
        }
    }

    /// The current listen, while subscriptions wait for its acknowledgement.
    pub fn awaited(&self) -> Option<u64> {
        self.current
            .as_ref()
            .filter(|l| !l.acknowledged && !l.waiting.is_empty())
            .map(|l| l.id)
    }

    /// Listen `id` was not acknowledged by the deadline of the subscriptions waiting for it,
    /// `timeout`: they are told so. It stays open: a late acknowledgement still puts it in force.
    pub fn unacknowledged(&mut self, id: u64, timeout: Duration) {
        let Some(listen) = self
            .current
            .as_mut()
            .filter(|l| l.id == id && !l.acknowledged)
        else {
            return;
        };
        tracing::warn!(server = %listen.server, timeout_ms = timeout.as_millis() as u64, "the listen stream was not acknowledged in time");
        for waiter in listen.waiting.drain(..) {
            let late = Error::Timeout {
                server: listen.server.to_string(),
                method: "subscriptions/listen".into(),
                timeout,
                elapsed: timeout,
            };
            done(&listen.server, waiter, Err(late));
        }
    }

    /// Whether the requests in `ids` include the current listen, and if so whether it was
    /// acknowledged (its stream was open).
    pub fn among(&self, ids: &[u64]) -> Option<bool> {
        self.current
            .as_ref()
            .filter(|l| ids.contains(&l.id))
            .map(|l| l.acknowledged)
    }

    /// The current listen's request never reached the server whole, or its exchange broke
    /// before the acknowledgement (a reset or closed connection): no refusal, so it is opened
    /// again as a stream the server ended is, its subscribers still waiting.
    pub fn cut(&mut self, now: Instant) -> Ended {
        let Some(listen) = self.current.as_ref() else {
            return Ended::Nothing;
        };
        let at = saturating_add(listen.opened, REOPEN_AFTER).max(now);
        tracing::debug!(server = %listen.server, wait_ms = at.saturating_duration_since(now).as_millis() as u64, "the listen stream's request was cut off; opening it again");
        Ended::ReopenAt(at)
    }

    /// The current listen's request failed before it was acknowledged: it never opened.
    pub fn failed(&mut self, error: Error, now: Instant) -> Ended {
        let Some(listen) = self.current.as_ref() else {
            return Ended::Nothing;
        };
        if error.kind() == ErrorKind::Overloaded {
            // Not now: asked again once the server's wait is over; its waiters keep waiting.
            let wait = error.retry_after().unwrap_or_default();
            let at = saturating_add(now, wait).max(saturating_add(listen.opened, REOPEN_AFTER));
            self.refused_until = Some(at);
            tracing::warn!(server = %listen.server, wait_ms = at.saturating_duration_since(now).as_millis() as u64, error = %error.without_stderr(), "the listen stream was refused for now; asking again");
            return Ended::ReopenAt(at);
        }
        tracing::warn!(server = %listen.server, error = %error.without_stderr(), "the listen stream could not be opened: no change notifications until the subscriptions change or the next connection");
        self.given_up = true;
        if let Some(mut listen) = self.current.take() {
            for waiter in listen.waiting.drain(..) {
                done(&listen.server, waiter, Err(error.clone()));
            }
        }
        Ended::Nothing
    }

    /// The tasks the server tells of on the current listen (those of the listen it replaces
    /// until it is acknowledged).
    pub fn covering(&self) -> &BTreeSet<String> {
        self.current.as_ref().map_or(&NO_TASKS, |l| &l.covering)
    }

    /// Whether tasks may be named on this connection.
    pub fn takes_tasks(&self) -> bool {
        !self.tasks_refused
    }

    /// Tasks were learnt that the current listen does not name (`unnamed`): whether to open
    /// one that does now. Not while the current one waits for its acknowledgement (it is
    /// marked stale, see [`ListenStream::take_stale`]), nor once none can be had.
    pub fn grows(&mut self, unnamed: impl FnOnce(&BTreeSet<String>) -> bool) -> bool {
        if self.given_up || self.tasks_refused || self.refused_until.is_some() {
            return false;
        }
        let named = self.current.as_ref().map_or(&NO_TASKS, |l| &l.tasks);
        if !unnamed(named) {
            return false;
        }
        match &self.current {
            Some(listen) if !listen.acknowledged && !listen.finished => {
                self.stale = true;
                false
            }
            _ => true,
        }
    }

    /// Whether tasks were learnt while the (now acknowledged) listen waited: a listen naming
    /// them should follow.
    pub fn take_stale(&mut self) -> bool {
        std::mem::take(&mut self.stale)
    }

    /// What the current listen asked for.
    pub fn filter(&self) -> Option<&Value> {
        self.current.as_ref().map(|l| &l.filter)
    }
}
