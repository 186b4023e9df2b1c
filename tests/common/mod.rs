//! Helpers shared by the integration test crates (`tests/it/`, `tests/interop/`, `tests/soak/`,
//! `tests/mcpctl/`, `tests/browser.rs`): the demo server's config, an event collector that
//! tests can await, and process-table checks; the in-tree HTTP, legacy SSE and OAuth test servers; log
//! capture per test (`logs`) and tests that run in a process of their own (`alone`).
#![allow(dead_code)]

pub mod alone;
pub mod cutting_proxy;
pub mod header_limit;
pub mod http_server;
pub mod interop;
pub mod logs;
pub mod oauth_server;
pub mod rerun;
pub mod sse_server;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{
    GetStatus, Progress, ServerConfig, ServerEvent, ServerState, ServerStatus, Settings,
};
use tokio::sync::Notify;

thread_local! {
    /// The protocol era the demo servers of the test running on this thread speak.
    static ERA: std::cell::Cell<&'static str> = const { std::cell::Cell::new("legacy") };
}

/// Runs `test` with the demo servers it starts speaking `era` (`legacy` or `modern`). The
/// `in_both_eras!` tests use it: the fault tests run once per era, unchanged.
pub async fn with_era<F: std::future::Future>(era: &'static str, test: F) -> F::Output {
    ERA.with(|e| e.set(era));
    test.await
}

/// Declares each of the named async functions as two tests, `<name>::legacy` and
/// `<name>::modern`: the demo servers it starts (`demo()`) speak that era, and nothing else
/// about the test changes. A test that must know its era asks [`era`].
#[macro_export]
macro_rules! in_both_eras {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[actix::test]
            async fn legacy() {
                $crate::common::with_era("legacy", super::$name()).await
            }

            #[actix::test]
            async fn modern() {
                $crate::common::with_era("modern", super::$name()).await
            }
        }
    )*};
}

/// The in-tree HTTP test server, speaking the era of the running test (session era only, or
/// 2026-07-28 only).
pub async fn http_server() -> http_server::TestHttpServer {
    http_server::TestHttpServer::start_with(http_era()).await
}

/// The same, on `port` (to bring "the same server" back).
pub async fn http_server_on(port: u16) -> http_server::TestHttpServer {
    http_server::TestHttpServer::start_on_with(port, http_era()).await
}

fn http_era() -> http_server::Era {
    match era() {
        "modern" => http_server::Era::Modern,
        _ => http_server::Era::Legacy,
    }
}

/// The era the demo servers of the running test speak: `legacy` or `modern`.
pub fn era() -> &'static str {
    ERA.with(|e| e.get())
}

/// The in-tree demo server, with a private event log and counter file in `dir`, speaking the
/// era of the running test (the session era unless `with_era` says otherwise); [`demo_in`]
/// picks one.
pub fn demo(name: &str, dir: &Path) -> ServerConfig {
    demo_in(ERA.with(|e| e.get()), name, dir)
}

/// The demo server speaking `era`: `legacy`, `modern` (2026-07-28 only) or `dual` (both, as
/// the current SDKs' servers do).
pub fn demo_in(era: &str, name: &str, dir: &Path) -> ServerConfig {
    ServerConfig::stdio(name, env!("CARGO_BIN_EXE_mcp-demo-server"))
        .env("DEMO_ERA", era)
        .env(
            "DEMO_EVENT_LOG",
            dir.join(format!("{name}.log")).display().to_string(),
        )
        .env(
            "DEMO_COUNTER_FILE",
            dir.join(format!("{name}.count")).display().to_string(),
        )
        .env(
            "DEMO_START_COUNT_FILE",
            dir.join(format!("{name}.starts")).display().to_string(),
        )
}

/// The scriptable hostile server (`src/bin/mcp-hostile-server.rs`) running `script`, speaking
/// the era of the running test (`HOSTILE_ERA`).
pub fn hostile(name: &str, script: serde_json::Value) -> ServerConfig {
    ServerConfig::stdio(name, env!("CARGO_BIN_EXE_mcp-hostile-server"))
        .env("HOSTILE_SCRIPT", script.to_string())
        .env("HOSTILE_ERA", era())
}

/// Settings that keep the tests quick: a short ping timeout and shutdown grace.
pub fn quick_settings() -> Settings {
    let mut s = Settings::default();
    s.ping_timeout = Duration::from_millis(500);
    s.shutdown_grace = Duration::from_millis(500);
    s.connect_timeout = Duration::from_secs(20);
    s
}

/// Starts a supervisor of `configs` with `settings`, and an event collector subscribed from
/// the start.
pub fn start_supervisor(
    settings: Settings,
    configs: impl IntoIterator<Item = ServerConfig>,
) -> (Addr<mcp_supervisor::Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let sup = mcp_supervisor::Supervisor::builder()
        .settings(settings)
        .servers(configs)
        .subscriber(recipient)
        .start()
        .expect("a valid configuration");
    (sup, events)
}

/// One server's status.
pub async fn status(sup: &Addr<mcp_supervisor::Supervisor>, server: &str) -> ServerStatus {
    sup.send(GetStatus::server(server))
        .await
        .expect("the supervisor is running")
        .expect("the server exists")
        .remove(0)
}

/// The text of a tool result's first content block.
pub fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap_or_default()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A recipient for a call's progress, and the channel that yields each notification.
pub fn progress_channel() -> (
    Recipient<Progress>,
    tokio::sync::mpsc::UnboundedReceiver<Progress>,
) {
    struct Sink(tokio::sync::mpsc::UnboundedSender<Progress>);
    impl Actor for Sink {
        type Context = Context<Self>;
    }
    impl Handler<Progress> for Sink {
        type Result = ();
        fn handle(&mut self, p: Progress, _: &mut Context<Self>) {
            let _ = self.0.send(p);
        }
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (Sink(tx).start().recipient(), rx)
}

/// The next progress notification, within 10 s.
pub async fn next_progress(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Progress>) -> Progress {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("progress within 10 s")
        .expect("the progress sink is alive")
}

/// The lines of a demo server's event log, without the `modern ` its lines of the 2026-07-28
/// revision begin with, so that a test reads the same log in either era.
pub fn event_log(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("{name}.log")))
        .unwrap_or_default()
        .lines()
        .map(|l| l.strip_prefix("modern ").unwrap_or(l).to_owned())
        .collect()
}

pub fn counter_file(dir: &Path, name: &str) -> u64 {
    std::fs::read_to_string(dir.join(format!("{name}.count")))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Collects every event; tests await the ones they need.
#[derive(Clone, Default)]
pub struct Events {
    seen: Arc<Mutex<Vec<ServerEvent>>>,
    changed: Arc<Notify>,
}

struct Collector(Events);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Collector {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        self.0.seen.lock().unwrap().push(event);
        self.0.changed.notify_waiters();
    }
}

impl Events {
    /// A collector actor's recipient, and the handle to read what it got.
    pub fn start() -> (Self, Recipient<ServerEvent>) {
        let events = Events::default();
        let addr = Collector(events.clone()).start();
        (events, addr.recipient())
    }

    pub fn all(&self) -> Vec<ServerEvent> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `count` events (counted from the start) match `pred`; panics after `limit`.
    pub async fn wait_count(
        &self,
        what: &str,
        count: usize,
        limit: Duration,
        pred: impl Fn(&ServerEvent) -> bool,
    ) -> ServerEvent {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            {
                let seen = self.seen.lock().unwrap();
                let matching: Vec<_> = seen.iter().filter(|e| pred(e)).collect();
                if matching.len() >= count {
                    return matching[count - 1].clone();
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "timed out after {limit:?} waiting for {what} (#{count}); events: {:#?}",
                    self.all()
                );
            }
        }
    }

    /// Waits for the `count`-th time `server` became Ready.
    pub async fn ready(&self, server: &str, count: usize) {
        let server = server.to_owned();
        self.wait_count(
            &format!("{server} ready"),
            count,
            Duration::from_secs(30),
            move |e| state_of(e, &server).is_some_and(|s| *s == ServerState::Ready),
        )
        .await;
    }

    /// Waits for the `count`-th time `server` entered a state named `state`.
    pub async fn state(&self, server: &str, state: &str, count: usize) -> ServerEvent {
        let server = server.to_owned();
        self.wait_count(
            &format!("{server} {state}"),
            count,
            Duration::from_secs(30),
            move |e| state_of(e, &server).is_some_and(|s| s.name() == state),
        )
        .await
    }

    /// Waits (up to `limit`) for a `resources/updated` notification for `uri`.
    pub async fn resource_updated(&self, uri: &str, limit: Duration) {
        let uri = uri.to_owned();
        self.wait_count(
            &format!("resources/updated for {uri}"),
            1,
            limit,
            move |e| matches!(e, ServerEvent::ResourceUpdated { uri: u, .. } if *u == uri),
        )
        .await;
    }

    /// The names of `server`'s states, in the order it entered them.
    pub fn states(&self, server: &str) -> Vec<&'static str> {
        self.all()
            .iter()
            .filter_map(|e| state_of(e, server).map(ServerState::name))
            .collect()
    }

    /// Messages of `server`'s state changes, in order.
    pub fn messages(&self, server: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter_map(|e| match e {
                ServerEvent::StateChanged {
                    server: s, message, ..
                } if s == server => Some(message),
                _ => None,
            })
            .collect()
    }
}

pub fn state_of<'a>(event: &'a ServerEvent, server: &str) -> Option<&'a ServerState> {
    match event {
        ServerEvent::StateChanged {
            server: s, state, ..
        } if s == server => Some(state),
        _ => None,
    }
}

/// The running processes whose environment holds `var=value` (a test's mark on the processes
/// it starts, found in `/proc`).
pub fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .filter(|pid| is_running(*pid))
        .collect()
}

/// Whether a process runs (a zombie does not count: it has exited).
pub fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state is the first field after the parenthesised command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Waits (bounded) for a killed process to disappear: the kernel takes a moment.
pub async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if !is_running(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    !is_running(pid)
}

/// Waits (bounded, 10 s) for a condition that no event announces, e.g. a counter of the test
/// server.
pub async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Like [`until`], for a condition that takes a round trip to check.
pub async fn until_async<F, Fut>(cond: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond().await {
        assert!(
            std::time::Instant::now() < deadline,
            "condition not met within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn kill(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("kill");
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

pub fn path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().to_path_buf()
}

/// Appends one row (scenario, result, figure) to the table `.ci/interop` prints at the end.
pub fn record(scenario: &str, result: &str, figure: &str) {
    use std::io::Write;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/interop");
    let _ = std::fs::create_dir_all(&dir);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("results.tsv"));
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{scenario}\t{result}\t{figure}");
    }
}

/// Two demo servers (`beta` before `alpha`, so that a view must sort them) and one, `broken`,
/// that writes HTML to stderr and fails to start: what the operators' views are tested with.
pub async fn three_servers() -> (Addr<mcp_supervisor::Supervisor>, Events, tempfile::TempDir) {
    let dir = tempdir();
    let mut settings = quick_settings();
    settings.max_connect_retries = 0;
    settings.revive = false;
    let broken = ServerConfig::stdio("broken", "/bin/sh")
        .args(["-c", "echo '<img src=x onerror=alert(1)>' >&2; exit 3"]);
    let (sup, events) = start_supervisor(
        settings,
        [demo("beta", dir.path()), demo("alpha", dir.path()), broken],
    );
    events.ready("alpha", 1).await;
    events.ready("beta", 1).await;
    events.state("broken", "failed", 1).await;
    (sup, events, dir)
}
