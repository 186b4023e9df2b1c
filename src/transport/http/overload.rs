//! HTTP 429 and 503: the server refused a request unprocessed because it is overloaded, and
//! may say in `Retry-After` how long to wait.
//!
//! Its own room because the server's wish is honoured in several places — the call's error
//! ([`crate::Error::Overloaded`] carries it, and the connection state machine waits at least
//! that long before the next connection attempt), the GET stream's re-opening and the
//! resumption of a broken answer — and every one of them must read it the same way and bound
//! it: a server must not be able to park us for a year, so the wait is capped at the reconnect
//! backoff's cap.

use std::time::{Duration, SystemTime};

use awc::http::header::{HeaderMap, RETRY_AFTER};
use awc::http::StatusCode;

use super::Shared;
use crate::error::Error;

/// Whether this status means "overloaded, try later": 429 Too Many Requests or 503 Service
/// Unavailable. Both say the request was not processed.
pub(super) fn is_overloaded(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    )
}

/// The server's `Retry-After` — delta-seconds or an HTTP-date — as a wait from `now`, at most
/// `cap`. `None` if absent or unreadable; a date in the past is no wait.
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime, cap: Duration) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64 is still "a very long time".
        Duration::from_secs(value.parse::<u64>().unwrap_or(u64::MAX))
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(cap))
}

/// The error for a request the server refused as overloaded.
pub(super) fn overloaded(
    shared: &Shared,
    status: StatusCode,
    retry_after: Option<Duration>,
    detail: &str,
) -> Error {
    Error::Overloaded {
        server: shared.server.to_string(),
        limit: 0,
        reason: format!("HTTP {}: {detail}", status.as_u16()),
        retry_after,
    }
}

impl Shared {
    /// The most we wait because a server asked us to.
    pub(super) fn retry_after_cap(&self) -> Duration {
        self.resume_backoff.max()
    }

    /// [`retry_after`] of a response, capped for this connection.
    pub(super) fn retry_after<T>(&self, response: &awc::ClientResponse<T>) -> Option<Duration> {
        retry_after(
            response.headers(),
            SystemTime::now(),
            self.retry_after_cap(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use awc::http::header::HeaderValue;

    fn parse(value: &str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        // 2015-10-21 07:28:00 UTC
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        retry_after(&headers, now, Duration::from_secs(30))
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(parse("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse("120"), Some(Duration::from_secs(30)), "capped");
        assert_eq!(
            parse("99999999999999999999999999"),
            Some(Duration::from_secs(30)),
            "too big for a u64 is capped, not ignored"
        );
    }

    #[test]
    fn http_dates_in_all_three_formats() {
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:28:10 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse("Wednesday, 21-Oct-15 07:28:05 GMT"),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            parse("Wed Oct 21 07:28:03 2015"),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:00:00 GMT"),
            Some(Duration::ZERO),
            "in the past"
        );
        assert_eq!(
            parse("Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(Duration::from_secs(30)),
            "a year away is capped"
        );
    }

    #[test]
    fn garbage_is_no_wish() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("1.5"), None);
        assert_eq!(parse("soon"), None);
        assert_eq!(
            retry_after(&HeaderMap::new(), SystemTime::now(), Duration::MAX),
            None
        );
    }

    #[test]
    fn only_429_and_503_are_overload() {
        assert!(is_overloaded(StatusCode::TOO_MANY_REQUESTS));
        assert!(is_overloaded(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!is_overloaded(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!is_overloaded(StatusCode::BAD_GATEWAY));
    }
}
