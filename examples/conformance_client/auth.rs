//! Authorization for the suite's `auth/*` scenarios: the OAuth configuration each one needs
//! (from `MCP_CONFORMANCE_CONTEXT` where it brings credentials), and a headless
//! [`Authorizer`] that follows the authorization URL the way the suite's auto-approving
//! authorization server allows — one GET without following the redirect, the callback's
//! `code`, `state` and `iss` read from `Location`.

use mcp_supervisor::auth::{
    AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer, EnterpriseIdp, Secret,
};
use mcp_supervisor::config::OAuthConfig;
use serde_json::Value;

/// The Client ID Metadata Document URL the suite expects as `client_id` (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Follows the authorization URL without a browser.
pub struct Headless;

impl Authorizer for Headless {
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture {
        Box::pin(async move {
            let client = awc::Client::builder().disable_redirects().finish();
            let response = client
                .get(&request.url)
                .send()
                .await
                .map_err(|e| format!("GET of the authorization URL failed: {e}"))?;
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "the authorization endpoint answered {} without a redirect",
                        response.status()
                    )
                })?;
            AuthorizationResponse::from_redirect(location)
        })
    }
}

/// The OAuth configuration for `scenario`: client credentials (or the workload's JWT for the
/// JWT-bearer grant) where the context brings them for that grant, else the authorization code flow (pre-registered where the context has a
/// client, else CIMD where the server supports it, else DCR).
pub fn config(scenario: &str, context: &Value) -> OAuthConfig {
    // DPoP wherever the authorization server supports it.
    for_scenario(scenario, context).dpop(true)
}

fn for_scenario(scenario: &str, context: &Value) -> OAuthConfig {
    let text = |k: &str| context.get(k).and_then(Value::as_str);
    let client_id = text("client_id").unwrap_or("");
    match scenario {
        "auth/client-credentials-basic" => {
            OAuthConfig::client_credentials(client_id, text("client_secret").unwrap_or(""))
        }
        "auth/client-credentials-jwt" => {
            let mut config = OAuthConfig::client_credentials_jwt(
                client_id,
                text("private_key_pem").unwrap_or(""),
            );
            if let Some(algorithm) = text("signing_algorithm") {
                config = config.signing_algorithm(algorithm);
            }
            config
        }
        // 0.1.16 names it cross-app-access-complete-flow.
        "auth/enterprise-managed-authorization" | "auth/cross-app-access-complete-flow" => {
            let id_token = Secret::new(text("idp_id_token").unwrap_or(""));
            let idp = EnterpriseIdp::new(
                text("idp_token_endpoint").unwrap_or(""),
                text("idp_client_id").unwrap_or(""),
                move || Ok(id_token.clone()),
            );
            OAuthConfig::enterprise_managed(client_id, text("client_secret").unwrap_or(""), idp)
        }
        "auth/wif-jwt-bearer" => {
            let assertion = Secret::new(text("valid_jwt").unwrap_or(""));
            OAuthConfig::jwt_bearer(client_id, move || Ok(assertion.clone()))
        }
        _ => {
            let mut config = OAuthConfig::authorization_code(Headless)
                .client_metadata_url(CLIENT_METADATA_URL)
                .redirect_uri("http://localhost:3000/callback")
                .client_name("mcp-supervisor conformance client");
            if let (Some(id), "auth/pre-registration") = (text("client_id"), scenario) {
                config = config.client_id(id);
                if let Some(secret) = text("client_secret") {
                    config = config.client_secret(secret);
                }
                if let Some(issuer) = text("issuer") {
                    config = config.issuer(issuer);
                }
            }
            config
        }
    }
}
