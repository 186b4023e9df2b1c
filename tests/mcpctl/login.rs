//! `mcpctl login` against the in-tree authorization server and the MCP server it protects:
//! the test plays the browser (it follows the printed authorization URL to mcpctl's loopback
//! callback), and the tokens mcpctl keeps are then used by the next command with no login.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;
use std::time::Duration;

use crate::common::oauth_server::OAuthServer;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;

/// The user's part: open the authorization URL (the server approves at once, with a redirect)
/// and follow the redirect to mcpctl's callback.
async fn browse(url: &str) -> u16 {
    let client = awc::Client::builder().disable_redirects().finish();
    let approved = client
        .get(url)
        .send()
        .await
        .expect("the authorization server answers");
    let callback = approved
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("a redirect to the callback")
        .to_owned();
    let answered = client
        .get(&callback)
        .send()
        .await
        .expect("mcpctl's callback answers");
    answered.status().as_u16()
}

#[actix::test]
async fn login_in_the_browser_then_calls_with_the_kept_tokens() {
    let server = OAuthServer::start().await;
    let dir = common::tempdir();
    let port = common::interop::free_port();
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"protected": {
        "type": "http", "url": server.url(), "oauth": {"callbackPort": port}
    }}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let tokens = dir.path().join("state/tokens.json");
    let (config, tokens_arg) = (config.display().to_string(), tokens.display().to_string());

    // Without a login, the call cannot be authorized: no browser is asked for.
    let refused = Command::from(crate::mcpctl_command())
        .args(["--config", &config, "--token-store", &tokens_arg])
        .args(["call", "protected", "echo", "--timeout", "10s"])
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");

    let mut login = Command::from(crate::mcpctl_command())
        .args(["--config", &config, "--token-store", &tokens_arg])
        .args(["login", "protected", "--no-browser", "--wait", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.starts_with("http://127.0.0.1") {
                return line;
            }
        }
        panic!("mcpctl printed no authorization URL");
    })
    .await
    .expect("the authorization URL in time");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert_eq!(browse(&url).await, 200, "the callback page");
    let status = tokio::time::timeout(Duration::from_secs(30), login.wait())
        .await
        .expect("login ends")
        .unwrap();
    assert_eq!(status.code(), Some(0), "login succeeded");
    let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is the user's only");
    let kept = std::fs::read_to_string(&tokens).unwrap();
    assert!(
        kept.contains(common::oauth_server::MARK),
        "the tokens are kept"
    );

    // The next command finds the tokens: no browser, no new authorization.
    let authorized = server.counts().authorize;
    let call = Command::from(crate::mcpctl_command())
        .args(["--config", &config, "--token-store", &tokens_arg])
        .args(["call", "protected", "echo", "--timeout", "10s"])
        .output()
        .await
        .unwrap();
    assert_eq!(call.status.code(), Some(0), "{call:?}");
    assert_eq!(String::from_utf8_lossy(&call.stdout), "ok\n");
    assert_eq!(
        server.counts().authorize,
        authorized,
        "no second authorization"
    );
}
