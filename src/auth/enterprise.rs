//! Enterprise-managed authorization (SEP-990, `io.modelcontextprotocol/enterprise-managed-authorization`):
//! the user's identity token from the enterprise's identity provider is exchanged there
//! (RFC 8693 token exchange) for an Identity Assertion JWT Authorization Grant (ID-JAG) for
//! this authorization server and resource, which is then the assertion of the JWT-bearer
//! grant at the authorization server — no browser, no consent screen: the enterprise decides.

use std::fmt;
use std::sync::Arc;

use super::failure::Failure;
use super::http::post_form;
use super::Secret;

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The enterprise identity provider of enterprise-managed authorization (see
/// [`OAuthConfig::enterprise_managed`](crate::config::OAuthConfig::enterprise_managed)).
#[derive(Clone)]
pub struct EnterpriseIdp {
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    pub(crate) id_token: Arc<dyn Fn() -> Result<Secret, String> + Send + Sync>,
}

impl EnterpriseIdp {
    /// The identity provider's token endpoint, this client's id there, and where the user's
    /// ID token comes from (called for every exchange, so that it can be a fresh one).
    pub fn new(
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl Fn() -> Result<Secret, String> + Send + Sync + 'static,
    ) -> Self {
        EnterpriseIdp {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            id_token: Arc::new(id_token),
        }
    }
}

impl PartialEq for EnterpriseIdp {
    fn eq(&self, other: &Self) -> bool {
        self.token_endpoint == other.token_endpoint
            && self.client_id == other.client_id
            && Arc::ptr_eq(&self.id_token, &other.id_token)
    }
}

impl fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field(
                "token_endpoint",
                &crate::config::redact_url(&self.token_endpoint),
            )
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Exchanges the user's ID token at the identity provider for an ID-JAG whose audience is
/// `issuer` and whose resource is `resource`.
pub(crate) async fn id_jag(
    http: &awc::Client,
    idp: &EnterpriseIdp,
    issuer: &str,
    resource: &str,
) -> Result<Secret, Failure> {
    super::require_secure(&idp.token_endpoint)?;
    let id_token = (idp.id_token)().map_err(|e| Failure::Needed(format!("no ID token: {e}")))?;
    let form = [
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG),
        ("audience", issuer),
        ("resource", resource),
        ("subject_token", id_token.expose()),
        ("subject_token_type", ID_TOKEN),
        ("client_id", &idp.client_id),
    ];
    let answer = post_form(http, &idp.token_endpoint, &form, None, None).await?;
    let text = |k: &str| answer.text(k);
    if answer.status >= 500 || answer.status == 429 || answer.body.is_none() {
        let body = match answer.body {
            Some(_) => String::new(),
            None => format!(" and {}, not JSON", answer.described()),
        };
        return Err(Failure::NotNow(format!(
            "the identity provider answered the token exchange with HTTP {}{body}",
            answer.status
        )));
    }
    if let Some(error) = text("error") {
        let description: String = text("error_description")
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        return Err(Failure::Needed(format!(
            "the identity provider refused the token exchange: HTTP {} {error}: {description}",
            answer.status
        )));
    }
    if !(200..300).contains(&answer.status) {
        return Err(Failure::Needed(format!(
            "the identity provider answered the token exchange with HTTP {}",
            answer.status
        )));
    }
    if text("issued_token_type").is_some_and(|t| t != ID_JAG) {
        return Err("the identity provider issued another kind of token than an ID-JAG".into());
    }
    text("access_token")
        .filter(|t| !t.is_empty())
        .map(Secret::new)
        .ok_or_else(|| "the identity provider's answer has no access_token".into())
}
