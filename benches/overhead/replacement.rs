//! A server changed without a failed call: how long `Restart` takes to `Replaced` for the echo
//! server (a new process started, opened and Ready beside the old one, the route swapped), and
//! what a caller that calls without pause sees of it: the latency of its calls made while a
//! replacement was under way against those made outside one, and that none failed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mcp_supervisor::{CallTool, Restart, ServerConfig, Shutdown, Supervisor};
use serde_json::{json, Value};

use crate::echo::{ECHO_BIN, TEXT};
use crate::report::{num, Report};
use crate::stats::{median, percentile};

/// `restarts` replacements, 300 ms apart, under one serial caller.
pub(crate) async fn child(restarts: usize) -> Value {
    let sup = Supervisor::builder()
        .server(ServerConfig::stdio("echo", ECHO_BIN))
        .start()
        .expect("start the supervisor");
    let call =
        || CallTool::new("echo", "echo", json!({"text": TEXT})).timeout(Duration::from_secs(5));
    sup.send(call())
        .await
        .expect("supervisor alive")
        .expect("the echo server answers");

    // The caller: serial calls, each logged as (sent, latency µs, ok).
    let log: Rc<RefCell<Vec<(Instant, f64, bool)>>> = Rc::default();
    let stop = Rc::new(Cell::new(false));
    let caller = {
        let (log, stop, sup) = (log.clone(), stop.clone(), sup.clone());
        tokio::task::spawn_local(async move {
            while !stop.get() {
                let sent = Instant::now();
                let ok = matches!(sup.send(call()).await, Ok(Ok(_)));
                log.borrow_mut()
                    .push((sent, sent.elapsed().as_secs_f64() * 1e6, ok));
            }
        })
    };
    let mut windows = Vec::new();
    let mut to_replaced = Vec::new();
    for _ in 0..restarts {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        sup.send(Restart::new("echo"))
            .await
            .expect("supervisor alive")
            .expect("replaced");
        let ended = Instant::now();
        to_replaced.push((ended - started).as_secs_f64() * 1e3);
        windows.push((started, ended));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.set(true);
    let _ = caller.await;
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;

    let log = log.borrow();
    let during_a_replacement =
        |sent: &Instant| windows.iter().any(|(from, to)| sent >= from && sent <= to);
    let mut during: Vec<f64> = Vec::new();
    let mut outside: Vec<f64> = Vec::new();
    for (sent, us, _) in log.iter() {
        if during_a_replacement(sent) {
            during.push(*us);
        } else {
            outside.push(*us);
        }
    }
    during.sort_by(f64::total_cmp);
    outside.sort_by(f64::total_cmp);
    let failed = log.iter().filter(|(_, _, ok)| !ok).count();
    json!({
        "restarts": restarts,
        "restart_to_replaced_ms": to_replaced,
        "restart_to_replaced_ms_median": median(&to_replaced),
        "calls": log.len(),
        "failed": failed,
        "during_calls": during.len(),
        "during_p50_us": percentile(&during, 0.5),
        "during_p99_us": percentile(&during, 0.99),
        "outside_p50_us": percentile(&outside, 0.5),
        "outside_p99_us": percentile(&outside, 0.99),
    })
}

/// Writes the replacement table and its summary keys from the child's result.
pub(crate) fn report(report: &mut Report, replacement: &Value) {
    report.line(format!(
        "### Restart without a failed call (median of {} restarts of the echo server)\n",
        num(replacement, "restarts")
    ));
    report.line("One caller calling without pause; `Restart` every 300 ms. A call counts as made during a replacement when it was sent between `Restart` and its answer (`Replaced`).\n");
    report.line("| Restart → Replaced | calls | failed | during: p50 / p99 | outside: p50 / p99 |");
    report.line("|---|---|---|---|---|");
    report.line(format!(
        "| {:.1} ms | {} | {} | {:.0} / {:.0} µs | {:.0} / {:.0} µs |\n",
        num(replacement, "restart_to_replaced_ms_median"),
        num(replacement, "calls"),
        num(replacement, "failed"),
        num(replacement, "during_p50_us"),
        num(replacement, "during_p99_us"),
        num(replacement, "outside_p50_us"),
        num(replacement, "outside_p99_us"),
    ));
    report.put(
        "restart_to_replaced_ms",
        num(replacement, "restart_to_replaced_ms_median"),
        2,
    );
    report.put("replacement_failed_calls", num(replacement, "failed"), 0);
    report.put(
        "replacement_during_p50_us",
        num(replacement, "during_p50_us"),
        1,
    );
    report.put(
        "replacement_outside_p50_us",
        num(replacement, "outside_p50_us"),
        1,
    );
}
