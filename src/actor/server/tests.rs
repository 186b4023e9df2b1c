//! The actor as a whole, over the in-memory transport and a clock the test moves: the session's
//! rules as a caller of the actor meets them, with a test playing the server (its handshake
//! included). No process, no socket, no real waiting: time passes when the test says so.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use tokio::sync::watch;

use actix::prelude::*;
use serde_json::{json, Value};

use super::{Clock, ServerActor};
use crate::actor::connect::Dial;
use crate::config::{ServerConfig, Settings};
#[cfg(feature = "http")]
use crate::error::Error;
use crate::error::ErrorKind;
use crate::session::CALLER_SWEEP;
use crate::transport::memory::{Listener, Network, Peer};
#[cfg(feature = "http")]
use crate::transport::TransportEvent;
use crate::{CallTool, GetStatus, ServerStatus};

/// A clock a test moves by hand: the actor's timer fires when the test has moved the clock past
/// it. (Its connection attempts' own timeouts run on real time, which the tests never wait
/// for: the test answers at once.)
#[derive(Clone)]
pub(crate) struct ManualClock {
    now: Rc<Cell<Instant>>,
    moved: Rc<watch::Sender<Instant>>,
}

impl ManualClock {
    fn new() -> Self {
        let start = Instant::now();
        ManualClock {
            now: Rc::new(Cell::new(start)),
            moved: Rc::new(watch::Sender::new(start)),
        }
    }

    pub(crate) fn now(&self) -> Instant {
        self.now.get()
    }

    pub(crate) fn sleep_until(&self, at: Instant) -> LocalBoxFuture<'static, ()> {
        let mut moved = self.moved.subscribe();
        Box::pin(async move {
            let _ = moved.wait_for(|now| *now >= at).await;
        })
    }

    /// Moves the clock `by` forward, waking what waits for it.
    fn advance(&self, by: Duration) {
        self.now.set(self.now.get() + by);
        self.moved.send_replace(self.now.get());
    }
}

/// An actor for `config` dialing an in-memory network, on a clock the test moves.
fn start(config: ServerConfig) -> (Addr<ServerActor>, Listener, ManualClock) {
    let (network, listener) = Network::new();
    let clock = ManualClock::new();
    let actor = ServerActor::new(config, &Settings::default())
        .dialing(Dial::Memory(network), Clock::Manual(clock.clone()));
    (actor.start(), listener, clock)
}

/// The next connection the actor opens, moving the clock on in small steps while none comes
/// (reconnects wait their backoff, in virtual time).
async fn next_peer(net: &mut Listener, clock: &ManualClock) -> Peer {
    for _ in 0..100_000 {
        tokio::select! {
            biased;
            peer = net.accept() => return peer,
            () = tokio::task::yield_now() => clock.advance(Duration::from_millis(10)),
        }
    }
    panic!("no connection within 1000 s of virtual time");
}

/// The next message the client wrote, which must be of `method` (the transport being let go
/// of a request, an abandon, is skipped).
async fn expect(peer: &mut Peer, method: &str) -> Value {
    loop {
        let message = peer.recv().await.expect("the connection is open");
        if message.get("abandon").is_some() {
            continue;
        }
        assert_eq!(message["method"], method, "{message}");
        return message;
    }
}

/// Plays a server of the session era through the opening (which, with `protocol: auto`,
/// asks `server/discover` first, unless the last connection found the session era).
async fn legacy_opening(peer: &mut Peer) {
    let mut init = peer.recv().await.expect("the connection is open");
    if init["method"] == "server/discover" {
        peer.refuse(&init, -32601, "Method not found");
        init = expect(peer, "initialize").await;
    }
    assert_eq!(init["method"], "initialize", "{init}");
    peer.answer(
        &init,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "memory", "version": "1"}}),
    );
    expect(peer, "notifications/initialized").await;
    let list = expect(peer, "tools/list").await;
    peer.answer(&list, json!({"tools": []}));
}

/// Plays a server of the 2026-07-28 revision through the opening; its discovery may be reused
/// for an hour.
async fn modern_opening(peer: &mut Peer) {
    let probe = expect(peer, "server/discover").await;
    peer.answer(
        &probe,
        json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "ttlMs": 3_600_000, "serverInfo": {"name": "memory", "version": "1"}}),
    );
    let list = expect(peer, "tools/list").await;
    peer.answer(&list, json!({"tools": []}));
}

async fn status(addr: &Addr<ServerActor>) -> ServerStatus {
    let mut all = addr.send(GetStatus::all()).await.unwrap().unwrap();
    all.remove(0)
}

#[actix::test]
async fn a_call_goes_through_the_actor_and_its_answer_comes_back() {
    let (addr, mut net, _clock) = start(ServerConfig::stdio("mem", "unused"));
    let mut peer = net.accept().await;
    legacy_opening(&mut peer).await;
    let call = addr.send(CallTool::new("mem", "echo", json!({"text": "hi"})));
    let server = async {
        let request = expect(&mut peer, "tools/call").await;
        assert_eq!(request["params"]["arguments"]["text"], "hi");
        peer.answer(
            &request,
            json!({"content": [{"type": "text", "text": "hi"}]}),
        );
    };
    let (result, ()) = futures_util::join!(call, server);
    let result = result.unwrap().unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, "hi");
    assert_eq!(status(&addr).await.counters.calls_ok, 1);
}

/// The configurations of the two eras' tests: a session-era stdio server, and (with the
/// `http` feature, without which such a config is refused) a 2026-07-28 HTTP one.
fn both_eras() -> Vec<ServerConfig> {
    let mut configs = vec![ServerConfig::stdio("mem", "unused")];
    if cfg!(feature = "http") {
        configs.push(ServerConfig::http("mem", "http://127.0.0.1:1/mcp"));
    }
    configs
}

/// A caller that drops its future (a client that hung up on the service) has its call
/// cancelled on the server, its slot freed, and counted — in both eras.
#[actix::test]
async fn a_caller_who_leaves_has_its_call_cancelled_on_the_server() {
    for config in both_eras() {
        let modern = matches!(config.transport(), crate::config::Transport::Http(_));
        let (addr, mut net, clock) = start(config);
        let mut peer = net.accept().await;
        if modern {
            modern_opening(&mut peer).await;
        } else {
            legacy_opening(&mut peer).await;
        }
        let call = addr.send(CallTool::new("mem", "slow", json!({})));
        let request = {
            let mut call = std::pin::pin!(call);
            // Delivered and written while the caller still waits...
            tokio::select! {
                request = expect(&mut peer, "tools/call") => request,
                _ = &mut call => panic!("answered without a server"),
            }
            // ...then the caller goes away.
        };
        assert!(peer.pending().is_empty(), "nothing before the sweep");
        clock.advance(CALLER_SWEEP);
        let mut seen = Vec::new();
        loop {
            let message = peer.recv().await.unwrap();
            let cancelled = message["abandon"] == request["id"];
            seen.push(message);
            if cancelled {
                break;
            }
        }
        let notified = seen.iter().any(|m| {
            m["method"] == "notifications/cancelled" && m["params"]["requestId"] == request["id"]
        });
        // Over modern HTTP, closing the response stream is the cancellation.
        assert_eq!(notified, !modern, "{seen:?}");
        let status = status(&addr).await;
        assert_eq!(status.pending_calls, 0);
        assert_eq!(status.counters.calls_abandoned, 1);
    }
}

/// A modern-only server rolled back to the session era: the attempt that reuses the cached
/// discovery fails, and the next one asks again and speaks the session era — rather than
/// reusing the discovery for its whole ttl (the defect: 8–9 attempts, all modern, none with
/// `initialize`).
#[cfg(feature = "http")]
#[actix::test]
async fn a_server_rolled_back_to_the_session_era_is_met_there_at_once() {
    let (addr, mut net, clock) = start(ServerConfig::http("mem", "http://127.0.0.1:1/mcp"));
    let mut modern = net.accept().await;
    modern_opening(&mut modern).await;
    let call = addr.send(CallTool::new("mem", "echo", json!({})));
    let server = async {
        let request = expect(&mut modern, "tools/call").await;
        modern.answer(&request, json!({"content": []}));
    };
    let (result, ()) = futures_util::join!(call, server);
    result.unwrap().unwrap();
    modern.close(Error::connection("mem", "the server was redeployed"));

    // The first attempt after reuses the discovery: its tools/list meets a session-era server,
    // which refuses a request without a session.
    let mut reused = next_peer(&mut net, &clock).await;
    let list = expect(&mut reused, "tools/list").await;
    reused.event(TransportEvent::CallFailed {
        id: list["id"].as_u64().unwrap(),
        error: Error::invalid_response(
            "mem",
            "tools/list",
            "HTTP 400: Bad Request: No valid session ID provided",
        ),
    });
    // The next one asks again, and is told the session era.
    let mut legacy = next_peer(&mut net, &clock).await;
    legacy_opening(&mut legacy).await;
    let call = addr.send(CallTool::new("mem", "echo", json!({})));
    let server = async {
        let request = expect(&mut legacy, "tools/call").await;
        assert!(
            request["params"].get("_meta").is_none(),
            "a session-era request"
        );
        legacy.answer(&request, json!({"content": []}));
    };
    let (result, ()) = futures_util::join!(call, server);
    result.unwrap().unwrap();
    let status = status(&addr).await;
    assert_eq!(status.era, Some(crate::protocol::era::Era::Legacy));
    assert_eq!(net.dials(), 3);
}

/// A timed-out call is answered at its deadline in virtual time, and a server that says
/// nothing more is dropped after the liveness check; the one after answers.
#[actix::test]
async fn a_silent_server_is_replaced_after_a_timeout_and_its_check() {
    let (addr, mut net, clock) = start(ServerConfig::stdio("mem", "unused"));
    let mut peer = net.accept().await;
    legacy_opening(&mut peer).await;
    let call = CallTool::new("mem", "hang", json!({})).timeout(Duration::from_secs(3));
    let started = clock.now();
    let call = addr.send(call);
    let mut call = std::pin::pin!(call);
    tokio::select! {
        _ = expect(&mut peer, "tools/call") => {}
        _ = &mut call => panic!("answered without a server"),
    }
    clock.advance(Duration::from_millis(2999));
    assert!(peer.pending().is_empty(), "nothing before the deadline");
    clock.advance(Duration::from_millis(1));
    let result = call.await;
    assert_eq!(result.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(clock.now() - started, Duration::from_secs(3));
    // Cancelled, then checked; the check gets nothing within ping_timeout.
    expect(&mut peer, "notifications/cancelled").await;
    expect(&mut peer, "ping").await;
    clock.advance(Settings::default().ping_timeout);
    let mut next = net.accept().await;
    assert!(
        peer.closed_by_client().is_some(),
        "the silent connection was dropped"
    );
    legacy_opening(&mut next).await;
    let call = addr.send(CallTool::new("mem", "echo", json!({})));
    let server = async {
        let request = expect(&mut next, "tools/call").await;
        next.answer(&request, json!({"content": []}));
    };
    let (result, ()) = futures_util::join!(call, server);
    result.unwrap().unwrap();
    let status = status(&addr).await;
    assert_eq!(status.state.name(), "ready");
    assert_eq!(status.counters.reconnects, 1);
}

/// A 2026-07-28 HTTP server that died while idle: the first call's request never reaches it
/// (connection refused). It is not lost, whatever it is: it waits through the reconnects and
/// goes out once the server is back, within its deadline, sent once.
#[cfg(feature = "http")]
#[actix::test]
async fn a_call_whose_request_never_reached_a_dead_server_goes_out_when_it_is_back() {
    let (addr, mut net, clock) = start(ServerConfig::http("mem", "http://127.0.0.1:1/mcp"));
    let mut peer = net.accept().await;
    modern_opening(&mut peer).await;
    let call = CallTool::new("mem", "counter", json!({}))
        .retry(crate::RetryPolicy::Never)
        .timeout(Duration::from_secs(30));
    let call = addr.send(call);
    let server = async {
        let request = expect(&mut peer, "tools/call").await;
        net.refuse(Some("connection refused"));
        peer.event(TransportEvent::Rejected(vec![request["id"]
            .as_u64()
            .unwrap()]));
        peer.close(Error::connection(
            "mem",
            "cannot connect: connection refused",
        ));
        // Down for a while: the reconnects are refused.
        while net.dials() < 4 {
            tokio::task::yield_now().await;
            clock.advance(Duration::from_millis(10));
        }
        net.refuse(None);
        let mut back = next_peer(&mut net, &clock).await;
        modern_opening(&mut back).await;
        let request = expect(&mut back, "tools/call").await;
        back.answer(&request, json!({"content": []}));
    };
    let (result, ()) = futures_util::join!(call, server);
    result.unwrap().expect("sent once the server was back");
    let status = status(&addr).await;
    assert_eq!(status.counters.calls_resent, 0, "it was sent once");
    assert_eq!(status.counters.calls_ok, 1);
}
