//! Authorization (MCP's OAuth profile) against the in-tree authorization server and the MCP
//! server it protects (`common::oauth_server`): the client credentials service, the authorization
//! code flow through an `Authorizer`, expiry mid-session (one refresh, one re-send), refresh
//! failure (authorization required, no loop), step-up, a server restart with the token still
//! valid, and that no secret reaches the logs or any `Debug` output. What discovery trusts is
//! in `oauth/trust.rs`; failures for now and slow sign-ins in `oauth/resilience.rs`.

pub mod headless;
mod resilience;
mod trust;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::common::logs::{self, LogCapture};
use crate::common::oauth_server::{
    OAuthServer, CLIENT_ID, CLIENT_SECRET, ID_TOKEN, MARK, WORKLOAD_JWT,
};
use crate::common::{self, Events};
use headless::Headless;
use mcp_supervisor::auth::{MemoryTokenStore, TokenStore};
use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{
    CallTool, Error, ErrorKind, GetStatus, ListTools, ServerConfig, ServerState, Supervisor,
};
use serde_json::json;
use tracing::dispatcher::DefaultGuard;

const NAME: &str = "crm";

/// This test's trace output, every crate's (`log` records of awc and actix-http too, as an
/// application's `RUST_LOG=trace` would show them), captured on the test's thread, where its
/// supervisor and HTTP client run. When the test ends, no line may hold a secret: each test's
/// flow is checked, not only `no_secret_in_trace_logs`'s.
struct TraceWatch {
    logs: LogCapture,
    _guard: DefaultGuard,
}

impl TraceWatch {
    fn start() -> TraceWatch {
        let (logs, _guard) = logs::capture(tracing::Level::TRACE);
        TraceWatch { logs, _guard }
    }

    fn lines(&self) -> Vec<String> {
        self.logs.lines()
    }
}

impl Drop for TraceWatch {
    fn drop(&mut self) {
        // A test that failed already says why; a second panic would abort.
        if !std::thread::panicking() {
            for line in self.lines() {
                assert_no_secret("a log line", &line);
            }
        }
    }
}

fn start(config: ServerConfig) -> (actix::Addr<Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .server(
            config
                .max_connect_retries(0)
                .call_timeout(Duration::from_secs(10)),
        )
        .subscriber(recipient)
        .start()
        .expect("a supervisor");
    (sup, events)
}

async fn call(sup: &actix::Addr<Supervisor>, tool: &str) -> Result<(), Error> {
    sup.send(CallTool::new(NAME, tool, json!({})))
        .await
        .expect("the supervisor answers")
        .map(|_| ())
}

fn code_config(
    server: &OAuthServer,
    authorizer: &Headless,
    store: Arc<dyn TokenStore>,
) -> ServerConfig {
    ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::authorization_code(authorizer.clone()).store(store))
}

/// Asserts that nothing the test saw contains a secret.
fn assert_no_secret(what: &str, text: &str) {
    assert!(!text.contains(MARK), "a secret in {what}: {text}");
}

#[actix::test]
async fn a_service_authorizes_with_client_credentials() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let config = ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET));
    assert_no_secret("the config's Debug", &format!("{config:?}"));
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    call(&sup, "echo").await.expect("the call succeeds");
    let c = server.counts();
    assert_eq!(c.token_client_credentials, 1, "{c:?}");
    assert_eq!(
        (c.authorize, c.register),
        (0, 0),
        "no user-facing flow: {c:?}"
    );
    // Only the very first request went without a token.
    assert_eq!(c.mcp_401, 1, "{c:?}");
    assert_no_secret(
        "the status",
        &format!("{:?}", sup.send(GetStatus::all()).await.unwrap()),
    );
}

#[actix::test]
async fn authorization_code_then_expiry_mid_session_is_one_refresh_and_one_resend() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;
    let c = server.counts();
    assert_eq!((c.authorize, c.token_code, c.register), (1, 1, 1), "{c:?}");
    assert_eq!(
        c.authorize_scopes,
        ["mcp:basic offline_access"],
        "challenged scope, plus offline_access the AS lists"
    );

    server.expire_access_tokens();
    let before = server.counts();
    call(&sup, "echo")
        .await
        .expect("the call succeeds after a refresh");
    let after = server.counts();
    assert_eq!(after.token_refresh - before.token_refresh, 1, "one refresh");
    assert_eq!(
        after.mcp_posts - before.mcp_posts,
        2,
        "the call was sent twice: refused, then re-sent"
    );
    assert_eq!(after.authorize, 1, "no new authorization");
    assert_eq!(authorizer.uses.load(Ordering::SeqCst), 1);
    assert_eq!(
        events.messages(NAME).len(),
        1,
        "no state change (no reconnect): {:?}",
        events.messages(NAME)
    );
}

#[actix::test]
async fn tokens_about_to_expire_are_refreshed_before_they_are_sent() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    server.expires_in(Some(5)); // within the refresh margin: due before every request
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;
    let before = server.counts();
    call(&sup, "echo").await.expect("the call succeeds");
    let after = server.counts();
    assert_eq!(after.token_refresh - before.token_refresh, 1, "{after:?}");
    assert_eq!(
        after.mcp_401, before.mcp_401,
        "renewed before sending: no 401"
    );
}

/// A store that keeps the expiry coarser than issued (`FileTokenStore`: whole seconds) holds
/// the same tokens as the connection all the same: a renewal compares the tokens, not the
/// record. Found by review: a refused token was "saved meanwhile" (its expiry differed by
/// the fraction of a second), re-sent and refused again, without a refresh; and every other
/// renewal ahead of expiry took the expiring tokens back instead of refreshing.
#[actix::test]
async fn a_store_with_coarser_expiry_still_refreshes_once_per_renewal() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        mcp_supervisor::auth::FileTokenStore::open(dir.path().join("private/tokens.json")).unwrap(),
    );
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(&server, &authorizer, store));
    events.ready(NAME, 1).await;

    server.expire_access_tokens();
    let before = server.counts();
    call(&sup, "echo")
        .await
        .expect("the call succeeds after a refresh");
    let after = server.counts();
    assert_eq!(after.token_refresh - before.token_refresh, 1, "{after:?}");
    assert_eq!(after.mcp_401 - before.mcp_401, 1, "refused once: {after:?}");

    // Tokens about to expire: renewed before each request.
    server.expires_in(Some(5));
    server.expire_access_tokens();
    call(&sup, "echo").await.expect("refreshed after a 401");
    let before = server.counts();
    call(&sup, "echo").await.expect("the call succeeds");
    call(&sup, "echo").await.expect("the call succeeds");
    let after = server.counts();
    assert_eq!(
        after.token_refresh - before.token_refresh,
        2,
        "one refresh per call ahead of expiry: {after:?}"
    );
    assert_eq!(after.mcp_401, before.mcp_401, "none refused: {after:?}");
}

/// Processes sharing one `FileTokenStore` file (two `mcpctl` runs at once; here two stores of
/// the file in one process, which lock it as two processes would): the user signs in once,
/// when both have met the 401, and a rotated refresh token raced by both is used once (a
/// second use would be refused `invalid_grant`, and void the grant).
#[actix::test]
async fn stores_of_one_token_file_sign_in_once_and_refresh_a_rotated_token_once() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private/tokens.json");
    let (go, user_may_sign_in) = tokio::sync::watch::channel(false);
    let authorizer = Headless {
        go: Some(user_may_sign_in),
        ..Headless::default()
    };
    let mut sups = Vec::new();
    for _ in 0..2 {
        let store = Arc::new(mcp_supervisor::auth::FileTokenStore::open(&path).unwrap());
        sups.push(start(code_config(&server, &authorizer, store)));
    }
    common::until("both refused without tokens", || {
        server.counts().mcp_401 >= 2
    })
    .await;
    go.send_replace(true);
    for (_, events) in &sups {
        events.ready(NAME, 1).await;
    }
    let c = server.counts();
    assert_eq!(
        (c.authorize, c.register, c.token_code),
        (1, 1, 1),
        "one sign-in for both: {c:?}"
    );

    // Both tokens stop working, and the token endpoint takes its time: the refreshes overlap.
    server.expire_access_tokens();
    server.token_delay(Some(Duration::from_millis(300)));
    let before = server.counts();
    let (first, second) = tokio::join!(call(&sups[0].0, "echo"), call(&sups[1].0, "echo"));
    first.expect("the first call succeeds");
    second.expect("the second call succeeds");
    let after = server.counts();
    assert_eq!(after.mcp_401 - before.mcp_401, 2, "both refused: {after:?}");
    assert_eq!(
        after.token_refresh - before.token_refresh,
        1,
        "one refresh for both: {after:?}"
    );
    assert_eq!(after.authorize, 1, "and no new sign-in: {after:?}");
}

#[actix::test]
async fn a_failed_refresh_means_authorization_required_not_a_loop() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;

    let before = server.counts();
    server.expire_access_tokens();
    server.fail_refresh(true);
    authorizer.decline.store(true, Ordering::SeqCst);
    let error = call(&sup, "echo").await.expect_err("the call fails");
    assert_eq!(error.kind(), ErrorKind::Unauthorized, "{error}");
    assert!(
        matches!(error, Error::AuthorizationRequired { .. }),
        "{error:?}"
    );
    assert_no_secret("the error", &format!("{error} {error:?}"));

    let failed = events.state(NAME, "failed", 1).await;
    let Some(ServerState::Failed { error, revive_at }) = common::state_of(&failed, NAME) else {
        unreachable!()
    };
    assert!(
        matches!(error, Error::AuthorizationRequired { .. }),
        "{error:?}"
    );
    assert_eq!(
        *revive_at, None,
        "not revived in the background: it waits for the application"
    );
    let c = server.counts();
    assert_eq!(c.token_refresh, 1, "one refresh attempt: {c:?}");
    // Straight to Failed: no reconnect that would only ask the Authorizer again.
    assert_eq!(authorizer.uses.load(Ordering::SeqCst), 1);
    assert_eq!(c.authorize, 1, "{c:?}");
    assert!(
        events.states(NAME).ends_with(&["ready", "failed"]),
        "{:?}",
        events.states(NAME)
    );
    // Bounded: the refused call (not re-sent: no new token), and nothing after it.
    assert_eq!(c.mcp_posts - before.mcp_posts, 1, "{c:?}");
    // Calls now fail at once, with no traffic.
    assert!(call(&sup, "echo").await.is_err());
    assert_eq!(server.counts().mcp_posts, c.mcp_posts);
    assert_no_secret("the events", &format!("{:?}", events.all()));

    // The application authorizes again when it is ready.
    authorizer.decline.store(false, Ordering::SeqCst);
    sup.do_send(mcp_supervisor::Reconnect {
        server: NAME.into(),
    });
    events.ready(NAME, 2).await;
    call(&sup, "echo").await.expect("authorized again");
}

#[actix::test]
async fn insufficient_scope_steps_up_once_and_is_bounded() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;

    call(&sup, "admin")
        .await
        .expect("the call succeeds after a step-up");
    let c = server.counts();
    assert_eq!(c.authorize, 2, "{c:?}");
    assert_eq!(
        c.authorize_scopes[1], "mcp:admin mcp:basic offline_access",
        "the union"
    );

    // A scope the authorization server never grants: one more step-up, then the refusal.
    let error = call(&sup, "never").await.expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(
        matches!(error, Error::Unauthorized { status: 403, .. }),
        "{error:?}"
    );
    let c2 = server.counts();
    assert_eq!(c2.authorize, 3, "one step-up for it: {c2:?}");
    // Asking again does not step up again for the same scopes.
    call(&sup, "never").await.expect_err("refused");
    assert_eq!(server.counts().authorize, 3);
    call(&sup, "echo").await.expect("the connection is fine");
}

#[actix::test]
async fn a_server_restart_with_the_token_still_valid_needs_no_new_authorization() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::default());
    let (sup, events) = start(code_config(&server, &authorizer, store.clone()));
    events.ready(NAME, 1).await;
    let before = server.counts();
    assert!(
        store.tokens(&server.url()).is_some(),
        "the token is kept in the store"
    );

    let server = server.restart().await;
    // A safe method: the first POST may meet the old server's pooled connection, reset.
    sup.send(ListTools::new(NAME))
        .await
        .expect("the supervisor answers")
        .expect("the call succeeds after re-initializing");
    events.ready(NAME, 2).await;
    let after = server.counts();
    assert_eq!(
        after.initialize,
        before.initialize + 1,
        "a new session: {after:?}"
    );
    assert_eq!(after.authorize, before.authorize, "no new authorization");
    assert_eq!(
        after.token_code + after.token_refresh,
        before.token_code + before.token_refresh
    );
    assert_eq!(
        after.mcp_401, before.mcp_401,
        "the stored token was sent at once"
    );
}

#[actix::test]
async fn no_secret_in_trace_logs() {
    let trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let authorizer = Headless::default();
    let (sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;
    server.expire_access_tokens();
    call(&sup, "echo").await.expect("refreshed");
    let (sup2, events2) = start(
        ServerConfig::http("cc", server.url())
            .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET)),
    );
    events2.ready("cc", 1).await;
    drop((sup, sup2));
    let lines = trace.lines();
    assert!(
        lines.iter().any(|l| l.contains("TRACE actix_http")),
        "the dependencies' trace output is captured too"
    );
    assert!(
        lines.iter().any(|l| l.contains("authorized")),
        "the flow was logged"
    );
    for line in &lines {
        assert_no_secret("a log line", line);
    }
}

#[actix::test]
async fn a_server_refusing_every_token_costs_one_authorization_per_request() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    server.refuse_all_tokens(true);
    let authorizer = Headless::default();
    let (_sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    let failed = events.state(NAME, "failed", 1).await;
    let Some(ServerState::Failed { error, .. }) = common::state_of(&failed, NAME) else {
        unreachable!()
    };
    assert!(
        matches!(error, Error::Unauthorized { status: 401, .. }),
        "{error:?}"
    );
    let c = server.counts();
    // initialize: refused, authorized once, re-sent once, refused again: done.
    assert_eq!((c.authorize, c.mcp_posts), (1, 2), "{c:?}");
}

#[actix::test]
async fn a_workload_authorizes_with_its_jwt_and_a_refused_one_is_not_retried() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let config = ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::jwt_bearer("workload", || {
            Ok(mcp_supervisor::auth::Secret::new(WORKLOAD_JWT))
        }));
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    call(&sup, "echo").await.expect("the call succeeds");
    assert_eq!(server.counts().token_jwt_bearer, 1);

    let refused = ServerConfig::http("wif", server.url())
        .oauth(OAuthConfig::jwt_bearer("workload", || {
            Ok(mcp_supervisor::auth::Secret::new("wif-SECRET-wrong"))
        }));
    let (_sup, events) = start(refused);
    let failed = events.state("wif", "failed", 1).await;
    let Some(ServerState::Failed { error, .. }) = common::state_of(&failed, "wif") else {
        unreachable!()
    };
    assert!(
        matches!(error, Error::AuthorizationRequired { .. }),
        "{error:?}"
    );
    assert_no_secret("the error", &format!("{error} {error:?}"));
    assert_eq!(
        server.counts().token_jwt_bearer,
        2,
        "one attempt, no retry, no other grant"
    );
    assert_eq!(server.counts().token_client_credentials, 0);
}

#[actix::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    let idp = mcp_supervisor::auth::EnterpriseIdp::new(
        format!("{}/idp/token", server.issuer()),
        "idp-client",
        || Ok(mcp_supervisor::auth::Secret::new(ID_TOKEN)),
    );
    let config = ServerConfig::http(NAME, server.url()).oauth(OAuthConfig::enterprise_managed(
        CLIENT_ID,
        CLIENT_SECRET,
        idp,
    ));
    assert_no_secret("the config's Debug", &format!("{config:?}"));
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    call(&sup, "echo").await.expect("the call succeeds");
    let c = server.counts();
    assert_eq!((c.idp_exchanges, c.token_jwt_bearer), (1, 1), "{c:?}");
    assert_eq!(
        (c.authorize, c.register),
        (0, 0),
        "no browser, no registration: {c:?}"
    );
}

#[actix::test]
async fn dpop_binds_the_token_and_proves_every_request_with_the_servers_nonce() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    server.dpop(true);
    let config = ServerConfig::http(NAME, server.url())
        .oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET).dpop(true));
    let (sup, events) = start(config);
    events.ready(NAME, 1).await;
    let before = server.counts();
    assert_eq!(
        before.dpop_token_proofs, 1,
        "the token request carried a proof: {before:?}"
    );
    call(&sup, "echo").await.expect("the call succeeds");
    let after = server.counts();
    assert_eq!(after.dpop_proofs - before.dpop_proofs, 1, "{after:?}");
    // The nonce was asked for once (the first request with the token), then always sent.
    assert_eq!(
        after.mcp_401, 2,
        "the first request, then the nonce challenge: {after:?}"
    );
}

/// The GET stream re-opens with a renewed token: a stream refused `401` because its token
/// expired meanwhile is refreshed and re-sent once, like a POST, instead of being given up
/// (server messages would stop for the rest of the connection).
#[actix::test]
async fn the_get_stream_reopens_with_a_renewed_token() {
    let _trace = TraceWatch::start();
    let server = OAuthServer::start().await;
    server.get_stream(true);
    let authorizer = Headless::default();
    let (_sup, events) = start(code_config(
        &server,
        &authorizer,
        Arc::new(MemoryTokenStore::default()),
    ));
    events.ready(NAME, 1).await;
    common::until("the GET stream is open", || server.counts().gets >= 1).await;
    server.expire_access_tokens();
    let before = server.counts();
    common::until("the GET stream refused, then open again", || {
        let c = server.counts();
        c.get_401 > before.get_401 && c.gets > before.gets
    })
    .await;
    let c = server.counts();
    assert!(
        c.token_refresh > before.token_refresh,
        "renewed by a refresh: {c:?}"
    );
    assert_eq!(
        authorizer.uses.load(Ordering::SeqCst),
        1,
        "no new authorization"
    );
}
