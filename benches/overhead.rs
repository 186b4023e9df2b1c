//! `cargo bench --bench overhead [-- --quick] [-- --pin]`: what the runtime costs, measured
//! against the physical limit and against the official SDK, side by side in one run.
//!
//! 1. Call overhead over stdio against `mcp-echo-server` (one binary for every client):
//!    `raw` (a hand-written tokio client: serde_json per request, one batching writer, a map of
//!    oneshot channels), `ours` (`CallTool` straight to the `ServerActor`), `ours-sup` (`CallTool`
//!    through the `Supervisor`), `ours-call` (untyped `Call` straight to the `ServerActor`) and
//!    `rmcp` (the official SDK's client, child-process transport, `call_tool`). Serial: p50/p99 of
//!    sequential round trips; concurrent: 64 callers, calls/s. Every client runs in a fresh child
//!    process of this binary (re-executed with `--child`), on a current-thread runtime, so that
//!    its peak RSS (`VmHWM`) is its own; the clients are interleaved, in a rotating order, over
//!    several repetitions, and every ratio is taken within one repetition.
//! 2. Streamable HTTP against the in-tree test server (`tests/common/http_server.rs`, in the
//!    same child process, on its own worker thread): `ours` vs a raw awc POST loop, with JSON and
//!    with SSE answers.
//! 3. Recovery: kill -9 the stdio server while a caller makes a call every 10 ms; time from the
//!    kill to the first successful call, against the server's own cold start (spawn →
//!    initialize answer) measured in the same run.
//! 4. Scale and herd: N `ServerActor`s over HTTP against one test server (in a separate
//!    process, so that the client's RSS is the client's): time to all Ready vs one server,
//!    RSS growth per server, `GetStatus` for all; then the server forgets every session and we
//!    count reconnect attempts (initialize POSTs) per 100 ms window, with the default jitter and
//!    with `reconnect_backoff.jitter(0.0)`, and the time until all are Ready again.
//!
//! Prints a table and writes `target/bench/summary.json` (and `target/bench/table.md`).
//! `--pin` runs every child under `taskset -c 0`, so the client and its server share a core.

#[path = "../tests/common/http_server.rs"]
mod http_server;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::{BufRead, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{
    Call, CallTool, GetServer, GetStatus, ServerActor, ServerConfig, ServerEvent, Settings,
    Shutdown, Supervisor,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

const ECHO_BIN: &str = env!("CARGO_BIN_EXE_mcp-echo-server");
/// The text every echo call carries: 100 bytes.
const TEXT: &str = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs! 0123456789 abcd";
const CALLERS: usize = 64;
/// The stdio clients, in the order of the first repetition.
const CLIENTS: [&str; 5] = ["raw", "ours", "ours-sup", "ours-call", "rmcp"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1..]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let pin = args.iter().any(|a| a == "--pin");
    orchestrate(&Plan::new(quick, pin));
}

// ===================================================================================== plan

struct Plan {
    quick: bool,
    pin: bool,
    reps: usize,
    warmup: usize,
    serial: usize,
    concurrent: usize,
    kills: usize,
    http_reps: usize,
    http_serial: usize,
    scale: usize,
}

impl Plan {
    fn new(quick: bool, pin: bool) -> Self {
        if quick {
            Plan {
                quick,
                pin,
                reps: 2,
                warmup: 500,
                serial: 2_000,
                concurrent: 10_048,
                kills: 3,
                http_reps: 1,
                http_serial: 300,
                scale: 100,
            }
        } else {
            Plan {
                quick,
                pin,
                reps: 5,
                warmup: 2_000,
                serial: 20_000,
                concurrent: 100_032, // a multiple of 64 callers
                kills: 20,
                http_reps: 3,
                http_serial: 5_000,
                scale: 1_000,
            }
        }
    }
}

// ============================================================================ orchestration

fn orchestrate(plan: &Plan) {
    let started = Instant::now();
    let machine = machine();
    println!(
        "mcp-supervisor overhead benchmark ({} mode{}) on {machine}",
        if plan.quick { "quick" } else { "full" },
        if plan.pin { ", pinned to one core" } else { "" }
    );

    // 1. stdio, interleaved.
    let mut stdio: HashMap<&str, Vec<Value>> = HashMap::new();
    for rep in 0..plan.reps {
        let mut order = CLIENTS.to_vec();
        order.rotate_left(rep % CLIENTS.len());
        for client in order {
            let result = run_child(
                plan,
                &[
                    "stdio",
                    client,
                    &plan.serial.to_string(),
                    &plan.concurrent.to_string(),
                    &CALLERS.to_string(),
                    &plan.warmup.to_string(),
                ],
                Duration::from_secs(300),
            );
            eprintln!(
                "  rep {rep} {client:<9} serial p50 {:>7.1} µs  concurrent {:>9.0} calls/s",
                num(&result, "serial_p50_us"),
                num(&result, "concurrent_calls_per_s")
            );
            stdio.entry(client).or_default().push(result);
        }
    }

    // 2. HTTP.
    let http = run_child(
        plan,
        &[
            "http",
            &plan.http_serial.to_string(),
            &plan.http_reps.to_string(),
        ],
        Duration::from_secs(300),
    );

    // 3. Recovery.
    let recovery = run_child(
        plan,
        &["recovery", &plan.kills.to_string()],
        Duration::from_secs(300),
    );

    // 4. Scale and herd.
    let scale = run_child(
        plan,
        &["scale", &plan.scale.to_string()],
        Duration::from_secs(400),
    );

    let report = Report::new(plan, &machine, &stdio, &http, &recovery, &scale);
    let table = report.table();
    println!("\n{table}");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&dir).expect("create target/bench");
    let summary = serde_json::to_string_pretty(&report.summary).expect("serialize the summary");
    std::fs::write(dir.join("summary.json"), summary + "\n").expect("write summary.json");
    std::fs::write(dir.join("table.md"), &table).expect("write table.md");
    println!(
        "wrote {} (and table.md) in {:.1} s",
        dir.join("summary.json").display(),
        started.elapsed().as_secs_f64()
    );
}

/// Runs this binary with `--child args...` and returns the JSON it prints on a `RESULT` line.
fn run_child(plan: &Plan, args: &[&str], limit: Duration) -> Value {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = if plan.pin {
        let mut c = Command::new("taskset");
        c.arg("-c").arg("0").arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.arg("--child")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn a bench child");
    let mut stdout = child.stdout.take().expect("child stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a bench child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bench child {args:?} took longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = reader.join().expect("child stdout reader");
    assert!(status.success(), "bench child {args:?} failed: {status}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("bench child {args:?} printed no RESULT line:\n{text}"));
    serde_json::from_str(line).expect("child RESULT is JSON")
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let mem_gib = status_kb("/proc/meminfo", "MemTotal:").unwrap_or(0) as f64 / 1024.0 / 1024.0;
    format!("{cores} × {cpu}, {mem_gib:.0} GiB, Linux {kernel}")
}

// =================================================================================== report

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

fn min(values: &[f64]) -> f64 {
    values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::min)
}

fn max(values: &[f64]) -> f64 {
    values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max)
}

/// A JSON number, or null for NaN (a figure that was not measured).
fn jnum(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

struct Report {
    summary: serde_json::Map<String, Value>,
    lines: Vec<String>,
}

impl Report {
    fn new(
        plan: &Plan,
        machine: &str,
        stdio: &HashMap<&str, Vec<Value>>,
        http: &Value,
        recovery: &Value,
        scale: &Value,
    ) -> Self {
        let mut s = serde_json::Map::new();
        let mut lines = Vec::new();
        let mut put = |k: &str, v: f64, digits: i32| {
            s.insert(k.to_owned(), jnum(round(v, digits)));
        };

        // ---- stdio
        let per = |client: &str, key: &str| -> Vec<f64> {
            stdio
                .get(client)
                .map(|runs| runs.iter().map(|r| num(r, key)).collect())
                .unwrap_or_default()
        };
        let ratio =
            |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x / y).collect() };
        let raw_p50 = per("raw", "serial_p50_us");
        let raw_tput = per("raw", "concurrent_calls_per_s");
        let rmcp_tput = per("rmcp", "concurrent_calls_per_s");
        lines.push(format!(
            "### Call overhead over stdio ({} repetitions, interleaved; median [best])\n",
            plan.reps
        ));
        lines.push(format!(
            "{} sequential `tools/call` echo round trips with 100 bytes of text; {} calls by {CALLERS} concurrent callers. Ratios are taken within each repetition.\n",
            plan.serial, plan.concurrent
        ));
        lines.push("| client | serial p50 µs | p99 µs | p50 vs raw | calls/s (64 callers) | vs raw | vs rmcp | peak RSS MiB |".into());
        lines.push("|---|---|---|---|---|---|---|---|".into());
        for client in CLIENTS {
            let p50 = per(client, "serial_p50_us");
            let p99 = per(client, "serial_p99_us");
            let tput = per(client, "concurrent_calls_per_s");
            let rss = per(client, "rss_peak_kb");
            let r_lat = ratio(&p50, &raw_p50);
            let r_tput = ratio(&tput, &raw_tput);
            let r_rmcp = ratio(&tput, &rmcp_tput);
            lines.push(format!(
                "| {} | {:.1} [{:.1}] | {:.1} [{:.1}] | {:.2}× [{:.2}×] | {:.0}k [{:.0}k] | {:.2}× [{:.2}×] | {:.1}× [{:.1}×] | {:.1} |",
                label(client),
                median(&p50),
                min(&p50),
                median(&p99),
                min(&p99),
                median(&r_lat),
                min(&r_lat),
                median(&tput) / 1e3,
                max(&tput) / 1e3,
                median(&r_tput),
                max(&r_tput),
                median(&r_rmcp),
                max(&r_rmcp),
                median(&rss) / 1024.0,
            ));
            let key = client.replace('-', "_");
            put(&format!("stdio_{key}_serial_p50_us"), median(&p50), 2);
            put(&format!("stdio_{key}_serial_p50_us_best"), min(&p50), 2);
            put(&format!("stdio_{key}_serial_p99_us"), median(&p99), 2);
            put(&format!("stdio_{key}_calls_per_s"), median(&tput), 0);
            put(&format!("stdio_{key}_calls_per_s_best"), max(&tput), 0);
            put(
                &format!("stdio_{key}_peak_rss_bytes"),
                median(&rss) * 1024.0,
                0,
            );
            if client == "ours" {
                put("serial_p50_ratio_vs_raw", median(&r_lat), 3);
                put("serial_p50_ratio_vs_raw_best", min(&r_lat), 3);
                put("concurrent_throughput_ratio_vs_raw", median(&r_tput), 3);
                put("concurrent_throughput_ratio_vs_raw_best", max(&r_tput), 3);
                put("concurrent_throughput_ratio_vs_rmcp", median(&r_rmcp), 3);
                put("concurrent_throughput_ratio_vs_rmcp_best", max(&r_rmcp), 3);
            }
            if client == "ours-sup" {
                put("serial_p50_ratio_vs_raw_via_supervisor", median(&r_lat), 3);
                put(
                    "concurrent_throughput_ratio_vs_raw_via_supervisor",
                    median(&r_tput),
                    3,
                );
            }
            if client == "rmcp" {
                put("rmcp_serial_p50_ratio_vs_raw", median(&r_lat), 3);
                put(
                    "rmcp_concurrent_throughput_ratio_vs_raw",
                    median(&r_tput),
                    3,
                );
            }
        }
        lines.push(String::new());

        // ---- HTTP
        let hv = |key: &str| -> Vec<f64> {
            http.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
                .unwrap_or_default()
        };
        lines.push(format!(
            "### Streamable HTTP, serial ({} calls × {} repetitions; median [best])\n",
            num(http, "calls"),
            num(http, "reps")
        ));
        lines.push("| answers | raw awc p50 µs | ours p50 µs | ours p99 µs | ratio |".into());
        lines.push("|---|---|---|---|---|".into());
        let mut worst = f64::NAN;
        for mode in ["json", "sse"] {
            let raw = hv(&format!("{mode}_raw_p50_us"));
            let ours = hv(&format!("{mode}_ours_p50_us"));
            let ours99 = hv(&format!("{mode}_ours_p99_us"));
            let r = ratio(&ours, &raw);
            lines.push(format!(
                "| {} | {:.0} [{:.0}] | {:.0} [{:.0}] | {:.0} | {:.2}× [{:.2}×] |",
                mode.to_uppercase(),
                median(&raw),
                min(&raw),
                median(&ours),
                min(&ours),
                median(&ours99),
                median(&r),
                min(&r)
            ));
            put(&format!("http_{mode}_raw_p50_us"), median(&raw), 1);
            put(&format!("http_{mode}_ours_p50_us"), median(&ours), 1);
            put(
                &format!("http_{mode}_serial_p50_ratio_vs_raw"),
                median(&r),
                3,
            );
            worst = worst.max(median(&r));
        }
        put("http_serial_p50_ratio_vs_raw", worst, 3);
        lines.push(String::new());

        // ---- recovery
        let cold = num(recovery, "cold_start_ms_median");
        let rec = num(recovery, "recovery_ms_median");
        lines.push(format!(
            "### Recovery after kill -9 (median of {} kills)\n",
            num(recovery, "kills")
        ));
        let ready = num(recovery, "kill_to_ready_ms_median");
        lines.push("A call every 10 ms; kill -9 at a random phase of it. The first successful call is the first one made after the kill (calls in flight at the kill are answered `outcome_unknown`), so it includes a wait of 0-10 ms for the caller's next tick.\n".into());
        lines.push("| cold start (spawn → initialize answer) | kill → Ready | kill → first successful call | difference to cold start |".into());
        lines.push("|---|---|---|---|".into());
        lines.push(format!(
            "| {cold:.1} ms | {ready:.1} ms | {rec:.1} ms | {:.1} ms |\n",
            rec - cold
        ));
        put("kill_to_ready_ms", ready, 2);
        put("cold_start_ms", cold, 2);
        put("recovery_ms", rec, 2);
        put("recovery_ms_over_cold_start", rec - cold, 2);

        // ---- scale and herd
        let n = num(scale, "servers");
        lines.push(format!(
            "### {n} servers over HTTP against one test server\n"
        ));
        lines.push("| figure | value |".into());
        lines.push("|---|---|".into());
        let single = num(scale, "single_start_ms_median");
        let all = num(scale, "all_ready_ms");
        let rss = num(scale, "rss_bytes_per_server");
        let status = num(scale, "status_all_ms_median");
        let peak_j = num(scale, "herd_peak_jitter");
        let peak_n = num(scale, "herd_peak_no_jitter");
        let again_j = num(scale, "herd_all_ready_ms_jitter");
        let again_n = num(scale, "herd_all_ready_ms_no_jitter");
        for (name, value) in [
            (
                "one server: start → Ready".to_owned(),
                format!("{single:.1} ms"),
            ),
            (
                format!("{n} servers: start → all Ready"),
                format!("{all:.0} ms ({:.1}× one server)", all / single),
            ),
            (
                "CPU used until all Ready: client / test server".to_owned(),
                format!(
                    "{:.0} ms / {:.0} ms",
                    num(scale, "all_ready_client_cpu_ms"),
                    num(scale, "all_ready_server_cpu_ms")
                ),
            ),
            (
                "RSS growth per supervised server".to_owned(),
                format!("{:.1} KiB", rss / 1024.0),
            ),
            (
                format!("`GetStatus::all()` for {n}"),
                format!("{status:.2} ms"),
            ),
            (
                "herd: most initialize POSTs in 100 ms, jitter on / off".to_owned(),
                format!("{peak_j:.0} / {peak_n:.0} ({:.2}×)", peak_j / peak_n),
            ),
            (
                "herd: sessions forgotten → all Ready again, jitter on / off".to_owned(),
                format!("{again_j:.0} ms / {again_n:.0} ms"),
            ),
        ] {
            lines.push(format!("| {name} | {value} |"));
        }
        lines.push(String::new());
        put("scale_servers", n, 0);
        put("single_start_ms", single, 2);
        put("scale_all_ready_ms", all, 1);
        put("scale_ready_ratio_vs_single", all / single, 3);
        put("rss_bytes_per_server", rss, 0);
        put("status_all_ms", status, 3);
        put("herd_peak_jitter", peak_j, 0);
        put("herd_peak_no_jitter", peak_n, 0);
        put("herd_peak_ratio_jitter_vs_none", peak_j / peak_n, 3);
        put("herd_all_ready_ms", again_j, 1);
        put("herd_all_ready_ms_no_jitter", again_n, 1);

        s.insert(
            "mode".into(),
            json!(if plan.quick { "quick" } else { "full" }),
        );
        s.insert("pinned".into(), json!(plan.pin));
        s.insert("machine".into(), json!(machine));
        lines.push(format!(
            "Machine: {machine}. Reproduce: `cargo bench --bench overhead`{}.",
            if plan.pin { " -- --pin" } else { "" }
        ));
        Report { summary: s, lines }
    }

    fn table(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

fn label(client: &str) -> &'static str {
    match client {
        "raw" => "raw (hand-written tokio)",
        "ours" => "ours: `CallTool` → `ServerActor`",
        "ours-sup" => "ours: `CallTool` → `Supervisor`",
        "ours-call" => "ours: `Call` → `ServerActor`",
        "rmcp" => "rmcp 3.11 `call_tool`",
        _ => "?",
    }
}

// ================================================================================= children

fn child(args: &[String]) {
    let arg = |i: usize| -> usize {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("child argument {i} missing in {args:?}"))
    };
    let system = actix::System::new();
    let result = match args.first().map(String::as_str) {
        Some("stdio") => {
            let client = args.get(1).expect("client name").clone();
            system.block_on(stdio_child(&client, arg(2), arg(3), arg(4), arg(5)))
        }
        Some("http") => system.block_on(http_child(arg(1), arg(2))),
        Some("recovery") => system.block_on(recovery_child(arg(1))),
        Some("scale") => system.block_on(scale_child(arg(1))),
        Some("http-server") => {
            system.block_on(http_server_child());
            return;
        }
        other => panic!("unknown child {other:?}"),
    };
    println!("RESULT {result}");
}

fn status_kb(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time (user + system, all threads) of a process so far, in ms (10 ms resolution).
fn cpu_ms(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the parenthesised command: state is #3, utime #14, stime #15.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(u), Some(s)) => (u + s) * 10.0, // USER_HZ is 100 on Linux
        _ => f64::NAN,
    }
}

fn rss_kb() -> u64 {
    status_kb("/proc/self/status", "VmRSS:").expect("VmRSS in /proc/self/status")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `n` calls one after the other; latencies in µs, sorted.
async fn serial<F, Fut>(n: usize, call: &F) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call().await;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    lat.sort_by(f64::total_cmp);
    lat
}

/// `total` calls by `callers` concurrent tasks on this thread; calls per second.
async fn concurrent<F, Fut>(total: usize, callers: usize, call: Rc<F>) -> f64
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let per = total / callers;
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let call = call.clone();
            tokio::task::spawn_local(async move {
                for _ in 0..per {
                    call().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a concurrent caller panicked");
    }
    (per * callers) as f64 / start.elapsed().as_secs_f64()
}

/// Warm-up, serial, concurrent: the same for every client.
async fn workload<F, Fut>(
    call: F,
    serial_n: usize,
    concurrent_n: usize,
    callers: usize,
    warmup: usize,
) -> (Vec<f64>, f64)
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let call = Rc::new(call);
    serial(warmup, &*call).await;
    concurrent(warmup.max(callers), callers, call.clone()).await;
    let lat = serial(serial_n, &*call).await;
    let tput = concurrent(concurrent_n, callers, call).await;
    (lat, tput)
}

/// `result.content[0].text` (without `Value::pointer`, which allocates per segment).
fn echo_text(result: &Value) -> Option<&Value> {
    result.get("content")?.get(0)?.get("text")
}

fn check_text(text: Option<&str>) {
    assert_eq!(text, Some(TEXT), "the echo came back wrong");
}

/// Checks a typed tool result: its first content block is the echoed text.
fn check_result(result: &rmcp::model::CallToolResult) {
    check_text(
        result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str()),
    );
}

/// A supervisor of one server, and that server's actor once it is Ready.
async fn supervise_one(config: ServerConfig) -> (Addr<Supervisor>, Addr<ServerActor>) {
    let name = config.name().to_owned();
    let sup = Supervisor::builder()
        .server(config)
        .start()
        .expect("start the supervisor");
    let addr = sup
        .send(GetServer(name))
        .await
        .expect("supervisor alive")
        .expect("server configured");
    wait_ready(&addr, Duration::from_secs(10)).await;
    (sup, addr)
}

async fn stdio_child(
    client: &str,
    serial_n: usize,
    concurrent_n: usize,
    callers: usize,
    warmup: usize,
) -> Value {
    let rss_start = rss_kb();
    let (lat, tput) = match client {
        "raw" => {
            let raw = Rc::new(RawClient::start().await);
            let call = move || {
                let raw = raw.clone();
                async move { raw.echo().await }
            };
            workload(call, serial_n, concurrent_n, callers, warmup).await
        }
        "ours" | "ours-sup" | "ours-call" => {
            let (sup, addr) = supervise_one(ServerConfig::stdio("echo", ECHO_BIN)).await;
            let out = match client {
                "ours" => {
                    let call = move || {
                        let sent = addr.send(CallTool::new("echo", "echo", json!({"text": TEXT})));
                        async move {
                            let result = sent.await.expect("actor alive").expect("echo call");
                            check_result(&result);
                        }
                    };
                    workload(call, serial_n, concurrent_n, callers, warmup).await
                }
                "ours-sup" => {
                    let sup = sup.clone();
                    let call = move || {
                        let sent = sup.send(CallTool::new("echo", "echo", json!({"text": TEXT})));
                        async move {
                            let result = sent.await.expect("supervisor alive").expect("echo call");
                            check_result(&result);
                        }
                    };
                    workload(call, serial_n, concurrent_n, callers, warmup).await
                }
                _ => {
                    let call = move || {
                        let sent = addr.send(Call::new(
                            "echo",
                            "tools/call",
                            Some(json!({"name": "echo", "arguments": {"text": TEXT}})),
                        ));
                        async move {
                            let result = sent.await.expect("actor alive").expect("echo call");
                            check_text(echo_text(&result).and_then(Value::as_str));
                        }
                    };
                    workload(call, serial_n, concurrent_n, callers, warmup).await
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;
            out
        }
        "rmcp" => {
            use rmcp::model::CallToolRequestParams;
            use rmcp::transport::TokioChildProcess;
            use rmcp::ServiceExt;
            let transport = TokioChildProcess::new(tokio::process::Command::new(ECHO_BIN))
                .expect("spawn the echo server for rmcp");
            let client = Arc::new(().serve(transport).await.expect("rmcp initialize"));
            let args = json!({"text": TEXT})
                .as_object()
                .cloned()
                .expect("an object");
            let call = move || {
                let client = client.clone();
                let args = args.clone();
                async move {
                    let params = CallToolRequestParams::new("echo").with_arguments(args);
                    let result = client.call_tool(params).await.expect("rmcp call_tool");
                    check_result(&result);
                }
            };
            workload(call, serial_n, concurrent_n, callers, warmup).await
        }
        other => panic!("unknown client {other}"),
    };
    let peak = status_kb("/proc/self/status", "VmHWM:").unwrap_or(0);
    json!({
        "client": client,
        "serial_calls": lat.len(),
        "serial_p50_us": percentile(&lat, 0.5),
        "serial_p99_us": percentile(&lat, 0.99),
        "serial_mean_us": lat.iter().sum::<f64>() / lat.len().max(1) as f64,
        "concurrent_calls_per_s": tput,
        "rss_start_kb": rss_start,
        "rss_peak_kb": peak,
    })
}

async fn wait_ready(addr: &Addr<ServerActor>, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let status = addr
            .send(GetStatus::all())
            .await
            .expect("actor alive")
            .expect("status");
        if status.first().is_some_and(|s| s.state.is_ready()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "server not Ready within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

// ------------------------------------------------------------------------------- raw client

#[derive(Serialize)]
struct RawRequest<'a, P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct EchoParams<'a> {
    name: &'a str,
    arguments: EchoArgs<'a>,
}

#[derive(Serialize)]
struct EchoArgs<'a> {
    text: &'a str,
}

#[derive(Deserialize)]
struct RawResponse {
    id: Option<u64>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// The practical limit of JSON-RPC over a pipe: serialize each request with serde_json into
/// one buffer, one writer task that writes whatever is buffered in one syscall, one reader
/// task that parses each line and hands it to its caller through a oneshot channel.
struct RawClient {
    out: Rc<RefCell<Vec<u8>>>,
    wake: Rc<Notify>,
    pending: Rc<RefCell<HashMap<u64, oneshot::Sender<RawResponse>>>>,
    next_id: Cell<u64>,
    _child: tokio::process::Child,
}

impl RawClient {
    async fn start() -> RawClient {
        let mut child = tokio::process::Command::new(ECHO_BIN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the echo server");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let out = Rc::new(RefCell::new(Vec::with_capacity(64 * 1024)));
        let wake = Rc::new(Notify::new());
        let pending: Rc<RefCell<HashMap<u64, oneshot::Sender<RawResponse>>>> = Rc::default();
        {
            let (out, wake) = (out.clone(), wake.clone());
            tokio::task::spawn_local(async move {
                let mut batch = Vec::with_capacity(64 * 1024);
                loop {
                    wake.notified().await;
                    std::mem::swap(&mut batch, &mut *out.borrow_mut());
                    if batch.is_empty() {
                        continue;
                    }
                    if stdin.write_all(&batch).await.is_err() {
                        return;
                    }
                    batch.clear();
                }
            });
        }
        {
            let pending = pending.clone();
            tokio::task::spawn_local(async move {
                let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
                let mut line = Vec::with_capacity(4096);
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let response: RawResponse =
                        serde_json::from_slice(&line).expect("the echo server answers JSON-RPC");
                    let waiter = response.id.and_then(|id| pending.borrow_mut().remove(&id));
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(response);
                    }
                }
            });
        }
        let client = RawClient {
            out,
            wake,
            pending,
            next_id: Cell::new(0),
            _child: child,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-bench", "version": "0"},
                }),
            )
            .await;
        assert!(init.result.is_some(), "initialize failed");
        client.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn write(&self, message: &impl Serialize) {
        let mut out = self.out.borrow_mut();
        serde_json::to_writer(&mut *out, message).expect("serialize a request");
        out.push(b'\n');
        drop(out);
        self.wake.notify_one();
    }

    async fn request<P: Serialize>(&self, method: &str, params: P) -> RawResponse {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        self.write(&RawRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        });
        rx.await.expect("the echo server went away")
    }

    async fn echo(&self) {
        let params = EchoParams {
            name: "echo",
            arguments: EchoArgs { text: TEXT },
        };
        let response = self.request("tools/call", params).await;
        assert!(response.error.is_none(), "echo failed");
        check_text(
            response
                .result
                .as_ref()
                .and_then(echo_text)
                .and_then(Value::as_str),
        );
    }
}

// ------------------------------------------------------------------------------------- HTTP

/// A raw Streamable HTTP client: one awc POST per call, the answer read to its end.
struct RawHttp {
    client: awc::Client,
    url: String,
    session: String,
    next_id: Cell<u64>,
}

impl RawHttp {
    async fn start(url: &str) -> RawHttp {
        let client = awc::Client::default();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-bench", "version": "0"}}});
        let response = client
            .post(url)
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("content-type", "application/json"))
            .send_body(init.to_string())
            .await
            .expect("POST initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let raw = RawHttp {
            client,
            url: url.to_owned(),
            session,
            next_id: Cell::new(1),
        };
        let mut response = raw
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .await;
        let _ = response.body().await;
        raw
    }

    async fn post(&self, body: String) -> awc::ClientResponse {
        self.client
            .post(&self.url)
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("content-type", "application/json"))
            .insert_header(("mcp-session-id", self.session.as_str()))
            .insert_header(("mcp-protocol-version", "2025-11-25"))
            .send_body(body)
            .await
            .expect("POST")
    }

    async fn echo(&self) {
        use futures_util::StreamExt;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let body = serde_json::to_string(&RawRequest {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params: EchoParams {
                name: "echo",
                arguments: EchoArgs { text: TEXT },
            },
        })
        .expect("serialize");
        let mut response = self.post(body).await;
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let answer: RawResponse = if sse {
            let mut buf: Vec<u8> = Vec::new();
            let mut answer = None;
            // Read until the response, like any client that wants its answer now. (Reading on to
            // the end of the stream, to keep the connection, costs a delayed ACK: ~40 ms.)
            while answer.is_none() {
                let Some(chunk) = response.next().await else {
                    break;
                };
                buf.extend_from_slice(&chunk.expect("SSE chunk"));
                while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
                    for line in buf[..end].split(|b| *b == b'\n') {
                        if let Some(data) = line.strip_prefix(b"data: ") {
                            if data.is_empty() {
                                continue;
                            }
                            let message: RawResponse =
                                serde_json::from_slice(data).expect("SSE data is JSON-RPC");
                            if message.id == Some(id) {
                                answer = Some(message);
                            }
                        }
                    }
                    buf.drain(..end + 2);
                }
            }
            answer.expect("the SSE stream carried the response")
        } else {
            let body = response.body().await.expect("JSON body");
            serde_json::from_slice(&body).expect("JSON-RPC body")
        };
        check_text(
            answer
                .result
                .as_ref()
                .and_then(echo_text)
                .and_then(Value::as_str),
        );
    }
}

async fn http_child(calls: usize, reps: usize) -> Value {
    let server = http_server::TestHttpServer::start().await;
    let faults = server.faults();
    let raw = Rc::new(RawHttp::start(&server.url()).await);
    let (sup, addr) = supervise_one(ServerConfig::http("h", server.url())).await;
    let ours = move || {
        let sent = addr.send(CallTool::new("h", "echo", json!({"text": TEXT})));
        async move {
            let result = sent.await.expect("actor alive").expect("echo call");
            check_result(&result);
        }
    };
    let raw_call = move || {
        let raw = raw.clone();
        async move { raw.echo().await }
    };
    let mut out = serde_json::Map::new();
    out.insert("calls".into(), json!(calls));
    out.insert("reps".into(), json!(reps));
    let warmup = (calls / 10).max(50);
    for rep in 0..reps {
        for mode in ["json", "sse"] {
            faults.json_responses(mode == "json");
            // Alternate which client goes first.
            let order = if rep % 2 == 0 {
                ["raw", "ours"]
            } else {
                ["ours", "raw"]
            };
            for client in order {
                let lat = if client == "raw" {
                    serial(warmup, &raw_call).await;
                    serial(calls, &raw_call).await
                } else {
                    serial(warmup, &ours).await;
                    serial(calls, &ours).await
                };
                for (suffix, p) in [("p50", 0.5), ("p99", 0.99)] {
                    let key = format!("{mode}_{client}_{suffix}_us");
                    let entry = out.entry(key).or_insert_with(|| json!([]));
                    if let Value::Array(a) = entry {
                        a.push(json!(percentile(&lat, p)));
                    }
                }
                eprintln!(
                    "  http rep {rep} {mode} {client:<4} p50 {:>7.1} µs",
                    percentile(&lat, 0.5)
                );
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;
    server.stop().await;
    Value::Object(out)
}

// --------------------------------------------------------------------------------- recovery

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

async fn recovery_child(kills: usize) -> Value {
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

// ------------------------------------------------------------------------------ scale, herd

/// Which servers are Ready, from the supervisor's events.
#[derive(Default)]
struct Board {
    ready: HashSet<String>,
    /// Transitions to Ready, per name prefix.
    ready_events: HashMap<String, usize>,
    /// When the latest transition to Ready was seen.
    last_ready: Option<Instant>,
}

struct Watcher {
    board: Rc<RefCell<Board>>,
    changed: Rc<Notify>,
}

impl Actor for Watcher {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Watcher {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        if let ServerEvent::StateChanged { server, state, .. } = event {
            let mut board = self.board.borrow_mut();
            if state.is_ready() {
                let prefix: String = server.chars().take_while(|c| c.is_alphabetic()).collect();
                *board.ready_events.entry(prefix).or_default() += 1;
                board.ready.insert(server);
                board.last_ready = Some(Instant::now());
            } else {
                board.ready.remove(&server);
            }
            self.changed.notify_waiters();
        }
    }
}

impl Watcher {
    /// Waits until `done(board)` holds; false after `limit`.
    async fn until(
        board: &Rc<RefCell<Board>>,
        changed: &Rc<Notify>,
        limit: Duration,
        done: impl Fn(&Board) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = changed.notified();
            if done(&board.borrow()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return done(&board.borrow());
            }
        }
    }
}

/// The test server in a process of its own, driven through its stdin.
struct ServerProcess {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl ServerProcess {
    async fn start() -> (ServerProcess, u16) {
        let exe = std::env::current_exe().expect("current_exe");
        let mut child = tokio::process::Command::new(exe)
            .args(["--child", "http-server"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the test server process");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut server = ServerProcess {
            child,
            stdin,
            lines: tokio::io::BufReader::new(stdout).lines(),
        };
        let first = server.read().await;
        let port = first
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .expect("the server process prints its port");
        (server, port)
    }

    async fn read(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the server process answers")
            .expect("read from the server process")
            .expect("the server process is running")
    }

    async fn send(&mut self, cmd: &str) {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write to the server process");
    }

    async fn command(&mut self, cmd: &str) -> String {
        self.send(cmd).await;
        self.read().await
    }

    /// CPU time the server process has used so far, in ms.
    fn cpu_ms(&self) -> f64 {
        self.child
            .id()
            .map_or(f64::NAN, |pid| cpu_ms(&pid.to_string()))
    }
}

/// The test server's process: `forget` (drop all sessions; start counting initialize POSTs),
/// `herd` (answer `<peak in any 100 ms window> <total>` since `forget`), `quit`.
async fn http_server_child() {
    let server = http_server::TestHttpServer::start().await;
    println!("port {}", server.port());
    let _ = std::io::stdout().flush();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let stats = server.stats();
    let faults = server.faults();
    let samples: Rc<RefCell<Vec<(f64, usize)>>> = Rc::default();
    let sampling = Rc::new(Cell::new(false));
    while let Some(cmd) = rx.recv().await {
        match cmd.trim() {
            "forget" => {
                let base = stats.posts("initialize");
                samples.borrow_mut().clear();
                sampling.set(true);
                let (samples, sampling, stats) = (samples.clone(), sampling.clone(), stats.clone());
                let t0 = Instant::now();
                tokio::task::spawn_local(async move {
                    let mut tick = tokio::time::interval(Duration::from_millis(2));
                    // Bounded: at most two minutes of samples.
                    while sampling.get() && t0.elapsed() < Duration::from_secs(120) {
                        tick.tick().await;
                        let n = stats.posts("initialize") - base;
                        samples
                            .borrow_mut()
                            .push((t0.elapsed().as_secs_f64() * 1e3, n));
                    }
                });
                faults.forget_sessions(http_server::SessionGone::NotFound);
                println!("ok");
            }
            "herd" => {
                sampling.set(false);
                let samples = samples.borrow();
                let mut peak = 0;
                let mut j = 0;
                for (i, (t, c)) in samples.iter().enumerate() {
                    j = j.max(i);
                    while j + 1 < samples.len() && samples[j + 1].0 <= t + 100.0 {
                        j += 1;
                    }
                    peak = peak.max(samples[j].1 - c);
                }
                let total = samples.last().map_or(0, |s| s.1);
                println!("herd {peak} {total}");
            }
            "quit" => break,
            other => println!("unknown command {other}"),
        }
        let _ = std::io::stdout().flush();
    }
    server.stop().await;
}

async fn scale_child(n: usize) -> Value {
    let (mut server, port) = ServerProcess::start().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let board: Rc<RefCell<Board>> = Rc::default();
    let changed = Rc::new(Notify::new());
    let watcher = Watcher {
        board: board.clone(),
        changed: changed.clone(),
    }
    .start()
    .recipient::<ServerEvent>();

    // One server's start, five times.
    let mut singles = Vec::new();
    for i in 0..5 {
        let name = format!("single{i}");
        let start = Instant::now();
        let sup = Supervisor::builder()
            .server(ServerConfig::http(name.clone(), url.clone()))
            .subscriber(watcher.clone())
            .start()
            .expect("start the supervisor");
        let ok = Watcher::until(&board, &changed, Duration::from_secs(30), |b| {
            b.ready.contains(&name)
        })
        .await;
        assert!(ok, "one HTTP server not Ready within 30 s");
        singles.push(start.elapsed().as_secs_f64() * 1e3);
        let _ = tokio::time::timeout(Duration::from_secs(10), sup.send(Shutdown)).await;
    }
    eprintln!("  one server Ready in {singles:.1?} ms");

    let with_jitter = fleet(
        n,
        "j",
        &url,
        Settings::default(),
        &watcher,
        &board,
        &changed,
        &mut server,
    )
    .await;
    let mut no_jitter_settings = Settings::default();
    no_jitter_settings.reconnect_backoff = no_jitter_settings.reconnect_backoff.jitter(0.0);
    let no_jitter = fleet(
        n,
        "n",
        &url,
        no_jitter_settings,
        &watcher,
        &board,
        &changed,
        &mut server,
    )
    .await;
    server.send("quit").await;
    let _ = tokio::time::timeout(Duration::from_secs(5), server.child.wait()).await;
    json!({
        "servers": n,
        "single_start_ms": singles,
        "single_start_ms_median": median(&singles),
        "all_ready_ms": with_jitter.ready_ms,
        "all_ready_ms_no_jitter_fleet": no_jitter.ready_ms,
        "rss_bytes_per_server": with_jitter.rss_bytes_per_server,
        "all_ready_client_cpu_ms": with_jitter.client_cpu_ms,
        "all_ready_server_cpu_ms": with_jitter.server_cpu_ms,
        "status_all_ms_median": with_jitter.status_ms,
        "herd_peak_jitter": with_jitter.herd_peak,
        "herd_total_jitter": with_jitter.herd_total,
        "herd_all_ready_ms_jitter": with_jitter.again_ms,
        "herd_peak_no_jitter": no_jitter.herd_peak,
        "herd_total_no_jitter": no_jitter.herd_total,
        "herd_all_ready_ms_no_jitter": no_jitter.again_ms,
    })
}

struct Fleet {
    ready_ms: f64,
    rss_bytes_per_server: f64,
    status_ms: f64,
    herd_peak: f64,
    herd_total: f64,
    again_ms: f64,
    /// CPU time used from start to all Ready, by this process and by the test server's.
    client_cpu_ms: f64,
    server_cpu_ms: f64,
}

#[allow(clippy::too_many_arguments)]
async fn fleet(
    n: usize,
    prefix: &str,
    url: &str,
    settings: Settings,
    watcher: &Recipient<ServerEvent>,
    board: &Rc<RefCell<Board>>,
    changed: &Rc<Notify>,
    server: &mut ServerProcess,
) -> Fleet {
    let ready_count = |b: &Board| b.ready.iter().filter(|s| s.starts_with(prefix)).count();
    let configs: Vec<_> = (0..n)
        .map(|i| ServerConfig::http(format!("{prefix}{i:05}"), url))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_before = rss_kb();
    let (client_cpu0, server_cpu0) = (cpu_ms("self"), server.cpu_ms());
    let start = Instant::now();
    let sup = Supervisor::builder()
        .servers(configs)
        .settings(settings)
        .subscriber(watcher.clone())
        .start()
        .expect("start the supervisor");
    let ok = Watcher::until(board, changed, Duration::from_secs(120), |b| {
        ready_count(b) >= n
    })
    .await;
    let ready_ms = start.elapsed().as_secs_f64() * 1e3;
    let client_cpu_ms = cpu_ms("self") - client_cpu0;
    let server_cpu_ms = server.cpu_ms() - server_cpu0;
    assert!(
        ok,
        "only {} of {n} servers Ready within 120 s",
        ready_count(&board.borrow())
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = rss_kb();
    let rss_bytes_per_server = (rss_after.saturating_sub(rss_before) * 1024) as f64 / n as f64;

    let mut status_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let all = sup
            .send(GetStatus::all())
            .await
            .expect("supervisor alive")
            .expect("status");
        status_times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(all.len(), n, "GetStatus::all() answers for every server");
    }

    // The herd: the server forgets every session; every client notices (its GET stream ends,
    // the next request gets 404) and initializes a new one.
    let before = board
        .borrow()
        .ready_events
        .get(prefix)
        .copied()
        .unwrap_or(0);
    let ack = server.command("forget").await;
    assert_eq!(ack, "ok", "the server process forgot its sessions");
    let forgot = Instant::now();
    let (client_cpu1, server_cpu1) = (cpu_ms("self"), server.cpu_ms());
    let ok = Watcher::until(board, changed, Duration::from_secs(90), |b| {
        b.ready_events.get(prefix).copied().unwrap_or(0) - before >= n && ready_count(b) >= n
    })
    .await;
    let again_ms = forgot.elapsed().as_secs_f64() * 1e3;
    let herd_client_cpu_ms = cpu_ms("self") - client_cpu1;
    let herd_server_cpu_ms = server.cpu_ms() - server_cpu1;
    if !ok {
        eprintln!("  herd ({prefix}): not all Ready again within 90 s");
    }
    // Let late attempts arrive, then read the counts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let herd = server.command("herd").await;
    let mut parts = herd
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().unwrap_or(f64::NAN));
    let (herd_peak, herd_total) = (
        parts.next().unwrap_or(f64::NAN),
        parts.next().unwrap_or(f64::NAN),
    );
    eprintln!(
        "  fleet {prefix}: {n} Ready in {ready_ms:.0} ms (CPU: client {client_cpu_ms:.0} ms, server {server_cpu_ms:.0} ms); {:.1} KiB/server; status {:.2} ms; herd peak {herd_peak} of {herd_total}, all Ready again in {again_ms:.0} ms (CPU: client {herd_client_cpu_ms:.0} ms, server {herd_server_cpu_ms:.0} ms)",
        rss_bytes_per_server / 1024.0,
        median(&status_times)
    );
    let _ = tokio::time::timeout(Duration::from_secs(30), sup.send(Shutdown)).await;
    Fleet {
        ready_ms,
        rss_bytes_per_server,
        status_ms: median(&status_times),
        herd_peak,
        herd_total,
        again_ms: if ok { again_ms } else { f64::NAN },
        client_cpu_ms,
        server_cpu_ms,
    }
}
