//! Overloaded servers: 429 and 503 are `overloaded` with the server's `Retry-After`, which
//! everything we re-send or re-open ourselves honours, within our cap; SSE `retry:` too.
//!
//! The calls, the opening and the change stream (the GET stream, or the 2026-07-28 revision's
//! listen stream) run in both eras. The others are of the session era only: the modern
//! revision has no sessions to rebuild and no resumption (nor a `retry:` to honour: a broken
//! stream loses its request, and a listen is re-opened by its own rule).

use std::time::Duration;

use mcp_supervisor::*;
use serde_json::json;

use super::*;
use crate::common::http_server::{Canned, Target, TestHttpServer};
use crate::common::*;
use crate::hostile::opening;
use crate::in_both_eras;

// ---- overloaded servers: 429 and 503, and their Retry-After ----

/// Defect 11: 429 and 503 say "not processed, try later": `overloaded`, with the server's
/// `Retry-After` (delta-seconds or an HTTP-date) in the error. Before, a 429 was
/// `invalid_response` and a 503 `outcome_unknown`.
async fn calls_refused_with_429_or_503_are_overloaded_with_the_retry_after() {
    let server = http_server().await;
    let (sup, _events) = start(&server).await;
    let in_a_while =
        httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(20));
    let cases = [
        (429, "7".to_owned(), Duration::from_secs(7)),
        (503, "2".to_owned(), Duration::from_secs(2)),
        (503, in_a_while, Duration::from_secs(20)),
    ];
    for (status, retry_after, expected) in cases {
        server.faults().canned(
            tools_call(),
            Canned::status(status)
                .header("retry-after", retry_after.as_str())
                .body("busy")
                .times(1),
        );
        let err = sup.send(echo("x")).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Overloaded, "{status}: {err}");
        let waited = err.retry_after().expect("the server's Retry-After");
        // An HTTP-date has a resolution of a second.
        assert!(
            waited <= expected && waited + Duration::from_secs(2) > expected,
            "{status} {retry_after}: {waited:?}"
        );
        assert!(err.to_string().contains(&format!("HTTP {status}")), "{err}");
    }
    // Without a Retry-After: overloaded all the same.
    server
        .faults()
        .canned(tools_call(), Canned::status(503).times(1));
    let err = sup.send(echo("x")).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Overloaded, "{err}");
    assert_eq!(err.retry_after(), None);
    assert_eq!(server.stats().tool_calls("echo"), 0, "nothing ran");
    let st = status(&sup, "web").await;
    assert_eq!(st.counters.reconnects, 0, "the session is kept");
    sup.send(Shutdown).await.unwrap();
}

/// Defect 11: a start-up refused with 503 and `Retry-After: 2` is not tried again before 2 s
/// (the start-up backoff alone would retry after 500 ms).
async fn a_start_up_refused_with_retry_after_waits_that_long() {
    let server = http_server().await;
    server.faults().canned(
        Target::Post(opening().into()),
        Canned::status(503).header("retry-after", "2").times(1),
    );
    let (sup, events) = start_supervisor(quick_settings(), [web(&server)]);
    events.ready("web", 1).await;
    let times = server.stats().post_times(opening());
    assert_eq!(times.len(), 2);
    assert!(
        gaps(&times)[0] >= Duration::from_secs(2),
        "{:?}",
        gaps(&times)
    );
    assert!(events
        .messages("web")
        .iter()
        .any(|m| m.contains("attempt 1/3")));
    sup.send(Shutdown).await.unwrap();
}

/// The server's wish is capped: a `Retry-After` of a day waits no longer than the reconnect
/// backoff's cap.
async fn a_retry_after_of_a_day_is_capped() {
    let server = http_server().await;
    server.faults().canned(
        Target::Post(opening().into()),
        Canned::status(429).header("retry-after", "86400").times(1),
    );
    let mut settings = quick_settings();
    settings.reconnect_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    let (sup, events) = start_supervisor(settings, [web(&server)]);
    events.ready("web", 1).await;
    let times = server.stats().post_times(opening());
    assert_eq!(times.len(), 2);
    let gap = gaps(&times)[0];
    assert!(
        gap >= Duration::from_secs(1) && gap < Duration::from_secs(5),
        "{gap:?}"
    );
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(
    calls_refused_with_429_or_503_are_overloaded_with_the_retry_after,
    a_start_up_refused_with_retry_after_waits_that_long,
    a_retry_after_of_a_day_is_capped,
);

/// A session re-initialized after the server forgot it waits for the `Retry-After` of an
/// overloaded initialize too, and the call waiting for it is still answered in its deadline.
#[actix::test]
async fn a_session_rebuilt_under_overload_waits_for_the_retry_after() {
    let server = TestHttpServer::start().await;
    let (sup, events) = start(&server).await;
    server
        .faults()
        .forget_sessions(crate::common::http_server::SessionGone::NotFound);
    server.faults().canned(
        Target::Post("initialize".into()),
        Canned::status(503).header("retry-after", "2").times(1),
    );
    let ok = sup
        .send(echo("x"))
        .await
        .unwrap()
        .expect("answered after the wait");
    assert_eq!(text_of(&ok), "x");
    let times = server.stats().post_times("initialize");
    assert_eq!(times.len(), 3, "{:?}", events.messages("web"));
    assert!(
        gaps(&times)[1] >= Duration::from_secs(2),
        "{:?}",
        gaps(&times)
    );
    sup.send(Shutdown).await.unwrap();
}

/// The GET stream, refused with 503 and `Retry-After: 1`, is re-opened no sooner than 1 s
/// later (the backoff alone would wait 200 ms), and the connection is kept.
async fn a_get_stream_refused_with_retry_after_is_reopened_no_sooner() {
    let server = http_server().await;
    server.faults().canned(
        change_stream(),
        Canned::status(503).header("retry-after", "1").times(2),
    );
    let (sup, events) = start(&server).await;
    // A subscription is a listen of its own in the modern era (the one opened at Ready is for
    // tool-list changes): made while the first is under way, it would go out beside it, before
    // any refusal was known. It is made once the listen is open.
    if era() == "legacy" {
        subscribe(&sup, "mem://a").await;
    }
    until("the GET stream open", || change_streams_asked(&server) >= 3).await;
    let times = change_stream_times(&server);
    for gap in &gaps(&times)[..2] {
        assert!(*gap >= Duration::from_secs(1), "{:?}", gaps(&times));
    }
    if era() == "modern" {
        subscribe(&sup, "mem://a").await;
    }
    // The stream is the session's: a notification comes through it.
    let call = CallTool::new("web", "notify_resource", json!({"uri": "mem://a"}));
    until_async(|| async {
        sup.send(call.clone()).await.unwrap().unwrap();
        events
            .all()
            .iter()
            .any(|e| matches!(e, ServerEvent::ResourceUpdated { .. }))
    })
    .await;
    assert_eq!(status(&sup, "web").await.counters.reconnects, 0);
    sup.send(Shutdown).await.unwrap();
}

in_both_eras!(a_get_stream_refused_with_retry_after_is_reopened_no_sooner);

/// An SSE `retry:` of a day is honoured only up to the reconnect backoff's cap: the GET stream
/// that ended after it is re-opened (before, it waited the day, and an idle connection could
/// not notice a lost server for as long).
#[actix::test]
async fn an_sse_retry_of_a_day_is_capped() {
    let server = TestHttpServer::start().await;
    server.faults().canned(
        Target::Get,
        Canned::status(200)
            .header("content-type", "text/event-stream")
            .body("retry: 86400000\n\n")
            .times(1),
    );
    let mut settings = quick_settings();
    settings.reconnect_backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    let (sup, events) = start_supervisor(settings, [web(&server)]);
    events.ready("web", 1).await;
    until("the GET stream re-opened", || server.stats().gets() >= 2).await;
    let gap = gaps(&server.stats().get_times())[0];
    assert!(gap >= Duration::from_millis(900), "{gap:?}");
    sup.send(Shutdown).await.unwrap();
}

/// A broken answer stream whose resumption is refused with 503 and `Retry-After: 1` is
/// resumed after that second, and the call gets its answer.
#[actix::test]
async fn a_resumption_refused_with_retry_after_is_tried_again_after_it() {
    let server = TestHttpServer::start().await;
    let (sup, _events) = start(&server).await;
    until("the GET stream open", || server.stats().gets() >= 1).await;
    server.faults().drop_sse_after(Some(0));
    server.faults().canned(
        Target::Get,
        Canned::status(503).header("retry-after", "1").times(1),
    );
    let done = sup.send(slow(0.3)).await.unwrap().expect("resumed");
    assert_eq!(text_of(&done), "done");
    let times = server.stats().get_times();
    assert_eq!(
        server.stats().resumed_gets(),
        2,
        "refused once, then resumed"
    );
    let refused_then_resumed = times[times.len() - 1] - times[times.len() - 2];
    assert!(
        refused_then_resumed >= Duration::from_secs(1),
        "{refused_then_resumed:?}"
    );
    sup.send(Shutdown).await.unwrap();
}
