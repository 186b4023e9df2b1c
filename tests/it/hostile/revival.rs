//! Servers that are not there yet, or never will be: `Failed` is a state, not an end. A server
//! that comes up late is revived in the background without anyone sending `Reconnect`; what
//! retrying cannot fix (a missing program or directory, no protocol version in common) fails
//! at once, burns no start-up retries, and is not revived.
//!
//! The cases of servers that speak run in both eras; those of servers that never start (a
//! missing program or directory) say nothing on the wire, so they have no era.

use std::time::{Duration, Instant};

use mcp_supervisor::{CallTool, Error, ErrorKind, ServerConfig, ServerState, Shutdown};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// A free port on 127.0.0.1, with nothing listening on it.
fn reserve_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Defect 13: an HTTP server that binds its port only after the start-up retries are spent
/// (a container that takes ~4 s to start) comes back Ready by itself: Failed, with its revival
/// time announced, then revived, with no `Reconnect`.
async fn a_server_that_binds_late_is_revived_without_reconnect() {
    let port = reserve_port();
    let config = ServerConfig::http("late", format!("http://127.0.0.1:{port}/mcp"));
    let (sup, events) = start_supervisor(quick_settings(), [config]);

    let failed = events.state("late", "failed", 1).await;
    match state_of(&failed, "late") {
        Some(ServerState::Failed {
            error,
            revive_at: Some(_),
        }) => assert_eq!(error.kind(), ErrorKind::InvalidConnection, "{error}"),
        other => panic!("Failed with a revival time expected: {other:?}"),
    }
    // While Failed, calls are answered at once.
    let asked = Instant::now();
    let err = sup
        .send(CallTool::new("late", "echo", json!({"text": "x"})).timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(asked.elapsed() < Duration::from_secs(5), "not at once");

    // The server comes up now, ~4 s after the supervisor started.
    let server = http_server_on(port).await;
    events.ready("late", 1).await;
    let messages = events.messages("late");
    assert_eq!(
        messages[..3],
        [1, 2, 3].map(|n| format!("Reconnecting to MCP server (attempt {n}/3)…")),
        "the start-up retries as they always were: {messages:?}"
    );
    assert!(
        messages[3].starts_with("Failed after 4 attempts: ")
            && messages[3].contains("; reviving in "),
        "{messages:?}"
    );
    assert!(
        messages
            .last()
            .is_some_and(|m| m.starts_with("Revived in the background")),
        "{messages:?}"
    );
    let ok = sup
        .send(CallTool::new("late", "echo", json!({"text": "back"})))
        .await
        .unwrap()
        .expect("the revived server answers");
    assert_eq!(text_of(&ok), "back");
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

/// The one state message of a server that failed at once, and its last error.
async fn failed_at_once(config: ServerConfig) -> Error {
    let name = config.name().to_owned();
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    let failed = events.state(&name, "failed", 1).await;
    assert!(
        matches!(
            state_of(&failed, &name),
            Some(ServerState::Failed {
                revive_at: None,
                ..
            })
        ),
        "not to be revived: {failed:?}"
    );
    let messages = events.messages(&name);
    assert_eq!(messages.len(), 1, "no start-up retries: {messages:?}");
    assert!(
        messages[0].starts_with("Failed after 1 attempt: ")
            && messages[0].ends_with("retrying cannot help: waiting for Reconnect"),
        "{messages:?}"
    );
    let error = status(&sup, &name).await.last_error.expect("an error");
    assert!(!error.retry_can_help(), "{error}");
    sup.send(Shutdown).await.unwrap();
    error
}

/// Defect 13: a missing program fails at once with an error that names the server, the
/// command and the setting to fix; no start-up retry is spent on it.
#[actix::test]
async fn a_missing_program_fails_at_once_naming_the_command() {
    let error = failed_at_once(ServerConfig::stdio("ghost", "/nonexistent/mcp-server")).await;
    assert!(
        matches!(&error, Error::Spawn { server, command, field, cwd: None, .. }
            if server == "ghost" && command == "/nonexistent/mcp-server" && field == "command"),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::InvalidConnection);
    assert_eq!(
        error.to_string(),
        "server `ghost`: cannot start `/nonexistent/mcp-server`: No such file or directory (os error 2)"
    );
}

/// A program that may not be run (no execute permission) is the same kind of failure.
#[actix::test]
async fn a_program_without_execute_permission_fails_at_once() {
    let dir = tempdir();
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let error = failed_at_once(ServerConfig::stdio("noexec", script.display().to_string())).await;
    assert!(
        matches!(&error, Error::Spawn { field, .. } if field == "command"),
        "{error:?}"
    );
    assert!(error.to_string().contains("Permission denied"), "{error}");
}

/// A script whose `#!` interpreter is missing fails with the same ENOENT as a missing program:
/// the error says which it probably is.
#[actix::test]
async fn a_script_with_a_missing_interpreter_fails_at_once_and_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let error = failed_at_once(ServerConfig::stdio("shebang", script.display().to_string())).await;
    assert!(
        matches!(&error, Error::Spawn { field, .. } if field == "command"),
        "{error:?}"
    );
    assert!(error.to_string().contains("interpreter"), "{error}");
}

/// A missing working directory is named as such: the program is fine, `cwd` is not.
#[actix::test]
async fn a_missing_working_directory_is_named_as_the_cwd() {
    let config = ServerConfig::stdio("lost", env!("CARGO_BIN_EXE_mcp-demo-server"))
        .cwd("/nonexistent/working/dir");
    let error = failed_at_once(config).await;
    assert!(
        matches!(&error, Error::Spawn { field, cwd: Some(cwd), .. }
            if field == "cwd" && cwd == "/nonexistent/working/dir"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("in `/nonexistent/working/dir`"),
        "{error}"
    );
}

/// Defect 9: a server that answers with a protocol version we do not speak is not asked again
/// (it would answer the same): Failed at once, not revived.
async fn an_unsupported_protocol_version_is_not_retried() {
    let dir = tempdir();
    let versions = match era() {
        "modern" => "DEMO_MODERN_VERSIONS",
        _ => "DEMO_PROTOCOL_VERSION",
    };
    let config = demo("future", dir.path()).env(versions, "2099-01-01");
    let error = failed_at_once(config).await;
    assert_eq!(
        error.kind(),
        ErrorKind::UnsupportedProtocolVersion,
        "{error}"
    );
}

in_both_eras!(
    a_server_that_binds_late_is_revived_without_reconnect,
    an_unsupported_protocol_version_is_not_retried,
);
