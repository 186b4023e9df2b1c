//! Discovery: from a `401` (or nothing) to the authorization server that protects the MCP
//! server, and its validated metadata.
//!
//! The order is the specification's: the challenge's `resource_metadata`, else the
//! well-known Protected Resource Metadata URLs (path-aware, then root), stopping at the first
//! found; its `resource` bound to the server (RFC 9728 §3.3); the first of its
//! `authorization_servers`; that issuer's metadata at its well-known URLs in order, its
//! `issuer` echoed exactly. A server without any protected resource metadata is a 2025-03-26
//! one: its authorization server is at its origin (metadata naming an issuer of that origin
//! is accepted), whose metadata may be absent too, and then `/authorize`, `/token` and
//! `/register` at the origin are used.
//!
//! Every URL is checked by the `trust` rules before it is fetched — the challenge's
//! `resource_metadata`, the issuer (and so its metadata URLs), every endpoint its metadata
//! names — and one that is not trusted ends discovery, saying why: nothing else is tried in
//! its place.

use url::Url;

use super::challenge::Challenge;
use super::failure::Failure;
use super::http::get_json;
use super::metadata::{
    check_resource, check_server, resource_metadata_urls, server_metadata_urls, ResourceMetadata,
    ServerMetadata,
};
use super::trust::Trust;

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// RFC 8707 `resource` for every request: the metadata's, verbatim.
    pub resource: String,
    /// The authorization server's issuer, as the protected resource metadata named it.
    pub issuer: String,
    pub metadata: ServerMetadata,
    /// The protected resource's `scopes_supported`.
    pub resource_scopes: Option<Vec<String>>,
    /// A 2025-03-26 server without any metadata: no PKCE advertisement to check.
    pub no_metadata: bool,
}

/// Runs discovery for the MCP server at `server` (`raw`: the URL as configured).
pub(crate) async fn discover(
    http: &awc::Client,
    server: &Url,
    raw: &str,
    challenge: Option<&Challenge>,
) -> Result<Found, Failure> {
    let trust = Trust::for_server(server);
    let urls = match challenge.and_then(Challenge::resource_metadata) {
        Some(url) => {
            trust.check_resource_metadata(url)?;
            vec![url.to_owned()]
        }
        None => resource_metadata_urls(server),
    };
    let mut resource = None;
    for url in &urls {
        trust.check("the protected resource metadata", url)?;
        let Some(doc) = get_json(http, url).await? else {
            continue;
        };
        let doc: ResourceMetadata = serde_json::from_value(doc)
            .map_err(|e| format!("the protected resource metadata is invalid: {e}"))?;
        check_resource(server, &doc)?;
        resource = Some(doc);
        break;
    }
    let Some(resource) = resource else {
        return legacy(http, server, raw, &trust).await;
    };
    // Several authorization servers: the first (RFC 9728 §7.6 leaves the choice to us).
    let issuer = resource.authorization_servers[0].clone();
    trust.check("the authorization server's issuer", &issuer)?;
    let metadata = server_metadata(http, &issuer, &trust).await?;
    Ok(Found {
        resource: resource.resource,
        issuer,
        metadata,
        resource_scopes: resource.scopes_supported,
        no_metadata: false,
    })
}

/// The metadata of the authorization server `issuer`, from the first of its well-known URLs
/// that has it. A document naming another issuer is refused, not skipped.
async fn server_metadata(
    http: &awc::Client,
    issuer: &str,
    trust: &Trust,
) -> Result<ServerMetadata, Failure> {
    for url in server_metadata_urls(issuer)? {
        trust.check("the authorization server metadata", &url)?;
        let Some(doc) = get_json(http, &url).await? else {
            continue;
        };
        let metadata: ServerMetadata = serde_json::from_value(doc)
            .map_err(|e| format!("the authorization server metadata is invalid: {e}"))?;
        check_server(issuer, &metadata, trust)?;
        return Ok(metadata);
    }
    Err(Failure::Needed(format!(
        "no authorization server metadata found for issuer `{issuer}`"
    )))
}

/// A server without protected resource metadata (MCP 2025-03-26): the authorization server
/// is at the server's origin.
async fn legacy(
    http: &awc::Client,
    server: &Url,
    raw: &str,
    trust: &Trust,
) -> Result<Found, Failure> {
    let origin = server.origin().ascii_serialization();
    let resource = raw.split('#').next().unwrap_or(raw).to_owned();
    let url = format!("{origin}/.well-known/oauth-authorization-server");
    trust.check("the authorization server metadata", &url)?;
    if let Some(doc) = get_json(http, &url).await? {
        let metadata: ServerMetadata = serde_json::from_value(doc)
            .map_err(|e| format!("the authorization server metadata is invalid: {e}"))?;
        // 2025-03-26 put the metadata at the server's origin without saying what its issuer
        // is; servers of that time name the origin or a path under it (the 0.1.16 suite:
        // `<origin>/oauth`). One of the server's own origin is accepted here, and only here.
        let issuer = metadata.issuer.clone();
        let same_origin =
            url::Url::parse(&issuer).is_ok_and(|u| u.origin().ascii_serialization() == origin);
        check_server(
            if same_origin { &issuer } else { &origin },
            &metadata,
            trust,
        )?;
        return Ok(Found {
            resource,
            issuer,
            metadata,
            resource_scopes: None,
            no_metadata: false,
        });
    }
    tracing::debug!(issuer = %origin, "no authorization metadata at all: using the default endpoints of MCP 2025-03-26");
    let metadata = ServerMetadata {
        issuer: origin.clone(),
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: Some(format!("{origin}/token")),
        registration_endpoint: Some(format!("{origin}/register")),
        scopes_supported: None,
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: None,
        authorization_response_iss_parameter_supported: None,
        dpop_signing_alg_values_supported: None,
    };
    check_server(&origin, &metadata, trust)?;
    Ok(Found {
        resource,
        issuer: origin,
        metadata,
        resource_scopes: None,
        no_metadata: true,
    })
}
