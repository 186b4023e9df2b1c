//! What a server's subscribers hear: [`ServerEvent`], the session's news of state changes, tool
//! lists and the server's notifications. (It is an actix message too; the actor layer says so.)

use serde_json::Value;

use crate::policy::state::ServerState;

/// Something that happened on a server, for [`SubscribeEvents`](crate::SubscribeEvents) recipients.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The connection state changed.
    StateChanged {
        /// Server name.
        server: String,
        /// The new state.
        state: ServerState,
        /// What happened, for people: `Reconnecting to MCP server (attempt 1/3)…`.
        message: String,
    },
    /// The tool list changed (after `tools/list_changed` or a reconnect).
    ToolsChanged {
        /// Server name.
        server: String,
        /// Tools that appeared.
        added: Vec<String>,
        /// Tools that disappeared.
        removed: Vec<String>,
        /// Tools still listed whose object changed in any member: description, schema,
        /// annotations, `execution`, or one this version does not know.
        changed: Vec<String>,
    },
    /// A subscribed resource changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// Server name.
        server: String,
        /// Its URI.
        uri: String,
    },
    /// A log message from the server (`notifications/message`).
    Log {
        /// Server name.
        server: String,
        /// Its params: `level`, `logger`, `data`.
        params: Value,
    },
    /// Any other notification.
    Notification {
        /// Server name.
        server: String,
        /// Method.
        method: String,
        /// Params.
        params: Option<Value>,
    },
    /// A replacement began (`Restart`, `ReplaceServer`): a new generation of the server is
    /// starting beside the one that serves its calls.
    Replacing {
        /// Server name.
        server: String,
    },
    /// The new generation is Ready and takes every new call; the old one drains.
    Replaced {
        /// Server name.
        server: String,
    },
    /// The new generation did not come up; the old one keeps serving.
    ReplaceFailed {
        /// Server name.
        server: String,
        /// Why the new generation did not come up.
        error: crate::error::Error,
    },
    /// A task (the Tasks extension) changed status: it runs, waits for input, or ended. An
    /// ended task's outcome waits for whoever awaits it, if nobody did.
    TaskChanged {
        /// Server name.
        server: String,
        /// The task's id (escaped and bounded). Servers may use task ids as bearer tokens: the
        /// status page shows them only to those who see everything.
        task_id: String,
        /// The tool it runs.
        tool: String,
        /// Its status now.
        status: crate::tasks::TaskStatus,
        /// What the server said about it, escaped and bounded.
        message: Option<String>,
    },
}

impl ServerEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            ServerEvent::StateChanged { server, .. }
            | ServerEvent::ToolsChanged { server, .. }
            | ServerEvent::ResourceUpdated { server, .. }
            | ServerEvent::Log { server, .. }
            | ServerEvent::Notification { server, .. }
            | ServerEvent::Replacing { server }
            | ServerEvent::Replaced { server }
            | ServerEvent::ReplaceFailed { server, .. }
            | ServerEvent::TaskChanged { server, .. } => server,
        }
    }
}
