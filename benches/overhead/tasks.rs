//! The Tasks extension under load (issue 18's check): `n` concurrent `CallTool`s against one
//! `mcp-echo-server` in its tasks mode (`ECHO_TASKS=1`, the 2026-07-28 revision), each answered
//! with a task that asks to be polled every `poll_ms` and completes a fixed time after its
//! creation: `ms`, plus for the `i`th task `i/n` of one poll interval. (Spread so that the
//! completions fall at every phase of the polling: with one time for all, a whole number of
//! intervals, every task would be seen done by the poll right after it, and the time to the
//! answer would be the polls' accumulated jitter, not the interval's.) `CallTool` polls each
//! (`tasks/get`) and answers with its result. The server answers a poll by reading the clock,
//! and records when each came, so that what is measured is the client's polling.
//!
//! - Polls per task and in total, and the polls that came sooner than the server asked (the
//!   shortest gap between two requests about one task, as the server saw it).
//! - Requests per second at the server against the bound, the sum over the tasks in flight of
//!   1/pollInterval (`n / poll_ms` with all of them in flight): the mean (the polls over the
//!   time from the first call to the last poll), and the peak over any 1 s and over any
//!   one-interval window (in which a task polled no sooner than asked is polled at most once);
//!   and, for how bursty they are, the most in any 10 ms.
//! - Memory per task in flight: this process's RSS halfway through the tasks' time (all of them
//!   in flight) less its RSS before, over `n`; the callers' futures count with it.
//! - From a task's completion (`completedAtUs`, the server's clock) to its caller's answer (this
//!   process's clock, the same machine's), p50/p99/max: with polling it is up to one poll
//!   interval plus its jitter; and from the poll that saw it (`seenAtUs`) to the caller: the
//!   client's own part.
//! - CPU per poll, of the client (this process) and of the server.
//!
//!
//! Then the same again with the server telling of its tasks (`ECHO_TASKS=notify`): the client
//! names the tasks in a `subscriptions/listen`, and the server sends `notifications/tasks` at
//! each completion, so the answer follows the completion by the notification's way through
//! the client, and the polls left are the first of each task (which keeps its time: a change
//! before the listen's acknowledgement is told of by none) and the ceiling's safety net.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_supervisor::{CallTool, GetStatus, ListTasks, ServerConfig, Shutdown};
use serde_json::{json, Value};

use crate::echo::ECHO_BIN;
use crate::procfs::{cpu_ns, cpu_ns_self, rss_kb};
use crate::report::{num, Report};
use crate::stats::{max, min, percentile};
use crate::supervised::supervise_one;

/// The server's name, and the caller's patience: far beyond any task's time.
const SERVER: &str = "echo";
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn task_call(ms: u64, poll_ms: u64) -> CallTool {
    CallTool::new(SERVER, "task", json!({"ms": ms, "poll_ms": poll_ms})).timeout(CALL_TIMEOUT)
}

/// What one caller saw: when it had its answer, and the answer's figures (`None`: it failed).
struct Answer {
    at_us: u64,
    result: Option<Value>,
}

/// `n` tasks of `ms` (and a fraction of `poll_ms`), polled every `poll_ms`, all at once; with
/// `notified`, the server tells of their completions.
pub(crate) async fn child(n: usize, ms: u64, poll_ms: u64, notified: bool) -> Value {
    let mode = if notified { "notify" } else { "1" };
    let config = ServerConfig::stdio(SERVER, ECHO_BIN).env("ECHO_TASKS", mode);
    let (sup, addr) = supervise_one(config).await;
    let status = addr
        .send(GetStatus::all())
        .await
        .expect("actor alive")
        .expect("status");
    let server_pid = status
        .first()
        .and_then(|s| s.pid)
        .expect("a stdio server has a pid")
        .to_string();
    assert_eq!(
        status.first().map(|s| s.protocol_version.as_deref()),
        Some(Some("2026-07-28")),
        "the echo server's tasks mode is modern"
    );

    // One task first, so that what is lazily made on the first is not counted per task.
    let warm = addr.send(task_call(0, poll_ms)).await.expect("actor alive");
    warm.expect("the warm-up task completes");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let rss_before = rss_kb();
    let client_cpu0 = cpu_ns_self();
    let server_cpu0 = cpu_ns(&server_pid);
    let started_us = unix_us();
    let started = Instant::now();
    let answers: Rc<RefCell<Vec<Answer>>> = Rc::default();
    let callers: Vec<_> = (0..n)
        .map(|i| {
            let (addr, answers) = (addr.clone(), answers.clone());
            let ms = ms + i as u64 * poll_ms / n as u64;
            tokio::task::spawn_local(async move {
                let answer = addr.send(task_call(ms, poll_ms)).await;
                let at_us = unix_us();
                let result = match answer {
                    Ok(Ok(result)) => result.structured_content,
                    Ok(Err(e)) => {
                        eprintln!("  a task's call failed: {e}");
                        None
                    }
                    Err(e) => {
                        eprintln!("  a task's call was lost: {e}");
                        None
                    }
                };
                answers.borrow_mut().push(Answer { at_us, result });
            })
        })
        .collect();

    // Halfway through the tasks' time every task is in flight: the memory they hold, and how
    // many the client follows then (after the sample: the list costs memory too).
    tokio::time::sleep(Duration::from_millis(ms / 2)).await;
    let rss_during = rss_kb();
    let followed = addr
        .send(ListTasks::new(SERVER))
        .await
        .expect("actor alive")
        .map_or(0, |tasks| tasks.len());
    for caller in callers {
        let _ = caller.await;
    }
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    let client_cpu_ns = cpu_ns_self() - client_cpu0;
    let server_cpu_ns = cpu_ns(&server_pid) - server_cpu0;

    let stats = sup
        .send(CallTool::new(SERVER, "task_stats", json!({})))
        .await
        .expect("supervisor alive")
        .expect("task_stats answers")
        .structured_content
        .expect("task_stats has structured content");
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;

    // The server's record of this run's tasks and polls (the warm-up's came before).
    let tasks: Vec<&Value> = stats["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["createdAtUs"].as_u64().unwrap_or(0) >= started_us)
        .collect();
    let mut polls: Vec<u64> = stats["polls"]
        .as_array()
        .expect("polls")
        .iter()
        .filter_map(Value::as_u64)
        .filter(|at| *at >= started_us)
        .collect();
    polls.sort_unstable();
    let per_task: Vec<f64> = tasks
        .iter()
        .map(|t| t["polls"].as_f64().unwrap_or(0.0))
        .collect();
    let sum = |key: &str| -> f64 { tasks.iter().map(|t| t[key].as_f64().unwrap_or(0.0)).sum() };
    let min_gap_ms = min(&tasks
        .iter()
        .map(|t| t["minGapUs"].as_f64().unwrap_or(f64::NAN) / 1e3)
        .collect::<Vec<_>>());

    let answers = answers.borrow();
    let failed = answers.iter().filter(|a| a.result.is_none()).count();
    let mut to_answer = Vec::new();
    let mut seen_to_answer = Vec::new();
    for answer in answers.iter() {
        let Some(result) = &answer.result else {
            continue;
        };
        let figure = |key: &str| result[key].as_f64().unwrap_or(f64::NAN);
        let at = answer.at_us as f64;
        to_answer.push((at - figure("completedAtUs")) / 1e3);
        seen_to_answer.push((at - figure("seenAtUs")) / 1e3);
    }
    to_answer.sort_by(f64::total_cmp);
    seen_to_answer.sort_by(f64::total_cmp);

    let span_s = match polls.last() {
        Some(last) if *last > started_us => (last - started_us) as f64 / 1e6,
        _ => f64::NAN,
    };
    let interval_us = poll_ms * 1000;
    let peak_interval = peak_in_window(&polls, interval_us);
    eprintln!(
        "  tasks{}: {n} of {ms} ms polled every {poll_ms} ms: {} polls, {failed} failed, completion → answer p50 {:.1} ms p99 {:.1} ms, {:.0} B/task, {:.0} ms",
        if notified { " (notified)" } else { "" },
        polls.len(),
        percentile(&to_answer, 0.5),
        percentile(&to_answer, 0.99),
        (rss_during.saturating_sub(rss_before) * 1024) as f64 / n as f64,
        elapsed_ms,
    );
    json!({
        "tasks": n,
        "notified": notified,
        "task_ms": ms,
        "poll_ms": poll_ms,
        "failed": failed,
        "followed_halfway": followed,
        "elapsed_ms": elapsed_ms,
        "polls_total": polls.len(),
        "polls_per_task_mean": per_task.iter().sum::<f64>() / per_task.len().max(1) as f64,
        "polls_per_task_min": min(&per_task),
        "polls_per_task_max": max(&per_task),
        "early_polls": sum("earlyPolls"),
        "polls_after_end": sum("pollsAfterEnd"),
        "min_gap_ms": min_gap_ms,
        "mean_rps": polls.len() as f64 / span_s,
        "peak_rps_1s": peak_in_window(&polls, 1_000_000) as f64,
        "peak_in_interval": peak_interval,
        "peak_rps_interval": peak_interval as f64 * 1000.0 / poll_ms as f64,
        "peak_in_10ms": peak_in_window(&polls, 10_000),
        "bound_rps": n as f64 * 1000.0 / poll_ms as f64,
        "completion_to_answer_p50_ms": percentile(&to_answer, 0.5),
        "completion_to_answer_p99_ms": percentile(&to_answer, 0.99),
        "completion_to_answer_max_ms": max(&to_answer),
        "seen_to_answer_p50_ms": percentile(&seen_to_answer, 0.5),
        "seen_to_answer_p99_ms": percentile(&seen_to_answer, 0.99),
        "rss_before_kb": rss_before,
        "rss_during_kb": rss_during,
        "rss_bytes_per_task": (rss_during.saturating_sub(rss_before) * 1024) as f64 / n as f64,
        "client_cpu_us_per_poll": client_cpu_ns / 1e3 / polls.len().max(1) as f64,
        "server_cpu_us_per_poll": server_cpu_ns / 1e3 / polls.len().max(1) as f64,
    })
}

/// The most of `sorted` (µs) in any window `[t, t + width)` (half-open: with polls no sooner
/// than asked, a window one interval wide holds at most one poll of each task).
fn peak_in_window(sorted: &[u64], width: u64) -> usize {
    let mut peak = 0;
    let mut from = 0;
    for (to, at) in sorted.iter().enumerate() {
        while sorted[from] + width <= *at {
            from += 1;
        }
        peak = peak.max(to + 1 - from);
    }
    peak
}

/// Writes the tasks table and its summary keys from the child's result.
pub(crate) fn report(report: &mut Report, tasks: &Value) {
    let n = num(tasks, "tasks");
    let poll_ms = num(tasks, "poll_ms");
    report.line(format!(
        "### {n} concurrent tasks on one server (polling)\n"
    ));
    report.line(format!(
        "{n} `CallTool`s at once against `mcp-echo-server` in its tasks mode (2026-07-28), each a task that asks to be polled every {poll_ms} ms and completes {} ms after its creation plus i/n of one interval (so that completions fall at every phase of the polling). The bound is the sum over the tasks in flight of 1/pollInterval; the mean is taken from the first call to the last poll.\n",
        num(tasks, "task_ms")
    ));
    report.line("| figure | value |");
    report.line("|---|---|");
    let rows = [
        (
            "calls answered / failed".to_owned(),
            format!(
                "{} / {} ({:.0} ms for all)",
                n - num(tasks, "failed"),
                num(tasks, "failed"),
                num(tasks, "elapsed_ms")
            ),
        ),
        (
            "polls per task: mean [min–max] / in total".to_owned(),
            format!(
                "{:.2} [{}–{}] / {}",
                num(tasks, "polls_per_task_mean"),
                num(tasks, "polls_per_task_min"),
                num(tasks, "polls_per_task_max"),
                num(tasks, "polls_total")
            ),
        ),
        (
            "polls sooner than asked / after the task's end".to_owned(),
            format!(
                "{} / {} (shortest gap {:.1} ms)",
                num(tasks, "early_polls"),
                num(tasks, "polls_after_end"),
                num(tasks, "min_gap_ms")
            ),
        ),
        (
            "requests/s at the server: mean / peak 1 s / peak one interval".to_owned(),
            format!(
                "{:.0} / {:.0} / {:.0} (bound {:.0})",
                num(tasks, "mean_rps"),
                num(tasks, "peak_rps_1s"),
                num(tasks, "peak_rps_interval"),
                num(tasks, "bound_rps")
            ),
        ),
        (
            "most polls within 10 ms".to_owned(),
            format!("{}", num(tasks, "peak_in_10ms")),
        ),
        (
            "task completed → caller's answer: p50 / p99 / max".to_owned(),
            format!(
                "{:.1} / {:.1} / {:.1} ms",
                num(tasks, "completion_to_answer_p50_ms"),
                num(tasks, "completion_to_answer_p99_ms"),
                num(tasks, "completion_to_answer_max_ms")
            ),
        ),
        (
            "the poll that saw it → caller's answer: p50 / p99".to_owned(),
            format!(
                "{:.2} / {:.2} ms",
                num(tasks, "seen_to_answer_p50_ms"),
                num(tasks, "seen_to_answer_p99_ms")
            ),
        ),
        (
            "RSS per task in flight".to_owned(),
            format!("{:.1} KiB", num(tasks, "rss_bytes_per_task") / 1024.0),
        ),
        (
            "CPU per poll: client / server".to_owned(),
            format!(
                "{:.1} / {:.1} µs",
                num(tasks, "client_cpu_us_per_poll"),
                num(tasks, "server_cpu_us_per_poll")
            ),
        ),
    ];
    for (figure, value) in rows {
        report.line(format!("| {figure} | {value} |"));
    }
    report.line("");
    for (key, digits) in [
        ("failed", 0),
        ("polls_total", 0),
        ("polls_per_task_mean", 2),
        ("early_polls", 0),
        ("polls_after_end", 0),
        ("min_gap_ms", 1),
        ("mean_rps", 0),
        ("peak_rps_1s", 0),
        ("peak_rps_interval", 0),
        ("bound_rps", 0),
        ("peak_in_10ms", 0),
        ("completion_to_answer_p50_ms", 1),
        ("completion_to_answer_p99_ms", 1),
        ("seen_to_answer_p50_ms", 2),
        ("seen_to_answer_p99_ms", 2),
        ("rss_bytes_per_task", 0),
        ("client_cpu_us_per_poll", 1),
        ("server_cpu_us_per_poll", 1),
    ] {
        report.put(&format!("tasks_{key}"), num(tasks, key), digits);
    }
    report.put("tasks_count", n, 0);
}

/// Writes the table of the run whose server told of its tasks, and its summary keys.
pub(crate) fn report_notified(report: &mut Report, tasks: &Value) {
    let n = num(tasks, "tasks");
    report.line(format!(
        "### {n} concurrent tasks on one server, told of by `notifications/tasks`\n"
    ));
    report.line(format!(
        "The same tasks against `mcp-echo-server` with `ECHO_TASKS=notify`: the client names them in a `subscriptions/listen` and the server sends `notifications/tasks` at each completion. The first poll of each task keeps its time ({} ms); the next would be at the ceiling (60 s), after the tasks' end.\n",
        num(tasks, "poll_ms")
    ));
    report.line("| figure | value |");
    report.line("|---|---|");
    let rows = [
        (
            "calls answered / failed",
            format!(
                "{} / {} ({:.0} ms for all)",
                n - num(tasks, "failed"),
                num(tasks, "failed"),
                num(tasks, "elapsed_ms")
            ),
        ),
        (
            "polls per task: mean [min–max] / in total",
            format!(
                "{:.2} [{}–{}] / {}",
                num(tasks, "polls_per_task_mean"),
                num(tasks, "polls_per_task_min"),
                num(tasks, "polls_per_task_max"),
                num(tasks, "polls_total")
            ),
        ),
        (
            "polls after the task's end",
            format!("{}", num(tasks, "polls_after_end")),
        ),
        (
            "requests/s at the server: mean / peak 1 s (polling's bound)",
            format!(
                "{:.0} / {:.0} ({:.0})",
                num(tasks, "mean_rps"),
                num(tasks, "peak_rps_1s"),
                num(tasks, "bound_rps")
            ),
        ),
        (
            "task completed → caller's answer: p50 / p99 / max",
            format!(
                "{:.1} / {:.1} / {:.1} ms",
                num(tasks, "completion_to_answer_p50_ms"),
                num(tasks, "completion_to_answer_p99_ms"),
                num(tasks, "completion_to_answer_max_ms")
            ),
        ),
        (
            "RSS per task in flight",
            format!("{:.1} KiB", num(tasks, "rss_bytes_per_task") / 1024.0),
        ),
    ];
    for (figure, value) in rows {
        report.line(format!("| {figure} | {value} |"));
    }
    report.line("");
    for (key, digits) in [
        ("failed", 0),
        ("polls_total", 0),
        ("polls_per_task_mean", 2),
        ("polls_after_end", 0),
        ("mean_rps", 0),
        ("completion_to_answer_p50_ms", 1),
        ("completion_to_answer_p99_ms", 1),
        ("completion_to_answer_max_ms", 1),
        ("rss_bytes_per_task", 0),
    ] {
        report.put(&format!("tasks_notified_{key}"), num(tasks, key), digits);
    }
}
