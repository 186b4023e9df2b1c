//! Delivering a server's events to its subscribers without letting a slow one cost us memory.
//!
//! `do_send` ignores an actor's mailbox capacity, so a subscriber that does not keep up with a
//! server's notifications would grow our memory without limit. Instead each subscriber gets a
//! queue of at most [`QUEUE_CAPACITY`] events here, drained by a task that `send`s one event at
//! a time (so the subscriber's own mailbox bound applies). When a queue is full:
//!
//! - a state change is never lost: it takes the place of the oldest queued notification, or,
//!   when only state changes are queued, the oldest of those, which it supersedes (counted as
//!   coalesced);
//! - any other event (a notification, a log message, a tools change) is dropped and counted.
//!
//! The drain task runs on its own, apart from the server's actor, so that events queued when a
//! server stops (its last "Stopped") are still delivered after the actor is gone.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use actix::Recipient;

use crate::actor::messages::ServerEvent;

/// Events kept at most for one subscriber that lags.
pub(crate) const QUEUE_CAPACITY: usize = 256;

/// What was given up for subscribers that lag, for status reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FanoutCounts {
    /// Events other than state changes dropped because a subscriber's queue was full.
    pub dropped: u64,
    /// State changes replaced by a later one before a lagging subscriber got them.
    pub coalesced: u64,
}

struct Queue {
    events: VecDeque<ServerEvent>,
    /// A drain task is running for this queue.
    draining: bool,
    /// The subscriber is gone: nothing more is queued.
    closed: bool,
}

struct Subscriber {
    recipient: Recipient<ServerEvent>,
    queue: Rc<RefCell<Queue>>,
}

/// The subscribers of one server, each with its bounded queue.
#[derive(Default)]
pub(crate) struct Fanout {
    subscribers: Vec<Subscriber>,
    counts: FanoutCounts,
}

impl Fanout {
    /// Adds a subscriber; it gets every event from now on.
    pub fn subscribe(&mut self, recipient: Recipient<ServerEvent>) {
        self.subscribers.push(Subscriber {
            recipient,
            queue: Rc::new(RefCell::new(Queue {
                events: VecDeque::new(),
                draining: false,
                closed: false,
            })),
        });
    }

    /// What was dropped or coalesced so far.
    pub fn counts(&self) -> FanoutCounts {
        self.counts
    }

    /// Queues `event` for every subscriber (see the module docs for a full queue). Must be
    /// called from within an actix system: drain tasks are spawned on the current arbiter.
    pub fn emit(&mut self, event: &ServerEvent) {
        self.subscribers
            .retain(|s| s.recipient.connected() && !s.queue.borrow().closed);
        for subscriber in &self.subscribers {
            let mut queue = subscriber.queue.borrow_mut();
            if queue.events.len() >= QUEUE_CAPACITY {
                let is_state = |e: &ServerEvent| matches!(e, ServerEvent::StateChanged { .. });
                if !is_state(event) {
                    self.counts.dropped += 1;
                    crate::telemetry::event_dropped(event.server());
                    continue;
                }
                match queue.events.iter().position(|e| !is_state(e)) {
                    Some(oldest_other) => {
                        if let Some(dropped) = queue.events.remove(oldest_other) {
                            crate::telemetry::event_dropped(dropped.server());
                        }
                        self.counts.dropped += 1;
                    }
                    None => {
                        queue.events.pop_front();
                        self.counts.coalesced += 1;
                    }
                }
            }
            queue.events.push_back(event.clone());
            if !queue.draining {
                queue.draining = true;
                actix::spawn(drain(
                    subscriber.recipient.clone(),
                    subscriber.queue.clone(),
                ));
            }
        }
    }
}

/// Sends a queue's events one at a time, each once the subscriber's mailbox takes it; ends
/// when the queue is empty (the next event starts another) or the subscriber is gone.
async fn drain(recipient: Recipient<ServerEvent>, queue: Rc<RefCell<Queue>>) {
    loop {
        let next = {
            let mut q = queue.borrow_mut();
            let next = q.events.pop_front();
            if next.is_none() {
                q.draining = false;
            }
            next
        };
        let Some(event) = next else { return };
        if recipient.send(event).await.is_err() {
            let mut q = queue.borrow_mut();
            q.closed = true;
            q.events.clear();
            q.draining = false;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use actix::prelude::*;

    use super::*;
    use crate::policy::state::ServerState;

    /// A subscriber that records events and, while `stalled`, does not take any: its handler
    /// blocks the test's whole arbiter, so everything queues up in the fan-out.
    struct Recorder(Arc<Mutex<Vec<ServerEvent>>>);

    impl Actor for Recorder {
        type Context = Context<Self>;
    }

    impl Handler<ServerEvent> for Recorder {
        type Result = ();
        fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
            self.0.lock().unwrap().push(event);
        }
    }

    fn note(i: usize) -> ServerEvent {
        ServerEvent::ResourceUpdated {
            server: "s".into(),
            uri: format!("demo://{i}"),
        }
    }

    fn state(message: &str) -> ServerEvent {
        ServerEvent::StateChanged {
            server: "s".into(),
            state: ServerState::Ready,
            message: message.into(),
        }
    }

    #[actix::test]
    async fn a_subscriber_that_lags_costs_a_bounded_queue_and_keeps_every_state() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut fanout = Fanout::default();
        fanout.subscribe(Recorder(seen.clone()).start().recipient());
        // All of this is queued before the drain task or the recorder get to run.
        fanout.emit(&state("first"));
        for i in 0..10_000 {
            fanout.emit(&note(i));
        }
        fanout.emit(&state("last"));
        let queued = fanout.subscribers[0].queue.borrow().events.len();
        assert_eq!(queued, QUEUE_CAPACITY, "bounded, whatever the flood");
        let counts = fanout.counts();
        // 255 notifications fit beside the first state change; the last one evicts one more.
        assert_eq!(counts.dropped, 10_000 - (QUEUE_CAPACITY as u64 - 1) + 1);
        assert_eq!(counts.coalesced, 0);

        until(|| seen.lock().unwrap().len() == QUEUE_CAPACITY).await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen.first(), Some(&state("first")));
        assert_eq!(seen.last(), Some(&state("last")));
    }

    #[actix::test]
    async fn state_changes_alone_are_coalesced_oldest_first() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut fanout = Fanout::default();
        fanout.subscribe(Recorder(seen.clone()).start().recipient());
        for i in 0..QUEUE_CAPACITY + 3 {
            fanout.emit(&state(&i.to_string()));
        }
        assert_eq!(fanout.counts().coalesced, 3);
        until(|| seen.lock().unwrap().len() == QUEUE_CAPACITY).await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], state("3"), "the oldest were superseded");
        assert_eq!(seen.last(), Some(&state(&(QUEUE_CAPACITY + 2).to_string())));
    }

    /// Stops after its first event.
    struct Quitter;

    impl Actor for Quitter {
        type Context = Context<Self>;
    }

    impl Handler<ServerEvent> for Quitter {
        type Result = ();
        fn handle(&mut self, _: ServerEvent, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    #[actix::test]
    async fn a_gone_subscriber_is_forgotten() {
        let mut fanout = Fanout::default();
        let recipient = Quitter.start().recipient();
        fanout.subscribe(recipient.clone());
        fanout.emit(&note(0));
        until(|| !recipient.connected()).await;
        fanout.emit(&note(1));
        assert!(fanout.subscribers.is_empty());
    }

    /// Waits (at most 5 s) until `cond` holds, letting the arbiter run meanwhile.
    async fn until(cond: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "condition not met in 5 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
