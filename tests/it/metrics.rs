//! The `metrics` feature: a call, a kill -9 and the reconnect, as a recorder sees them. The
//! recorder is this test's thread's (`metrics::with_local_recorder`), not the process's: the
//! tests beside it record too, and the actors of an actix system all run on its thread.

use std::time::Duration;

use crate::common::*;
use mcp_supervisor::*;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use serde_json::json;

/// What the recorder holds now. A snapshot resets what it took (counters and gauges to 0,
/// histogram samples cleared): each check point takes one.
struct Taken(Vec<Metric>);

/// A metric: its kind, name, labels and value.
type Metric = (MetricKind, String, Vec<(String, String)>, DebugValue);

impl Taken {
    fn now(snapshotter: &Snapshotter) -> Taken {
        let all = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let labels = key
                    .key()
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                (key.kind(), key.key().name().to_owned(), labels, value)
            });
        Taken(all.collect())
    }

    /// The value of the metric `name` whose labels include every pair of `labels`.
    fn value(&self, kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(k, n, l, _)| {
                *k == kind
                    && n == name
                    && labels
                        .iter()
                        .all(|(key, value)| l.contains(&((*key).to_owned(), (*value).to_owned())))
            })
            .map(|(_, _, _, value)| value)
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.value(MetricKind::Counter, name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            _ => 0,
        }
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.value(MetricKind::Gauge, name, labels) {
            Some(DebugValue::Gauge(g)) => Some(g.into_inner()),
            _ => None,
        }
    }
}

#[test]
fn calls_states_and_reconnects_are_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        actix::System::new().block_on(call_kill_and_reconnect(&snapshotter))
    });
}

async fn call_kill_and_reconnect(snapshotter: &Snapshotter) {
    telemetry::describe();

    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let ready = [("server", "demo"), ("state", "ready")];
    assert_eq!(
        Taken::now(snapshotter).gauge("mcp_server_state", &ready),
        Some(1.0)
    );

    let echo =
        CallTool::new("demo", "echo", json!({"text": "hi"})).timeout(Duration::from_secs(10));
    sup.send(echo).await.unwrap().expect("answered");
    let missing = CallTool::new("demo", "no_such_tool", json!({})).timeout(Duration::from_secs(10));
    let _ = sup.send(missing).await.unwrap();
    let taken = Taken::now(snapshotter);
    let ok = [
        ("server", "demo"),
        ("method", "tools/call"),
        ("outcome", "ok"),
    ];
    assert_eq!(taken.counter("mcp_calls_total", &ok), 1);
    let calls = [("server", "demo"), ("method", "tools/call")];
    match taken.value(MetricKind::Histogram, "mcp_call_duration_seconds", &calls) {
        Some(DebugValue::Histogram(samples)) => assert_eq!(samples.len(), 2, "{samples:?}"),
        other => panic!("no call durations: {other:?}"),
    }

    let pid = status(&sup, "demo").await.pid.expect("a pid");
    kill(pid, nix::sys::signal::Signal::SIGKILL);
    events.ready("demo", 2).await;
    let taken = Taken::now(snapshotter);
    assert_eq!(
        taken.counter("mcp_reconnects_total", &[("server", "demo")]),
        1
    );
    assert_eq!(taken.gauge("mcp_server_state", &ready), Some(1.0));
    let reconnecting = [("server", "demo"), ("state", "reconnecting")];
    assert_eq!(
        taken.gauge("mcp_server_state", &reconnecting),
        Some(0.0),
        "it was, and is no more"
    );
    sup.send(Shutdown).await.unwrap();
}
