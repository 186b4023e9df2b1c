//! Bad luck rather than malice (issue 22, defects 5 and 6; issue 17, defect 3): a token
//! endpoint that fails for now logs nobody out, a login page instead of JSON says so, and a
//! user who takes longer to sign in than a connection attempt may last still gets in.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::auth::{MemoryTokenStore, TokenStore};
use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{ErrorKind, ServerConfig, ServerState};

use super::headless::Headless;
use super::{call, code_config, start, NAME};
use crate::common;
use crate::common::oauth_server::{OAuthServer, TokenFault, CLIENT_ID, CLIENT_SECRET};

/// Refreshes tried for one refused request (`auth::provider::REFRESH_TRIES`).
const REFRESH_TRIES: usize = 3;

/// Defect 5: a refresh answered HTTP 500 keeps the tokens, is tried again a bounded number of
/// times, answers the call `unavailable` (retryable), keeps the connection, and never asks
/// the user to sign in again; once the authorization server is back, the next call refreshes.
#[actix::test]
async fn a_token_endpoint_failing_for_now_logs_nobody_out() {
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let store = Arc::new(MemoryTokenStore::default());
    let (sup, events) = start(code_config(&server, &authorizer, store.clone()));
    events.ready(NAME, 1).await;

    server.expire_access_tokens();
    server.token_fault("refresh_token", Some(TokenFault::ServerError));
    let error = call(&sup, "echo").await.expect_err("no token for now");
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert!(error.retry_can_help());
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    let c = server.counts();
    assert_eq!(c.token_refresh, REFRESH_TRIES, "bounded: {c:?}");
    let kept = store.tokens(&server.url()).expect("the tokens are kept");
    assert!(kept.refresh_token.is_some(), "the refresh token too");

    // While the pause lasts, a call does not hammer the token endpoint.
    let error = call(&sup, "echo").await.expect_err("still no token");
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    assert_eq!(server.counts().token_refresh, REFRESH_TRIES);

    server.token_fault("refresh_token", None);
    common::until_async(|| async { call(&sup, "echo").await.is_ok() }).await;
    let c = server.counts();
    assert_eq!(
        c.token_refresh,
        REFRESH_TRIES + 1,
        "one more refresh: {c:?}"
    );
    assert_eq!(c.authorize, 1, "never a new sign-in: {c:?}");
    assert_eq!(authorizer.uses.load(Ordering::SeqCst), 1);
    assert_eq!(
        events.messages(NAME).len(),
        1,
        "the connection stayed Ready: {:?}",
        events.messages(NAME)
    );
}

/// Defect 6: a login page (HTML with 200) from the token endpoint says so, rather than "no
/// access_token"; it is a "not now" (a proxy in the way), so the server is revived later.
#[actix::test]
async fn a_login_page_from_the_token_endpoint_says_what_it_is() {
    let server = OAuthServer::start().await;
    server.token_fault("client_credentials", Some(TokenFault::Html));
    let config = ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET));
    let (_sup, events) = start(config);
    let failed = events.state(NAME, "failed", 1).await;
    let Some(ServerState::Failed { error, revive_at }) = common::state_of(&failed, NAME) else {
        unreachable!()
    };
    let shown = error.to_string();
    assert!(
        shown.contains("answered HTTP 200 with an HTML page, not JSON"),
        "{shown}"
    );
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error:?}");
    assert!(revive_at.is_some(), "tried again later");
}

/// Issue 17, defect 3: a sign-in that takes longer than `connect_timeout` finishes. The
/// connect timeout does not run while the user signs in (`authorize_timeout` does): one
/// authorization, one `state`, one authorization URL, and the server Ready.
#[actix::test]
async fn a_sign_in_slower_than_the_connect_timeout_finishes() {
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let connect_timeout = Duration::from_millis(300);
    authorizer
        .slowness_ms
        .store(5 * connect_timeout.as_millis() as u64, Ordering::SeqCst);
    let config = code_config(&server, &authorizer, Arc::new(MemoryTokenStore::default()))
        .connect_timeout(connect_timeout);
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    call(&sup, "echo").await.expect("authorized");
    let c = server.counts();
    assert_eq!(
        authorizer.uses.load(Ordering::SeqCst),
        1,
        "one authorization URL"
    );
    assert_eq!((c.authorize, c.token_code), (1, 1), "{c:?}");
    assert_eq!(
        events.messages(NAME).len(),
        1,
        "Ready at the first attempt: {:?}",
        events.messages(NAME)
    );
}
