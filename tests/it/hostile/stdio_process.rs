//! Server processes that outlive themselves: a server that exits while something it started
//! holds its stdout open, and descendants that leave its process group. The end of a server's
//! process is noticed, and stopping a server stops what it started.
//!
//! Each server gets a unique `HOSTILE_MARK` in its environment, which everything it starts
//! inherits: the test finds a server's whole tree by that mark in `/proc/<pid>/environ`, however
//! its members were re-parented or regrouped.

use std::time::{Duration, Instant};

use mcp_supervisor::{CallTool, ErrorKind, Shutdown};
use serde_json::json;

use super::{opening, opening_result};
use crate::common::*;
use crate::in_both_eras;

/// A mark no other test's processes carry.
fn unique_mark(test: &str) -> String {
    format!("{test}-{}-{:?}", std::process::id(), Instant::now())
}

/// Running processes whose environment carries `HOSTILE_MARK=mark`.
fn marked(mark: &str) -> Vec<u32> {
    processes_with_env("HOSTILE_MARK", mark)
}

/// Whether `pid` is a process named `sleep` (the hostile server's grandchildren are).
fn is_sleep(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
}

/// Waits (bounded) for a marked `sleep` other than `server`: the grandchild.
async fn grandchild(mark: &str) -> u32 {
    let mark = mark.to_owned();
    let found = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = found.clone();
    until("the grandchild to start", move || {
        let pid = marked(&mark).into_iter().find(|p| is_sleep(*p));
        *slot.lock().unwrap() = pid;
        pid.is_some()
    })
    .await;
    let pid = found.lock().unwrap().take();
    pid.expect("found above")
}

/// Kills what a failed test left behind, so that it does not outlive the run.
fn sweep(mark: &str) {
    for pid in marked(mark) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Defect 3: the server exits while a grandchild it started keeps its stdout open. Waiting for
/// stdout's EOF left the server `Ready` with a dead pid until a call timed out and a ping
/// failed. The exit of the direct child ends the connection after a short drain: the call in
/// flight is answered at once, the server reconnects, and the grandchild goes with its group.
async fn a_server_that_exits_while_a_grandchild_holds_its_stdout_is_noticed() {
    let mark = unique_mark("keep-stdout");
    let script = json!({"rules": [
        {"method": "tools/call", "nth": 1, "do": [
            {"grandchild": "keep_stdout"},
            {"stderr": "exiting now"},
            {"exit": 3}
        ]}
    ]});
    let config = hostile("gc", script).env("HOSTILE_MARK", &mark);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("gc", 1).await;
    let first_pid = status(&sup, "gc")
        .await
        .pid
        .expect("a stdio server has a pid");

    // The call's own timeout is long: only noticing the exit can answer it in time.
    let call = CallTool::new("gc", "echo", json!({})).timeout(Duration::from_secs(60));
    let answer = tokio::time::timeout(Duration::from_secs(10), sup.send(call)).await;
    let Ok(answer) = answer else {
        sweep(&mark);
        panic!("the call was not answered within 10 s: the server's exit went unnoticed");
    };
    let error = answer
        .unwrap()
        .expect_err("the server exited instead of answering");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");

    let lost = events.state("gc", "reconnecting", 1).await;
    let message = message_of(&lost);
    assert!(
        message.contains("kept its stdout open") && message.contains("exit code 3"),
        "{message}"
    );
    assert!(
        message.contains("exiting now"),
        "the stderr tail is attached: {message}"
    );
    events.ready("gc", 2).await;
    assert!(!is_running(first_pid), "the old server is gone");
    let marked_now = marked(&mark);
    let stale: Vec<u32> = marked_now
        .iter()
        .copied()
        .filter(|p| is_sleep(*p))
        .collect();
    for pid in &stale {
        assert!(
            gone_within(*pid, Duration::from_secs(5)).await,
            "grandchild {pid} outlived its server's connection"
        );
    }

    sup.send(Shutdown).await.unwrap();
    for pid in marked(&mark) {
        assert!(
            gone_within(pid, Duration::from_secs(5)).await,
            "{pid} outlived Shutdown"
        );
    }
}

/// The same with a grandchild that floods the stdout it inherited: the drain ends on time even
/// though stdout never runs dry (the reader looks at the drain's deadline after every line, not
/// only when it waits), and the flood goes with its group.
async fn a_server_that_exits_while_a_grandchild_floods_its_stdout_is_noticed() {
    let mark = unique_mark("flood-stdout");
    let script = json!({"rules": [
        {"method": "tools/call", "nth": 1, "do": [{"grandchild": "flood"}, {"exit": 3}]}
    ]});
    let config = hostile("flood", script).env("HOSTILE_MARK", &mark);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("flood", 1).await;

    let call = CallTool::new("flood", "echo", json!({})).timeout(Duration::from_secs(60));
    let answer = tokio::time::timeout(Duration::from_secs(10), sup.send(call)).await;
    let Ok(answer) = answer else {
        sweep(&mark);
        panic!("the call was not answered within 10 s: the drain never ended under the flood");
    };
    let error = answer
        .unwrap()
        .expect_err("the server exited instead of answering");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
    let lost = events.state("flood", "reconnecting", 1).await;
    assert!(
        message_of(&lost).contains("kept its stdout open"),
        "{}",
        message_of(&lost)
    );
    events.ready("flood", 2).await;
    sup.send(Shutdown).await.unwrap();
    for pid in marked(&mark) {
        assert!(
            gone_within(pid, Duration::from_secs(5)).await,
            "{pid} outlived Shutdown"
        );
    }
}

/// The drain after the server's exit delivers what it wrote before it died: an answer written
/// just before `exit`, with a grandchild holding stdout, still reaches its call.
async fn the_answer_written_before_the_exit_is_still_delivered() {
    let mark = unique_mark("last-words");
    let script = json!({"rules": [
        {"method": "tools/call", "nth": 1, "do": [
            {"grandchild": "keep_stdout"},
            {"default": true},
            {"exit": 0}
        ]}
    ]});
    let config = hostile("last", script).env("HOSTILE_MARK", &mark);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("last", 1).await;
    let call =
        CallTool::new("last", "echo", json!({"said": "bye"})).timeout(Duration::from_secs(10));
    let result = sup.send(call).await.unwrap();
    let outcome = result.map(|r| text_of(&r));
    events.state("last", "reconnecting", 1).await;
    sup.send(Shutdown).await.unwrap();
    sweep(&mark);
    assert_eq!(outcome.expect("the answer it wrote"), "{\"said\":\"bye\"}");
}

/// A `StateChanged` event's message.
fn message_of(event: &mcp_supervisor::ServerEvent) -> String {
    match event {
        mcp_supervisor::ServerEvent::StateChanged { message, .. } => message.clone(),
        other => panic!("not a state change: {other:?}"),
    }
}

/// Defect 3, second half: a grandchild that called `setsid()` is in no process group of ours,
/// so signalling the group missed it and it survived `Shutdown` as an orphan. The server's
/// tree is read before it is stopped, and what left the group is killed with it.
async fn shutdown_stops_a_grandchild_that_left_the_process_group() {
    let mark = unique_mark("setsid");
    let script = json!({"after_initialized": [{"grandchild": "setsid"}]});
    let config = hostile("setsid", script).env("HOSTILE_MARK", &mark);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("setsid", 1).await;
    let server = status(&sup, "setsid").await.pid.expect("a pid");
    let orphan = grandchild(&mark).await;
    assert_ne!(orphan, server);

    sup.send(Shutdown).await.unwrap();
    let gone = gone_within(orphan, Duration::from_secs(5)).await;
    sweep(&mark);
    assert!(gone, "the setsid grandchild {orphan} survived Shutdown");
    assert!(!is_running(server));
}

/// The same for a connection that is dropped rather than shut down: a handshake that fails
/// while the server runs (here: a protocol version we do not speak) drops the process, and
/// its setsid grandchild with it.
async fn a_failed_handshake_leaves_no_grandchild_that_left_the_group() {
    let mark = unique_mark("handshake");
    let script = json!({
        "on_start": [{"grandchild": "setsid"}, {"sleep_ms": 100}],
        "rules": [{"method": opening(), "do": [{"reply": opening_result("1999-01-01")}]}]
    });
    let config = hostile("old", script).env("HOSTILE_MARK", &mark);
    let mut settings = quick_settings();
    settings.max_connect_retries = 0;
    let (sup, events) = start_supervisor(settings, [config]);
    events.state("old", "failed", 1).await;

    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = marked(&mark);
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = marked(&mark);
    }
    sweep(&mark);
    assert!(
        left.is_empty(),
        "left running after a failed handshake: {left:?}"
    );
    sup.send(Shutdown).await.unwrap();
}

/// Defect 6's sibling: `Shutdown` right after a failed handshake used to answer while that
/// attempt's process (and its setsid grandchild) were still being killed in the background.
/// It answers once they are gone.
async fn shutdown_after_a_failed_handshake_waits_for_its_processes() {
    let mark = unique_mark("shutdown-after-failure");
    let script = json!({
        "on_start": [{"grandchild": "setsid"}, {"sleep_ms": 100}],
        "rules": [{"method": opening(), "do": [{"reply": opening_result("1999-01-01")}]}]
    });
    let config = hostile("gone", script).env("HOSTILE_MARK", &mark);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.state("gone", "failed", 1).await;
    sup.send(Shutdown).await.unwrap();
    let left = marked(&mark);
    sweep(&mark);
    assert!(
        left.is_empty(),
        "Shutdown answered while these ran: {left:?}"
    );
}

in_both_eras!(
    a_server_that_exits_while_a_grandchild_holds_its_stdout_is_noticed,
    a_server_that_exits_while_a_grandchild_floods_its_stdout_is_noticed,
    the_answer_written_before_the_exit_is_still_delivered,
    shutdown_stops_a_grandchild_that_left_the_process_group,
    a_failed_handshake_leaves_no_grandchild_that_left_the_group,
    shutdown_after_a_failed_handshake_waits_for_its_processes,
);
