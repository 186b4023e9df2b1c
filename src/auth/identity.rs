//! Who the client is at an authorization server, in the specification's order of preference:
//! pre-registered credentials from the configuration (bound to their issuer), a Client ID
//! Metadata Document (an HTTPS URL as `client_id`) where the server supports them, a
//! registration kept in the token store, else Dynamic Client Registration (RFC 7591), whose
//! result is kept in the store under the issuer.
//!
//! A registration belongs to one issuer: one made at another (before the server moved to a
//! new authorization server) is never sent to this one. So do configured credentials: to the
//! configuration's `issuer`, else to the first issuer they were sent to, which the token
//! store keeps beside the tokens ([`IssuerBinding`]); a server that names another
//! authorization server later does not get them, unless the application allows it
//! ([`OAuthConfig::allow_issuer_migration`]).

use crate::protocol::text::server_text;
use serde_json::json;

use super::discovery::Found;
use super::failure::Failure;
use super::grant::{choose_method, Client};
use super::http::post_json;
use super::store::{IssuerBinding, Registration};
use super::Secret;
use crate::config::OAuthConfig;

/// The client to present to the authorization server `found` describes, for the MCP server at
/// `server_url`.
pub(crate) async fn identify(
    http: &awc::Client,
    config: &OAuthConfig,
    server_url: &str,
    found: &Found,
) -> Result<Client, Failure> {
    let supported = found
        .metadata
        .token_endpoint_auth_methods_supported
        .as_deref();
    if let Some(id) = &config.client_id {
        check_binding(config, server_url, id, &found.issuer)?;
        return Ok(Client {
            id: id.clone(),
            secret: config.client_secret.clone(),
            key: config.private_key.clone(),
            algorithm: config.signing_algorithm.clone(),
            method: choose_method(
                config.auth_method.as_deref(),
                supported,
                config.client_secret.is_some(),
                config.private_key.is_some(),
            ),
        });
    }
    if config.headless {
        return Err(
            "a machine grant (client credentials, JWT bearer) needs a pre-registered client id"
                .into(),
        );
    }
    if let Some(url) = &config.client_metadata_url {
        if found.metadata.client_id_metadata_document_supported == Some(true) {
            return Ok(public(url.clone()));
        }
    }
    if let Some(registration) = config.store.registration(&found.issuer) {
        if registration.issuer == found.issuer {
            return Ok(Client {
                method: choose_method(
                    registration.auth_method.as_deref(),
                    supported,
                    registration.client_secret.is_some(),
                    false,
                ),
                id: registration.client_id,
                secret: registration.client_secret,
                key: None,
                algorithm: None,
            });
        }
    }
    let registration = register(http, config, found).await?;
    let client = Client {
        method: choose_method(
            registration.auth_method.as_deref(),
            supported,
            registration.client_secret.is_some(),
            false,
        ),
        id: registration.client_id.clone(),
        secret: registration.client_secret.clone(),
        key: None,
        algorithm: None,
    };
    config.store.save_registration(&found.issuer, registration);
    Ok(client)
}

/// May the configured credentials of `client_id` go to `issuer`? To the configuration's
/// `issuer` only, if it names one; else to the one they were first sent to (bound now, if
/// this is the first), or to another if the application allows migrations (then bound to it).
fn check_binding(
    config: &OAuthConfig,
    server_url: &str,
    client_id: &str,
    issuer: &str,
) -> Result<(), Failure> {
    if let Some(configured) = &config.issuer {
        if configured != issuer {
            return Err(Failure::Needed(format!(
                "the configured client credentials belong to issuer `{configured}` (the \
                 configuration says so), but the server is now protected by `{issuer}`: they are \
                 not sent there"
            )));
        }
        return Ok(());
    }
    match config.store.issuer_binding(server_url) {
        Some(bound) if bound.client_id == client_id && bound.issuer == issuer => return Ok(()),
        Some(bound) if bound.client_id == client_id => {
            if !config.allow_issuer_migration {
                return Err(Failure::Needed(format!(
                    "the configured client credentials were first used with issuer `{}`, but the \
                     server is now protected by `{issuer}`: they are not sent there (if the \
                     server really moved, configure `issuer`, or allow issuer migration)",
                    bound.issuer
                )));
            }
            tracing::warn!(from = %server_text(&bound.issuer), to = %server_text(issuer), "the server moved to another authorization server: the configured client credentials follow it, as the configuration allows");
        }
        _ => {
            tracing::debug!(issuer = %server_text(issuer), "the configured client credentials are bound to this authorization server");
        }
    }
    config
        .store
        .save_issuer_binding(server_url, IssuerBinding::new(client_id, issuer));
    Ok(())
}

fn public(id: String) -> Client {
    Client {
        id,
        secret: None,
        key: None,
        algorithm: None,
        method: super::grant::AuthMethod::None,
    }
}

/// RFC 7591 registration as a public native (or web) client that wants refresh tokens.
async fn register(
    http: &awc::Client,
    config: &OAuthConfig,
    found: &Found,
) -> Result<Registration, Failure> {
    let endpoint = found.metadata.registration_endpoint.as_deref().ok_or(
        "the authorization server offers no way to register this client (no \
         registration_endpoint, no Client ID Metadata Documents): configure a client id",
    )?;
    let body = json!({
        "client_name": config.client_name,
        "redirect_uris": [config.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": config.application_type,
    });
    let answer = post_json(http, endpoint, &body).await?;
    let text = |k: &str| answer.text(k);
    if answer.status >= 500 || answer.status == 429 {
        return Err(Failure::NotNow(format!(
            "client registration answered HTTP {}",
            answer.status
        )));
    }
    if !(200..300).contains(&answer.status) {
        let error = text("error").unwrap_or("");
        let description: String = text("error_description")
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        return Err(Failure::Needed(format!(
            "client registration was refused: HTTP {} {error} {description}",
            answer.status
        )));
    }
    if answer.body.is_none() {
        return Err(Failure::NotNow(format!(
            "client registration answered HTTP {} with {}, not JSON",
            answer.status,
            answer.described()
        )));
    }
    let client_id = text("client_id")
        .filter(|id| !id.is_empty())
        .ok_or("the registration answer has no client_id")?;
    tracing::info!(issuer = %server_text(&found.issuer), "registered this client dynamically (RFC 7591)");
    Ok(Registration {
        issuer: found.issuer.clone(),
        client_id: client_id.to_owned(),
        client_secret: text("client_secret").map(Secret::new),
        auth_method: text("token_endpoint_auth_method").map(Into::into),
    })
}
