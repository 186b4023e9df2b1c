//! The servers' state changes with the time each arrived, for the figures a status query
//! cannot give: how much of the soak each server was Ready, and how many outages it had.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{Progress, ServerEvent};

/// One state change: when it arrived, the server, the state's name.
type Change = (Instant, String, &'static str);

/// Collects every state change.
#[derive(Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<Change>>>);

struct Collector(Timeline);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Collector {
    type Result = ();
    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        if let ServerEvent::StateChanged { server, state, .. } = event {
            let mut seen = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
            seen.push((Instant::now(), server, state.name()));
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

    /// The fraction of `from..to` that `server` was Ready, and its outages (times it left
    /// Ready) in that time.
    pub fn ready_fraction(&self, server: &str, from: Instant, to: Instant) -> (f64, usize) {
        let seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut ready_since: Option<Instant> = None;
        let mut ready = Duration::ZERO;
        let mut outages = 0;
        let mut was_ready = false;
        for (at, _, state) in seen.iter().filter(|(_, s, _)| s == server) {
            let at = (*at).clamp(from, to);
            if let Some(since) = ready_since.take() {
                ready += at - since;
            }
            if *state == "ready" {
                ready_since = Some(at);
            } else if was_ready && at > from && at < to {
                outages += 1;
            }
            was_ready = *state == "ready";
        }
        if let Some(since) = ready_since {
            ready += to - since;
        }
        let total = (to - from).as_secs_f64();
        (ready.as_secs_f64() / total.max(1e-9), outages)
    }
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
