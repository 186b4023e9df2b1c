//! Floods from the server: notifications faster than a subscriber takes them. Memory stays
//! bounded; state changes always arrive; what is dropped is counted. (Part of the hostile
//! suite, apart from it: RSS is a process-wide figure, and the tests beside these — a panic's
//! backtrace alone costs ~160 MiB — would blur it, so each test here runs in a process of its
//! own, `common::alone`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{Call, Reconnect, ServerEvent, Supervisor};
use serde_json::json;

use crate::common::*;

const FLOOD: u64 = 300_000;

/// A subscriber that takes 100 µs per event, on an arbiter of its own.
struct Slow {
    logs: Arc<AtomicU64>,
    states: Arc<Mutex<Vec<String>>>,
}

impl Actor for Slow {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Slow {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        match event {
            ServerEvent::Log { .. } => {
                self.logs.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(100));
            }
            ServerEvent::StateChanged { message, .. } => {
                self.states.lock().unwrap().push(message);
            }
            _ => {}
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

crate::test_alone!(
    /// Defect 10 (second half): a subscriber that does not keep up used to cost us a queue of
    /// every event (+209 MiB). Each subscriber's queue is bounded now: notifications beyond it are
    /// dropped and counted, state changes are never lost.
    a_slow_subscriber_costs_a_bounded_queue => flood_a_slow_subscriber
);

async fn flood_a_slow_subscriber() {
    let script = json!({"rules": [{"method": "tools/call", "nth": 1, "do": [
        {"repeat": FLOOD, "do": [
            {"notify": "notifications/message", "params": {"level": "info", "data": "flood"}}
        ]},
        {"default": true}
    ]}]});
    let logs = Arc::new(AtomicU64::new(0));
    let states = Arc::new(Mutex::new(Vec::new()));
    let arbiter = Arbiter::new();
    let slow = {
        let (logs, states) = (logs.clone(), states.clone());
        Slow::start_in_arbiter(&arbiter.handle(), move |_| Slow { logs, states })
    };
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(hostile("flood", script))
        .subscriber(slow.recipient())
        .start()
        .unwrap();
    until("ready", || {
        states.lock().unwrap().iter().any(|m| m == "Connected")
    })
    .await;

    let before = rss_kib();
    let call = Call::new("flood", "tools/call", Some(json!({"name": "echo"})))
        .timeout(Duration::from_secs(60));
    sup.send(call)
        .await
        .unwrap()
        .expect("answered after the flood");
    let grown_mib = rss_kib().saturating_sub(before) / 1024;

    // A state change after the flood: it must arrive, behind whatever was still queued.
    sup.send(Reconnect {
        server: "flood".into(),
    })
    .await
    .unwrap()
    .unwrap();
    until("the state change after the flood", || {
        states
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.contains("reconnect requested"))
    })
    .await;

    let counters = status(&sup, "flood").await.counters;
    let delivered = logs.load(Ordering::Relaxed);
    println!(
        "flood of {FLOOD}: {delivered} delivered, {} dropped, RSS +{grown_mib} MiB",
        counters.events_dropped
    );
    assert_eq!(
        delivered + counters.events_dropped,
        FLOOD,
        "every notification delivered or counted as dropped"
    );
    assert!(
        counters.events_dropped > 0,
        "a 100 µs subscriber cannot take 300k at once"
    );
    assert!(
        grown_mib < 64,
        "memory grew by {grown_mib} MiB for a slow subscriber"
    );
    sup.send(mcp_supervisor::Shutdown).await.unwrap();
    arbiter.stop();
}

crate::test_alone!(
    /// A server that floods us with requests and never reads our answers: its pipe fills, and
    /// before, every answer queued up in our memory behind it. Now once 64 answers wait for its
    /// stdin, further answers are dropped (reading never waits for its stdin);
    /// the calls that cannot be written time out, the liveness check fails, and a fresh process
    /// takes over.
    a_server_that_does_not_read_our_answers_costs_bounded_memory => flood_from_a_deaf_server
);

async fn flood_from_a_deaf_server() {
    let script = json!({"rules": [{"method": "tools/call", "nth": 1, "do": [
        {"spawn": [{"repeat": 400_000, "do": [{"request": "ping", "id": "p"}]}]},
        {"stop_reading": true}
    ]}]});
    let mut settings = quick_settings();
    settings.ping_timeout = Duration::from_millis(300);
    let (sup, events) = start_supervisor(settings, [hostile("deaf", script)]);
    events.ready("deaf", 1).await;
    let before = rss_kib();
    let call = Call::new("deaf", "tools/call", Some(json!({"name": "echo"})))
        .timeout(Duration::from_secs(3));
    let outcome = sup.send(call).await.unwrap();
    assert!(
        outcome.is_err(),
        "a server that stopped reading cannot answer"
    );
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    // The liveness ping cannot be written either: the server is replaced.
    events.ready("deaf", 2).await;
    println!("400k requests from a deaf server: RSS +{grown_mib} MiB");
    assert!(
        grown_mib < 24,
        "memory grew by {grown_mib} MiB behind a deaf server"
    );
    sup.send(mcp_supervisor::Shutdown).await.unwrap();
}
