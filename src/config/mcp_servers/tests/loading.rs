//! Loading as a whole: partial and strict loads, JSONC, envFile, the file itself, and the
//! global settings entries are checked under.

use std::io::Write;

use super::{config_error, only, opts, stdio};
use crate::config::{LoadOptions, ServerConfig};

/// One bad entry does not reject the file: every invalid entry is its own error, naming
/// server and field; strict mode keeps the old all-or-nothing.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn partial_load_reports_each_invalid_entry() {
    let json = r#"{"mcpServers": {
        "a-sse": {"type": "sse"},
        "b-unknown": {"type": "websocket", "url": "wss://x"},
        "c-nocmd": {"args": ["x"]},
        "d-types": {"command": "x", "args": "not-an-array"},
        "e-env": {"command": "x", "env": {"K": 1}},
        "f-own": {"command": "x", "mcp-supervisor": {"callTimeoutMs": "soon"}},
        "g-zero": {"command": "x", "mcp-supervisor": {"callTimeoutMs": 0}},
        "h-enabled": {"command": "x", "enabled": "no"},
        "i-notobj": "npx",
        "j-inherit": {"url": "http://h/mcp", "mcp-supervisor": {"inheritEnv": true}},
        "k-typetype": {"type": 1, "command": "x"},
        "ok-http": {"serverUrl": "http://127.0.0.1:9/mcp"},
        "ok-stdio": {"command": "node", "args": ["srv.js"], "mcp-supervisor": {"trusted": true, "callTimeoutMs": 5000}}
    }}"#;
    let loaded = opts().load_json(json).unwrap();
    let names: Vec<_> = loaded.servers.iter().map(ServerConfig::name).collect();
    assert_eq!(names, ["ok-http", "ok-stdio"]);
    let settings = loaded.servers[1].settings(&crate::Settings::default());
    assert!(settings.trusted);
    assert_eq!(settings.call_timeout, std::time::Duration::from_secs(5));
    let want = [
        ("a-sse", "url", "missing"),
        ("b-unknown", "type", "unknown transport `websocket`"),
        ("c-nocmd", "command", "missing"),
        ("d-types", "args", "expected an array"),
        ("e-env", "env.K", "expected a string"),
        ("f-own", "mcp-supervisor.callTimeoutMs", "milliseconds"),
        ("g-zero", "mcp-supervisor.callTimeoutMs", "above zero"),
        ("h-enabled", "enabled", "true or false"),
        ("i-notobj", "", "expected an object"),
        (
            "j-inherit",
            "mcp-supervisor.inheritEnv",
            "stdio servers only",
        ),
        ("k-typetype", "type", "expected a string"),
    ];
    assert_eq!(loaded.invalid.len(), want.len(), "{:?}", loaded.invalid);
    for (e, (server, field, message)) in loaded.invalid.iter().zip(want) {
        let (got_server, got_field, got_message) = config_error(e);
        assert_eq!(got_server, Some(server));
        let want_field = match field {
            "" => format!("mcpServers.{server}"),
            f => format!("mcpServers.{server}.{f}"),
        };
        assert_eq!(got_field, want_field);
        assert!(got_message.contains(message), "{server}: {got_message}");
    }
    // Strict: the first invalid entry is the error, as from_mcp_servers_json has always done.
    let e = opts().strict(true).load_json(json).unwrap_err();
    assert_eq!(config_error(&e).1, "mcpServers.a-sse.url");
    assert_eq!(ServerConfig::from_mcp_servers_json(json).unwrap_err(), e);
    // The document itself is still all or nothing.
    for doc in ["", "[]", "{}", r#"{"mcpServers": []}"#, "{,}"] {
        assert!(opts().load_json(doc).is_err(), "{doc}");
    }
}

/// Comments and trailing commas are accepted; strings are kept exactly (comment markers
/// inside them included); JSON5's looser syntax is still an error.
#[test]
fn jsonc_is_read_and_nothing_looser() {
    let c = only(
        opts()
            .load_json(
                r#"{
                  // line comment
                  "mcpServers": { /* block */ "a": { "command": "x",
                    "args": ["// not a comment", "/* nor this */", "é\u00e9\\n", "1e400x"], }, },
                }"#,
            )
            .unwrap(),
    );
    assert_eq!(
        stdio(&c).args,
        ["// not a comment", "/* nor this */", "éé\\n", "1e400x"]
    );
    let looser = [
        r#"{"mcpServers": {'a': {"command": "x"}}}"#,
        r#"{mcpServers: {"a": {"command": "x"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x" "args": []}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "n": 0x10}}}"#,
        r#"{"mcpServers": {"a": {"command": "x"}}} /* unterminated"#,
    ];
    for doc in looser {
        let e = opts().load_json(doc).unwrap_err();
        assert_eq!(config_error(&e).1, "(document)", "{doc}");
    }
}

/// `envFile`: relative to the config file's folder; explicit `env` wins; a relative path with
/// no file to be relative to is refused unless a base folder is given.
#[test]
fn env_file_is_relative_to_the_config_file_and_env_wins() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("srv.env"), "A=from-file\nB=from-file\n").unwrap();
    let json = r#"{"mcpServers": {"s": {"command": "x", "envFile": "srv.env", "env": {"B": "explicit"}}}}"#;
    let file = conf.join("mcp.json");
    std::fs::write(&file, json).unwrap();
    for loaded in [
        opts().load_file(&file).unwrap(),
        opts().base_dir(&conf).load_json(json).unwrap(),
    ] {
        let s = only(loaded);
        assert_eq!(stdio(&s).env["A"], "from-file");
        assert_eq!(stdio(&s).env["B"], "explicit");
    }
    assert_eq!(
        stdio(&ServerConfig::from_mcp_servers_file(&file).unwrap()[0]).env["A"],
        "from-file"
    );
    let e = ServerConfig::from_mcp_servers_json(json).unwrap_err();
    let (server, field, message) = config_error(&e);
    assert_eq!((server, field), (Some("s"), "mcpServers.s.envFile"));
    assert!(message.contains("base_dir"), "{message}");
    // A missing envFile is this entry's error, naming the file.
    let missing =
        r#"{"mcpServers": {"s": {"command": "x", "envFile": "nope.env"}, "t": {"command": "y"}}}"#;
    let loaded = opts().base_dir(&conf).load_json(missing).unwrap();
    assert_eq!(loaded.servers.len(), 1);
    assert!(config_error(&loaded.invalid[0]).2.contains("nope.env"));
    // `~` at the start of envFile, command and cwd.
    let loaded = LoadOptions::new()
        .env_vars([("HOME", conf.to_str().unwrap())])
        .load_json(
            r#"{"mcpServers": {"s": {"command": "~/bin/x", "cwd": "~", "envFile": "~/srv.env"}}}"#,
        )
        .unwrap();
    let s = only(loaded);
    assert_eq!(stdio(&s).command, format!("{}/bin/x", conf.display()));
    assert_eq!(stdio(&s).cwd.as_deref(), Some(conf.as_path()));
    assert_eq!(stdio(&s).env["A"], "from-file");
}

/// The file itself: unreadable, not UTF-8, or with a byte order mark.
#[test]
fn the_file_itself() {
    let dir = tempfile::tempdir().unwrap();
    let e = ServerConfig::load_mcp_servers(dir.path().join("none.json")).unwrap_err();
    assert_eq!(config_error(&e).1, "(file)");
    let bom = dir.path().join("bom.json");
    let mut f = std::fs::File::create(&bom).unwrap();
    f.write_all("\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}".as_bytes())
        .unwrap();
    assert_eq!(
        ServerConfig::load_mcp_servers(&bom).unwrap().servers.len(),
        1
    );
    let latin1 = dir.path().join("latin1.json");
    std::fs::write(
        &latin1,
        b"{\"mcpServers\": {\"\xe9\": {\"command\": \"x\"}}}",
    )
    .unwrap();
    let e = ServerConfig::load_mcp_servers(&latin1).unwrap_err();
    assert!(config_error(&e).2.contains("UTF-8"));
}

/// Our settings are checked under the global settings the application gives.
#[test]
fn entries_are_checked_under_the_given_global_settings() {
    let json = r#"{"mcpServers": {"s": {"command": "x", "mcp-supervisor": {"firstReconnectSpreadMs": 60000}}}}"#;
    let loaded = opts().load_json(json).unwrap();
    let (_, field, message) = config_error(&loaded.invalid[0]);
    assert_eq!(field, "mcpServers.s.mcp-supervisor.firstReconnectSpreadMs");
    assert!(message.contains("reconnect_backoff"), "{message}");
    let global = crate::Settings {
        reconnect_backoff: crate::Backoff::new(
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(120),
        ),
        ..crate::Settings::default()
    };
    assert_eq!(
        opts()
            .settings(global)
            .load_json(json)
            .unwrap()
            .servers
            .len(),
        1
    );
}

/// Hostile documents are errors, not stack overflows or unbounded reads.
#[test]
fn hostile_documents_are_bounded() {
    let deep = format!(
        r#"{{"mcpServers": {{"a": {{"command": "x", "n": {}}}}}}}"#,
        "[".repeat(100_000)
    );
    assert!(opts().load_json(&deep).is_err());
    let nested = format!(
        r#"{{"mcpServers": {{"a": {{"command": "x", "n": {}1{}}}}}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    assert_eq!(opts().load_json(&nested).unwrap().servers.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    let padding = " ".repeat(4 * 1024 * 1024);
    std::fs::write(&big, format!(r#"{{"mcpServers": {{}}}}{padding}"#)).unwrap();
    let e = ServerConfig::load_mcp_servers(&big).unwrap_err();
    assert!(config_error(&e).2.contains("larger than"), "{e}");
}

/// Found by the fuzz target `mcp_servers`: an error quoted the file raw, control characters and
/// all, so a server name or a `${…}` in someone else's `.vscode/mcp.json` could forge log lines.
#[test]
fn errors_quote_the_file_escaped_and_bounded() {
    let reference = format!("${{{}\u{1b}[2J}}", "A".repeat(5000));
    let document = serde_json::json!({"mcpServers": {
        "evil\n2026-12-01T00:00:00Z ERROR forged": {"command": reference},
    }})
    .to_string();
    let loaded = opts().load_json(&document).unwrap();
    let shown = loaded.invalid[0].to_string();
    assert!(
        !shown.contains('\n') && !shown.contains('\u{1b}'),
        "{shown}"
    );
    assert!(
        shown.contains("evil\\n2026-12-01T00:00:00Z ERROR forged"),
        "{shown}"
    );
    assert!(shown.len() < 2000, "{} bytes", shown.len());
}
