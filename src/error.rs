//! The one error type of the crate, and the stable kind codes it maps to.
//!
//! Every variant carries what a user needs to act on it without reading logs: the server's name,
//! the method that failed, attempt counts, and for dead processes the exit status and the last
//! lines the server wrote to stderr. [`Error::kind`] folds the variants into a small set of
//! [`ErrorKind`]s that say what the *caller* can do about the error; [`ErrorKind::code`] is a
//! short string that stays stable across releases, for logs and metrics.

use std::fmt;
use std::time::Duration;

/// What went wrong with a call, a connection or a configuration.
///
/// Errors are `Clone` so that the same failure can be kept as a server's `last_error` and handed
/// to every caller it affected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The call did not complete before its deadline. A `notifications/cancelled` was sent for it
    /// if the request had reached the server.
    #[error("server `{server}`: {method} timed out after {timeout:?}")]
    Timeout {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// The timeout that expired.
        timeout: Duration,
    },

    /// The connection broke after the request was written, and the call is not safe to re-send:
    /// the server may or may not have executed it. We did not run it twice.
    #[error("server `{server}`: outcome of {method} is unknown: the connection broke after the request was sent ({reason})")]
    OutcomeUnknown {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// Why the connection broke.
        reason: String,
    },

    /// The server cannot take calls now: it failed to start after all retries, it was stopped, or
    /// a call that was safe to re-send lost its connection twice.
    #[error("server `{server}` is unavailable: {reason}{}", StderrTail(.stderr_tail))]
    Unavailable {
        /// Server name.
        server: String,
        /// Why, usually the last connection error.
        reason: String,
        /// Connection attempts made before giving up (0 where not applicable).
        attempts: u32,
        /// The last lines the server wrote to stderr, oldest first.
        stderr_tail: Vec<String>,
    },

    /// Connecting failed or an established connection broke: the process could not be spawned,
    /// exited, closed its pipes, or the handshake failed.
    #[error("server `{server}`: connection failed: {message}{}{}", ExitStatus(.exit_status), StderrTail(.stderr_tail))]
    Connection {
        /// Server name.
        server: String,
        /// What failed.
        message: String,
        /// The process's exit status, e.g. `exit code 1` or `signal 9 (SIGKILL)`, when known.
        exit_status: Option<String>,
        /// The last lines the server wrote to stderr, oldest first.
        stderr_tail: Vec<String>,
    },

    /// The server refused our credentials (HTTP 401 or 403). Not retried: retrying with the same
    /// credentials would only hammer the server.
    #[error("server `{server}` refused the request: HTTP {status} {message}")]
    Unauthorized {
        /// Server name.
        server: String,
        /// 401 or 403.
        status: u16,
        /// What the server said (the `WWW-Authenticate` header or the body, shortened).
        message: String,
    },

    /// The server answered with a protocol version this client does not speak.
    #[error("server `{server}` answered initialize with protocol version `{version}`, which this client does not support (supported: {supported})")]
    UnsupportedProtocolVersion {
        /// Server name.
        server: String,
        /// The version the server answered with.
        version: String,
        /// The versions we accept, comma separated.
        supported: String,
    },

    /// The server's answer could not be understood (wrong shape, wrong types).
    #[error("server `{server}`: invalid response to {method}: {message}")]
    InvalidResponse {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// What was wrong with it.
        message: String,
    },

    /// The server answered the call with a JSON-RPC error.
    #[error("server `{server}`: {method} failed with JSON-RPC error {code}: {message}")]
    Rpc {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// JSON-RPC error code.
        code: i64,
        /// JSON-RPC error message.
        message: String,
        /// Optional `data` member of the error object.
        data: Option<serde_json::Value>,
    },

    /// The call was not run because a limit was reached: too many calls are in flight or queued
    /// for this server here (it was not sent), or the server refused it unprocessed with HTTP
    /// 429 or 503, saying in `Retry-After` how long to wait if it said so. Try again, not before
    /// [`Error::retry_after`].
    #[error("server `{server}` is overloaded: {}{}", Overload(*.limit, .reason), RetryAfter(.retry_after))]
    Overloaded {
        /// Server name.
        server: String,
        /// The configured limit that was reached; 0 when the server refused the call.
        limit: usize,
        /// What the server said (`HTTP 503: ...`); empty for our own limit.
        reason: String,
        /// How long the server asked us to wait (its `Retry-After`, at most the reconnect
        /// backoff's cap), if it said.
        retry_after: Option<Duration>,
    },

    /// No server of that name is configured.
    #[error("no MCP server named `{server}` is configured")]
    ServerNotFound {
        /// The name that was asked for.
        server: String,
    },

    /// The configuration is invalid.
    #[error("invalid configuration{}: field `{field}`: {message}", ServerName(.server))]
    Config {
        /// The server the problem belongs to, if any.
        server: Option<String>,
        /// The offending field, e.g. `command` or `mcpServers.fs.args`.
        field: String,
        /// What is wrong with it.
        message: String,
    },

    /// The server or the supervisor was shut down while the call was pending.
    #[error("server `{server}` was stopped")]
    Stopped {
        /// Server name.
        server: String,
    },
}

/// What the caller can do about an error: a coarse classification of [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The deadline passed. Try later, or with a longer timeout.
    Timeout,
    /// The call may or may not have run on the server. Check before running it again.
    OutcomeUnknown,
    /// The server is down or failed to start. Try later or degrade.
    Unavailable,
    /// The connection could not be made or broke.
    InvalidConnection,
    /// The server refused our credentials (HTTP 401/403). Fix the configuration.
    Unauthorized,
    /// The server speaks a protocol version we do not.
    UnsupportedProtocolVersion,
    /// The server's answer was malformed.
    InvalidResponse,
    /// The server answered with a JSON-RPC error.
    Rpc,
    /// Too many calls in flight; back off.
    Overloaded,
    /// No such server.
    ServerNotFound,
    /// Invalid configuration.
    Config,
    /// Shut down.
    Stopped,
}

impl ErrorKind {
    /// A short code that stays stable across releases, for logs and metrics.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::OutcomeUnknown => "outcome_unknown",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::InvalidConnection => "invalid_connection",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::UnsupportedProtocolVersion => "unsupported_protocol_version",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::Rpc => "rpc",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ServerNotFound => "server_not_found",
            ErrorKind::Config => "config",
            ErrorKind::Stopped => "stopped",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Error {
    /// The kind of this error: what the caller can do about it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
            Error::Connection { .. } => ErrorKind::InvalidConnection,
            Error::Unauthorized { .. } => ErrorKind::Unauthorized,
            Error::UnsupportedProtocolVersion { .. } => ErrorKind::UnsupportedProtocolVersion,
            Error::InvalidResponse { .. } => ErrorKind::InvalidResponse,
            Error::Rpc { .. } => ErrorKind::Rpc,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
            Error::ServerNotFound { .. } => ErrorKind::ServerNotFound,
            Error::Config { .. } => ErrorKind::Config,
            Error::Stopped { .. } => ErrorKind::Stopped,
        }
    }

    /// Shorthand for `self.kind().code()`.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }

    /// How long the server asked us to wait before trying again (HTTP `Retry-After` on a 429 or
    /// 503, capped), where the error carries it. The supervisor waits at least this long itself
    /// before it re-opens a connection, a stream or a session.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The last stderr lines of the server process, where the error carries them.
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            Error::Unavailable { stderr_tail, .. } | Error::Connection { stderr_tail, .. } => {
                stderr_tail
            }
            _ => &[],
        }
    }

    /// The message without the stderr tail, for errors that carry the tail in a field of their
    /// own (so it is not shown twice).
    pub(crate) fn without_stderr(&self) -> String {
        match self {
            Error::Connection {
                server,
                message,
                exit_status,
                ..
            } => format!(
                "server `{server}`: connection failed: {message}{}",
                ExitStatus(exit_status)
            ),
            other => other.to_string(),
        }
    }

    pub(crate) fn config(
        server: Option<&str>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Config {
            server: server.map(str::to_owned),
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn connection(server: &str, message: impl Into<String>) -> Self {
        Error::Connection {
            server: server.to_owned(),
            message: message.into(),
            exit_status: None,
            stderr_tail: Vec::new(),
        }
    }
}

/// Renders a stderr tail after an error message, only when there is one.
struct StderrTail<'a>(&'a [String]);

impl fmt::Display for StderrTail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("; last stderr lines:")?;
        for line in self.0 {
            write!(f, "\n  | {line}")?;
        }
        Ok(())
    }
}

/// Why a call met an overload: our own limit, or what the server said.
struct Overload<'a>(usize, &'a str);

impl fmt::Display for Overload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overload(0, reason) => f.write_str(reason),
            Overload(limit, _) => write!(f, "{limit} calls already in flight or queued"),
        }
    }
}

/// The server's `Retry-After`, when it gave one.
struct RetryAfter<'a>(&'a Option<Duration>);

impl fmt::Display for RetryAfter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(delay) => write!(f, " (retry after {delay:?})"),
            None => Ok(()),
        }
    }
}

struct ExitStatus<'a>(&'a Option<String>);

impl fmt::Display for ExitStatus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(status) => write!(f, " ({status})"),
            None => Ok(()),
        }
    }
}

struct ServerName<'a>(&'a Option<String>);

impl fmt::Display for ServerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(server) => write!(f, " for server `{server}`"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let e = Error::Timeout {
            server: "fs".into(),
            method: "tools/call".into(),
            timeout: Duration::from_secs(2),
        };
        assert_eq!(e.code(), "timeout");
        assert_eq!(e.to_string(), "server `fs`: tools/call timed out after 2s");
        assert_eq!(
            Error::ServerNotFound { server: "x".into() }.code(),
            "server_not_found"
        );
    }

    #[test]
    fn connection_error_shows_exit_status_and_stderr() {
        let e = Error::Connection {
            server: "fs".into(),
            message: "process exited".into(),
            exit_status: Some("exit code 1".into()),
            stderr_tail: vec!["boom".into(), "bye".into()],
        };
        assert_eq!(
            e.to_string(),
            "server `fs`: connection failed: process exited (exit code 1); last stderr lines:\n  | boom\n  | bye"
        );
        assert_eq!(e.stderr_tail(), ["boom", "bye"]);
        assert_eq!(e.kind(), ErrorKind::InvalidConnection);
    }

    #[test]
    fn without_stderr_drops_only_the_tail() {
        let e = Error::Connection {
            server: "fs".into(),
            message: "process exited".into(),
            exit_status: Some("exit code 1".into()),
            stderr_tail: vec!["boom".into()],
        };
        assert_eq!(
            e.without_stderr(),
            "server `fs`: connection failed: process exited (exit code 1)"
        );
    }

    #[test]
    fn overloaded_says_whose_limit_and_how_long_to_wait() {
        let ours = Error::Overloaded {
            server: "fs".into(),
            limit: 2,
            reason: String::new(),
            retry_after: None,
        };
        assert_eq!(
            ours.to_string(),
            "server `fs` is overloaded: 2 calls already in flight or queued"
        );
        assert_eq!(ours.retry_after(), None);
        let theirs = Error::Overloaded {
            server: "web".into(),
            limit: 0,
            reason: "HTTP 503: busy".into(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(
            theirs.to_string(),
            "server `web` is overloaded: HTTP 503: busy (retry after 2s)"
        );
        assert_eq!(theirs.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(theirs.code(), "overloaded");
    }

    #[test]
    fn config_error_names_server_and_field() {
        let e = Error::config(Some("fs"), "command", "must not be empty");
        assert_eq!(
            e.to_string(),
            "invalid configuration for server `fs`: field `command`: must not be empty"
        );
    }
}
