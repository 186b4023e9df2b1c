//! The authorization code flow's seam to the application: the [`Authorizer`] gets the
//! authorization URL and returns what the redirect carried ([`AuthorizationResponse`]); and
//! the checks of that answer before its code is redeemed — `state`, then the RFC 9207 `iss`
//! rules of the 2026-07-28 revision.
//!
//! A service wires the [`Authorizer`] to its own callback route (send the user to the URL,
//! resolve the future when the callback arrives); a command-line tool opens a browser and
//! listens on a loopback port. PKCE (S256) is generated here and never leaves the library.

use std::future::Future;
use std::pin::Pin;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};

use super::Secret;

/// What the application is asked to do: send the user (or a headless agent) to `url`, and
/// hand back what the authorization server redirected to `redirect_uri` with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The server this is for (its name in the supervisor).
    pub server: String,
    /// The authorization URL to open.
    pub url: String,
    /// Where the authorization server will redirect to.
    pub redirect_uri: String,
    /// The `state` the redirect must carry back.
    pub state: String,
}

/// What the redirect to the callback carried.
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<Secret>,
    /// The `state` it echoed.
    pub state: Option<String>,
    /// RFC 9207 `iss`: the issuer that answered.
    pub iss: Option<String>,
    /// An OAuth error code (`access_denied`, ...).
    pub error: Option<String>,
    /// The error's description.
    pub error_description: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code)
            .field("state", &self.state.as_ref().map(|_| "***"))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .finish()
    }
}

impl AuthorizationResponse {
    /// Reads the callback URL's query (`?code=...&state=...&iss=...`), form-urldecoded.
    ///
    /// ```
    /// use mcp_supervisor::auth::AuthorizationResponse;
    ///
    /// let r = AuthorizationResponse::from_redirect(
    ///     "http://localhost:3000/callback?code=abc&state=s1&iss=https%3A%2F%2Fas.example",
    /// ).unwrap();
    /// assert_eq!(r.code.unwrap().expose(), "abc");
    /// assert_eq!(r.iss.as_deref(), Some("https://as.example"));
    /// ```
    pub fn from_redirect(url: &str) -> Result<Self, String> {
        let url = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let mut response = AuthorizationResponse::default();
        for (name, value) in url.query_pairs().take(32) {
            let value = value.into_owned();
            match &*name {
                "code" => response.code = Some(Secret::new(value)),
                "state" => response.state = Some(value),
                "iss" => response.iss = Some(value),
                "error" => response.error = Some(value),
                "error_description" => response.error_description = Some(value),
                _ => {}
            }
        }
        Ok(response)
    }
}

/// The future an [`Authorizer`] returns. It runs on the server's arbiter, so it need not be
/// `Send`.
pub type AuthorizeFuture = Pin<Box<dyn Future<Output = Result<AuthorizationResponse, String>>>>;

/// Runs the user-facing part of the authorization code flow.
///
/// ```
/// use mcp_supervisor::auth::{AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer};
///
/// /// Prints the URL and reads the callback URL from the terminal.
/// struct Terminal;
///
/// impl Authorizer for Terminal {
///     fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture {
///         Box::pin(async move {
///             println!("open {}", request.url);
///             let mut line = String::new();
///             std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
///             AuthorizationResponse::from_redirect(line.trim())
///         })
///     }
/// }
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Sends the user to `request.url`; resolves with what the redirect carried, or an error
    /// (the user gave up, the callback never came).
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture;
}

/// A PKCE verifier (43 characters of base64url) and its S256 challenge.
pub(crate) struct Pkce {
    pub verifier: Secret,
    pub challenge: String,
}

pub(crate) fn pkce() -> Pkce {
    let verifier = URL_SAFE_NO_PAD.encode(random_bytes());
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()).as_slice());
    Pkce {
        verifier: Secret::new(verifier),
        challenge,
    }
}

/// A random `state` (or `jti`).
pub(crate) fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes())
}

fn random_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// Checks an authorization response before its code is redeemed: the `state` we sent, then
/// RFC 9207 (2026-07-28 "Authorization Response Validation"): when the server advertises
/// `iss` it must be there, and when it is there it must be exactly the issuer we recorded —
/// compared as strings, without any normalisation. Only then is an `error` believed.
pub(crate) fn check_response(
    response: &AuthorizationResponse,
    state: &str,
    issuer: &str,
    iss_advertised: bool,
) -> Result<Secret, String> {
    if response.state.as_deref() != Some(state) {
        return Err("the authorization response carries the wrong state (or none)".into());
    }
    match &response.iss {
        Some(iss) if iss != issuer => {
            return Err(format!(
                "the authorization response comes from issuer `{iss}`, not `{issuer}` (RFC 9207)"
            ))
        }
        None if iss_advertised => {
            return Err(
                "the authorization server advertises `iss` but its response has none (RFC 9207)"
                    .into(),
            )
        }
        _ => {}
    }
    if let Some(error) = &response.error {
        let description = response.error_description.as_deref().unwrap_or("");
        return Err(format!("authorization refused: {error} {description}"));
    }
    response
        .code
        .clone()
        .ok_or_else(|| "the authorization response has no code".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_is_s256_of_the_verifier() {
        let p = pkce();
        assert_eq!(p.verifier.expose().len(), 43);
        let again =
            URL_SAFE_NO_PAD.encode(Sha256::digest(p.verifier.expose().as_bytes()).as_slice());
        assert_eq!(p.challenge, again);
        assert_ne!(pkce().verifier, p.verifier);
    }

    fn response(state: &str, iss: Option<&str>) -> AuthorizationResponse {
        AuthorizationResponse {
            code: Some(Secret::new("c")),
            state: Some(state.into()),
            iss: iss.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn iss_rules_of_rfc_9207() {
        let issuer = "http://localhost:1";
        // advertised + present + equal
        assert!(check_response(&response("s", Some(issuer)), "s", issuer, true).is_ok());
        // advertised + absent
        assert!(check_response(&response("s", None), "s", issuer, true).is_err());
        // not advertised + absent
        assert!(check_response(&response("s", None), "s", issuer, false).is_ok());
        // not advertised + present and wrong
        assert!(check_response(
            &response("s", Some("https://evil.example.com")),
            "s",
            issuer,
            false
        )
        .is_err());
        // normalised forms are other strings
        assert!(check_response(
            &response("s", Some("http://localhost:1/")),
            "s",
            issuer,
            true
        )
        .is_err());
        // state first
        assert!(check_response(&response("t", Some(issuer)), "s", issuer, true).is_err());
        // a wrong issuer's error is not believed, and says nothing of it
        let mut r = response("s", Some("https://evil"));
        r.error = Some("access_denied".into());
        assert!(check_response(&r, "s", issuer, true)
            .unwrap_err()
            .contains("RFC 9207"));
    }

    #[test]
    fn debug_hides_the_code() {
        let r =
            AuthorizationResponse::from_redirect("http://l/cb?code=CODE123&state=STATE9").unwrap();
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("CODE123") && !shown.contains("STATE9"),
            "{shown}"
        );
    }
}
