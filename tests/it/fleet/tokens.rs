//! A fleet's tokens (issue 21): replica processes share one `PostgresTokenStore` in front of
//! one OAuth-protected MCP server. They sign in once for the fleet (the others wait for its
//! tokens rather than ask the user again), and a rotated refresh token raced by all three is
//! refreshed once (a second use would be refused `invalid_grant` by the in-tree authorization
//! server, which rotates them, and would void the grant).
//!
//! The user signs in only once all three replicas have met the server's 401 (the test says
//! when), and the token endpoint is slow to answer: without the store's renewal lock the
//! replicas' authorizations overlap, and each would make its own.

use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::auth::PostgresTokenStore;
use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{CallTool, ServerConfig, Supervisor};
use serde_json::json;

use super::{commands, say, schema, target, Replica};
use crate::common::oauth_server::OAuthServer;
use crate::common::*;
use crate::oauth::headless::Headless;

/// In a replica's environment: `url|schema|name`.
const CHILD: &str = "MCP_TEST_FLEET_TOKEN_REPLICA";
/// Plays a replica: a supervisor of `web` (the parent's OAuth-protected server) whose tokens
/// are in the shared store, and whose user signs in after a `go` line. Says `READY` once
/// connected (authorized), then, for each `call` line, calls `echo` and says `CALLED ok` or
/// `CALLED <error code>`.
async fn replica(spec: &str) {
    let parts: Vec<&str> = spec.split('|').collect();
    let [url, schema, _name] = parts[..] else {
        panic!("a replica's spec: {spec}")
    };
    let store = PostgresTokenStore::connect_in(&target(), schema).expect("the fleet's database");
    let (go, user_may_sign_in) = tokio::sync::watch::channel(false);
    let user = Headless {
        go: Some(user_may_sign_in),
        ..Headless::default()
    };
    let mut lines = commands();
    let go = async move {
        assert_eq!(
            lines.recv().await.as_deref(),
            Some("go"),
            "a replica's first command"
        );
        go.send_replace(true);
        lines
    };
    let oauth = OAuthConfig::authorization_code(user).store(Arc::new(store));
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .server(
            ServerConfig::http("web", url)
                .oauth(oauth)
                .connect_timeout(Duration::from_secs(60))
                .call_timeout(Duration::from_secs(60)),
        )
        .subscriber(recipient)
        .start()
        .expect("a supervisor");
    let (_, mut lines) = tokio::join!(events.ready("web", 1), go);
    say("READY");
    while let Some(line) = lines.recv().await {
        assert_eq!(line, "call", "a replica's command");
        let sup = sup.clone();
        actix::spawn(async move {
            match sup
                .send(CallTool::new("web", "echo", json!({})))
                .await
                .unwrap()
            {
                Ok(_) => say("CALLED ok"),
                Err(e) => say(&format!("CALLED {}", e.code())),
            }
        });
    }
    std::process::exit(0);
}

#[actix::test]
async fn three_replicas_sign_in_once_and_refresh_a_rotated_token_once() {
    const TEST: &str = "three_replicas_sign_in_once_and_refresh_a_rotated_token_once";
    if let Ok(spec) = std::env::var(CHILD) {
        return replica(&spec).await;
    }
    let server = OAuthServer::start().await;
    let schema = schema("tokens");
    let mut replicas: Vec<Replica> = ["r0", "r1", "r2"]
        .into_iter()
        .map(|name| {
            let spec = format!("{}|{schema}|{name}", server.url());
            Replica::spawn(module_path!(), TEST, name, CHILD, &spec)
        })
        .collect();
    // All three met the 401, so all three need a sign-in; only then does the user sign in.
    let all_refused = tokio::time::timeout(Duration::from_secs(60), async {
        while server.counts().mcp_401 < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(
        all_refused.await.is_ok(),
        "three replicas met the 401 within 60 s: {:?}",
        server.counts()
    );
    for replica in &mut replicas {
        replica.tell("go");
    }
    for replica in &mut replicas {
        assert_eq!(replica.next().await, "READY");
    }
    let c = server.counts();
    assert_eq!(
        c.mcp_401, 3,
        "each replica met a 401 without tokens, so all three needed the sign-in: {c:?}"
    );
    assert_eq!(
        (c.authorize, c.register, c.token_code),
        (1, 1, 1),
        "one sign-in (one registration) for the fleet: {c:?}"
    );

    // Every access token stops working, and the token endpoint takes its time: the three
    // refreshes the calls need would overlap.
    server.expire_access_tokens();
    server.token_delay(Some(Duration::from_millis(500)));
    let before = server.counts();
    for replica in &mut replicas {
        replica.tell("call");
    }
    for replica in &mut replicas {
        assert_eq!(replica.next().await, "CALLED ok", "on {}", replica.name);
    }
    let after = server.counts();
    assert_eq!(
        after.mcp_401 - before.mcp_401,
        3,
        "each replica's token was refused, so each needed a renewal: {after:?}"
    );
    assert_eq!(
        after.token_refresh - before.token_refresh,
        1,
        "one refresh for the fleet: {after:?}"
    );
    assert_eq!(after.authorize, 1, "and no new sign-in: {after:?}");
}
