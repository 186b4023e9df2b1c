//! Why authorization gave no token, sorted by what happens next: [`Failure::NotNow`] (try
//! again later: nothing is given up, no user is asked), [`Failure::Refused`] (the
//! authorization server said no, and whether that ends the grant), and [`Failure::Needed`]
//! (the application has to act).
//!
//! Its own room because every step — discovery, registration, the grants, the refresh — fails
//! in these ways, and the provider decides on the kind alone. RFC 6749 §5.2: `invalid_grant`,
//! `invalid_client` and `unauthorized_client` end a grant; an authorization server that
//! cannot be reached, times out, answers 5xx or 429, or answers something that is not OAuth's
//! (a proxy's HTML page) ends nothing.

use crate::error::Error;
use crate::protocol::text::server_text;

/// Why no token was obtained. The reasons never carry a secret; they may quote an
/// authorization server, and are escaped when they become an [`Error`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The authorization server could not be reached or timed out, answered with a server
    /// error (5xx, 429, `temporarily_unavailable`) or with something that is not an OAuth
    /// answer. Trying again later may work.
    NotNow(String),
    /// The authorization server answered with an OAuth error. `grant_over`: one that says the
    /// grant or the client is no good (`invalid_grant`, `invalid_client`,
    /// `unauthorized_client`).
    Refused { reason: String, grant_over: bool },
    /// Anything else — a check failed, a document is wrong, the application's `Authorizer`
    /// gave up: the application has to act.
    Needed(String),
}

impl Failure {
    /// What went wrong.
    pub fn reason(&self) -> &str {
        match self {
            Failure::NotNow(reason) | Failure::Needed(reason) => reason,
            Failure::Refused { reason, .. } => reason,
        }
    }

    /// The same failure, its reason prefixed with what was being done.
    pub fn context(self, doing: &str) -> Failure {
        let with = |reason: String| format!("{doing}: {reason}");
        match self {
            Failure::NotNow(reason) => Failure::NotNow(with(reason)),
            Failure::Needed(reason) => Failure::Needed(with(reason)),
            Failure::Refused { reason, grant_over } => Failure::Refused {
                reason: with(reason),
                grant_over,
            },
        }
    }

    /// Whether the authorization server said the grant (a refresh token) is over.
    pub fn ends_grant(&self) -> bool {
        matches!(
            self,
            Failure::Refused {
                grant_over: true,
                ..
            }
        )
    }

    /// What the caller is answered: `unavailable` (try again later) for [`Failure::NotNow`],
    /// [`Error::AuthorizationRequired`] otherwise.
    pub fn into_error(self, server: &str) -> Error {
        match self {
            Failure::NotNow(reason) => Error::Unavailable {
                server: server.to_owned(),
                reason: server_text(&format!("no token could be obtained for now: {reason}")),
                attempts: 0,
                stderr_tail: Vec::new(),
            },
            other => Error::authorization_required(server, other.reason()),
        }
    }
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure::Needed(reason)
    }
}

impl From<&str> for Failure {
    fn from(reason: &str) -> Self {
        Failure::Needed(reason.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn not_now_is_unavailable_and_the_rest_needs_authorization() {
        let e = Failure::NotNow("HTTP 500".into())
            .context("refreshing the token")
            .into_error("s");
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(e.retry_can_help());
        assert!(
            e.to_string().contains("refreshing the token: HTTP 500"),
            "{e}"
        );
        let refused = Failure::Refused {
            reason: "invalid_grant".into(),
            grant_over: true,
        };
        assert!(refused.ends_grant());
        assert!(matches!(
            refused.into_error("s"),
            Error::AuthorizationRequired { .. }
        ));
        assert!(!Failure::Refused {
            reason: "invalid_scope".into(),
            grant_over: false
        }
        .ends_grant());
        let needed = Failure::from("no Authorizer").into_error("s");
        assert!(!needed.retry_can_help());
    }
}
