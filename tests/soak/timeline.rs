//! The servers' state changes with the time each arrived, for the figures a status query
//! cannot give: how much of the soak each server was Ready (of all of it, and of the time the
//! server itself could answer), and how many outages it had; and the resource updates that
//! reached the application, which the subscription probe awaits.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{Progress, ServerEvent};
use tokio::sync::Notify;

/// One state change: when it arrived, the server, the state's name.
type Change = (Instant, String, &'static str);

/// One `resources/updated`: when it arrived, the server, the URI.
type Update = (Instant, String, String);

/// Collects every state change and resource update.
#[derive(Clone, Default)]
pub struct Timeline {
    changes: Arc<Mutex<Vec<Change>>>,
    updates: Arc<Mutex<Vec<Update>>>,
    updated: Arc<Notify>,
}

struct Collector(Timeline);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Collector {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        match event {
            ServerEvent::StateChanged { server, state, .. } => {
                let mut seen = self.0.changes.lock().unwrap_or_else(|e| e.into_inner());
                seen.push((Instant::now(), server, state.name()));
            }
            ServerEvent::ResourceUpdated { server, uri } => {
                let mut seen = self.0.updates.lock().unwrap_or_else(|e| e.into_inner());
                seen.push((Instant::now(), server, uri));
                self.0.updated.notify_waiters();
            }
            _ => {}
        }
    }
}

impl Timeline {
    /// A collector actor's recipient, and the handle to read what it got.
    pub fn start() -> (Timeline, Recipient<ServerEvent>) {
        let timeline = Timeline::default();
        let addr = Collector(timeline.clone()).start();
        (timeline, addr.recipient())
    }

    /// How `server` fared in `from..to`: see [`Availability`]. `down` are the windows (since
    /// `t0`) in which the server itself could not answer (stopped, or not listening).
    pub fn availability(
        &self,
        server: &str,
        t0: Instant,
        to: Instant,
        down: &[(Duration, Duration)],
    ) -> Availability {
        let seen = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        let end = to - t0;
        let mut ready: Vec<(Duration, Duration)> = Vec::new();
        let mut ready_since: Option<Duration> = None;
        let mut outages = 0;
        for (at, _, state) in seen.iter().filter(|(_, s, _)| s == server) {
            let at = at.saturating_duration_since(t0).min(end);
            if let Some(since) = ready_since.take() {
                ready.push((since, at));
                if at < end {
                    outages += 1;
                }
            }
            if *state == "ready" {
                ready_since = Some(at);
            }
        }
        if let Some(since) = ready_since {
            ready.push((since, end));
        }
        let down = merge(down, end);
        let total: Duration = ready.iter().map(|(a, b)| *b - *a).sum();
        let down_total: Duration = down.iter().map(|(a, b)| *b - *a).sum();
        let ready_while_down: Duration = ready
            .iter()
            .map(|r| down.iter().map(|d| overlap(*r, *d)).sum::<Duration>())
            .sum();
        let share =
            |part: Duration, whole: Duration| part.as_secs_f64() / whole.as_secs_f64().max(1e-9);
        Availability {
            ready: share(total, end),
            ready_while_up: share(total - ready_while_down, end.saturating_sub(down_total)),
            outages,
        }
    }
}

impl Timeline {
    /// Updates of `uri` from `server` that arrived at or after `since`.
    pub fn updates(&self, server: &str, uri: &str, since: Instant) -> usize {
        let seen = self.updates.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter()
            .filter(|(at, s, u)| *at >= since && s == server && u == uri)
            .count()
    }

    /// Waits until an update of `uri` from `server` arrived at or after `since`, at most
    /// `limit`: whether one did.
    pub async fn await_update(
        &self,
        server: &str,
        uri: &str,
        since: Instant,
        limit: Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let updated = self.updated.notified();
            if self.updates(server, uri, since) > 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, updated).await.is_err() {
                return self.updates(server, uri, since) > 0;
            }
        }
    }
}

/// How much of the soak a server was Ready.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Availability {
    /// Share of the whole soak.
    pub ready: f64,
    /// Share of the time the server itself could answer (outside its stops and outages).
    pub ready_while_up: f64,
    /// Times it left Ready.
    pub outages: usize,
}

fn overlap(a: (Duration, Duration), b: (Duration, Duration)) -> Duration {
    a.1.min(b.1).saturating_sub(a.0.max(b.0))
}

/// The union of `windows`, cut at `end`, as disjoint sorted windows.
fn merge(windows: &[(Duration, Duration)], end: Duration) -> Vec<(Duration, Duration)> {
    let mut sorted: Vec<_> = windows
        .iter()
        .map(|(a, b)| ((*a).min(end), (*b).min(end)))
        .filter(|(a, b)| a < b)
        .collect();
    sorted.sort();
    let mut merged: Vec<(Duration, Duration)> = Vec::new();
    for (a, b) in sorted {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// A progress recipient that drops what it gets.
pub struct Sink;

impl Actor for Sink {
    type Context = Context<Self>;
}

impl Handler<Progress> for Sink {
    type Result = ();
    fn handle(&mut self, _: Progress, _: &mut Context<Self>) {}
}
