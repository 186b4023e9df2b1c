//! [`TaskHandle`]: what names a task on a server, for as long as the server keeps it; and
//! [`TaskInfo`], what is known of one.

use std::time::{Duration, SystemTime};

use super::TaskStatus;

/// A task a server runs for one of our calls: enough to find it again (its server and id)
/// and to tell it from others (the tool, when it was created, how long the server keeps it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskHandle {
    /// The server's name.
    pub server: String,
    /// The server's id for the task (opaque, at most 1 KiB).
    pub task_id: String,
    /// The tool the task runs.
    pub tool: String,
    /// When the server answered the call with the task (our clock).
    pub created_at: SystemTime,
    /// How long after its creation the server may forget the task; `None`: unlimited, or not
    /// said.
    pub ttl: Option<Duration>,
}

impl TaskHandle {
    /// The handle of task `task_id` of `server`, running `tool`, created at `created_at`.
    pub fn new(
        server: impl Into<String>,
        task_id: impl Into<String>,
        tool: impl Into<String>,
        created_at: SystemTime,
    ) -> Self {
        TaskHandle {
            server: server.into(),
            task_id: task_id.into(),
            tool: tool.into(),
            created_at,
            ttl: None,
        }
    }

    /// With the time the server keeps the task.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// When the server may forget the task (`None`: never said, or beyond what a clock can
    /// hold).
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.created_at.checked_add(self.ttl?)
    }
}

/// What is known of one task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task.
    pub handle: TaskHandle,
    /// Its status, as the server said last.
    pub status: TaskStatus,
    /// What the server said about it last, escaped and bounded.
    pub status_message: Option<String>,
    /// The poll interval the server asked for last.
    pub poll_interval: Option<Duration>,
    /// How long the supervisor has followed it (`None` from [`GetTask`](crate::GetTask)).
    pub age: Option<Duration>,
    /// When it is asked next, from now (`None`: being asked, ended, or from [`GetTask`](crate::GetTask)).
    pub next_poll_in: Option<Duration>,
    /// Another replica holds its lease and polls it (a task store shared by replicas, see
    /// [`TaskStore::lease`](crate::tasks::TaskStore::lease)): it is followed here only for the
    /// callers that wait for it here, its outcome looked for in the store. `false` for a
    /// task this replica polls.
    pub elsewhere: bool,
}

impl TaskInfo {
    /// The info of `handle` with `status`, and nothing else known.
    pub fn new(handle: TaskHandle, status: TaskStatus) -> Self {
        TaskInfo {
            handle,
            status,
            status_message: None,
            poll_interval: None,
            age: None,
            next_poll_in: None,
            elsewhere: false,
        }
    }
}
