//! `mcpctl call --task` and `mcpctl tasks` against the demo server's `long_job`, answered with
//! a task in the 2026-07-28 era. Each command is its own mcpctl (and its own demo server
//! process): the task store carries a task from one to the next, and the demo server keeps its
//! tasks in `DEMO_TASKS_DIR` so that the next process knows them.

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

const DEMO: &str = env!("CARGO_BIN_EXE_mcp-demo-server");

/// An mcpServers file with `demo`, the demo server of the 2026-07-28 era whose tasks outlive
/// its process; its path.
fn config(dir: &Path) -> String {
    let servers = json!({
        "demo": {
            "command": DEMO,
            "env": {
                "DEMO_ERA": "modern",
                "DEMO_TASKS_DIR": dir.join("server-tasks").display().to_string(),
            },
        },
    });
    let path = dir.join("mcp.json");
    let text = json!({ "mcpServers": servers }).to_string();
    if let Err(e) = std::fs::write(&path, text) {
        panic!("cannot write {}: {e}", path.display());
    }
    path.display().to_string()
}

/// mcpctl with `dir/config` as its config directory: its task store is
/// `dir/config/mcpctl/tasks.sqlite3`, this test's own.
fn mcpctl(dir: &Path, args: &[&str]) -> Output {
    let mut command = crate::mcpctl_command();
    command.env("XDG_CONFIG_HOME", dir.join("config"));
    match command.args(args).output() {
        Ok(output) => output,
        Err(e) => panic!("cannot run mcpctl: {e}"),
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

/// The one JSON object mcpctl printed.
fn json_line(output: &Output) -> Value {
    let text = stdout(output);
    let mut lines = text.lines();
    match (
        lines.next().map(serde_json::from_str::<Value>),
        lines.next(),
    ) {
        (Some(Ok(value)), None) if value.is_object() => value,
        _ => panic!("not one JSON object: {text:?} (stderr: {})", stderr(output)),
    }
}

/// Starts `long_job` with `args` as a task (`call --task --json`); its id.
fn start(dir: &Path, config: &str, args: Value) -> String {
    let args = args.to_string();
    let out = mcpctl(
        dir,
        &[
            "--config", config, "--json", "call", "demo", "long_job", &args, "--task",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_line(&out);
    assert_eq!(
        (&line["seq"], &line["ok"]),
        (&json!(1), &json!(true)),
        "{line}"
    );
    assert_eq!(line["task"]["server"], "demo", "{line}");
    assert_eq!(line["task"]["tool"], "long_job", "{line}");
    assert_eq!(line["task"]["ttl_ms"], 600_000, "{line}");
    match line["task"]["task_id"].as_str() {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => panic!("no task id: {line}"),
    }
}

#[test]
fn a_task_started_by_one_mcpctl_is_delivered_once_to_the_next() {
    let dir = common::tempdir();
    let config = config(dir.path());
    let id = start(dir.path(), &config, json!({"ms": 400, "poll_ms": 20}));
    assert!(
        dir.path().join("config/mcpctl/tasks.sqlite3").is_file(),
        "the store is beside tokens.json"
    );

    let out = mcpctl(dir.path(), &["tasks", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_line(&out);
    assert_eq!(line["task_id"], id.as_str());
    assert_eq!(
        (&line["server"], &line["tool"]),
        (&json!("demo"), &json!("long_job"))
    );
    assert!(
        line["status"] == "working" || line["status"] == "completed",
        "{line}"
    );
    assert_eq!(line["outcome"], Value::Null, "not taken yet: {line}");

    // A second mcpctl (with a second server process) waits for it.
    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "wait", "demo", &id],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");

    // Delivered once: a third is told so, and the list says so.
    let wait = ["--config", &config, "tasks", "wait", "demo", &id, "--json"];
    let out = mcpctl(dir.path(), &wait);
    assert_eq!(code(&out), 1);
    let line = json_line(&out);
    assert_eq!(line["ok"], false);
    assert_eq!(line["error"]["kind"], "delivered", "{line}");
    let out = mcpctl(dir.path(), &["tasks", "list"]);
    let text = stdout(&out);
    assert!(text.starts_with("SERVER  TASK "), "{text}");
    let row = text.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(
        row.contains("long_job") && row.contains("completed") && row.ends_with("delivered"),
        "{text}"
    );
}

#[test]
fn call_task_prints_the_task_and_how_to_wait_for_it() {
    let dir = common::tempdir();
    let config = config(dir.path());
    let job = json!({"ms": 200, "poll_ms": 20}).to_string();
    let store = dir.path().join("my tasks.sqlite3").display().to_string();
    let out = mcpctl(
        dir.path(),
        &[
            "--config",
            &config,
            "--task-store",
            &store,
            "call",
            "demo",
            "long_job",
            &job,
            "--task",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let first = text.lines().next().unwrap_or_default();
    let id = first
        .strip_prefix("task ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no task line: {text}"));
    assert!(
        first.ends_with("started: long_job on demo, kept by the server for 10m"),
        "{text}"
    );
    let wait = format!("mcpctl --config {config} --task-store '{store}' tasks wait demo {id}");
    assert!(text.contains(&format!("wait for it: {wait}\n")), "{text}");
    assert!(
        Path::new(&store).is_file() && !dir.path().join("config/mcpctl").exists(),
        "--task-store chooses the store"
    );
    let out = mcpctl(
        dir.path(),
        &[
            "--config",
            &config,
            "--task-store",
            &store,
            "tasks",
            "wait",
            "demo",
            id,
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_line(&out);
    assert_eq!(line["result"]["content"][0]["text"], "done", "{line}");
    assert!(line.get("seq").is_none(), "as `read`: no seq");
}

#[test]
fn a_cancelled_task_waits_as_cancelled() {
    let dir = common::tempdir();
    let config = config(dir.path());
    let id = start(dir.path(), &config, json!({"ms": 20_000, "poll_ms": 20}));
    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "cancel", "demo", &id],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("cancellation asked"),
        "{}",
        stdout(&out)
    );
    let wait = ["--config", &config, "--json", "tasks", "wait", "demo", &id];
    let out = mcpctl(dir.path(), &wait);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let line = json_line(&out);
    assert_eq!(line["error"]["kind"], "cancelled", "{line}");
}

#[test]
fn show_asks_the_server_and_bad_names_are_clear_errors() {
    let dir = common::tempdir();
    let config = config(dir.path());
    let id = start(dir.path(), &config, json!({"ms": 20_000, "poll_ms": 50}));
    let show = ["--config", &config, "--json", "tasks", "show", "demo", &id];
    let out = mcpctl(dir.path(), &show);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_line(&out);
    assert_eq!(line["ok"], true, "{line}");
    let task = &line["result"];
    assert_eq!(
        (&task["task_id"], &task["tool"]),
        (&json!(id), &json!("long_job"))
    );
    assert_eq!(
        (&task["status"], &task["poll_interval_ms"]),
        (&json!("working"), &json!(50))
    );

    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "show", "demo", &id],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with(&format!("task     {id}\n")), "{text}");
    assert!(text.contains("\nstatus   working\n"), "{text}");
    assert!(text.contains("\nttl      10m ("), "{text}");

    // A task neither the store nor the server knows: said, and exit code 1.
    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "wait", "demo", "nosuch"],
    );
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("not in the task store: its tool is unknown"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).starts_with("error outcome_unknown: "),
        "{}",
        stdout(&out)
    );
    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "show", "demo", "nosuch"],
    );
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).starts_with("error "), "{}", stdout(&out));
    // A server the file does not have: a configuration error, 2.
    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "cancel", "other", &id],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no server named `other`"),
        "{}",
        stderr(&out)
    );

    let out = mcpctl(
        dir.path(),
        &["--config", &config, "tasks", "cancel", "demo", &id],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_call_whose_timeout_passes_names_its_task() {
    let dir = common::tempdir();
    let config = config(dir.path());
    // The timeout counts the server's start too: a second leaves it time to start the task.
    let job = json!({"ms": 2500, "poll_ms": 20}).to_string();
    let call = [
        "--config",
        &config,
        "--json",
        "call",
        "demo",
        "long_job",
        &job,
        "--timeout",
        "1s",
    ];
    let out = mcpctl(dir.path(), &call);
    assert_eq!(code(&out), 1);
    let line = json_line(&out);
    assert_eq!(line["error"]["kind"], "timeout", "{line}");
    let id = line["task"]["task_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!id.is_empty(), "the task it runs as: {line}");
    let hint = format!("tasks wait demo {id}");
    assert!(stderr(&out).contains(&hint), "{}", stderr(&out));

    let wait = [
        "--config",
        &config,
        "tasks",
        "wait",
        "demo",
        &id,
        "--timeout",
        "20s",
    ];
    let out = mcpctl(dir.path(), &wait);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
}
