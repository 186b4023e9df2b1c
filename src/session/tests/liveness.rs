//! The liveness rule: only a server that sends nothing at all while the check runs is gone.

use super::*;

#[test]
fn a_silent_server_is_declared_gone_once_the_check_sees_nothing() {
    both_eras(|h, era| {
        let slow = h.call(tool("hang").timeout(Duration::from_secs(1)));
        h.written();
        h.advance(Duration::from_secs(1));
        assert_eq!(kind(&slow), Some(ErrorKind::Timeout));
        let check = h.written();
        let ping = check
            .iter()
            .find(|m| m["method"] == "ping" || m["method"] == "server/discover")
            .unwrap_or_else(|| panic!("{era}: no liveness check in {check:?}"));
        assert!(ping["id"].is_u64());
        assert_eq!(
            h.state(),
            "ready",
            "{era}: a timeout alone is not a broken connection"
        );
        h.advance(Duration::from_secs(2)); // ping_timeout
        assert_eq!(h.state(), "reconnecting", "{era}");
        assert!(
            h.link.closed.get(),
            "{era}: the silent connection is dropped"
        );
        let error = h.session.status(h.now).last_error.unwrap();
        assert!(
            error
                .to_string()
                .contains("nothing else came from the server"),
            "{error}"
        );
    });
}

#[test]
fn a_busy_server_whose_other_answers_keep_coming_is_alive_though_its_ping_waits() {
    // The check's ping queues behind the calls it judges (a full pipe, a full connection
    // pool): the server answering those calls is alive, whatever happens to the ping.
    both_eras(|h, era| {
        let slow = h.call(tool("slow").timeout(Duration::from_secs(1)));
        let busy = h.call(tool("busy").timeout(Duration::from_secs(60)));
        let sent = h.written();
        h.advance(Duration::from_secs(1));
        assert_eq!(kind(&slow), Some(ErrorKind::Timeout));
        h.advance(Duration::from_millis(1500));
        h.answer(&sent[1], json!({"content": []}));
        assert!(matches!(busy.take(), Some(Ok(_))));
        h.advance(Duration::from_secs(5));
        assert_eq!(h.state(), "ready", "{era}");
        assert!(!h.link.closed.get(), "{era}");
        assert!(h.pending.is_none(), "{era}: no reconnect");
    });
}

#[test]
fn one_check_at_a_time_and_its_own_expiry_starts_no_other() {
    both_eras(|h, era| {
        for _ in 0..5 {
            h.call(tool("hang").timeout(Duration::from_secs(1)));
        }
        h.written();
        h.advance(Duration::from_secs(1));
        let checks = |w: &[Value]| {
            w.iter()
                .filter(|m| m["method"] == "ping" || m["method"] == "server/discover")
                .count()
        };
        assert_eq!(checks(&h.written()), 1, "{era}: five timeouts, one check");
        h.advance(Duration::from_secs(2));
        assert_eq!(h.state(), "reconnecting");
        assert_eq!(checks(&h.written()), 0, "{era}");
    });
}

#[test]
fn the_check_takes_its_slot_before_any_caller() {
    let mut h = Harness::new(
        &legacy_stdio(),
        Settings {
            max_in_flight: 2,
            ..settings()
        },
    );
    h.connect_legacy();
    let short = h.call(tool("a").timeout(Duration::from_secs(1)));
    let _long = h.call(tool("b").timeout(Duration::from_secs(60)));
    h.written();
    // Full: a third caller is refused.
    let third = h.call(tool("c"));
    assert_eq!(kind(&third), Some(ErrorKind::Overloaded));
    h.advance(Duration::from_secs(1));
    assert_eq!(kind(&short), Some(ErrorKind::Timeout));
    // The check took the slot the expired call left: a caller is refused, the check is out.
    let fourth = h.call(tool("d").timeout(Duration::from_secs(60)));
    assert_eq!(kind(&fourth), Some(ErrorKind::Overloaded));
    let written = h.written();
    assert!(written.iter().any(|m| m["method"] == "ping"), "{written:?}");
    assert_eq!(
        h.session.status(h.now).pending_calls,
        2,
        "the long call and the check"
    );
}
