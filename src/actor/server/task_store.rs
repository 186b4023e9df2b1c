//! The actor's side of durable tasks: what the session asks to be recorded
//! ([`TaskWrite`]), written to the application's [`TaskStore`], and the tasks a store kept
//! for this server taken back when the actor starts (after a restart of this process).
//!
//! A record names the server by its configured name and by its identity — a digest of what
//! reaches it (the URL, or the command line and working directory) — so that a task is never
//! asked about on another server that took the name. A write that fails is logged and the
//! task goes on in memory: the call it belongs to is not failed for the store's sake.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::Error;
use crate::protocol::text::server_text;
use crate::session::{LeaseTend, Restored, TaskWrite};
use crate::tasks::{
    server_identity, TaskEnd, TaskKey, TaskRecord, TaskStatus, TaskStore, TaskStoreError,
    TaskUpdate,
};

/// Tasks taken over in one tending of the leases at most; the rest wait for the next.
const MAX_TAKEN_PER_TEND: usize = 256;

/// What became of a write (see [`TaskPersistence::write`]).
pub(crate) enum Written {
    /// Recorded (or, failing, logged: the task goes on in memory).
    Done,
    /// This part was recorded already, by another follower of the task.
    Refused(TaskWrite),
    /// A new task the store shared by replicas could not record.
    Unrecorded {
        task_id: String,
        error: TaskStoreError,
    },
}

/// A server's tasks in the application's store.
pub(crate) struct TaskPersistence {
    store: Arc<dyn TaskStore>,
    server: String,
    identity: String,
}

impl TaskPersistence {
    pub fn new(store: Arc<dyn TaskStore>, config: &ServerConfig) -> Self {
        TaskPersistence {
            store,
            server: config.name().to_owned(),
            identity: server_identity(config),
        }
    }

    fn key(&self, task_id: &str) -> TaskKey {
        TaskKey::new(self.server.clone(), task_id.to_owned())
    }

    /// Records `write`; a failure is logged (the task goes on in memory). Returns the part the
    /// store refused because it was recorded already (by another follower of the task): input
    /// keys answered, an outcome taken, a task whose lease another replica holds. With a store
    /// shared by replicas, a new task the store could not record is
    /// [`Unrecorded`](Written::Unrecorded): it cannot go on in this replica's memory alone,
    /// which polls only while its leases hold.
    pub fn write(&self, write: &TaskWrite) -> Written {
        let mut refused = None;
        let done = match write {
            TaskWrite::Created {
                handle,
                arguments_digest,
                poll_interval,
                ..
            } => {
                let mut record = TaskRecord::new(
                    self.server.clone(),
                    self.identity.clone(),
                    handle.task_id.clone(),
                    handle.tool.clone(),
                    arguments_digest.clone(),
                    handle.created_at,
                );
                if let Some(ttl) = handle.ttl {
                    record = record.ttl(ttl);
                }
                if let Some(interval) = poll_interval {
                    record = record.poll_interval(*interval);
                }
                match self.store.insert(&record) {
                    // Stored already: followed again (a handle awaited after a restart, or on
                    // another replica). With leases, it is polled here only if its lease is
                    // ours now.
                    Ok(false) | Err(TaskStoreError::Exists { .. })
                        if self.store.lease().is_some() =>
                    {
                        self.store.claim(&record.key()).map(|claimed| {
                            if !claimed {
                                refused = Some(write.clone());
                            }
                        })
                    }
                    Err(TaskStoreError::Exists { .. }) => Ok(()),
                    other => other.map(|_| ()),
                }
            }
            TaskWrite::Status {
                task_id,
                status,
                message,
                poll_interval,
                ..
            } => {
                let mut update = TaskUpdate::new().status(*status);
                update = match message {
                    Some(message) => update.status_message(message.clone()),
                    None => update.no_status_message(),
                };
                if let Some(interval) = poll_interval {
                    update = update.poll_interval(*interval);
                }
                self.store.update(&self.key(task_id), &update).map(|_| ())
            }
            TaskWrite::InputAnswered { task_id, keys } => {
                let mut taken = Vec::new();
                let done = keys.iter().try_for_each(|key| {
                    if !self.store.mark_input_answered(&self.key(task_id), key)? {
                        taken.push(key.clone());
                    }
                    Ok(())
                });
                if !taken.is_empty() {
                    refused = Some(TaskWrite::InputAnswered {
                        task_id: task_id.clone(),
                        keys: taken,
                    });
                }
                done
            }
            TaskWrite::Ended {
                task_id,
                status,
                outcome,
                ..
            } => self
                .store
                .finish(&self.key(task_id), *status, Some(outcome))
                .map(|_| ()),
            TaskWrite::Delivered { task_id } => {
                let key = self.key(task_id);
                match self.store.take_outcome(&key) {
                    // Taken already: by another follower, unless the store never had it
                    // ended (a write that failed), which says nothing of a delivery.
                    Ok(None)
                        if self
                            .store
                            .get(&key)
                            .ok()
                            .flatten()
                            .is_some_and(|r| r.delivered) =>
                    {
                        refused = Some(write.clone());
                        Ok(())
                    }
                    other => other.map(|_| ()),
                }
            }
            TaskWrite::Forgotten { task_id, .. } => {
                self.store.remove(&self.key(task_id)).map(|_| ())
            }
        };
        let leasing = self.store.lease().is_some();
        match (done, write) {
            // A task followed from a handle is most likely another replica's, polled there:
            // looked for in the store from now on, and taken over if its lease lapses.
            (Err(error), TaskWrite::Created { followed: true, .. }) if leasing => {
                tracing::warn!(server = %self.server, error = %error, "the task store shared by the replicas could not be asked who polls an awaited task; it is looked for there later");
                Written::Refused(write.clone())
            }
            (Err(error), TaskWrite::Created { handle, .. }) if leasing => {
                tracing::warn!(server = %self.server, task = %server_text(&handle.task_id), error = %error, "the task store shared by the replicas could not record a new task; its callers are told, and it is not followed");
                Written::Unrecorded {
                    task_id: handle.task_id.clone(),
                    error,
                }
            }
            (Err(error), _) => {
                tracing::warn!(server = %self.server, error = %error, "the task store could not record a task's step; the task goes on in memory");
                Written::Done
            }
            (Ok(()), _) => refused.map_or(Written::Done, Written::Refused),
        }
    }

    /// Whether the store says task `task_id`'s outcome was delivered already.
    pub fn delivered(&self, task_id: &str) -> bool {
        matches!(
            self.store.get(&self.key(task_id)),
            Ok(Some(record)) if record.delivered && record.server_identity == self.identity
        )
    }

    /// How long the store's leases last, when it has them (replicas share it).
    pub fn lease(&self) -> Option<Duration> {
        self.store.lease()
    }

    /// Tends this replica's leases (see [`lease`](crate::session::lease)), at `started` by
    /// the actor's clock: renews those of the tasks polled `here`, takes over lapsed ones,
    /// and looks up the tasks followed `elsewhere` (and those whose lease was lost) that
    /// ended there.
    pub fn tend(
        &self,
        started: Instant,
        lease: Duration,
        here: Vec<String>,
        elsewhere: Vec<String>,
        take_over: bool,
    ) -> LeaseTend {
        let mut tend = LeaseTend::default();
        // Tasks polled here whose lease the renewal did not return.
        let mut unheld = Vec::new();
        match self.store.renew(&self.server, &here) {
            Ok(held) => {
                let held: HashSet<&str> = held
                    .iter()
                    .filter(|k| k.server() == self.server)
                    .map(TaskKey::task_id)
                    .collect();
                crate::telemetry::task_leases_renewed(&self.server, Some(held.len()));
                // Counted from before the renewal (the store counts from the renewal itself),
                // less a fifth for a clock that runs slow against the database's.
                tend.hold_until = started.checked_add(lease.saturating_sub(lease / 5));
                unheld = here
                    .into_iter()
                    .filter(|id| !held.contains(id.as_str()))
                    .collect();
            }
            Err(error) => {
                crate::telemetry::task_leases_renewed(&self.server, None);
                tracing::warn!(server = %self.server, error = %error, "the task store did not renew this replica's task leases; their polls stop when the leases lapse");
            }
        }
        // A generation that drains or stops takes nothing on: it would only keep the tasks
        // from the replicas that go on.
        if take_over {
            match self
                .store
                .take_over(&self.server, &self.identity, MAX_TAKEN_PER_TEND)
            {
                Ok(records) => {
                    tend.taken = records.into_iter().map(|r| self.restored(r)).collect();
                }
                Err(error) => {
                    tracing::warn!(server = %self.server, error = %error, "the task store could not be asked for tasks whose lease lapsed");
                }
            }
        }
        self.look_up(unheld, &elsewhere, &mut tend);
        crate::telemetry::task_leases_moved(&self.server, tend.taken.len(), tend.lost.len());
        tend
    }

    /// Looks up, in one read, the tasks polled here whose lease was not renewed (`unheld`)
    /// and those followed `elsewhere`: `tend` gets the lost leases (an unheld task the store
    /// has) and the outcomes of those that ended.
    fn look_up(&self, unheld: Vec<String>, elsewhere: &[String], tend: &mut LeaseTend) {
        let looked_up: Vec<String> = unheld.iter().chain(elsewhere).cloned().collect();
        if looked_up.is_empty() {
            return;
        }
        match self.store.get_many(&self.server, &looked_up) {
            Ok(records) => {
                let by_id: HashMap<&str, &TaskRecord> =
                    records.iter().map(|r| (r.task_id.as_str(), r)).collect();
                // A task the store does not have (its insert failed) is this replica's alone.
                tend.lost = unheld
                    .into_iter()
                    .filter(|id| by_id.contains_key(id.as_str()))
                    .collect();
                for id in elsewhere.iter().chain(&tend.lost) {
                    if let Some(outcome) = self.ended_elsewhere(id, by_id.get(id.as_str()).copied())
                    {
                        tend.ended.push((id.clone(), outcome));
                    }
                }
            }
            Err(error) => {
                // One the store cannot be asked about is not this replica's: it may be
                // another's now.
                tend.lost = unheld;
                tracing::warn!(server = %self.server, error = %error, "the task store could not be read for the tasks other replicas poll");
            }
        }
    }

    /// The store's news of tasks that end, if it has any ([`TaskStore::watch_ends`]).
    pub fn watch_ends(&self) -> Option<tokio::sync::broadcast::Receiver<TaskEnd>> {
        self.store.watch_ends()
    }

    /// What the store's news `end` means for the tasks followed `elsewhere`: the outcomes of
    /// those it names that ended (all of them, when news was missed). Nothing else is asked
    /// of the store: no lease is renewed or taken.
    pub fn ended(&self, end: &TaskEnd, elsewhere: Vec<String>) -> LeaseTend {
        let mut tend = LeaseTend::default();
        let named: Vec<String> = match end {
            TaskEnd::Ended(key) if key.server() == self.server => elsewhere
                .into_iter()
                .filter(|id| id == key.task_id())
                .collect(),
            TaskEnd::Ended(_) => Vec::new(),
            _ => elsewhere,
        };
        self.look_up(Vec::new(), &named, &mut tend);
        tend
    }

    /// The outcome of task `id`, polled by another replica, if it ended there (`record`, as
    /// stored): `None` while it runs.
    fn ended_elsewhere(
        &self,
        id: &str,
        record: Option<&TaskRecord>,
    ) -> Option<Result<Value, Error>> {
        let lost = |tool: &str, reason: &str| {
            Some(Err(Error::TaskLost {
                server: self.server.clone(),
                tool: tool.to_owned(),
                task_id: server_text(id),
                reason: reason.to_owned(),
            }))
        };
        match record {
            Some(record) if record.server_identity != self.identity => lost(
                &record.tool,
                "the task store has a task of this id from another server",
            ),
            Some(record) if !record.status.is_terminal() => None,
            Some(record) => match (&record.outcome, record.delivered) {
                (Some(outcome), false) => Some(crate::session::tasks::outcome_of(
                    &self.server,
                    id,
                    record.status,
                    outcome,
                )),
                _ => lost(
                    &record.tool,
                    "its outcome was delivered already, by another replica",
                ),
            },
            None => lost("", "the task store no longer has it"),
        }
    }

    /// Gives this replica's leases of the server's tasks up (it stops), for another to take
    /// over at once.
    pub fn release(&self) {
        if self.store.lease().is_none() {
            return;
        }
        match self.store.release(&self.server) {
            Ok(released) if released > 0 => {
                tracing::info!(server = %self.server, tasks = released, "gave up this replica's task leases, for another to take over");
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(server = %self.server, error = %error, "the task store did not take this replica's task leases back; they are taken over when they lapse");
            }
        }
    }

    /// The tasks the store kept for this server (this identity), not delivered yet; what it
    /// no longer needs to keep (expired, or delivered long ago) is purged first. With
    /// leases, only the ended ones: the running ones are another replica's until their lease
    /// lapses, and are taken over then ([`tend`](Self::tend)).
    pub fn restore(&self) -> Vec<Restored> {
        if let Err(error) = self.store.purge(SystemTime::now()) {
            tracing::warn!(server = %self.server, error = %error, "the task store could not be purged");
        }
        let records = match self.store.list(Some(&self.server)) {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(server = %self.server, error = %error, "the task store could not be read; its tasks are not followed");
                return Vec::new();
            }
        };
        let now = SystemTime::now();
        let leasing = self.store.lease().is_some();
        records
            .into_iter()
            .filter(|r| r.server_identity == self.identity && !r.delivered)
            .filter(|r| r.expires_at().is_none_or(|at| at > now))
            .filter(|r| !leasing || (r.status.is_terminal() && r.outcome.is_some()))
            .map(|record| self.restored(record))
            .collect()
    }

    /// A stored record as the session takes it back.
    fn restored(&self, record: TaskRecord) -> Restored {
        let handle = crate::tasks::TaskHandle::new(
            record.server.clone(),
            record.task_id.clone(),
            record.tool.clone(),
            record.created_at,
        )
        .ttl(record.ttl);
        match (&record.outcome, record.status.is_terminal()) {
            (Some(outcome), true) => Restored::Ended {
                outcome: crate::session::tasks::outcome_of(
                    &self.server,
                    &record.task_id,
                    record.status,
                    outcome,
                ),
                handle,
            },
            _ => Restored::Running {
                handle,
                status: if record.status.is_terminal() {
                    TaskStatus::Working
                } else {
                    record.status
                },
                poll_interval: record.poll_interval,
                answered: record
                    .answered_inputs
                    .iter()
                    .cloned()
                    .collect::<BTreeSet<_>>(),
            },
        }
    }
}
