//! `confirm`'s multi round-trip rounds: the verbatim state, load shedding, several asks, the
//! missing capability, and a state that leaked into another call.

use serde_json::{json, Value};

use super::client::*;
use crate::common::http_server::{Era, RoundAnswer, TestHttpServer};

#[actix::test]
async fn confirm_completes_only_with_the_verbatim_state() {
    let server = TestHttpServer::start_with(Era::Dual).await;
    let url = server.url();
    let confirm = |id| call(id, "confirm", json!({}));
    let first = confirm(1).send(&url).await.response().await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["confirm"],
        json!({"method": "elicitation/create", "params": {
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        }})
    );
    let state = result["requestState"].as_str().expect("a state").to_owned();
    let accept = json!({"confirm": {"action": "accept", "content": {"ok": true}}});

    // A state re-serialized (parsed as the JSON it looks like, written back) is not the state.
    let reserialized = serde_json::from_str::<Value>(&state)
        .expect("the state looks like JSON")
        .to_string();
    assert_ne!(reserialized, state);
    for (what, req) in [
        (
            "a re-serialized state",
            confirm(2)
                .param("inputResponses", accept.clone())
                .param("requestState", json!(reserialized)),
        ),
        (
            "responses without a state",
            confirm(3).param("inputResponses", accept.clone()),
        ),
        (
            "a state without the responses asked for",
            confirm(4).param("requestState", json!(state)),
        ),
    ] {
        let body = req.send(&url).await.response().await;
        assert_eq!(error_code(&body), Some(-32602), "{what}: {body}");
    }
    let done = confirm(5)
        .param("inputResponses", accept.clone())
        .param("requestState", json!(state))
        .send(&url)
        .await
        .response()
        .await;
    assert_eq!(text(&done), "confirmed: true");
    assert_eq!(done["result"]["resultType"], "complete");
    let rounds = server.stats().rounds();
    let summary: Vec<(Value, bool, RoundAnswer)> = rounds
        .iter()
        .map(|r| (r.id.clone(), r.request_state.is_some(), r.answer))
        .collect();
    use RoundAnswer::*;
    assert_eq!(
        summary,
        [
            (json!(1), false, InputRequired),
            (json!(2), true, Rejected),
            (json!(3), false, Rejected),
            (json!(4), true, Rejected),
            (json!(5), true, Complete),
        ]
    );
    assert_eq!(rounds[4].request_state.as_deref(), Some(state.as_str()));
    assert_eq!(server.stats().tool_calls("confirm"), 1);

    // Load shedding first, then two asks; declining ends it.
    server.faults().confirm_state_only(1);
    server.faults().confirm_rounds(2);
    let mut req = confirm(10);
    let mut answers = Vec::new();
    let last = loop {
        let body = req.send(&url).await.response().await;
        let result = body["result"].clone();
        if result["resultType"] != "input_required" {
            break body;
        }
        answers.push(result.get("inputRequests").is_some());
        let state = result["requestState"].clone();
        req = confirm(11 + answers.len() as i64).param("requestState", state);
        if result.get("inputRequests").is_some() {
            let decline = json!({"confirm": {"action": "decline"}});
            req = req.param("inputResponses", decline);
        }
        assert!(answers.len() < 10, "the flow ends");
    };
    assert_eq!(answers, [false, true, true], "state only, then two asks");
    assert_eq!(text(&last), "not confirmed: decline");

    // Without the elicitation capability the server does not ask: -32021.
    let blind = confirm(20).meta(META_CAPABILITIES, Some(json!({})));
    let answer = blind.send(&url).await;
    assert_eq!(answer.status, 400);
    let body = answer.json().await;
    assert_eq!(error_code(&body), Some(-32021));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    // A state on a tool that asked for nothing has leaked from another flow.
    let leaked = call(21, "echo", json!({"text": "x"})).param("requestState", json!(state));
    let body = leaked.send(&url).await.response().await;
    assert_eq!(error_code(&body), Some(-32602));
    server.stop().await;
}
