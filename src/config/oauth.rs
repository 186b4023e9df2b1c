//! [`OAuthConfig`]: how a server behind MCP's authorization profile is authorized — the
//! client identity to use (pre-registered credentials, a Client ID Metadata Document, or
//! Dynamic Client Registration), the grant (client credentials for a headless service, the
//! authorization code through the application's [`Authorizer`]), and where tokens are kept.
//!
//! Its own room because it holds secrets: `Debug` shows which credentials are set, never
//! their values (they are [`Secret`]s).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{Authorizer, EnterpriseIdp, MemoryTokenStore, Secret, TokenStore};
use crate::error::Error;

/// How a server's OAuth authorization is obtained (see [`ServerConfig::oauth`](crate::ServerConfig::oauth)).
///
/// A service with credentials of its own (the `client_credentials` grant of the
/// `io.modelcontextprotocol/oauth-client-credentials` extension):
///
/// ```
/// use mcp_supervisor::config::OAuthConfig;
/// use mcp_supervisor::ServerConfig;
///
/// let server = ServerConfig::http("crm", "https://mcp.example.com/mcp")
///     .oauth(OAuthConfig::client_credentials("my-service", "s3cret"));
/// assert!(!format!("{server:?}").contains("s3cret"));
/// ```
///
/// On behalf of a user (authorization code with PKCE), with a pre-registered client id, a
/// Client ID Metadata Document, or else Dynamic Client Registration:
///
/// ```
/// # use mcp_supervisor::auth::{AuthorizationRequest, AuthorizeFuture, Authorizer};
/// # struct MyCallbackRoute;
/// # impl Authorizer for MyCallbackRoute {
/// #     fn authorize(&self, _: AuthorizationRequest) -> AuthorizeFuture { Box::pin(async { Err("x".into()) }) }
/// # }
/// use mcp_supervisor::config::OAuthConfig;
///
/// let oauth = OAuthConfig::authorization_code(MyCallbackRoute)
///     .client_metadata_url("https://app.example.com/oauth/client.json")
///     .redirect_uri("https://app.example.com/oauth/callback");
/// ```
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) private_key: Option<Secret>,
    pub(crate) signing_algorithm: Option<String>,
    pub(crate) auth_method: Option<String>,
    pub(crate) issuer: Option<String>,
    /// Configured credentials may follow the server to a new authorization server.
    pub(crate) allow_issuer_migration: bool,
    /// A machine grant (client credentials or JWT bearer): no user, no refresh tokens.
    pub(crate) headless: bool,
    /// The JWT-bearer grant's assertion, fetched anew for every token request.
    pub(crate) jwt_assertion: Option<AssertionSource>,
    /// Enterprise-managed authorization: the ID-JAG from this identity provider is the
    /// JWT-bearer grant's assertion.
    pub(crate) enterprise: Option<EnterpriseIdp>,
    /// Use DPoP where the authorization server supports it.
    pub(crate) dpop: bool,
    /// The DPoP key, shared by clones (so that tokens bound to it outlive a connection).
    pub(crate) dpop_key: Arc<crate::auth::dpop::DpopKeySlot>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) redirect_uri: String,
    pub(crate) client_name: String,
    pub(crate) application_type: String,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) authorize_timeout: Duration,
    /// The sign-ins in progress, shared by clones (so that one outlives a connection attempt
    /// and the next joins it).
    pub(crate) sign_ins: Arc<crate::auth::SignIns>,
}

/// Where the JWT-bearer grant's assertion comes from.
pub(crate) type AssertionSource = Arc<dyn Fn() -> Result<Secret, String> + Send + Sync>;

/// The redirect URI used when none is configured (a loopback callback, as native apps use).
pub const DEFAULT_REDIRECT_URI: &str = "http://localhost:3000/callback";

impl OAuthConfig {
    fn empty() -> Self {
        OAuthConfig {
            client_id: None,
            client_secret: None,
            private_key: None,
            signing_algorithm: None,
            auth_method: None,
            issuer: None,
            allow_issuer_migration: false,
            headless: false,
            jwt_assertion: None,
            enterprise: None,
            dpop: false,
            dpop_key: Arc::default(),
            client_metadata_url: None,
            redirect_uri: DEFAULT_REDIRECT_URI.to_owned(),
            client_name: "mcp-supervisor".to_owned(),
            application_type: "native".to_owned(),
            authorizer: None,
            store: Arc::new(MemoryTokenStore::default()),
            authorize_timeout: Duration::from_secs(600),
            sign_ins: Arc::default(),
        }
    }

    /// The `client_credentials` grant with a client secret (sent as `client_secret_basic`,
    /// or `client_secret_post` when that is all the server takes).
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<Secret>) -> Self {
        OAuthConfig {
            client_id: Some(client_id.into()),
            client_secret: Some(secret.into()),
            headless: true,
            ..Self::empty()
        }
    }

    /// The `client_credentials` grant authenticated with `private_key_jwt` (RFC 7523): a
    /// PKCS#8 PEM private key (EC P-256 for `ES256`, the default, or RSA for `RS256`).
    pub fn client_credentials_jwt(
        client_id: impl Into<String>,
        private_key_pem: impl Into<Secret>,
    ) -> Self {
        OAuthConfig {
            client_id: Some(client_id.into()),
            private_key: Some(private_key_pem.into()),
            auth_method: Some("private_key_jwt".to_owned()),
            headless: true,
            ..Self::empty()
        }
    }

    /// The JWT-bearer grant (RFC 7523 §2.1) of workload identity federation
    /// (`io.modelcontextprotocol/auth/wif`): the platform's identity token for this workload
    /// (e.g. a projected service account token) is the assertion. `assertion` is called for
    /// every token request, so that it can read a token the platform rotates; its error ends
    /// the attempt. A refused assertion is not retried, nor another grant tried.
    ///
    /// ```
    /// use mcp_supervisor::auth::Secret;
    /// use mcp_supervisor::config::OAuthConfig;
    ///
    /// let oauth = OAuthConfig::jwt_bearer("workload-1", || {
    ///     std::fs::read_to_string("/var/run/secrets/tokens/mcp")
    ///         .map(|t| Secret::new(t.trim()))
    ///         .map_err(|e| format!("reading the workload token: {e}"))
    /// });
    /// ```
    pub fn jwt_bearer(
        client_id: impl Into<String>,
        assertion: impl Fn() -> Result<Secret, String> + Send + Sync + 'static,
    ) -> Self {
        OAuthConfig {
            client_id: Some(client_id.into()),
            headless: true,
            jwt_assertion: Some(Arc::new(assertion)),
            ..Self::empty()
        }
    }

    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// enterprise's identity provider for an ID-JAG, which is the assertion of the JWT-bearer
    /// grant at the MCP server's authorization server, where this client authenticates with
    /// `client_id` and `secret`.
    ///
    /// ```
    /// use mcp_supervisor::auth::{EnterpriseIdp, Secret};
    /// use mcp_supervisor::config::OAuthConfig;
    ///
    /// let idp = EnterpriseIdp::new("https://idp.example.com/token", "mcp-app", || {
    ///     Ok(Secret::new("the user's ID token"))
    /// });
    /// let oauth = OAuthConfig::enterprise_managed("mcp-app-at-as", "s3cret", idp);
    /// assert!(!format!("{oauth:?}").contains("s3cret"));
    /// ```
    pub fn enterprise_managed(
        client_id: impl Into<String>,
        secret: impl Into<Secret>,
        idp: EnterpriseIdp,
    ) -> Self {
        OAuthConfig {
            client_id: Some(client_id.into()),
            client_secret: Some(secret.into()),
            headless: true,
            enterprise: Some(idp),
            ..Self::empty()
        }
    }

    /// The authorization code grant with PKCE, the user-facing part done by `authorizer`.
    pub fn authorization_code(authorizer: impl Authorizer) -> Self {
        OAuthConfig {
            authorizer: Some(Arc::new(authorizer)),
            ..Self::empty()
        }
    }

    /// Authorization with the tokens the store holds only (e.g. put there by `mcpctl login`):
    /// when they are refused and cannot be refreshed, the server needs authorization.
    pub fn stored_tokens(store: Arc<dyn TokenStore>) -> Self {
        OAuthConfig {
            store,
            ..Self::empty()
        }
    }

    /// A pre-registered client id (used before CIMD and DCR).
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret.
    pub fn client_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The issuer the pre-registered credentials belong to: they are never sent to another
    /// authorization server. Without it they belong to the first authorization server they
    /// are sent to, which the token store remembers
    /// ([`IssuerBinding`](crate::auth::IssuerBinding)).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Lets configured credentials (without [`issuer`](Self::issuer)) follow the server when
    /// it names another authorization server than the one they were first sent to (default:
    /// no — they are not sent, and the server needs authorization). Allow it only when the
    /// same credentials are registered at every authorization server the server may move to,
    /// and trust in the server's own TLS is what decides where they go.
    pub fn allow_issuer_migration(mut self, allow: bool) -> Self {
        self.allow_issuer_migration = allow;
        self
    }

    /// The JWS algorithm of `private_key_jwt` assertions: `ES256` (default) or `RS256`.
    pub fn signing_algorithm(mut self, algorithm: impl Into<String>) -> Self {
        self.signing_algorithm = Some(algorithm.into());
        self
    }

    /// The token endpoint authentication method to prefer (`client_secret_basic`,
    /// `client_secret_post`, `none`, `private_key_jwt`), if the server lists it.
    pub fn auth_method(mut self, method: impl Into<String>) -> Self {
        self.auth_method = Some(method.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as `client_id` where
    /// the authorization server supports them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Where the authorization server redirects after the user's consent (default
    /// [`DEFAULT_REDIRECT_URI`]).
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// A loopback redirect on this port: `http://localhost:{port}/callback` (Claude Code's
    /// `callbackPort`).
    pub fn callback_port(self, port: u16) -> Self {
        self.redirect_uri(format!("http://localhost:{port}/callback"))
    }

    /// The `client_name` of a dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `application_type` of a dynamic registration: `native` (default: desktop, CLI,
    /// loopback redirects) or `web`.
    pub fn application_type(mut self, kind: impl Into<String>) -> Self {
        self.application_type = kind.into();
        self
    }

    /// The user-facing part of the authorization code grant.
    pub fn authorizer(mut self, authorizer: impl Authorizer) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// Where tokens and registrations are kept (default: a [`MemoryTokenStore`] of this
    /// configuration; share one `Arc` between configurations to share tokens).
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Uses DPoP (RFC 9449, the `io.modelcontextprotocol/auth/dpop` extension) where the
    /// authorization server supports it (ES256): tokens bound to a key pair of this
    /// configuration, generated when first needed and kept in memory only (so a token bound
    /// to it does not survive a restart of this process), and a fresh proof on every request.
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// How long the [`Authorizer`] may take (default 10 minutes): the user's sign-in, which
    /// the server's `connect_timeout` does not cut — a connection attempt waits for it, and one
    /// that follows joins it rather than starting another.
    pub fn authorize_timeout(mut self, timeout: Duration) -> Self {
        self.authorize_timeout = timeout;
        self
    }

    /// The token store.
    pub fn token_store(&self) -> &Arc<dyn TokenStore> {
        &self.store
    }
}

impl OAuthConfig {
    /// The checks [`ServerConfig::validate`](crate::ServerConfig::validate) makes; fields are
    /// named `oauth.*`, values never shown (they may be secrets).
    pub(crate) fn validate(&self, server: Option<&str>) -> Result<(), Error> {
        let error =
            |field: &str, message: &str| Error::config(server, format!("oauth.{field}"), message);
        if self.headless {
            if self
                .client_id
                .as_deref()
                .is_none_or(|id| id.trim().is_empty())
            {
                return Err(error(
                    "client_id",
                    "a machine grant (client credentials, JWT bearer) needs a client id",
                ));
            }
            if self.client_secret.is_none()
                && self.private_key.is_none()
                && self.jwt_assertion.is_none()
            {
                return Err(error(
                    "client_secret",
                    "the client credentials grant needs a client secret or a private key",
                ));
            }
        }
        if let Some(key) = &self.private_key {
            let pem = key.expose().as_bytes();
            let parsed = match self.signing_algorithm.as_deref().unwrap_or("ES256") {
                "ES256" => jsonwebtoken::EncodingKey::from_ec_pem(pem).is_ok(),
                "RS256" => jsonwebtoken::EncodingKey::from_rsa_pem(pem).is_ok(),
                _ => return Err(error("signing_algorithm", "expected ES256 or RS256")),
            };
            if !parsed {
                return Err(error(
                    "private_key",
                    "not a PKCS#8 PEM private key of the signing algorithm (an EC key must \
                     include its public key)",
                ));
            }
        }
        if let Some(url) = &self.client_metadata_url {
            let ok = url::Url::parse(url)
                .is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && !u.path().is_empty());
            if !ok {
                return Err(error(
                    "client_metadata_url",
                    "a Client ID Metadata Document URL must be https:// with a path",
                ));
            }
        }
        if self.authorize_timeout.is_zero() {
            return Err(error(
                "authorize_timeout",
                "must be above zero: every sign-in would time out at once",
            ));
        }
        if crate::auth::require_secure(&self.redirect_uri).is_err() {
            return Err(error(
                "redirect_uri",
                "must be an https:// URL, or http:// to a loopback host",
            ));
        }
        if !matches!(self.application_type.as_str(), "native" | "web") {
            return Err(error("application_type", "expected \"native\" or \"web\""));
        }
        Ok(())
    }
}

// The same configuration: the same settings, the same authorizer and store objects.
impl PartialEq for OAuthConfig {
    fn eq(&self, other: &Self) -> bool {
        self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && self.private_key == other.private_key
            && self.signing_algorithm == other.signing_algorithm
            && self.auth_method == other.auth_method
            && self.issuer == other.issuer
            && self.allow_issuer_migration == other.allow_issuer_migration
            && self.headless == other.headless
            && self.enterprise == other.enterprise
            && self.dpop == other.dpop
            && match (&self.jwt_assertion, &other.jwt_assertion) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && self.client_metadata_url == other.client_metadata_url
            && self.redirect_uri == other.redirect_uri
            && self.client_name == other.client_name
            && self.application_type == other.application_type
            && match (&self.authorizer, &other.authorizer) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && Arc::ptr_eq(&self.store, &other.store)
            && self.authorize_timeout == other.authorize_timeout
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = if self.enterprise.is_some() {
            "enterprise_managed"
        } else if self.jwt_assertion.is_some() {
            "jwt_bearer"
        } else if self.headless {
            "client_credentials"
        } else if self.authorizer.is_some() {
            "authorization_code"
        } else {
            "stored tokens"
        };
        f.debug_struct("OAuthConfig")
            .field("grant", &grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("private_key", &self.private_key)
            .field("auth_method", &self.auth_method)
            .field("issuer", &self.issuer)
            .field("allow_issuer_migration", &self.allow_issuer_migration)
            .field("enterprise", &self.enterprise)
            .field("dpop", &self.dpop)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerConfig;

    fn check(config: OAuthConfig) -> Result<(), Error> {
        ServerConfig::http("s", "https://mcp.example.com/mcp")
            .oauth(config)
            .validate()
    }

    #[test]
    fn validation_names_the_field_and_never_the_secret() {
        assert!(check(OAuthConfig::client_credentials("svc", "s3cret-XYZ")).is_ok());
        let e = check(OAuthConfig::client_credentials("", "s3cret-XYZ")).unwrap_err();
        assert!(e.to_string().contains("oauth.client_id"), "{e}");
        let e = check(OAuthConfig::client_credentials_jwt("svc", "not a key XYZ")).unwrap_err();
        assert!(e.to_string().contains("oauth.private_key"), "{e}");
        assert!(!e.to_string().contains("XYZ"));
        let bad = OAuthConfig::client_credentials("svc", "x")
            .client_metadata_url("http://a.example/c.json");
        assert!(check(bad).is_err());
        let bad =
            OAuthConfig::client_credentials("svc", "x").client_metadata_url("https://a.example/");
        assert!(check(bad).is_err());
        let bad = OAuthConfig::client_credentials("svc", "x").redirect_uri("http://app.example/cb");
        assert!(check(bad).is_err());
        let ok = OAuthConfig::client_credentials("svc", "x").redirect_uri("http://127.0.0.1:9/cb");
        assert!(check(ok).is_ok());
        let both = ServerConfig::http("s", "https://mcp.example.com/mcp")
            .bearer_token("t")
            .oauth(OAuthConfig::client_credentials("svc", "x"));
        assert!(both
            .validate()
            .unwrap_err()
            .to_string()
            .contains("Authorization header"));
        let stdio =
            ServerConfig::stdio("s", "x").oauth(OAuthConfig::client_credentials("svc", "x"));
        assert!(stdio.validate().is_err());
        let shown = format!("{:?}", OAuthConfig::client_credentials("svc", "s3cret-XYZ"));
        assert!(!shown.contains("XYZ"), "{shown}");
    }
}
