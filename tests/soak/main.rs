//! The randomized fault soak (issue 9, "Make the search permanent"): several servers at once,
//! concurrent callers with random deadlines and a mix of calls, random kill -9 / SIGSTOP /
//! HTTP restarts, and a checker over the recorded history of every call.
//!
//! It is `#[ignore]`d (it runs for a minute); CI runs it with
//!
//! ```text
//! MCP_SOAK_SECS=60 cargo test --test soak -- --ignored --nocapture
//! ```
//!
//! Settings (environment):
//! - `MCP_SOAK_SECS` (60): how long calls and faults go on.
//! - `MCP_SOAK_SEED` (random, printed first): every random choice (servers, methods, deadlines,
//!   payloads, faults, pauses) comes from RNGs seeded with it, so a failing run can be replayed;
//!   timing still makes runs differ.
//! - `MCP_SOAK_SLACK_MS` (250): how late after its deadline an answer may come. The README
//!   promises 100 ms; the soak allows more because a 2-core CI machine is busy with the
//!   servers, the callers and a debug build at once. The largest lateness is printed either way.
//! - `MCP_SOAK_CALLERS` (16), `MCP_SOAK_STDIO` (3 demo servers), `MCP_SOAK_HTTP` (1 HTTP test
//!   server), `MCP_SOAK_FAULT_GAP_MS` (2500: gaps between faults are 100 ms up to this),
//!   `MCP_SOAK_READY_SECS` (10: the bound on recovery after the last fault).
//! - `MCP_SOAK_PANICS` (0): the share of faults, in %, that make a server's actor panic
//!   (`InjectPanic`, a test hook, not an outside fault; off by default).
//! - `MCP_SOAK_BACKOFF_CAP_MS` (2000): the reconnect backoff's cap (the default is 30 s; then
//!   raise `MCP_SOAK_READY_SECS` too).
//! - `MCP_SOAK_MAX_RECONNECTS` (unset): reconnect attempts per outage before a server is
//!   `Failed`; with it, the soak checks that Failed servers come back on their own.
//! - `MCP_SOAK_FAULTS` (unset: the usual mix): only these faults, equally often, e.g.
//!   `kill,stop` — of `kill`, `handshake`, `stop`, `restart`, `reconnect`, `remove`, `forget`,
//!   `dropsse`, `slow`, `panic` — to search one family or replay a finding.
//! - `RUST_LOG` (unset): the supervisor's logs, to stderr.
//!
//! The modules: `history` (what is recorded), `callers` (the calls and how their answers are
//! judged), `faults` (the injector), `timeline` (state changes with their times), `shutdown`
//! (the last phase: `Shutdown` under load), `checker` (the promises, over the history; its own
//! tests run in every `cargo test`).

#[path = "../common/mod.rs"]
mod common;

mod callers;
mod checker;
mod faults;
mod history;
mod shutdown;
mod stalls;
mod timeline;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr};
use mcp_supervisor::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use callers::{Ask, Caller, Plan, Target};
use faults::{HttpSlot, Injector};
use history::*;
use shutdown::ShutdownPhase;
use timeline::{Sink, Timeline};

/// The soak's knobs, from the environment.
struct Knobs {
    secs: u64,
    seed: u64,
    slack: Duration,
    callers: usize,
    stdio: usize,
    http: usize,
    fault_gap: Duration,
    ready_bound: Duration,
    panic_percent: u32,
    only: Option<Vec<FaultKind>>,
    max_reconnects: Option<u32>,
    backoff_cap: Duration,
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

impl Knobs {
    fn from_env() -> Knobs {
        Knobs {
            secs: env_u64("MCP_SOAK_SECS", 60),
            seed: env_u64("MCP_SOAK_SEED", rand::random()),
            slack: Duration::from_millis(env_u64("MCP_SOAK_SLACK_MS", 250)),
            callers: env_u64("MCP_SOAK_CALLERS", 16).max(1) as usize,
            stdio: env_u64("MCP_SOAK_STDIO", 3).max(1) as usize,
            http: env_u64("MCP_SOAK_HTTP", 1) as usize,
            fault_gap: Duration::from_millis(env_u64("MCP_SOAK_FAULT_GAP_MS", 2500).max(101)),
            ready_bound: Duration::from_secs(env_u64("MCP_SOAK_READY_SECS", 10)),
            panic_percent: env_u64("MCP_SOAK_PANICS", 0).min(100) as u32,
            backoff_cap: Duration::from_millis(env_u64("MCP_SOAK_BACKOFF_CAP_MS", 2000).max(100)),
            max_reconnects: std::env::var("MCP_SOAK_MAX_RECONNECTS")
                .ok()
                .map(|_| env_u64("MCP_SOAK_MAX_RECONNECTS", 0) as u32),
            only: std::env::var("MCP_SOAK_FAULTS").ok().map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(|k| {
                        FaultKind::ALL
                            .into_iter()
                            .find(|f| f.key() == k)
                            .unwrap_or_else(|| panic!("MCP_SOAK_FAULTS: no fault {k:?}"))
                    })
                    .collect()
            }),
        }
    }
}

/// The supervisor's settings: the tests' quick ones, with the reconnect backoff capped at 2 s
/// (instead of 30 s; `MCP_SOAK_BACKOFF_CAP_MS`) so that the soak's frequent outages do not
/// leave servers waiting out most of the run, and `max_reconnect_attempts` from `MCP_SOAK_MAX_RECONNECTS` (unset: never give
/// up). Everything else is at its default.
fn settings(knobs: &Knobs) -> Settings {
    let mut s = common::quick_settings();
    s.reconnect_backoff = Backoff::new(Duration::from_millis(100), knobs.backoff_cap);
    s.max_reconnect_attempts = knobs.max_reconnects;
    s
}

/// Servers differ, so that more paths are taken: the first of each transport is `trusted` (its
/// read-only tools, echo and slow, are re-sent after a broken connection), the third has room
/// for only 8 calls (`overloaded` beyond), the others are as configured by default.
fn vary(config: ServerConfig, index: usize) -> ServerConfig {
    match index % 3 {
        0 => config.trusted(true),
        2 => config.max_in_flight(8),
        _ => config,
    }
}

/// Whether [`vary`] makes the `index`-th server of its transport `trusted`.
fn trusted(index: usize) -> bool {
    index.is_multiple_of(3)
}

/// An RNG of its own for each actor of the soak, all derived from the seed.
fn rng(seed: u64, stream: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[actix::test]
#[ignore = "a randomized fault soak of a minute: MCP_SOAK_SECS=60 cargo test --test soak -- --ignored --nocapture"]
async fn randomized_fault_soak() {
    let knobs = Knobs::from_env();
    println!(
        "soak: seed {} (replay with MCP_SOAK_SEED={}), {} s, {} callers, {} stdio + {} http servers, slack {} ms",
        knobs.seed, knobs.seed, knobs.secs, knobs.callers, knobs.stdio, knobs.http,
        knobs.slack.as_millis()
    );
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }

    // The fleet.
    let dir = common::tempdir();
    let stdio: Vec<String> = (0..knobs.stdio).map(|i| format!("stdio{i}")).collect();
    let mut http = Vec::new();
    for i in 0..knobs.http {
        http.push(Rc::new(RefCell::new(
            HttpSlot::start(format!("http{i}")).await,
        )));
    }
    let mut configs: Vec<ServerConfig> = stdio
        .iter()
        .enumerate()
        .map(|(i, name)| vary(common::demo(name, dir.path()), i))
        .collect();
    for (i, slot) in http.iter().enumerate() {
        let slot = slot.borrow();
        let url = format!("http://127.0.0.1:{}/mcp", slot.port);
        configs.push(vary(ServerConfig::http(&slot.name, url), i));
    }
    let mut targets: Vec<Target> = stdio
        .iter()
        .enumerate()
        .map(|(i, name)| Target {
            name: name.clone(),
            kind: Kind::Stdio,
            trusted: trusted(i),
        })
        .collect();
    targets.extend(http.iter().enumerate().map(|(i, s)| Target {
        name: s.borrow().name.clone(),
        kind: Kind::Http,
        trusted: trusted(i),
    }));
    let (timeline, recipient) = Timeline::start();
    let sup = Supervisor::builder()
        .settings(settings(&knobs))
        .servers(configs.clone())
        .subscriber(recipient)
        .start()
        .expect("a valid configuration");
    let all_ready = wait_all_ready(&sup, Duration::from_secs(30), Duration::ZERO).await;
    assert!(
        all_ready.is_ok(),
        "the servers did not start: {all_ready:?}"
    );

    // Calls and faults.
    let t0 = Instant::now();
    let load_before = stalls::loadavg();
    let monitors = stalls::Monitors::start(t0);
    let until = t0 + Duration::from_secs(knobs.secs);
    let progress = Sink.start().recipient();
    let callers: Vec<_> = (0..knobs.callers)
        .map(|index| {
            let caller = Caller {
                index,
                sup: sup.clone(),
                targets: targets.clone(),
                rng: rng(knobs.seed, index as u64 + 1),
                t0,
                until,
                progress: progress.clone(),
            };
            actix::spawn(caller.run())
        })
        .collect();
    let injector = Injector {
        sup: sup.clone(),
        stdio: stdio.clone(),
        all: targets.iter().map(|t| t.name.clone()).collect(),
        configs: configs
            .iter()
            .map(|c| (c.name().to_owned(), c.clone()))
            .collect(),
        dir: dir.path().to_path_buf(),
        http: http.clone(),
        rng: rng(knobs.seed, 0),
        t0,
        until,
        gap: Duration::from_millis(100)..knobs.fault_gap,
        panic_percent: knobs.panic_percent,
        only: knobs.only.clone(),
    };
    let injected = injector.run().await;

    // Recovery: every server Ready again, and answering.
    let mut facts = Facts {
        ready_bound: knobs.ready_bound,
        faults_skipped: injected.skipped,
        api_errors: injected.api_errors.clone(),
        ..Facts::default()
    };
    facts.last_fault_end = injected
        .faults
        .iter()
        .map(|f| f.end)
        .max()
        .unwrap_or_default();
    let recovery_from = t0 + facts.last_fault_end;
    // Ready for good: a server may look Ready for a moment before it notices the last fault.
    let bound = knobs.ready_bound.saturating_sub(recovery_from.elapsed());
    match wait_all_ready(&sup, bound, Duration::from_millis(500)).await {
        Ok(since) => facts.all_ready_after = Some(since.saturating_duration_since(recovery_from)),
        Err(states) => facts.not_ready = states,
    }
    let soak_end = Instant::now();
    let mut calls = Vec::new();
    for caller in callers {
        calls.extend(caller.await.expect("a caller task ends"));
    }
    for (seq, target) in targets.iter().enumerate() {
        let probe = Plan {
            id: 998 << 32 | seq as u64,
            caller: 998,
            target: target.clone(),
            ask: Ask::Echo {
                tag: format!("probe:{}", target.name),
                len: 0,
            },
            timeout: Duration::from_secs(5),
            retry: RetryPolicy::Never,
            direct: false,
        };
        let record = callers::perform(&sup, probe, &progress, t0).await;
        if record.outcome != Outcome::Ok {
            facts
                .probe_failures
                .push(format!("{}: {:?}", target.name, record.outcome));
        }
        calls.push(record);
    }

    // The supervisor's own view, then shutdown.
    let statuses = sup
        .send(GetStatus::all())
        .await
        .expect("the supervisor runs")
        .expect("statuses");
    let mut pids: BTreeSet<u32> = injected.pids;
    pids.extend(statuses.iter().filter_map(|s| s.pid));
    facts.shutdown_bound = Duration::from_secs(10);
    let ending = ShutdownPhase {
        sup: sup.clone(),
        targets: &targets,
        dir: dir.path(),
        rng: rng(knobs.seed, u64::from(u32::MAX)),
        t0,
        progress: progress.clone(),
        bound: facts.shutdown_bound,
    }
    .run()
    .await;
    facts.shutdown_took = ending.shutdown_took;
    facts.stopped_at_shutdown = ending.stopped.clone();
    calls.extend(ending.calls);
    for name in &stdio {
        pids.extend(faults::started(&dir.path().join(format!("{name}.log"))));
    }
    facts.pids_seen = pids.len();
    facts.left_running = pids
        .iter()
        .copied()
        .filter(|&p| common::is_running(p))
        .collect();
    // Nothing may stay stopped or running, whatever the checker says.
    for &pid in &facts.left_running {
        common::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
    // (name, counter, echo, slow) runs of each HTTP server, over all its instances.
    let mut http_runs = Vec::new();
    for slot in &http {
        let server = slot.borrow_mut().running.take();
        if let Some(server) = server {
            server.stop().await;
        }
        let slot = slot.borrow();
        let runs = [slot.runs("counter"), slot.runs("echo"), slot.runs("slow")];
        http_runs.push((slot.name.clone(), runs));
    }

    // What the servers counted.
    for target in &targets {
        let status = statuses.iter().find(|s| s.name == target.name);
        // When the server itself could not answer: SIGSTOPped, or (HTTP) not listening.
        let down: Vec<(Duration, Duration)> = injected
            .faults
            .iter()
            .filter(|f| f.target == target.name)
            .filter(|f| {
                matches!(
                    f.kind,
                    FaultKind::Stop | FaultKind::HttpRestart | FaultKind::RemoveAdd
                )
            })
            .map(|f| (f.at, f.end))
            .collect();
        let availability = timeline.availability(&target.name, t0, until, &down);
        let ([executions, echo_runs, slow_runs], counter_file) = match target.kind {
            Kind::Stdio => {
                let log = common::event_log(dir.path(), &target.name);
                let count =
                    |prefix: &str| log.iter().filter(|l| l.starts_with(prefix)).count() as u64;
                (
                    [count("counter "), count("call echo"), count("call slow")],
                    Some(common::counter_file(dir.path(), &target.name)),
                )
            }
            Kind::Http => (
                http_runs
                    .iter()
                    .find(|(n, _)| *n == target.name)
                    .map_or([0; 3], |(_, runs)| *runs),
                None,
            ),
        };
        facts.servers.push(ServerFacts {
            name: target.name.clone(),
            kind: target.kind,
            executions,
            counter_file,
            echo_runs,
            slow_runs,
            ready_fraction: availability.ready,
            ready_while_up: availability.ready_while_up,
            outages: availability.outages,
            reconnects: status.map_or(0, |s| s.counters.reconnects),
            resent: status.map_or(0, |s| s.counters.calls_resent),
            unknown_responses: status.map_or(0, |s| s.counters.unknown_responses),
        });
    }
    facts.faults = injected.faults;
    (facts.loop_stalls, facts.machine_stalls) = monitors.stop();
    facts.load = format!(
        "{load_before} at the start, {} at the end",
        stalls::loadavg()
    );

    calls.sort_by_key(|c| c.start);
    let (violations, figures) = checker::check(&calls, &facts, knobs.slack);
    print_figures(&knobs, &facts, &figures, soak_end - t0);
    print_faults(&facts.faults);
    print_violations(&violations);
    assert!(
        violations.is_empty(),
        "{} broken promises (seed {}: replay with MCP_SOAK_SEED={})",
        violations.len(),
        knobs.seed,
        knobs.seed
    );
}

/// Waits until every server has been Ready for `stable`, or `limit` passes: when they all
/// became Ready, or the states of those that are not.
async fn wait_all_ready(
    sup: &Addr<Supervisor>,
    limit: Duration,
    stable: Duration,
) -> Result<Instant, Vec<String>> {
    let deadline = Instant::now() + limit;
    let mut since: Option<Instant> = None;
    loop {
        let statuses = sup
            .send(GetStatus::all())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        // A stdio server is Ready only with a live process: just after a kill -9 the supervisor
        // may not have noticed yet.
        let not_ready: Vec<String> = statuses
            .iter()
            .filter(|s| !s.state.is_ready() || s.pid.is_some_and(|p| !common::is_running(p)))
            .map(|s| format!("{}: {:?} (pid {:?})", s.name, s.state, s.pid))
            .collect();
        let now = Instant::now();
        if !statuses.is_empty() && not_ready.is_empty() {
            let since = *since.get_or_insert(now);
            if now - since >= stable {
                return Ok(since);
            }
        } else {
            since = None;
        }
        if now >= deadline + stable {
            return Err(not_ready);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn print_figures(knobs: &Knobs, facts: &Facts, figures: &checker::Figures, took: Duration) {
    let rate = figures.calls as f64 / knobs.secs.max(1) as f64;
    println!(
        "soak: seed {}; {} s of calls and faults, {:.1} s in all",
        knobs.seed,
        knobs.secs,
        took.as_secs_f64()
    );
    println!("  calls: {} ({rate:.0}/s)", figures.calls);
    let join = |m: &std::collections::BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("    by method: {}", join(&figures.by_method));
    println!(
        "    by server: {}",
        figures
            .by_server
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  outcomes: {}", join(&figures.outcomes));
    for method in Method::ALL {
        let line: Vec<String> = figures
            .outcomes_by_method
            .iter()
            .filter(|((m, _), _)| *m == method.name())
            .map(|((_, o), n)| format!("{o} {n}"))
            .collect();
        println!("    {}: {}", method.name(), line.join(", "));
    }
    println!(
        "  faults: {} ({} skipped: no process at that moment, or already stopped/down)",
        join(&figures.faults),
        facts.faults_skipped
    );
    println!(
        "  lateness after the bound: max {:.1} ms (slack {} ms), p99 of timeouts {:.1} ms",
        figures.max_lateness_ms,
        knobs.slack.as_millis(),
        figures.p99_timeout_lateness_ms
    );
    if let Some(call) = &figures.max_lateness_call {
        println!("    latest: {call}");
    }
    println!("  counter: executions vs acknowledged (ok) vs in doubt (timeout, outcome_unknown) vs answered as not run:");
    for server in &facts.servers {
        let book = figures
            .counters
            .get(&server.name)
            .cloned()
            .unwrap_or_default();
        let file = server
            .counter_file
            .map(|f| format!(", counter file {f}"))
            .unwrap_or_default();
        println!(
            "    {}: {} executions, {} ok, {} in doubt, {} not run{file}",
            server.name, book.executions, book.acknowledged, book.in_doubt, book.not_run
        );
    }
    println!("  echo and slow: runs on the server vs ok answers vs most sends the calls' policies allow:");
    for ((server, tool), (runs, ok, most)) in &figures.runs {
        println!("    {server} {tool}: {runs} runs, {ok} ok, at most {most}");
    }
    println!("  servers (Ready share of the soak and of the time the server could answer, outages, supervisor's reconnects / re-sent calls / unknown responses):");
    for s in &facts.servers {
        println!(
            "    {} ({:?}): {:.1} % Ready ({:.1} % while up), {} outages, {} reconnects, {} re-sent, {} unknown responses",
            s.name,
            s.kind,
            s.ready_fraction * 100.0,
            s.ready_while_up * 100.0,
            s.outages,
            s.reconnects,
            s.resent,
            s.unknown_responses
        );
    }
    let worst = |stalls: &[stalls::Stall]| {
        stalls
            .iter()
            .map(|s| s.len)
            .max()
            .unwrap_or_default()
            .as_millis()
    };
    println!(
        "  stalls over 40 ms: actix thread {} (worst {} ms), whole process {} (worst {} ms); {} late answers excused by the latter; load {}",
        facts.loop_stalls.len(),
        worst(&facts.loop_stalls),
        facts.machine_stalls.len(),
        worst(&facts.machine_stalls),
        figures.late_excused,
        facts.load
    );
    match facts.all_ready_after {
        Some(t) => println!(
            "  all Ready {:.0} ms after the last fault (bound {:?})",
            t.as_secs_f64() * 1e3,
            facts.ready_bound
        ),
        None => println!(
            "  NOT all Ready {:?} after the last fault: {}",
            facts.ready_bound,
            facts.not_ready.join(", ")
        ),
    }
    println!(
        "  calls in flight at Shutdown: {}; made after it: {}",
        join(&figures.at_shutdown),
        join(&figures.after_shutdown)
    );
    match facts.shutdown_took {
        Some(t) => println!(
            "  Shutdown (with calls in flight, {} SIGSTOPped) answered in {:.0} ms; {} server processes seen, {} left running",
            facts.stopped_at_shutdown.as_ref().map_or("none", |(name, _)| name.as_str()),
            t.as_secs_f64() * 1e3,
            facts.pids_seen,
            facts.left_running.len()
        ),
        None => println!(
            "  Shutdown did NOT answer within {:?}",
            facts.shutdown_bound
        ),
    }
}

fn print_violations(violations: &[checker::Violation]) {
    if violations.is_empty() {
        println!("  no broken promise");
        return;
    }
    let mut by_promise: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for v in violations {
        by_promise.entry(v.promise).or_default().push(&v.detail);
    }
    println!("  BROKEN PROMISES: {}", violations.len());
    for (promise, details) in by_promise {
        println!("    {promise}: {} times", details.len());
        for d in details.iter().take(10) {
            println!("      {d}");
        }
        if details.len() > 10 {
            println!("      … and {} more", details.len() - 10);
        }
    }
}

/// Every fault in the order it began, to read a violation against.
fn print_faults(faults: &[FaultRecord]) {
    let mut faults: Vec<&FaultRecord> = faults.iter().collect();
    faults.sort_by_key(|f| f.at);
    println!("  faults, in order:");
    for f in faults {
        println!(
            "    {:>8.3}s .. {:>8.3}s {} {} pid {:?} pause {} ms",
            f.at.as_secs_f64(),
            f.end.as_secs_f64(),
            f.kind.name(),
            f.target,
            f.pid,
            f.pause.as_millis()
        );
    }
}
