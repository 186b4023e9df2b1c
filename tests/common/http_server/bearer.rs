//! The optional bearer gate: with [`super::Faults::require_bearer`] the server is an OAuth
//! protected resource (RFC 9728) whose tokens another server issues — the in-tree
//! authorization server (`common::oauth_server`), which says through [`Bearer::live`] whether a
//! token is one of its live access tokens.
//!
//! Every request on `/mcp` (POST, GET, DELETE, either era) without a live bearer token is
//! answered `401` with `WWW-Authenticate: Bearer error="invalid_token", resource_metadata=...`
//! before anything else looks at it, so a refused request never runs. The protected resource
//! metadata is served at `/.well-known/oauth-protected-resource/mcp` (the server's own origin,
//! as discovery wants over plain HTTP), naming this server's `/mcp` as the resource and the
//! authorization server's issuer. Without a gate that path is `404` and `/mcp` is open.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::state::{lock, Shared};

/// Where the protected resource metadata is, under the server's origin.
pub(super) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// A token check and the authorization server that issues the tokens.
#[derive(Clone)]
pub struct Bearer {
    /// Whether `token` is a live access token (the authorization server's view).
    pub live: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// The authorization server's issuer, as the protected resource metadata names it.
    pub issuer: String,
}

/// The `401` for a request without a live token, if the gate is on; counted in
/// [`super::Stats::unauthorized`].
pub(super) fn refuse(state: &Shared, req: &HttpRequest) -> Option<HttpResponse> {
    let live = lock(&state.faults).bearer.as_ref()?.live.clone();
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if token.is_some_and(|t| live(t)) {
        return None;
    }
    lock(&state.counters).unauthorized += 1;
    let metadata = format!("{}{METADATA_PATH}", origin(req));
    let challenge = format!(r#"Bearer error="invalid_token", resource_metadata="{metadata}""#);
    Some(
        HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, challenge))
            .finish(),
    )
}

/// `GET /.well-known/oauth-protected-resource/mcp`: the metadata while the gate is on.
pub(super) async fn metadata(req: HttpRequest, state: web::Data<Shared>) -> HttpResponse {
    let Some(issuer) = lock(&state.faults)
        .bearer
        .as_ref()
        .map(|b| b.issuer.clone())
    else {
        return HttpResponse::NotFound().finish();
    };
    HttpResponse::Ok().json(json!({
        "resource": format!("{}/mcp", origin(&req)),
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
    }))
}

/// `http://<host>:<port>` as the client addressed the server.
fn origin(req: &HttpRequest) -> String {
    format!("http://{}", req.connection_info().host())
}
