//! Recovery after kill -9: how long a caller that calls every 10 ms waits for its first
//! successful call after the stdio server is killed, against the server's own cold start
//! (spawn → initialize answer) measured in the same run; and the report's recovery section.

use std::cell::{Cell, RefCell};
use std::process::Stdio;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{
    CallTool, GetServer, GetStatus, ServerConfig, Settings, Shutdown, Supervisor,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::echo::{ECHO_BIN, TEXT};
use crate::report::{num, Report};
use crate::stats::median;
use crate::supervised::wait_ready;
use crate::watcher::{Board, Watcher};

/// Spawn → initialize answer of the echo server, as a client without any runtime of ours sees
/// it.
async fn cold_start() -> f64 {
    let start = Instant::now();
    let mut child = tokio::process::Command::new(ECHO_BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the echo server");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "cold-start", "version": "0"}}});
    let mut line = init.to_string().into_bytes();
    line.push(b'\n');
    stdin.write_all(&line).await.expect("write initialize");
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut answer = Vec::new();
    reader
        .read_until(b'\n', &mut answer)
        .await
        .expect("read the initialize answer");
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    assert!(!answer.is_empty(), "no initialize answer");
    drop(stdin);
    let _ = child.kill().await;
    elapsed
}

/// The child's side: `kills` times, a cold start of the echo server on its own, then a kill -9
/// of our supervised one while a caller calls every 10 ms.
pub(crate) async fn child(kills: usize) -> Value {
    // A kill right after a reconnect counts as a crash loop (its reconnect backs off) until the
    // connection has been Ready for the stability window; 1 s instead of 10 s lets the kills
    // come 1.2 s apart, each an isolated crash with the immediate reconnect, as with defaults.
    let mut settings = Settings::default();
    settings.stability_window = Duration::from_secs(1);
    let board: Rc<RefCell<Board>> = Rc::default();
    let watcher = Watcher {
        board: board.clone(),
        changed: Rc::new(Notify::new()),
    }
    .start();
    let sup = Supervisor::builder()
        .server(ServerConfig::stdio("echo", ECHO_BIN))
        .settings(settings)
        .subscriber(watcher.recipient())
        .start()
        .expect("start the supervisor");
    let addr = sup
        .send(GetServer("echo".into()))
        .await
        .expect("supervisor alive")
        .expect("server configured");
    let mut colds = Vec::new();
    let mut recoveries = Vec::new();
    let mut to_ready = Vec::new();
    for k in 0..kills {
        colds.push(cold_start().await);
        wait_ready(&addr, Duration::from_secs(10)).await;
        let status = addr
            .send(GetStatus::all())
            .await
            .expect("actor alive")
            .expect("status");
        let status = status.first().expect("one status");
        let stable = Duration::from_millis(1200);
        if status.in_state_for < stable {
            tokio::time::sleep(stable - status.in_state_for).await;
        }
        let pid = status.pid.expect("a stdio server has a pid");

        // The caller: a call every 10 ms, each on its own task; (sent, done, ok) per call.
        let log: Rc<RefCell<Vec<(Instant, Instant, bool)>>> = Rc::default();
        let stop = Rc::new(Cell::new(false));
        let ticker = {
            let (log, stop, addr) = (log.clone(), stop.clone(), addr.clone());
            tokio::task::spawn_local(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(10));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.get() {
                    tick.tick().await;
                    let log = log.clone();
                    let call = CallTool::new("echo", "echo", json!({"text": TEXT}))
                        .timeout(Duration::from_secs(5));
                    let sent_at = Instant::now();
                    let sent = addr.send(call);
                    tokio::task::spawn_local(async move {
                        let ok = matches!(sent.await, Ok(Ok(_)));
                        log.borrow_mut().push((sent_at, Instant::now(), ok));
                    });
                }
            })
        };
        // A random phase against the caller's 10 ms ticks, so the wait for the next call after
        // the kill (0-10 ms) is not always the same.
        let phase = Duration::from_secs_f64(0.05 + 0.01 * rand::random::<f64>());
        tokio::time::sleep(phase).await;
        let killed_at = Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill -9 the echo server");
        let deadline = killed_at + Duration::from_secs(10);
        let recovered = loop {
            let first = log
                .borrow()
                .iter()
                .filter(|(sent, _, ok)| *ok && *sent > killed_at)
                .map(|(_, done, _)| *done)
                .min();
            if let Some(done) = first {
                break done;
            }
            assert!(
                Instant::now() < deadline,
                "no successful call within 10 s of the kill"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        stop.set(true);
        let _ = ticker.await;
        let ms = (recovered - killed_at).as_secs_f64() * 1e3;
        let ready_at = board.borrow().last_ready.filter(|t| *t > killed_at);
        let ready_ms = ready_at.map_or(f64::NAN, |t| (t - killed_at).as_secs_f64() * 1e3);
        eprintln!(
            "  kill {k}: first successful call after {ms:.1} ms, Ready after {ready_ms:.1} ms (cold start {:.1} ms)",
            colds[k]
        );
        recoveries.push(ms);
        to_ready.push(ready_ms);
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;
    json!({
        "kills": kills,
        "cold_start_ms": colds,
        "recovery_ms": recoveries,
        "cold_start_ms_median": median(&colds),
        "recovery_ms_median": median(&recoveries),
        "kill_to_ready_ms": to_ready,
        "kill_to_ready_ms_median": median(&to_ready),
    })
}

/// Writes the recovery table and its summary keys from the child's result.
pub(crate) fn report(report: &mut Report, recovery: &Value) {
    let cold = num(recovery, "cold_start_ms_median");
    let rec = num(recovery, "recovery_ms_median");
    report.line(format!(
        "### Recovery after kill -9 (median of {} kills)\n",
        num(recovery, "kills")
    ));
    let ready = num(recovery, "kill_to_ready_ms_median");
    report.line("A call every 10 ms; kill -9 at a random phase of it. The first successful call is the first one made after the kill (calls in flight at the kill are answered `outcome_unknown`), so it includes a wait of 0-10 ms for the caller's next tick.\n");
    report.line("| cold start (spawn → initialize answer) | kill → Ready | kill → first successful call | difference to cold start |");
    report.line("|---|---|---|---|");
    report.line(format!(
        "| {cold:.1} ms | {ready:.1} ms | {rec:.1} ms | {:.1} ms |\n",
        rec - cold
    ));
    report.put("kill_to_ready_ms", ready, 2);
    report.put("cold_start_ms", cold, 2);
    report.put("recovery_ms", rec, 2);
    report.put("recovery_ms_over_cold_start", rec - cold, 2);
}
