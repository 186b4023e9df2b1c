//! The actor's side of durable tasks: what the session asks to be recorded
//! ([`TaskWrite`]), written to the application's [`TaskStore`], and the tasks a store kept
//! for this server taken back when the actor starts (after a restart of this process).
//!
//! A record names the server by its configured name and by its identity — a digest of what
//! reaches it (the URL, or the command line and working directory) — so that a task is never
//! asked about on another server that took the name. A write that fails is logged and the
//! task goes on in memory: the call it belongs to is not failed for the store's sake.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::ServerConfig;
use crate::session::{Restored, TaskWrite};
use crate::tasks::{server_identity, TaskKey, TaskRecord, TaskStatus, TaskStore, TaskUpdate};

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
    /// keys answered, an outcome taken.
    pub fn write(&self, write: &TaskWrite) -> Option<TaskWrite> {
        let mut refused = None;
        let done = match write {
            TaskWrite::Created {
                handle,
                arguments_digest,
                poll_interval,
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
                    // Followed again (a handle awaited after a restart): it is there already.
                    Err(crate::tasks::TaskStoreError::Exists { .. }) => Ok(()),
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
        if let Err(error) = done {
            tracing::warn!(server = %self.server, error = %error, "the task store could not record a task's step; the task goes on in memory");
        }
        refused
    }

    /// Whether the store says task `task_id`'s outcome was delivered already.
    pub fn delivered(&self, task_id: &str) -> bool {
        matches!(
            self.store.get(&self.key(task_id)),
            Ok(Some(record)) if record.delivered && record.server_identity == self.identity
        )
    }

    /// The tasks the store kept for this server (this identity), not delivered yet; what it
    /// no longer needs to keep (expired, or delivered long ago) is purged first.
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
        records
            .into_iter()
            .filter(|r| r.server_identity == self.identity && !r.delivered)
            .filter(|r| r.expires_at().is_none_or(|at| at > now))
            .map(|record| {
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
            })
            .collect()
    }
}
