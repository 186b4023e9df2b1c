//! One authorization at an authorization server, once discovery and identity are settled:
//! the client credentials grant, or the authorization code grant with PKCE S256 through the
//! application's [`Authorizer`](super::Authorizer) — and the scopes to ask for.
//!
//! Scopes (both revisions, "Scope Selection Strategy"): the challenge's `scope`, else every
//! scope of the protected resource's `scopes_supported`, else none; `offline_access` is added
//! only when the authorization server lists it and the grant can have refresh tokens. A
//! step-up asks for the union of what was asked before and what the challenge names.
//!
//! The user's part of the authorization code grant — the `Authorizer`, then the code's
//! redemption — is a sign-in (`sign_in`): it outlives the connection attempt that needed it,
//! and an attempt that needs one while it runs joins it.

use crate::protocol::text::server_text;
use std::collections::BTreeSet;

use super::authorizer::{check_response, pkce, random_token, AuthorizationRequest};
use super::discovery::Found;
use super::dpop::DpopKey;
use super::enterprise::id_jag;
use super::failure::Failure;
use super::grant::{Client, Grant, TokenRequest};
use super::metadata::check_pkce;
use super::{RenewalGuard, Secret, Tokens};
use crate::config::OAuthConfig;
use std::rc::Rc;

/// The scopes to ask for first.
pub(crate) fn initial_scope(
    challenged: Option<&str>,
    found: &Found,
    config: &OAuthConfig,
) -> Option<String> {
    let scope = match challenged {
        Some(scope) => Some(scope.to_owned()),
        None => found
            .resource_scopes
            .as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| s.join(" ")),
    }?;
    let offline = !config.headless
        && found
            .metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
    if offline && !scope.split(' ').any(|s| s == "offline_access") {
        Some(format!("{scope} offline_access"))
    } else {
        Some(scope)
    }
}

/// The union of scope lists (space separated), in a stable order, bounded.
pub(crate) fn union<'a>(scopes: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let set: BTreeSet<&str> = scopes
        .into_iter()
        .flatten()
        .flat_map(|s| s.split(' '))
        .filter(|s| !s.is_empty())
        .take(64)
        .collect();
    set.into_iter().collect::<Vec<_>>().join(" ")
}

/// The DPoP key to bind tokens to: the configuration's, when it wants DPoP and the
/// authorization server takes ES256 proofs.
pub(crate) fn dpop_key<'a>(
    config: &'a OAuthConfig,
    found: &Found,
) -> Result<Option<&'a DpopKey>, String> {
    let supported = found
        .metadata
        .dpop_signing_alg_values_supported
        .as_ref()
        .is_some_and(|algs| algs.iter().any(|a| a == "ES256"));
    if config.dpop && supported {
        config.dpop_key.key().map(Some)
    } else {
        Ok(None)
    }
}

/// Who an authorization is for: the MCP server's name (for the `Authorizer` and the logs)
/// and URL (where its tokens are kept).
pub(crate) struct For<'a> {
    pub name: &'a str,
    pub url: &'a str,
}

/// Obtains tokens at the authorization server `found` names.
pub(crate) async fn authorize(
    http: &awc::Client,
    server: For<'_>,
    config: &OAuthConfig,
    found: &Found,
    client: &Client,
    scope: Option<&str>,
    renewal: Renewal,
) -> Result<Tokens, Failure> {
    let name = server.name;
    if config.headless {
        let endpoint = token_endpoint(found)?;
        let dpop = dpop_key(config, found)?;
        let request = TokenRequest {
            http,
            endpoint,
            issuer: &found.issuer,
            client,
            resource: &found.resource,
            scope,
            dpop,
        };
        if let Some(idp) = &config.enterprise {
            tracing::debug!(server = name, issuer = %server_text(&found.issuer), "exchanging the ID token at the identity provider (enterprise-managed)");
            let id_jag = id_jag(http, idp, &found.issuer, &found.resource).await?;
            return request.send(Grant::JwtBearer(&id_jag)).await;
        }
        if let Some(source) = &config.jwt_assertion {
            tracing::debug!(server = name, issuer = %server_text(&found.issuer), "requesting a token (JWT bearer)");
            let assertion = source().map_err(|e| Failure::Needed(format!("no assertion: {e}")))?;
            return request.send(Grant::JwtBearer(&assertion)).await;
        }
        tracing::debug!(server = name, issuer = %server_text(&found.issuer), "requesting a token (client credentials)");
        return request.send(Grant::ClientCredentials).await;
    }
    if config.authorizer.is_none() {
        return Err(Failure::Needed(
            "an interactive authorization is needed and no Authorizer is configured".into(),
        ));
    }
    // Checked before the user is asked anything.
    token_endpoint(found)?;
    dpop_key(config, found)?;
    if !found.no_metadata {
        check_pkce(&found.metadata)?;
    }
    let sign_in = SignIn {
        http: http.clone(),
        server: name.to_owned(),
        url: server.url.to_owned(),
        config: config.clone(),
        found: found.clone(),
        client: client.clone(),
        scope: scope.map(Into::into),
        renewal,
    };
    config
        .sign_ins
        .join_or_start(server.url, &found.issuer, move || Box::pin(sign_in.run()))
        .await
}

fn token_endpoint(found: &Found) -> Result<&str, Failure> {
    found
        .metadata
        .token_endpoint
        .as_deref()
        .ok_or_else(|| "the authorization server metadata has no token_endpoint".into())
}

/// The user's part of the authorization code grant, owning what it needs: it may outlive the
/// connection attempt that started it (see `sign_in`).
struct SignIn {
    http: awc::Client,
    server: String,
    url: String,
    config: OAuthConfig,
    found: Found,
    client: Client,
    scope: Option<String>,
    renewal: Renewal,
}

/// The store's renewal lock for a sign-in, held until it ends (another process waits for its
/// tokens rather than ask the user too), whether or not the attempt that started it is still
/// there.
pub(crate) enum Renewal {
    /// Held already by the attempt, which looked in the store under it.
    Held(Rc<RenewalGuard>),
    /// To be taken by the sign-in itself (the attempt found another sign-in in progress, which
    /// may have ended since): the store is looked at again under it, and tokens other than
    /// `replacing` (the access token the attempt had) are the sign-in's outcome.
    ToTake { replacing: Option<Secret> },
}

impl SignIn {
    /// Sends the user to the authorization endpoint through the `Authorizer` (within
    /// `authorize_timeout`), checks what the redirect brought, redeems the code, and keeps
    /// the tokens in the store (an attempt that joins later finds them there too).
    async fn run(self) -> Result<Tokens, Failure> {
        let SignIn {
            http,
            server,
            url: server_url,
            config,
            found,
            client,
            scope,
            renewal,
        } = self;
        let _renewal = match renewal {
            Renewal::Held(guard) => guard,
            Renewal::ToTake { replacing } => {
                let lock = config.store.lock_renewal(&server_url);
                let guard = match tokio::time::timeout(config.authorize_timeout, lock).await {
                    Ok(Ok(guard)) => guard,
                    Ok(Err(e)) => return Err(Failure::NotNow(format!("no renewal lock: {e}"))),
                    Err(_) => {
                        return Err(Failure::NotNow(
                            "another sign-in for this server outlasted authorize_timeout".into(),
                        ))
                    }
                };
                let stored = config
                    .store
                    .tokens_for_renewal(&server_url)
                    .map_err(|e| Failure::NotNow(format!("the token store cannot be read: {e}")))?;
                if let Some(stored) = stored.filter(|t| {
                    t.issuer == found.issuer
                        && t.unsendable().is_none()
                        && replacing.as_ref() != Some(&t.access_token)
                }) {
                    tracing::debug!(server = %server, "using the tokens another sign-in saved meanwhile");
                    return Ok(stored);
                }
                Rc::new(guard)
            }
        };
        let authorizer = config
            .authorizer
            .clone()
            .ok_or("an interactive authorization is needed and no Authorizer is configured")?;
        let endpoint = found
            .metadata
            .authorization_endpoint
            .as_deref()
            .ok_or("the authorization server metadata has no authorization_endpoint")?;
        let mut url = url::Url::parse(endpoint)
            .map_err(|e| format!("the authorization endpoint is not a URL: {e}"))?;
        let pkce = pkce();
        let state = random_token();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.id)
                .append_pair("redirect_uri", &config.redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
                if scope.split(' ').any(|s| s == "offline_access") {
                    // OpenID Connect Core §11: offline access needs consent.
                    query.append_pair("prompt", "consent");
                }
            }
            query.append_pair("resource", &found.resource);
        }
        tracing::info!(server = %server, issuer = %server_text(&found.issuer), "authorization needed: asking the application's Authorizer");
        let asked = authorizer.authorize(AuthorizationRequest {
            server: server.clone(),
            url: url.into(),
            redirect_uri: config.redirect_uri.clone(),
            state: state.clone(),
        });
        let response = match tokio::time::timeout(config.authorize_timeout, asked).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(Failure::Needed(format!("the Authorizer failed: {e}"))),
            Err(_) => {
                return Err(Failure::Needed(format!(
                    "the Authorizer did not answer within authorize_timeout ({:?})",
                    config.authorize_timeout
                )))
            }
        };
        let advertised = found
            .metadata
            .authorization_response_iss_parameter_supported
            == Some(true);
        let code = check_response(&response, &state, &found.issuer, advertised)?;
        let tokens = TokenRequest {
            http: &http,
            endpoint: token_endpoint(&found)?,
            issuer: &found.issuer,
            client: &client,
            resource: &found.resource,
            scope: scope.as_deref(),
            dpop: dpop_key(&config, &found)?,
        }
        .send(Grant::Code {
            code: &code,
            verifier: &pkce.verifier,
            redirect_uri: &config.redirect_uri,
        })
        .await
        // The code is spent whatever went wrong: only a new sign-in can help.
        .map_err(|f| Failure::Needed(f.reason().to_owned()))?;
        config.store.save_tokens(&server_url, tokens.clone());
        Ok(tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::metadata::ServerMetadata;

    fn found(resource_scopes: Option<&[&str]>, as_scopes: Option<&[&str]>) -> Found {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Found {
            resource: "r".into(),
            issuer: "i".into(),
            metadata: ServerMetadata {
                issuer: "i".into(),
                authorization_endpoint: None,
                token_endpoint: None,
                registration_endpoint: None,
                scopes_supported: as_scopes.map(v),
                code_challenge_methods_supported: None,
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: None,
                authorization_response_iss_parameter_supported: None,
                dpop_signing_alg_values_supported: None,
            },
            resource_scopes: resource_scopes.map(v),
            no_metadata: false,
        }
    }

    struct Never;
    impl super::super::Authorizer for Never {
        fn authorize(&self, _: AuthorizationRequest) -> super::super::AuthorizeFuture {
            Box::pin(async { Err("no".into()) })
        }
    }

    #[test]
    fn scope_selection_order() {
        let code = OAuthConfig::authorization_code(Never);
        let f = found(Some(&["a", "b"]), None);
        assert_eq!(initial_scope(Some("x"), &f, &code).as_deref(), Some("x"));
        assert_eq!(initial_scope(None, &f, &code).as_deref(), Some("a b"));
        assert_eq!(initial_scope(None, &found(None, Some(&["z"])), &code), None);
        assert_eq!(initial_scope(None, &found(Some(&[]), None), &code), None);
        // offline_access only when the authorization server lists it.
        let f = found(Some(&["mcp:basic"]), Some(&["mcp:basic", "offline_access"]));
        assert_eq!(
            initial_scope(None, &f, &code).as_deref(),
            Some("mcp:basic offline_access")
        );
        let f = found(Some(&["mcp:basic"]), Some(&["mcp:basic", "mcp:read"]));
        assert_eq!(initial_scope(None, &f, &code).as_deref(), Some("mcp:basic"));
        let cc = OAuthConfig::client_credentials("c", "s");
        let f = found(Some(&["mcp:basic"]), Some(&["offline_access"]));
        assert_eq!(initial_scope(None, &f, &cc).as_deref(), Some("mcp:basic"));
    }

    #[test]
    fn step_up_union() {
        assert_eq!(
            union([Some("mcp:basic"), None, Some("mcp:write mcp:basic")]),
            "mcp:basic mcp:write"
        );
        assert_eq!(union([None, Some("")]), "");
    }
}
