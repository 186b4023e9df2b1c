//! Interop in the stateless 2026-07-28 revision, and in the session era beside it, with SDK
//! servers we did not write: the TypeScript SDK v2 server (`@modelcontextprotocol/server`
//! 2.4.0, driven by `tests/interop/ts_server.mjs`) modern-only and dual-era over stdio and
//! Streamable HTTP; the Python SDK 2.3 server (`tests/interop/py_server.py`, dual-era: the SDK
//! has no switch for one era alone) spoken to in both eras; and `mcp-server-time` 2026.10.19, a
//! real dual-era server from PyPI.
//!
//! For each: calls (with the negotiated era and version), a subscription whose updates keep
//! arriving across a kill -9 / restart, a multi-round-trip request (an elicitation answered
//! through the application's request handler), and a non-idempotent call in flight across a
//! kill answered `outcome_unknown` and not run twice; and a TypeScript server upgraded from
//! dual-era to modern-only while supervised. `#[ignore]`d: `.ci/interop` installs the pinned
//! servers, runs these with `--ignored` and prints the figures they record.

mod peers;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::interop::*;
use crate::common::*;
use actix::{Actor, Addr, Recipient};
use mcp_supervisor::protocol::era::{Era, ProtocolChoice};
use mcp_supervisor::*;
use nix::sys::signal::Signal;
use peers::*;
use serde_json::json;

/// Starts a supervisor of `config`, with `handler` for the server's requests (elicitation).
fn supervise(
    config: ServerConfig,
    handler: Option<Recipient<ServerRequest>>,
) -> (Addr<Supervisor>, Events) {
    let mut settings = quick_settings();
    settings.ping_timeout = Duration::from_secs(2);
    let (events, recipient) = Events::start();
    let mut builder = Supervisor::builder()
        .settings(settings)
        .server(config)
        .subscriber(recipient);
    if let Some(handler) = handler {
        builder = builder.request_handler(handler, json!({"elicitation": {}}));
    }
    (builder.start().expect("a valid configuration"), events)
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// The era and version the server was spoken to in, checked against what the peer must get.
async fn negotiated(sup: &Addr<Supervisor>, peer: &Peer) -> String {
    let st = status(sup, NAME).await;
    assert_eq!(st.era, Some(peer.era), "{}", peer.label);
    let version = st.protocol_version.expect("a negotiated version");
    if peer.era == Era::Modern {
        assert_eq!(version, "2026-07-28");
    }
    format!("{} {version}", peer.era.name())
}

/// Calls: Ready, the era, an echo, and (on our SDK servers) a slow tool whose progress all
/// arrives.
async fn calls(peer: Peer) {
    let dir = tempdir();
    let server = peer.start(dir.path()).await;
    let t0 = Instant::now();
    let (sup, events) = supervise(server.config.clone(), None);
    events.ready(NAME, 1).await;
    let ready = t0.elapsed();
    let era = negotiated(&sup, &peer).await;

    let (echo, expected) = peer.echo("hello from the supervisor");
    let sent = Instant::now();
    let result = sup
        .send(echo.timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the call is answered");
    let echo_took = sent.elapsed();
    assert!(answer_text(&result).contains(&expected), "{result:?}");

    let slow = if peer.sdk == Sdk::Time {
        String::new()
    } else {
        let (progress, mut rx) = progress_channel();
        let sent = Instant::now();
        let call = peer
            .slow(0.4, 4)
            .timeout(Duration::from_secs(10))
            .on_progress(progress);
        let result = sup.send(call).await.unwrap().expect("the slow call");
        assert_eq!(text_of(&result), "done");
        let took = sent.elapsed();
        for step in 1..=4 {
            let p = next_progress(&mut rx).await;
            assert_eq!(p.progress, f64::from(step), "{p:?}");
        }
        format!("; slow tool {} ms with 4/4 progress", ms(took))
    };
    let tools = status(&sup, NAME).await.tool_count();
    record(
        &format!("M {}: calls", peer.label),
        "ok",
        &format!(
            "{era}; Ready {} ms after start, {tools} tools; call {} ms{slow}",
            ms(ready),
            ms(echo_took)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// A subscription whose updates keep arriving across a kill -9 (stdio: the supervisor
/// respawns the server; HTTP: the test starts it again on the same port).
async fn subscription_across_kill(peer: Peer) {
    let dir = tempdir();
    let mut server = peer.start(dir.path()).await;
    let (sup, events) = supervise(server.config.clone(), None);
    events.ready(NAME, 1).await;
    let era = negotiated(&sup, &peer).await;
    sup.send(Subscribe {
        server: NAME.into(),
        uri: COUNTER.into(),
    })
    .await
    .unwrap()
    .expect("subscribed");
    let touch = |sup: &Addr<Supervisor>| sup.send(peer.touch().timeout(Duration::from_secs(10)));
    let answer = touch(&sup).await.unwrap().expect("touched");
    assert_eq!(text_of(&answer), format!("notified: {COUNTER}"));
    events
        .resource_updated(COUNTER, Duration::from_secs(10))
        .await;

    server.kill(&sup).await;
    let killed = Instant::now();
    server.restart().await;
    events.ready(NAME, 2).await;
    let back = killed.elapsed();
    // The new process knows nothing of us: the subscription was sent again.
    let answer = touch(&sup).await.unwrap().expect("touched again");
    assert_eq!(text_of(&answer), format!("notified: {COUNTER}"));
    events
        .wait_count(
            "an update after the restart",
            2,
            Duration::from_secs(10),
            |e| matches!(e, ServerEvent::ResourceUpdated { uri, .. } if uri == COUNTER),
        )
        .await;
    let updated = killed.elapsed();
    record(
        &format!("M {}: subscription across kill -9", peer.label),
        "ok",
        &format!(
            "{era}; Ready again {} ms after the kill, next update {} ms after it",
            ms(back),
            ms(updated)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// A tool that asks for input: in the modern era a multi-round-trip result answered through
/// the request handler and the call re-issued; in the session era the server's own
/// `elicitation/create`, answered by the same handler.
async fn input_round_trip(peer: Peer) {
    let dir = tempdir();
    let server = peer.start(dir.path()).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let handler = Accept(asked.clone()).start().recipient();
    let (sup, events) = supervise(server.config.clone(), Some(handler));
    events.ready(NAME, 1).await;
    let era = negotiated(&sup, &peer).await;
    let sent = Instant::now();
    let result = sup
        .send(peer.confirm().timeout(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("answered after the input");
    let took = sent.elapsed();
    let text = text_of(&result);
    assert!(text.starts_with("confirmed: true"), "{text}");
    if peer.sdk == Sdk::Ts {
        // The server checks that its requestState came back byte for byte.
        assert!(text.ends_with("(state verbatim)"), "{text}");
    }
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0], "elicitation/create");
    let (what, how) = match peer.era {
        Era::Modern => (
            "input via MRTR",
            "input_required answered by the handler, call re-issued",
        ),
        Era::Legacy => (
            "input via elicitation",
            "the server's elicitation/create answered by the same handler",
        ),
    };
    record(
        &format!("M {}: {what}", peer.label),
        "ok",
        &format!("{era}; {how}; {} ms", ms(took)),
    );
    sup.send(Shutdown).await.unwrap();
}

/// A non-idempotent call in flight across a kill -9: its effect happened, its answer never
/// came. The caller hears `outcome_unknown`, and the tool is not run again after the restart.
async fn increment_across_kill(peer: Peer) {
    let dir = tempdir();
    let mut server = peer.start(dir.path()).await;
    let (sup, events) = supervise(server.config.clone(), None);
    events.ready(NAME, 1).await;
    let era = negotiated(&sup, &peer).await;
    let pending = sup.send(
        peer.increment_holding(Duration::from_secs(10))
            .timeout(Duration::from_secs(20)),
    );
    until("the increment ran", || server.count() == 1).await;
    server.kill(&sup).await;
    let killed = Instant::now();
    let error = pending.await.unwrap().expect_err("no answer can come");
    let answered = killed.elapsed();
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");

    server.restart().await;
    let (echo, expected) = peer.echo("after the kill");
    let result = sup
        .send(echo.timeout(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("calls work again");
    assert!(answer_text(&result).contains(&expected));
    let back = killed.elapsed();
    let st = status(&sup, NAME).await;
    assert_eq!(server.count(), 1, "the increment ran again");
    assert_eq!(st.counters.calls_resent, 0);
    record(
        &format!("M {}: non-idempotent call across kill -9", peer.label),
        "ok",
        &format!(
            "{era}; {} {} ms after the kill; calls again at {} ms; ran once (count file: 1)",
            error.code(),
            ms(answered),
            ms(back)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// `mcp-server-time`: killed while idle, it is respawned and answers again (it has no
/// subscriptions, no tool that asks for input and no tool with an effect).
async fn kill_while_idle(peer: Peer) {
    let dir = tempdir();
    let mut server = peer.start(dir.path()).await;
    let (sup, events) = supervise(server.config.clone(), None);
    events.ready(NAME, 1).await;
    let era = negotiated(&sup, &peer).await;
    server.kill(&sup).await;
    let killed = Instant::now();
    events.ready(NAME, 2).await;
    let back = killed.elapsed();
    let (echo, expected) = peer.echo("after the kill");
    let result = sup
        .send(echo.timeout(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("answered by the new process");
    assert!(answer_text(&result).contains(&expected));
    negotiated(&sup, &peer).await;
    record(
        &format!("M {}: kill -9 while idle", peer.label),
        "ok",
        &format!(
            "{era}; Ready again {} ms after the kill, then answered in {} ms",
            ms(back),
            ms(killed.elapsed() - back)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// Declares, for each peer, a module with one `#[ignore]`d test per scenario.
macro_rules! peer_tests {
    ($($module:ident = $peer:expr => [$($scenario:ident),* $(,)?];)*) => {$(
        mod $module {
            use super::*;
            $(
                #[actix::test]
                #[ignore = "needs the servers .ci/interop installs"]
                async fn $scenario() {
                    super::$scenario($peer).await
                }
            )*
        }
    )*};
}

const TS_STDIO_MODERN: Peer = Peer::ts("TS v2 stdio modern-only", Via::Stdio, Mode::ModernOnly);
const TS_STDIO_DUAL: Peer = Peer::ts("TS v2 stdio dual", Via::Stdio, Mode::Dual);
const TS_HTTP_MODERN: Peer = Peer::ts("TS v2 HTTP modern-only", Via::Http, Mode::ModernOnly);
const TS_HTTP_DUAL: Peer = Peer::ts("TS v2 HTTP dual", Via::Http, Mode::Dual);
const PY_STDIO: Peer = Peer::py("Python 2.3 stdio", Via::Stdio, ProtocolChoice::Auto);
const PY_HTTP: Peer = Peer::py("Python 2.3 HTTP", Via::Http, ProtocolChoice::Auto);
const TIME: Peer = Peer {
    label: "mcp-server-time stdio",
    sdk: Sdk::Time,
    via: Via::Stdio,
    mode: Mode::Dual,
    client: ProtocolChoice::Auto,
    era: Era::Modern,
};

peer_tests! {
    ts_stdio_modern = TS_STDIO_MODERN =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    ts_stdio_dual = TS_STDIO_DUAL =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    ts_stdio_dual_as_legacy = TS_STDIO_DUAL.pinned_legacy("TS v2 stdio dual, pinned legacy") =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    ts_http_modern = TS_HTTP_MODERN =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    ts_http_dual = TS_HTTP_DUAL =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    py_stdio = PY_STDIO =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    py_stdio_legacy = PY_STDIO.pinned_legacy("Python 2.3 stdio, pinned legacy") =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    py_http = PY_HTTP =>
        [calls, subscription_across_kill, input_round_trip, increment_across_kill];
    time = TIME => [calls, kill_while_idle];
    time_legacy = TIME.pinned_legacy("mcp-server-time, pinned legacy") => [calls];
}

/// The state-change messages of the server after its `after`-th Ready.
fn messages_after_ready(events: &Events, after: usize) -> Vec<String> {
    let mut readies = 0;
    let mut messages = Vec::new();
    for event in events.all() {
        if let ServerEvent::StateChanged {
            server,
            state,
            message,
        } = event
        {
            if server != NAME {
                continue;
            }
            if readies >= after {
                messages.push(message);
            }
            if state == ServerState::Ready {
                readies += 1;
            }
        }
    }
    messages
}

/// After a restart as modern-only: Ready (the `ready`-th time) in the modern era, after one
/// connection attempt whose refused handshake switched it, with the reason kept. Returns the
/// reason.
async fn came_back_modern(sup: &Addr<Supervisor>, events: &Events, ready: usize) -> String {
    events.ready(NAME, ready).await;
    let st = status(sup, NAME).await;
    assert_eq!(st.era, Some(Era::Modern));
    let why = st.last_error.expect("the reason is kept").to_string();
    assert!(
        why.contains("no longer speaks the legacy protocol era"),
        "{why}"
    );
    let messages = messages_after_ready(events, ready - 1);
    assert_eq!(messages.len(), 2, "lost, then back: {messages:?}");
    assert!(messages[0].starts_with("Connection lost"), "{messages:?}");
    assert_eq!(messages[1], "Reconnected (after 1 attempt)", "{messages:?}");
    why.split_once("connection failed: ")
        .map_or(why.clone(), |(_, reason)| reason.to_owned())
}

/// The check over stdio: the TypeScript server (the same command, reading its mode
/// from a file at start-up) goes legacy-only -> dual-era -> modern-only while supervised. The
/// client remembers the session era through the dual-era stage (which serves it), and after
/// the last restart comes back Ready in the modern era after one refused handshake, with the
/// reason in `last_error`.
#[actix::test]
#[ignore = "needs the servers .ci/interop installs"]
async fn ts_stdio_upgraded_from_dual_to_modern_only() {
    let dir = tempdir();
    let mode = dir.path().join("mode");
    std::fs::write(&mode, "legacy").unwrap();
    let config = ServerConfig::stdio(NAME, "node")
        .args([
            interop_dir().join("ts_server.mjs").display().to_string(),
            "stdio".into(),
            "file".into(),
        ])
        .env("TS_SERVER_MODE_FILE", mode.display().to_string());
    let (sup, events) = supervise(config, None);
    events.ready(NAME, 1).await;
    assert_eq!(status(&sup, NAME).await.era, Some(Era::Legacy));

    // The SDK upgrade: dual-era. The client goes straight to the era it remembers.
    std::fs::write(&mode, "dual").unwrap();
    kill(status(&sup, NAME).await.pid.unwrap(), Signal::SIGKILL);
    events.ready(NAME, 2).await;
    assert_eq!(status(&sup, NAME).await.era, Some(Era::Legacy));

    // Then modern-only.
    std::fs::write(&mode, "modern").unwrap();
    kill(status(&sup, NAME).await.pid.unwrap(), Signal::SIGKILL);
    let killed = Instant::now();
    let why = came_back_modern(&sup, &events, 3).await;
    let back = killed.elapsed();
    let (echo, expected) = TS_STDIO_MODERN.echo("modern now");
    let result = sup.send(echo).await.unwrap().expect("a modern call");
    assert!(text_of(&result).contains(&expected));
    record(
        "M upgrade dual -> modern-only, TS v2 stdio (same command)",
        "ok",
        &format!(
            "Ready modern {} ms after the kill, 1 attempt; last_error: {why}",
            ms(back)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// The same over HTTP, on one port: server-everything (legacy-only) first, so that the client
/// learns the session era; then the TypeScript server dual-era, which serves that era
/// statelessly (no session, no GET stream); then modern-only. Nothing but the next call tells
/// the client of the last restart: the call, refused for its era, is answered in the new one.
#[actix::test]
#[ignore = "needs the servers .ci/interop installs"]
async fn ts_http_upgraded_from_dual_to_modern_only() {
    let port = free_port();
    let spawn = |args: &[&str]| {
        let mut c = tokio::process::Command::new("node");
        c.args(args)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        c.spawn().expect("node starts")
    };
    let everything = npm_server("server-everything").display().to_string();
    let ts = interop_dir().join("ts_server.mjs").display().to_string();
    let port_arg = port.to_string();
    let mut server = spawn(&[&everything, "streamableHttp"]);
    listening(port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (sup, events) = supervise(ServerConfig::http(NAME, url), None);
    events.ready(NAME, 1).await;
    assert_eq!(status(&sup, NAME).await.era, Some(Era::Legacy));

    server.kill().await.unwrap();
    let mut server = spawn(&[&ts, "http", "dual", "--port", &port_arg]);
    listening(port).await;
    // server-everything's GET stream broke: the client came back, in the era it remembers.
    events.ready(NAME, 2).await;
    assert_eq!(status(&sup, NAME).await.era, Some(Era::Legacy));
    let (echo, expected) = TS_HTTP_DUAL.echo("dual, legacy era");
    let result = sup.send(echo).await.unwrap().expect("a legacy call");
    assert!(text_of(&result).contains(&expected));

    server.kill().await.unwrap();
    let _server = spawn(&[&ts, "http", "modern", "--port", &port_arg]);
    listening(port).await;
    let restarted = Instant::now();
    let (echo, expected) = TS_HTTP_MODERN.echo("modern now");
    let result = sup
        .send(echo.timeout(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("the call refused for its era is answered in the new one");
    let answered = restarted.elapsed();
    assert!(text_of(&result).contains(&expected));
    let why = came_back_modern(&sup, &events, 3).await;
    record(
        "M upgrade dual -> modern-only, TS v2 HTTP (same port)",
        "ok",
        &format!(
            "first call after the restart answered in the modern era after {} ms, 1 attempt; last_error: {why}",
            ms(answered)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}
