//! [`Secret`]: a credential (client secret, private key, access or refresh token, authorization
//! code) that can be used but never shown.
//!
//! Its own room because every other type of the authorization code holds these: `Debug` prints
//! `Secret(***)`, there is no `Display`, and the value comes out only through
//! [`Secret::expose`], so that a stray `{:?}` in a log line, a status or an error can never
//! carry a token.

use std::fmt;

/// A credential whose value never appears in `Debug` output, logs or errors.
///
/// ```
/// use mcp_supervisor::auth::Secret;
///
/// let secret = Secret::new("s3cret");
/// assert_eq!(format!("{secret:?}"), "Secret(***)");
/// assert_eq!(secret.expose(), "s3cret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}
