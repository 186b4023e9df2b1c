//! Pieces of the errors' messages, shown only where they apply.

use std::fmt;
use std::time::Duration;

/// Renders a stderr tail after an error message, only when there is one.
pub(super) struct StderrTail<'a>(pub(super) &'a [String]);

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
pub(super) struct Overload<'a>(pub(super) usize, pub(super) &'a str);

impl fmt::Display for Overload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overload(0, reason) => f.write_str(reason),
            Overload(limit, _) => write!(f, "{limit} calls already in flight or queued"),
        }
    }
}

/// The server's `Retry-After`, when it gave one.
pub(super) struct RetryAfter<'a>(pub(super) &'a Option<Duration>);

impl fmt::Display for RetryAfter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(delay) => write!(f, " (retry after {delay:?})"),
            None => Ok(()),
        }
    }
}

pub(super) struct ExitStatus<'a>(pub(super) &'a Option<String>);

impl fmt::Display for ExitStatus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(status) => write!(f, " ({status})"),
            None => Ok(()),
        }
    }
}

pub(super) struct InDir<'a>(pub(super) &'a Option<String>);

impl fmt::Display for InDir<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(dir) => write!(f, " in `{dir}`"),
            None => Ok(()),
        }
    }
}

pub(super) struct ServerName<'a>(pub(super) &'a Option<String>);

impl fmt::Display for ServerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(server) => write!(f, " for server `{server}`"),
            None => Ok(()),
        }
    }
}

/// How long a timed-out call ran: its timeout, or more when progress restarted it.
pub(super) struct Ran(pub(super) Duration, pub(super) Duration);

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
