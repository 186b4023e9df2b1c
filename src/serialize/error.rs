//! [`ErrorKind`] as its stable code, and [`ErrorView`], the serializable form of an [`Error`]:
//! an error holds Durations and JSON-RPC `data` in variant-specific places, the view lays them
//! out flat, the same for every variant, so that clients can read any error one way.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::millis;
use crate::error::{Error, ErrorKind};

/// Every kind, for reading codes back. `exhaustive` below fails to compile when a kind is
/// added and not listed.
const KINDS: [ErrorKind; 14] = [
    ErrorKind::Timeout,
    ErrorKind::OutcomeUnknown,
    ErrorKind::Unavailable,
    ErrorKind::InvalidConnection,
    ErrorKind::Unauthorized,
    ErrorKind::UnsupportedProtocolVersion,
    ErrorKind::InvalidResponse,
    ErrorKind::Refused,
    ErrorKind::Rpc,
    ErrorKind::Overloaded,
    ErrorKind::ServerNotFound,
    ErrorKind::Config,
    ErrorKind::Stopped,
    ErrorKind::Cancelled,
];

#[allow(dead_code)]
fn exhaustive(kind: ErrorKind) {
    match kind {
        ErrorKind::Timeout
        | ErrorKind::OutcomeUnknown
        | ErrorKind::Unavailable
        | ErrorKind::InvalidConnection
        | ErrorKind::Unauthorized
        | ErrorKind::UnsupportedProtocolVersion
        | ErrorKind::InvalidResponse
        | ErrorKind::Refused
        | ErrorKind::Rpc
        | ErrorKind::Overloaded
        | ErrorKind::ServerNotFound
        | ErrorKind::Config
        | ErrorKind::Stopped
        | ErrorKind::Cancelled => {}
    }
}

impl Serialize for ErrorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for ErrorKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        KINDS
            .into_iter()
            .find(|k| k.code() == code)
            .ok_or_else(|| serde::de::Error::unknown_variant(&code, &CODES))
    }
}

const CODES: [&str; 14] = [
    "timeout",
    "outcome_unknown",
    "unavailable",
    "invalid_connection",
    "unauthorized",
    "unsupported_protocol_version",
    "invalid_response",
    "refused",
    "rpc",
    "overloaded",
    "server_not_found",
    "config",
    "stopped",
    "cancelled",
];

/// An [`Error`] as JSON: `{"code": "timeout", "message": "server `fs`: tools/call timed out
/// after 2s", "server": "fs", "method": "tools/call"}`. Fields that a variant does not have are
/// left out (`null` when read back is the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorView {
    /// The kind's stable code ([`ErrorKind::code`]).
    pub code: ErrorKind,
    /// The error's message without the stderr tail (that is in `stderr_tail`).
    pub message: String,
    /// The server it is about; `None` for a configuration error of no one server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The JSON-RPC method of the call, for call errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// How long the server asked us to wait ([`Error::retry_after`]), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The process's exit status (`exit code 1`, `signal 9 (SIGKILL)`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<String>,
    /// The last lines the server wrote to stderr, oldest first, escaped and bounded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// The JSON-RPC error code of an `rpc` error, or the HTTP status of a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// The JSON-RPC error's `data`, or the capabilities a server requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The setting to fix, for configuration and spawn errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The id of the task the call ran as, for the errors of calls the server ran as tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl From<&Error> for ErrorView {
    fn from(e: &Error) -> Self {
        let mut view = ErrorView {
            code: e.kind(),
            message: e.without_stderr(),
            server: None,
            method: None,
            retry_after_ms: e.retry_after().map(millis),
            exit_status: None,
            stderr_tail: e.stderr_tail().to_vec(),
            status: None,
            data: None,
            field: None,
            task_id: None,
        };
        let owned = |s: &String| Some(s.clone());
        match e {
            Error::Timeout { server, method, .. }
            | Error::OutcomeUnknown { server, method, .. }
            | Error::InvalidResponse { server, method, .. }
            | Error::HeaderMismatch { server, method, .. } => {
                view.server = owned(server);
                view.method = owned(method);
            }
            Error::Rpc {
                server,
                method,
                code,
                data,
                ..
            } => {
                view.server = owned(server);
                view.method = owned(method);
                view.status = Some(*code);
                view.data = data.clone();
            }
            Error::MissingClientCapability {
                server,
                method,
                required,
                ..
            } => {
                view.server = owned(server);
                view.method = owned(method);
                view.data = required.clone();
            }
            Error::Connection {
                server,
                exit_status,
                ..
            } => {
                view.server = owned(server);
                view.exit_status = exit_status.clone();
            }
            Error::Spawn { server, field, .. } => {
                view.server = owned(server);
                view.field = owned(field);
            }
            Error::Refused {
                server,
                method,
                status,
                ..
            } => {
                view.server = owned(server);
                view.method = owned(method);
                view.status = status.map(i64::from);
            }
            Error::Unauthorized { server, status, .. } => {
                view.server = owned(server);
                view.status = Some(i64::from(*status));
            }
            Error::Config { server, field, .. } => {
                view.server = server.clone();
                view.field = owned(field);
            }
            Error::Cancelled {
                server,
                method,
                task_id,
                ..
            } => {
                view.server = owned(server);
                view.method = owned(method);
                view.task_id = owned(task_id);
            }
            Error::TaskLost {
                server, task_id, ..
            } => {
                view.server = owned(server);
                view.method = Some("tools/call".into());
                view.task_id = owned(task_id);
            }
            Error::TaskTimeout { handle, .. } => {
                view.server = Some(handle.server.clone());
                view.method = Some("tools/call".into());
                view.task_id = Some(handle.task_id.clone());
            }
            Error::Unavailable { server, .. }
            | Error::AuthorizationRequired { server, .. }
            | Error::UnsupportedProtocolVersion { server, .. }
            | Error::Overloaded { server, .. }
            | Error::ServerNotFound { server }
            | Error::Stopped { server } => view.server = owned(server),
            Error::SupervisorStopped | Error::Runtime { .. } => {}
        }
        view
    }
}

impl From<Error> for ErrorView {
    fn from(e: Error) -> Self {
        ErrorView::from(&e)
    }
}

/// An error serializes as its [`ErrorView`].
impl Serialize for Error {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ErrorView::from(self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::protocol::jsonrpc::RpcError;

    #[test]
    fn every_kind_reads_back_from_its_code() {
        for (kind, code) in KINDS.into_iter().zip(CODES) {
            assert_eq!(kind.code(), code);
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, code);
            assert_eq!(serde_json::from_value::<ErrorKind>(json).unwrap(), kind);
        }
        let unknown = serde_json::from_value::<ErrorKind>(json!("nope")).unwrap_err();
        assert!(
            unknown.to_string().contains("unknown variant `nope`"),
            "{unknown}"
        );
    }

    #[test]
    fn an_error_is_flat_json_without_the_stderr_tail_in_its_message() {
        let dead = Error::process_ended(
            "fs",
            "the server closed its stdout",
            Some("signal 9 (SIGKILL)".into()),
            vec!["<b>boom</b>".into()],
        );
        assert_eq!(
            serde_json::to_value(&dead).unwrap(),
            json!({
                "code": "invalid_connection",
                "message": "server `fs`: connection failed: the server closed its stdout (signal 9 (SIGKILL))",
                "server": "fs",
                "exit_status": "signal 9 (SIGKILL)",
                "stderr_tail": ["<b>boom</b>"],
            })
        );
        let mut rpc = RpcError::new(-32602, "bad params");
        rpc.data = Some(json!({"field": "a"}));
        let rpc = Error::rpc("calc", "tools/call", rpc);
        let view = ErrorView::from(&rpc);
        assert_eq!(
            (view.status, view.data.clone()),
            (Some(-32602), Some(json!({"field": "a"})))
        );
        let back: ErrorView = serde_json::from_value(serde_json::to_value(&rpc).unwrap()).unwrap();
        assert_eq!(back, view);
        let busy = Error::Overloaded {
            server: "web".into(),
            limit: 0,
            reason: "HTTP 503".into(),
            retry_after: Some(Duration::from_millis(1500)),
        };
        assert_eq!(ErrorView::from(busy).retry_after_ms, Some(1500));
        let config = Error::config(None, "mcpServers", "not an object");
        let view = ErrorView::from(config);
        assert_eq!(
            (view.server, view.field.as_deref()),
            (None, Some("mcpServers"))
        );
    }
}
