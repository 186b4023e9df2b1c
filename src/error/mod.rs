//! The one error type of the crate, and the stable kind codes it maps to.
//!
//! Every variant carries what a user needs to act on it without reading logs: the server's name,
//! the method that failed, attempt counts, and for dead processes the exit status and the last
//! lines the server wrote to stderr. [`Error::kind`] folds the variants into a small set of
//! [`ErrorKind`]s that say what the *caller* can do about the error; [`ErrorKind::code`] is a
//! short string that stays stable across releases, for logs and metrics.
//!
//! Text a server chose (a JSON-RPC error message, a protocol version, an HTTP error body, a
//! stderr line) enters an error only through the constructors in `build` (`Error::rpc`,
//! `Error::invalid_response`, ...), which pass it through
//! [`server_text`](crate::protocol::text::server_text): escaped, so that showing or logging an
//! error can never forge a log line or drive a terminal, and bounded, so that a server cannot
//! make us keep a megabyte of it in `last_error` and every event.

use std::fmt;
use std::time::Duration;

mod build;
pub mod http;

/// What went wrong with a call, a connection or a configuration.
///
/// Errors are `Clone` so that the same failure can be kept as a server's `last_error` and handed
/// to every caller it affected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The call did not complete before its deadline. A `notifications/cancelled` was sent for it
    /// if the request had reached the server.
    #[error("server `{server}`: {method} timed out after {}", Ran(*timeout, *elapsed))]
    Timeout {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// The timeout that expired.
        timeout: Duration,
        /// How long the call ran: longer than `timeout` when progress restarted it.
        elapsed: Duration,
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
        /// What failed (server text in it escaped and bounded).
        message: String,
        /// The process's exit status, e.g. `exit code 1` or `signal 9 (SIGKILL)`, when known.
        exit_status: Option<String>,
        /// The last lines the server wrote to stderr, oldest first, each escaped and bounded.
        stderr_tail: Vec<String>,
    },

    /// The server's program could not be started because it is not there or may not be run
    /// (`ENOENT`, `EACCES`, `ENOTDIR` when spawning), or because its working directory is. Not
    /// retried: the same spawn would fail the same way until the configuration or the system is
    /// fixed (then send `Reconnect`). A connection error by kind
    /// ([`ErrorKind::InvalidConnection`]): spawning is how a stdio connection is made.
    #[error("server `{server}`: cannot start `{command}`{}: {message}", InDir(.cwd))]
    Spawn {
        /// Server name.
        server: String,
        /// The command that could not be run.
        command: String,
        /// The working directory, when the problem is the directory (then `field` is `cwd`).
        cwd: Option<String>,
        /// The setting to fix: `command`, or `cwd`.
        field: String,
        /// What the system said.
        message: String,
    },

    /// The server refused our credentials (HTTP 401 or 403). Not retried: retrying with the same
    /// credentials would only hammer the server.
    #[error("server `{server}` refused the request: HTTP {status} {message}")]
    Unauthorized {
        /// Server name.
        server: String,
        /// 401 or 403.
        status: u16,
        /// What the server said (the `WWW-Authenticate` header or the body), escaped and
        /// bounded.
        message: String,
    },

    /// The server needs OAuth authorization that could not be obtained now: discovery or the
    /// authorization server failed, refreshing the token failed, or an interactive
    /// authorization is needed and no [`Authorizer`](crate::auth::Authorizer) could give one.
    /// The server goes to `Failed` without retrying on its own: run the authorization again
    /// (send `Reconnect` once the application is ready to). Never carries a token or secret.
    #[error("server `{server}` needs authorization: {reason}")]
    AuthorizationRequired {
        /// Server name.
        server: String,
        /// Why it could not be obtained (server text escaped and bounded).
        reason: String,
    },

    /// The server speaks no protocol version this client does: it answered `initialize` with
    /// another, or named only others (`-32022`, `server/discover`). Not retried.
    #[error("server `{server}` speaks protocol version `{version}`, which this client does not (it speaks {supported})")]
    UnsupportedProtocolVersion {
        /// Server name.
        server: String,
        /// The version the server answered with, or the versions it named, escaped and bounded.
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
        /// What was wrong with it (quotes of the answer escaped and bounded).
        message: String,
    },

    /// The server refused the request before running it: an HTTP 4xx that is not about
    /// credentials, the session or load (431 headers too large, 413 body too large, 400, ...),
    /// or a connection the server closed twice before it had read the whole request. The
    /// call did not run; sent again unchanged, it would be refused again.
    #[error("server `{server}` refused {method} before running it: {reason}")]
    Refused {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// The HTTP status, when the server sent one.
        status: Option<u16>,
        /// What the server said, or what we saw (server text escaped and bounded).
        reason: String,
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
        /// JSON-RPC error message, escaped and bounded.
        message: String,
        /// Optional `data` member of the error object.
        data: Option<serde_json::Value>,
    },

    /// The server found the request's HTTP headers at odds with its body (`-32020`, the
    /// 2026-07-28 revision): this client and the server read the revision's header rules
    /// differently. The request was not processed.
    #[error("server `{server}`: {method} was refused because its headers do not match its body: {message}")]
    HeaderMismatch {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// What the server said, escaped and bounded.
        message: String,
    },

    /// The server needs a client capability the request did not declare (`-32021`, the
    /// 2026-07-28 revision), e.g. elicitation: register a request handler
    /// ([`SetRequestHandler`](crate::SetRequestHandler)) that offers it.
    #[error("server `{server}`: {method} needs a client capability this client does not declare: {message}")]
    MissingClientCapability {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// What the server said, escaped and bounded.
        message: String,
        /// The capabilities it requires (`data.requiredCapabilities`), as it sent them.
        required: Option<serde_json::Value>,
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

    /// The server ran the call as a task (the Tasks extension), and the task was cancelled
    /// before it completed: by the server, or at our request.
    #[error("server `{server}`: {method} was cancelled on the server (task `{task_id}`){}", Said(.message))]
    Cancelled {
        /// Server name.
        server: String,
        /// JSON-RPC method of the call.
        method: String,
        /// The task's id (escaped and bounded).
        task_id: String,
        /// What the server said about it, escaped and bounded.
        message: Option<String>,
    },

    /// The server ran the call as a task, and its outcome cannot reach this caller: the
    /// server no longer knows it (restarted without keeping its tasks, or the task's time to
    /// live passed), or its outcome went to another caller (on another replica), or a task
    /// store shared by replicas could not record it, so that it is not followed. `reason` says
    /// which. Whether the tool ran, and how far, is unknown (as with
    /// [`ErrorKind::OutcomeUnknown`], its kind): check before running it again. It was not run
    /// again by us.
    #[error("server `{server}`: outcome of tools/call {tool} is unknown: its task `{task_id}` is lost to this caller ({reason})")]
    TaskLost {
        /// Server name.
        server: String,
        /// The tool the task ran.
        tool: String,
        /// The task's id (escaped and bounded).
        task_id: String,
        /// What the server said, or what we saw (escaped and bounded).
        reason: String,
    },

    /// The call's deadline passed while the server still ran it as a task. The task was not
    /// cancelled: it runs on, and [`Error::task`] names it, to await it later or cancel it.
    /// A timeout by kind.
    #[error("server `{}`: tools/call {} timed out after {timeout:?}; it runs on as task `{}`", .handle.server, Escaped(&.handle.tool), Escaped(&.handle.task_id))]
    TaskTimeout {
        /// The task.
        handle: Box<crate::tasks::TaskHandle>,
        /// The timeout that expired.
        timeout: Duration,
    },

    /// The server or the supervisor was shut down while the call was pending.
    #[error("server `{server}` was stopped")]
    Stopped {
        /// Server name.
        server: String,
    },

    /// The supervisor was shut down: a request that names no server (all statuses, events)
    /// made through an [`McpClient`](crate::McpClient) afterwards.
    #[error("the supervisor was shut down")]
    SupervisorStopped,

    /// The supervisor cannot run here: no actix `System` runs on the thread that starts it
    /// (use [`McpClient`](crate::McpClient), which runs one), or the thread of its own could
    /// not be started.
    #[error("the supervisor cannot start: {message}")]
    Runtime {
        /// What is missing, and what to do.
        message: String,
    },
}

// ----- the parts of the messages above that are shown only where they apply -----

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

struct InDir<'a>(&'a Option<String>);

impl fmt::Display for InDir<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(dir) => write!(f, " in `{dir}`"),
            None => Ok(()),
        }
    }
}

/// Text a server chose (a task's id), escaped and bounded where it is shown.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::protocol::text::server_text(self.0))
    }
}

/// What a server said, after a message, when it said something.
struct Said<'a>(&'a Option<String>);

impl fmt::Display for Said<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(said) => write!(f, ": {said}"),
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

/// How long a timed-out call ran: its timeout, or more when progress restarted it.
struct Ran(Duration, Duration);

impl fmt::Display for Ran {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ran(timeout, elapsed) = *self;
        // A timer fires a little after its deadline: within a tenth of a second, the call ran
        // for its timeout.
        if elapsed <= timeout.saturating_add(Duration::from_millis(100)) {
            return write!(f, "{timeout:?}");
        }
        let ms = Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
        write!(
            f,
            "{ms:?} (its timeout of {timeout:?} restarted by progress)"
        )
    }
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
    /// The server refused our credentials (HTTP 401/403), or authorization could not be
    /// obtained. Fix the configuration, or authorize again.
    Unauthorized,
    /// The server speaks a protocol version we do not.
    UnsupportedProtocolVersion,
    /// The server's answer was malformed.
    InvalidResponse,
    /// The server refused the request unprocessed (e.g. HTTP 431, its headers too large): it
    /// did not run.
    Refused,
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
    /// The server ran the call as a task, and the task was cancelled before it completed.
    Cancelled,
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
            ErrorKind::Refused => "refused",
            ErrorKind::Rpc => "rpc",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ServerNotFound => "server_not_found",
            ErrorKind::Config => "config",
            ErrorKind::Stopped => "stopped",
            ErrorKind::Cancelled => "cancelled",
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
            Error::Timeout { .. } | Error::TaskTimeout { .. } => ErrorKind::Timeout,
            Error::OutcomeUnknown { .. } | Error::TaskLost { .. } => ErrorKind::OutcomeUnknown,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
            Error::Connection { .. } | Error::Spawn { .. } => ErrorKind::InvalidConnection,
            Error::Unauthorized { .. } | Error::AuthorizationRequired { .. } => {
                ErrorKind::Unauthorized
            }
            Error::UnsupportedProtocolVersion { .. } => ErrorKind::UnsupportedProtocolVersion,
            Error::InvalidResponse { .. } => ErrorKind::InvalidResponse,
            Error::Refused { .. } => ErrorKind::Refused,
            Error::Rpc { .. } | Error::HeaderMismatch { .. } => ErrorKind::Rpc,
            Error::MissingClientCapability { .. } => ErrorKind::Config,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
            Error::ServerNotFound { .. } => ErrorKind::ServerNotFound,
            Error::Config { .. } | Error::Runtime { .. } => ErrorKind::Config,
            Error::Stopped { .. } | Error::SupervisorStopped => ErrorKind::Stopped,
        }
    }

    /// Whether trying the same thing again, unchanged, can succeed. `false` for refused
    /// credentials, a server that speaks no protocol version we do, a program that cannot be
    /// started, an invalid configuration, an unknown server and a stopped one: only a change
    /// of configuration or of the server (then `Reconnect`) can help. The connection state
    /// machine asks this before every retry, so that such failures neither burn the start-up
    /// retries nor are revived in the background.
    pub fn retry_can_help(&self) -> bool {
        !matches!(
            self,
            Error::Unauthorized { .. }
                | Error::AuthorizationRequired { .. }
                | Error::UnsupportedProtocolVersion { .. }
                | Error::Spawn { .. }
                | Error::Config { .. }
                | Error::MissingClientCapability { .. }
                | Error::ServerNotFound { .. }
                | Error::Stopped { .. }
                | Error::SupervisorStopped
                | Error::Runtime { .. }
        )
    }

    /// The task a call ran as, when the error is about one that runs on
    /// ([`Error::TaskTimeout`]): await it later, or cancel it.
    pub fn task(&self) -> Option<&crate::tasks::TaskHandle> {
        match self {
            Error::TaskTimeout { handle, .. } => Some(handle),
            _ => None,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::RpcError;

    #[test]
    fn codes_are_stable() {
        let e = Error::Timeout {
            server: "fs".into(),
            method: "tools/call".into(),
            timeout: Duration::from_secs(2),
            elapsed: Duration::from_micros(2_000_310),
        };
        assert_eq!(e.code(), "timeout");
        assert_eq!(e.to_string(), "server `fs`: tools/call timed out after 2s");
        // Progress restarted the timeout: the message says how long the call really ran.
        let moved = Error::Timeout {
            server: "fs".into(),
            method: "tools/call".into(),
            timeout: Duration::from_secs(1),
            elapsed: Duration::from_millis(4_012),
        };
        assert_eq!(
            moved.to_string(),
            "server `fs`: tools/call timed out after 4.012s (its timeout of 1s restarted by progress)"
        );
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
    fn retrying_cannot_help_refusals_bad_versions_missing_programs_and_bad_config() {
        let spawn = Error::Spawn {
            server: "fs".into(),
            command: "/no/such".into(),
            cwd: None,
            field: "command".into(),
            message: "No such file or directory (os error 2)".into(),
        };
        assert_eq!(
            spawn.to_string(),
            "server `fs`: cannot start `/no/such`: No such file or directory (os error 2)"
        );
        assert_eq!(spawn.kind(), ErrorKind::InvalidConnection);
        let never = [
            spawn,
            Error::Unauthorized {
                server: "h".into(),
                status: 401,
                message: String::new(),
            },
            Error::UnsupportedProtocolVersion {
                server: "h".into(),
                version: "2099-01-01".into(),
                supported: "2025-11-25".into(),
            },
            Error::config(Some("fs"), "command", "must not be empty"),
        ];
        for e in &never {
            assert!(!e.retry_can_help(), "{e}");
        }
        let may = [
            Error::connection("fs", "process exited"),
            Error::Timeout {
                server: "fs".into(),
                method: "initialize".into(),
                timeout: Duration::from_secs(1),
                elapsed: Duration::from_secs(1),
            },
        ];
        for e in &may {
            assert!(e.retry_can_help(), "{e}");
        }
    }

    #[test]
    fn the_2026_07_28_error_codes_are_typed() {
        let mismatch = Error::rpc("s", "tools/call", RpcError::new(-32020, "Mcp-Name"));
        assert!(
            matches!(mismatch, Error::HeaderMismatch { .. }),
            "{mismatch:?}"
        );
        assert_eq!(mismatch.kind(), ErrorKind::Rpc);
        let mut missing = RpcError::new(-32021, "needs elicitation");
        missing.data = Some(serde_json::json!({"requiredCapabilities": {"elicitation": {}}}));
        let missing = Error::rpc("s", "tools/call", missing);
        match &missing {
            Error::MissingClientCapability { required, .. } => {
                assert_eq!(required, &Some(serde_json::json!({"elicitation": {}})))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(missing.kind(), ErrorKind::Config);
        assert!(!missing.retry_can_help());
    }

    #[test]
    fn server_text_enters_errors_escaped_and_bounded() {
        let forged = "bad\n2026-12-01T00:00:00Z ERROR forged\r\u{1b}[2K";
        let huge = "9".repeat(1 << 20);
        let errors = [
            Error::rpc("s", "tools/call", RpcError::new(-1, forged)),
            Error::invalid_response("s", "initialize", forged),
            Error::unauthorized("s", 401, forged),
            Error::connection("s", forged),
            Error::unsupported_version("s", &huge, &["2025-11-25"]),
            Error::process_ended("s", forged, None, vec![forged.into(), huge.clone()]),
        ];
        for e in &errors {
            let shown = e.to_string();
            let headline = e.without_stderr();
            assert!(!headline.contains(['\n', '\r', '\u{1b}']), "{headline:?}");
            assert!(shown.len() < 2 * 1024, "{} bytes", shown.len());
            for line in e.stderr_tail() {
                assert!(line.len() <= 512 && !line.contains(['\n', '\r', '\u{1b}']));
            }
        }
        let Error::Rpc { message, .. } = &errors[0] else {
            unreachable!()
        };
        assert_eq!(
            message,
            "bad\\n2026-12-01T00:00:00Z ERROR forged\\r\\u{1b}[2K"
        );
        assert!(errors[4].to_string().contains("bytes cut)"));
    }

    #[test]
    fn a_stderr_tail_is_split_out_of_a_message_that_quotes_its_error() {
        let e = Error::process_ended(
            "fs",
            "the server closed its stdout",
            Some("exit code 1".into()),
            vec!["boom".into()],
        );
        let message = format!("Connection lost ({e}); reconnecting now");
        let (line, tail) = e.split_stderr_tail(&message);
        assert_eq!(
            line,
            "Connection lost (server `fs`: connection failed: the server closed its stdout \
             (exit code 1)); reconnecting now"
        );
        assert_eq!(tail, ["boom"]);
        // A message that does not quote the error is left alone, and no tail is claimed.
        assert_eq!(
            e.split_stderr_tail("Connected"),
            ("Connected".into(), &[][..])
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
