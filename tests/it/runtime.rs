//! The runtime's features against the real demo server: routing, status, events, server
//! requests, progress, limits, configuration errors, run-time changes and actor supervision.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::in_both_eras;
use actix::{Actor, Addr, Context, Handler};
use mcp_supervisor::*;
use serde_json::{json, Value};

async fn caches_session_and_all_tool_pages() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let st = status(&sup, "demo").await;
    let version = match era() {
        "modern" => "2026-07-28",
        _ => "2025-11-25",
    };
    assert_eq!(st.protocol_version.as_deref(), Some(version));
    assert_eq!(st.server_info.as_ref().unwrap().name, "mcp-demo-server");
    assert!(st.capabilities.as_ref().unwrap().tools.is_some());
    // The demo server pages its 10 tools two at a time.
    assert_eq!(
        st.tool_count(),
        10,
        "{:?}",
        st.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let counter = st.tools.iter().find(|t| t.name == "counter").unwrap();
    assert_eq!(
        counter.annotations.as_ref().unwrap().idempotent_hint,
        Some(false)
    );
    assert_eq!(st.transport, "stdio");

    let all = sup.send(GetStatus::all()).await.unwrap().unwrap();
    assert_eq!(all.len(), 1);
    let err = sup
        .send(GetStatus::server("nope"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerNotFound);
    sup.send(Shutdown).await.unwrap();
}

async fn typed_calls_and_routing() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;

    let add = sup
        .send(CallTool::new("demo", "add", json!({"a": 2, "b": 3})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(add.structured_content, Some(json!({"sum": 5})));
    let read = sup
        .send(ReadResource::new("demo", "demo://clock"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    let templates = sup
        .send(ListResourceTemplates::new("demo"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        templates.resource_templates[0].uri_template,
        "demo://greeting/{name}"
    );
    let prompt = sup
        .send(GetPrompt::new("demo", "greet").arg("name", "Ada"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let page = sup.send(ListTools::new("demo")).await.unwrap().unwrap();
    assert_eq!(page.tools.len(), 2);
    assert!(page.next_cursor.is_some());
    sup.send(Ping::new("demo")).await.unwrap().unwrap();
    let raw = sup
        .send(Call::new("demo", "resources/list", None))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw["resources"][0]["uri"], "demo://clock");

    // A JSON-RPC error from the server is typed, with its code.
    let err = sup
        .send(CallTool::new("demo", "no_such_tool", json!({})))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32602, .. }), "{err}");
    let err = sup
        .send(Call::new("demo", "bogus/method", None))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err}");

    let err = sup
        .send(CallTool::new("elsewhere", "echo", json!({})))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), "server_not_found");

    // The hot path: straight to the server's actor.
    let direct: Addr<ServerActor> = sup.send(GetServer("demo".into())).await.unwrap().unwrap();
    let echo = direct
        .send(CallTool::new("demo", "echo", json!({"text": "direct"})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&echo), "direct");
    let st = status(&sup, "demo").await;
    assert_eq!(st.counters.calls_ok, 8);
    assert_eq!(st.counters.calls_failed, 2);
    sup.send(Shutdown).await.unwrap();
}

async fn calls_made_while_connecting_wait_for_ready() {
    let dir = tempdir();
    let config = demo("sleepy", dir.path()).env("DEMO_SLOW_START_MS", "700");
    let (sup, _events) = start_supervisor(quick_settings(), vec![config]);
    let echo = CallTool::new("sleepy", "echo", json!({"text": "patience"}))
        .timeout(Duration::from_secs(10));
    let result = sup.send(echo).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "patience");
    sup.send(Shutdown).await.unwrap();
}

async fn a_call_that_never_gets_sent_fails_at_its_deadline_as_unavailable() {
    let dir = tempdir();
    let config = demo("down", dir.path()).env("DEMO_FAIL_STARTS", "100");
    let (sup, _events) = start_supervisor(quick_settings(), vec![config]);
    let started = Instant::now();
    let call =
        CallTool::new("down", "echo", json!({"text": "x"})).timeout(Duration::from_millis(300));
    let err = sup.send(call).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("not sent"), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_secs(2));
    sup.send(Shutdown).await.unwrap();
}

async fn servers_start_in_parallel() {
    let dir = tempdir();
    let configs: Vec<_> = (0..3)
        .map(|i| demo(&format!("s{i}"), dir.path()).env("DEMO_SLOW_START_MS", "1500"))
        .collect();
    let started = Instant::now();
    let (sup, events) = start_supervisor(quick_settings(), configs);
    for i in 0..3 {
        events.ready(&format!("s{i}"), 1).await;
    }
    // One after the other would take 4.5 s.
    let took = started.elapsed();
    assert!(took < Duration::from_millis(4000), "{took:?}");
    sup.send(Shutdown).await.unwrap();
}

async fn server_requests_go_to_the_registered_handler() {
    struct Roots;
    impl Actor for Roots {
        type Context = Context<Self>;
    }
    impl Handler<ServerRequest> for Roots {
        type Result = Result<Value, RpcError>;
        fn handle(&mut self, req: ServerRequest, _: &mut Context<Self>) -> Self::Result {
            match req.method.as_str() {
                "roots/list" => Ok(json!({"roots": [{"uri": "file:///srv", "name": "srv"}]})),
                other => Err(RpcError::new(-32601, format!("no {other}"))),
            }
        }
    }

    let dir = tempdir();
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(demo("with", dir.path()))
        .subscriber(recipient)
        .request_handler(
            Roots.start().recipient(),
            json!({"roots": {"listChanged": true}}),
        )
        .start()
        .unwrap();
    events.ready("with", 1).await;
    let ask = CallTool::new("with", "ask_client", json!({"method": "roots/list"}));
    let result = sup.send(ask).await.unwrap().unwrap();
    assert_ne!(result.is_error, Some(true));
    assert!(
        text_of(&result).contains("file:///srv"),
        "{}",
        text_of(&result)
    );
    sup.send(Shutdown).await.unwrap();

    // Without a handler: a proper JSON-RPC error, and `ping` still answered.
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("without", dir.path())]);
    events.ready("without", 1).await;
    let ask = CallTool::new("without", "ask_client", json!({"method": "roots/list"}));
    let answer = sup.send(ask).await.unwrap();
    if era() == "modern" {
        // The 2026-07-28 revision asks in the call's result: nobody can answer, the call
        // fails naming what is missing.
        let error = answer.expect_err("no handler");
        assert_eq!(error.kind(), ErrorKind::Config, "{error}");
        sup.send(Shutdown).await.unwrap();
        return;
    }
    let result = answer.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("-32601"), "{}", text_of(&result));
    let ping = CallTool::new("without", "ask_client", json!({"method": "ping"}));
    let result = sup.send(ping).await.unwrap().unwrap();
    assert_eq!(text_of(&result), "{}");
    sup.send(Shutdown).await.unwrap();
}

async fn notifications_reach_subscribers_and_refresh_tools() {
    let dir = tempdir();
    // Log messages only come at a level asked for (in the 2026-07-28 revision, with every
    // request; in the session era, with `logging/setLevel`).
    let config =
        demo("demo", dir.path()).log_level(Some(mcp_supervisor::protocol::meta::LogLevel::Info));
    let (sup, events) = start_supervisor(quick_settings(), vec![config]);
    events.ready("demo", 1).await;

    let notify = |kind: &str| CallTool::new("demo", "notify", json!({ "kind": kind }));
    sup.send(notify("tools_changed")).await.unwrap().unwrap();
    let changed = events
        .wait_count("tools changed", 1, Duration::from_secs(10), |e| {
            matches!(e, ServerEvent::ToolsChanged { .. })
        })
        .await;
    assert_eq!(
        changed,
        ServerEvent::ToolsChanged {
            server: "demo".into(),
            added: vec!["extra".into()],
            removed: vec![],
            changed: vec![],
        }
    );
    assert_eq!(status(&sup, "demo").await.tool_count(), 11);

    sup.send(notify("log")).await.unwrap().unwrap();
    let log = events
        .wait_count("log", 1, Duration::from_secs(10), |e| {
            matches!(e, ServerEvent::Log { .. })
        })
        .await;
    match log {
        ServerEvent::Log { params, .. } => assert_eq!(params["data"], "hello from demo"),
        other => panic!("{other:?}"),
    }
    sup.send(Shutdown).await.unwrap();
}

async fn progress_can_restart_the_timeout_within_a_maximum() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    // 1.5 s of work reporting every 0.25 s: a 0.6 s timeout alone would expire.
    let slow = || CallTool::new("demo", "slow", json!({"seconds": 1.5, "steps": 6}));

    let err = sup
        .send(slow().timeout(Duration::from_millis(600)))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);

    let ok = sup
        .send(
            slow()
                .timeout(Duration::from_millis(600))
                .reset_timeout_on_progress(Duration::from_secs(10)),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&ok), "done after 1.5s");

    // The maximum total time holds, however much progress is reported.
    let started = Instant::now();
    let err = sup
        .send(
            slow()
                .timeout(Duration::from_millis(600))
                .reset_timeout_on_progress(Duration::from_millis(900)),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1400),
        "{took:?}"
    );
    sup.send(Shutdown).await.unwrap();
}

async fn too_many_calls_in_flight_are_refused() {
    let dir = tempdir();
    let config = demo("busy", dir.path()).max_in_flight(2);
    let (sup, events) = start_supervisor(quick_settings(), vec![config]);
    events.ready("busy", 1).await;
    let hang = || CallTool::new("busy", "hang", json!({})).timeout(Duration::from_secs(5));
    let first = sup.send(hang());
    let second = sup.send(hang());
    let third = sup.send(hang()).await.unwrap().unwrap_err();
    assert!(
        matches!(third, Error::Overloaded { limit: 2, .. }),
        "{third}"
    );
    // Shutdown answers the calls in flight at once, not at their deadline: they were sent,
    // so the tool may have run.
    let started = Instant::now();
    sup.send(Shutdown).await.unwrap();
    for pending in [first, second] {
        let err = pending.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    }
    assert!(started.elapsed() < Duration::from_secs(4));
}

async fn a_panicking_server_actor_is_replaced() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(
        quick_settings(),
        vec![demo("fragile", dir.path()), demo("other", dir.path())],
    );
    events.ready("fragile", 1).await;
    events.ready("other", 1).await;
    let old = status(&sup, "fragile").await.pid.unwrap();

    sup.do_send(InjectPanic {
        server: "fragile".into(),
    });
    events.ready("fragile", 2).await;
    assert!(
        gone_within(old, Duration::from_secs(2)).await,
        "the dead actor's process is killed"
    );
    let echo = CallTool::new("fragile", "echo", json!({"text": "new actor"}));
    assert_eq!(
        text_of(&sup.send(echo).await.unwrap().unwrap()),
        "new actor"
    );
    assert_eq!(status(&sup, "other").await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
}

/// Issue 22, item 12 (found by the soak): calls routed to an actor that panics before it
/// takes them — queued in its mailbox, or forwarded once it is gone but before the supervisor
/// has heard — never reached the server, and a new actor is on its way: `unavailable` (safe to
/// make again), never `stopped`, which tells the caller the server was stopped for good.
async fn calls_an_actor_never_took_before_its_panic_are_unavailable() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("fragile", dir.path())]);
    events.ready("fragile", 1).await;
    // The panic goes through the supervisor: the calls behind it are forwarded into the
    // mailbox of the actor, which panics before it takes them.
    sup.do_send(InjectPanic {
        server: "fragile".into(),
    });
    pings_meeting_a_panic(&sup, "in the dying actor's mailbox").await;
    events.ready("fragile", 2).await;
    // The panic goes to the actor itself, which runs (and dies) before the supervisor forwards
    // the calls queued meanwhile: it finds the actor gone before it has heard so.
    let actor = sup
        .send(GetServer("fragile".into()))
        .await
        .unwrap()
        .unwrap();
    actor.do_send(InjectPanic {
        server: "fragile".into(),
    });
    pings_meeting_a_panic(&sup, "forwarded to the dead actor").await;
    events.ready("fragile", 3).await;
    sup.send(Shutdown).await.unwrap();
}

/// Pings `fragile` 100 times at once through the supervisor, while its actor panics: none
/// may be answered `stopped`, and some must meet the panic.
async fn pings_meeting_a_panic(sup: &Addr<Supervisor>, how: &str) {
    let calls: Vec<_> = (0..100)
        .map(|_| sup.send(Ping::new("fragile").timeout(Duration::from_secs(10))))
        .collect();
    let (mut stopped, mut unavailable) = (0, 0);
    for answer in futures_util::future::join_all(calls).await {
        match answer.expect("the supervisor answers") {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Unavailable => unavailable += 1,
            Err(e) if e.kind() == ErrorKind::Stopped => stopped += 1,
            Err(e) => panic!("{how}: unexpected {e}"),
        }
    }
    assert_eq!(stopped, 0, "{how}: {unavailable} unavailable");
    assert!(unavailable > 0, "{how}: the calls met the panic");
}

async fn a_server_actor_shut_down_directly_is_not_restarted() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("solo", dir.path())]);
    events.ready("solo", 1).await;
    let direct = sup.send(GetServer("solo".into())).await.unwrap().unwrap();
    direct.send(Shutdown).await.unwrap();
    events.state("solo", "stopped", 1).await;
    // The supervisor hears of it and forgets the server rather than replacing it.
    until_async(|| async { sup.send(GetServer("solo".into())).await.unwrap().is_err() }).await;
    assert_eq!(
        events
            .messages("solo")
            .iter()
            .filter(|m| *m == "Connected")
            .count(),
        1
    );
    sup.send(Shutdown).await.unwrap();
}

async fn servers_can_be_added_and_removed_at_run_time() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![]);
    sup.send(AddServer(demo("late", dir.path())))
        .await
        .unwrap()
        .unwrap();
    let dup = sup
        .send(AddServer(demo("late", dir.path())))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(dup.kind(), ErrorKind::Config);
    events.ready("late", 1).await;
    let pid = status(&sup, "late").await.pid.unwrap();

    sup.send(RemoveServer("late".into()))
        .await
        .unwrap()
        .unwrap();
    assert!(!is_running(pid), "removal answers once the process is gone");
    let err = sup
        .send(CallTool::new("late", "echo", json!({})))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ServerNotFound);
    sup.send(Shutdown).await.unwrap();
}

async fn configuration_and_protocol_errors_are_typed() {
    let dir = tempdir();
    // A server of a future revision: it answers initialize, or lists, only versions we do
    // not speak.
    let future = demo("future", dir.path())
        .env("DEMO_PROTOCOL_VERSION", "2099-01-01")
        .env("DEMO_MODERN_VERSIONS", "2099-01-01")
        .max_connect_retries(0);
    let missing = ServerConfig::stdio("missing", "/nonexistent/mcp-server").max_connect_retries(0);
    let (sup, events) = start_supervisor(quick_settings(), vec![future, missing]);
    events.state("future", "failed", 1).await;
    events.state("missing", "failed", 1).await;

    let st = status(&sup, "future").await;
    assert_eq!(
        st.last_error.unwrap().kind(),
        ErrorKind::UnsupportedProtocolVersion
    );
    let st = status(&sup, "missing").await;
    let err = st.last_error.unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidConnection);
    assert!(
        err.to_string()
            .contains("cannot start `/nonexistent/mcp-server`"),
        "{err}"
    );
    sup.send(Shutdown).await.unwrap();

    let dup = Supervisor::builder()
        .server(demo("a", dir.path()))
        .server(demo("a", dir.path()))
        .start()
        .unwrap_err();
    assert!(
        matches!(dup, Error::Config { ref field, .. } if field == "name"),
        "{dup}"
    );
}

/// A variable of this process's environment that a child does not get by default (it is not
/// in `config::SAFE_ENV_VARS`), with its value: `cargo test` sets several (`CARGO_PKG_NAME`,
/// ...). Read, never set: the tests share the process, and setting a variable races with the
/// other tests' threads reading the environment as they start children.
fn a_variable_children_do_not_get() -> (String, String) {
    let plain = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_graphic() && !b"\\]$`\"".contains(&b))
    };
    std::env::vars()
        .filter(|(key, value)| {
            !config::SAFE_ENV_VARS.contains(&key.as_str())
                && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !value.is_empty()
                && value.len() <= 100
                && plain(value)
        })
        .min()
        .expect("a variable outside SAFE_ENV_VARS in the test's environment")
}

async fn the_child_gets_a_safe_environment_unless_told_to_inherit() {
    let (variable, value) = a_variable_children_do_not_get();
    let script = format!("echo \"secret=[${variable}] path=[${{PATH:+set}}]\" >&2; exit 1");
    let server = |name: &str| {
        ServerConfig::stdio(name, "/bin/sh")
            .args(["-c", &script])
            .max_connect_retries(0)
    };
    let (sup, events) = start_supervisor(
        quick_settings(),
        vec![server("safe"), server("inherit").inherit_env(true)],
    );
    events.state("safe", "failed", 1).await;
    events.state("inherit", "failed", 1).await;
    let safe = status(&sup, "safe").await.last_error.unwrap();
    assert!(
        safe.stderr_tail()
            .contains(&"secret=[] path=[set]".to_string()),
        "{safe}"
    );
    assert!(safe.to_string().contains("exit code 1"), "{safe}");
    let inherit = status(&sup, "inherit").await.last_error.unwrap();
    assert!(
        inherit
            .stderr_tail()
            .contains(&format!("secret=[{value}] path=[set]")),
        "{inherit}"
    );
    sup.send(Shutdown).await.unwrap();
}

async fn a_requested_reconnect_settles_calls_in_flight() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), vec![demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let old = status(&sup, "demo").await.pid.unwrap();
    let hang = sup.send(CallTool::new("demo", "hang", json!({})).timeout(Duration::from_secs(20)));
    // Once `echo` is answered, the server has read the `hang` request written before it.
    sup.send(CallTool::new("demo", "echo", json!({"text": "x"})))
        .await
        .unwrap()
        .unwrap();

    sup.send(Reconnect {
        server: "demo".into(),
    })
    .await
    .unwrap()
    .unwrap();
    let err = hang.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    events.ready("demo", 2).await;
    assert_ne!(status(&sup, "demo").await.pid, Some(old));
    assert!(gone_within(old, Duration::from_secs(2)).await);
    sup.send(Shutdown).await.unwrap();
}

// Every test above, once per protocol era (the demo server speaks both).
in_both_eras!(
    caches_session_and_all_tool_pages,
    typed_calls_and_routing,
    calls_made_while_connecting_wait_for_ready,
    a_call_that_never_gets_sent_fails_at_its_deadline_as_unavailable,
    servers_start_in_parallel,
    server_requests_go_to_the_registered_handler,
    notifications_reach_subscribers_and_refresh_tools,
    progress_can_restart_the_timeout_within_a_maximum,
    too_many_calls_in_flight_are_refused,
    a_panicking_server_actor_is_replaced,
    calls_an_actor_never_took_before_its_panic_are_unavailable,
    a_server_actor_shut_down_directly_is_not_restarted,
    servers_can_be_added_and_removed_at_run_time,
    configuration_and_protocol_errors_are_typed,
    the_child_gets_a_safe_environment_unless_told_to_inherit,
    a_requested_reconnect_settles_calls_in_flight,
);
