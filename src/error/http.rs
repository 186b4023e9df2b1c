//! The HTTP status a gateway should answer when a call it forwarded failed with an [`Error`].
//!
//! A service that exposes MCP tools over HTTP stands between its own clients and the MCP
//! servers, so it answers as a gateway does: failures of the server behind it are 5xx, and
//! only a name the client chose itself is its fault (404). A 401 or 403 from an MCP server is
//! about *our* credentials, not the client's: it becomes 502, so that the client does not think
//! its own were refused. Always available, without any feature.
//!
//! | kind | status | `Retry-After` |
//! | --- | --- | --- |
//! | `timeout` | 504 Gateway Timeout | |
//! | `outcome_unknown` | 502 Bad Gateway | |
//! | `unavailable` | 503 Service Unavailable | yes |
//! | `invalid_connection` | 502 Bad Gateway | |
//! | `unauthorized` | 502 Bad Gateway | |
//! | `unsupported_protocol_version` | 502 Bad Gateway | |
//! | `invalid_response` | 502 Bad Gateway | |
//! | `refused` | 502 Bad Gateway | |
//! | `rpc` | 502 Bad Gateway | |
//! | `overloaded` | 503 Service Unavailable | yes |
//! | `server_not_found` | 404 Not Found | |
//! | `config` | 500 Internal Server Error | |
//! | `stopped` | 503 Service Unavailable | |
//! | `cancelled` | 502 Bad Gateway | |
//!
//! `Retry-After` ([`Error::http_retry_after`]) is the wait the server asked for where the error
//! carries one, otherwise [`DEFAULT_RETRY_AFTER`].

use std::time::Duration;

use super::{Error, ErrorKind};

/// The `Retry-After` of a 503 whose error carries no wait of its own.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

impl ErrorKind {
    /// The HTTP status a gateway should answer for an error of this kind (see the table in
    /// [`error::http`](crate::error::http)).
    ///
    /// ```
    /// use mcp_supervisor::ErrorKind;
    /// assert_eq!(ErrorKind::Timeout.http_status(), 504);
    /// assert_eq!(ErrorKind::ServerNotFound.http_status(), 404);
    /// ```
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::Timeout => 504,
            ErrorKind::Unavailable | ErrorKind::Overloaded | ErrorKind::Stopped => 503,
            ErrorKind::OutcomeUnknown
            | ErrorKind::InvalidConnection
            | ErrorKind::Unauthorized
            | ErrorKind::UnsupportedProtocolVersion
            | ErrorKind::InvalidResponse
            | ErrorKind::Refused
            | ErrorKind::Rpc
            | ErrorKind::Cancelled => 502,
            ErrorKind::ServerNotFound => 404,
            ErrorKind::Config => 500,
        }
    }

    /// Whether an answer of this kind carries `Retry-After`: `unavailable` and `overloaded`,
    /// the failures that waiting can cure.
    pub fn has_retry_after(self) -> bool {
        matches!(self, ErrorKind::Unavailable | ErrorKind::Overloaded)
    }
}

impl Error {
    /// Shorthand for `self.kind().http_status()`.
    pub fn http_status(&self) -> u16 {
        self.kind().http_status()
    }

    /// The `Retry-After` a gateway should send with this error: `None` unless the kind has one
    /// ([`ErrorKind::has_retry_after`]); then the wait the server asked for
    /// ([`Error::retry_after`]) or [`DEFAULT_RETRY_AFTER`]. Sent as whole seconds, rounded up.
    pub fn http_retry_after(&self) -> Option<Duration> {
        self.kind()
            .has_retry_after()
            .then(|| self.retry_after().unwrap_or(DEFAULT_RETRY_AFTER))
    }
}

/// `Retry-After` in whole seconds, rounded up so that a client never comes back too early, and
/// at least 1.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let whole = wait.as_secs();
    let up = if wait.subsec_nanos() > 0 {
        whole.saturating_add(1)
    } else {
        whole
    };
    up.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        use ErrorKind::*;
        let table = [
            (Timeout, 504, false),
            (OutcomeUnknown, 502, false),
            (Unavailable, 503, true),
            (InvalidConnection, 502, false),
            (Unauthorized, 502, false),
            (UnsupportedProtocolVersion, 502, false),
            (InvalidResponse, 502, false),
            (Refused, 502, false),
            (Rpc, 502, false),
            (Overloaded, 503, true),
            (ServerNotFound, 404, false),
            (Config, 500, false),
            (Stopped, 503, false),
        ];
        for (kind, status, retry) in table {
            assert_eq!(kind.http_status(), status, "{kind}");
            assert_eq!(kind.has_retry_after(), retry, "{kind}");
        }
    }

    #[test]
    fn retry_after_is_the_servers_wait_or_the_default_in_whole_seconds() {
        let theirs = Error::Overloaded {
            server: "web".into(),
            limit: 0,
            reason: "HTTP 503".into(),
            retry_after: Some(Duration::from_millis(2500)),
        };
        assert_eq!(theirs.http_retry_after(), Some(Duration::from_millis(2500)));
        assert_eq!(retry_after_seconds(Duration::from_millis(2500)), 3);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(7)), 7);
        assert_eq!(retry_after_seconds(Duration::MAX), u64::MAX);
        let down = Error::Unavailable {
            server: "fs".into(),
            reason: "gave up".into(),
            attempts: 4,
            stderr_tail: vec![],
        };
        assert_eq!(down.http_retry_after(), Some(DEFAULT_RETRY_AFTER));
        assert_eq!(down.http_status(), 503);
        let gone = Error::ServerNotFound { server: "x".into() };
        assert_eq!(gone.http_retry_after(), None);
        assert_eq!(gone.http_status(), 404);
    }
}
