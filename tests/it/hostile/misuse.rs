//! API misuse and lifecycle edges: timeouts of `Duration::MAX`, an actor that dies with calls in
//! flight, `Shutdown` and `RemoveServer` sent more than once. The promises: no panic, every call
//! answered honestly, and a shutdown answers only when the processes are gone.

use std::time::Duration;

use mcp_supervisor::{
    Call, CallTool, ErrorKind, GetServer, GetStatus, InjectPanic, ListTools, RemoveServer, Shutdown,
};
use serde_json::json;

use crate::common::*;
use crate::in_both_eras;

/// Defect 4: `Duration::MAX` as a timeout (per call, per server, as a progress maximum) used
/// to overflow `now + timeout` and panic the actor. Deadlines saturate: such a call simply
/// has no deadline.
async fn duration_max_timeouts_mean_no_deadline() {
    let dir = tempdir();
    let config = demo("max", &path(&dir)).call_timeout(Duration::MAX);
    let (sup, events) = start_supervisor(quick_settings(), [config]);
    events.ready("max", 1).await;

    let (progress, _rx) = progress_channel();
    let calls = [
        CallTool::new("max", "echo", json!({"text": "a"})),
        CallTool::new("max", "echo", json!({"text": "b"})).timeout(Duration::MAX),
        CallTool::new("max", "echo", json!({"text": "c"}))
            .on_progress(progress)
            .reset_timeout_on_progress(Duration::MAX),
    ];
    for (call, want) in calls.into_iter().zip(["a", "b", "c"]) {
        let result = sup
            .send(call)
            .await
            .unwrap()
            .expect("an answer, not a panic");
        assert_eq!(text_of(&result), want);
    }
    let status = sup.send(GetStatus::server("max")).await.unwrap().unwrap();
    assert_eq!(status[0].state.name(), "ready");
    assert_eq!(status[0].counters.calls_ok, 3);
}

/// A server whose `tools/call` and second `tools/list` never get an answer.
fn silent_server(name: &str) -> mcp_supervisor::ServerConfig {
    hostile(
        name,
        json!({"rules": [
            {"method": "tools/call", "do": []},
            {"method": "tools/list", "from": 2, "do": []}
        ]}),
    )
}

/// Defect 5: when the server's actor dies with calls written to the server, a tool call must
/// be `outcome_unknown` (it may have run) and a safe-by-nature one `unavailable` — never
/// `stopped`, which says the call was never sent.
async fn calls_in_flight_when_the_actor_dies_are_answered_honestly() {
    let (sup, events) = start_supervisor(quick_settings(), [silent_server("dies")]);
    events.ready("dies", 1).await;
    let actor = sup.send(GetServer("dies".into())).await.unwrap().unwrap();

    let tool =
        actor.send(CallTool::new("dies", "echo", json!({})).timeout(Duration::from_secs(20)));
    let list = actor.send(ListTools::new("dies").timeout(Duration::from_secs(20)));
    let tool = actix::spawn(tool);
    let list = actix::spawn(list);
    until_async(|| async {
        let status = actor
            .send(GetStatus::server("dies"))
            .await
            .unwrap()
            .unwrap();
        status[0].pending_calls == 2
    })
    .await;
    sup.do_send(InjectPanic {
        server: "dies".into(),
    });

    let tool = tool.await.unwrap().unwrap().expect_err("no answer came");
    assert_eq!(tool.kind(), ErrorKind::OutcomeUnknown, "{tool}");
    let list = list.await.unwrap().unwrap().expect_err("no answer came");
    assert_eq!(list.kind(), ErrorKind::Unavailable, "{list}");
    // The supervisor brings the server back.
    events.ready("dies", 2).await;
}

/// A server that neither exits when its stdin closes nor on SIGTERM: only SIGKILL, after
/// two shutdown graces, ends it.
fn stubborn_server(name: &str) -> mcp_supervisor::ServerConfig {
    hostile(
        name,
        json!({
            "on_start": [{"ignore_sigterm": true}],
            "on_eof": [{"sleep_ms": 60000}]
        }),
    )
}

/// Defect 6: two `Shutdown`s used to answer at once while the process still ran (the second
/// took the first one's pending completion). Each answers only when the process is gone.
async fn every_shutdown_of_a_server_answers_only_when_its_process_is_gone() {
    let (sup, events) = start_supervisor(quick_settings(), [stubborn_server("slow")]);
    events.ready("slow", 1).await;
    let pid = status(&sup, "slow")
        .await
        .pid
        .expect("a stdio server has a pid");
    let actor = sup.send(GetServer("slow".into())).await.unwrap().unwrap();

    let first = actix::spawn(actor.send(Shutdown));
    let second = actix::spawn(actor.send(Shutdown));
    let _ = second.await.unwrap();
    assert!(
        !is_running(pid),
        "the second Shutdown answered while the server ran"
    );
    let _ = first.await.unwrap();
    assert!(
        !is_running(pid),
        "the first Shutdown answered while the server ran"
    );
    // Once stopped, a Shutdown to the dead address has nothing to wait for.
    assert!(actor.send(Shutdown).await.is_err());
    sup.send(Shutdown).await.unwrap();
}

/// Defect 6, through the supervisor: `RemoveServer` twice, and `Shutdown` twice, each answer
/// only once the processes are gone.
async fn remove_and_shutdown_twice_answer_only_when_processes_are_gone() {
    let (sup, events) = start_supervisor(
        quick_settings(),
        [stubborn_server("a"), stubborn_server("b")],
    );
    events.ready("a", 1).await;
    events.ready("b", 1).await;
    let a = status(&sup, "a").await.pid.expect("a pid");
    let b = status(&sup, "b").await.pid.expect("a pid");

    let first = actix::spawn(sup.send(RemoveServer("a".into())));
    let second = actix::spawn(sup.send(RemoveServer("a".into())));
    second
        .await
        .unwrap()
        .unwrap()
        .expect("the server is being removed");
    assert!(
        !is_running(a),
        "the second RemoveServer answered while the server ran"
    );
    first.await.unwrap().unwrap().expect("removed");
    assert!(!is_running(a));
    let again = sup.send(RemoveServer("a".into())).await.unwrap();
    assert_eq!(again.unwrap_err().kind(), ErrorKind::ServerNotFound);

    let first = actix::spawn(sup.send(Shutdown));
    let second = actix::spawn(sup.send(Shutdown));
    second.await.unwrap().unwrap();
    assert!(
        !is_running(b),
        "the second Shutdown answered while the server ran"
    );
    first.await.unwrap().unwrap();
    assert!(!is_running(b));
}

/// Calls and shutdowns racing: a call sent while the server shuts down gets one answer.
async fn a_call_racing_a_shutdown_gets_one_answer() {
    let (sup, events) = start_supervisor(quick_settings(), [silent_server("race")]);
    events.ready("race", 1).await;
    let call = actix::spawn(
        sup.send(
            Call::new("race", "tools/call", Some(json!({"name": "echo"})))
                .timeout(Duration::from_secs(20)),
        ),
    );
    let stop = actix::spawn(sup.send(Shutdown));
    let answer = call.await.unwrap();
    stop.await.unwrap().unwrap();
    match answer {
        Ok(Err(e)) => assert!(
            matches!(e.kind(), ErrorKind::OutcomeUnknown | ErrorKind::Stopped),
            "{e}"
        ),
        Ok(Ok(v)) => panic!("a silent server answered: {v}"),
        Err(mailbox) => panic!("the call was lost: {mailbox}"),
    }
}

/// A call the application does not wait for (`do_send`) is still made, through the supervisor
/// as straight to the server's actor: the answer is dropped, not the call.
async fn a_call_sent_without_waiting_still_runs() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    sup.do_send(CallTool::new("demo", "counter", json!({})).timeout(Duration::from_secs(10)));
    until("the supervisor's do_send ran the tool", || {
        counter_file(dir.path(), "demo") == 1
    })
    .await;
    let server = sup
        .send(GetServer("demo".into()))
        .await
        .unwrap()
        .expect("the server's actor");
    server.do_send(CallTool::new("demo", "counter", json!({})).timeout(Duration::from_secs(10)));
    until("the actor's do_send ran the tool", || {
        counter_file(dir.path(), "demo") == 2
    })
    .await;
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(
    duration_max_timeouts_mean_no_deadline,
    calls_in_flight_when_the_actor_dies_are_answered_honestly,
    every_shutdown_of_a_server_answers_only_when_its_process_is_gone,
    remove_and_shutdown_twice_answer_only_when_processes_are_gone,
    a_call_racing_a_shutdown_gets_one_answer,
    a_call_sent_without_waiting_still_runs,
);
