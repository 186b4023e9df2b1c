//! The core runtime against the real demo server over stdio, under the faults it exists for:
//! crashes, hangs, failing start-ups, garbage on stdout, and shutdown.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::in_both_eras;
use actix::{Addr, System};
use mcp_supervisor::*;
use nix::sys::signal::Signal;
use serde_json::json;

fn echo(server: &str, text: &str) -> CallTool {
    CallTool::new(server, "echo", json!({ "text": text })).timeout(Duration::from_secs(10))
}

async fn pid(sup: &Addr<Supervisor>, server: &str) -> u32 {
    status(sup, server)
        .await
        .pid
        .expect("a running server has a pid")
}

/// (a) kill -9 while idle: the next calls succeed after an automatic reconnect.
async fn kill_while_idle_then_calls_succeed() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let first = sup.send(echo("demo", "before")).await.unwrap().unwrap();
    assert_eq!(text_of(&first), "before");

    let old = pid(&sup, "demo").await;
    kill(old, Signal::SIGKILL);
    events.state("demo", "reconnecting", 1).await;
    // A call made during the outage waits for the new connection.
    let after = sup.send(echo("demo", "after")).await.unwrap().unwrap();
    assert_eq!(text_of(&after), "after");

    let st = status(&sup, "demo").await;
    assert!(st.state.is_ready());
    assert_eq!(st.counters.reconnects, 1);
    assert_ne!(st.pid, Some(old));
    let lost = st.last_error.expect("the crash is kept as last error");
    assert!(lost.to_string().contains("SIGKILL"), "{lost}");
    sup.send(Shutdown).await.unwrap();
}

/// (b) kill -9 during `slow`: the caller gets a typed error long before its deadline.
async fn kill_during_slow_call_answers_before_the_deadline() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let (progress, mut progress_rx) = progress_channel();

    let started = Instant::now();
    let call = CallTool::new("demo", "slow", json!({"seconds": 20, "steps": 20}))
        .timeout(Duration::from_secs(15))
        .on_progress(progress);
    let pending = sup.send(call);
    // The first progress notification proves the server is running the call.
    next_progress(&mut progress_rx).await;
    kill(pid(&sup, "demo").await, Signal::SIGKILL);

    let err = pending.await.unwrap().unwrap_err();
    // `slow` is read-only, but the server is not trusted: its hint is not believed.
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(started.elapsed() < Duration::from_secs(15));
    events.ready("demo", 2).await;
    sup.send(Shutdown).await.unwrap();
}

/// (b') The same with a trusted server and a read-only tool: re-sent once, and it succeeds.
async fn kill_during_read_only_call_on_trusted_server_is_retried() {
    let dir = tempdir();
    let config = demo("demo", dir.path()).trusted(true);
    let (sup, events) = start_supervisor(quick_settings(), vec![config]);
    events.ready("demo", 1).await;
    let (progress, mut progress_rx) = progress_channel();

    let call = CallTool::new("demo", "slow", json!({"seconds": 1, "steps": 4}))
        .timeout(Duration::from_secs(20))
        .on_progress(progress);
    let pending = sup.send(call);
    next_progress(&mut progress_rx).await;
    kill(pid(&sup, "demo").await, Signal::SIGKILL);

    let result = pending.await.unwrap().expect("re-sent after reconnect");
    assert_eq!(text_of(&result), "done after 1s");
    let st = status(&sup, "demo").await;
    assert_eq!(st.counters.calls_resent, 1);
    let calls = event_log(dir.path(), "demo")
        .iter()
        .filter(|l| *l == "call slow")
        .count();
    assert_eq!(calls, 2, "run once per process: the first run died with it");
    sup.send(Shutdown).await.unwrap();
}

/// (c) A non-idempotent `counter` in flight across a crash: never run twice, and its caller
/// hears `OutcomeUnknown`.
async fn non_idempotent_call_across_a_crash_is_not_run_twice() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;

    // The server increments the counter, then dies without answering.
    let crash =
        CallTool::new("demo", "counter", json!({"crash": true})).timeout(Duration::from_secs(10));
    let err = sup.send(crash).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(err.to_string().contains("exit code 3"), "{err}");

    events.ready("demo", 2).await;
    // Even a caller that allows retries of safe calls gets no re-run of `counter`.
    let next = CallTool::new("demo", "counter", json!({}))
        .retry(RetryPolicy::IfIdempotent)
        .timeout(Duration::from_secs(10));
    let result = sup.send(next).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "2");
    assert_eq!(
        counter_file(dir.path(), "demo"),
        2,
        "1 in doubt + 1 acknowledged, nothing more"
    );
    sup.send(Shutdown).await.unwrap();
}

/// (d) A hung server (SIGSTOP): calls time out near their timeout, `notifications/cancelled`
/// is sent, the liveness ping fails, and the server is restarted.
async fn hung_server_times_out_then_is_restarted() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let old = pid(&sup, "demo").await;
    kill(old, Signal::SIGSTOP);

    let started = Instant::now();
    let call = echo("demo", "hello?").timeout(Duration::from_secs(1));
    let err = sup.send(call).await.unwrap().unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );

    // The ping after the timeout gets no answer either: the server is killed and restarted.
    let lost = events.state("demo", "reconnecting", 1).await;
    match lost {
        ServerEvent::StateChanged { message, .. } => {
            assert!(message.contains("liveness ping"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    events.ready("demo", 2).await;
    assert!(
        gone_within(old, Duration::from_secs(5)).await,
        "the hung process is killed"
    );
    let st = status(&sup, "demo").await;
    // The echo and the liveness ping after it.
    assert_eq!(st.counters.calls_timed_out, 2, "{:?}", st.counters);
    assert_eq!(st.counters.cancellations_sent, 2, "{:?}", st.counters);
    let again = sup.send(echo("demo", "back")).await.unwrap().unwrap();
    assert_eq!(text_of(&again), "back");
    sup.send(Shutdown).await.unwrap();
}

/// (d') A slow call on a healthy server: timeout, cancellation delivered, connection kept.
async fn timeout_on_a_healthy_server_cancels_and_keeps_the_connection() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let before = pid(&sup, "demo").await;

    let hang = CallTool::new("demo", "hang", json!({})).timeout(Duration::from_millis(300));
    let err = sup.send(hang).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // The server reads stdin in order: once this call is answered, it has seen the
    // cancellation written before it.
    sup.send(echo("demo", "x")).await.unwrap().unwrap();
    let log = event_log(dir.path(), "demo");
    let hang_id = log
        .iter()
        .find_map(|l| l.strip_prefix("hang "))
        .expect("hang was called")
        .to_owned();
    assert!(log.contains(&format!("cancelled {hang_id}")), "{log:?}");

    // The ping proves the server alive: no restart.
    let st = status(&sup, "demo").await;
    assert_eq!(st.pid, Some(before));
    assert_eq!(st.counters.reconnects, 0);
    assert!(st.state.is_ready());
    sup.send(Shutdown).await.unwrap();
}

/// (e') Failing always: Failed after max_connect_retries, other servers unaffected, and the
/// error carries the server's stderr; `Reconnect` revives it.
async fn startup_failing_always_fails_alone() {
    let dir = tempdir();
    let broken = demo("broken", dir.path()).env("DEMO_FAIL_STARTS", "4");
    let (sup, events) = start_supervisor(quick_settings(), vec![broken, demo("fine", dir.path())]);
    events.ready("fine", 1).await;
    events.state("broken", "failed", 1).await;

    let messages = events.messages("broken");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(
        messages[3].starts_with("Failed after 4 attempts"),
        "{messages:?}"
    );
    let err = sup.send(echo("broken", "x")).await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { attempts: 4, .. }),
        "{err}"
    );
    let shown = err.to_string();
    assert_eq!(
        shown.matches("simulated start-up failure 4/4").count(),
        1,
        "{shown}"
    );
    assert!(
        err.stderr_tail()
            .iter()
            .any(|l| l.contains("simulated start-up failure 4/4")),
        "{err}"
    );
    let ok = sup.send(echo("fine", "still here")).await.unwrap().unwrap();
    assert_eq!(text_of(&ok), "still here");

    // The fifth start succeeds: Reconnect brings the failed server back.
    sup.send(Reconnect {
        server: "broken".into(),
    })
    .await
    .unwrap()
    .unwrap();
    events.ready("broken", 1).await;
    sup.send(echo("broken", "revived")).await.unwrap().unwrap();
    sup.send(Shutdown).await.unwrap();
}

/// (f) Garbage and an over-long line on stdout: calls still succeed, the skips are counted.
async fn garbage_and_overlong_lines_are_skipped() {
    let dir = tempdir();
    let config = demo("noisy", dir.path())
        .env("DEMO_GARBAGE_LINES", "2")
        .max_message_bytes(64 * 1024);
    let (sup, events) = start_supervisor(quick_settings(), vec![config]);
    events.ready("noisy", 1).await;

    let long = CallTool::new("noisy", "long_line", json!({"bytes": 1_000_000}));
    let result = sup.send(long).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "wrote 1000000");
    let result = sup
        .send(CallTool::new("noisy", "garbage", json!({})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&result), "ok");
    let result = sup.send(echo("noisy", "clean")).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "clean");

    let st = status(&sup, "noisy").await;
    assert_eq!(st.counters.skipped_oversized, 1);
    assert!(
        st.counters.skipped_non_json >= 3 + 2 * 3,
        "{:?}",
        st.counters
    );
    assert_eq!(st.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
}

/// (g) Shutdown leaves no process behind: not the server, not its grandchild, not one that
/// ignores SIGTERM.
async fn shutdown_leaves_no_process() {
    let dir = tempdir();
    let polite = demo("polite", dir.path()).env("DEMO_SPAWN_GRANDCHILD", "1");
    let stubborn = demo("stubborn", dir.path())
        .env("DEMO_SPAWN_GRANDCHILD", "1")
        .env("DEMO_IGNORE_SIGTERM", "1");
    let (sup, events) = start_supervisor(quick_settings(), vec![polite, stubborn]);
    events.ready("polite", 1).await;
    events.ready("stubborn", 1).await;

    let mut pids = Vec::new();
    for name in ["polite", "stubborn"] {
        pids.push(pid(&sup, name).await);
        let grandchild = event_log(dir.path(), name)
            .iter()
            .find_map(|l| {
                l.strip_prefix("grandchild pid=")
                    .and_then(|p| p.parse().ok())
            })
            .expect("the demo server logs its grandchild");
        pids.push(grandchild);
    }
    assert!(pids.iter().all(|p| is_running(*p)));
    sup.send(Shutdown).await.unwrap();
    for p in pids {
        assert!(
            gone_within(p, Duration::from_secs(2)).await,
            "process {p} survived shutdown"
        );
    }
}

/// (g') Stopping the actix system without a shutdown message kills the servers too.
#[test]
fn dropping_the_system_leaves_no_process() {
    let dir = tempdir();
    let root = dir.path().to_path_buf();
    let pids = std::thread::spawn(move || {
        let system = System::new();
        let pids = system.block_on(async move {
            let config = demo("dropped", &root).env("DEMO_SPAWN_GRANDCHILD", "1");
            let (sup, events) = start_supervisor(quick_settings(), vec![config]);
            events.ready("dropped", 1).await;
            let server = pid(&sup, "dropped").await;
            let grandchild: u32 = event_log(&root, "dropped")
                .iter()
                .find_map(|l| {
                    l.strip_prefix("grandchild pid=")
                        .and_then(|p| p.parse().ok())
                })
                .unwrap();
            vec![server, grandchild]
        });
        drop(system);
        pids
    })
    .join()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|p| is_running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for p in pids {
        assert!(!is_running(p), "process {p} survived the system");
    }
}

/// (h) Subscriptions are re-sent after a restart, and updates keep arriving.
async fn subscriptions_survive_a_restart() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    sup.send(Subscribe {
        server: "demo".into(),
        uri: "demo://clock".into(),
    })
    .await
    .unwrap()
    .unwrap();

    kill(pid(&sup, "demo").await, Signal::SIGKILL);
    events.ready("demo", 2).await;
    // Sent as `resources/subscribe` in the session era, as a listen's filter in the
    // 2026-07-28 revision.
    let sent = |l: &&String| match era() {
        "modern" => l.starts_with("listen ") && l.contains("demo://clock"),
        _ => *l == "subscribe demo://clock",
    };
    // The session era's handshake sends it before Ready; the modern listen opens just after.
    let log_dir = dir.path().to_owned();
    until("the subscription sent again after the restart", move || {
        event_log(&log_dir, "demo").iter().filter(sent).count() >= 2
    })
    .await;
    let subscribes = event_log(dir.path(), "demo").iter().filter(sent).count();
    assert_eq!(subscribes, 2, "sent once, and again after the restart");

    let notify = CallTool::new("demo", "notify", json!({"kind": "resource_updated"}));
    sup.send(notify).await.unwrap().unwrap();
    events
        .resource_updated("demo://clock", Duration::from_secs(10))
        .await;
    let st = status(&sup, "demo").await;
    assert_eq!(st.subscriptions, ["demo://clock"]);
    sup.send(Shutdown).await.unwrap();
}

// Every test above, once per protocol era (the demo server speaks both).
in_both_eras!(
    kill_while_idle_then_calls_succeed,
    kill_during_slow_call_answers_before_the_deadline,
    kill_during_read_only_call_on_trusted_server_is_retried,
    non_idempotent_call_across_a_crash_is_not_run_twice,
    hung_server_times_out_then_is_restarted,
    timeout_on_a_healthy_server_cancels_and_keeps_the_connection,
    startup_failing_always_fails_alone,
    garbage_and_overlong_lines_are_skipped,
    shutdown_leaves_no_process,
    subscriptions_survive_a_restart,
);
