//! A call's life: its deadline, progress, re-sending, the honest answers after a lost
//! connection, and a caller who leaves.

use super::*;

/// What a timed-out or abandoned call's cancellation looks like in each era: a
/// `notifications/cancelled` and the transport letting go (stdio, session era), or only the
/// latter — closing the response stream — over modern HTTP.
fn cancelled(written: &[Value], id: &Value, era: Era) -> bool {
    let abandoned = written.iter().any(|m| m["abandon"] == *id);
    let notified = written
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == *id);
    abandoned && (notified == (era == Era::Legacy))
}

#[test]
fn a_call_is_answered_by_its_deadline_cancelled_on_the_server_and_the_server_checked() {
    both_eras(|h, era| {
        let answer = h.call(tool("slow").timeout(Duration::from_secs(3)));
        let sent = h.written();
        assert_eq!(sent.len(), 1);
        h.advance(Duration::from_millis(2999));
        assert!(answer.take().is_none(), "not before its deadline");
        h.advance(Duration::from_millis(1));
        match answer.take() {
            Some(Err(Error::Timeout {
                timeout, elapsed, ..
            })) => {
                assert_eq!(timeout, Duration::from_secs(3));
                assert_eq!(elapsed, Duration::from_secs(3));
            }
            other => panic!("{era}: expected a timeout, got {other:?}"),
        }
        let after = h.written();
        assert!(cancelled(&after, &sent[0]["id"], era), "{era}: {after:?}");
        // The liveness check, asked the era's way (the 2026-07-28 revision has no ping).
        let check = match era {
            Era::Legacy => "ping",
            Era::Modern => "server/discover",
        };
        assert!(
            after.iter().any(|m| m["method"] == check),
            "{era}: {after:?}"
        );
        let c = h.counters();
        assert_eq!((c.calls_timed_out, c.cancellations_sent), (1, 1), "{era}");
        // A late answer reaches nobody.
        h.answer(&sent[0], json!({"content": []}));
        assert_eq!(h.counters().unknown_responses, 1);
    });
}

#[test]
fn progress_restarts_the_timeout_but_never_past_its_maximum_total() {
    both_eras(|h, era| {
        let answer = h.call(
            tool("slow")
                .timeout(Duration::from_secs(10))
                .reset_timeout_on_progress(Duration::from_secs(15)),
        );
        let sent = h.written();
        // Our request id doubles as the progress token.
        let token = sent[0]["params"]["_meta"]["progressToken"].clone();
        assert_eq!(token, sent[0]["id"], "{era}");
        let progress = |h: &mut Harness| {
            h.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1}}))
        };
        h.advance(Duration::from_secs(2));
        progress(h); // deadline 12 s
        h.advance(Duration::from_secs(6));
        progress(h); // 18 s asked, 15 s allowed
        h.advance(Duration::from_millis(6999));
        assert!(
            answer.take().is_none(),
            "{era}: moved past its first deadline"
        );
        h.advance(Duration::from_millis(1));
        match answer.take() {
            Some(Err(e @ Error::Timeout { .. })) => {
                assert_eq!(e.kind(), ErrorKind::Timeout);
                let text = e.to_string();
                assert!(
                    text.contains("after 15s (its timeout of 10s restarted by progress)"),
                    "{era}: {text}"
                );
            }
            other => panic!("{era}: expected a timeout at 15 s, got {other:?}"),
        }
    });
}

#[test]
fn after_a_lost_connection_a_safe_call_is_resent_once_and_a_tool_call_is_outcome_unknown() {
    both_eras(|h, era| {
        let list = h.call(call("tools/list", None));
        let run = h.call(tool("counter"));
        let first = h.written();
        assert_eq!(first.len(), 2);
        h.lose("the server went away");
        assert_eq!(kind(&run), Some(ErrorKind::OutcomeUnknown), "{era}");
        assert!(
            list.take().is_none(),
            "{era}: tools/list waits for a re-send"
        );
        assert_eq!(h.state(), "reconnecting");

        h.reconnect(era);
        let again = h.written();
        let resent: Vec<&Value> = again
            .iter()
            .filter(|m| m["method"] == "tools/list")
            .collect();
        assert_eq!(resent.len(), 1, "{era}: {again:?}");
        assert_ne!(
            resent[0]["id"], first[0]["id"],
            "{era}: a re-sent request takes a new id"
        );
        assert_eq!(h.counters().calls_resent, 1);
        // Only once: a second loss answers it.
        h.lose("gone again");
        assert_eq!(kind(&list), Some(ErrorKind::Unavailable), "{era}");
    });
}

#[test]
fn a_call_never_written_is_unavailable_never_outcome_unknown() {
    both_eras(|h, era| {
        h.lose("the server went away");
        // The reconnect fails and fails; the call waits for it within its deadline.
        let waiting = h.call(tool("counter").timeout(Duration::from_secs(5)));
        h.await_attempt();
        h.fail_attempt(Error::connection("demo", "connection refused"), None);
        h.advance(Duration::from_secs(5));
        match waiting.take() {
            Some(Err(Error::Unavailable { reason, .. })) => {
                assert!(
                    reason.starts_with("the call was not sent"),
                    "{era}: {reason}"
                );
            }
            other => panic!("{era}: expected unavailable, got {other:?}"),
        }
        assert!(h.written().iter().all(|m| m["method"] != "tools/call"));
    });
}

#[test]
fn a_request_the_transport_never_delivered_goes_out_after_the_reconnect_whatever_it_is() {
    both_eras(|h, era| {
        // The server died while idle: the first request meets a refused connection.
        let answer = h.call(tool("counter").retry(RetryPolicy::Never));
        let sent = h.written();
        let id = sent[0]["id"].as_u64().unwrap();
        h.event(TransportEvent::Rejected(vec![id]));
        h.lose("cannot connect: connection refused");
        assert!(
            answer.take().is_none(),
            "{era}: never delivered, so it waits"
        );
        // The server is back: the call goes out on the new connection and is answered.
        h.reconnect(era);
        let again = h.written();
        assert_eq!(again.len(), 1, "{era}: {again:?}");
        assert_eq!(again[0]["params"]["name"], "counter");
        h.answer(&again[0], json!({"content": []}));
        assert!(matches!(answer.take(), Some(Ok(_))), "{era}");
        assert_eq!(h.counters().calls_resent, 0, "{era}: it was sent once");
    });
}

#[test]
fn a_request_cut_off_while_it_was_written_is_written_once_more_then_refused_never_unknown() {
    both_eras(|h, era| {
        let cut_off = |h: &mut Harness, id: u64| {
            let error = Error::refused(
                "demo",
                "tools/call",
                None,
                "the server closed the connection before it had read the whole request",
            );
            h.event(TransportEvent::Unwritten { id, error });
        };
        let answer = h.call(tool("counter").retry(RetryPolicy::Never));
        let first = h.written();
        cut_off(h, first[0]["id"].as_u64().unwrap());
        assert!(
            answer.take().is_none(),
            "{era}: it did not run, so it goes again"
        );
        // Once more at once, on the same session, under a new request id.
        let again = h.written();
        assert_eq!(again.len(), 1, "{era}: {again:?}");
        assert_ne!(again[0]["id"], first[0]["id"], "{era}");
        assert_eq!(again[0]["params"]["name"], "counter");
        assert_eq!(
            h.counters().calls_resent,
            0,
            "{era}: it never reached the server"
        );
        cut_off(h, again[0]["id"].as_u64().unwrap());
        assert_eq!(kind(&answer), Some(ErrorKind::Refused), "{era}");
        assert!(h.written().is_empty(), "{era}: not a third time");
        assert_eq!(h.state(), "ready", "{era}: the session is fine");
        // Another call is not marked by this one's history: it gets its own second chance.
        let other = h.call(tool("counter"));
        let sent = h.written();
        cut_off(h, sent[0]["id"].as_u64().unwrap());
        let sent = h.written();
        h.answer(&sent[0], json!({"content": []}));
        assert!(matches!(other.take(), Some(Ok(_))), "{era}");
    });
}

#[test]
fn a_caller_who_left_has_its_call_cancelled_on_the_server_freed_and_counted() {
    both_eras(|h, era| {
        let gone = h.call(tool("slow"));
        let kept = h.call(tool("other"));
        let sent = h.written();
        gone.leave();
        h.advance(CALLER_SWEEP);
        let after = h.written();
        assert!(cancelled(&after, &sent[0]["id"], era), "{era}: {after:?}");
        assert!(
            !after.iter().any(|m| m["abandon"] == sent[1]["id"]),
            "{era}"
        );
        let status = h.session.status(h.now);
        assert_eq!(status.pending_calls, 1, "{era}: its slot is free");
        assert_eq!(status.counters.calls_abandoned, 1, "{era}");
        assert!(gone.take().is_none(), "nobody to answer");
        // The one still waited for is answered as usual.
        h.answer(&sent[1], json!({"content": []}));
        assert!(matches!(kept.take(), Some(Ok(_))));

        // A caller who leaves before its call was written: it leaves the queue, unsent.
        h.lose("gone");
        let queued = h.call(tool("queued"));
        queued.leave();
        h.advance(CALLER_SWEEP);
        h.reconnect(era);
        assert!(
            h.written().iter().all(|m| m["method"] != "tools/call"),
            "{era}"
        );
        assert_eq!(h.session.status(h.now).pending_calls, 0);
    });
}

#[test]
fn a_fire_and_forget_call_is_not_abandoned() {
    // A caller that never waited (a do_send) has not left: its answer never counts as
    // abandoned, and its call runs to its end (see the actor's `Slot`). Here: a reply that
    // never says it was abandoned keeps its call through any number of sweeps.
    both_eras(|h, _| {
        let answer = h.call(tool("long").timeout(Duration::from_secs(60)));
        let sent = h.written();
        h.advance(CALLER_SWEEP * 10);
        assert_eq!(h.session.status(h.now).pending_calls, 1);
        h.answer(&sent[0], json!({"content": []}));
        assert!(matches!(answer.take(), Some(Ok(_))));
    });
}

#[test]
fn one_timer_table_holds_every_deadline_and_stays_bounded() {
    let mut h = Harness::new(&legacy_stdio(), settings());
    h.connect_legacy();
    for _ in 0..10_000 {
        let answer = h.call(call("ping", None).timeout(Duration::from_secs(30)));
        let sent = h.written();
        h.answer(&sent[0], json!({}));
        assert!(matches!(answer.take(), Some(Ok(_))));
    }
    assert_eq!(h.session.status(h.now).pending_calls, 0);
    assert!(
        h.session.timers.call_items() <= 65,
        "{}",
        h.session.timers.call_items()
    );
    // Three calls: the earliest deadline is the timer's; a moved one is found when due.
    let late = h.call(call("tools/list", None).timeout(Duration::from_secs(30)));
    let soon = h.call(call("tools/list", None).timeout(Duration::from_secs(5)));
    h.written();
    let next = h.session.poll_timeout().unwrap();
    assert!(
        next <= h.now + Duration::from_secs(5),
        "the sweep or the 5 s deadline"
    );
    h.advance(Duration::from_secs(5));
    assert_eq!(kind(&soon), Some(ErrorKind::Timeout));
    // The liveness check it started is answered: the connection stays.
    let check = h
        .written()
        .into_iter()
        .find(|m| m["method"] == "ping")
        .unwrap();
    h.answer(&check, json!({}));
    assert!(late.take().is_none());
    h.advance(Duration::from_secs(25));
    assert_eq!(kind(&late), Some(ErrorKind::Timeout));
}

#[test]
fn a_stopped_server_answers_every_call_by_what_was_sent() {
    both_eras(|h, era| {
        let sent = h.call(tool("a"));
        let safe = h.call(call("tools/list", None));
        h.written();
        h.session.stop(h.now);
        h.drive();
        assert_eq!(kind(&sent), Some(ErrorKind::OutcomeUnknown), "{era}");
        assert_eq!(kind(&safe), Some(ErrorKind::Stopped), "{era}");
        let refused = h.call(tool("b"));
        assert_eq!(kind(&refused), Some(ErrorKind::Stopped));
    });
}

/// A call the server asked for input, re-sent after its connection broke (its policy allows
/// it), asks anew from the original request: the state the server gave for its later rounds
/// belongs to a server that may be gone, and a replacement refuses it (the soak found this:
/// a re-sent `confirm` answered `rpc` -32602 by the respawned server).
#[test]
fn a_resent_call_starts_its_input_rounds_over_from_the_original_request() {
    let mut h = Harness::new(&modern_http(), settings());
    h.connect_modern(Duration::from_secs(3600));
    let answer = h.call(tool("confirm").retry(RetryPolicy::Always));
    let first = h.written();
    h.answer(
        &first[0],
        json!({"resultType": "input_required", "requestState": "round-1",
            "inputRequests": {"ok": {"method": "elicitation/create", "params": {}}}}),
    );
    let Some(Command::AskInput(ask)) = h.other.pop() else {
        panic!("the application is asked: {:?}", h.other)
    };
    let answered = vec![(
        "ok".to_owned(),
        "elicitation/create".to_owned(),
        Ok(json!({"action": "accept"})),
    )];
    h.session
        .input_answered(ask, InputAnswers::Answered(answered), h.now);
    h.drive();
    let second = h.written();
    assert_eq!(second[0]["params"]["requestState"], "round-1");
    assert!(second[0]["params"]["inputResponses"]["ok"].is_object());

    h.lose("the server was replaced");
    h.reconnect(Era::Modern);
    let again = h.written();
    assert_eq!(again.len(), 1, "{again:?}");
    let params = &again[0]["params"];
    assert!(params.get("requestState").is_none(), "{params}");
    assert!(params.get("inputResponses").is_none(), "{params}");
    assert_eq!(params["name"], first[0]["params"]["name"]);
    assert_eq!(h.counters().calls_resent, 1);
    // The replacement asks again, and is answered again.
    h.answer(&again[0], json!({"content": [], "resultType": "complete"}));
    assert!(matches!(answer.take(), Some(Ok(_))));
}
