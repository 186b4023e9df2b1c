//! Multi-round-trip requests (2026-07-28): results that ask for input are answered through
//! the application's request handler and the request sent again, under a new id, with the
//! answers and the server's state as it was given, for as many rounds as it takes (bounded),
//! all inside the call's one deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{CallTool, ErrorKind, RpcError, ServerRequest, Supervisor};
use serde_json::{json, Value};

use crate::common::*;

/// A handler that accepts every elicitation with `{"ok": true}` and records what it was asked.
struct Accept(Arc<Mutex<Vec<String>>>);

impl Actor for Accept {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Accept {
    type Result = Result<Value, RpcError>;
    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.0.lock().unwrap().push(request.method);
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}

fn supervise(
    config: mcp_supervisor::ServerConfig,
    asked: Arc<Mutex<Vec<String>>>,
) -> (Addr<Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(config)
        .subscriber(recipient)
        .request_handler(
            Accept(asked).start().recipient(),
            json!({"elicitation": {}}),
        )
        .start()
        .unwrap();
    (sup, events)
}

#[actix::test]
async fn rounds_of_input_are_answered_and_the_state_echoed() {
    let dir = tempdir();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (sup, events) = supervise(demo_in("modern", "ask", &path(&dir)), asked.clone());
    events.ready("ask", 1).await;
    let call =
        CallTool::new("ask", "confirm", json!({"rounds": 3})).timeout(Duration::from_secs(10));
    let result = sup
        .send(call)
        .await
        .unwrap()
        .expect("completed after three rounds");
    assert_eq!(text_of(&result), "confirmed: true");
    assert_eq!(asked.lock().unwrap().as_slice(), ["elicitation/create"; 3]);
    // The server checked each round's state byte for byte, and each round had a new id.
    let rounds: Vec<String> = event_log(&path(&dir), "ask")
        .into_iter()
        .filter(|l| l.starts_with("mrtr confirm"))
        .collect();
    assert_eq!(rounds.len(), 4, "{rounds:?}");
    assert!(
        rounds[1..].iter().all(|r| r.contains("state=valid")),
        "{rounds:?}"
    );
    let ids: std::collections::BTreeSet<&str> = rounds
        .iter()
        .filter_map(|r| r.split_whitespace().find(|w| w.starts_with("id=")))
        .collect();
    assert_eq!(ids.len(), 4, "every round under a new id: {rounds:?}");
    // A state-only answer is sent back without asking anyone.
    let call = CallTool::new("ask", "confirm", json!({"state_only": true}))
        .timeout(Duration::from_secs(10));
    sup.send(call).await.unwrap().expect("completed");
    assert_eq!(
        asked.lock().unwrap().len(),
        4,
        "one question for the round after the state"
    );
}

#[actix::test]
async fn input_without_a_handler_fails_the_call_clearly() {
    let dir = tempdir();
    let (sup, events) =
        start_supervisor(quick_settings(), [demo_in("modern", "lone", &path(&dir))]);
    events.ready("lone", 1).await;
    let call = CallTool::new("lone", "confirm", json!({})).timeout(Duration::from_secs(10));
    let error = sup
        .send(call)
        .await
        .unwrap()
        .expect_err("nobody can answer");
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("request handler"), "{error}");
}

#[actix::test]
async fn rounds_beyond_the_bound_fail_and_all_live_inside_the_deadline() {
    let dir = tempdir();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let config = demo_in("modern", "many", &path(&dir)).max_input_rounds(2);
    let (sup, events) = supervise(config, asked.clone());
    events.ready("many", 1).await;
    let call =
        CallTool::new("many", "confirm", json!({"rounds": 5})).timeout(Duration::from_secs(10));
    let error = sup.send(call).await.unwrap().expect_err("too many rounds");
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    assert_eq!(asked.lock().unwrap().len(), 2);
}

#[actix::test]
async fn a_legacy_server_asks_through_its_own_request_and_the_same_handler_answers() {
    let dir = tempdir();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (sup, events) = supervise(demo_in("legacy", "old", &path(&dir)), asked.clone());
    events.ready("old", 1).await;
    let call = CallTool::new("old", "confirm", json!({})).timeout(Duration::from_secs(10));
    let result = sup.send(call).await.unwrap().expect("answered");
    assert_eq!(text_of(&result), "confirmed: true");
    assert_eq!(asked.lock().unwrap().as_slice(), ["elicitation/create"]);
}

/// A read-only tool of a trusted server, in its second round of input when the server dies:
/// re-sent, it asks anew from the original request — never with the state the dead server
/// gave, which its replacement refuses (`rpc` -32602, which the soak found). (The replacement
/// dies at the same point, so the call ends `outcome_unknown`: it was re-sent once.)
#[actix::test]
async fn a_call_resent_in_the_middle_of_its_rounds_asks_anew() {
    let dir = tempdir();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let config = demo_in("modern", "m", &path(&dir))
        .env("DEMO_LIST_CONFIRM", "1")
        .env("DEMO_CRASH_AFTER_CALLS", "1")
        .trusted(true);
    let (sup, events) = supervise(config, asked.clone());
    events.ready("m", 1).await;
    let call = CallTool::new("m", "confirm", json!({})).timeout(Duration::from_secs(10));
    let error = sup.send(call).await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
    assert_eq!(
        *asked.lock().unwrap(),
        ["elicitation/create", "elicitation/create"],
        "the rounds started over"
    );
    let log = event_log(&path(&dir), "m");
    let rounds: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with("mrtr confirm"))
        .collect();
    assert!(
        rounds.iter().all(|l| !l.contains("state=invalid")),
        "no state the server did not give: {rounds:#?}"
    );
    assert_eq!(
        rounds.iter().filter(|l| l.contains("state=none")).count(),
        2,
        "the original request, twice: {rounds:#?}"
    );
}
