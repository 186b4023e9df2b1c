//! [`ServerStatus`] as JSON: every field under its own name, `in_state_for` as
//! `in_state_for_ms`, the era as its name, the last error as an
//! [`ErrorView`](super::ErrorView), and `tool_count` beside the tools (and `tools_truncated`,
//! why they are not the server's whole list, or `null`). The tools, `capabilities` and
//! `server_info` are the objects the server sent, every member included
//! ([`AsSent`](crate::AsSent)). Each task as `{task_id, tool, status, status_message,
//! age_ms, next_poll_ms, poll_interval_ms}`.

use serde::{Serialize, Serializer};

use super::{error::ErrorView, millis};
use crate::actor::status::{Counters, ServerStatus};
use crate::policy::state::ServerState;
use crate::protocol::as_sent::{ListedTool, SentCapabilities, SentImplementation};

#[derive(Serialize)]
struct StatusView<'a> {
    name: &'a str,
    transport: &'a str,
    state: &'a ServerState,
    in_state_for_ms: u64,
    server_info: &'a Option<SentImplementation>,
    era: Option<&'static str>,
    protocol_version: &'a Option<String>,
    capabilities: &'a Option<SentCapabilities>,
    tool_count: usize,
    tools: &'a [ListedTool],
    tools_truncated: Option<&'a str>,
    subscriptions: &'a [String],
    counters: &'a Counters,
    last_error: Option<ErrorView>,
    pid: Option<u32>,
    pending_calls: usize,
    tasks: Vec<TaskView<'a>>,
    /// Only while a replacement is under way.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_generation: Option<&'a ServerStatus>,
}

#[derive(Serialize)]
struct TaskView<'a> {
    task_id: &'a str,
    tool: &'a str,
    status: &'static str,
    status_message: Option<&'a str>,
    age_ms: Option<u64>,
    next_poll_ms: Option<u64>,
    poll_interval_ms: Option<u64>,
}

impl<'a> From<&'a crate::tasks::TaskInfo> for TaskView<'a> {
    fn from(task: &'a crate::tasks::TaskInfo) -> Self {
        TaskView {
            task_id: &task.handle.task_id,
            tool: &task.handle.tool,
            status: task.status.as_str(),
            status_message: task.status_message.as_deref(),
            age_ms: task.age.map(millis),
            next_poll_ms: task.next_poll_in.map(millis),
            poll_interval_ms: task.poll_interval.map(millis),
        }
    }
}

impl Serialize for ServerStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StatusView {
            name: &self.name,
            transport: self.transport,
            state: &self.state,
            in_state_for_ms: millis(self.in_state_for),
            server_info: &self.server_info,
            era: self.era.map(|e| e.name()),
            protocol_version: &self.protocol_version,
            capabilities: &self.capabilities,
            tool_count: self.tools.len(),
            tools: &self.tools,
            tools_truncated: self.tools_truncated.as_deref(),
            subscriptions: &self.subscriptions,
            counters: &self.counters,
            last_error: self.last_error.as_ref().map(ErrorView::from),
            pid: self.pid,
            pending_calls: self.pending_calls,
            tasks: self.tasks.iter().map(TaskView::from).collect(),
            next_generation: self.next_generation.as_deref(),
        }
        .serialize(s)
    }
}
