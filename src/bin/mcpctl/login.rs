//! OAuth for the HTTP servers mcpctl talks to: `mcpctl login SERVER` runs the authorization
//! code flow with the user's browser and a loopback callback, and every command keeps the
//! tokens in one file only the user can read (`--token-store`, default
//! `$XDG_CONFIG_HOME/mcpctl/tokens.json` or `~/.config/mcpctl/tokens.json`), so that the next
//! command reuses (and refreshes) them without asking again.
//!
//! Its own room because it is the one place mcpctl listens on a socket: [`Loopback`] accepts
//! the authorization server's redirect on the redirect URI's port, bound to 127.0.0.1 only,
//! reads at most [`MAX_HEAD`] bytes of at most [`MAX_CONNECTIONS`] requests, and answers the
//! one on the redirect path; the browser is only ever given the URL, never anything back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::auth::{
    AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer, FileTokenStore,
};
use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{ServerConfig, Transport};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::output::for_terminal;

/// The most bytes of a callback request's head read.
const MAX_HEAD: usize = 8 * 1024;
/// The most requests the callback listener answers before it gives up (a browser asks for
/// `/favicon.ico` too; anything beyond a handful is not the redirect coming).
const MAX_CONNECTIONS: usize = 16;
/// How long one connection may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the tokens are kept: `--token-store`, else the user's config directory.
pub(crate) fn store_path(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| Some(data_dir()?.join("tokens.json")))
}

/// mcpctl's directory of what it keeps (tokens, tasks): `$XDG_CONFIG_HOME/mcpctl`, else
/// `~/.config/mcpctl`; `None` without either variable.
pub(crate) fn data_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some(base.join("mcpctl"))
}

/// Gives the HTTP servers among `configs` the token file: a server with an OAuth
/// configuration keeps its tokens there; one without, whose tokens are there (a `login`
/// before), uses them; with `login`, the server being logged in to authorizes through the
/// browser (`open_browser`) and the loopback callback.
pub(crate) fn attach(
    configs: Vec<ServerConfig>,
    path: Option<PathBuf>,
    login: Option<bool>,
) -> Result<Vec<ServerConfig>, String> {
    let http = |c: &ServerConfig| matches!(c.transport(), Transport::Http(_));
    if !configs.iter().any(http) {
        return Ok(configs);
    }
    let Some(path) = path else {
        return match login {
            Some(_) => Err("no place for the tokens: set --token-store or HOME".into()),
            None => Ok(configs),
        };
    };
    let store = FileTokenStore::open(&path)
        .map_err(|e| format!("the token store {}: {e}", path.display()))?;
    let store: Arc<dyn mcp_supervisor::auth::TokenStore> = Arc::new(store);
    Ok(configs
        .into_iter()
        .map(|config| with_store(config, &store, login))
        .collect())
}

fn with_store(
    config: ServerConfig,
    store: &Arc<dyn mcp_supervisor::auth::TokenStore>,
    login: Option<bool>,
) -> ServerConfig {
    let Transport::Http(http) = config.transport() else {
        return config;
    };
    let has_header = http
        .headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"));
    let stored = store.tokens(&http.url).is_some();
    let oauth = match (&http.oauth, login) {
        (Some(oauth), _) => Some(oauth.as_ref().clone().store(store.clone())),
        // A static Authorization header is the user's choice: left alone.
        (None, _) if has_header => None,
        (None, Some(_)) => Some(OAuthConfig::stored_tokens(store.clone())),
        (None, None) if stored => Some(OAuthConfig::stored_tokens(store.clone())),
        (None, None) => None,
    };
    let config = match oauth {
        Some(oauth) => config.oauth(oauth),
        None => config,
    };
    match login {
        Some(open_browser) => config.oauth_authorizer(Loopback { open_browser }),
        None => config,
    }
}

/// The authorization code flow's user side for a terminal: print the URL (and open it in a
/// browser), then wait for the redirect on the loopback port of the redirect URI.
pub(crate) struct Loopback {
    pub(crate) open_browser: bool,
}

impl Authorizer for Loopback {
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture {
        let open_browser = self.open_browser;
        Box::pin(async move {
            let redirect = url::Url::parse(&request.redirect_uri)
                .map_err(|e| format!("the redirect URI is not a URL: {e}"))?;
            let loopback = matches!(redirect.host_str(), Some("localhost" | "127.0.0.1"));
            let port = redirect.port_or_known_default().filter(|_| loopback).ok_or(
                "mcpctl listens for the redirect on a loopback port: the redirect URI must be http://localhost:PORT/...",
            )?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for the redirect: {e}"))?;
            eprintln!(
                "mcpctl: to authorize {}, open this URL in a browser:\n{}",
                for_terminal(&request.server),
                for_terminal(&request.url)
            );
            if open_browser {
                open_in_browser(&request.url);
            }
            for _ in 0..MAX_CONNECTIONS {
                let (socket, _) = listener.accept().await.map_err(|e| e.to_string())?;
                if let Some(target) = answer(socket, redirect.path(), &request.state).await {
                    let callback = format!("http://localhost:{port}{target}");
                    return AuthorizationResponse::from_redirect(&callback);
                }
            }
            Err("the redirect did not come to the callback".into())
        })
    }
}

/// Reads one request's head; answers it, and returns its target if it is the redirect: the
/// redirect path with this flow's `state` (another page of the browser hitting the port cannot
/// end the flow).
async fn answer(mut socket: tokio::net::TcpStream, path: &str, state: &str) -> Option<String> {
    let mut head = Vec::new();
    let read = tokio::time::timeout(HEAD_TIMEOUT, async {
        let mut buf = [0u8; 1024];
        while head.len() < MAX_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    });
    let _ = read.await;
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .filter(|t| t.split('?').next() == Some(path))
        .filter(|t| carries_state(t, state))
        .map(str::to_owned);
    let (status, body) = match target {
        Some(_) => ("200 OK", "mcpctl has the answer: you can close this tab."),
        None => ("404 Not Found", "not the callback"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
    target
}

/// Whether the request target's query has `state` exactly.
fn carries_state(target: &str, state: &str) -> bool {
    let Ok(url) = url::Url::parse(&format!("http://localhost{target}")) else {
        return false;
    };
    url.query_pairs()
        .take(32)
        .any(|(k, v)| k == "state" && v == state)
}

/// Opens `url` with the desktop's opener, if there is one; the URL is printed either way.
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_in_the_users_config_directory_unless_given() {
        let given = PathBuf::from("/tmp/t.json");
        assert_eq!(store_path(Some(given.clone())), Some(given));
        if std::env::var_os("XDG_CONFIG_HOME").is_none() {
            if let Some(home) = std::env::var_os("HOME") {
                let expected = PathBuf::from(home).join(".config/mcpctl/tokens.json");
                assert_eq!(store_path(None), Some(expected));
            }
        }
    }

    #[actix::test]
    async fn the_callback_listener_answers_the_redirect_and_nothing_else() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let browser = tokio::spawn(async move {
            let mut replies = Vec::new();
            for target in [
                "/favicon.ico",
                "/callback?code=c0&state=other",
                "/callback?code=c1&state=s1",
            ] {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                let request = format!("GET {target} HTTP/1.1\r\nhost: localhost\r\n\r\n");
                s.write_all(request.as_bytes()).await.unwrap();
                let mut reply = String::new();
                s.read_to_string(&mut reply).await.unwrap();
                replies.push(reply);
            }
            replies
        });
        let (first, _) = listener.accept().await.unwrap();
        assert_eq!(answer(first, "/callback", "s1").await, None);
        let (second, _) = listener.accept().await.unwrap();
        assert_eq!(
            answer(second, "/callback", "s1").await,
            None,
            "another flow's state"
        );
        let (third, _) = listener.accept().await.unwrap();
        let target = answer(third, "/callback", "s1")
            .await
            .expect("the redirect");
        let replies = browser.await.unwrap();
        assert!(replies[0].starts_with("HTTP/1.1 404"), "{}", replies[0]);
        assert!(replies[1].starts_with("HTTP/1.1 404"), "{}", replies[1]);
        assert!(replies[2].starts_with("HTTP/1.1 200"), "{}", replies[2]);
        let response =
            AuthorizationResponse::from_redirect(&format!("http://localhost:{port}{target}"))
                .unwrap();
        assert_eq!(response.code.unwrap().expose(), "c1");
        assert_eq!(response.state.as_deref(), Some("s1"));
    }
}
