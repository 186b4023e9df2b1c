//! The `mcpctl` binary (the `cli` feature) run as a user runs it, against the demo server: from
//! an mcpServers file and given on the command line (`--stdio`, `--http` against the in-tree
//! HTTP test server), every command's `--json` lines (`watch` too), what `status` shows of a
//! failed server, the spinners on a terminal, and the exit codes.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

const MCPCTL: &str = env!("CARGO_BIN_EXE_mcpctl");
const DEMO: &str = env!("CARGO_BIN_EXE_mcp-demo-server");
const HOSTILE: &str = env!("CARGO_BIN_EXE_mcp-hostile-server");

/// A stderr line longer than any table column, with the reason at its very end.
const LONG_REASON: &str = "starting the GitHub MCP server 1.2.3 with the toolsets repos, \
     issues, pull_requests, actions and code_security: GITHUB_TOKEN not set";

fn mcpctl(args: &[&str]) -> Output {
    match crate::mcpctl_command().args(args).output() {
        Ok(output) => output,
        Err(e) => panic!("cannot run mcpctl: {e}"),
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every stdout line, each of which must be one JSON object.
fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => value,
            _ => panic!("not a JSON object per line: {line:?}"),
        })
        .collect()
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

/// An mcpServers file: the demo server, a server that fails at start-up saying why on stderr,
/// an entry that cannot be loaded and a disabled one.
fn config(dir: &Path, with_broken: bool) -> String {
    let mut servers = json!({
        "demo": { "command": DEMO },
        "off": { "command": DEMO, "disabled": true },
    });
    if with_broken {
        servers["gh"] = json!({
            "command": "sh",
            "args": ["-c", format!("echo '{LONG_REASON}' >&2; exit 1")],
            "mcp-supervisor": { "maxConnectRetries": 0 },
        });
        servers["old-ws"] = json!({ "type": "websocket", "url": "ws://127.0.0.1:1/ws" });
    }
    let path = dir.join("mcp.json");
    let text = json!({ "mcpServers": servers }).to_string();
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    path.display().to_string()
}

#[test]
fn version_help_and_completions() {
    let out = mcpctl(&["--version"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        stdout(&out).trim(),
        format!("mcpctl {}", env!("CARGO_PKG_VERSION"))
    );

    let out = mcpctl(&["call", "--help"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("--repeat"), "{}", stdout(&out));

    let out = mcpctl(&["completions", "bash"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("mcpctl"));
    assert!(stdout(&out).contains("resources"));
}

#[test]
fn status_json_shows_every_server_and_why_one_failed() {
    let dir = common::tempdir();
    let config = config(dir.path(), true);
    let out = mcpctl(&["--config", &config, "status", "--json"]);
    assert_eq!(code(&out), 1, "not every server is ready");
    let lines = json_lines(&out);
    let line = |name: &str| match lines.iter().find(|l| l["name"] == name) {
        Some(line) => line.clone(),
        None => panic!("no status line for {name}: {lines:?}"),
    };

    let demo = line("demo");
    assert_eq!(demo["state"], "ready");
    assert_eq!(demo["transport"], "stdio");
    assert!(demo["era"] == "legacy" || demo["era"] == "modern", "{demo}");
    assert!(demo["protocol_version"].is_string(), "{demo}");
    assert_eq!(demo["server_info"]["name"], "mcp-demo-server");
    assert_eq!(demo["tools"], 10);
    assert_eq!(demo["last_error"], Value::Null);

    let gh = line("gh");
    assert_eq!(gh["state"], "failed");
    assert_eq!(gh["last_error"]["kind"], "invalid_connection");
    assert_eq!(gh["last_error"]["stderr_tail"], json!([LONG_REASON]));

    let sse = line("old-ws");
    assert_eq!(sse["state"], "invalid");
    assert_eq!(sse["last_error"]["kind"], "config");
    assert!(
        sse["last_error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("websocket")),
        "{sse}"
    );
    assert_eq!(line("off")["state"], "disabled");
}

#[test]
fn status_table_shows_the_whole_stderr_line() {
    let dir = common::tempdir();
    let config = config(dir.path(), true);
    let out = mcpctl(&["--config", &config, "status"]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(text.starts_with("NAME "), "{text}");
    assert!(text.contains(&format!("  | {LONG_REASON}\n")), "{text}");
    assert!(text.contains("old-ws: invalid configuration"), "{text}");
}

#[test]
fn status_is_0_when_every_server_is_ready_and_quiet_off_a_terminal() {
    let dir = common::tempdir();
    let config = config(dir.path(), false);
    let out = mcpctl(&["status", "--config", &config]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("demo "));
    // No spinner (nor any escape sequence) when stderr is not a terminal.
    assert!(!out.stderr.contains(&0x1b), "{:?}", out.stderr);

    // `status SERVER`: only that one, so the others' failures do not count.
    let config = self::config(dir.path(), true);
    let out = mcpctl(&["status", "demo", "--json", "--config", &config]);
    assert_eq!(code(&out), 0);
    let lines = json_lines(&out);
    assert_eq!((lines.len(), &lines[0]["name"]), (1, &json!("demo")));
}

/// On a terminal (a pseudo-terminal from `script`, util-linux's, in Debian's essential
/// `bsdutils`), `status` turns a spinner per server while they connect, then clears it.
#[test]
fn status_shows_a_spinner_per_server_on_a_terminal() {
    let command =
        format!("'{MCPCTL}' status --env DEMO_SLOW_START_MS=500 --stdio --name slow -- '{DEMO}'");
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .env("TERM", "xterm")
        .env("XDG_CONFIG_HOME", crate::config_home())
        .output()
        .unwrap_or_else(|e| panic!("cannot run script: {e}"));
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let text = stdout(&out);
    // indicatif's spinner frames are braille characters; `ESC [2K` clears a line.
    let spinner = text
        .lines()
        .any(|l| l.contains("slow") && l.contains("connecting") && l.contains('\u{2801}'));
    assert!(spinner, "no spinner line in {text:?}");
    assert!(text.contains("\x1b[2K"), "{text:?}");
    let table = text
        .rfind("NAME ")
        .map(|at| &text[at..])
        .unwrap_or_default();
    assert!(table.contains("slow  "), "{text:?}");
}

#[test]
fn tools_json_is_one_line_per_tool() {
    let dir = common::tempdir();
    let config = config(dir.path(), false);
    let out = mcpctl(&["--config", &config, "--json", "tools", "demo"]);
    assert_eq!(code(&out), 0);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 10, "{lines:?}");
    assert!(lines.iter().all(|l| l["server"] == "demo"));
    assert!(lines.iter().any(|l| l["tool"]["name"] == "echo"));
}

#[test]
fn call_answers_and_a_failed_call_exits_1() {
    let dir = common::tempdir();
    let config = config(dir.path(), false);
    let out = mcpctl(&[
        "--config",
        &config,
        "call",
        "demo",
        "echo",
        r#"{"text":"hi"}"#,
        "--json",
    ]);
    assert_eq!(code(&out), 0);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[0]["result"]["content"][0]["text"], "hi");

    let out = mcpctl(&[
        "--config",
        &config,
        "call",
        "demo",
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "hi\n"));

    let out = mcpctl(&[
        "--config",
        &config,
        "call",
        "demo",
        "no-such-tool",
        "--json",
    ]);
    assert_eq!(code(&out), 1);
    let lines = json_lines(&out);
    assert_eq!(lines[0]["ok"], false, "{lines:?}");
}

/// Issue 20, item 6: `call` takes KEY=VALUE words, typed by the tool's input schema.
#[test]
fn call_takes_key_value_words_typed_by_the_schema() {
    let dir = common::tempdir();
    let config = config(dir.path(), false);
    let call = |words: &[&str]| {
        let mut args = vec!["--config", config.as_str(), "call", "demo"];
        args.extend_from_slice(words);
        mcpctl(&args)
    };
    // `add` takes numbers: typed, they add up (as strings, the demo server refuses them).
    let out = call(&["add", "a=2", "b=3", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_lines(&out)[0]["result"]["structuredContent"]["sum"], 5);
    // `echo`'s text is a string: it stays one, even when it looks like a number.
    let out = call(&["echo", "text=007"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "007\n"));
    // A value that is not what the schema says: an error naming the key, before any call.
    let out = call(&["counter", "delay_ms=soon"]);
    assert_eq!(code(&out), 2);
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`delay_ms` must be an integer"), "{stderr}");
    // The JSON object still works, and a word that is neither is a usage error.
    let out = call(&["echo", r#"{"text":"json"}"#]);
    assert_eq!(stdout(&out), "json\n");
    let out = call(&["echo", "text=a", "oops"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn resources_read_prompts_and_prompt() {
    let dir = common::tempdir();
    let config = config(dir.path(), false);
    let run = |args: &[&str]| {
        let mut all = vec!["--config", config.as_str(), "--json"];
        all.extend_from_slice(args);
        let out = mcpctl(&all);
        assert_eq!(code(&out), 0, "{args:?}: {}", stdout(&out));
        json_lines(&out)
    };

    let resources = run(&["resources"]);
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0]["server"], "demo");
    assert_eq!(resources[0]["resource"]["uri"], "demo://clock");

    let read = run(&["read", "demo", "demo://clock"]);
    assert_eq!(read[0]["ok"], true);
    assert_eq!(read[0]["result"]["contents"][0]["text"], "version 0");

    // Issue 20, item 7: the resource templates, and a resource read from one.
    let templates = run(&["templates"]);
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(templates[0]["server"], "demo");
    assert_eq!(
        templates[0]["template"]["uriTemplate"],
        "demo://greeting/{name}"
    );
    let read = run(&["read", "demo", "demo://greeting/Ada"]);
    assert_eq!(read[0]["result"]["contents"][0]["text"], "Hello, Ada!");
    let out = mcpctl(&["--config", &config, "templates", "demo"]);
    assert_eq!(
        stdout(&out),
        "demo (1 templates)\n  demo://greeting/{name}  greeting  text/plain  A greeting for {name}.\n"
    );

    let prompts = run(&["prompts", "demo"]);
    assert_eq!(prompts[0]["prompt"]["name"], "greet");
    assert_eq!(prompts[0]["prompt"]["arguments"][0]["required"], true);

    let prompt = run(&["prompt", "demo", "greet", "name=Ada"]);
    assert_eq!(
        prompt[0]["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!"
    );

    // For people: the prompt's message with its role; a missing argument fails with 1.
    let out = mcpctl(&["--config", &config, "prompt", "demo", "greet", "name=Ada"]);
    assert_eq!(stdout(&out), "[user] Hello, Ada!\n");
    let out = mcpctl(&["--config", &config, "prompt", "demo", "greet"]);
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).starts_with("error rpc:"), "{}", stdout(&out));
}

#[test]
fn a_server_given_with_stdio_needs_no_file_and_no_name() {
    let dir = common::tempdir();
    let out = crate::mcpctl_command()
        .current_dir(dir.path()) // no mcp.json here
        .args([
            "call",
            "echo",
            r#"{"text":"from --stdio"}"#,
            "--json",
            "--stdio",
            "--",
            DEMO,
        ])
        .output();
    let out = out.unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        json_lines(&out)[0]["result"]["content"][0]["text"],
        "from --stdio"
    );

    let out = mcpctl(&["--stdio", "--name", "d", "status", "--json", "--", DEMO]);
    assert_eq!(code(&out), 0);
    assert_eq!(json_lines(&out)[0]["name"], "d");
}

/// Issue 20, item 4: `--input ID=VALUE` gives VS Code's `${input:ID}` its value; without it,
/// the error tells an mcpctl user how to give one.
#[test]
fn inputs_come_from_the_command_line() {
    let dir = common::tempdir();
    let path = dir.path().join("mcp.json");
    let text = r#"{"inputs": [{"type": "promptString", "id": "server"}],
                   "servers": {"demo": {"command": "${input:server}"}}}"#;
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    let config = path.display().to_string();
    let input = format!("server={DEMO}");
    let out = mcpctl(&["--config", &config, "--input", &input, "status", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_lines(&out)[0]["state"], "ready");

    let out = mcpctl(&["--config", &config, "status"]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("give its value with `--input server=…`"),
        "{stderr}"
    );
    assert!(!stderr.contains("LoadOptions"), "{stderr}");

    let out = mcpctl(&["--input", "a=b", "status", "--stdio", "--", DEMO]);
    assert_eq!(code(&out), 2);

    // An input given twice is refused, naming it (the last one won, silently).
    let out = mcpctl(&[
        "--config",
        &config,
        "--input",
        "server=/no/such/server",
        "--input",
        &input,
        "status",
    ]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--input `server` is given twice"),
        "{stderr}"
    );
}

/// Issue 20, item 1: with Claude Code's `~/.claude.json`, mcpctl reads the servers kept for
/// the project it runs in (its working directory, as for Claude Code), which win over the
/// top-level ones of the same name.
#[test]
fn the_working_directorys_project_servers_of_claude_json_are_read() {
    let dir = common::tempdir();
    let project = dir.path().join("app");
    if let Err(e) = std::fs::create_dir(&project) {
        panic!("cannot create {}: {e}", project.display());
    }
    // getcwd() answers the path without symlinks: so does Claude Code's key.
    let key = std::fs::canonicalize(&project).unwrap_or_else(|e| panic!("{e}"));
    let claude_json = dir.path().join(".claude.json");
    let text = json!({
        "mcpServers": {
            "demo": { "command": "/nonexistent/mcp-server" },
            "user": { "command": DEMO, "disabled": true },
        },
        "projects": {
            key.display().to_string(): { "mcpServers": { "demo": { "command": DEMO } } },
            "/elsewhere": { "mcpServers": { "other": { "command": DEMO } } },
        },
    });
    if let Err(e) = std::fs::write(&claude_json, text.to_string()) {
        panic!("cannot write {}: {e}", claude_json.display());
    }
    let config = claude_json.display().to_string();
    let status = |cwd: &Path| {
        let out = crate::mcpctl_command()
            .current_dir(cwd)
            .args(["--config", &config, "status", "--json", "--wait", "10s"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
        let mut names: Vec<(String, String)> = json_lines(&out)
            .iter()
            .map(|l| (l["name"].to_string(), l["state"].to_string()))
            .collect();
        names.sort();
        (code(&out), names)
    };
    let pair = |name: &str, state: &str| (format!("{name:?}"), format!("{state:?}"));
    let (code, lines) = status(&project);
    assert_eq!(lines, [pair("demo", "ready"), pair("user", "disabled")]);
    assert_eq!(code, 0);
    // Elsewhere, the top-level `demo` is the one: it cannot start.
    let (code, lines) = status(dir.path());
    assert_eq!(lines, [pair("demo", "failed"), pair("user", "disabled")]);
    assert_eq!(code, 1);
}

/// Issue 22 item 11: a tool list cut short (here its cursors go round in a circle) is said in
/// `status` (the count as `3+`, the reason below the table; `tools_truncated` in JSON) and in
/// `tools` (its header; a last JSON line).
#[test]
fn a_tool_list_cut_short_is_said_by_status_and_tools() {
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    let script = json!({"rules": [{"method": "tools/list", "do": [{"reply_cycle": [
        {"tools": [tool("a")], "nextCursor": "1"},
        {"tools": [tool("b")], "nextCursor": "2"},
        {"tools": [tool("c")], "nextCursor": "1"}
    ]}]}]});
    let env = format!("HOSTILE_SCRIPT={script}");
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--name", "cut", "--env", &env, "--stdio", "--", HOSTILE]);
        mcpctl(&all)
    };
    let why = "its cursors go round in a circle after 3 pages; kept the first 3";

    let out = run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let line = &json_lines(&out)[0];
    assert_eq!(line["tools"], 3);
    assert_eq!(line["tools_truncated"], why);

    let out = run(&["status"]);
    let text = stdout(&out);
    let row = text.lines().nth(1).unwrap_or_default();
    assert!(row.ends_with(" 3+"), "{text}");
    assert!(
        text.contains(&format!("cut: the tool list was cut short: {why}\n")),
        "{text}"
    );

    let out = run(&["tools"]);
    assert!(
        stdout(&out).starts_with(&format!(
            "cut (stdio, ready, 3 tools; the tool list was cut short: {why})\n"
        )),
        "{}",
        stdout(&out)
    );
    let out = run(&["tools", "--json"]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[3], json!({"server": "cut", "tools_truncated": why}));
}

/// A tool is printed as the server listed it: `tools --json` keeps the members rmcp's `Tool`
/// does not know (`execution`, and one no revision has yet) and those it does (`_meta`, an
/// icon's unknown member) alike, and `tools` shows whether it may run as a task.
#[test]
fn tools_json_prints_every_member_the_server_listed() {
    let listed = json!({
        "name": "report",
        "description": "Builds the report.",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"},
        "_meta": {"io.example/owner": "ops"},
        "icons": [{"src": "https://example.com/r.png", "x-theme": "dark"}],
        "x-future": {"level": 3, "tags": ["a"]}
    });
    let script = json!({"rules": [
        {"method": "tools/list", "do": [{"reply": {"tools": [listed]}}]}
    ]});
    let env = format!("HOSTILE_SCRIPT={script}");
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--name", "future", "--env", &env, "--stdio", "--", HOSTILE]);
        mcpctl(&all)
    };

    let out = run(&["tools", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        json_lines(&out),
        [json!({"server": "future", "tool": listed})]
    );

    let out = run(&["tools"]);
    let text = stdout(&out);
    assert!(
        text.contains("  report  task optional  Builds the report.\n"),
        "{text}"
    );
}

#[test]
fn usage_and_configuration_errors_exit_2() {
    let dir = common::tempdir();
    let config = config(dir.path(), true);
    let cases: &[&[&str]] = &[
        &["--config", &config, "call", "echo"], // SERVER missing
        &["--config", &config, "call", "nope", "echo"], // no such server
        &["--config", &config, "call", "old-ws", "echo"], // its entry is invalid
        &["--config", "/nonexistent/mcp.json", "status"],
        &["tools", "--header", "A: b", "--stdio", "--", DEMO],
        &["status", "--stdio"],  // no command after --
        &["status", "--", DEMO], // a command without --stdio
        &["call", "demo", "echo", "[1]", "--config", &config], // not an object
    ];
    for args in cases {
        let out = mcpctl(args);
        assert_eq!(
            code(&out),
            2,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[actix::test]
async fn a_server_given_with_http_gets_its_headers() {
    let server = common::http_server().await;
    let url = server.url();
    let out = tokio::process::Command::from(crate::mcpctl_command())
        .args(["--http", &url, "--header", "X-Api-Key: k1", "--json"])
        .args(["call", "echo", r#"{"text":"over http"}"#])
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        json_lines(&out)[0]["result"]["content"][0]["text"],
        "over http"
    );
    let call = server.stats().last_post("tools/call");
    let call = call.unwrap_or_else(|| panic!("the server saw no tools/call"));
    assert_eq!(call.header("x-api-key"), Some("k1"));

    // Issue 20, item 3: a URL's scheme is case-insensitive (it was refused as not http://).
    let upper = url.replacen("http://", "HTTP://", 1);
    let out = tokio::process::Command::from(crate::mcpctl_command())
        .args([
            "--http",
            &upper,
            "--json",
            "call",
            "echo",
            r#"{"text":"upper"}"#,
        ])
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_lines(&out)[0]["result"]["content"][0]["text"], "upper");

    // Issue 20, item 7: a server that offers resources but has no `resources/templates/list`
    // (method not found) lists no templates; that is no failure.
    let out = tokio::process::Command::from(crate::mcpctl_command())
        .args(["--http", &url, "--name", "h", "templates"])
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout(&out), "h (0 templates)\n");
    server.stop().await;
}

/// Issue 20, item 3: a URL or a header name that cannot be sent is refused before anything
/// connects, naming the field (they failed only at connect time).
#[test]
fn a_bad_url_or_header_name_is_refused_at_load() {
    let out = mcpctl(&["--http", "https://mcp example.com/mcp", "status"]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("field `url`") && stderr.contains("whitespace"),
        "{stderr}"
    );
    let out = mcpctl(&[
        "--http",
        "https://h.example/mcp",
        "--header",
        "X(Bad): v",
        "status",
    ]);
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("field `headers.X(Bad)`") && stderr.contains("not a valid header name"),
        "{stderr}"
    );
}

/// Issue 20, item 5: a reader that goes away before the first line (`mcpctl tools | head`)
/// ends mcpctl quietly, with 0: no panic (it was exit code 101 and "failed printing to
/// stdout"), and a command that would go on (`watch`, repeated calls) stops.
#[test]
fn a_reader_that_goes_away_early_ends_mcpctl_quietly() {
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let cases: &[&[&str]] = &[
        &["tools", "--stdio", "--", DEMO],
        &["watch", "--json", "--stdio", "--", DEMO],
        &[
            "call",
            "echo",
            r#"{"text":"x"}"#,
            "--repeat",
            "1000",
            "--interval",
            "1s",
        ],
        &["completions", "bash"],
    ];
    for args in cases {
        let mut all = args.to_vec();
        if args[0] == "call" {
            all.extend(["--stdio", "--", DEMO]);
        }
        let mut child = crate::mcpctl_command()
            .args(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
        drop(child.stdout.take()); // the reader is gone before the first line
        let pid = child.id();
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match done.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => panic!("{args:?}: {e}"),
            Err(_) => {
                common::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("{args:?}: mcpctl did not end after its reader went away");
            }
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// A command that had finished when its reader went away keeps its own code: `status` with a
/// failed server is 1 (it was 0 or 1, by how much the pipe buffered).
#[test]
fn a_finished_command_keeps_its_code_when_its_reader_went_away() {
    use std::process::Stdio;

    let dir = common::tempdir();
    let config = config(dir.path(), true);
    let mut child = crate::mcpctl_command()
        .args(["--config", &config, "status", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    drop(child.stdout.take()); // the reader is gone before the first line
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("mcpctl: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

/// With `KEY=VALUE` arguments, waiting for the tool's schema (the server's start-up) counts
/// against `--timeout`: the call gets what is left, not a whole `--timeout` again.
#[test]
fn waiting_for_the_schema_counts_against_the_call_timeout() {
    let dir = common::tempdir();
    let path = dir.path().join("mcp.json");
    let text = json!({"mcpServers": {"slow": {
        "command": DEMO,
        "env": {"DEMO_SLOW_START_MS": "2000"},
    }}});
    if let Err(e) = std::fs::write(&path, text.to_string()) {
        panic!("cannot write {}: {e}", path.display());
    }
    let config = path.display().to_string();
    // 2s to start, then a 1.5s call: more than the 3s given (it took 3.5s, and succeeded).
    let out = mcpctl(&[
        "--config",
        &config,
        "call",
        "slow",
        "counter",
        "delay_ms=1500",
        "--timeout",
        "3s",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    let lines = json_lines(&out);
    assert_eq!(lines[0]["ok"], false, "{lines:?}");
    assert_eq!(lines[0]["error"]["kind"], "timeout", "{lines:?}");
}

/// `watch --json`: one object per event, until Ctrl-C, which shuts the server down (its
/// `stopped` is printed) and exits with 0.
#[test]
fn watch_json_prints_events_until_interrupted() {
    use std::time::Duration;

    let (mut child, lines) = spawn_reading_lines(
        crate::mcpctl_command().args(["watch", "--json", "--stdio", "--name", "w", "--", DEMO]),
    );
    let next_state = |want: &str| loop {
        let line = match lines.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line,
            Err(e) => panic!("no `{want}` event: {e}"),
        };
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(event["server"], "w", "{event}");
        assert!(
            event["unix_ms"].as_u64().is_some_and(|ms| ms > 0),
            "{event}"
        );
        if event["event"] == "state_changed" && event["state"] == want {
            break;
        }
    };
    next_state("ready");
    common::kill(child.0.id(), nix::sys::signal::Signal::SIGINT);
    next_state("stopped");
    let status = child.0.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(0));
}

/// `watch --reload`: a change of the file is applied (a server added), a broken edit is not
/// (and says why), and Ctrl-C still ends it with 0.
#[test]
fn watch_reload_applies_a_changed_file_and_refuses_a_broken_one() {
    use std::time::Duration;

    let dir = common::tempdir();
    let file = dir.path().join("mcp.json");
    let servers = |names: &[&str]| {
        let entries: Vec<String> = names
            .iter()
            .map(|n| format!(r#""{n}": {{"command": "{DEMO}"}}"#))
            .collect();
        format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(", "))
    };
    std::fs::write(&file, servers(&["one"])).unwrap();
    let (mut child, lines) = spawn_reading_lines(
        crate::mcpctl_command()
            .arg("--config")
            .arg(&file)
            .args(["watch", "--reload", "--json"]),
    );
    let next = |what: &str, matches: &dyn Fn(&Value) -> bool| loop {
        let line = match lines.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line,
            Err(e) => panic!("no {what}: {e}"),
        };
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        if matches(&event) {
            break event;
        }
    };
    let ready = |server: &'static str| {
        move |e: &Value| {
            e["event"] == "state_changed" && e["state"] == "ready" && e["server"] == server
        }
    };
    next("one ready", &ready("one"));
    std::fs::write(&file, servers(&["one", "two"])).unwrap();
    let reloaded = next("the reload", &|e| e["event"] == "reloaded");
    assert_eq!(reloaded["servers"]["two"], "added", "{reloaded}");
    assert_eq!(reloaded["servers"]["one"], "unchanged", "{reloaded}");
    next("two ready", &ready("two"));
    std::fs::write(&file, r#"{"mcpServers": "#).unwrap();
    let refused = next("the refusal", &|e| e["event"] == "reload_refused");
    assert_eq!(refused["error"]["kind"], "config", "{refused}");
    common::kill(child.0.id(), nix::sys::signal::Signal::SIGINT);
    let status = child.0.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(0));
}

/// Kills mcpctl if the test fails before it has exited.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // After a successful wait, std knows the child is gone and sends nothing.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a long-running mcpctl (`watch`) and hands its stdout over line by line, as it comes.
fn spawn_reading_lines(command: &mut Command) -> (Reaped, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run mcpctl: {e}"));
    let mut child = Reaped(child);
    let Some(out) = child.0.stdout.take() else {
        panic!("no stdout")
    };
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}
