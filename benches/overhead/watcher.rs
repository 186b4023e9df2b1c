//! Which servers are Ready, kept from the supervisor's `StateChanged` events rather than by
//! polling, so that recovery and the herd can time transitions without adding load of their own.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::ServerEvent;
use tokio::sync::Notify;

/// Which servers are Ready, from the supervisor's events.
#[derive(Default)]
pub(crate) struct Board {
    pub(crate) ready: HashSet<String>,
    /// Transitions to Ready, per name prefix.
    pub(crate) ready_events: HashMap<String, usize>,
    /// When the latest transition to Ready was seen.
    pub(crate) last_ready: Option<Instant>,
}

impl Board {
    /// How many servers named `prefix...` are Ready.
    pub(crate) fn ready_count(&self, prefix: &str) -> usize {
        self.ready.iter().filter(|s| s.starts_with(prefix)).count()
    }
}

/// The subscriber that keeps the [`Board`] and wakes whoever waits on `changed`.
pub(crate) struct Watcher {
    pub(crate) board: Rc<RefCell<Board>>,
    pub(crate) changed: Rc<Notify>,
}

impl Actor for Watcher {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for Watcher {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        if let ServerEvent::StateChanged { server, state, .. } = event {
            let mut board = self.board.borrow_mut();
            if state.is_ready() {
                let prefix: String = server.chars().take_while(|c| c.is_alphabetic()).collect();
                *board.ready_events.entry(prefix).or_default() += 1;
                board.ready.insert(server);
                board.last_ready = Some(Instant::now());
            } else {
                board.ready.remove(&server);
            }
            self.changed.notify_waiters();
        }
    }
}

impl Watcher {
    /// Waits until `done(board)` holds; false after `limit`.
    pub(crate) async fn until(
        board: &Rc<RefCell<Board>>,
        changed: &Rc<Notify>,
        limit: Duration,
        done: impl Fn(&Board) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = changed.notified();
            if done(&board.borrow()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return done(&board.borrow());
            }
        }
    }
}
