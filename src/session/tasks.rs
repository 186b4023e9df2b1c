//! The tasks of one server (the Tasks extension): calls the server runs as tasks, from the
//! `CreateTaskResult` until their end, and who waits for them.
//!
//! A task is the server's, not a connection's: it outlives the call that started it (whose
//! deadline may pass while it runs), connection losses and reconnects. So the table keeps
//! each task apart from the calls: its status, when to ask `tasks/get` next (as often as the
//! server asks, see [`task_poll`](crate::policy::task_poll)), which input keys were answered
//! (each at most once, however often a poll shows it again), and the callers waiting for it
//! (call keys of the call table, where their deadlines and replies stay). When a task ends,
//! every caller still waiting gets its outcome; a task that ends with nobody waiting keeps its
//! outcome, bounded, for whoever asks for it later.
//!
//! The table decides; the session carries its decisions out (below: the polls and updates are
//! the session's own calls, on whatever connection is current).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use rand::rngs::StdRng;
use serde_json::Map;

use super::entry::{Internal, Payload, Replier, Reply};
use super::events::ServerEvent;
use super::request::{CallRequest, RequestOptions};
use super::{AskedBy, Command, InputAsk, Session};
use crate::config::Settings;
use crate::error::Error;
use crate::policy::deadline::saturating_add;
use crate::policy::retry::RetryPolicy;
use crate::policy::task_poll;
use crate::protocol::era::Era;
use crate::protocol::jsonrpc::{codes, Id};
use crate::protocol::mrtr::InputRequest;
use crate::protocol::response::RawResult;
use crate::protocol::tasks::{self, Detail, TaskState, TaskStatus};
use crate::protocol::text::server_text;
use crate::tasks::TaskHandle;

use super::lease::Leases;

/// Ended tasks whose outcome nobody took yet, kept per server: the oldest is forgotten first.
pub(crate) const MAX_KEPT_OUTCOMES: usize = 256;

/// Polls in a row that got no answer before a task without a caller is given up. (A task with
/// callers is kept as long as one waits: their deadlines bound it.)
const MAX_FAILED_POLLS: u32 = 20;

/// What happens to a task after something was learnt about it. (Made and consumed at once,
/// never kept: the size of its largest variant costs nothing.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Next {
    /// Nothing to do now (its next poll is scheduled, or a poll is in flight).
    Wait,
    /// Ask the application's handler these (the keys not answered yet), then send the answers
    /// with `tasks/update`.
    Ask(Vec<InputRequest>),
    /// It ended (the session era's experimental tasks): fetch its outcome with
    /// `tasks/result`.
    FetchResult,
    /// It ended: answer these callers (call keys) with the outcome. Should none of them take
    /// it (they left meanwhile), it goes back with [`TaskTable::unclaimed`].
    Done {
        handle: TaskHandle,
        waiters: Vec<u64>,
        outcome: Result<Value, Error>,
    },
}

/// What the task store must record, in order, before what follows it happens (see
/// [`TaskStore`](crate::tasks::TaskStore)'s rules): the driver writes each, then carries on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskWrite {
    /// A task the server runs for one of our calls (or one followed from a kept handle).
    Created {
        handle: TaskHandle,
        /// The digest of the call's arguments, when the call is known.
        arguments_digest: String,
        poll_interval: Option<Duration>,
        /// Followed from a handle (`AwaitTask`), not made by a call of this session: the
        /// store may know it already, another replica may poll it.
        followed: bool,
    },
    /// What the server says of a running task changed.
    Status {
        task_id: String,
        tool: String,
        status: TaskStatus,
        message: Option<String>,
        poll_interval: Option<Duration>,
    },
    /// These input keys are being answered: never again.
    InputAnswered { task_id: String, keys: Vec<String> },
    /// It ended: its status and outcome (the result's JSON text, or the error's), to be
    /// delivered once.
    Ended {
        task_id: String,
        tool: String,
        status: TaskStatus,
        outcome: String,
    },
    /// Its outcome was handed to a caller: never again.
    Delivered { task_id: String },
    /// The server no longer knows it: nothing is left to follow.
    Forgotten { task_id: String, tool: String },
}

/// What the session does once the store has recorded what came before it: answers.
pub(crate) enum Resumption {
    /// Answer these callers with task `task_id`'s outcome.
    Waiters {
        task_id: String,
        waiters: Vec<u64>,
        outcome: Result<Value, Error>,
    },
    /// Answer a `StartTask` with its task.
    Started { key: u64, handle: TaskHandle },
    /// Answer an `AwaitTask` with the outcome kept for task `task_id`.
    Kept {
        task_id: String,
        reply: Rc<dyn Reply>,
        outcome: Result<Value, Error>,
    },
}

impl std::fmt::Debug for Resumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resumption::Waiters { waiters, .. } => {
                write!(f, "Waiters({waiters:?})")
            }
            Resumption::Started { key, handle } => {
                write!(f, "Started({key}, {})", handle.task_id)
            }
            Resumption::Kept { .. } => f.write_str("Kept"),
        }
    }
}

/// A task a store kept, as the session takes it back.
#[derive(Debug)]
pub(crate) enum Restored {
    /// Still running when it was last heard of.
    Running {
        handle: TaskHandle,
        status: TaskStatus,
        poll_interval: Option<Duration>,
        answered: BTreeSet<String>,
    },
    /// Ended, its outcome not delivered yet.
    Ended {
        handle: TaskHandle,
        outcome: Result<Value, Error>,
    },
}

/// Where a task comes from: the call the server answered with it.
#[derive(Debug, Default)]
pub(crate) struct Origin {
    /// The tool the call called.
    pub tool: String,
    /// The digest of its arguments, when known.
    pub arguments_digest: String,
    /// The 2025-11-25 revision's experimental task (see [`Task::experimental`]).
    pub experimental: bool,
}

/// One task.
struct Task {
    handle: TaskHandle,
    status: TaskStatus,
    status_message: Option<String>,
    poll_interval: Option<Duration>,
    /// When we learnt of it (for its age in the status).
    since: Instant,
    /// When it is asked next; `None` while a poll or an update is in flight, or once it ended.
    next_poll: Option<Instant>,
    /// Input keys answered (or being answered): never answered again.
    answered: BTreeSet<String>,
    /// Of those, the keys the application is being asked, whose answers are not sent yet.
    asking: BTreeSet<String>,
    /// The callers waiting for its end.
    waiters: Vec<u64>,
    /// Polls in a row that got no answer.
    failed_polls: u32,
    polls: u64,
    /// The 2025-11-25 revision's experimental task: read with its own field names, and its
    /// outcome fetched with `tasks/result` once it ended.
    experimental: bool,
    /// A `tasks/result` of it is out (experimental tasks).
    fetching: bool,
    /// The current listen stream tells of it (`notifications/tasks`): polled only as a safety
    /// net, at the ceiling.
    covered: bool,
    /// When a notification's new status message was last recorded: a server that streams
    /// progress text costs the store a write per poll floor, not one per notification.
    message_recorded: Option<Instant>,
    /// Another replica holds its lease and polls it (a store shared by replicas): it is not
    /// asked here, and its outcome is looked for in the store (see [`lease`](super::lease)).
    elsewhere: bool,
}

impl Task {
    /// Task `handle` learnt of at `since`, as `status`, with nobody waiting, nothing answered
    /// and no poll planned yet.
    fn new(
        handle: TaskHandle,
        status: TaskStatus,
        poll_interval: Option<Duration>,
        since: Instant,
    ) -> Self {
        Task {
            handle,
            status,
            status_message: None,
            poll_interval,
            since,
            next_poll: None,
            answered: BTreeSet::new(),
            asking: BTreeSet::new(),
            waiters: Vec::new(),
            failed_polls: 0,
            polls: 0,
            experimental: false,
            fetching: false,
            covered: false,
            message_recorded: None,
            elsewhere: false,
        }
    }

    /// The interval to poll it at: the server's, or, while notifications tell of it, the
    /// longest the settings allow (a notification lost is then found out by the ceiling).
    fn poll_pace(&self) -> Option<Duration> {
        if self.covered {
            Some(Duration::MAX)
        } else {
            self.poll_interval
        }
    }
}

/// A server's tasks as one generation hands them to the next (see
/// [`handover`](super::handover)): the running ones with who waits for them, the outcomes
/// nobody took, and which were delivered lately.
pub(crate) struct TaskHandover {
    tasks: Vec<(String, Task)>,
    waiting: HashMap<u64, String>,
    kept: VecDeque<(TaskHandle, Result<Value, Error>)>,
    delivered: VecDeque<String>,
    /// Until when the old generation's leases of the tasks hold: the new one polls them no
    /// longer unless its own renewal of them says so.
    leases: Leases,
}

impl TaskHandover {
    /// The callers waiting for the tasks (call keys).
    pub fn waiters(&self) -> Vec<u64> {
        self.waiting.keys().copied().collect()
    }

    /// Running tasks handed over.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.kept.is_empty()
    }
}

/// The tasks of one server.
pub(crate) struct TaskTable {
    server: Arc<str>,
    tasks: HashMap<String, Task>,
    /// When each task is asked next, earliest first; an item whose task is gone or whose next
    /// poll moved is stale and skipped.
    polls: BinaryHeap<Reverse<(Instant, String)>>,
    /// Which task each waiting caller waits for.
    waiting: HashMap<u64, String>,
    /// Outcomes of tasks that ended with nobody waiting, oldest first.
    kept: VecDeque<(TaskHandle, Result<Value, Error>)>,
    /// What the store must record, not handed to the driver yet.
    writes: Vec<TaskWrite>,
    /// The tasks whose outcome went to a caller lately, oldest first (bounded): never
    /// followed again.
    delivered: VecDeque<String>,
    /// Until when this replica's leases hold, when the store has leases.
    leases: Leases,
}

impl TaskTable {
    pub fn new(server: Arc<str>) -> Self {
        TaskTable {
            server,
            tasks: HashMap::new(),
            polls: BinaryHeap::new(),
            waiting: HashMap::new(),
            kept: VecDeque::new(),
            writes: Vec::new(),
            delivered: VecDeque::new(),
            leases: Leases::None,
        }
    }

    /// What the store must record since the last call, in order.
    pub fn take_writes(&mut self) -> Vec<TaskWrite> {
        std::mem::take(&mut self.writes)
    }

    /// Tasks that have not ended.
    pub fn running(&self) -> usize {
        self.tasks.len()
    }

    /// Tasks that have not ended.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Takes task `state`, which the server answered call `waiter`'s `tools/call` of `tool`
    /// with; `first_poll` is when to ask it first (unless it ended already).
    pub fn adopt(
        &mut self,
        state: TaskState,
        origin: Origin,
        waiter: Option<u64>,
        first_poll: Instant,
        now: Instant,
    ) -> Next {
        let Origin {
            tool,
            arguments_digest,
            experimental,
        } = origin;
        let handle = TaskHandle::new(
            self.server.to_string(),
            state.task_id.clone(),
            tool,
            SystemTime::now(),
        )
        .ttl(state.ttl);
        if let Some(old) = self.tasks.get_mut(&state.task_id) {
            // The server gave an id it gave before: the same task (a server that answers a
            // re-sent request with its first task), so the caller waits for it too.
            if let Some(waiter) = waiter {
                old.waiters.push(waiter);
                self.waiting.insert(waiter, state.task_id);
            }
            return Next::Wait;
        }
        tracing::debug!(server = %self.server, task = %server_text(&state.task_id), tool = %handle.tool, status = %state.status, "the server runs the call as a task");
        let mut task = Task::new(handle, TaskStatus::Working, state.poll_interval, now);
        task.waiters.extend(waiter);
        task.experimental = experimental;
        let id = state.task_id.clone();
        self.writes.push(TaskWrite::Created {
            handle: task.handle.clone(),
            arguments_digest,
            poll_interval: task.poll_interval,
            followed: false,
        });
        self.tasks.insert(id.clone(), task);
        if let Some(waiter) = waiter {
            self.waiting.insert(waiter, id.clone());
        }
        self.learnt(&id, state, |_| first_poll)
    }

    /// What the server said of task `id` (a poll's answer, or a notification): `next_poll`
    /// says when to ask next, after the interval the server asks for now, should it still run.
    fn learnt(
        &mut self,
        id: &str,
        state: TaskState,
        next_poll: impl FnOnce(Option<Duration>) -> Instant,
    ) -> Next {
        let Some(task) = self.tasks.get_mut(id) else {
            return Next::Wait;
        };
        task.failed_polls = 0;
        let changed = task.status != state.status
            || task.status_message != state.status_message
            || (state.poll_interval.is_some() && task.poll_interval != state.poll_interval);
        task.status = state.status;
        task.status_message = state.status_message;
        if state.poll_interval.is_some() {
            task.poll_interval = state.poll_interval;
        }
        if changed && !task.status.is_terminal() {
            self.writes.push(TaskWrite::Status {
                task_id: id.to_owned(),
                tool: task.handle.tool.clone(),
                status: task.status,
                message: task.status_message.clone(),
                poll_interval: task.poll_interval,
            });
        }
        let next_poll = next_poll(task.poll_pace());
        if state.ttl.is_some() {
            task.handle.ttl = state.ttl;
        }
        if task.experimental {
            match state.status {
                TaskStatus::Completed | TaskStatus::Failed => {
                    // Its outcome is not in the task: `tasks/result` fetches it (one may be
                    // out already). Not asked again meanwhile.
                    task.next_poll = None;
                    if std::mem::replace(&mut task.fetching, true) {
                        return Next::Wait;
                    }
                    return Next::FetchResult;
                }
                TaskStatus::InputRequired if !task.fetching => {
                    // The revision's servers may hold their questions for a `tasks/result`
                    // (which answers once the task ended): one is asked for at once, and the
                    // task is polled on beside it.
                    task.fetching = true;
                    self.schedule(id, next_poll);
                    return Next::FetchResult;
                }
                _ => {}
            }
        }
        let outcome = match state.detail {
            Detail::Result(result) => Ok(result),
            Detail::Error(error) => Err(Error::rpc(&self.server, "tools/call", error)),
            Detail::None if state.status == TaskStatus::Cancelled => Err(Error::Cancelled {
                server: self.server.to_string(),
                method: "tools/call".into(),
                task_id: server_text(id),
                message: task.status_message.clone(),
            }),
            Detail::Input(requests) => {
                self.schedule(id, next_poll);
                let Some(task) = self.tasks.get_mut(id) else {
                    return Next::Wait;
                };
                let fresh: Vec<InputRequest> = requests
                    .into_iter()
                    .filter(|r| task.answered.insert(r.key.clone()))
                    .collect();
                if fresh.is_empty() {
                    return Next::Wait;
                }
                task.asking.extend(fresh.iter().map(|r| r.key.clone()));
                self.writes.push(TaskWrite::InputAnswered {
                    task_id: id.to_owned(),
                    keys: fresh.iter().map(|r| r.key.clone()).collect(),
                });
                return Next::Ask(fresh);
            }
            Detail::None => {
                self.schedule(id, next_poll);
                return Next::Wait;
            }
        };
        self.end(id, outcome)
    }

    /// Task `id` ended with `outcome`: it leaves the table; its callers get the outcome, or,
    /// with none waiting, it is kept.
    fn end(&mut self, id: &str, outcome: Result<Value, Error>) -> Next {
        let Some(task) = self.tasks.remove(id) else {
            return Next::Wait;
        };
        for waiter in &task.waiters {
            self.waiting.remove(waiter);
        }
        tracing::debug!(server = %self.server, task = %server_text(id), tool = %task.handle.tool, polls = task.polls, outcome = outcome.as_ref().err().map_or("ok", Error::code), "task ended");
        self.writes.push(match ended(&outcome) {
            Some((status, text)) => TaskWrite::Ended {
                task_id: id.to_owned(),
                tool: task.handle.tool.clone(),
                status,
                outcome: text,
            },
            None => TaskWrite::Forgotten {
                task_id: id.to_owned(),
                tool: task.handle.tool.clone(),
            },
        });
        if task.waiters.is_empty() {
            self.keep(task.handle.clone(), outcome.clone());
        }
        Next::Done {
            handle: task.handle,
            waiters: task.waiters,
            outcome,
        }
    }

    fn keep(&mut self, handle: TaskHandle, outcome: Result<Value, Error>) {
        if self.kept.len() >= MAX_KEPT_OUTCOMES {
            if let Some((old, _)) = self.kept.pop_front() {
                tracing::warn!(server = %self.server, task = %server_text(&old.task_id), tool = %old.tool, "the outcome of an ended task nobody asked for was forgotten: too many are kept");
            }
        }
        self.kept.push_back((handle, outcome));
    }

    /// The callers found nobody to take the outcome of a task that ended (they had left
    /// meanwhile): it is kept.
    pub fn unclaimed(&mut self, handle: TaskHandle, outcome: Result<Value, Error>) {
        self.keep(handle, outcome);
    }

    fn schedule(&mut self, id: &str, at: Instant) {
        // A task another replica polls is never asked here (a poll that was out when its
        // lease went is answered, and asks nothing more).
        if let Some(task) = self.tasks.get_mut(id).filter(|t| !t.elsewhere) {
            // Planned already (a notification that changes nothing): no second item, or a
            // server's stream of notifications would grow the heap without bound.
            if task.next_poll == Some(at) {
                return;
            }
            task.next_poll = Some(at);
            self.polls.push(Reverse((at, id.to_owned())));
        }
    }

    /// When the earliest poll is due (stale items are dropped on the way). With leases, no
    /// poll is due once they may have lapsed: the polls wait for their renewal.
    pub fn next_due(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, id))) = self.polls.peek() {
            if self.tasks.get(id).and_then(|t| t.next_poll) == Some(*at) {
                return self.leases.admits(*at).then_some(*at);
            }
            self.polls.pop();
        }
        None
    }

    /// The tasks due to be asked at `now`; each is marked as being asked.
    pub fn due(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        // When the poll goes out is what counts, not when it was due: a timer that fires late
        // (the actor was busy, a renewal blocked) finds the leases lapsed, and sends nothing.
        if !self.leases.admits(now) {
            // And none is planned until a renewal: a timer for a poll that was due before the
            // leases' end would fire again at once, for ever.
            if let Leases::Held { until } = &mut self.leases {
                *until = None;
            }
            return due;
        }
        while let Some(at) = self.next_due().filter(|at| *at <= now) {
            let Some(Reverse((_, id))) = self.polls.pop() else {
                break;
            };
            if let Some(task) = self.tasks.get_mut(&id) {
                debug_assert_eq!(task.next_poll, Some(at));
                task.next_poll = None;
                task.polls += 1;
                due.push(id);
            }
        }
        due
    }

    /// The answer to a `tasks/get` of task `id`; `next_poll` says when to ask again after the
    /// interval the server asks for, should it still run (or should this poll have failed).
    ///
    /// `legacy`: the poll went over a session-era connection, where only the experimental
    /// flavour exists (a task followed from a handle or a store is known to be one so).
    pub fn polled(
        &mut self,
        id: &str,
        answer: Result<Value, Error>,
        legacy: bool,
        next_poll: impl FnOnce(Option<Duration>) -> Instant,
    ) -> Next {
        if let Some(task) = self.tasks.get_mut(id).filter(|_| legacy) {
            task.experimental = true;
        }
        let experimental = self.tasks.get(id).is_some_and(|t| t.experimental);
        let parse = if experimental {
            tasks::parse_experimental_task
        } else {
            tasks::parse_task
        };
        let error = match answer {
            Ok(result) => match parse(&result) {
                Ok(state) if state.task_id == id => return self.learnt(id, state, next_poll),
                Ok(state) => Error::invalid_response(
                    &self.server,
                    "tasks/get",
                    format!(
                        "asked for task {}, answered with task {}",
                        server_text(id),
                        server_text(&state.task_id)
                    ),
                ),
                Err(why) => Error::invalid_response(&self.server, "tasks/get", why),
            },
            Err(error) => error,
        };
        if let Error::Rpc { code, message, .. } = &error {
            if *code == codes::INVALID_PARAMS {
                // The server does not know the task (any more): restarted without keeping
                // it, or its time to live passed. Whether the tool ran is not known.
                let tool = self
                    .tasks
                    .get(id)
                    .map(|t| t.handle.tool.clone())
                    .unwrap_or_default();
                let lost = Error::TaskLost {
                    server: self.server.to_string(),
                    tool,
                    task_id: server_text(id),
                    reason: format!("the server no longer knows it: {message}"),
                };
                tracing::warn!(server = %self.server, task = %server_text(id), error = %lost, "the server no longer knows a task");
                return self.end(id, Err(lost));
            }
        }
        if matches!(error, Error::InvalidResponse { .. }) {
            // An answer we cannot read would be read no better next time.
            tracing::warn!(server = %self.server, task = %server_text(id), error = %error, "a task's poll got an answer that is not a task; the task is given up");
            return self.end(id, Err(error));
        }
        let Some(task) = self.tasks.get_mut(id) else {
            return Next::Wait;
        };
        // Only an answer of the server's counts against the task: a poll that could not be
        // sent or heard nothing (the server unreachable for a while) says nothing of the task.
        if matches!(error, Error::Rpc { .. } | Error::HeaderMismatch { .. }) {
            task.failed_polls += 1;
        }
        if task.waiters.is_empty() && task.failed_polls >= MAX_FAILED_POLLS {
            let lost = Error::TaskLost {
                server: self.server.to_string(),
                tool: task.handle.tool.clone(),
                task_id: server_text(id),
                reason: format!("{MAX_FAILED_POLLS} polls in a row got no answer: {error}"),
            };
            return self.end(id, Err(lost));
        }
        tracing::debug!(server = %self.server, task = %server_text(id), error = %error, failed = task.failed_polls, "a task's poll failed; asking again later");
        let at = next_poll(task.poll_pace());
        self.schedule(id, at);
        Next::Wait
    }

    /// The answer to the `tasks/result` of task `id` (experimental tasks): its outcome, as the
    /// call would have been answered; or, when it could not be fetched, asked about again at
    /// `next_poll`.
    pub fn result_fetched(
        &mut self,
        id: &str,
        answer: Result<Value, Error>,
        next_poll: Instant,
    ) -> Next {
        match answer {
            Ok(result) => self.end(id, Ok(result)),
            Err(error) if !matches!(error, Error::Rpc { .. }) => {
                if let Some(task) = self.tasks.get_mut(id) {
                    task.fetching = false;
                }
                self.polled(id, Err(error), false, |_| next_poll)
            }
            // The task was seen ended: its `tasks/result` answers as the call would have, a
            // `-32602` of the tool's own included.
            Err(Error::Rpc {
                code,
                message,
                data,
                ..
            }) => {
                let error = crate::protocol::jsonrpc::RpcError {
                    code,
                    message,
                    data,
                };
                self.end(id, Err(Error::rpc(&self.server, "tools/call", error)))
            }
            Err(error) => self.polled(id, Err(error), false, |_| next_poll),
        }
    }

    /// What a notification said of a task (`notifications/tasks`, or the session era's
    /// `notifications/tasks/status` when `experimental`): taken as a poll's answer would be,
    /// for a task of ours of that flavour (anything else is ignored). A status that changes
    /// nothing for us leaves the next poll where it was; while a poll (or an update, or a
    /// `tasks/result`) is out, only an end or a question is taken: that answer says the rest.
    pub fn notified(
        &mut self,
        state: TaskState,
        experimental: bool,
        (now, floor): (Instant, Duration),
        next_poll: impl FnOnce(Option<Duration>) -> Instant,
    ) -> Next {
        let id = state.task_id.clone();
        let Some(task) = self
            .tasks
            .get_mut(&id)
            .filter(|t| t.experimental == experimental && !t.elsewhere)
        else {
            tracing::debug!(server = %self.server, task = %server_text(&id), "a notification of a task not polled here; ignored");
            return Next::Wait;
        };
        let settles = state.status.is_terminal() || state.status == TaskStatus::InputRequired;
        let message_only = !settles
            && state.status == task.status
            && state
                .poll_interval
                .is_none_or(|i| task.poll_interval == Some(i))
            && state.status_message != task.status_message;
        if message_only {
            if task
                .message_recorded
                .is_some_and(|at| now.saturating_duration_since(at) < floor)
            {
                // Shown as it is; recorded with the next change.
                task.status_message = state.status_message;
                return Next::Wait;
            }
            task.message_recorded = Some(now);
        }
        match task.next_poll {
            Some(at) => self.learnt(&id, state, |_| at),
            None if settles => self.learnt(&id, state, next_poll),
            None => Next::Wait,
        }
    }

    /// The running tasks a listen should name (the oldest `max` that are the extension's, not
    /// the session era's), oldest first.
    pub fn to_name(&self, max: usize) -> Vec<String> {
        let mut named: Vec<(Instant, &String)> = self
            .tasks
            .iter()
            .filter(|(_, t)| !t.experimental && !t.elsewhere)
            .map(|(id, t)| (t.since, id))
            .collect();
        named.sort();
        named
            .into_iter()
            .take(max)
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Whether a running task a listen should name is not in `named`.
    pub fn any_unnamed(&self, named: &BTreeSet<String>) -> bool {
        self.tasks
            .iter()
            .any(|(id, t)| !t.experimental && !t.elsewhere && !named.contains(id))
    }

    /// The tasks notifications tell of are now `covering`. One that is no longer told of is
    /// asked at its own pace again (at `next_poll`, if that is sooner than planned): what
    /// happened to it meanwhile is learnt no later than without notifications.
    pub fn cover(
        &mut self,
        covering: &BTreeSet<String>,
        mut next_poll: impl FnMut(Option<Duration>) -> Instant,
    ) {
        for (id, task) in &mut self.tasks {
            let covered = !task.experimental && !task.elsewhere && covering.contains(id);
            if task.covered && !covered {
                if let Some(planned) = task.next_poll {
                    let sooner = next_poll(task.poll_interval);
                    if sooner < planned {
                        task.next_poll = Some(sooner);
                        self.polls.push(Reverse((sooner, id.clone())));
                    }
                }
            }
            task.covered = covered;
        }
    }

    /// The `tasks/update` of task `id` was answered (or failed: its keys stay answered, never
    /// sent twice); the task is asked again at `next_poll`.
    pub fn updated(&mut self, id: &str, answer: Result<(), Error>, next_poll: Instant) {
        if let Err(error) = answer {
            tracing::warn!(server = %self.server, task = %server_text(id), error = %error, "the answers to a task's input requests may not have reached the server; they are not sent again");
        }
        if self.tasks.get(id).is_some_and(|t| t.next_poll.is_none()) {
            self.schedule(id, next_poll);
        }
    }

    /// The application could not answer what task `id` asked: the task cannot go on for us.
    /// It stays on the server (it may be answered there otherwise); its callers are told why.
    pub fn input_failed(&mut self, id: &str, error: Error) -> Next {
        self.end(id, Err(error))
    }

    /// The handle of running task `id`.
    pub fn handle(&self, id: &str) -> Option<&TaskHandle> {
        self.tasks.get(id).map(|t| &t.handle)
    }

    /// Caller `waiter` waits for running task `id` too; false if no such task runs here.
    pub fn wait_for(&mut self, id: &str, waiter: u64) -> bool {
        let Some(task) = self.tasks.get_mut(id) else {
            return false;
        };
        task.waiters.push(waiter);
        self.waiting.insert(waiter, id.to_owned());
        true
    }

    /// Follows task `handle`, which this table did not know (a handle kept across a restart):
    /// asked at `now`, its status unknown until then (taken as working).
    pub fn follow(&mut self, handle: TaskHandle, waiter: u64, now: Instant) {
        let id = handle.task_id.clone();
        let mut task = Task::new(handle, TaskStatus::Working, None, now);
        task.waiters.push(waiter);
        self.writes.push(TaskWrite::Created {
            handle: task.handle.clone(),
            arguments_digest: String::new(),
            poll_interval: None,
            followed: true,
        });
        self.tasks.insert(id.clone(), task);
        self.waiting.insert(waiter, id.clone());
        self.schedule(&id, now);
    }

    /// Follows running task `handle` that a store kept (no caller waits yet), asking at `now`.
    pub fn restore_running(
        &mut self,
        handle: TaskHandle,
        status: TaskStatus,
        poll_interval: Option<Duration>,
        answered: BTreeSet<String>,
        now: Instant,
    ) {
        let id = handle.task_id.clone();
        if let Some(here) = self.tasks.get_mut(&id) {
            // Followed here for its callers while another replica polled it: its lease is
            // ours now (taken over), so it is asked here, from what the store knows.
            if here.elsewhere {
                here.elsewhere = false;
                here.status = status;
                here.poll_interval = poll_interval.or(here.poll_interval);
                here.answered.extend(answered);
                self.schedule(&id, now);
            }
            return;
        }
        let mut task = Task::new(handle, status, poll_interval, now);
        task.answered = answered;
        self.tasks.insert(id.clone(), task);
        self.schedule(&id, now);
    }

    /// The store has leases (replicas share it): from now on polls go out only while this
    /// replica's leases hold.
    pub fn lease_tasks(&mut self) {
        if matches!(self.leases, Leases::None) {
            self.leases = Leases::Held { until: None };
        }
    }

    /// The leases were renewed: they hold until `until`.
    pub fn leases_hold_until(&mut self, until: Instant) {
        if let Leases::Held { until: held } = &mut self.leases {
            *held = Some(until);
        }
    }

    /// Until when the leases hold: `None` without leases, `Some(None)` before the first
    /// renewal.
    pub fn leases_until(&self) -> Option<Option<Instant>> {
        match self.leases {
            Leases::None => None,
            Leases::Held { until } => Some(until),
        }
    }

    /// Whether another replica polls task `id`.
    pub fn is_elsewhere(&self, id: &str) -> bool {
        self.tasks.get(id).is_some_and(|t| t.elsewhere)
    }

    /// The running tasks polled here (their lease is this replica's).
    pub fn polled_here(&self) -> Vec<String> {
        self.tasks
            .iter()
            .filter(|(_, t)| !t.elsewhere)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The tasks followed here for their callers while another replica polls them. Those
    /// nobody here waits for any more are forgotten first: the other replica follows them.
    pub fn followed_elsewhere(&mut self) -> Vec<String> {
        self.tasks
            .retain(|_, t| !(t.elsewhere && t.waiters.is_empty()));
        self.tasks
            .iter()
            .filter(|(_, t)| t.elsewhere)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Another replica holds task `id`'s lease (it took it over, or held it when this one was
    /// asked to follow the task): it is not asked here any more. With nobody here waiting
    /// for it, it is forgotten.
    pub fn polled_elsewhere(&mut self, id: &str) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        if task.waiters.is_empty() {
            self.tasks.remove(id);
            return;
        }
        task.elsewhere = true;
        task.next_poll = None;
        task.covered = false;
    }

    /// Task `id` could not be recorded (see `Session::task_unrecorded`): it leaves the table,
    /// with the callers that waited for it.
    pub fn unrecorded(&mut self, id: &str) -> Option<(TaskHandle, Vec<u64>)> {
        let task = self.tasks.remove(id)?;
        for waiter in &task.waiters {
            self.waiting.remove(waiter);
        }
        Some((task.handle, task.waiters))
    }

    /// Task `id`, which another replica polled, ended there with `outcome` (an error for one
    /// whose outcome is gone): it leaves the table for its callers. Nothing is recorded: the
    /// store has its end already.
    pub fn ended_elsewhere(&mut self, id: &str, outcome: Result<Value, Error>) -> Next {
        match self.tasks.get(id) {
            Some(task) if task.elsewhere => {}
            _ => return Next::Wait,
        }
        let Some(task) = self.tasks.remove(id) else {
            return Next::Wait;
        };
        for waiter in &task.waiters {
            self.waiting.remove(waiter);
        }
        Next::Done {
            handle: task.handle,
            waiters: task.waiters,
            outcome,
        }
    }

    /// The application's answers to task `id`'s questions are being sent.
    pub fn answers_sent(&mut self, id: &str) {
        if let Some(task) = self.tasks.get_mut(id) {
            task.asking.clear();
        }
    }

    /// Hands the tasks to the server's next generation, with the outcomes nobody took (what
    /// this table delivered it still knows). A task whose questions the application is being
    /// asked stays unless `even_asking` (this generation ends: the answer would be lost),
    /// and then those questions count as not answered, for the next generation to ask.
    pub fn hand_over(&mut self, even_asking: bool) -> TaskHandover {
        let moving: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, t)| even_asking || t.asking.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        let mut tasks = Vec::with_capacity(moving.len());
        let mut waiting = HashMap::new();
        for id in moving {
            let Some(mut task) = self.tasks.remove(&id) else {
                continue;
            };
            let asking = std::mem::take(&mut task.asking);
            task.answered.retain(|key| !asking.contains(key));
            for waiter in &task.waiters {
                self.waiting.remove(waiter);
                waiting.insert(*waiter, id.clone());
            }
            tasks.push((id, task));
        }
        if self.tasks.is_empty() {
            self.polls.clear();
        }
        TaskHandover {
            tasks,
            waiting,
            kept: std::mem::take(&mut self.kept),
            delivered: self.delivered.clone(),
            leases: self.leases,
        }
    }

    /// The tasks of `handover` cannot be followed here (this generation reaches another
    /// server): each caller waiting for one is given the error it gets, with its key.
    pub fn refuse(&self, handover: TaskHandover) -> Vec<(u64, Error)> {
        let mut refused = Vec::new();
        for (id, task) in handover.tasks {
            for waiter in task.waiters {
                refused.push((
                    waiter,
                    Error::TaskLost {
                        server: self.server.to_string(),
                        tool: task.handle.tool.clone(),
                        task_id: server_text(&id),
                        reason: "its server was replaced by another before the task ended".into(),
                    },
                ));
            }
        }
        refused
    }

    /// Takes the tasks another generation of the server handed over. Each is asked when it
    /// was due there, or at `now` if a poll, an update or a `tasks/result` of it was out on the
    /// old connection (its answer goes to the old table, which no longer knows the task). A
    /// task this table follows already (restored from the store meanwhile) keeps its state
    /// here and takes the other's callers and answered input keys.
    pub fn take_over(&mut self, handover: TaskHandover, now: Instant) {
        self.leases = self.leases.earliest(handover.leases);
        for (id, mut task) in handover.tasks {
            if let Some(here) = self.tasks.get_mut(&id) {
                here.waiters.append(&mut task.waiters);
                here.answered.append(&mut task.answered);
                continue;
            }
            let at = task.next_poll.take().unwrap_or(now);
            task.covered = false;
            task.fetching = false;
            task.failed_polls = 0;
            self.tasks.insert(id.clone(), task);
            self.schedule(&id, at);
        }
        self.waiting.extend(handover.waiting);
        for (handle, outcome) in handover.kept {
            if !self.is_kept(&handle.task_id) {
                self.keep(handle, outcome);
            }
        }
        for id in handover.delivered {
            if !self.was_delivered(&id) {
                if self.delivered.len() >= MAX_KEPT_OUTCOMES * 4 {
                    self.delivered.pop_front();
                }
                self.delivered.push_back(id);
            }
        }
    }

    /// Whether task `id`'s outcome is kept.
    pub fn is_kept(&self, id: &str) -> bool {
        self.kept.iter().any(|(h, _)| h.task_id == id)
    }

    /// Caller `waiter` stopped waiting (its deadline passed, or it left). The task runs on.
    /// Returns the task's handle, for what the caller is told.
    pub fn waiter_left(&mut self, waiter: u64) -> Option<TaskHandle> {
        let id = self.waiting.remove(&waiter)?;
        let task = self.tasks.get_mut(&id)?;
        task.waiters.retain(|w| *w != waiter);
        Some(task.handle.clone())
    }

    /// Whether caller `waiter` waits for a task.
    pub fn is_waiting(&self, waiter: u64) -> bool {
        self.waiting.contains_key(&waiter)
    }

    /// The poll interval task `id` asked for last.
    pub fn poll_interval(&self, id: &str) -> Option<Duration> {
        self.tasks.get(id).and_then(|t| t.poll_interval)
    }

    /// The outcome kept for task `id`, taken (it is delivered once).
    pub fn take_kept(&mut self, id: &str) -> Option<Result<Value, Error>> {
        let at = self.kept.iter().position(|(h, _)| h.task_id == id)?;
        let outcome = self.kept.remove(at).map(|(_, outcome)| outcome)?;
        self.delivered(id);
        Some(outcome)
    }

    /// Task `id`'s outcome went to a caller.
    pub fn delivered(&mut self, id: &str) {
        if self.delivered.len() >= MAX_KEPT_OUTCOMES * 4 {
            self.delivered.pop_front();
        }
        self.delivered.push_back(id.to_owned());
        self.writes.push(TaskWrite::Delivered {
            task_id: id.to_owned(),
        });
    }

    /// Whether task `id`'s outcome went to a caller (lately: the last thousand are known).
    pub fn was_delivered(&self, id: &str) -> bool {
        self.delivered.iter().any(|d| d == id)
    }

    /// The running tasks, oldest first.
    pub fn running_infos(&self, now: Instant) -> Vec<crate::tasks::TaskInfo> {
        let mut running: Vec<&Task> = self.tasks.values().collect();
        running.sort_by_key(|t| t.since);
        running
            .into_iter()
            .map(|t| {
                let mut info = crate::tasks::TaskInfo::new(t.handle.clone(), t.status);
                info.status_message = t.status_message.clone();
                info.poll_interval = t.poll_interval;
                info.age = Some(now.saturating_duration_since(t.since));
                info.next_poll_in = t.next_poll.map(|at| at.saturating_duration_since(now));
                info.elsewhere = t.elsewhere;
                info
            })
            .collect()
    }

    /// What is known of the tasks: those running, oldest first, then those ended with their
    /// outcome kept, oldest first.
    pub fn infos(&self, now: Instant) -> Vec<crate::tasks::TaskInfo> {
        let running = self.running_infos(now).into_iter();
        let ended = self.kept.iter().map(|(handle, outcome)| {
            let status = match outcome {
                Ok(_) => TaskStatus::Completed,
                Err(Error::Cancelled { .. }) => TaskStatus::Cancelled,
                Err(_) => TaskStatus::Failed,
            };
            crate::tasks::TaskInfo::new(handle.clone(), status)
        });
        running.chain(ended).collect()
    }
}

/// The status and the outcome's JSON text a store keeps for a task that ended with
/// `outcome`; `None` for a task that is lost (nothing to keep).
fn ended(outcome: &Result<Value, Error>) -> Option<(TaskStatus, String)> {
    match outcome {
        Ok(result) => Some((TaskStatus::Completed, result.to_string())),
        Err(Error::Rpc {
            code,
            message,
            data,
            ..
        }) => {
            let mut error = serde_json::json!({"code": code, "message": message});
            if let Some(data) = data {
                error["data"] = data.clone();
            }
            Some((TaskStatus::Failed, error.to_string()))
        }
        Err(Error::Cancelled { message, .. }) => Some((
            TaskStatus::Cancelled,
            serde_json::json!({"statusMessage": message}).to_string(),
        )),
        Err(_) => None,
    }
}

/// The outcome a store kept for a task that ended (`Ended`'s), as a caller gets it.
pub(crate) fn outcome_of(
    server: &str,
    task_id: &str,
    status: TaskStatus,
    text: &str,
) -> Result<Value, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Error::invalid_response(
            server,
            "tasks/get",
            format!("a kept outcome does not parse: {e}"),
        )
    })?;
    match status {
        TaskStatus::Completed => Ok(value),
        TaskStatus::Cancelled => Err(Error::Cancelled {
            server: server.to_owned(),
            method: "tools/call".into(),
            task_id: server_text(task_id),
            message: value
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(server_text),
        }),
        _ => {
            let error = crate::protocol::jsonrpc::RpcError {
                code: value.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                message: value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                data: value.get("data").cloned(),
            };
            Err(Error::rpc(server, "tools/call", error))
        }
    }
}

// ----- the session's part: polls and updates as its own calls -----

impl Session {
    /// Call `key` was answered with task `state`: it waits for the task's end, which the
    /// session polls for.
    pub(super) fn task_created(&mut self, key: u64, state: TaskState, now: Instant) {
        self.task_created_as(key, state, false, now)
    }

    /// As [`Session::task_created`], for a task of either flavour.
    fn task_created_as(&mut self, key: u64, state: TaskState, experimental: bool, now: Instant) {
        let start_only = self.calls.starts_task(key);
        let digest = self
            .calls
            .arguments_of(key)
            .map(|args| crate::tasks::arguments_digest(&args))
            .unwrap_or_default();
        let Some(tool) = self.calls.hold_for_task(key) else {
            return;
        };
        let first = self.next_poll(state.poll_interval, now);
        let id = state.task_id.clone();
        if start_only {
            // The caller wants the handle now, and will await the task (or not) later: once
            // the store has it.
            let origin = Origin {
                tool,
                arguments_digest: digest,
                experimental,
            };
            let next = self.tasks.adopt(state, origin, None, first, now);
            if let Some(handle) = self.tasks.handle(&id).cloned() {
                self.flush_task_writes();
                self.commands
                    .push_back(Command::Resume(Resumption::Started { key, handle }));
                // What its first answer asks for (input, its outcome) is done as for any.
                self.on_task_next(&id, next, now);
                self.listen_for_tasks(now);
                return self.hand_over_tasks_learnt(now);
            } else if let Next::Done { outcome, .. } = next {
                // It ended in its first answer: the result is the call's, not kept for later.
                self.tasks.take_kept(&id);
                self.flush_task_writes();
                self.commands
                    .push_back(Command::Resume(Resumption::Waiters {
                        task_id: id.clone(),
                        waiters: vec![key],
                        outcome,
                    }));
            }
            return self.rearm_task_polls(now);
        }
        let origin = Origin {
            tool,
            arguments_digest: digest,
            experimental,
        };
        let next = self.tasks.adopt(state, origin, Some(key), first, now);
        self.on_task_next(&id, next, now);
        self.listen_for_tasks(now);
        self.hand_over_tasks_learnt(now);
    }

    /// Waits for the end of task `handle` (`AwaitTask`), within `timeout`, answered on
    /// `reply`: at once with an outcome kept for it, or when the task ends. A task this
    /// session does not follow (a handle kept across a restart) is followed from now on, and
    /// asked at once.
    pub fn await_task(
        &mut self,
        handle: TaskHandle,
        timeout: Option<Duration>,
        reply: Rc<dyn Reply>,
        now: Instant,
    ) {
        if let Some(outcome) = self.tasks.take_kept(&handle.task_id) {
            self.flush_task_writes();
            self.commands.push_back(Command::Resume(Resumption::Kept {
                task_id: handle.task_id.clone(),
                reply,
                outcome,
            }));
            return;
        }
        if self.tasks.was_delivered(&handle.task_id) {
            // Asking the server again could hand the outcome out a second time.
            let error = Error::TaskLost {
                server: self.name.to_string(),
                tool: handle.tool.clone(),
                task_id: server_text(&handle.task_id),
                reason: "its outcome was delivered already, to an earlier AwaitTask".into(),
            };
            return reply.answer(&self.name, Err(error));
        }
        let mut call = CallRequest::of_value(self.name.to_string(), "tools/call", None);
        call.tool = Some(handle.tool.clone());
        call.options.timeout = timeout;
        // A waiter takes a place among the calls, as any caller does.
        let situation = super::situation_of(&self.machine, &self.last_error);
        if let Err(e) = self.calls.admit(&call, &situation) {
            return reply.answer(&self.name, Err(e));
        }
        let (key, deadline) = self.calls.hold_waiter(call, Replier::Caller(reply), now);
        self.arm_deadline(key, deadline);
        let sweep = || saturating_add(now, super::CALLER_SWEEP);
        if self.timers.caller_sweep_at(sweep) {
            self.moved_to(sweep());
        }
        if !self.tasks.wait_for(&handle.task_id, key) {
            // Not followed here: follow it, asking the server at once.
            self.tasks.follow(handle, key, now);
        }
        self.flush_task_writes();
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
    }

    /// What is known of this server's tasks, for `ListTasks` and the status.
    pub fn task_infos(&self, now: Instant) -> Vec<crate::tasks::TaskInfo> {
        self.tasks.infos(now)
    }

    /// When to ask a task next, after `interval` (what the server asked for last).
    fn next_poll(&mut self, interval: Option<Duration>, now: Instant) -> Instant {
        poll_at(&self.settings, &mut self.rng, interval, now)
    }

    /// Carries out what the table decided about task `id`, and re-arms the polls' timer.
    pub(super) fn on_task_next(&mut self, id: &str, next: Next, now: Instant) {
        match next {
            Next::Wait => {}
            Next::FetchResult => self.fetch_result(id, now),
            Next::Ask(requests) => {
                // Recorded as answered before anyone is asked (see `store_refused`).
                self.flush_task_writes();
                self.commands.push_back(Command::AskInput(InputAsk {
                    requests,
                    asked_by: AskedBy::Task {
                        task_id: id.to_owned(),
                    },
                }));
            }
            Next::Done {
                handle,
                waiters,
                outcome,
            } => {
                // (With no waiter at all, the table kept the outcome itself.) Recorded as
                // delivered before it is: a crash in between loses it rather than delivers it
                // twice.
                let waiters: Vec<u64> = waiters
                    .into_iter()
                    .filter(|w| self.calls.has_caller(*w))
                    .collect();
                if waiters.is_empty() {
                    if self.tasks.handle(id).is_none() && !self.tasks.is_kept(id) {
                        self.tasks.unclaimed(handle, outcome);
                    }
                } else {
                    self.tasks.delivered(id);
                    self.flush_task_writes();
                    self.commands
                        .push_back(Command::Resume(Resumption::Waiters {
                            task_id: id.to_owned(),
                            waiters,
                            outcome,
                        }));
                }
            }
        }
        self.flush_task_writes();
        self.rearm_task_polls(now);
    }

    /// Hands what the store must record to the driver, before anything that follows; tells
    /// subscribers and the metrics of each change of status it records.
    pub(super) fn flush_task_writes(&mut self) {
        let writes = self.tasks.take_writes();
        if writes.is_empty() {
            return;
        }
        for write in writes {
            let changed = match &write {
                TaskWrite::Created { handle, .. } => {
                    Some((&handle.task_id, &handle.tool, TaskStatus::Working, None))
                }
                TaskWrite::Status {
                    task_id,
                    tool,
                    status,
                    message,
                    ..
                } => Some((task_id, tool, *status, message.clone())),
                TaskWrite::Ended {
                    task_id,
                    tool,
                    status,
                    ..
                } => {
                    crate::telemetry::task_ended(&self.name, status.as_str());
                    Some((task_id, tool, *status, None))
                }
                TaskWrite::Forgotten { task_id, tool } => {
                    crate::telemetry::task_ended(&self.name, "lost");
                    Some((
                        task_id,
                        tool,
                        TaskStatus::Failed,
                        Some("the server no longer knows it: its outcome is unknown".to_owned()),
                    ))
                }
                TaskWrite::InputAnswered { .. } | TaskWrite::Delivered { .. } => None,
            };
            if let Some((task_id, tool, status, message)) = changed {
                let event = ServerEvent::TaskChanged {
                    server: self.name.to_string(),
                    task_id: server_text(task_id),
                    tool: tool.clone(),
                    status,
                    message,
                };
                self.commands.push_back(Command::Emit(event));
            }
            self.commands.push_back(Command::Persist(write));
        }
        crate::telemetry::tasks_in_flight(&self.name, self.tasks.running());
    }

    /// Carries on after the store recorded what came before (see [`Command::Resume`]).
    pub fn resume(&mut self, resumption: Resumption, now: Instant) {
        match resumption {
            Resumption::Waiters {
                waiters, outcome, ..
            } => {
                for waiter in waiters {
                    let answer = outcome.clone().map(Payload::Parsed);
                    self.calls.answer_call(waiter, answer);
                }
            }
            Resumption::Started { key, handle } => {
                self.calls
                    .answer_call(key, Ok(Payload::Task(Box::new(handle))));
            }
            Resumption::Kept { reply, outcome, .. } => {
                reply.answer(&self.name, outcome.map(Payload::Parsed));
            }
        }
        self.act_on_internal(now);
    }

    /// The task store refused `write` (part of it): another follower of the task — a second
    /// generation of this server during a replacement, another process on the same store —
    /// recorded it first. What depended on it is not done here: a task whose lease another
    /// replica holds is not polled here, input keys it answers are not asked again, an
    /// outcome it took is not delivered again. The commands waiting behind the
    /// write are changed before the driver carries them out.
    pub fn store_refused(&mut self, write: TaskWrite, now: Instant) {
        match write {
            TaskWrite::Created { handle, .. } => self.polled_elsewhere(&handle.task_id, now),
            TaskWrite::InputAnswered { task_id, keys } => {
                tracing::info!(server = %self.name, task = %server_text(&task_id), keys = keys.len(), "another follower of the task answers these input requests");
                self.commands.retain_mut(|command| match command {
                    Command::AskInput(ask) if ask.is_for_task(&task_id) => {
                        ask.requests.retain(|r| !keys.contains(&r.key));
                        !ask.requests.is_empty()
                    }
                    _ => true,
                });
            }
            TaskWrite::Delivered { task_id } => {
                tracing::info!(server = %self.name, task = %server_text(&task_id), "another follower of the task delivered its outcome");
                for command in self.commands.iter_mut() {
                    if let Command::Resume(
                        Resumption::Waiters {
                            task_id: of,
                            outcome,
                            ..
                        }
                        | Resumption::Kept {
                            task_id: of,
                            outcome,
                            ..
                        },
                    ) = command
                    {
                        if *of == task_id {
                            *outcome = Err(Error::TaskLost {
                                server: self.name.to_string(),
                                tool: String::new(),
                                task_id: server_text(&task_id),
                                reason: "its outcome was delivered already, by another \
                                         follower of the task"
                                    .into(),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The task store shared by the replicas could not record new task `task_id` (the
    /// database is unreachable): it is not followed, since this replica polls only while its
    /// leases hold and no other replica knows the task. Its callers are answered at once,
    /// `TaskLost` (the task may run on the server; its outcome is unknown to us), rather than
    /// at their deadline; a `StartTask` waiting for the record is answered so too.
    pub fn task_unrecorded(
        &mut self,
        task_id: &str,
        error: &crate::tasks::TaskStoreError,
        now: Instant,
    ) {
        let Some((handle, mut callers)) = self.tasks.unrecorded(task_id) else {
            return;
        };
        self.commands.retain(|command| match command {
            Command::Resume(Resumption::Started { key, handle }) if handle.task_id == task_id => {
                callers.push(*key);
                false
            }
            _ => true,
        });
        crate::telemetry::task_ended(&self.name, "lost");
        for caller in callers {
            let error = Error::TaskLost {
                server: self.name.to_string(),
                tool: handle.tool.clone(),
                task_id: server_text(task_id),
                reason: format!(
                    "the task store shared by the replicas could not record it, so it is not \
                     followed: {error}"
                ),
            };
            self.calls.answer_call(caller, Err(error));
        }
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
    }

    /// Follows the tasks a store kept for this server (after a restart of this process): a
    /// running one is asked at once, an ended one's outcome waits for whoever awaits it.
    pub fn restore_tasks(&mut self, tasks: Vec<Restored>, now: Instant) {
        for task in tasks {
            match task {
                Restored::Running {
                    handle,
                    status,
                    poll_interval,
                    answered,
                } => self
                    .tasks
                    .restore_running(handle, status, poll_interval, answered, now),
                Restored::Ended { handle, outcome } => self.tasks.unclaimed(handle, outcome),
            }
        }
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
    }

    pub(super) fn rearm_task_polls(&mut self, _now: Instant) {
        let at = self.tasks.next_due();
        self.timers.task_polls(at);
        if let Some(at) = at {
            self.moved_to(at);
        }
    }

    /// Asks every task that is due how it is doing (`tasks/get`).
    pub(super) fn poll_due_tasks(&mut self, now: Instant) {
        for task_id in self.tasks.due(now) {
            crate::telemetry::task_polled(&self.name);
            let params = tasks::task_params(&task_id);
            let call = self.own_call("tasks/get", params, RetryPolicy::IfIdempotent);
            self.open_call(call, Replier::Session(Internal::TaskPoll { task_id }), now);
        }
        self.rearm_task_polls(now);
    }

    /// A request of the session's own about a task, within the call timeout.
    fn own_call(&self, method: &'static str, params: Value, retry: RetryPolicy) -> CallRequest {
        let mut call = CallRequest::of_value(self.name.to_string(), method, Some(&params));
        call.options = RequestOptions {
            timeout: Some(self.settings.call_timeout),
            retry,
            ..RequestOptions::default()
        };
        call
    }

    /// The answer to a poll of task `task_id`.
    pub(super) fn task_polled(
        &mut self,
        task_id: String,
        outcome: Result<Payload, Error>,
        now: Instant,
    ) {
        let answer = outcome.and_then(|payload| payload_value(&self.name, payload));
        let (settings, rng) = (&self.settings, &mut self.rng);
        let next_poll = |interval| poll_at(settings, rng, interval, now);
        let legacy = self
            .live
            .as_ref()
            .is_some_and(|l| l.wire.era() == Era::Legacy);
        let next = self.tasks.polled(&task_id, answer, legacy, next_poll);
        self.on_task_next(&task_id, next, now);
    }

    /// A notification of a task's status (`notifications/tasks`, or the session era's
    /// `notifications/tasks/status` when `experimental`): learnt as a poll's answer is.
    pub(super) fn on_task_notified(
        &mut self,
        experimental: bool,
        params: Option<Value>,
        now: Instant,
    ) {
        let parse = if experimental {
            tasks::parse_experimental_task
        } else {
            tasks::parse_task
        };
        let state = match params.as_ref().map(parse) {
            Some(Ok(state)) => state,
            Some(Err(why)) => {
                tracing::warn!(server = %self.name, why = %why, "a task notification that is no task; skipped");
                return crate::telemetry::message_skipped(&self.name, "invalid_task");
            }
            None => {
                tracing::warn!(server = %self.name, "a task notification without params; skipped");
                return crate::telemetry::message_skipped(&self.name, "invalid_task");
            }
        };
        let id = state.task_id.clone();
        let (settings, rng) = (&self.settings, &mut self.rng);
        let floor = settings.task_poll_floor;
        let next = self
            .tasks
            .notified(state, experimental, (now, floor), |interval| {
                poll_at(settings, rng, interval, now)
            });
        self.on_task_next(&id, next, now);
    }

    /// Whether listens on the current connection name tasks: the extension declared on both
    /// sides, the 2026-07-28 revision, and the server has not refused them.
    fn names_tasks(&self) -> bool {
        self.settings.tasks
            && self
                .era
                .negotiated()
                .is_some_and(|n| n.era == Era::Modern && tasks::offered(&n.capabilities))
            && self
                .live
                .as_ref()
                .is_some_and(|l| l.wire.era() == Era::Modern && l.listen.takes_tasks())
    }

    /// The tasks a listen opened now names.
    pub(super) fn tasks_to_name(&self) -> Vec<String> {
        if self.names_tasks() {
            self.tasks.to_name(super::listen::MAX_TASK_IDS)
        } else {
            Vec::new()
        }
    }

    /// Tasks were learnt: a listen naming them replaces the current one, unless it waits for
    /// its acknowledgement (then that does), a reopening is armed already (it names them), or
    /// the listen it would open asks for what the current one does (as many as it takes).
    pub(super) fn listen_for_tasks(&mut self, now: Instant) {
        if !self.names_tasks() {
            return;
        }
        let tasks = &self.tasks;
        let Some(live) = self.live.as_mut() else {
            return;
        };
        if self.timers.listen_reopen_armed(live.seq)
            || !live.listen.grows(|named| tasks.any_unnamed(named))
        {
            return;
        }
        let filter = self.listen_filter();
        if self.live.as_ref().and_then(|l| l.listen.filter()) == filter.as_ref() {
            return;
        }
        self.open_listen(None, now);
    }

    /// The tasks notifications tell of changed (a listen acknowledged, replaced, ended or
    /// gone with its connection): each one's polls keep pace with it.
    pub(super) fn sync_task_coverage(&mut self, now: Instant) {
        let none = BTreeSet::new();
        let covering = self.live.as_ref().map_or(&none, |l| l.listen.covering());
        let (settings, rng) = (&self.settings, &mut self.rng);
        self.tasks
            .cover(covering, |interval| poll_at(settings, rng, interval, now));
        self.rearm_task_polls(now);
    }

    /// Fetches an experimental task's outcome (`tasks/result`): it answers once the task
    /// ended, so it may wait as long as the task lives (its time to live, or an hour).
    fn fetch_result(&mut self, task_id: &str, now: Instant) {
        // The replica that holds the lease fetches it (an answer to a poll sent before the
        // lease went elsewhere asks for it too).
        if self.tasks.is_elsewhere(task_id) {
            return;
        }
        let params = tasks::task_params(task_id);
        let mut call = self.own_call("tasks/result", params, RetryPolicy::Always);
        let lives = self.tasks.handle(task_id).and_then(|h| h.ttl);
        call.options.timeout = Some(lives.unwrap_or(Duration::from_secs(3600)));
        let task_id = task_id.to_owned();
        self.open_call(
            call,
            Replier::Session(Internal::TaskResult { task_id }),
            now,
        );
    }

    /// The answer to the `tasks/result` of task `task_id`.
    pub(super) fn task_result_fetched(
        &mut self,
        task_id: String,
        outcome: Result<Payload, Error>,
        now: Instant,
    ) {
        let answer = outcome.and_then(|payload| payload_value(&self.name, payload));
        let next_poll = self.next_poll(self.tasks.poll_interval(&task_id), now);
        let next = self.tasks.result_fetched(&task_id, answer, next_poll);
        self.on_task_next(&task_id, next, now);
    }

    /// Sends a session-era `tools/call` task-augmented (`params.task`, the 2025-11-25
    /// revision's experimental tasks) when the server takes them for tools and the tool says it
    /// may run as one (`execution.taskSupport`): its answer may then be a task, polled as the
    /// extension's are.
    pub(super) fn augment_for_tasks(&mut self, call: &mut CallRequest) {
        let Some(negotiated) = self.era.negotiated().filter(|n| n.era == Era::Legacy) else {
            return;
        };
        if !tasks::experimental_tool_tasks(negotiated.capabilities.object()) {
            return;
        }
        let Some(params) = call.params.as_ref() else {
            return;
        };
        let name = match &call.tool {
            Some(tool) => Some(tool.clone()),
            None => params.name().map(|n| n.into_owned()),
        };
        let allows = name.is_some_and(|name| {
            self.tools
                .list()
                .iter()
                .any(|t| t.name == name && t.task_support().allows_tasks())
        });
        if !allows {
            return;
        }
        let mut value = params.to_value();
        if let Value::Object(map) = &mut value {
            map.entry("task")
                .or_insert_with(|| Value::Object(Map::new()));
            call.params = Some(super::request::Params::of_value(&value));
            call.options.task_augmented = true;
        }
    }

    /// The answer to a task-augmented session-era `tools/call`: a `CreateTaskResult` (its
    /// `task`), or the tool's result (a server may answer at once).
    pub(super) fn on_augmented_response(&mut self, id: &Id, result: RawResult, now: Instant) {
        let call = id
            .as_ours()
            .and_then(|wire_id| self.calls.written_call(wire_id))
            .map(|(key, _)| key);
        let (Some(key), Ok(value)) = (call, result.to_value()) else {
            if let Some(reparsed) = self.calls.on_raw_response(id, result) {
                self.on_reparsed(reparsed, now);
            }
            return;
        };
        match value.get("task") {
            Some(task) if value.get("content").is_none() => {
                match tasks::parse_experimental_task(task) {
                    Ok(state) => self.task_created_as(key, state, true, now),
                    Err(why) => {
                        let error = Error::invalid_response(&self.name, "tools/call", why);
                        self.calls.fail_call(key, error);
                    }
                }
            }
            _ => self.calls.on_response(id, value),
        }
    }

    /// Sends the application's answers to task `task_id`'s input requests (`tasks/update`).
    /// Not re-sent after a lost connection: an input key is answered at most once.
    pub(super) fn update_task(
        &mut self,
        task_id: String,
        responses: Map<String, Value>,
        now: Instant,
    ) {
        let params = tasks::update_params(&task_id, responses);
        let call = self.own_call("tasks/update", params, RetryPolicy::Never);
        self.open_call(
            call,
            Replier::Session(Internal::TaskUpdate { task_id }),
            now,
        );
    }

    /// The answer to a `tasks/update` of task `task_id`: it is asked again soon.
    pub(super) fn task_updated(
        &mut self,
        task_id: String,
        outcome: Result<Payload, Error>,
        now: Instant,
    ) {
        let next_poll = self.next_poll(self.tasks.poll_interval(&task_id), now);
        self.tasks.updated(&task_id, outcome.map(|_| ()), next_poll);
        self.rearm_task_polls(now);
    }
}

/// When to ask a task next, after `interval` (what the server asked for last), within the
/// settings' bounds.
fn poll_at(
    settings: &Settings,
    rng: &mut StdRng,
    interval: Option<Duration>,
    now: Instant,
) -> Instant {
    let wait = task_poll::next_poll_in(
        interval,
        settings.task_poll_floor,
        settings.task_poll_ceiling,
        rng,
    );
    saturating_add(now, wait)
}

/// A result as a JSON value (the session's own calls may get it as its text).
fn payload_value(server: &str, payload: Payload) -> Result<Value, Error> {
    match payload {
        Payload::Parsed(value) => Ok(value),
        Payload::Raw(raw) => raw
            .to_value()
            .map_err(|e| Error::invalid_response(server, "tasks/get", e.to_string())),
        Payload::Task(_) => Err(Error::invalid_response(
            server,
            "tasks/get",
            "a task where a task's state was expected",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ErrorKind;
    use crate::protocol::jsonrpc::RpcError;

    fn state(value: Value) -> TaskState {
        tasks::parse_task(&value).expect("a task")
    }

    fn working(id: &str) -> Value {
        json!({"taskId": id, "status": "working", "pollIntervalMs": 100, "ttlMs": 60000})
    }

    fn table() -> TaskTable {
        TaskTable::new(Arc::from("s"))
    }

    const MS: Duration = Duration::from_millis(1);

    fn job() -> Origin {
        Origin {
            tool: "job".into(),
            ..Origin::default()
        }
    }

    #[test]
    fn a_task_is_polled_when_due_and_ends_for_its_caller() {
        let now = Instant::now();
        let mut table = table();
        let next = table.adopt(state(working("t")), job(), Some(7), now + 100 * MS, now);
        assert!(matches!(next, Next::Wait));
        assert_eq!(table.next_due(), Some(now + 100 * MS));
        assert!(table.due(now + 99 * MS).is_empty());
        assert_eq!(table.due(now + 100 * MS), ["t"]);
        assert_eq!(table.next_due(), None, "nothing is due while a poll is out");
        let still = table.polled("t", Ok(working("t")), false, |_| now + 200 * MS);
        assert!(matches!(still, Next::Wait));
        assert_eq!(table.due(now + 200 * MS), ["t"]);
        let done = json!({"taskId": "t", "status": "completed", "result": {"content": []}});
        let Next::Done {
            waiters, outcome, ..
        } = table.polled("t", Ok(done), false, |_| now)
        else {
            panic!("ended")
        };
        assert_eq!(waiters, [7]);
        assert!(matches!(outcome, Ok(r) if r["content"] == json!([])));
        assert_eq!(table.len(), 0);
        assert!(!table.is_waiting(7));
    }

    #[test]
    fn failed_and_cancelled_tasks_end_with_typed_errors() {
        let now = Instant::now();
        let mut table = table();
        table.adopt(state(working("f")), job(), Some(1), now, now);
        table.adopt(state(working("c")), job(), Some(2), now, now);
        let failed = json!({"taskId": "f", "status": "failed",
                            "error": {"code": -32603, "message": "boom"}});
        let Next::Done { outcome, .. } = table.polled("f", Ok(failed), false, |_| now) else {
            panic!("ended")
        };
        let error = outcome.expect_err("failed");
        assert_eq!(error.kind(), ErrorKind::Rpc);
        assert!(error.to_string().contains("boom"), "{error}");
        let cancelled = json!({"taskId": "c", "status": "cancelled", "statusMessage": "stop"});
        let Next::Done { outcome, .. } = table.polled("c", Ok(cancelled), false, |_| now) else {
            panic!("ended")
        };
        let error = outcome.expect_err("cancelled");
        assert_eq!(error.kind(), ErrorKind::Cancelled);
        assert!(error.to_string().contains("stop"), "{error}");
    }

    #[test]
    fn an_input_key_is_asked_once_however_often_a_poll_shows_it() {
        let now = Instant::now();
        let mut table = table();
        table.adopt(state(working("t")), job(), Some(1), now, now);
        let asking = json!({"taskId": "t", "status": "input_required", "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": {"message": "go on?"}}}});
        let Next::Ask(asked) = table.polled("t", Ok(asking.clone()), false, |_| now) else {
            panic!("asked")
        };
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].key, "confirm");
        // The next poll still shows it (the update is not seen yet): not asked again.
        assert!(matches!(
            table.polled("t", Ok(asking), false, |_| now),
            Next::Wait
        ));
        let more = json!({"taskId": "t", "status": "input_required", "inputRequests": {
            "confirm": {"method": "elicitation/create"},
            "second": {"method": "elicitation/create"}}});
        let Next::Ask(asked) = table.polled("t", Ok(more), false, |_| now) else {
            panic!("asked")
        };
        assert_eq!(
            asked.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["second"]
        );
    }

    #[test]
    fn an_unknown_task_is_lost_with_an_unknown_outcome() {
        let now = Instant::now();
        let mut table = table();
        table.adopt(state(working("t")), job(), Some(1), now, now);
        let gone = Error::rpc(
            "s",
            "tasks/get",
            RpcError::new(codes::INVALID_PARAMS, "Task not found"),
        );
        let Next::Done {
            waiters, outcome, ..
        } = table.polled("t", Err(gone), false, |_| now)
        else {
            panic!("ended")
        };
        assert_eq!(waiters, [1]);
        let error = outcome.expect_err("lost");
        assert_eq!(error.kind(), ErrorKind::OutcomeUnknown);
        assert!(matches!(error, Error::TaskLost { .. }), "{error:?}");
        assert!(error.to_string().contains("Task not found"), "{error}");
    }

    #[test]
    fn a_failed_poll_asks_again_and_an_unreadable_answer_gives_up() {
        let now = Instant::now();
        let mut table = table();
        table.adopt(state(working("t")), job(), Some(1), now, now);
        table.due(now);
        let timeout = Error::Timeout {
            server: "s".into(),
            method: "tasks/get".into(),
            timeout: MS,
            elapsed: MS,
        };
        assert!(matches!(
            table.polled("t", Err(timeout), false, |_| now + 5 * MS),
            Next::Wait
        ));
        assert_eq!(table.next_due(), Some(now + 5 * MS));
        table.due(now + 5 * MS);
        let other = json!({"taskId": "u", "status": "working"});
        let Next::Done { outcome, .. } = table.polled("t", Ok(other), false, |_| now) else {
            panic!("given up")
        };
        assert_eq!(
            outcome.expect_err("invalid").kind(),
            ErrorKind::InvalidResponse
        );
    }

    #[test]
    fn a_task_whose_caller_left_runs_on_and_its_outcome_is_kept() {
        let now = Instant::now();
        let mut table = table();
        table.adopt(state(working("t")), job(), Some(1), now, now);
        let handle = table.waiter_left(1).expect("a task");
        assert_eq!(
            (handle.task_id.as_str(), handle.tool.as_str()),
            ("t", "job")
        );
        assert_eq!(handle.ttl, Some(Duration::from_secs(60)));
        assert_eq!(table.len(), 1, "runs on");
        let done = json!({"taskId": "t", "status": "completed", "result": {"content": []}});
        let Next::Done { waiters, .. } = table.polled("t", Ok(done), false, |_| now) else {
            panic!("ended")
        };
        assert!(waiters.is_empty());
        assert!(table.take_kept("t").expect("kept").is_ok());
        assert!(table.take_kept("t").is_none(), "delivered once");
    }

    #[test]
    fn kept_outcomes_are_bounded() {
        let now = Instant::now();
        let mut table = table();
        for n in 0..MAX_KEPT_OUTCOMES + 10 {
            let id = format!("t{n}");
            table.adopt(state(working(&id)), job(), Some(n as u64), now, now);
            table.waiter_left(n as u64);
            let done = json!({"taskId": id, "status": "cancelled"});
            table.polled(&id, Ok(done), false, |_| now);
        }
        assert_eq!(table.kept.len(), MAX_KEPT_OUTCOMES);
        assert!(table.take_kept("t0").is_none(), "the oldest went first");
    }

    #[test]
    fn a_task_that_ended_already_is_answered_at_once() {
        let now = Instant::now();
        let mut table = table();
        let done = json!({"taskId": "t", "status": "completed", "result": {"content": []}});
        assert!(matches!(
            table.adopt(state(done), job(), Some(3), now, now),
            Next::Done { waiters, .. } if waiters == [3]
        ));
        assert_eq!(table.len(), 0);
    }
}
