//! The actor as a whole, over the in-memory transport and tokio's paused clock: the session's
//! rules as a caller of the actor meets them, with a test playing the server (its handshake
//! included). No process, no socket: virtual time passes whenever everything waits.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::ServerActor;
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

/// An actor for `config` dialing an in-memory network (the test pauses tokio's clock first).
fn start(config: ServerConfig) -> (Addr<ServerActor>, Listener) {
    let (network, listener) = Network::new();
    let actor = ServerActor::new(config, &Settings::default()).dialing(Dial::Memory(network));
    (actor.start(), listener)
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
    tokio::time::pause();
    let (addr, mut net) = start(ServerConfig::stdio("mem", "unused"));
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
    tokio::time::pause();
    for config in both_eras() {
        let modern = matches!(config.transport(), crate::config::Transport::Http(_));
        let (addr, mut net) = start(config);
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
        let started = tokio::time::Instant::now();
        let mut seen = Vec::new();
        loop {
            let message = peer.recv().await.unwrap();
            let cancelled = message["abandon"] == request["id"];
            seen.push(message);
            if cancelled {
                break;
            }
        }
        assert!(
            started.elapsed() <= CALLER_SWEEP * 2,
            "{:?}",
            started.elapsed()
        );
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
    tokio::time::pause();
    let (addr, mut net) = start(ServerConfig::http("mem", "http://127.0.0.1:1/mcp"));
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
    let mut reused = net.accept().await;
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
    let mut legacy = net.accept().await;
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
    tokio::time::pause();
    let (addr, mut net) = start(ServerConfig::stdio("mem", "unused"));
    let mut peer = net.accept().await;
    legacy_opening(&mut peer).await;
    let call = CallTool::new("mem", "hang", json!({})).timeout(Duration::from_secs(3));
    let started = tokio::time::Instant::now();
    let (result, _) = futures_util::join!(addr.send(call), expect(&mut peer, "tools/call"));
    assert_eq!(result.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_millis(3100),
        "{waited:?}"
    );
    // Cancelled, then checked; the check gets nothing.
    expect(&mut peer, "notifications/cancelled").await;
    expect(&mut peer, "ping").await;
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
    tokio::time::pause();
    let (addr, mut net) = start(ServerConfig::http("mem", "http://127.0.0.1:1/mcp"));
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
        net.dialed(4).await;
        net.refuse(None);
        let mut back = net.accept().await;
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
