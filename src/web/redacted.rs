//! The redacted view of the status scope: what a request that is not trusted with the full
//! view ([`Visibility`](super::Visibility)) is shown. It is an allowlist — the fields below and
//! nothing else, so a field added to [`ServerStatus`] later stays out until it is added here:
//!
//! - a status: `name`, `transport`, its `state` (below), `in_state_for_ms`, `era`,
//!   `protocol_version`, `tool_count`, `tools_truncated` (whether), `counters`,
//!   `pending_calls`, `task_count`, the `last_error`'s `code`, and `"redacted": true`. Not its
//!   `pid`, `tools`, `server_info`, `capabilities`, `subscriptions`, its tasks (a server may
//!   use a task's id as a bearer token), nor any error's message, `data`, exit status or
//!   stderr tail;
//! - a state: its name and numbers (`attempt`, `max`, `retry_in_ms`, `revive_in_ms`), a failed
//!   state's error as its `code` only;
//! - an event: its `type` and `server`; a state change also its state and a message made here
//!   from the state (the full message quotes the error, server text included). No tool names,
//!   resource URIs, log or notification params;
//! - an error: its `code`.
//!
//! Server names are the application's own configuration and stay.

use std::time::Instant;

use serde::Serialize;

use crate::actor::messages::ServerEvent;
use crate::actor::status::{Counters, ServerStatus};
use crate::error::{Error, ErrorKind};
use crate::policy::state::ServerState;
use crate::serialize::millis;

/// An error as its code.
#[derive(Serialize)]
pub(super) struct Code {
    code: ErrorKind,
}

impl From<&Error> for Code {
    fn from(error: &Error) -> Code {
        Code { code: error.kind() }
    }
}

#[derive(Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub(super) enum State {
    Connecting {
        attempt: u32,
        max: u32,
    },
    Ready,
    Reconnecting {
        attempt: u32,
        retry_in_ms: Option<u64>,
    },
    Failed {
        error: Code,
        revive_in_ms: Option<u64>,
    },
    Stopped,
}

fn until(at: Instant) -> u64 {
    millis(at.saturating_duration_since(Instant::now()))
}

impl From<&ServerState> for State {
    fn from(state: &ServerState) -> State {
        match state {
            ServerState::Connecting { attempt, max } => State::Connecting {
                attempt: *attempt,
                max: *max,
            },
            ServerState::Ready => State::Ready,
            ServerState::Reconnecting { attempt, retry_at } => State::Reconnecting {
                attempt: *attempt,
                retry_in_ms: retry_at.map(until),
            },
            ServerState::Failed { error, revive_at } => State::Failed {
                error: error.into(),
                revive_in_ms: revive_at.map(until),
            },
            ServerState::Stopped => State::Stopped,
        }
    }
}

/// What a state change says in the redacted view: the state in words, no server text.
fn message(state: &ServerState) -> String {
    match state {
        ServerState::Connecting { .. } => "Connecting".to_owned(),
        ServerState::Ready => "Ready".to_owned(),
        ServerState::Reconnecting { attempt, .. } => format!("Reconnecting (attempt {attempt})"),
        ServerState::Failed { error, .. } => format!("Failed ({})", error.kind().code()),
        ServerState::Stopped => "Stopped".to_owned(),
    }
}

/// A server's status in the redacted view.
#[derive(Serialize)]
pub(super) struct Status<'a> {
    name: &'a str,
    transport: &'a str,
    state: State,
    in_state_for_ms: u64,
    era: Option<&'static str>,
    protocol_version: &'a Option<String>,
    tool_count: usize,
    /// The tool list was cut short (its reason is ours, but it says nothing more worth
    /// showing here).
    tools_truncated: bool,
    counters: &'a Counters,
    pending_calls: usize,
    /// Tasks followed (not their ids: a server may use them as bearer tokens).
    task_count: usize,
    last_error: Option<Code>,
    redacted: bool,
}

impl<'a> From<&'a ServerStatus> for Status<'a> {
    fn from(s: &'a ServerStatus) -> Status<'a> {
        Status {
            name: &s.name,
            transport: s.transport,
            state: (&s.state).into(),
            in_state_for_ms: millis(s.in_state_for),
            era: s.era.map(|e| e.name()),
            protocol_version: &s.protocol_version,
            tool_count: s.tools.len(),
            tools_truncated: s.tools_truncated.is_some(),
            counters: &s.counters,
            pending_calls: s.pending_calls,
            task_count: s.tasks.len(),
            last_error: s.last_error.as_ref().map(Code::from),
            redacted: true,
        }
    }
}

/// Every status in the redacted view.
pub(super) fn statuses(all: &[ServerStatus]) -> Vec<Status<'_>> {
    all.iter().map(Status::from).collect()
}

/// An event in the redacted view, tagged by `type` as the full one.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event<'a> {
    StateChanged {
        server: &'a str,
        state: State,
        message: String,
    },
    ToolsChanged {
        server: &'a str,
    },
    ResourceUpdated {
        server: &'a str,
    },
    Log {
        server: &'a str,
    },
    Notification {
        server: &'a str,
    },
    Replacing {
        server: &'a str,
    },
    Replaced {
        server: &'a str,
    },
    ReplaceFailed {
        server: &'a str,
    },
    TaskChanged {
        server: &'a str,
        tool: &'a str,
        status: &'static str,
    },
}

impl<'a> From<&'a ServerEvent> for Event<'a> {
    fn from(event: &'a ServerEvent) -> Event<'a> {
        match event {
            ServerEvent::StateChanged { server, state, .. } => Event::StateChanged {
                server,
                state: state.into(),
                message: message(state),
            },
            ServerEvent::ToolsChanged { server, .. } => Event::ToolsChanged { server },
            ServerEvent::ResourceUpdated { server, .. } => Event::ResourceUpdated { server },
            ServerEvent::Log { server, .. } => Event::Log { server },
            ServerEvent::Notification { server, .. } => Event::Notification { server },
            ServerEvent::Replacing { server } => Event::Replacing { server },
            ServerEvent::Replaced { server } => Event::Replaced { server },
            // Not what went wrong: that may quote the server or its configuration.
            ServerEvent::ReplaceFailed { server, .. } => Event::ReplaceFailed { server },
            // Not the task's id (a server may use it as a bearer token), nor what the server
            // said.
            ServerEvent::TaskChanged {
                server,
                tool,
                status,
                ..
            } => Event::TaskChanged {
                server,
                tool,
                status: status.as_str(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};

    use super::*;

    /// An error full of what the redacted view must not show.
    fn spawn_error() -> Error {
        Error::Unavailable {
            server: "fs".into(),
            reason: "exit code 1: token=SECRET-1 at /home/ops/.config".into(),
            attempts: 3,
            stderr_tail: vec!["Traceback: SECRET-2".into()],
        }
    }

    fn shown(value: &impl Serialize) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn a_status_keeps_its_health_and_loses_its_details() {
        let status = ServerStatus {
            name: "fs".into(),
            transport: "stdio",
            state: ServerState::Failed {
                error: spawn_error(),
                revive_at: None,
            },
            in_state_for: Duration::from_millis(1500),
            server_info: None,
            era: None,
            protocol_version: Some("2025-11-25".into()),
            capabilities: None,
            tools: Vec::new(),
            tools_truncated: None,
            subscriptions: vec!["file:///home/ops/SECRET-3".into()],
            counters: Counters::default(),
            last_error: Some(spawn_error()),
            pid: Some(4242),
            pending_calls: 2,
            tasks: vec![crate::tasks::TaskInfo::new(
                crate::tasks::TaskHandle::new(
                    "fs",
                    "TASK-ID-SECRET-4",
                    "build",
                    std::time::SystemTime::now(),
                ),
                crate::tasks::TaskStatus::Working,
            )],
            task_leases_hold_for: None,
            next_generation: None,
        };
        let view = serde_json::to_value(Status::from(&status)).unwrap();
        assert_eq!(
            view["state"],
            json!({"name": "failed", "error": {"code": "unavailable"}, "revive_in_ms": null})
        );
        assert_eq!(view["last_error"], json!({"code": "unavailable"}));
        assert_eq!(view["in_state_for_ms"], 1500);
        assert_eq!(view["pending_calls"], 2);
        assert_eq!(view["task_count"], 1);
        assert_eq!(view["redacted"], true);
        let keys: Vec<&str> = view
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for gone in [
            "pid",
            "tools",
            "server_info",
            "capabilities",
            "subscriptions",
        ] {
            assert!(!keys.contains(&gone), "{gone} in {view}");
        }
        let text = shown(&view);
        assert!(!text.contains("SECRET") && !text.contains("4242"), "{text}");
    }

    #[test]
    fn events_say_what_happened_to_whom_and_no_more() {
        let failed = ServerEvent::StateChanged {
            server: "fs".into(),
            state: ServerState::Failed {
                error: spawn_error(),
                revive_at: None,
            },
            message: format!("Failed after 3 attempts: {}", spawn_error()),
        };
        let view = serde_json::to_value(Event::from(&failed)).unwrap();
        assert_eq!(view["type"], "state_changed");
        assert_eq!(view["message"], "Failed (unavailable)");
        let quiet = [
            ServerEvent::ToolsChanged {
                server: "fs".into(),
                added: vec!["SECRET-tool".into()],
                removed: Vec::new(),
                changed: vec!["SECRET-changed".into()],
            },
            ServerEvent::ResourceUpdated {
                server: "fs".into(),
                uri: "file:///SECRET".into(),
            },
            ServerEvent::Log {
                server: "fs".into(),
                params: json!({"data": "SECRET"}),
            },
            ServerEvent::Notification {
                server: "fs".into(),
                method: "notifications/SECRET".into(),
                params: None,
            },
            ServerEvent::TaskChanged {
                server: "fs".into(),
                task_id: "SECRET-task".into(),
                tool: "build".into(),
                status: crate::tasks::TaskStatus::InputRequired,
                message: Some("SECRET-message".into()),
            },
        ];
        for event in [&failed].into_iter().chain(&quiet) {
            let text = shown(&Event::from(event));
            assert!(!text.contains("SECRET"), "{text}");
            let view: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                view["type"],
                event.type_name(),
                "the same types as the full view"
            );
            assert_eq!(view["server"], "fs");
        }
    }
}
