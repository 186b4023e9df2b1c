//! The constructors the crate builds errors with. Text a server chose enters an error only
//! through these, which pass it through [`server_text`]: escaped and bounded.

use super::{Error, StderrTail};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::text::server_text;

impl Error {
    /// The message without the stderr tail, for errors that carry the tail in a field of their
    /// own (so it is not shown twice).
    pub(crate) fn without_stderr(&self) -> String {
        self.split_stderr_tail(&self.to_string()).0
    }

    /// An invalid configuration. Its text may quote a configuration file, which is often
    /// someone else's (a `.vscode/mcp.json` in a cloned repository): escaped and bounded like
    /// server text.
    pub(crate) fn config(
        server: Option<&str>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Config {
            server: server.map(server_text),
            field: server_text(&field.into()),
            message: server_text(&message.into()),
        }
    }

    /// A connection failure. `message` may quote the server (an HTTP body, an IO error):
    /// it is escaped and bounded.
    pub(crate) fn connection(server: &str, message: impl AsRef<str>) -> Self {
        Error::Connection {
            server: server.to_owned(),
            message: server_text(message.as_ref()),
            exit_status: None,
            stderr_tail: Vec::new(),
        }
    }

    /// The end of a server process: why, its exit status, and the stderr lines it left
    /// (which the stdio transport keeps already escaped and bounded).
    #[cfg_attr(not(feature = "stdio"), allow(dead_code))]
    pub(crate) fn process_ended(
        server: &str,
        message: impl AsRef<str>,
        exit_status: Option<String>,
        stderr_tail: Vec<String>,
    ) -> Self {
        Error::Connection {
            server: server.to_owned(),
            message: server_text(message.as_ref()),
            exit_status,
            stderr_tail: stderr_tail.iter().map(|line| server_text(line)).collect(),
        }
    }

    /// The server answered `method` with a JSON-RPC error. Its message is escaped and bounded;
    /// `data` is kept as the server sent it (a structured part of the answer, never shown in
    /// the message, bounded like any answer by `max_message_bytes`).
    ///
    /// The 2026-07-28 revision's `-32020` and `-32021` have variants of their own.
    pub(crate) fn rpc(server: &str, method: &str, error: RpcError) -> Self {
        use crate::protocol::era::codes;
        match error.code {
            codes::HEADER_MISMATCH => {
                return Error::HeaderMismatch {
                    server: server.to_owned(),
                    method: method.to_owned(),
                    message: server_text(&error.message),
                }
            }
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
                return Error::MissingClientCapability {
                    server: server.to_owned(),
                    method: method.to_owned(),
                    message: server_text(&error.message),
                    required: error
                        .data
                        .and_then(|d| d.get("requiredCapabilities").cloned()),
                }
            }
            _ => {}
        }
        Error::Rpc {
            server: server.to_owned(),
            method: method.to_owned(),
            code: error.code,
            message: server_text(&error.message),
            data: error.data,
        }
    }

    /// The server's answer to `method` could not be understood. `message` may quote it (serde
    /// quotes the offending value): it is escaped and bounded.
    pub(crate) fn invalid_response(server: &str, method: &str, message: impl AsRef<str>) -> Self {
        Error::InvalidResponse {
            server: server.to_owned(),
            method: method.to_owned(),
            message: server_text(message.as_ref()),
        }
    }

    /// The server refused `method` unprocessed; `reason` may quote its answer.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn refused(
        server: &str,
        method: &str,
        status: Option<u16>,
        reason: impl AsRef<str>,
    ) -> Self {
        Error::Refused {
            server: server.to_owned(),
            method: method.to_owned(),
            status,
            reason: server_text(reason.as_ref()),
        }
    }

    /// The server refused our credentials; `message` is its `WWW-Authenticate` or body.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn unauthorized(server: &str, status: u16, message: impl AsRef<str>) -> Self {
        Error::Unauthorized {
            server: server.to_owned(),
            status,
            message: server_text(message.as_ref()),
        }
    }

    /// Authorization could not be obtained; `reason` may quote an authorization server.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn authorization_required(server: &str, reason: impl AsRef<str>) -> Self {
        Error::AuthorizationRequired {
            server: server.to_owned(),
            reason: server_text(reason.as_ref()),
        }
    }

    /// The server answered `initialize` with `version`, which is not one of `supported`.
    pub(crate) fn unsupported_version(server: &str, version: &str, supported: &[&str]) -> Self {
        Error::UnsupportedProtocolVersion {
            server: server.to_owned(),
            version: server_text(version),
            supported: supported.join(", "),
        }
    }

    /// For a log line that may quote this error: `text` with the stderr tail that this error's
    /// `Display` appends (on lines of their own) taken out, and that tail, for a field of its
    /// own. A log record stays one line.
    pub(crate) fn split_stderr_tail<'a>(&'a self, text: &str) -> (String, &'a [String]) {
        let tail = StderrTail(self.stderr_tail()).to_string();
        if tail.is_empty() || !text.contains(&tail) {
            return (text.to_owned(), &[]);
        }
        (text.replacen(&tail, "", 1), self.stderr_tail())
    }
}
