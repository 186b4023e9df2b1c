//! What discovery trusts, read as an attacker would (issue 22, defects 1, 2, 4 and 6): a
//! plain-HTTP authorization server off loopback, a challenge that points the client at
//! another place, configured credentials asked for by a new authorization server, and an
//! access token no header can carry.

use std::sync::Arc;

use mcp_supervisor::auth::{IssuerBinding, MemoryTokenStore, TokenStore};
use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{Error, ErrorKind, ServerConfig, ServerState};

use super::{call, start, NAME};
use crate::common;
use crate::common::oauth_server::{OAuthServer, CLIENT_ID, CLIENT_SECRET};

fn client_credentials(server: &OAuthServer) -> ServerConfig {
    ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET))
}

/// The reason of the `AuthorizationRequired` the server failed with.
async fn failed_with(events: &common::Events) -> String {
    let failed = events.state(NAME, "failed", 1).await;
    match common::state_of(&failed, NAME) {
        Some(ServerState::Failed {
            error: Error::AuthorizationRequired { reason, .. },
            ..
        }) => reason.clone(),
        other => panic!("not failed with AuthorizationRequired: {other:?}"),
    }
}

/// Defect 1: protected resource metadata naming `http://` off loopback as its authorization
/// server is not followed — its metadata is not fetched in cleartext, so whatever token
/// endpoint a rewritten document names (here one the old endpoint check accepted) never gets
/// the client secret. (`0.0.0.0` reaches this machine on Linux, yet is not a loopback address:
/// the issuer could be any host.)
#[actix::test]
async fn a_plain_http_authorization_server_off_loopback_gets_nothing() {
    let server = OAuthServer::start().await;
    let cleartext = server.issuer().replace("127.0.0.1", "0.0.0.0");
    server.publish_issuer(&cleartext);
    let (_sup, events) = start(client_credentials(&server));
    events.state(NAME, "failed", 1).await;
    let c = server.counts();
    assert_eq!(c.as_metadata, 0, "no metadata fetched in cleartext: {c:?}");
    assert_eq!(c.token_requests, 0, "no secret posted: {c:?}");
    let reason = failed_with(&events).await;
    assert!(
        reason.contains("plain HTTP is trusted on loopback only"),
        "{reason}"
    );
    assert!(reason.contains("issuer"), "{reason}");
}

/// Defect 2: the challenge's `resource_metadata` cannot make the client fetch another place
/// (here: a service on another port of this machine) over plain HTTP; the refusal says why.
#[actix::test]
async fn the_challenge_cannot_point_the_client_elsewhere() {
    let server = OAuthServer::start().await;
    let internal = OAuthServer::start().await;
    server.challenge_metadata(&format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        internal.issuer()
    ));
    let (_sup, events) = start(client_credentials(&server));
    events.state(NAME, "failed", 1).await;
    assert_eq!(
        internal.counts().prm,
        0,
        "the other service was never asked"
    );
    assert_eq!(server.counts().token_requests, 0);
    let reason = failed_with(&events).await;
    assert!(reason.contains("resource_metadata"), "{reason}");
    assert!(reason.contains("own origin"), "{reason}");
}

/// Defect 4: configured credentials are bound to the first authorization server they went
/// to (kept in the token store): when the server names another one, they are not sent there
/// — unless the application allows it.
#[actix::test]
async fn configured_credentials_stay_with_their_first_authorization_server() {
    let server = OAuthServer::start().await;
    let other = OAuthServer::start().await;
    let store = Arc::new(MemoryTokenStore::default());
    let config = ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET).store(store.clone()));
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    assert_eq!(
        store.issuer_binding(&server.url()),
        Some(IssuerBinding::new(CLIENT_ID, server.issuer())),
        "bound to the first issuer, in the store"
    );

    // The server (or whoever rewrote its metadata) names another authorization server.
    server.publish_issuer(&other.issuer());
    server.expire_access_tokens();
    let error = call(&sup, "echo").await.expect_err("refused");
    let c = other.counts();
    assert_eq!(c.as_metadata, 1, "discovery reached it: {c:?}");
    assert_eq!(c.token_requests, 0, "but no credentials went there: {c:?}");
    assert_eq!(error.kind(), ErrorKind::Unauthorized, "{error}");
    assert!(
        error.to_string().contains("first used with issuer"),
        "{error}"
    );

    // An application that allows it lets the credentials follow.
    let allowed = ServerConfig::http("moved", server.url()).oauth(
        OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET)
            .store(store.clone())
            .allow_issuer_migration(true),
    );
    store.save_issuer_binding(
        &server.url(),
        IssuerBinding::new(CLIENT_ID, server.issuer()),
    );
    let (_sup2, _events2) = start(allowed);
    common::until("the credentials go to the new authorization server", || {
        other.counts().token_requests == 1
    })
    .await;
    assert_eq!(
        store.issuer_binding(&server.url()),
        Some(IssuerBinding::new(CLIENT_ID, other.issuer()))
    );
}

/// Defect 6: an access token with a line break is refused when it is issued, naming why —
/// not dropped from the request, which then went out without `Authorization` and came back
/// as an unrelated `401 invalid_token`.
#[actix::test]
async fn an_access_token_no_header_can_carry_is_refused_naming_why() {
    let server = OAuthServer::start().await;
    server.access_token_suffix("\r\nX-Injected: 1");
    let (_sup, events) = start(client_credentials(&server));
    let reason = failed_with(&events).await;
    assert!(reason.contains("cannot be sent"), "{reason}");
    assert!(reason.contains("line break"), "{reason}");
    assert!(!reason.contains("Injected"), "never the token: {reason}");
    assert_eq!(
        server.counts().mcp_posts,
        1,
        "nothing went out without the token after the first, token-less request"
    );
}
