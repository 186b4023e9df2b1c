//! The era between connections: a discovery that did not hold up is dropped, and a server
//! that changed era is met in its new one.

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_discovery_a_failed_attempt_used_is_dropped_and_the_server_asked_again() {
    // A modern-only server rolled back to the session era: the attempt that reused the cached
    // discovery fails (its first request is refused), and the next one asks again — and
    // finds the session era — instead of reusing the discovery for as long as its ttl.
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(HOUR);
    let answer = h.call(call("tools/list", None));
    let sent = h.written();
    h.answer(&sent[0], json!({"tools": []}));
    assert!(matches!(answer.take(), Some(Ok(_))));
    h.lose("the server was redeployed");
    h.await_attempt();
    assert!(
        h.plan().era.fresh.is_some(),
        "a connection that worked keeps its discovery"
    );
    h.fail_attempt(
        Error::invalid_response(
            "demo",
            "tools/list",
            "HTTP 400: Bad Request: Server not initialized",
        ),
        None,
    );
    for _ in 0..5 {
        h.await_attempt();
        let plan = h.plan();
        assert!(
            plan.era.fresh.is_none(),
            "asked again, never the cached discovery"
        );
        // The attempt's probe finds the session era and fails over to it... or the server
        // is briefly unreachable; either way nothing cached is reused.
        h.fail_attempt(Error::connection("demo", "refused"), Some(Era::Legacy));
        assert_eq!(h.plan_or_next().era.remembered, Some(Era::Legacy));
    }
}

#[test]
fn a_discovery_whose_connection_broke_before_any_answer_is_dropped() {
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(HOUR);
    h.lose("restarted");
    h.await_attempt();
    assert!(h.plan().era.fresh.is_some(), "its opening was answered");
    // Reused, with nothing asked (a server without tools): no answer proves it...
    h.open(modern(HOUR), true, Vec::new());
    h.lose("gone at once");
    h.await_attempt();
    assert!(
        h.plan().era.fresh.is_none(),
        "...so a connection lost before any is its end"
    );
    assert_eq!(h.plan().era.remembered, Some(Era::Modern));
}

#[test]
fn a_fresh_discovery_is_reused_within_its_ttl_after_a_connection_that_worked() {
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(Duration::from_secs(60));
    let answer = h.call(call("tools/list", None));
    let sent = h.written();
    h.answer(&sent[0], json!({"tools": []}));
    assert!(answer.take().is_some());
    h.lose("restart");
    h.await_attempt();
    assert!(h.plan().era.fresh.is_some());
    h.open(modern(Duration::from_secs(60)), true, Vec::new());
    // Past its ttl, the next attempt asks again.
    let answer = h.call(call("tools/list", None));
    let sent = h.written();
    h.answer(&sent[0], json!({"tools": []}));
    assert!(answer.take().is_some());
    h.advance(Duration::from_secs(61));
    h.lose("restart");
    h.await_attempt();
    assert!(h.plan().era.fresh.is_none());
}

#[test]
fn a_legacy_http_server_replaced_by_a_modern_only_one_is_met_in_its_era_and_nothing_lost() {
    let mut h = Harness::new(&modern_http(), settings());
    h.open(legacy(), false, Vec::new());
    let answer = h.call(tool("counter").retry(RetryPolicy::Never));
    let sent = h.written();
    // The upgraded server refuses the session-era request for its era, unprocessed.
    h.send(
        json!({"jsonrpc": "2.0", "id": sent[0]["id"], "error": {"code": -32022,
        "message": "unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}}),
    );
    assert!(answer.take().is_none(), "refused unprocessed: it waits");
    assert_eq!(h.state(), "reconnecting");
    let note = h.session.status(h.now).last_error.unwrap().to_string();
    assert!(
        note.contains("no longer speaks the legacy protocol era"),
        "{note}"
    );
    h.await_attempt();
    h.connect_modern(HOUR);
    let again = h.written();
    assert_eq!(again.len(), 1);
    assert_eq!(
        again[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "shaped for the modern era"
    );
    h.answer(&again[0], json!({"content": []}));
    assert!(matches!(answer.take(), Some(Ok(_))));
}

#[test]
fn a_stdio_servers_refusal_for_its_era_is_an_answer_like_any_other() {
    let mut h = Harness::new(&legacy_stdio(), settings());
    h.connect_legacy();
    let answer = h.call(tool("counter"));
    let sent = h.written();
    h.send(
        json!({"jsonrpc": "2.0", "id": sent[0]["id"], "error": {"code": -32022,
        "message": "unsupported protocol version",
        "data": {"supported": ["2026-07-28"]}}}),
    );
    assert_eq!(kind(&answer), Some(ErrorKind::Rpc));
    assert_eq!(h.state(), "ready");
}

#[test]
fn a_modern_server_request_is_refused_and_a_legacy_one_goes_to_the_application() {
    both_eras(|h, era| {
        h.send(json!({"jsonrpc": "2.0", "id": 99, "method": "roots/list"}));
        let written = h.written();
        match era {
            Era::Modern => {
                assert_eq!(written[0]["id"], 99);
                assert_eq!(written[0]["error"]["code"], -32601);
                assert!(h.other.is_empty());
            }
            Era::Legacy => {
                assert!(written.is_empty());
                assert!(matches!(
                    h.other.as_slice(),
                    [Command::AnswerServerRequest { method, .. }] if method == "roots/list"
                ));
            }
        }
    });
}
