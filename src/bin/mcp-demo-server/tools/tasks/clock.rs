//! The clock: the one thread that acts when a task's state changes by itself.
//!
//! A job needs no thread of its own (its state is a function of time, see `job`), but someone
//! must notice the instants at which it changes: to send `notifications/tasks` to the listens
//! that named a modern task, `notifications/tasks/status` and the `elicitation/create` request
//! of a session-era task, and to answer the `tasks/result` requests waiting for one to end (or
//! to expire). The clock sleeps until the next such instant over all tasks, or until woken (a
//! task created, answered or cancelled; a request that waits; a session initialized), and then
//! looks at every task once. One thread for any number of tasks; it starts with the first task
//! (or at start-up, when `DEMO_TASKS_DIR` holds some) and lives as long as the process.
//!
//! Everything it writes is written with the state lock held, as listens' deliveries are, so a
//! notification never overtakes the acknowledgement of its listen, and a status never goes out
//! of order with another's.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use super::super::super::era::Era;
use super::super::super::listen::Change;
use super::super::super::server::Server;
use super::super::super::{lock, stderr_line};
use super::job::{Status, TaskEra};
use super::table::{expired, Entry, Tasks};
use super::{modern, now_ms, session};

impl Server {
    /// Wakes the clock, starting it first if it does not run yet.
    pub(crate) fn wake_clock(&self, tasks: &mut Tasks) {
        if tasks
            .clock
            .as_ref()
            .is_some_and(|clock| clock.send(()).is_ok())
        {
            return;
        }
        let (wake, woken) = mpsc::channel();
        // Its answers are 2025-era responses and its log lines its own: a handle of no era.
        let server = self.in_era(Era::Legacy);
        let spawned = thread::Builder::new()
            .name("task-clock".into())
            .spawn(move || server.run_clock(&woken));
        match spawned {
            Ok(_) => tasks.clock = Some(wake),
            // Polls still work without it: they compute the state themselves.
            Err(e) => stderr_line(&format!("demo: cannot start the task clock: {e}")),
        }
    }

    fn run_clock(&self, woken: &Receiver<()>) {
        loop {
            let next = self.tick();
            let woke = match next {
                Some(at) => {
                    let wait = Duration::from_millis(at.saturating_sub(now_ms()));
                    match woken.recv_timeout(wait) {
                        Ok(()) | Err(RecvTimeoutError::Timeout) => true,
                        Err(RecvTimeoutError::Disconnected) => false,
                    }
                }
                None => woken.recv().is_ok(),
            };
            if !woke {
                return;
            }
            // Wakes that piled up meanwhile are all served by the next look.
            while woken.try_recv().is_ok() {}
        }
    }

    /// Looks at every task once; returns the next instant something changes by itself.
    fn tick(&self) -> Option<u64> {
        let now = now_ms();
        let modern = self.in_era(Era::Modern { log_level: None });
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let asks_client = state.session.takes_requests();
        let listens = &state.listens;
        let counter = &mut state.next_server_request;
        let mut next: Option<u64> = None;
        let mut soonest = |at: u64| next = Some(next.map_or(at, |n| n.min(at)));
        state.tasks.visit(|entry, waiting| {
            // An ended task that was told and that nobody waits for has nothing left to do.
            if entry.announced.is_some_and(Status::is_terminal) && entry.waiters.is_empty() {
                return;
            }
            let record = &entry.record;
            let snapshot = record.at(now);
            let status = snapshot.status(record.era);
            match record.era {
                TaskEra::Modern => {
                    if entry.announced != Some(status) {
                        let detailed = modern::detailed(record, &snapshot);
                        let task_id = &record.task_id;
                        modern.deliver_to(
                            listens,
                            &Change::Task {
                                task_id,
                                detailed: &detailed,
                            },
                        );
                        entry.announced = Some(status);
                    }
                }
                // A session hears of its tasks only once it may be sent requests: after
                // `notifications/initialized` (a restarted server's tasks, too).
                TaskEra::Session if asks_client => {
                    if entry.announced != Some(status) {
                        let task = session::task_json(record, &snapshot);
                        self.notify("notifications/tasks/status", Some(task));
                        entry.announced = Some(status);
                    }
                    if status == Status::InputRequired && entry.elicitation.is_none() {
                        *counter += 1;
                        let request_id = format!("srv-{counter}");
                        let request = session::elicitation(&request_id, Some(&record.task_id));
                        self.out.send(&request);
                        entry.elicitation = Some(request_id);
                    }
                }
                TaskEra::Session => {}
            }
            self.answer_waiters(entry, waiting, now, status, &mut soonest);
            if let Some(at) = entry.record.next_change(now) {
                soonest(at);
            }
        });
        next
    }

    /// Answers the `tasks/result` requests waiting for `entry`'s task, if it has ended or
    /// expired; else makes sure the clock wakes when it expires.
    fn answer_waiters(
        &self,
        entry: &mut Entry,
        waiting: &mut usize,
        now: u64,
        status: Status,
        soonest: &mut impl FnMut(u64),
    ) {
        if entry.waiters.is_empty() {
            return;
        }
        let record = &entry.record;
        if !record.is_expired(now) && !status.is_terminal() {
            soonest(record.expires_ms());
            return;
        }
        let snapshot = record.at(now);
        let expired_now = record.is_expired(now);
        let waiters = Tasks::take_waiters(waiting, entry);
        for waiter in waiters {
            let reply = if expired_now {
                Err(expired())
            } else {
                session::payload(&entry.record, &snapshot)
            };
            self.respond(&waiter, reply);
        }
    }
}
