//! What one generation of a server hands to the next when the server is replaced
//! make-before-break (`Restart`, `ReplaceServer`, a `Reload` that changed it).
//!
//! The old generation drains: the calls written on its connection finish there, because only
//! that connection can answer them. Everything else belongs to whichever generation is
//! current, and goes to the new one:
//!
//! - the calls that wait for a connection (queued while the old one reconnected, or put back
//!   for a re-send by a connection that broke while it drained): never sent, or safe to send
//!   again, so the new generation sends them and nothing runs twice;
//! - the tasks the server runs for calls, with the callers waiting for them and the outcomes
//!   nobody took yet, when the new generation reaches the same server (its
//!   [identity](crate::tasks::server_identity): a task is never asked about on another server).
//!   A task is the server's, not the connection's: the new generation polls it from now on.
//!
//! A draining generation whose connection breaks does not reconnect: it hands over what may
//! be sent again and stops; so does one whose drain time is up (see [`Session::drain`]).
//!
//! Calls keep their keys: every generation of a server takes its request ids from one
//! sequence, so a key (and the progress token made of it) means the same call in both tables.

use std::time::Instant;

use super::entry::CallEntry;
use super::tasks::TaskHandover;
use super::{situation_of, Command, Session};
use crate::policy::deadline::saturating_add;
use crate::policy::state::ServerState;

/// The calls and tasks one generation hands to the next.
pub(crate) struct Handover {
    /// Calls that wait to be written, oldest first, by key.
    waiting: Vec<(u64, CallEntry)>,
    /// Callers waiting for the handed tasks' ends (held: neither written nor waiting), by key.
    holding: Vec<(u64, CallEntry)>,
    tasks: Option<TaskHandover>,
}

impl std::fmt::Debug for Handover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handover")
            .field("waiting", &self.waiting.len())
            .field("holding", &self.holding.len())
            .field("tasks", &self.tasks.as_ref().map_or(0, TaskHandover::len))
            .finish()
    }
}

impl Handover {
    fn is_empty(&self) -> bool {
        self.waiting.is_empty()
            && self.holding.is_empty()
            && self.tasks.as_ref().is_none_or(TaskHandover::is_empty)
    }

    /// Calls handed over (those waiting to be written, and those waiting for a task).
    pub fn calls(&self) -> usize {
        self.waiting.len() + self.holding.len()
    }
}

/// When a draining generation's tasks go to the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TasksGo {
    /// Never: the next generation reaches another server, which does not know them.
    Stay,
    /// At once, and any learnt later as soon as it can go (over HTTP: the server behind the
    /// URL is the same, only the connection changes).
    AtOnce,
    /// When this generation ends (a stdio server's old process is the one that runs them: it
    /// may finish them within the drain; after it, the new process is the only one left to
    /// ask, which knows them if it keeps its tasks).
    AtEnd,
}

impl Session {
    /// This generation was replaced: from now on it only finishes the calls written on its
    /// connection. The calls waiting for a connection go to the new generation at once
    /// ([`Command::HandOver`]); the tasks go too when `same_server` (the new generation
    /// reaches the server this one does: see [`TasksGo`]). A generation that has no
    /// connection now stops; one whose connection breaks later stops then, rather than
    /// reconnecting; when it stops (its drain time up) what it still holds is settled as on a
    /// lost connection, and what may be sent again goes to the new generation too.
    pub fn drain(&mut self, same_server: bool, now: Instant) {
        if self.draining.is_some() || *self.machine.state() == ServerState::Stopped {
            return;
        }
        self.draining = Some(match (same_server, self.http) {
            (false, _) => TasksGo::Stay,
            (true, true) => TasksGo::AtOnce,
            (true, false) => TasksGo::AtEnd,
        });
        self.hand_over(false, now);
        if !self.machine.state().is_ready() {
            self.stop(now);
        }
    }

    /// Hands what may go now to the next generation: the calls waiting to be written, and the
    /// tasks as [`TasksGo`] says (`ending`: this generation is stopping).
    pub(super) fn hand_over(&mut self, ending: bool, now: Instant) {
        let tasks = match self.draining {
            Some(TasksGo::AtOnce) => Some(self.tasks.hand_over(ending)),
            Some(TasksGo::AtEnd) if ending => Some(self.tasks.hand_over(true)),
            _ => None,
        };
        let holding = tasks
            .as_ref()
            .map(|t| self.calls.take(t.waiters()))
            .unwrap_or_default();
        let handover = Handover {
            waiting: self.calls.take_waiting(),
            holding,
            tasks,
        };
        if !handover.is_empty() {
            tracing::info!(server = %self.name, calls = handover.calls(), "handing calls to the new generation");
            self.commands.push_back(Command::HandOver(handover));
        }
        self.rearm_task_polls(now);
    }

    /// A task was learnt, or its questions answered, while this generation drains: it goes to
    /// the next one if its tasks go at once.
    pub(super) fn hand_over_tasks_learnt(&mut self, now: Instant) {
        if self.draining == Some(TasksGo::AtOnce) {
            self.hand_over(false, now);
        }
    }

    /// The replacement of this generation failed with `error`: it serves on, and its status
    /// says why the replacement did not happen (until a newer error).
    pub fn replacement_failed(&mut self, error: crate::error::Error) {
        self.last_error = Some(error);
    }

    /// Takes what the generation before this one handed over: its waiting calls are written
    /// (at once if Ready, else when Ready), its tasks polled here, each call keeping its
    /// deadline. `tasks_welcome`: this generation reaches the server the tasks run on; if not
    /// (the server was replaced again, by another, before they arrived), their callers are
    /// answered that the task is lost. A generation that is failed or stopped answers the
    /// calls as it answers any call it cannot send.
    pub fn take_over(&mut self, handover: Handover, tasks_welcome: bool, now: Instant) {
        let Handover {
            waiting,
            mut holding,
            tasks,
        } = handover;
        if let Some(tasks) = tasks {
            if tasks_welcome {
                self.tasks.take_over(tasks, now);
            } else {
                for (key, error) in self.tasks.refuse(tasks) {
                    if let Some(at) = holding.iter().position(|(k, _)| *k == key) {
                        let (_, entry) = holding.swap_remove(at);
                        self.calls.adopt(key, entry);
                        self.calls.fail_call(key, error);
                    }
                }
            }
        }
        let situation = situation_of(&self.machine, &self.last_error);
        let wire = self.live.as_ref().map(|l| &l.wire);
        let mut deadlines = Vec::with_capacity(waiting.len() + holding.len());
        for (key, entry) in holding.into_iter().chain(waiting) {
            deadlines.push((key, entry.deadline));
            self.calls.adopt(key, entry);
        }
        match situation.state {
            ServerState::Failed { .. } => self.calls.fail_waiting(&situation),
            ServerState::Stopped => self.calls.fail_all_stopped(&situation),
            _ => self.calls.flush(&situation, wire),
        }
        for (key, deadline) in deadlines {
            self.arm_deadline(key, deadline);
        }
        let sweep = || saturating_add(now, super::CALLER_SWEEP);
        if self.timers.caller_sweep_at(sweep) {
            self.moved_to(sweep());
        }
        self.flush_task_writes();
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
        self.act_on_internal(now);
        // A draining generation passes on what it was handed (it was replaced meanwhile).
        if self.draining.is_some() {
            self.hand_over(false, now);
        }
    }
}
