//! Changing a server without a failed call: `Restart` and `ReplaceServer` start a new
//! generation beside the one serving calls, route new calls to it once it is Ready, and drain
//! the old one.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crate::common::*;
use crate::in_both_eras;
use mcp_supervisor::*;
use serde_json::json;

fn replacement_steps(events: &Events, server: &str) -> Vec<&'static str> {
    events
        .all()
        .into_iter()
        .filter(|e| e.server() == server)
        .filter_map(|e| match e {
            ServerEvent::Replacing { .. } => Some("replacing"),
            ServerEvent::Replaced { .. } => Some("replaced"),
            ServerEvent::ReplaceFailed { .. } => Some("replace_failed"),
            _ => None,
        })
        .collect()
}

/// The versions a load test replaces a server by: each says which it is in `echo`'s answer.
enum Versions {
    /// The demo server with `--version-label vN`: a different argument each time, so each
    /// generation is a process of its own (and, by its command line, another server).
    Stdio(tempfile::TempDir),
    /// A Streamable HTTP server per version, on a port of its own; each is stopped once the
    /// version after it serves.
    Http(Vec<http_server::TestHttpServer>),
}

impl Versions {
    async fn config(&mut self, version: u32) -> ServerConfig {
        match self {
            Versions::Stdio(dir) => {
                demo("demo", dir.path()).args(["--version-label".to_owned(), format!("v{version}")])
            }
            Versions::Http(servers) => {
                let server = http_server().await;
                server.faults().echo_prefix(&format!("[v{version}] "));
                let url = server.url();
                servers.push(server);
                ServerConfig::http("demo", url)
            }
        }
    }

    /// Version `version` serves: what is left of the one before goes (over HTTP, once the old
    /// generation let go of it: its listens closed, its session deleted).
    async fn retire_before(&mut self, version: u32) {
        if let Versions::Http(servers) = self {
            let Some(old) = servers.get(version as usize - 1) else {
                return;
            };
            let stats = old.stats();
            until("the old generation let go of its server", || {
                stats.open_listens() == 0 && stats.sessions() == 0
            })
            .await;
        }
    }
}

/// The version in `echo`'s answer, and the text after it.
fn versioned(answer: &str) -> Option<(u32, &str)> {
    let rest = answer.strip_prefix("[v")?;
    let (version, text) = rest.split_once("] ")?;
    Some((version.parse().ok()?, text))
}

/// 16 callers call without pause while the server is replaced 10 times by a new version of
/// itself: no call fails, none is `outcome_unknown`, every call made after the `Replaced` of
/// version N is answered by N or later, and no process of an old version is left.
async fn ten_replacements_under_load_fail_no_call() {
    replacements_under_load(Versions::Stdio(tempdir())).await;
}

/// The same over Streamable HTTP: each version a server of its own, each generation a
/// connection (and, in the session era, a session) of its own.
async fn ten_replacements_under_load_fail_no_call_over_http() {
    replacements_under_load(Versions::Http(Vec::new())).await;
}

async fn replacements_under_load(mut versions: Versions) {
    let first = versions.config(0).await;
    let (sup, events) = start_supervisor(quick_settings(), [first]);
    events.ready("demo", 1).await;
    let running = Rc::new(Cell::new(true));
    // The version that serves new calls: set once its `ReplaceServer` answered.
    let serving = Rc::new(Cell::new(0u32));
    let failures = Rc::new(RefCell::new(Vec::new()));
    let by_version = Rc::new(RefCell::new(BTreeMap::<u32, u64>::new()));
    let callers: Vec<_> = (0..16)
        .map(|caller| {
            let (sup, running, serving) = (sup.clone(), running.clone(), serving.clone());
            let (failures, by_version) = (failures.clone(), by_version.clone());
            actix::spawn(async move {
                let mut n = 0u64;
                while running.get() {
                    n += 1;
                    let text = format!("{caller}/{n}");
                    let call = CallTool::new("demo", "echo", json!({ "text": text }))
                        .timeout(Duration::from_secs(10));
                    let sent_while = serving.get();
                    let answer = sup.send(call).await;
                    let shown = match &answer {
                        Ok(Ok(result)) => text_of(result),
                        _ => String::new(),
                    };
                    match versioned(&shown) {
                        Some((version, echoed)) if echoed == text && version >= sent_while => {
                            *by_version.borrow_mut().entry(version).or_default() += 1;
                        }
                        _ => failures.borrow_mut().push(format!(
                            "{text} (sent while v{sent_while} served): {answer:?}"
                        )),
                    }
                }
            })
        })
        .collect();
    let mut pids: Vec<u32> = status(&sup, "demo").await.pid.into_iter().collect();
    for version in 1..=10 {
        let answered = || by_version.borrow().values().sum::<u64>();
        let before = answered();
        let config = versions.config(version).await;
        sup.send(ReplaceServer::new(config))
            .await
            .unwrap()
            .expect("replaced");
        serving.set(version);
        let old = pids.last().copied();
        pids.extend(status(&sup, "demo").await.pid);
        // The callers went on through the replacement, and the old version is gone.
        until("calls answered after the replacement", || {
            answered() > before + 16
        })
        .await;
        if let Some(old) = old {
            assert!(
                gone_within(old, Duration::from_secs(5)).await,
                "process {old} of v{} outlived its drain",
                version - 1
            );
        }
        versions.retire_before(version).await;
    }
    running.set(false);
    for caller in callers {
        caller.await.expect("a caller");
    }
    assert!(failures.borrow().is_empty(), "{:#?}", failures.borrow());
    let served: Vec<u32> = by_version.borrow().keys().copied().collect();
    assert_eq!(served, (0..=10).collect::<Vec<_>>(), "every version served");
    let mut distinct = pids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        pids.is_empty() || distinct.len() == 11,
        "a new process per version: {pids:?}"
    );
    assert_eq!(
        replacement_steps(&events, "demo"),
        ["replacing", "replaced"].repeat(10)
    );
    sup.send(Shutdown).await.unwrap();
    for pid in pids {
        assert!(
            gone_within(pid, Duration::from_secs(5)).await,
            "process {pid} outlived the shutdown"
        );
    }
    versions.retire_before(11).await;
}

/// A new generation that cannot start is stopped, the failure said (the answer, the event,
/// the status's `last_error`); the old one serves on, and callers calling without pause meanwhile
/// see no failure. Once with a program that cannot be started, once with a new version that
/// exits at every start (its start-up policy spent: one retry).
async fn a_replacement_that_cannot_start_leaves_the_old_one_serving() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let pid = status(&sup, "demo").await.pid;
    let running = Rc::new(Cell::new(true));
    let failures = Rc::new(RefCell::new(Vec::new()));
    let answered = Rc::new(Cell::new(0u64));
    let callers: Vec<_> = (0..4)
        .map(|caller| {
            let (sup, running) = (sup.clone(), running.clone());
            let (failures, answered) = (failures.clone(), answered.clone());
            actix::spawn(async move {
                let mut n = 0u64;
                while running.get() {
                    n += 1;
                    let text = format!("{caller}/{n}");
                    let call = CallTool::new("demo", "echo", json!({ "text": text }));
                    match sup.send(call).await {
                        Ok(Ok(result)) if text_of(&result) == text => {
                            answered.set(answered.get() + 1)
                        }
                        other => failures.borrow_mut().push(format!("{text}: {other:?}")),
                    }
                }
            })
        })
        .collect();
    let broken = [
        (
            ServerConfig::stdio("demo", "/nonexistent/mcp-server"),
            "/nonexistent/mcp-server",
        ),
        (
            demo("demo", dir.path())
                .env("DEMO_FAIL_STARTS", "1000")
                .max_connect_retries(1),
            "simulated start-up failure 2/1000",
        ),
    ];
    for (round, (config, why)) in broken.into_iter().enumerate() {
        let before = answered.get();
        let failed = sup
            .send(ReplaceServer::new(config))
            .await
            .unwrap()
            .expect_err("the new generation cannot start");
        assert_eq!(failed.kind(), ErrorKind::InvalidConnection, "{failed}");
        assert!(failed.to_string().contains(why), "{failed}");
        let shown = status(&sup, "demo").await;
        let last = shown.last_error.expect("the status says why");
        assert_eq!(last.to_string(), failed.to_string());
        assert_eq!(shown.state, ServerState::Ready, "the old one serves on");
        assert!(shown.next_generation.is_none(), "the new one is gone");
        assert_eq!(
            replacement_steps(&events, "demo"),
            ["replacing", "replace_failed"].repeat(round + 1)
        );
        until("calls answered after the failure", || {
            answered.get() > before + 4
        })
        .await;
    }
    running.set(false);
    for caller in callers {
        caller.await.expect("a caller");
    }
    assert!(failures.borrow().is_empty(), "{:#?}", failures.borrow());
    assert_eq!(status(&sup, "demo").await.pid, pid, "the same process");
    sup.send(Shutdown).await.unwrap();
}

/// A call longer than the drain time is answered as a call whose server was stopped: it may
/// have run, so `outcome_unknown`, never re-run on the new generation.
async fn a_call_longer_than_the_drain_is_outcome_unknown() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let slow = CallTool::new("demo", "slow", json!({"seconds": 5, "steps": 1}))
        .timeout(Duration::from_secs(10));
    let slow = actix::spawn(sup.send(slow));
    let restart = Restart::new("demo").drain_timeout(Duration::from_millis(200));
    sup.send(restart).await.unwrap().expect("replaced");
    let answer = slow.await.expect("the caller").expect("delivered");
    let error = answer.expect_err("cut by the drain");
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
    let echo = CallTool::new("demo", "echo", json!({"text": "new"}));
    let result = sup
        .send(echo)
        .await
        .unwrap()
        .expect("the new generation answers");
    assert_eq!(text_of(&result), "new");
    sup.send(Shutdown).await.unwrap();
}

/// Calls made while the old generation reconnects (its process was killed, the new one is
/// slow to start) go to the new generation once it is Ready: none is answered `stopped` or
/// `unavailable`, each is answered by the new version, and the old generation reconnects no
/// further (its half-started process is stopped, no other started).
async fn calls_waiting_on_a_reconnecting_old_generation_go_to_the_new_one() {
    let dir = tempdir();
    let old = demo("demo", dir.path())
        .env("DEMO_SLOW_START_MS", "2500")
        .env("DEMO_GENERATION", "old");
    let (sup, events) = start_supervisor(quick_settings(), [old]);
    events.ready("demo", 1).await;
    let pid = status(&sup, "demo").await.pid.expect("a pid");
    kill(pid, nix::sys::signal::Signal::SIGKILL);
    events.state("demo", "reconnecting", 1).await;
    let waiting: Vec<_> = (0..4)
        .map(|i| {
            let call = CallTool::new("demo", "echo", json!({ "text": format!("w{i}") }))
                .timeout(Duration::from_secs(20));
            actix::spawn(sup.send(call))
        })
        .collect();
    let new = demo("demo", dir.path())
        .env("DEMO_VERSION", "v1")
        .env("DEMO_GENERATION", "new");
    sup.send(ReplaceServer::new(new))
        .await
        .unwrap()
        .expect("replaced");
    for (i, call) in waiting.into_iter().enumerate() {
        let result = call
            .await
            .expect("the caller")
            .expect("delivered")
            .expect("answered by the new generation");
        assert_eq!(text_of(&result), format!("[v1] w{i}"));
    }
    until("no process of the old generation", || {
        processes_with_env("DEMO_GENERATION", "old").is_empty()
    })
    .await;
    assert_eq!(
        events
            .states("demo")
            .iter()
            .filter(|s| **s == "reconnecting")
            .count(),
        1,
        "the old generation did not try again: {:?}",
        events.states("demo")
    );
    sup.send(Shutdown).await.unwrap();
}

/// A task in flight is the server's: across a `Restart` (the same server) the new generation
/// polls it and its caller gets the result, although the old generation, which started it,
/// drains for only 200 ms and is gone well before the task ends.
async fn a_task_in_flight_is_polled_on_by_the_new_generation() {
    let dir = tempdir();
    let config = demo_in("modern", "demo", dir.path()).env(
        "DEMO_TASKS_DIR",
        dir.path().join("tasks").display().to_string(),
    );
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("demo", 1).await;
    let old = status(&sup, "demo").await.pid.expect("a pid");
    let job = CallTool::new("demo", "long_job", json!({"ms": 3000, "poll_ms": 50}))
        .timeout(Duration::from_secs(20));
    let job = actix::spawn(sup.send(job));
    until_async(|| {
        let sup = sup.clone();
        async move {
            sup.send(ListTasks::new("demo"))
                .await
                .ok()
                .and_then(Result::ok)
                .is_some_and(|t| !t.is_empty())
        }
    })
    .await;
    let restart = Restart::new("demo").drain_timeout(Duration::from_millis(200));
    sup.send(restart).await.unwrap().expect("replaced");
    assert!(
        gone_within(old, Duration::from_secs(5)).await,
        "the old generation stopped"
    );
    assert!(!job.is_finished(), "the task still runs");
    let result = job
        .await
        .expect("the caller")
        .expect("delivered")
        .expect("the task's result, through the new generation");
    assert_eq!(text_of(&result), "done");
    let tasks = sup.send(ListTasks::new("demo")).await.unwrap().unwrap();
    assert!(tasks.is_empty(), "delivered, not kept: {tasks:?}");
    sup.send(Shutdown).await.unwrap();
}

/// A subscription moves to the new generation with no window for a lost update: the
/// replacement is done only once the new generation's listen is acknowledged (2026-07-28), so
/// an update the new server sends right after `Replaced` reaches the application although that
/// server is slow (300 ms) to put a listen in force.
#[actix::test]
async fn a_subscription_is_in_force_on_the_new_generation_when_it_takes_over() {
    let old = http_server::TestHttpServer::start_with(http_server::Era::Modern).await;
    let (sup, events) = start_supervisor(quick_settings(), [ServerConfig::http("demo", old.url())]);
    events.ready("demo", 1).await;
    sup.send(Subscribe {
        server: "demo".into(),
        uri: "test://r".into(),
    })
    .await
    .unwrap()
    .expect("subscribed");
    let new = http_server::TestHttpServer::start_with(http_server::Era::Modern).await;
    new.faults().listen_ack_delay_ms(300);
    sup.send(ReplaceServer::new(ServerConfig::http("demo", new.url())))
        .await
        .unwrap()
        .expect("replaced");
    assert_eq!(
        new.stats().open_listens(),
        1,
        "in force before the replacement"
    );
    let notify = CallTool::new("demo", "notify_resource", json!({"uri": "test://r"}));
    sup.send(notify)
        .await
        .unwrap()
        .expect("the new server notifies");
    events
        .resource_updated("test://r", Duration::from_secs(5))
        .await;
    let stats = old.stats();
    until("the old generation closed its listen", || {
        stats.open_listens() == 0
    })
    .await;
    sup.send(Shutdown).await.unwrap();
    new.stop().await;
    old.stop().await;
}

/// Over HTTP a task is the server's behind the URL: replaced with a rotated token (the same
/// server), the old generation hands the task over at once and stops although its drain time
/// is a minute, and the polls carry the new token from then on.
#[actix::test]
async fn a_task_over_http_is_polled_by_the_new_generation_at_once() {
    let server = http_server::TestHttpServer::start_with(http_server::Era::Modern).await;
    server.faults().task_poll_ms(100);
    let config = |token: &str| ServerConfig::http("demo", server.url()).header("x-token", token);
    let (sup, events) = start_supervisor(quick_settings(), [config("old")]);
    events.ready("demo", 1).await;
    let job = CallTool::new("demo", "job", json!({"ms": 1500, "text": "built"}))
        .timeout(Duration::from_secs(20));
    let job = actix::spawn(sup.send(job));
    let stats = server.stats();
    until("the task is polled", || {
        !stats.seen_posts("tasks/get").is_empty()
    })
    .await;
    let replace = ReplaceServer::new(config("new")).drain_timeout(Duration::from_secs(60));
    sup.send(replace).await.unwrap().expect("replaced");
    let result = job
        .await
        .expect("the caller")
        .expect("delivered")
        .expect("the task's result");
    assert_eq!(text_of(&result), "built");
    let tokens: Vec<String> = stats
        .seen_posts("tasks/get")
        .iter()
        .map(|poll| poll.header("x-token").unwrap_or_default().to_owned())
        .collect();
    let first_new = tokens.iter().position(|t| t == "new").expect("polled anew");
    assert!(
        tokens[first_new..].iter().all(|t| t == "new"),
        "the old generation polled on: {tokens:?}"
    );
    sup.send(Shutdown).await.unwrap();
    server.stop().await;
}

in_both_eras!(
    ten_replacements_under_load_fail_no_call,
    ten_replacements_under_load_fail_no_call_over_http,
    a_replacement_that_cannot_start_leaves_the_old_one_serving,
    a_call_longer_than_the_drain_is_outcome_unknown,
    calls_waiting_on_a_reconnecting_old_generation_go_to_the_new_one,
);

#[actix::test]
async fn a_task_in_flight_across_a_restart() {
    a_task_in_flight_is_polled_on_by_the_new_generation().await;
}

/// One reload that adds, removes, changes, keeps, and meets an entry that cannot be loaded: each
/// server gets what the diff says, and the one with the invalid entry runs on as it was.
#[actix::test]
async fn a_reload_adds_removes_replaces_and_keeps_in_one_diff() {
    let dir = tempdir();
    let configs = [
        demo("keep", dir.path()),
        demo("change", dir.path()),
        demo("gone", dir.path()),
        demo("frozen", dir.path()),
    ];
    let (sup, events) = start_supervisor(quick_settings(), configs);
    for name in ["keep", "change", "gone", "frozen"] {
        events.ready(name, 1).await;
    }
    let pid = |name: &'static str| {
        let sup = sup.clone();
        async move { status(&sup, name).await.pid }
    };
    let (keep, change, gone, frozen) = (
        pid("keep").await,
        pid("change").await,
        pid("gone").await,
        pid("frozen").await,
    );
    // `frozen`'s new entry does not load: a partial load reports it.
    let loaded = LoadOptions::new()
        .load_json(r#"{"mcpServers": {"frozen": {"command": 5}}}"#)
        .expect("a partial load");
    assert_eq!(loaded.invalid.len(), 1);
    let mut reload = Reload::from_loaded(loaded);
    reload.servers = vec![
        demo("keep", dir.path()),
        demo("change", dir.path()).env("DEMO_STDERR_LINES", "1"),
        demo("new", dir.path()),
    ];
    let report = sup.send(reload).await.unwrap();
    let outcomes: Vec<(String, String)> = report
        .servers
        .iter()
        .map(|(name, outcome)| {
            let shown = outcome.to_string();
            let word = shown.split_whitespace().next().unwrap_or("").to_owned();
            (name.clone(), word)
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("change", "replaced"),
            ("frozen", "kept"),
            ("gone", "removed"),
            ("keep", "unchanged"),
            ("new", "added"),
        ]
        .map(|(n, o)| (n.to_owned(), o.to_owned())),
        "{report:#?}"
    );
    assert!(!report.is_ok(), "an entry was invalid");
    events.ready("new", 1).await;
    assert_eq!(pid("keep").await, keep, "untouched");
    assert_eq!(pid("frozen").await, frozen, "runs on as it was");
    assert_ne!(pid("change").await, change, "a new generation");
    let missing = sup.send(GetStatus::server("gone")).await.unwrap();
    assert_eq!(
        missing.expect_err("removed").kind(),
        ErrorKind::ServerNotFound
    );
    for old in [gone, change].into_iter().flatten() {
        assert!(
            gone_within(old, Duration::from_secs(5)).await,
            "process {old} outlived its server"
        );
    }
    let echo = CallTool::new("new", "echo", json!({"text": "hi"}));
    assert_eq!(
        text_of(&sup.send(echo).await.unwrap().expect("added and serving")),
        "hi"
    );
    sup.send(Shutdown).await.unwrap();
}

/// While the new generation starts, the status shows it beside the one that serves the calls.
#[actix::test]
async fn the_status_shows_both_generations_while_they_overlap() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let slow = demo("demo", dir.path()).env("DEMO_SLOW_START_MS", "400");
    let replacing = actix::spawn(sup.send(ReplaceServer::new(slow)));
    events
        .wait_count(
            "the replacement under way",
            1,
            Duration::from_secs(5),
            |e| matches!(e, ServerEvent::Replacing { .. }),
        )
        .await;
    let during = status(&sup, "demo").await;
    assert_eq!(during.state, ServerState::Ready, "the old one serves");
    let next = during.next_generation.expect("the new generation is shown");
    assert_ne!(next.state, ServerState::Ready, "{:?}", next.state);
    replacing
        .await
        .expect("the replacement")
        .unwrap()
        .expect("replaced");
    let after = status(&sup, "demo").await;
    assert!(after.next_generation.is_none());
    assert_ne!(after.pid, during.pid, "the new generation serves");
    sup.send(Shutdown).await.unwrap();
}

/// The watcher's next outcome, within 10 s.
async fn next_outcome(
    watcher: &mut mcp_supervisor::watch::ConfigWatcher,
) -> mcp_supervisor::watch::WatchOutcome {
    tokio::time::timeout(Duration::from_secs(10), watcher.next())
        .await
        .expect("an outcome within 10 s")
        .expect("the watcher runs")
}

/// A watched `mcpServers` file: an edit is applied once the file is quiet, an edit that does not
/// parse is not (the servers run on as they were), and the next good edit is applied again.
#[actix::test]
async fn a_watched_file_is_reloaded_on_change_and_a_broken_edit_is_not_applied() {
    use mcp_supervisor::watch::{ConfigWatcher, WatchOutcome};

    let dir = tempdir();
    let file = dir.path().join("mcp.json");
    let demo_exe = env!("CARGO_BIN_EXE_mcp-demo-server");
    // Each server as `name` or `name@version` (the demo server's `--version-label`).
    let servers = |names: &[&str]| {
        let entries: Vec<String> = names
            .iter()
            .map(|n| match n.split_once('@') {
                Some((name, version)) => format!(
                    r#""{name}": {{"command": "{demo_exe}", "args": ["--version-label", "{version}"]}}"#
                ),
                None => format!(r#""{n}": {{"command": "{demo_exe}"}}"#),
            })
            .collect();
        format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(", "))
    };
    let echo = |server: &'static str| CallTool::new(server, "echo", json!({"text": "hi"}));
    std::fs::write(&file, servers(&["one", "two@v1"])).unwrap();
    let loaded = ServerConfig::load_mcp_servers(&file).expect("the file loads");
    let (sup, events) = start_supervisor(quick_settings(), loaded.servers);
    events.ready("one", 1).await;
    events.ready("two", 1).await;
    let mut watcher = ConfigWatcher::start_with(
        sup.clone(),
        &file,
        LoadOptions::new(),
        Duration::from_millis(50),
    )
    .expect("watching");
    // An editor's save: a new file renamed over the old one.
    let saved = dir.path().join("mcp.json.tmp");
    std::fs::write(&saved, servers(&["one", "two@v2", "three"])).unwrap();
    std::fs::rename(&saved, &file).unwrap();
    match next_outcome(&mut watcher).await {
        WatchOutcome::Reloaded(report) => {
            let outcomes: Vec<(&str, String)> = report
                .servers
                .iter()
                .map(|(name, outcome)| (name.as_str(), outcome.to_string()))
                .collect();
            assert!(report.is_ok(), "{report:?}");
            assert!(
                matches!(report.servers["one"], ReloadOutcome::Unchanged),
                "{outcomes:?}"
            );
            assert!(
                matches!(report.servers["two"], ReloadOutcome::Replaced),
                "{outcomes:?}"
            );
            assert!(
                matches!(report.servers["three"], ReloadOutcome::Added),
                "{outcomes:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    events.ready("three", 1).await;
    assert_eq!(replacement_steps(&events, "two"), ["replacing", "replaced"]);
    assert!(replacement_steps(&events, "one").is_empty(), "untouched");
    let answer = sup.send(echo("two")).await.unwrap().expect("two answers");
    assert_eq!(text_of(&answer), "[v2] hi", "by the new version");

    // A broken edit: nothing applied, every server runs on, no event.
    let seen = events.all().len();
    std::fs::write(&file, r#"{"mcpServers": {"one": "#).unwrap();
    match next_outcome(&mut watcher).await {
        WatchOutcome::Refused(error) => assert_eq!(error.kind(), ErrorKind::Config, "{error}"),
        other => panic!("{other:?}"),
    }
    for name in ["one", "two", "three"] {
        assert_eq!(status(&sup, name).await.state, ServerState::Ready, "{name}");
    }
    assert_eq!(events.all().len(), seen, "{:?}", &events.all()[seen..]);

    // Mended, with `one` gone.
    std::fs::write(&file, servers(&["two@v2", "three"])).unwrap();
    match next_outcome(&mut watcher).await {
        WatchOutcome::Reloaded(report) => {
            assert!(
                matches!(report.servers["one"], ReloadOutcome::Removed),
                "{report:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    events.state("one", "stopped", 1).await;
    let gone = sup.send(GetStatus::server("one")).await.unwrap();
    assert_eq!(gone.expect_err("removed").kind(), ErrorKind::ServerNotFound);
    assert_eq!(
        replacement_steps(&events, "two"),
        ["replacing", "replaced"],
        "unchanged by the mended file"
    );
    drop(watcher);
    sup.send(Shutdown).await.unwrap();
}

/// `Reload::from_file` applies what an `mcpServers` file holds; a file that cannot be read
/// is a `config` error, and nothing is applied.
#[actix::test]
async fn a_reload_from_a_file_applies_it_and_a_missing_file_is_a_config_error() {
    let dir = tempdir();
    let missing = Reload::from_file(dir.path().join("nowhere.json")).expect_err("no file");
    assert_eq!(missing.kind(), ErrorKind::Config, "{missing}");
    let (sup, events) = start_supervisor(quick_settings(), [demo("one", dir.path())]);
    events.ready("one", 1).await;
    let file = dir.path().join("mcp.json");
    let demo_exe = env!("CARGO_BIN_EXE_mcp-demo-server");
    std::fs::write(
        &file,
        format!(r#"{{"mcpServers": {{"two": {{"command": "{demo_exe}"}}}}}}"#),
    )
    .unwrap();
    let report = sup
        .send(Reload::from_file(&file).expect("the file loads"))
        .await
        .unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(
        matches!(report.servers["one"], ReloadOutcome::Removed),
        "{report:?}"
    );
    assert!(
        matches!(report.servers["two"], ReloadOutcome::Added),
        "{report:?}"
    );
    events.ready("two", 1).await;
    sup.send(Shutdown).await.unwrap();
}
