//! [`TaskStore`]: where task records live, so that a task's polling resumes after a
//! reconnect, a server restart or a restart of this process, and its outcome is delivered
//! exactly once. [`MemoryTaskStore`] keeps them in memory (tests, applications that want no
//! file); `SqliteTaskStore` (feature `sqlite`) in a file.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::record::{bounded, MAX_ANSWERED_INPUTS, MAX_NAME_BYTES, MAX_OUTCOME_BYTES};
use super::{TaskKey, TaskRecord, TaskStatus, TaskUpdate};

/// How long a delivered task's record is kept after its last change, before
/// [`purge`](TaskStore::purge) removes it: long enough that a late notification or a
/// duplicate answer for the task finds it delivered, not unknown.
pub const DELIVERED_RETENTION: Duration = Duration::from_secs(60 * 60);

/// The tasks a store keeps by default. A full store forgets its oldest delivered task to make
/// room for a new one, and refuses the new one when none is delivered: forgetting a task whose
/// outcome is still owed would lose that outcome.
pub const DEFAULT_MAX_TASKS: usize = 4096;

/// Why a [`TaskStore`] could not do what it was asked. Never a panic: a store meets files,
/// rows and server text it did not write itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// A record with this key is stored already, with other contents.
    #[error("{key} is already stored, with other contents")]
    Exists {
        /// The record's key.
        key: TaskKey,
    },
    /// No record with this key is stored.
    #[error("{key} is not stored")]
    NotFound {
        /// The key asked for.
        key: TaskKey,
    },
    /// Something to keep is over its bound.
    #[error("the {what} is over the task store's limit of {limit}")]
    TooLarge {
        /// What it is (`task id`, `outcome`, `tasks`, ...).
        what: &'static str,
        /// The limit: bytes for text, a count for collections.
        limit: usize,
    },
    /// Something to keep cannot be: a time the store cannot represent, a terminal status
    /// given to `update`, a non-terminal one to `finish`, ...
    #[error("invalid {what}: {why}")]
    Invalid {
        /// What it is.
        what: &'static str,
        /// Why it is refused.
        why: &'static str,
    },
    /// The store's file or directory could not be created, opened or used.
    #[error("the task store {path}: {message}")]
    Io {
        /// Where the store is.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The database refused or failed an operation: locked by another process past the busy
    /// timeout, read-only, corrupt, full, or written by a newer version of this crate.
    #[error("the task store {path}: {message}")]
    Database {
        /// Where the store is (`:memory:` for one in memory).
        path: String,
        /// What went wrong, and where it can, what to do about it.
        message: String,
    },
    /// A stored record does not read back as one: a value of the wrong type, a status no
    /// version of this crate writes. Remove it (by its key) to go on.
    #[error("{key} is stored corrupt: {why}")]
    Corrupt {
        /// The record's key.
        key: TaskKey,
        /// What does not parse.
        why: String,
    },
}

/// Keeps task records durably. Every method is all-or-nothing: a crash (a `kill -9`, a power
/// cut) in the middle of one leaves the store as it was before it or as it is after it,
/// never between, and what a method has returned `Ok` for survives a crash. Each is one
/// transaction of the store; two processes (or threads) sharing one store see each other's
/// methods as a whole.
///
/// Synchronous on purpose: the driver of tasks calls it off the actor's thread (a blocking
/// task), and SQLite is synchronous; an async trait would only hide the same blocking.
///
/// The rules the rest of the crate rests on:
///
/// - a task is [`insert`](Self::insert)ed before anyone is told of it;
/// - an ended task never starts again: [`update`](Self::update) leaves it alone, and the first
///   [`finish`](Self::finish) wins;
/// - an input request is recorded as answered ([`mark_input_answered`](Self::mark_input_answered))
///   before its answer is sent, so it is never answered twice;
/// - an outcome is delivered once: [`take_outcome`](Self::take_outcome) hands it out and marks
///   it delivered in one step.
///
/// ```
/// use mcp_supervisor::tasks::{arguments_digest, MemoryTaskStore, TaskRecord, TaskStatus, TaskStore};
/// use serde_json::json;
/// use std::time::SystemTime;
///
/// let store = MemoryTaskStore::new();
/// let digest = arguments_digest(&json!({"q": "rust"}));
/// let record = TaskRecord::new("search", "https://mcp.example.com/mcp", "t-1", "search", digest, SystemTime::now());
/// store.insert(&record).unwrap();
/// store.finish(&record.key(), TaskStatus::Completed, Some(r#"{"content":[]}"#)).unwrap();
/// let taken = store.take_outcome(&record.key()).unwrap().unwrap();
/// assert_eq!(taken.outcome.as_deref(), Some(r#"{"content":[]}"#));
/// assert!(store.take_outcome(&record.key()).unwrap().is_none(), "delivered once");
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task, durably before it returns: the caller is told of the task only
    /// after. `Ok(true)`: stored; `Ok(false)`: an identical record was stored already (an
    /// insert made again after a crash). A different record under the same key is
    /// [`Exists`](TaskStoreError::Exists).
    fn insert(&self, record: &TaskRecord) -> Result<bool, TaskStoreError>;

    /// Applies what a poll told of a task that has not ended. `Ok(false)`, and nothing
    /// changed, when it has ended: a terminal task never goes back.
    /// [`NotFound`](TaskStoreError::NotFound) when there is no such task.
    fn update(&self, key: &TaskKey, change: &TaskUpdate) -> Result<bool, TaskStoreError>;

    /// Records that the input request `input_key` is being answered. `Ok(true)`: newly
    /// recorded, send the answer. `Ok(false)`: it was answered already, or the task has ended;
    /// send nothing.
    ///
    /// Recorded *before* the answer is sent. If this process dies between the two, the answer
    /// is never sent: the request stays unanswered and the task waits (until its ttl, or until
    /// someone cancels it), as a restarted driver skips a recorded key. The other order could
    /// send one answer twice — a second approval, a second payment — after a crash; a task
    /// that waits is the lesser harm, and it is visible in its status.
    fn mark_input_answered(&self, key: &TaskKey, input_key: &str) -> Result<bool, TaskStoreError>;

    /// Ends a task with the terminal `status` and, when there is one, its `outcome` (the
    /// result or JSON-RPC error object, as JSON text), both in one step. `Ok(false)`, and
    /// nothing changed, when it had ended already: the first end wins.
    fn finish(
        &self,
        key: &TaskKey,
        status: TaskStatus,
        outcome: Option<&str>,
    ) -> Result<bool, TaskStoreError>;

    /// Hands out an ended task's outcome, once: the record with its outcome if the task has
    /// ended and was not delivered yet, marked delivered (and its outcome dropped from the
    /// store) in the same step. `None` for a task that has not ended, was delivered already,
    /// or is not stored. Exactly-once delivery rests on this compare-and-set.
    fn take_outcome(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError>;

    /// The record of a task.
    fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError>;

    /// The records of `server`'s tasks `task_ids` that are stored (in no particular order):
    /// [`get`](Self::get) of each, in one round trip where the store can (a replica looks up
    /// every task another polls at each tending of its leases).
    fn get_many(
        &self,
        server: &str,
        task_ids: &[String],
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let mut records = Vec::new();
        for id in task_ids {
            records.extend(self.get(&TaskKey::new(server, id.as_str()))?);
        }
        Ok(records)
    }

    /// The records of one server's tasks, or of all, oldest first (by `created_at`). At most
    /// the store's bound of tasks.
    fn list(&self, server: Option<&str>) -> Result<Vec<TaskRecord>, TaskStoreError>;

    /// Forgets a task. `Ok(false)` if it was not stored.
    fn remove(&self, key: &TaskKey) -> Result<bool, TaskStoreError>;

    /// Forgets, as of `now`, the tasks the server has forgotten (their ttl from `created_at`
    /// has passed, whatever their state: there is nothing left to poll, and an outcome
    /// nobody took within the ttl is not owed any more) and the delivered tasks last changed
    /// [`DELIVERED_RETENTION`] or longer ago. Returns how many were removed.
    fn purge(&self, now: SystemTime) -> Result<usize, TaskStoreError>;

    /// How long a lease lasts in this store, if it has leases: the store is shared by several
    /// processes (the replicas of a service), and each polls only the running tasks whose
    /// lease it holds, renewing them while it lives; another takes a task over once its lease
    /// lapses. `None` (the default): one process follows every task, and the other lease
    /// methods are never called.
    ///
    /// A process counts a lease as its own for this long from *before* the renewal that
    /// granted it, by its own clock; the store counts from the renewal, by the database's.
    /// So the two never overlap, and no task is polled by two processes at once.
    fn lease(&self) -> Option<Duration> {
        None
    }

    /// Takes the lease of running task `key` for this process, or keeps it. `Ok(true)`: this
    /// process holds it now (it was its own, nobody's, or lapsed); `Ok(false)`: another
    /// process holds it, or the task has ended or is not stored.
    fn claim(&self, key: &TaskKey) -> Result<bool, TaskStoreError> {
        let _ = key;
        Ok(true)
    }

    /// Renews this process's leases of `server`'s running tasks `task_ids` (those it polls),
    /// and returns those whose lease it holds now: one that is missing was taken over by
    /// another process (or has ended), and is not to be polled here any more. A lease of this
    /// process that is not named (a task it held before a restart under the same replica
    /// name) is left to lapse, and to be taken over then.
    fn renew(&self, server: &str, task_ids: &[String]) -> Result<Vec<TaskKey>, TaskStoreError> {
        let _ = (server, task_ids);
        Ok(Vec::new())
    }

    /// Takes over at most `max` running tasks of `server` (reached as `identity`, see
    /// [`server_identity`](super::server_identity)) whose lease lapsed or that no process
    /// holds, oldest first, and returns their records. Tasks another process is taking at the
    /// same moment are skipped, not waited for: replicas that look at once share the tasks
    /// out.
    fn take_over(
        &self,
        server: &str,
        identity: &str,
        max: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let _ = (server, identity, max);
        Ok(Vec::new())
    }

    /// Gives up this process's leases of `server`'s tasks (it stops), so that another
    /// process takes them over at once rather than when they lapse. Returns how many.
    fn release(&self, server: &str) -> Result<usize, TaskStoreError> {
        let _ = server;
        Ok(0)
    }

    /// News of tasks that end, on any process, for a store with [`lease`](Self::lease)s: a
    /// process that awaits a task another polls looks it up when told it ended, rather than
    /// at its next look every third of a lease. `None` (the default): no news; the looks
    /// alone find the outcomes (a store of one process needs neither).
    fn watch_ends(&self) -> Option<tokio::sync::broadcast::Receiver<TaskEnd>> {
        None
    }
}

/// What [`TaskStore::watch_ends`] tells.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskEnd {
    /// This task ended (its outcome, if any, is stored).
    Ended(TaskKey),
    /// News may have been missed (the store's listener reconnected): look up every task
    /// awaited.
    Missed,
}

/// Whether a task is purged at `now` (the rule of [`TaskStore::purge`], shared by the stores
/// so that they agree to the nanosecond).
pub(crate) fn purge_due(
    created_at: SystemTime,
    ttl: Option<Duration>,
    delivered: bool,
    updated_at: SystemTime,
    now: SystemTime,
) -> bool {
    // A sum past what a SystemTime holds is a time that never comes.
    let expired = ttl
        .and_then(|ttl| created_at.checked_add(ttl))
        .is_some_and(|at| at <= now);
    let retired = delivered
        && updated_at
            .checked_add(DELIVERED_RETENTION)
            .is_some_and(|at| at <= now);
    expired || retired
}

/// The checks of `finish`'s arguments, shared by the stores.
pub(crate) fn check_finish(
    status: TaskStatus,
    outcome: Option<&str>,
) -> Result<(), TaskStoreError> {
    if !status.is_terminal() {
        return Err(TaskStoreError::Invalid {
            what: "status",
            why: "`finish` takes a terminal status (completed, failed or cancelled)",
        });
    }
    if let Some(outcome) = outcome {
        bounded("outcome", outcome, MAX_OUTCOME_BYTES)?;
    }
    Ok(())
}

/// The check of an input request key, shared by the stores.
pub(crate) fn check_input_key(input_key: &str) -> Result<(), TaskStoreError> {
    bounded("input request key", input_key, MAX_NAME_BYTES)
}

/// The refusal of one answered input request too many.
pub(crate) fn too_many_inputs() -> TaskStoreError {
    TaskStoreError::TooLarge {
        what: "answered input requests",
        limit: MAX_ANSWERED_INPUTS,
    }
}

/// A [`TaskStore`] in memory: tasks survive reconnects and server restarts, not a restart of
/// this process. Bounded ([`DEFAULT_MAX_TASKS`], or [`max_tasks`](Self::max_tasks)).
#[derive(Debug)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<TaskKey, TaskRecord>>,
    max_tasks: usize,
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::new()
    }
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryTaskStore {
            tasks: Mutex::new(HashMap::new()),
            max_tasks: DEFAULT_MAX_TASKS,
        }
    }

    /// Keeps at most `max` tasks (at least one).
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskKey, TaskRecord>> {
        // A panic while the lock was held cannot have left a record half-changed: the changes
        // below are plain assignments, checked before the first one.
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskStore for MemoryTaskStore {
    fn insert(&self, record: &TaskRecord) -> Result<bool, TaskStoreError> {
        record.check()?;
        let key = record.key();
        let mut tasks = self.lock();
        if let Some(stored) = tasks.get(&key) {
            return if stored == record {
                Ok(false)
            } else {
                Err(TaskStoreError::Exists { key })
            };
        }
        if tasks.len() >= self.max_tasks {
            let oldest_delivered = tasks
                .values()
                .filter(|r| r.delivered)
                .min_by(|a, b| (a.updated_at, a.key()).cmp(&(b.updated_at, b.key())))
                .map(TaskRecord::key);
            match oldest_delivered {
                Some(victim) => {
                    tasks.remove(&victim);
                }
                None => {
                    return Err(TaskStoreError::TooLarge {
                        what: "tasks",
                        limit: self.max_tasks,
                    })
                }
            }
        }
        tasks.insert(key, record.clone());
        Ok(true)
    }

    fn update(&self, key: &TaskKey, change: &TaskUpdate) -> Result<bool, TaskStoreError> {
        change.check()?;
        let mut tasks = self.lock();
        let record = tasks
            .get_mut(key)
            .ok_or_else(|| TaskStoreError::NotFound { key: key.clone() })?;
        if record.status.is_terminal() {
            return Ok(false);
        }
        change.apply(record, SystemTime::now());
        Ok(true)
    }

    fn mark_input_answered(&self, key: &TaskKey, input_key: &str) -> Result<bool, TaskStoreError> {
        check_input_key(input_key)?;
        let mut tasks = self.lock();
        let record = tasks
            .get_mut(key)
            .ok_or_else(|| TaskStoreError::NotFound { key: key.clone() })?;
        if record.status.is_terminal() || record.answered_inputs.contains(input_key) {
            return Ok(false);
        }
        if record.answered_inputs.len() >= MAX_ANSWERED_INPUTS {
            return Err(too_many_inputs());
        }
        record.answered_inputs.insert(input_key.to_owned());
        record.updated_at = SystemTime::now();
        Ok(true)
    }

    fn finish(
        &self,
        key: &TaskKey,
        status: TaskStatus,
        outcome: Option<&str>,
    ) -> Result<bool, TaskStoreError> {
        check_finish(status, outcome)?;
        let mut tasks = self.lock();
        let record = tasks
            .get_mut(key)
            .ok_or_else(|| TaskStoreError::NotFound { key: key.clone() })?;
        if record.status.is_terminal() {
            return Ok(false);
        }
        record.status = status;
        record.outcome = outcome.map(str::to_owned);
        record.updated_at = SystemTime::now();
        Ok(true)
    }

    fn take_outcome(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        let mut tasks = self.lock();
        let Some(record) = tasks.get_mut(key) else {
            return Ok(None);
        };
        if !record.status.is_terminal() || record.delivered {
            return Ok(None);
        }
        record.delivered = true;
        record.updated_at = SystemTime::now();
        // The store keeps no copy of a delivered outcome: it is owed to nobody any more.
        let outcome = record.outcome.take();
        let mut taken = record.clone();
        taken.outcome = outcome;
        Ok(Some(taken))
    }

    fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        Ok(self.lock().get(key).cloned())
    }

    fn list(&self, server: Option<&str>) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let tasks = self.lock();
        let mut records: Vec<TaskRecord> = tasks
            .values()
            .filter(|r| server.is_none_or(|s| r.server == s))
            .cloned()
            .collect();
        records.sort_by(|a, b| {
            (a.created_at, &a.server, &a.task_id).cmp(&(b.created_at, &b.server, &b.task_id))
        });
        records.truncate(self.max_tasks);
        Ok(records)
    }

    fn remove(&self, key: &TaskKey) -> Result<bool, TaskStoreError> {
        Ok(self.lock().remove(key).is_some())
    }

    fn purge(&self, now: SystemTime) -> Result<usize, TaskStoreError> {
        let mut tasks = self.lock();
        let before = tasks.len();
        tasks.retain(|_, r| !purge_due(r.created_at, r.ttl, r.delivered, r.updated_at, now));
        Ok(before - tasks.len())
    }
}
