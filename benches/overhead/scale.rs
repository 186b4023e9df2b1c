//! Scale: N `ServerActor`s over HTTP against one test server in a process of its own: time to
//! all Ready against one server's start, CPU until then, RSS growth per server and
//! `GetStatus::all()`; then, on the same fleet, the [`herd`](crate::herd). Twice: with the
//! default jitter and with `reconnect_backoff.jitter(0.0)`. Then the time to stop
//! [`STDIO_STOP_SERVERS`] stdio servers at once, ours against rmcp's. Also the report's scale
//! section.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{GetStatus, ServerConfig, ServerEvent, Settings, Shutdown, Supervisor};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::echo::ECHO_BIN;
use crate::herd::{self, Herd};
use crate::procfs::{cpu_ms, rss_kb};
use crate::report::{num, Report};
use crate::server_process::ServerProcess;
use crate::stats::median;
use crate::watcher::{Board, Watcher};

/// The child's side: five single starts, then a fleet of `n` with jitter and one without.
pub(crate) async fn child(n: usize) -> Value {
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

    let (ours, theirs) = stdio_stops(&watcher, &board, &changed).await;
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
        "herd_peak_jitter": with_jitter.herd.peak,
        "herd_total_jitter": with_jitter.herd.total,
        "herd_all_ready_ms_jitter": with_jitter.herd.all_ready_again_ms(),
        "herd_peak_no_jitter": no_jitter.herd.peak,
        "herd_total_no_jitter": no_jitter.herd.total,
        "herd_all_ready_ms_no_jitter": no_jitter.herd.all_ready_again_ms(),
        "stdio_stop_servers": STDIO_STOP_SERVERS,
        "stdio_stop_ms": ours,
        "stdio_stop_ms_median": median(&ours),
        "stdio_stop_ms_rmcp": theirs,
        "stdio_stop_ms_rmcp_median": median(&theirs),
    })
}

/// The child's side of `--child stdio-stop`: [`stdio_stops`] alone, to look at shutdown
/// without the HTTP fleets.
pub(crate) async fn stop_child() -> Value {
    let board: Rc<RefCell<Board>> = Rc::default();
    let changed = Rc::new(Notify::new());
    let watcher = Watcher {
        board: board.clone(),
        changed: changed.clone(),
    }
    .start()
    .recipient::<ServerEvent>();
    let (ours, theirs) = stdio_stops(&watcher, &board, &changed).await;
    json!({
        "stdio_stop_servers": STDIO_STOP_SERVERS,
        "stdio_stop_ms": ours,
        "stdio_stop_ms_median": median(&ours),
        "stdio_stop_ms_rmcp": theirs,
        "stdio_stop_ms_rmcp_median": median(&theirs),
    })
}

/// Times stopping stdio servers, ours and rmcp's in turn, [`STDIO_STOP_REPS`] times each.
async fn stdio_stops(
    watcher: &Recipient<ServerEvent>,
    board: &Rc<RefCell<Board>>,
    changed: &Rc<Notify>,
) -> (Vec<f64>, Vec<f64>) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for rep in 0..STDIO_STOP_REPS {
        ours.push(stop_ours(rep, watcher, board, changed).await);
        theirs.push(stop_rmcp().await);
    }
    eprintln!(
        "  stopping {STDIO_STOP_SERVERS} stdio servers: ours {ours:.1?} ms, rmcp {theirs:.1?} ms"
    );
    (ours, theirs)
}

/// How many stdio servers are stopped at once, whatever the size of the HTTP fleet: each is a
/// process of its own.
const STDIO_STOP_SERVERS: usize = 100;
/// How many times each client starts and stops them.
const STDIO_STOP_REPS: usize = 3;

/// Starts [`STDIO_STOP_SERVERS`] echo servers under one supervisor and times their `Shutdown`,
/// which answers once every process is gone (reaped, and its strays killed).
async fn stop_ours(
    rep: usize,
    watcher: &Recipient<ServerEvent>,
    board: &Rc<RefCell<Board>>,
    changed: &Rc<Notify>,
) -> f64 {
    // Letters only: the board counts Ready transitions by a name's alphabetic prefix.
    let prefix = format!("stop{}", char::from(b'a' + rep as u8));
    let configs: Vec<_> = (0..STDIO_STOP_SERVERS)
        .map(|i| ServerConfig::stdio(format!("{prefix}{i:05}"), ECHO_BIN))
        .collect();
    let sup = Supervisor::builder()
        .servers(configs)
        .subscriber(watcher.clone())
        .start()
        .expect("start the supervisor");
    let ok = Watcher::until(board, changed, Duration::from_secs(60), |b| {
        b.ready_count(&prefix) >= STDIO_STOP_SERVERS
    })
    .await;
    assert!(
        ok,
        "{STDIO_STOP_SERVERS} stdio servers not Ready within 60 s"
    );
    settle().await;
    let start = Instant::now();
    tokio::time::timeout(Duration::from_secs(60), sup.send(Shutdown))
        .await
        .expect("the stdio servers stop within 60 s")
        .expect("supervisor alive");
    start.elapsed().as_secs_f64() * 1e3
}

/// The same with rmcp: as many clients over its child-process transport, cancelled at once;
/// each cancel returns once its transport has closed stdin and the process has exited.
async fn stop_rmcp() -> f64 {
    let clients = futures_util::future::join_all((0..STDIO_STOP_SERVERS).map(|_| async {
        let transport = TokioChildProcess::new(tokio::process::Command::new(ECHO_BIN))
            .expect("spawn the echo server for rmcp");
        ().serve(transport).await.expect("rmcp initialize")
    }))
    .await;
    settle().await;
    let start = Instant::now();
    futures_util::future::join_all(clients.into_iter().map(|client| client.cancel())).await;
    start.elapsed().as_secs_f64() * 1e3
}

/// Lets the processes just started finish starting (and the machine calm down) before a stop
/// is timed.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// What one fleet did.
struct Fleet {
    ready_ms: f64,
    rss_bytes_per_server: f64,
    status_ms: f64,
    herd: Herd,
    /// CPU time used from start to all Ready, by this process and by the test server's.
    client_cpu_ms: f64,
    server_cpu_ms: f64,
}

/// Starts `n` servers named `prefix...` under one supervisor, measures them Ready, sets off
/// the herd on them, and shuts them down.
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
        b.ready_count(prefix) >= n
    })
    .await;
    let ready_ms = start.elapsed().as_secs_f64() * 1e3;
    let client_cpu_ms = cpu_ms("self") - client_cpu0;
    let server_cpu_ms = server.cpu_ms() - server_cpu0;
    assert!(
        ok,
        "only {} of {n} servers Ready within 120 s",
        board.borrow().ready_count(prefix)
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

    let herd = herd::herd(n, prefix, board, changed, server).await;
    eprintln!(
        "  fleet {prefix}: {n} Ready in {ready_ms:.0} ms (CPU: client {client_cpu_ms:.0} ms, server {server_cpu_ms:.0} ms); {:.1} KiB/server; status {:.2} ms; herd peak {} of {}, all Ready again in {:.0} ms (CPU: client {:.0} ms, server {:.0} ms)",
        rss_bytes_per_server / 1024.0,
        median(&status_times),
        herd.peak,
        herd.total,
        herd.again_ms,
        herd.client_cpu_ms,
        herd.server_cpu_ms,
    );
    let _ = tokio::time::timeout(Duration::from_secs(30), sup.send(Shutdown)).await;
    Fleet {
        ready_ms,
        rss_bytes_per_server,
        status_ms: median(&status_times),
        herd,
        client_cpu_ms,
        server_cpu_ms,
    }
}

/// Writes the scale table (with the herd's rows) and its summary keys from the child's result.
pub(crate) fn report(report: &mut Report, scale: &Value) {
    let n = num(scale, "servers");
    report.line(format!(
        "### {n} servers over HTTP against one test server\n"
    ));
    report.line("| figure | value |");
    report.line("|---|---|");
    let single = num(scale, "single_start_ms_median");
    let all = num(scale, "all_ready_ms");
    let rss = num(scale, "rss_bytes_per_server");
    let status = num(scale, "status_all_ms_median");
    let herd = herd::Figures::of(scale);
    let rows = [
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
    ];
    for (name, value) in rows.into_iter().chain(herd.rows()) {
        report.line(format!("| {name} | {value} |"));
    }
    report.line(String::new());
    report.put("scale_servers", n, 0);
    report.put("single_start_ms", single, 2);
    report.put("scale_all_ready_ms", all, 1);
    report.put("scale_ready_ratio_vs_single", all / single, 3);
    report.put("rss_bytes_per_server", rss, 0);
    report.put("status_all_ms", status, 3);
    herd.summarize(report);

    let stop_n = num(scale, "stdio_stop_servers");
    let ours = num(scale, "stdio_stop_ms_median");
    let rmcp = num(scale, "stdio_stop_ms_rmcp_median");
    report.line(format!("### Stopping {stop_n} stdio servers at once\n"));
    report.line("| client | median of 3 |");
    report.line("|---|---|");
    report.line(format!(
        "| ours (`Shutdown`) | {ours:.1} ms ({:.2}× rmcp) |",
        ours / rmcp
    ));
    report.line(format!("| rmcp (`cancel`) | {rmcp:.1} ms |"));
    report.line(String::new());
    report.put("stdio_stop_ms", ours, 2);
    report.put("stdio_stop_ms_rmcp", rmcp, 2);
    report.put("stdio_stop_ratio_vs_rmcp", ours / rmcp, 3);
}
