//! A fleet (issue 21's benchmark, feature `postgres`): three replica processes, each this
//! binary again (`--child fleet-replica`) with its own `Supervisor`, sharing one
//! `PostgresTaskStore` (the database `MCP_SUPERVISOR_TEST_POSTGRES` names; `.ci/postgres`
//! starts one) in front of the in-tree HTTP test server, which runs in this child and records,
//! per task, when each replica's run of polls began (`X-Replica`).
//!
//! - Takeover after a kill: a replica starts `k` tasks, polls each, and is killed with SIGKILL;
//!   the time from the kill to the first poll of each task by another replica, p50/p99 over
//!   every task of every round (a fresh replica replaces the killed one each round). It is
//!   bounded by the lease (1 s here): the lease left at the kill, then the next tending (a
//!   third of a lease) of a replica that finds it lapsed.
//! - Tasks started per second across the three: each starts `n` tasks, 32 at a time, all
//!   three at once; from the commands to the last start answered.
//! - The database's load per task in flight: with all those tasks running (and polled by their
//!   holders), the transactions committed per second (`pg_stat_database.xact_commit`) and the
//!   CPU of the PostgreSQL server's processes, over a window, less the same with no task, over
//!   the tasks in flight. With leases, a replica renews all of one server's tasks in one
//!   statement, so most of the load is per replica, not per task.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_supervisor::tasks::PostgresTaskStore;
use mcp_supervisor::{GetServer, ServerConfig, StartTask, Supervisor, TaskStart};
use serde_json::{json, Value};

use crate::http_server::{Era, TestHttpServer};
use crate::report::{num, Report};
use crate::stats::percentile;
use crate::supervised::wait_ready;

/// The lease every replica holds its tasks by.
const LEASE: Duration = Duration::from_secs(1);
/// Tasks a replica starts at once.
const STARTS_IN_FLIGHT: usize = 32;
/// What starts each line a replica writes.
const MARK: &str = "FLEET ";

fn target() -> String {
    std::env::var("MCP_SUPERVISOR_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "the fleet benchmark needs a PostgreSQL server: set MCP_SUPERVISOR_TEST_POSTGRES to \
             its connection string (`source .ci/postgres` starts one)"
        )
    })
}

// The replica's side.

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{MARK}{line}");
    let _ = out.flush();
}

/// Plays replica `name` of the fleet on `url`, its tasks in `schema`: says `READY`, then for
/// `start <n> <ms>` starts `n` tasks of `job` running `ms` each, [`STARTS_IN_FLIGHT`] at a
/// time, saying `STARTED <id>` for each (`FAILED <error code>` for one that failed) and
/// `STARTED-ALL` after the last. Ends with its stdin.
pub(crate) async fn replica(url: &str, schema: &str, name: &str) {
    let store = PostgresTaskStore::connect_in(&target(), schema)
        .expect("the fleet's database")
        .replica(name)
        .expect("a replica name")
        .lease_time(LEASE);
    let sup = Supervisor::builder()
        .server(
            ServerConfig::http("web", url)
                .header("x-replica", name)
                .call_timeout(Duration::from_secs(60)),
        )
        .task_store(Arc::new(store))
        .start()
        .expect("a supervisor");
    let addr = sup
        .send(GetServer("web".into()))
        .await
        .expect("supervisor alive")
        .expect("server configured");
    wait_ready(&addr, Duration::from_secs(30)).await;
    say("READY");
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["start", n, ms] = words.as_slice() else {
            panic!("a replica's command: {line}")
        };
        let (n, ms): (usize, u64) = (n.parse().expect("n"), ms.parse().expect("ms"));
        let mut started = 0;
        while started < n {
            let batch = STARTS_IN_FLIGHT.min(n - started);
            let starts = (0..batch).map(|_| {
                addr.send(
                    StartTask::new("web", "job", json!({"ms": ms, "text": "built"}))
                        .timeout(Duration::from_secs(60)),
                )
            });
            for answer in futures_util::future::join_all(starts).await {
                match answer.expect("actor alive") {
                    Ok(TaskStart::Running(handle)) => say(&format!("STARTED {}", handle.task_id)),
                    Ok(other) => panic!("a task: {other:?}"),
                    Err(e) => {
                        eprintln!("  {name}: a start failed: {e}");
                        say(&format!("FAILED {}", e.code()));
                    }
                }
            }
            started += batch;
        }
        say("STARTED-ALL");
    }
    std::process::exit(0);
}

// The measuring child's side.

/// A replica process and its lines.
struct Replica {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Replica {
    /// Starts replica `name` and waits for it to be Ready.
    async fn start(url: &str, schema: &str, name: &str) -> Replica {
        let exe = std::env::current_exe().expect("current_exe");
        let mut child = Command::new(exe)
            .args(["--child", "fleet-replica", url, schema, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn a replica");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(said) = line.strip_prefix(MARK) {
                    if tx.send(said.to_owned()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut replica = Replica {
            name: name.to_owned(),
            child,
            stdin,
            lines,
        };
        assert_eq!(replica.next().await, "READY");
        replica
    }

    async fn next(&mut self) -> String {
        match tokio::time::timeout(Duration::from_secs(120), self.lines.recv()).await {
            Ok(Some(line)) => line,
            other => panic!("no line from replica {} ({other:?})", self.name),
        }
    }

    fn tell(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("the replica reads its stdin");
        self.stdin.flush().expect("flush");
    }

    /// The ids of the tasks its last `start` started, once all are, and how many failed.
    async fn started(&mut self) -> (Vec<String>, usize) {
        let (mut ids, mut failed) = (Vec::new(), 0);
        loop {
            let line = self.next().await;
            if line == "STARTED-ALL" {
                return (ids, failed);
            }
            match line.strip_prefix("STARTED ") {
                Some(id) => ids.push(id.to_owned()),
                None if line.starts_with("FAILED ") => failed += 1,
                None => panic!("{line}"),
            }
        }
    }

    fn kill(mut self) -> Instant {
        self.child.kill().expect("kill");
        let at = Instant::now();
        let _ = self.child.wait();
        at
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `done` holds (the server's records are no event), 60 s at most.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "not within 60 s: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The database's committed transactions so far, and its server processes' CPU time (ns, per
/// process id).
fn database_load() -> (f64, HashMap<String, f64>) {
    let mut client = postgres::Client::connect(&target(), postgres::NoTls).expect("connect");
    let commits: i64 = client
        .query_one(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .expect("pg_stat_database")
        .get(0);
    let mut cpu = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim() == "postgres" {
            cpu.insert(pid.clone(), crate::procfs::cpu_ns(&pid));
        }
    }
    (commits as f64, cpu)
}

/// Transactions per second and database CPU (ms per s) over `window`.
async fn database_rate(window: Duration) -> (f64, f64) {
    let before = tokio::task::spawn_blocking(database_load)
        .await
        .expect("load");
    tokio::time::sleep(window).await;
    let after = tokio::task::spawn_blocking(database_load)
        .await
        .expect("load");
    let secs = window.as_secs_f64();
    let cpu_ns: f64 = after
        .1
        .iter()
        .filter_map(|(pid, ns)| before.1.get(pid).map(|b| (ns - b).max(0.0)))
        .sum();
    ((after.0 - before.0) / secs, cpu_ns / 1e6 / secs)
}

/// Measures the fleet: `rounds` kills of a replica holding `k` tasks each, then `n` tasks
/// started by each of three replicas and the database's load with them in flight over
/// `window_ms`.
pub(crate) async fn child(rounds: usize, k: usize, n: usize, window_ms: u64) -> Value {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(100);
    let url = server.url();
    let schema = format!("bench_fleet_{}", std::process::id());
    let mut replicas = Vec::new();
    for name in ["r0", "r1", "r2"] {
        replicas.push(Replica::start(&url, &schema, name).await);
    }

    // 1. Takeover after a kill: every task's, and each kill's median (the tasks of one kill
    // are taken in one or two tendings, so they are not independent samples).
    let mut takeovers_ms = Vec::new();
    let mut per_kill_ms = Vec::new();
    for round in 0..rounds {
        let mut victim = replicas.remove(0);
        victim.tell(&format!("start {k} 10000"));
        let (ids, _) = victim.started().await;
        let name = victim.name.clone();
        until("the victim polls its tasks", || {
            ids.iter()
                .all(|id| server.stats().task_pollers(id) == [name.clone()])
        })
        .await;
        let killed = victim.kill();
        until("every task is polled by another replica", || {
            ids.iter()
                .all(|id| server.stats().task_poller_runs(id).len() >= 2)
        })
        .await;
        let mut this_kill: Vec<f64> = ids
            .iter()
            .map(|id| {
                let runs = server.stats().task_poller_runs(id);
                runs[1].1.duration_since(killed).as_secs_f64() * 1e3
            })
            .collect();
        this_kill.sort_by(f64::total_cmp);
        per_kill_ms.push(percentile(&this_kill, 0.5));
        takeovers_ms.extend(this_kill);
        replicas.push(Replica::start(&url, &schema, &format!("r{}", round + 3)).await);
    }
    takeovers_ms.sort_by(f64::total_cmp);
    eprintln!(
        "  fleet: takeover after kill -9 p50 {:.0} ms p99 {:.0} ms ({} tasks, {rounds} kills, lease {} ms; each kill's median: {per_kill_ms:.0?})",
        percentile(&takeovers_ms, 0.5),
        percentile(&takeovers_ms, 0.99),
        takeovers_ms.len(),
        LEASE.as_millis()
    );

    // 2. Starts across three replicas. The taken-over tasks end first (10 s), so that the
    // load measured below is of these only.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let window = Duration::from_millis(window_ms);
    let (idle_tps, idle_cpu) = database_rate(window).await;
    server.faults().task_poll_ms(1000);
    let began = Instant::now();
    let task_ms = 60_000;
    for replica in &mut replicas {
        replica.tell(&format!("start {n} {task_ms}"));
    }
    let (mut in_flight, mut failed) = (0, 0);
    for replica in &mut replicas {
        let (ids, failures) = replica.started().await;
        in_flight += ids.len();
        failed += failures;
    }
    let start_s = began.elapsed().as_secs_f64();
    let tasks_per_s = in_flight as f64 / start_s;

    // 3. The database's load with them in flight.
    let (busy_tps, busy_cpu) = database_rate(window).await;
    let per_task = |busy: f64, idle: f64| (busy - idle) / in_flight as f64;
    eprintln!(
        "  fleet: {tasks_per_s:.0} tasks/s started by three replicas ({failed} failed); {in_flight} in flight: {busy_tps:.1} transactions/s ({idle_tps:.1} idle), database CPU {busy_cpu:.1} ms/s ({idle_cpu:.1} idle)"
    );
    drop(replicas);
    // The schema's tasks are the run's alone: dropped with it.
    let dropped = schema.clone();
    let _ = tokio::task::spawn_blocking(move || {
        postgres::Client::connect(&target(), postgres::NoTls)
            .and_then(|mut c| c.batch_execute(&format!("DROP SCHEMA \"{dropped}\" CASCADE")))
    })
    .await;
    json!({
        "lease_ms": LEASE.as_millis() as f64,
        "kills": rounds as f64,
        "takeover_tasks": takeovers_ms.len() as f64,
        "takeover_ms_p50": percentile(&takeovers_ms, 0.5),
        "takeover_ms_p99": percentile(&takeovers_ms, 0.99),
        "takeover_ms_max": takeovers_ms.last().copied().unwrap_or(f64::NAN),
        "takeover_ms_per_kill": per_kill_ms,
        "tasks_started": in_flight as f64,
        "starts_failed": failed as f64,
        "tasks_per_s": tasks_per_s,
        "idle_transactions_per_s": idle_tps,
        "busy_transactions_per_s": busy_tps,
        "transactions_per_s_per_task": per_task(busy_tps, idle_tps),
        "idle_db_cpu_ms_per_s": idle_cpu,
        "busy_db_cpu_ms_per_s": busy_cpu,
        "db_cpu_us_per_s_per_task": per_task(busy_cpu, idle_cpu) * 1e3,
    })
}

pub(crate) fn report(report: &mut Report, fleet: &Value) {
    report.line(format!(
        "### A fleet: three replicas sharing PostgreSQL (lease {} ms)\n",
        num(fleet, "lease_ms")
    ));
    report.line(format!(
        "Takeover: from a replica's kill -9 to the first poll of each of its tasks by another replica, over every task (each kill's median: {}). Starts: three replicas at once, 32 starts in flight each. Load: the database with those tasks in flight (each polled every second by its holder), less idle, over the tasks (the CPU of the PostgreSQL processes of this host).\n",
        fleet["takeover_ms_per_kill"]
            .as_array()
            .map(|kills| kills
                .iter()
                .map(|k| format!("{:.0} ms", k.as_f64().unwrap_or(f64::NAN)))
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    ));
    report.line("| takeover p50 | takeover p99 | tasks started/s | in flight (failed starts) | transactions/s per task | database CPU per task |");
    report.line("|---|---|---|---|---|---|");
    report.line(format!(
        "| {:.0} ms | {:.0} ms | {:.0} | {:.0} ({:.0}) | {:.3} | {:.1} µs/s |\n",
        num(fleet, "takeover_ms_p50"),
        num(fleet, "takeover_ms_p99"),
        num(fleet, "tasks_per_s"),
        num(fleet, "tasks_started"),
        num(fleet, "starts_failed"),
        num(fleet, "transactions_per_s_per_task"),
        num(fleet, "db_cpu_us_per_s_per_task"),
    ));
    for (key, digits) in [
        ("takeover_ms_p50", 1),
        ("takeover_ms_p99", 1),
        ("tasks_per_s", 1),
        ("transactions_per_s_per_task", 4),
        ("db_cpu_us_per_s_per_task", 2),
    ] {
        report.put(&format!("fleet_{key}"), num(fleet, key), digits);
    }
}
