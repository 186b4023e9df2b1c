//! The event printer: one line per supervisor event, with the UTC time, for `watch` and for
//! the events that arrive while a watch shuts down; with `--json`, one JSON object per event.
//!
//! Its own room because it keeps state (each server's last state, to show transitions) and
//! knows every kind of [`ServerEvent`], which no other part of mcpctl needs to.
//!
//! What a server sent (log data, notification params, a uri) is printed through
//! [`server_text`]: escaped and bounded, so that a server can neither forge lines of this
//! output nor send escape sequences to the terminal. State-change messages are the
//! supervisor's, with server text in them already escaped.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_supervisor::protocol::text::server_text;
use mcp_supervisor::watch::WatchOutcome;
use mcp_supervisor::{ReloadOutcome, ServerEvent};
use serde_json::Value;

use crate::json;

/// Prints events for `watch`, one line each, with the UTC time.
pub(crate) struct EventPrinter {
    /// Width of the server name column.
    width: usize,
    /// Each server's last state, to show transitions.
    states: HashMap<String, &'static str>,
    /// One JSON object per event instead.
    json: bool,
}

impl EventPrinter {
    pub(crate) fn new(width: usize, json: bool) -> Self {
        EventPrinter {
            width,
            states: HashMap::new(),
            json,
        }
    }

    pub(crate) fn print(&mut self, event: &ServerEvent) {
        if self.json {
            out!("{}", json::event(unix_ms(), event));
            return;
        }
        let prefix = format!("{} {:<w$}  ", utc_now(), event.server(), w = self.width);
        let indent = " ".repeat(prefix.chars().count());
        let text = self.describe(event).replace('\n', &format!("\n{indent}"));
        out!("{prefix}{text}");
    }

    /// What `watch --reload` made of a change of the file.
    pub(crate) fn print_reload(&mut self, outcome: &WatchOutcome) {
        if self.json {
            out!("{}", json::reload(unix_ms(), outcome));
            return;
        }
        let text = match outcome {
            WatchOutcome::Reloaded(report) => {
                let steps: Vec<String> = report
                    .servers
                    .iter()
                    .filter(|(_, o)| !matches!(o, ReloadOutcome::Unchanged))
                    .map(|(name, o)| format!("{name} {o}"))
                    .collect();
                match steps.is_empty() {
                    true => "the file changed; nothing to do".to_owned(),
                    false => format!("the file was applied: {}", steps.join(", ")),
                }
            }
            WatchOutcome::Refused(e) => format!("the file was not applied: {e}"),
            other => format!("{other:?}"),
        };
        // The names are the file's, the errors escaped where they were made.
        out!("{} {text}", utc_now());
    }

    fn describe(&mut self, event: &ServerEvent) -> String {
        match event {
            ServerEvent::StateChanged {
                server,
                state,
                message,
            } => {
                let now = state.name();
                match self.states.insert(server.clone(), now) {
                    Some(before) => format!("{before} → {now}: {message}"),
                    None => format!("{now}: {message}"),
                }
            }
            ServerEvent::ToolsChanged {
                added,
                removed,
                changed,
                ..
            } => {
                let added = added.iter().map(|t| format!("+{t}"));
                let removed = removed.iter().map(|t| format!("-{t}"));
                let changed = changed.iter().map(|t| format!("~{t}"));
                let all: Vec<String> = added.chain(removed).chain(changed).collect();
                format!("tools changed: {}", server_text(&all.join(" ")))
            }
            ServerEvent::ResourceUpdated { uri, .. } => {
                format!("resource updated: {}", server_text(uri))
            }
            ServerEvent::Log { params, .. } => server_text(&log_text(params)),
            ServerEvent::Notification { method, params, .. } => match params {
                Some(params) => server_text(&format!("notification {method} {params}")),
                None => server_text(&format!("notification {method}")),
            },
            ServerEvent::Replacing { .. } => "replacing: a new generation is starting".into(),
            ServerEvent::Replaced { .. } => "replaced: the new generation takes the calls".into(),
            ServerEvent::ReplaceFailed { error, .. } => {
                format!("replacement failed, the old generation serves on: {error}")
            }
            ServerEvent::TaskChanged {
                task_id,
                tool,
                status,
                message,
                ..
            } => match message {
                Some(message) => {
                    server_text(&format!("task {task_id} ({tool}): {status}: {message}"))
                }
                None => server_text(&format!("task {task_id} ({tool}): {status}")),
            },
            // Events added in later versions.
            other => format!("{other:?}"),
        }
    }
}

/// `log <level> [<logger>]: <data>` from `notifications/message` params.
fn log_text(params: &Value) -> String {
    let level = params.get("level").and_then(Value::as_str).unwrap_or("?");
    let logger = params
        .get("logger")
        .and_then(Value::as_str)
        .map_or(String::new(), |l| format!(" [{l}]"));
    let data = match params.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    format!("log {level}{logger}: {data}")
}

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// `HH:MM:SS.mmmZ`, the time of day in UTC.
fn utc_now() -> String {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since_epoch.as_secs() % 86_400;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02}.{:03}Z", since_epoch.subsec_millis())
}
