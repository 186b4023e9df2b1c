//! The loader as a whole, host by host: each host's format features, expansion in every field,
//! errors naming server and field, partial and strict loads, JSONC, envFile precedence, and
//! what must stay out of `Debug` and error messages. The pieces have their own tests beside
//! them (`expand`, `env_file`, `own_settings`).

use super::*;
use crate::config::Transport;
use std::path::Path;

mod hosts;
mod loading;

#[test]
fn parses_claude_desktop_format() {
    let servers = ServerConfig::from_mcp_servers_json(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "pkg", "/srv"], "env": {"K": "v"}, "cwd": "/tmp"},
            "mem": {"type": "stdio", "command": "node", "args": []}
        }}"#,
    )
    .unwrap();
    assert_eq!(servers.len(), 2);
    let Transport::Stdio(fs) = servers[0].transport() else {
        panic!()
    };
    assert_eq!(fs.command, "npx");
    assert_eq!(fs.args, ["-y", "pkg", "/srv"]);
    assert_eq!(fs.env.get("K").map(String::as_str), Some("v"));
    assert_eq!(fs.cwd.as_deref(), Some(Path::new("/tmp")));
    assert_eq!(servers[1].name(), "mem");
}

#[test]
fn accepts_vscode_servers_key() {
    let servers =
        ServerConfig::from_mcp_servers_json(r#"{"servers": {"a": {"command": "x"}}}"#).unwrap();
    assert_eq!(servers[0].name(), "a");
}

/// Issue 20, item 2: a file with both keys (one host wrote it, another added to it) had its
/// `servers` dropped without a word. Both are read; a name in both is that entry's error,
/// naming the two keys.
#[test]
fn both_mcp_servers_and_servers_are_read() {
    let loaded = opts()
        .load_json(
            r#"{"mcpServers": {"a": {"command": "x"}, "both": {"command": "x"}},
                "servers": {"b": {"command": "y"}, "both": {"command": "y"}}}"#,
        )
        .unwrap();
    let names: Vec<_> = loaded.servers.iter().map(ServerConfig::name).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(loaded.invalid.len(), 1, "{:?}", loaded.invalid);
    let (server, field, message) = config_error(&loaded.invalid[0]);
    assert_eq!((server, field), (Some("both"), "mcpServers.both"));
    assert!(
        message.contains("`mcpServers`") && message.contains("`servers`"),
        "{message}"
    );
    // Strict: the clash is the error.
    let e = ServerConfig::from_mcp_servers_json(
        r#"{"mcpServers": {"s": {"command": "x"}}, "servers": {"s": {"command": "x"}}}"#,
    )
    .unwrap_err();
    assert_eq!(config_error(&e).0, Some("s"));
    // Either key that is not an object is the document's error, as `mcpServers` always was.
    let e = opts()
        .load_json(r#"{"mcpServers": {"a": {"command": "x"}}, "servers": []}"#)
        .unwrap_err();
    assert_eq!(
        config_error(&e),
        (None, "servers", "expected an object of servers")
    );
}

#[test]
fn errors_name_server_and_field() {
    let cases = [
        (
            r#"{"mcpServers": {"fs": {"args": []}}}"#,
            "mcpServers.fs.command",
        ),
        (
            r#"{"mcpServers": {"fs": {"command": 3}}}"#,
            "mcpServers.fs.command",
        ),
        (
            r#"{"mcpServers": {"fs": {"command": "x", "args": ["a", 1]}}}"#,
            "mcpServers.fs.args[1]",
        ),
        (
            r#"{"mcpServers": {"fs": {"command": "x", "env": {"K": 1}}}}"#,
            "mcpServers.fs.env.K",
        ),
        (
            r#"{"mcpServers": {"fs": {"type": "sse"}}}"#,
            "mcpServers.fs.url",
        ),
        (
            r#"{"mcpServers": {"fs": {"type": "http"}}}"#,
            "mcpServers.fs.url",
        ),
        (
            r#"{"mcpServers": {"fs": {"type": "http", "url": 3}}}"#,
            "mcpServers.fs.url",
        ),
        (
            r#"{"mcpServers": {"fs": {"url": "http://x", "headers": {"A": 1}}}}"#,
            "mcpServers.fs.headers.A",
        ),
        (r#"{"mcpServers": {"fs": "npx"}}"#, "mcpServers.fs"),
    ];
    // Checked with the `http` feature's crates; without them, refused for the transport.
    #[cfg(feature = "http")]
    let cases = [
        cases.as_slice(),
        &[
            (
                r#"{"mcpServers": {"fs": {"url": "ftp://x"}}}"#,
                "mcpServers.fs.url",
            ),
            (
                r#"{"mcpServers": {"fs": {"serverUrl": "https://a b"}}}"#,
                "mcpServers.fs.serverUrl",
            ),
            (
                r#"{"mcpServers": {"fs": {"url": "https://a/mcp", "headers": {"X(Bad)": "v"}}}}"#,
                "mcpServers.fs.headers.X(Bad)",
            ),
        ],
    ]
    .concat();
    for (json, want_field) in cases {
        match ServerConfig::from_mcp_servers_json(json) {
            Err(Error::Config { server, field, .. }) => {
                assert_eq!(server.as_deref(), Some("fs"), "{json}");
                assert_eq!(field, want_field, "{json}");
            }
            other => panic!("{json}: expected a config error, got {other:?}"),
        }
    }
    assert!(ServerConfig::from_mcp_servers_json("not json").is_err());
    assert!(ServerConfig::from_mcp_servers_json("[]").is_err());
    assert!(ServerConfig::from_mcp_servers_json("{}").is_err());
}

#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn parses_http_servers() {
    let servers = ServerConfig::from_mcp_servers_json(
        r#"{"mcpServers": {
            "a": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t"}},
            "b": {"type": "streamable-http", "url": "http://127.0.0.1:8080/mcp"},
            "c": {"url": "http://c.example/mcp"}
        }}"#,
    )
    .unwrap();
    let kinds: Vec<_> = servers.iter().map(|s| s.transport().kind()).collect();
    assert_eq!(kinds, ["http", "http", "http"]);
    let Transport::Http(a) = servers[0].transport() else {
        panic!()
    };
    assert_eq!(a.url, "https://a.example/mcp");
    assert_eq!(
        a.headers.get("Authorization").map(String::as_str),
        Some("Bearer t")
    );
    assert!(!format!("{:?}", servers[0]).contains("Bearer t"));
}

// ---- Helpers of the host and loading tests. ----

/// Options with a fixed environment, so that tests neither read nor change the process's.
pub(super) fn opts() -> LoadOptions {
    LoadOptions::new().env_vars([
        ("HOME", "/home/u"),
        ("TOKEN", "tok-SECRET-1"),
        ("BIN", "/opt/bin"),
        ("PORT", "8080"),
    ])
}

pub(super) fn stdio(config: &ServerConfig) -> &crate::config::StdioConfig {
    match config.transport() {
        Transport::Stdio(s) => s,
        other => panic!("not stdio: {other:?}"),
    }
}

#[cfg(feature = "http")]
pub(super) fn http(config: &ServerConfig) -> &crate::config::HttpConfig {
    match config.transport() {
        Transport::Http(h) => h,
        other => panic!("not http: {other:?}"),
    }
}

pub(super) fn config_error(e: &Error) -> (Option<&str>, &str, &str) {
    match e {
        Error::Config {
            server,
            field,
            message,
        } => (server.as_deref(), field.as_str(), message.as_str()),
        other => panic!("not a config error: {other:?}"),
    }
}

pub(super) fn only(loaded: Loaded) -> ServerConfig {
    assert!(loaded.invalid.is_empty(), "{:?}", loaded.invalid);
    assert_eq!(loaded.servers.len(), 1, "{loaded:?}");
    loaded.servers.into_iter().next().unwrap()
}
