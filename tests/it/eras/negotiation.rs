//! Which era a server is spoken to in, and why: `auto` tries the modern way first and falls
//! back on any other answer; a pinned era refuses the other; what was found is remembered.

use std::time::Duration;

use mcp_supervisor::protocol::era::{Era, ProtocolChoice};
use mcp_supervisor::{CallTool, ErrorKind, ServerState};
use serde_json::json;

use crate::common::*;

async fn era_of(sup: &actix::Addr<mcp_supervisor::Supervisor>, name: &str) -> (Era, String) {
    let st = status(sup, name).await;
    (
        st.era.expect("connected once"),
        st.protocol_version.expect("a version"),
    )
}

#[actix::test]
async fn auto_speaks_modern_to_a_modern_or_dual_server_and_legacy_to_a_legacy_one() {
    let dir = tempdir();
    let servers = [
        demo_in("modern", "modern", &path(&dir)),
        demo_in("dual", "dual", &path(&dir)),
        demo_in("legacy", "legacy", &path(&dir)),
    ];
    let (sup, events) = start_supervisor(quick_settings(), servers);
    for name in ["modern", "dual", "legacy"] {
        events.ready(name, 1).await;
        let echo =
            CallTool::new(name, "echo", json!({"text": name})).timeout(Duration::from_secs(5));
        let result = sup
            .send(echo)
            .await
            .unwrap()
            .expect("an answer in either era");
        assert_eq!(text_of(&result), name);
    }
    assert_eq!(
        era_of(&sup, "modern").await,
        (Era::Modern, "2026-07-28".into())
    );
    assert_eq!(
        era_of(&sup, "dual").await,
        (Era::Modern, "2026-07-28".into())
    );
    assert_eq!(
        era_of(&sup, "legacy").await,
        (Era::Legacy, "2025-11-25".into())
    );
    // The modern servers saw no initialize; the legacy one saw the probe, then the handshake.
    assert!(!event_log(&path(&dir), "modern")
        .iter()
        .any(|l| l.contains("initialize")));
    let legacy = event_log(&path(&dir), "legacy");
    assert!(
        legacy.iter().any(|l| l.contains("initialize")),
        "{legacy:?}"
    );
}

#[actix::test]
async fn a_pinned_era_is_spoken_or_refused() {
    let dir = tempdir();
    let servers = [
        demo_in("dual", "to-legacy", &path(&dir)).protocol(ProtocolChoice::Legacy),
        demo_in("legacy", "wrong", &path(&dir)).protocol(ProtocolChoice::Modern),
    ];
    let (sup, events) = start_supervisor(quick_settings(), servers);
    events.ready("to-legacy", 1).await;
    assert_eq!(era_of(&sup, "to-legacy").await.0, Era::Legacy);
    assert!(
        !event_log(&path(&dir), "to-legacy")
            .iter()
            .any(|l| l.contains("server/discover")),
        "no probe when the era is pinned"
    );
    // A legacy-only server pinned modern: no version in common, Failed at once.
    let failed = events.state("wrong", "failed", 1).await;
    let st = status(&sup, "wrong").await;
    let error = st.last_error.expect("why");
    assert_eq!(
        error.kind(),
        ErrorKind::UnsupportedProtocolVersion,
        "{error}"
    );
    assert!(
        matches!(
            st.state,
            ServerState::Failed {
                revive_at: None,
                ..
            }
        ),
        "{failed:?}"
    );
}

#[actix::test]
async fn a_version_refused_with_minus_32022_is_asked_again() {
    // The first modern request of each connection is refused whatever it asks for, as the
    // conformance suite's request-metadata server does: the client retries with the named
    // version once.
    let dir = tempdir();
    let config = demo_in("modern", "picky", &path(&dir)).env("DEMO_REJECT_FIRST_MODERN", "1");
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("picky", 1).await;
    assert_eq!(era_of(&sup, "picky").await.0, Era::Modern);
}

#[actix::test]
async fn a_server_that_speaks_no_version_of_ours_fails_at_once_naming_its_versions() {
    let dir = tempdir();
    let config = demo_in("modern", "future", &path(&dir)).env("DEMO_MODERN_VERSIONS", "2099-01-01");
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.state("future", "failed", 1).await;
    let error = status(&sup, "future").await.last_error.expect("why");
    assert_eq!(
        error.kind(),
        ErrorKind::UnsupportedProtocolVersion,
        "{error}"
    );
    assert!(error.to_string().contains("2099-01-01"), "{error}");
    // No retries: the start-up WARNs never came.
    assert!(!events
        .messages("future")
        .iter()
        .any(|m| m.contains("attempt 1/3")));
}

#[actix::test]
async fn a_stdio_server_that_exits_on_the_probe_gets_the_handshake_next() {
    let script = json!({"rules": [{"method": "server/discover", "do": [{"exit": 1}]}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("old", script)]);
    events.ready("old", 1).await;
    assert_eq!(era_of(&sup, "old").await.0, Era::Legacy);
    // One start-up retry for the probe's casualty, then the handshake.
    assert_eq!(
        events.messages("old"),
        ["Reconnecting to MCP server (attempt 1/3)…", "Connected"]
    );
}

#[actix::test]
async fn a_probe_that_gets_no_answer_falls_back_to_the_handshake() {
    let script = json!({"rules": [{"method": "server/discover", "do": []}]});
    let (sup, events) = start_supervisor(quick_settings(), [hostile("mute", script)]);
    events.ready("mute", 1).await;
    assert_eq!(era_of(&sup, "mute").await.0, Era::Legacy);
    assert_eq!(events.messages("mute"), ["Connected"]);
}

/// Discovery is reused while its `ttlMs` says so, and asked again once that has passed (never
/// on a timer of its own).
#[actix::test]
async fn a_fresh_discovery_is_reused_on_reconnect() {
    let dir = tempdir();
    let servers = [
        demo_in("modern", "cached", &path(&dir)).env("DEMO_DISCOVER_TTL_MS", "60000"),
        demo_in("modern", "stale", &path(&dir)).env("DEMO_DISCOVER_TTL_MS", "0"),
    ];
    let (sup, events) = start_supervisor(quick_settings(), servers);
    for name in ["cached", "stale"] {
        events.ready(name, 1).await;
        let pid = status(&sup, name).await.pid.expect("a pid");
        kill(pid, nix::sys::signal::Signal::SIGKILL);
        events.ready(name, 2).await;
    }
    let discovers = |name: &str| {
        event_log(&path(&dir), name)
            .iter()
            .filter(|l| l.starts_with("server/discover"))
            .count()
    };
    assert_eq!(
        discovers("cached"),
        1,
        "{:?}",
        event_log(&path(&dir), "cached")
    );
    assert_eq!(
        discovers("stale"),
        2,
        "{:?}",
        event_log(&path(&dir), "stale")
    );
}

/// The era does not depend on how fast a server starts: a dual-era stdio server that takes
/// longer than `ping_timeout` to read its stdin is still spoken to the modern way (it had not
/// read the probe: it was starting), and a session-era one is met in its era.
#[actix::test]
async fn a_server_slower_to_start_than_the_probe_waits_gets_the_same_era() {
    let dir = tempdir();
    let slow = |era, name| demo_in(era, name, &path(&dir)).env("DEMO_SLOW_START_MS", "1200");
    let servers = [slow("dual", "slow-dual"), slow("legacy", "slow-legacy")];
    let (sup, events) = start_supervisor(quick_settings(), servers); // ping_timeout 500 ms
    events.ready("slow-dual", 1).await;
    events.ready("slow-legacy", 1).await;
    assert_eq!(era_of(&sup, "slow-dual").await.0, Era::Modern);
    assert_eq!(era_of(&sup, "slow-legacy").await.0, Era::Legacy);
    for name in ["slow-dual", "slow-legacy"] {
        let echo = CallTool::new(name, "echo", json!({"text": name}));
        let result = sup.send(echo).await.unwrap().expect("an answer");
        assert_eq!(text_of(&result), name);
        assert_eq!(status(&sup, name).await.counters.reconnects, 0, "{name}");
    }
}

/// A server that reads the probe and does not answer it (older Python SDKs log a validation
/// error instead) is met in the session era within `ping_timeout`; what it wrote to stderr in
/// answer to the probe is left out of the stderr tail, which still shows what explains a later
/// failure: its start-up lines and its last words.
#[actix::test]
async fn the_stderr_tail_keeps_what_explains_a_failure_not_the_probes_noise() {
    let dir = tempdir();
    let noisy = demo_in("legacy", "noisy", &path(&dir))
        .env("DEMO_STDERR_LINES", "3")
        .env("DEMO_PROBE_NOISE", "94")
        .env("DEMO_CRASH_AFTER_CALLS", "0");
    let mut settings = quick_settings();
    settings.max_connect_retries = 0;
    let (sup, events) = start_supervisor(settings, [noisy]);
    events.ready("noisy", 1).await;
    assert_eq!(era_of(&sup, "noisy").await.0, Era::Legacy);
    let crashed = sup
        .send(CallTool::new("noisy", "echo", json!({"text": "x"})))
        .await
        .unwrap();
    assert!(crashed.is_err(), "the server crashes on its first call");
    events.state("noisy", "reconnecting", 1).await;
    let error = status(&sup, "noisy").await.last_error.expect("the crash");
    let tail = error.stderr_tail();
    assert!(
        tail.iter().any(|l| l.contains("demo stderr line 1")),
        "the start-up lines are kept: {tail:#?}"
    );
    assert!(
        tail.iter().any(|l| l.contains("crashing as asked")),
        "and its last words: {tail:#?}"
    );
    assert!(
        tail.iter()
            .any(|l| l.contains("stderr lines written in answer to our server/discover probe")),
        "the noise is counted, not kept: {tail:#?}"
    );
    let noise = tail
        .iter()
        .filter(|l| l.contains("validation error"))
        .count();
    assert!(noise <= 1, "{tail:#?}");
}
