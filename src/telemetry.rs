//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (the `metrics` feature): the
//! application installs the recorder it wants (a Prometheus exporter, StatsD, ...) and every
//! supervised server's calls, states, reconnects and skipped input show up there. Without the
//! feature the hooks are empty and compile to nothing.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `mcp_calls_total` | counter | `server`, `method`, `outcome` | calls answered, by outcome: `ok` or the [`ErrorKind`](crate::ErrorKind) code |
//! | `mcp_call_duration_seconds` | histogram | `server`, `method` | from the actor taking a call to its answer |
//! | `mcp_reconnects_total` | counter | `server` | connections re-established after a loss |
//! | `mcp_server_state` | gauge | `server`, `state` | 1 for the state the server is in, 0 for the others |
//! | `mcp_skipped_messages_total` | counter | `server`, `reason` | input skipped: `non_json`, `oversized`, `unanswered` (a stdio server's request left unanswered: 64 answers to it wait, unread) |
//! | `mcp_events_dropped_total` | counter | `server` | events a slow subscriber's full queue dropped |
//! | `mcp_tasks_in_flight` | gauge | `server` | tasks (the Tasks extension) followed, not ended |
//! | `mcp_task_polls_total` | counter | `server` | `tasks/get` polls sent |
//! | `mcp_tasks_total` | counter | `server`, `outcome` | tasks ended, by outcome: `completed`, `failed`, `cancelled`, `lost` |
//! | `mcp_task_leases_held` | gauge | `server` | tasks this replica holds the lease of (a task store shared by replicas), as of the last renewal |
//! | `mcp_task_lease_renewals_total` | counter | `server`, `outcome` | renewals of this replica's leases: `ok` or `failed` (the database did not answer) |
//! | `mcp_task_takeovers_total` | counter | `server` | tasks taken over from a replica whose lease lapsed |
//! | `mcp_task_leases_lost_total` | counter | `server` | tasks another replica took over from this one |
//!
//! Labels are the configured server name, the JSON-RPC method and fixed words: nothing a
//! server sends becomes a label, so a hostile server cannot grow the series without bound.

/// The states `mcp_server_state` has a series for.
#[cfg(feature = "metrics")]
const STATES: [&str; 5] = ["connecting", "ready", "reconnecting", "failed", "stopped"];

/// Describes every metric (unit and help text) to the recorder installed now; call it once
/// after installing one. Metrics are recorded whether or not this is called.
#[cfg(feature = "metrics")]
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("mcp_calls_total", "MCP calls answered, by outcome");
    describe_histogram!(
        "mcp_call_duration_seconds",
        Unit::Seconds,
        "Time from the server's actor taking a call to its answer"
    );
    describe_counter!(
        "mcp_reconnects_total",
        "Connections re-established after a loss"
    );
    describe_gauge!(
        "mcp_server_state",
        "1 for the state the server is in, 0 for the others"
    );
    describe_counter!(
        "mcp_skipped_messages_total",
        "Messages from a server skipped unread"
    );
    describe_counter!(
        "mcp_events_dropped_total",
        "Events dropped for a slow subscriber"
    );
    describe_gauge!("mcp_tasks_in_flight", "Tasks followed, not ended");
    describe_counter!("mcp_task_polls_total", "tasks/get polls sent");
    describe_counter!("mcp_tasks_total", "Tasks ended, by outcome");
    describe_gauge!(
        "mcp_task_leases_held",
        "Tasks whose lease this replica holds"
    );
    describe_counter!(
        "mcp_task_lease_renewals_total",
        "Renewals of this replica's task leases, by outcome"
    );
    describe_counter!(
        "mcp_task_takeovers_total",
        "Tasks taken over from a replica whose lease lapsed"
    );
    describe_counter!(
        "mcp_task_leases_lost_total",
        "Tasks another replica took over from this one"
    );
}

/// A call to `server` taken at `started` ended with `outcome` (`ok` or an error code).
#[inline]
pub(crate) fn call_finished(
    server: &str,
    method: &str,
    outcome: &'static str,
    started: std::time::Instant,
) {
    #[cfg(feature = "metrics")]
    {
        let (server, method) = (server.to_owned(), method.to_owned());
        metrics::counter!("mcp_calls_total", "server" => server.clone(), "method" => method.clone(), "outcome" => outcome)
            .increment(1);
        metrics::histogram!("mcp_call_duration_seconds", "server" => server, "method" => method)
            .record(started.elapsed().as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (server, method, outcome, started);
}

/// `server` is in state `state` (a [`ServerState::name`](crate::ServerState::name)) now.
#[inline]
pub(crate) fn state_changed(server: &str, state: &'static str) {
    #[cfg(feature = "metrics")]
    for name in STATES {
        let value = if name == state { 1.0 } else { 0.0 };
        metrics::gauge!("mcp_server_state", "server" => server.to_owned(), "state" => name)
            .set(value);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (server, state);
}

/// `server`'s connection was re-established after a loss.
#[inline]
pub(crate) fn reconnected(server: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("mcp_reconnects_total", "server" => server.to_owned()).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = server;
}

/// A message from `server` was skipped for `reason` (`non_json`, `oversized`).
#[inline]
pub(crate) fn message_skipped(server: &str, reason: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("mcp_skipped_messages_total", "server" => server.to_owned(), "reason" => reason)
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (server, reason);
}

/// An event of `server` was dropped for a subscriber whose queue was full.
#[inline]
pub(crate) fn event_dropped(server: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("mcp_events_dropped_total", "server" => server.to_owned()).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = server;
}

/// `server` follows `tasks` tasks that have not ended.
#[inline]
pub(crate) fn tasks_in_flight(server: &str, tasks: usize) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("mcp_tasks_in_flight", "server" => server.to_owned()).set(tasks as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = (server, tasks);
}

/// `server`'s leases were renewed (`held`: how many this replica holds now), or not
/// (`None`: the store did not answer).
#[inline]
pub(crate) fn task_leases_renewed(server: &str, held: Option<usize>) {
    #[cfg(feature = "metrics")]
    {
        let outcome = if held.is_some() { "ok" } else { "failed" };
        metrics::counter!("mcp_task_lease_renewals_total", "server" => server.to_owned(), "outcome" => outcome)
            .increment(1);
        if let Some(held) = held {
            metrics::gauge!("mcp_task_leases_held", "server" => server.to_owned()).set(held as f64);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (server, held);
}

/// `taken` tasks of `server` were taken over from replicas whose lease lapsed, and `lost` were
/// taken over from this one.
#[inline]
pub(crate) fn task_leases_moved(server: &str, taken: usize, lost: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("mcp_task_takeovers_total", "server" => server.to_owned())
            .increment(taken as u64);
        metrics::counter!("mcp_task_leases_lost_total", "server" => server.to_owned())
            .increment(lost as u64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (server, taken, lost);
}

/// A task of `server` was polled.
#[inline]
pub(crate) fn task_polled(server: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("mcp_task_polls_total", "server" => server.to_owned()).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = server;
}

/// A task of `server` ended with `outcome` (`completed`, `failed`, `cancelled`, `lost`).
#[inline]
pub(crate) fn task_ended(server: &str, outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("mcp_tasks_total", "server" => server.to_owned(), "outcome" => outcome)
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (server, outcome);
}
