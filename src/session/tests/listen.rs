//! The 2026-07-28 listen stream's rules when it does not open: a listen whose request fails
//! before its acknowledgement is no listen (the connection stays, its subscribers hear why),
//! one refused as overloaded is asked for again after the server's wait, one never
//! acknowledged answers its subscribers by their deadline, and one that broke after it opened
//! is the connection's loss.

use super::*;

/// A Ready modern HTTP connection to a server that offers resource subscriptions.
fn connected() -> Harness {
    let mut h = Harness::new(&modern_http(), settings());
    let mut negotiated = modern(Duration::from_secs(3600));
    negotiated.capabilities =
        serde_json::from_value(json!({"resources": {"subscribe": true}})).unwrap();
    h.open(negotiated, false, Vec::new());
    assert_eq!(h.state(), "ready");
    h
}

fn subscribe(h: &mut Harness, uri: &str) -> Rc<Answer> {
    let answer = Rc::new(Answer::default());
    h.session.subscribe(uri.to_owned(), answer.clone(), h.now);
    h.drive();
    answer
}

/// The ids of the listens written since the last look.
fn listens(h: &Harness) -> Vec<u64> {
    h.written()
        .iter()
        .filter(|m| m["method"] == "subscriptions/listen")
        .filter_map(|m| m["id"].as_u64())
        .collect()
}

fn acknowledge(h: &mut Harness, id: u64) {
    h.send(json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}
    }));
}

#[test]
fn a_listen_that_never_opened_keeps_the_connection_and_tells_its_subscriber_why() {
    for interrupted in [false, true] {
        let mut h = connected();
        let answer = subscribe(&mut h, "demo://a");
        let [id] = listens(&h)[..] else {
            panic!("one listen")
        };
        let error = Error::invalid_response("demo", "subscriptions/listen", "text/html");
        h.event(if interrupted {
            TransportEvent::Interrupted {
                ids: vec![id],
                error,
                socket: false,
            }
        } else {
            TransportEvent::CallFailed { id, error }
        });
        assert_eq!(kind(&answer), Some(ErrorKind::InvalidResponse));
        assert_eq!(h.state(), "ready", "interrupted: {interrupted}");
        h.advance(Duration::from_secs(30));
        assert!(listens(&h).is_empty(), "not asked again on its own");
        assert_eq!(h.counters().reconnects, 0);
        // A change of the subscriptions asks again.
        let again = subscribe(&mut h, "demo://b");
        let [id] = listens(&h)[..] else {
            panic!("one listen")
        };
        acknowledge(&mut h, id);
        assert!(matches!(again.take(), Some(Ok(_))));
    }
}

#[test]
fn a_listen_cut_off_while_it_was_written_is_opened_again_not_given_up() {
    let mut h = connected();
    let answer = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    let error = Error::refused(
        "demo",
        "subscriptions/listen",
        None,
        "the server closed the connection before it had read the whole request",
    );
    h.event(TransportEvent::Unwritten { id, error });
    assert!(answer.take().is_none(), "its subscriber still waits");
    assert_eq!(h.state(), "ready");
    // The server is asked whether it is there (it answers), and the listen opened again.
    let check = liveness_check(&mut h);
    h.answer(
        &check,
        json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}),
    );
    h.advance(crate::session::listen::REOPEN_AFTER);
    let [again] = listens(&h)[..] else {
        panic!("opened again")
    };
    assert_ne!(again, id);
    acknowledge(&mut h, again);
    assert!(matches!(answer.take(), Some(Ok(_))));
    assert_eq!(h.counters().reconnects, 0);
}

/// The one liveness check written since the last look (in this revision, `server/discover`).
fn liveness_check(h: &mut Harness) -> Value {
    let written = h.written();
    let checks: Vec<&Value> = written
        .iter()
        .filter(|m| m["method"] == "ping" || m["method"] == "server/discover")
        .collect();
    assert_eq!(checks.len(), 1, "{written:?}");
    checks[0].clone()
}

/// A server that died while the listen's request was in flight (its socket closed before
/// any answer): nothing else is open, so without a check the connection would look Ready
/// for good. The check finds it gone.
#[test]
fn a_listen_whose_exchange_broke_before_it_opened_has_the_server_checked() {
    let mut h = connected();
    let answer = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    let broken = Error::connection("demo", "POST failed: connector has been disconnected");
    h.event(TransportEvent::Interrupted {
        ids: vec![id],
        error: broken,
        socket: true,
    });
    assert!(answer.take().is_none(), "its subscriber still waits");
    let _unanswered = liveness_check(&mut h);
    h.advance(settings().ping_timeout);
    assert_ne!(h.state(), "ready", "the server is gone");
}

#[test]
fn a_listen_refused_as_overloaded_is_asked_again_after_the_servers_wait() {
    let mut h = connected();
    let first = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    let refused = Error::Overloaded {
        server: "demo".into(),
        limit: 0,
        reason: "HTTP 503".into(),
        retry_after: Some(Duration::from_secs(3)),
    };
    h.event(TransportEvent::CallFailed { id, error: refused });
    assert_eq!(first.take().map(|a| a.is_ok()), None, "still waiting");
    // A subscription made meanwhile waits for the server's wait too.
    let second = subscribe(&mut h, "demo://b");
    h.advance(Duration::from_millis(2900));
    assert!(listens(&h).is_empty(), "asked again before the Retry-After");
    h.advance(Duration::from_millis(100));
    let written = h.written();
    let listen: Vec<&Value> = written
        .iter()
        .filter(|m| m["method"] == "subscriptions/listen")
        .collect();
    assert_eq!(listen.len(), 1, "{written:?}");
    assert_eq!(
        listen[0]["params"]["notifications"]["resourceSubscriptions"],
        json!(["demo://a", "demo://b"])
    );
    acknowledge(&mut h, listen[0]["id"].as_u64().unwrap());
    assert!(matches!(first.take(), Some(Ok(_))));
    assert!(matches!(second.take(), Some(Ok(_))));
    assert_eq!(h.state(), "ready");
}

#[test]
fn a_listen_that_broke_after_it_opened_is_the_connections_loss() {
    let mut h = connected();
    let answer = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    acknowledge(&mut h, id);
    assert!(matches!(answer.take(), Some(Ok(_))));
    h.event(TransportEvent::Interrupted {
        ids: vec![id],
        error: Error::connection("demo", "the stream broke"),
        socket: true,
    });
    assert_eq!(h.state(), "reconnecting");
}

#[test]
fn a_listen_never_acknowledged_answers_its_subscribers_by_the_call_timeout() {
    let mut h = connected();
    let answer = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    h.advance(settings().call_timeout - Duration::from_millis(1));
    assert!(answer.take().is_none(), "not before its deadline");
    h.advance(Duration::from_millis(1));
    assert_eq!(kind(&answer), Some(ErrorKind::Timeout));
    assert_eq!(h.state(), "ready");
    // A late acknowledgement still puts it in force: nothing to answer, nothing broken.
    acknowledge(&mut h, id);
    assert_eq!(h.session.status(h.now).subscriptions, ["demo://a"]);
}

/// What a replacement waits for (`Session::await_listening`): the acknowledgement of the
/// listen that is open and not yet in force, or nothing at all when none waits; bounded as a
/// subscription's wait is.
#[test]
fn a_replacement_waits_for_the_listen_to_be_in_force_and_no_longer_than_a_call() {
    let mut h = connected();
    let at_once = Rc::new(Answer::default());
    h.session.await_listening(at_once.clone(), h.now);
    h.drive();
    assert!(at_once
        .take()
        .expect("no listen: nothing to wait for")
        .is_ok());

    let subscribed = subscribe(&mut h, "demo://a");
    let [id] = listens(&h)[..] else {
        panic!("one listen")
    };
    let waiting = Rc::new(Answer::default());
    h.session.await_listening(waiting.clone(), h.now);
    h.drive();
    assert!(waiting.take().is_none(), "the listen is not in force yet");
    acknowledge(&mut h, id);
    assert!(waiting.take().expect("answered").is_ok());
    assert!(subscribed.take().expect("answered").is_ok());

    let _ = subscribe(&mut h, "demo://b");
    let late = Rc::new(Answer::default());
    h.session.await_listening(late.clone(), h.now);
    h.drive();
    h.advance(settings().call_timeout - Duration::from_millis(1));
    assert!(late.take().is_none());
    h.advance(Duration::from_millis(2));
    assert_eq!(kind(&late), Some(ErrorKind::Timeout), "bounded");
}
