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
//! 2. Streamable HTTP against the in-tree test server (`tests/common/http_server/mod.rs`, in the
//!    same child process, on its own worker thread): `ours` vs a raw awc POST loop, with JSON and
//!    with SSE answers.
//! 3. Recovery: kill -9 the stdio server while a caller makes a call every 10 ms; time from the
//!    kill to the first successful call, against the server's own cold start (spawn →
//!    initialize answer) measured in the same run.
//! 4. Scale and herd: N `ServerActor`s over HTTP against one test server (in a separate
//!    process, so that the client's RSS is the client's): time to all Ready vs one server,
//!    RSS growth per server, `GetStatus` for all; then the server forgets every session and we
//!    count reconnect attempts (initialize POSTs) per 100 ms window, with the default jitter and
//!    with `reconnect_backoff.jitter(0.0)`, and the time until all are Ready again. Then 100
//!    stdio servers are stopped at once, ours (`Shutdown`) against rmcp's (`cancel`); the
//!    child `--child stdio-stop` measures that alone.
//! 5. Tasks: 1,000 concurrent `CallTool`s against `mcp-echo-server` in its tasks mode, each a
//!    task the client polls (`tasks/get`): polls per task, requests per second at the server
//!    against the sum of the poll intervals it asked for, RSS per task in flight, and the time
//!    from a task's completion to its caller's answer; then the same with the server telling
//!    of each completion (`notifications/tasks` on a listen naming the tasks).
//! 7. A fleet (with `--features postgres` and `MCP_SUPERVISOR_TEST_POSTGRES`): three replica
//!    processes sharing a `PostgresTaskStore`: takeover time after a kill -9, tasks started
//!    per second across the three, and the database's load per task in flight.
//!
//! Prints a table and writes `target/bench/summary.json` (and `target/bench/table.md`).
//! `--pin` runs every child under `taskset -c 0`, so the client and its server share a core.
//!
//! # Layout
//!
//! This file holds the arguments and the order of the run: which children are started, with
//! what, and which report sections follow. Each measured thing is a module with its child's
//! side (the measurement, answering one JSON `RESULT`) and its part of the report:
//! [`stdio`] (one file per client), [`http`], [`recovery`], [`replacement`] (a restart without
//! a failed call), [`scale`] and [`herd`] (which runs
//! on scale's fleets, in scale's child, and adds its rows to scale's table), [`tasks`] (many
//! tasks polled at once), `fleet` (replicas sharing PostgreSQL). Shared
//! rooms: [`plan`] (the sizes of a quick and a full run), [`child`] (re-executing this binary),
//! [`workload`] (serial and concurrent load), [`echo`] (the call every client makes),
//! [`supervised`] (our runtime for one server), [`watcher`] (Ready, from the supervisor's
//! events), [`server_process`] (the HTTP test server in a process of its own), [`stats`],
//! [`procfs`] (RSS, CPU, the machine) and [`report`] (the table and `summary.json`).

#[path = "../../tests/common/http_server/mod.rs"]
mod http_server;

mod child;
mod echo;
#[cfg(feature = "postgres")]
mod fleet;
mod herd;
mod http;
mod plan;
mod procfs;
mod recovery;
mod replacement;
mod report;
mod scale;
mod server_process;
mod stats;
mod stdio;
mod supervised;
mod tasks;
mod watcher;
mod workload;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::plan::Plan;
use crate::report::{num, Report};
use crate::workload::Load;

/// The report's line for a run without the fleet.
const FLEET_NEEDS: &str = "The fleet (replicas sharing PostgreSQL) needs `--features postgres` and a database in `MCP_SUPERVISOR_TEST_POSTGRES` (`source .ci/postgres` starts one).\n";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child_main(&args[i + 1..]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let pin = args.iter().any(|a| a == "--pin");
    orchestrate(&Plan::new(quick, pin));
}

fn orchestrate(plan: &Plan) {
    let started = Instant::now();
    let machine = procfs::machine();
    println!(
        "mcp-supervisor overhead benchmark ({} mode{}) on {machine}",
        if plan.quick { "quick" } else { "full" },
        if plan.pin { ", pinned to one core" } else { "" }
    );

    // 1. stdio, interleaved.
    let mut stdio: HashMap<&str, Vec<Value>> = HashMap::new();
    for rep in 0..plan.reps {
        let mut order = stdio::CLIENTS.to_vec();
        order.rotate_left(rep % stdio::CLIENTS.len());
        for client in order {
            let result = child::run(
                plan,
                &[
                    "stdio",
                    client,
                    &plan.serial.to_string(),
                    &plan.concurrent.to_string(),
                    &stdio::CALLERS.to_string(),
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
    let http = child::run(
        plan,
        &[
            "http",
            &plan.http_serial.to_string(),
            &plan.http_reps.to_string(),
        ],
        Duration::from_secs(300),
    );

    // 3. Recovery.
    let recovery = child::run(
        plan,
        &["recovery", &plan.kills.to_string()],
        Duration::from_secs(300),
    );

    // 4. Replacement: restarts under a caller.
    let replacement = child::run(
        plan,
        &["replacement", &plan.kills.to_string()],
        Duration::from_secs(300),
    );

    // 5. Scale and herd: one child, since the herd is set off on the fleet that scale started.
    let scale = child::run(
        plan,
        &["scale", &plan.scale.to_string()],
        Duration::from_secs(400),
    );

    // 6. Tasks: many at once, polled; then told of by the server.
    let task_args = |what: &'static str| {
        [
            what.to_owned(),
            plan.tasks.to_string(),
            plan.task_ms.to_string(),
            plan.task_poll_ms.to_string(),
        ]
    };
    let tasks = child::run(
        plan,
        &task_args("tasks").each_ref().map(String::as_str),
        Duration::from_secs(300),
    );
    let tasks_notified = child::run(
        plan,
        &task_args("tasks-notified").each_ref().map(String::as_str),
        Duration::from_secs(300),
    );

    // 7. A fleet sharing PostgreSQL (feature `postgres`, and a database to share).
    #[cfg(feature = "postgres")]
    let fleet = std::env::var_os("MCP_SUPERVISOR_TEST_POSTGRES").map(|_| {
        child::run(
            plan,
            &[
                "fleet",
                &plan.fleet_kills.to_string(),
                &plan.fleet_kill_tasks.to_string(),
                &plan.fleet_tasks.to_string(),
                &plan.fleet_window_ms.to_string(),
            ],
            Duration::from_secs(600),
        )
    });

    let mut report = Report::default();
    stdio::report(&mut report, plan, &stdio);
    http::report(&mut report, &http);
    recovery::report(&mut report, &recovery);
    replacement::report(&mut report, &replacement);
    scale::report(&mut report, &scale); // with the herd's rows
    tasks::report(&mut report, &tasks);
    tasks::report_notified(&mut report, &tasks_notified);
    #[cfg(feature = "postgres")]
    match &fleet {
        Some(fleet) => fleet::report(&mut report, fleet),
        None => report.line(FLEET_NEEDS),
    }
    #[cfg(not(feature = "postgres"))]
    report.line(FLEET_NEEDS);
    report.footer(plan, &machine);
    report.write(started);
}

/// The child's side of `--child <what> args...`: runs one measurement and prints its result.
fn child_main(args: &[String]) {
    let arg = |i: usize| -> usize {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("child argument {i} missing in {args:?}"))
    };
    let system = actix::System::new();
    let result = match args.first().map(String::as_str) {
        Some("stdio") => {
            let client = args.get(1).expect("client name").clone();
            let load = Load {
                serial: arg(2),
                concurrent: arg(3),
                callers: arg(4),
                warmup: arg(5),
            };
            system.block_on(stdio::child(&client, &load))
        }
        Some("http") => system.block_on(http::child(arg(1), arg(2))),
        Some("recovery") => system.block_on(recovery::child(arg(1))),
        Some("replacement") => system.block_on(replacement::child(arg(1))),
        Some("scale") => system.block_on(scale::child(arg(1))),
        Some(what @ ("tasks" | "tasks-notified")) => system.block_on(tasks::child(
            arg(1),
            arg(2) as u64,
            arg(3) as u64,
            what == "tasks-notified",
        )),
        Some("stdio-stop") => system.block_on(scale::stop_child()),
        #[cfg(feature = "postgres")]
        Some("fleet") => system.block_on(fleet::child(arg(1), arg(2), arg(3), arg(4) as u64)),
        #[cfg(feature = "postgres")]
        Some("fleet-replica") => {
            let text = |i: usize| args.get(i).expect("a replica's argument").as_str();
            system.block_on(fleet::replica(text(1), text(2), text(3)));
            return;
        }
        Some("http-server") => {
            system.block_on(server_process::child());
            return;
        }
        other => panic!("unknown child {other:?}"),
    };
    child::print_result(&result);
}
