//! What mcpctl prints with `--json`: one JSON object per line on stdout, for every command.
//!
//! Its own room so that every format a script may parse is defined in one place. Objects whose
//! keys are built with `json!` come out with their keys in alphabetical order (serde_json's
//! map); the outcome lines of `call`, `read` and `prompt` keep `seq`/`ok`/`ms` first, as
//! `call --json` always printed them. What a server sent is passed on as JSON values, which
//! escape everything that could forge a line.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_supervisor::tasks::TaskRecord;
use mcp_supervisor::{Error, ServerEvent, ServerStatus, TaskHandle, TaskInfo};
use serde::Serialize;
use serde_json::{json, Value};

use crate::tasks::{millis, outcome_state, UNKNOWN_TOOL};

/// A server's status: `{"name":..,"transport":..,"state":..,"era":..,"protocol_version":..,
/// "server_info":{"name":..,"version":..}|null,"tools":n,"tools_truncated":"why"|null,
/// "pid":n|null,"in_state_ms":n,"pending_calls":n,"reconnects":n,"last_error":{..}|null}`.
pub(crate) fn status(s: &ServerStatus) -> String {
    json!({
        "name": s.name,
        "transport": s.transport,
        "state": s.state.name(),
        "era": s.era.map(|e| e.name()),
        "protocol_version": s.protocol_version,
        "server_info": s.server_info.as_ref().map(|i| json!({"name": i.name, "version": i.version})),
        "tools": s.tool_count(),
        "tools_truncated": s.tools_truncated,
        "pid": s.pid,
        "in_state_ms": u64::try_from(s.in_state_for.as_millis()).unwrap_or(u64::MAX),
        "pending_calls": s.pending_calls,
        "reconnects": s.counters.reconnects,
        "last_error": s.last_error.as_ref().map(error),
    })
    .to_string()
}

/// An entry of the config file that could not be loaded, as a status line: state `invalid`.
pub(crate) fn invalid_entry(name: Option<&str>, e: &Error) -> String {
    json!({ "name": name, "state": "invalid", "last_error": error(e) }).to_string()
}

/// A disabled entry of the config file, as a status line: state `disabled`.
pub(crate) fn disabled_entry(name: &str) -> String {
    json!({ "name": name, "state": "disabled", "last_error": null }).to_string()
}

/// `{"kind":..,"message":..,"stderr_tail":[..]}`: `message` is the first line of the error
/// (without the stderr tail, which has its own key, one string per line).
pub(crate) fn error(e: &Error) -> Value {
    json!({
        "kind": e.code(),
        "message": headline(e),
        "stderr_tail": e.stderr_tail(),
    })
}

/// The first line of an error: its `Display` without the stderr tail it appends.
pub(crate) fn headline(e: &Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_end_matches("; last stderr lines:").to_owned()
}

/// One item of a server's list: `{"server":..,"<key>":{..}}`, e.g. key `tool`.
pub(crate) fn item(server: &str, key: &str, value: &impl Serialize) -> String {
    let value = serde_json::to_value(value).unwrap_or_else(|e| unserializable(&e));
    let mut line = serde_json::Map::new();
    line.insert("server".into(), Value::from(server));
    line.insert(key.into(), value);
    Value::Object(line).to_string()
}

/// A server that could not answer a list: `{"server":..,"error":{..}}`.
pub(crate) fn server_error(server: &str, e: &Error) -> String {
    json!({ "server": server, "error": error(e) }).to_string()
}

/// The outcome of one request: `{"seq":1,"ok":true,"ms":12,"result":{...}}` or
/// `{"seq":2,"ok":false,"ms":1000,"error":{"kind":"timeout","message":"..."}}`, keys in that
/// order; without `seq` when `seq` is `None` (a request made once). A timeout whose task runs
/// on adds `"task":{..}` (see [`task`]) after the error.
pub(crate) fn outcome<T: Serialize>(
    seq: Option<u32>,
    ms: u64,
    outcome: &Result<T, Error>,
) -> String {
    let seq = seq.map_or(String::new(), |n| format!(r#""seq":{n},"#));
    match outcome {
        Ok(result) => {
            let result =
                serde_json::to_string(result).unwrap_or_else(|e| unserializable(&e).to_string());
            format!(r#"{{{seq}"ok":true,"ms":{ms},"result":{result}}}"#)
        }
        Err(e) => {
            let kind = Value::from(e.code());
            let message = Value::from(e.to_string());
            let task = e.task().map_or(String::new(), |handle| {
                format!(r#","task":{}"#, task(handle))
            });
            format!(
                r#"{{{seq}"ok":false,"ms":{ms},"error":{{"kind":{kind},"message":{message}}}{task}}}"#
            )
        }
    }
}

/// A failure of mcpctl's own, of `kind` (`delivered`), in the form of [`outcome`]'s.
pub(crate) fn failure(seq: Option<u32>, ms: u64, kind: &str, message: &str) -> String {
    let seq = seq.map_or(String::new(), |n| format!(r#""seq":{n},"#));
    let (kind, message) = (Value::from(kind), Value::from(message));
    format!(r#"{{{seq}"ok":false,"ms":{ms},"error":{{"kind":{kind},"message":{message}}}}}"#)
}

/// A task: `{"server":..,"task_id":..,"tool":..|null,"created_unix_ms":..,"ttl_ms":..|null}`;
/// `tool` is null when the store had no record of the task.
pub(crate) fn task(handle: &TaskHandle) -> Value {
    json!({
        "server": handle.server,
        "task_id": handle.task_id,
        "tool": known_tool(&handle.tool),
        "created_unix_ms": unix_ms(handle.created_at),
        "ttl_ms": handle.ttl.map(millis),
    })
}

/// A task started by `call --task`: `{"seq":1,"ok":true,"ms":12,"task":{..}}`.
pub(crate) fn task_started(seq: u32, ms: u64, handle: &TaskHandle) -> String {
    format!(
        r#"{{"seq":{seq},"ok":true,"ms":{ms},"task":{}}}"#,
        task(handle)
    )
}

/// What the server says of a task (`tasks show`): [`task`]'s keys, and `"status"`,
/// `"status_message"`, `"poll_interval_ms"`.
pub(crate) fn task_info(info: &TaskInfo) -> Value {
    let mut value = task(&info.handle);
    if let Value::Object(map) = &mut value {
        map.insert("status".into(), Value::from(info.status.as_str()));
        map.insert("status_message".into(), json!(info.status_message));
        map.insert(
            "poll_interval_ms".into(),
            json!(info.poll_interval.map(millis)),
        );
    }
    value
}

/// A task as the store keeps it (`tasks list`): `{"server":..,"task_id":..,"tool":..|null,
/// "status":..,"status_message":..,"created_unix_ms":..,"age_ms":..,"ttl_ms":..,
/// "poll_interval_ms":..,"updated_unix_ms":..,"outcome":null|"kept"|"delivered"}`.
pub(crate) fn task_record(record: &TaskRecord, now: SystemTime) -> String {
    json!({
        "server": record.server,
        "task_id": record.task_id,
        "tool": known_tool(&record.tool),
        "status": record.status.as_str(),
        "status_message": record.status_message,
        "created_unix_ms": unix_ms(record.created_at),
        "age_ms": millis(now.duration_since(record.created_at).unwrap_or_default()),
        "ttl_ms": record.ttl.map(millis),
        "poll_interval_ms": record.poll_interval.map(millis),
        "updated_unix_ms": unix_ms(record.updated_at),
        "outcome": outcome_state(record),
    })
    .to_string()
}

fn known_tool(tool: &str) -> Option<&str> {
    (tool != UNKNOWN_TOOL).then_some(tool)
}

/// Milliseconds since the Unix epoch (0 for a time before it).
fn unix_ms(at: SystemTime) -> u64 {
    millis(at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

/// A supervisor event, for `watch`: `{"unix_ms":..,"server":..,"event":"state_changed",
/// "state":..,"message":..}`, `"tools_changed"` with `added`, `removed` and `changed`,
/// `"resource_updated"` with `uri`, `"log"` with `params`, `"notification"` with `method` and
/// `params`.
pub(crate) fn event(unix_ms: u64, event: &ServerEvent) -> String {
    let (kind, mut fields) = match event {
        ServerEvent::StateChanged { state, message, .. } => (
            "state_changed",
            json!({ "state": state.name(), "message": message }),
        ),
        ServerEvent::ToolsChanged {
            added,
            removed,
            changed,
            ..
        } => (
            "tools_changed",
            json!({ "added": added, "removed": removed, "changed": changed }),
        ),
        ServerEvent::ResourceUpdated { uri, .. } => ("resource_updated", json!({ "uri": uri })),
        ServerEvent::Log { params, .. } => ("log", json!({ "params": params })),
        ServerEvent::Notification { method, params, .. } => (
            "notification",
            json!({ "method": method, "params": params }),
        ),
        ServerEvent::Replacing { .. } => ("replacing", json!({})),
        ServerEvent::Replaced { .. } => ("replaced", json!({})),
        ServerEvent::ReplaceFailed { error, .. } => (
            "replace_failed",
            json!({ "error": { "kind": error.code(), "message": error.to_string() } }),
        ),
        ServerEvent::TaskChanged {
            task_id,
            tool,
            status,
            message,
            ..
        } => (
            "task_changed",
            json!({ "task_id": task_id, "tool": tool, "status": status.as_str(), "message": message }),
        ),
        // Events added in later versions.
        other => ("other", json!({ "debug": format!("{other:?}") })),
    };
    if let Value::Object(map) = &mut fields {
        map.insert("unix_ms".into(), Value::from(unix_ms));
        map.insert("server".into(), Value::from(event.server()));
        map.insert("event".into(), Value::from(kind));
    }
    fields.to_string()
}

fn unserializable(e: &serde_json::Error) -> Value {
    json!({ "unserializable": e.to_string() })
}

/// What `watch --reload` made of a change of the file: `{"unix_ms":..,"event":"reloaded",
/// "servers":{"NAME":"added"|..}}` or `{"unix_ms":..,"event":"reload_refused","error":{..}}`.
pub(crate) fn reload(unix_ms: u64, outcome: &mcp_supervisor::watch::WatchOutcome) -> String {
    use mcp_supervisor::watch::WatchOutcome;
    let line = match outcome {
        WatchOutcome::Reloaded(report) => {
            let servers: serde_json::Map<String, Value> = report
                .servers
                .iter()
                .map(|(name, o)| (name.clone(), Value::String(o.to_string())))
                .collect();
            json!({ "unix_ms": unix_ms, "event": "reloaded", "servers": servers })
        }
        WatchOutcome::Refused(e) => json!({
            "unix_ms": unix_ms,
            "event": "reload_refused",
            "error": { "kind": e.code(), "message": e.to_string() },
        }),
        other => json!({ "unix_ms": unix_ms, "event": "other", "debug": format!("{other:?}") }),
    };
    line.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_line_keeps_its_keys_in_order() {
        let ok: Result<Value, Error> = Ok(json!({"content": []}));
        assert_eq!(
            outcome(Some(1), 12, &ok),
            r#"{"seq":1,"ok":true,"ms":12,"result":{"content":[]}}"#
        );
        let failed: Result<Value, Error> = Err(Error::ServerNotFound { server: "x".into() });
        let line = outcome(None, 3, &failed);
        assert!(line.starts_with(r#"{"ok":false,"ms":3,"error":{"kind":"server_not_found""#));
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed["error"]["message"],
            "no MCP server named `x` is configured"
        );
    }

    #[test]
    fn a_timeout_whose_task_runs_on_names_it() {
        let created = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let handle =
            TaskHandle::new("jobs", "t-9", "build", created).ttl(Some(Duration::from_secs(60)));
        let timeout: Result<Value, Error> = Err(Error::TaskTimeout {
            handle: Box::new(handle),
            timeout: Duration::from_millis(500),
        });
        let line: Value = serde_json::from_str(&outcome(Some(1), 501, &timeout)).unwrap();
        assert_eq!(line["error"]["kind"], "timeout");
        assert_eq!(
            line["task"],
            json!({"server": "jobs", "task_id": "t-9", "tool": "build",
                   "created_unix_ms": 1_700_000_000_000_u64, "ttl_ms": 60_000})
        );
        let unknown = TaskHandle::new("jobs", "t-9", UNKNOWN_TOOL, created);
        assert_eq!(task(&unknown)["tool"], Value::Null);
    }

    #[test]
    fn an_event_is_one_object() {
        let e = ServerEvent::ToolsChanged {
            server: "fs".into(),
            added: vec!["a".into()],
            removed: vec![],
            changed: vec!["b".into()],
        };
        let line: Value = serde_json::from_str(&event(7, &e)).unwrap();
        assert_eq!(
            line,
            json!({"unix_ms": 7, "server": "fs", "event": "tools_changed", "added": ["a"],
                   "removed": [], "changed": ["b"]})
        );
    }

    #[test]
    fn an_error_keeps_its_stderr_tail_apart() {
        let e = Error::Connection {
            server: "fs".into(),
            message: "process exited".into(),
            exit_status: None,
            stderr_tail: vec!["GITHUB_TOKEN not set".into()],
        };
        let value = error(&e);
        assert_eq!(
            value["message"],
            "server `fs`: connection failed: process exited"
        );
        assert_eq!(value["stderr_tail"], json!(["GITHUB_TOKEN not set"]));
    }
}
