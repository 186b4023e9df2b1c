//! The session's one timer table: every time something is due, in one place, behind
//! [`Session::poll_timeout`](super::Session::poll_timeout) and
//! [`Session::handle_timeout`](super::Session::handle_timeout). The driver keeps one real timer,
//! set for the earliest instant here; the session decides what each one means.
//!
//! - the calls' deadlines: one heap for all of them, earliest first; an item whose call is gone
//!   or whose deadline moved (progress) is stale and skipped, and stale items are swept out
//!   once they outnumber the live ones;
//! - the connection state machine's retry or revival timer (the newest token only: an older
//!   one is stale by the machine's own rule);
//! - the listen stream's reopening (2026-07-28), for one connection, and the deadline of the
//!   subscriptions waiting for a listen's acknowledgement;
//! - the coalesced refresh of the tool list after `tools/list_changed`;
//! - the periodic look for calls whose callers left;
//! - the earliest poll of a task (the task table keeps when each is due).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// Something that is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Call `key`'s deadline.
    Call(u64),
    /// The state machine's retry or revival timer, armed with this token.
    Retry(u64),
    /// Open the listen stream of connection `seq` again.
    ListenReopen(u64),
    /// The subscriptions waiting for listen `id` of connection `seq` to be acknowledged have
    /// waited long enough.
    ListenAck { seq: u64, id: u64 },
    /// Fetch the tool list (the debounce after `tools/list_changed` is over).
    ToolsRefresh,
    /// Look for calls whose callers left.
    CallerSweep,
    /// Ask the tasks that are due how they are doing.
    TaskPolls,
}

/// Every timer of one session.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    calls: BinaryHeap<Reverse<(Instant, u64)>>,
    retry: Option<(Instant, u64)>,
    listen_reopen: Option<(Instant, u64)>,
    listen_ack: Option<(Instant, u64, u64)>,
    tools_refresh: Option<Instant>,
    caller_sweep: Option<Instant>,
    task_polls: Option<Instant>,
}

impl Timers {
    /// Adds call `key`'s (new) deadline `at`; `live` is the number of calls (`key` among
    /// them), `current` tells an item that is still a call's deadline from a stale one.
    pub fn call(
        &mut self,
        at: Instant,
        key: u64,
        live: usize,
        current: impl Fn(u64, Instant) -> bool,
    ) {
        if live == 1 && current(key, at) {
            // This is the one call there is: every other item is stale (serial callers).
            self.calls.clear();
        } else if self.calls.len() > 2 * live + 64 {
            self.calls.retain(|Reverse((at, k))| current(*k, *at));
        }
        self.calls.push(Reverse((at, key)));
    }

    /// The earliest call deadline that is still current (stale ones are dropped on the way).
    fn next_call(&mut self, current: &impl Fn(u64, Instant) -> bool) -> Option<Instant> {
        while let Some(Reverse((at, key))) = self.calls.peek().copied() {
            if current(key, at) {
                return Some(at);
            }
            self.calls.pop();
        }
        None
    }

    /// Arms the state machine's timer (replacing an older one, which is stale anyway).
    pub fn retry(&mut self, at: Instant, token: u64) {
        self.retry = Some((at, token));
    }

    /// Arms the reopening of connection `seq`'s listen stream.
    pub fn listen_reopen(&mut self, at: Instant, seq: u64) {
        self.listen_reopen = Some((at, seq));
    }

    /// Whether a reopening of connection `seq`'s listen stream is armed (it opens with the
    /// filter of its time, whatever changed meanwhile).
    pub fn listen_reopen_armed(&self, seq: u64) -> bool {
        self.listen_reopen.is_some_and(|(_, s)| s == seq)
    }

    /// Arms the deadline of the subscriptions waiting for listen `id` of connection `seq`
    /// (replacing an older one: its waiters moved to this listen).
    pub fn listen_ack(&mut self, at: Instant, seq: u64, id: u64) {
        self.listen_ack = Some((at, seq, id));
    }

    /// Arms the tool-list refresh.
    pub fn tools_refresh(&mut self, at: Instant) {
        self.tools_refresh = Some(at);
    }

    /// Arms the look for abandoned calls, unless it is armed; whether it armed it.
    pub fn caller_sweep(&mut self, at: Instant) -> bool {
        self.caller_sweep_at(|| at)
    }

    /// As [`Timers::caller_sweep`], with the instant made only if it is armed (every call
    /// asks).
    pub fn caller_sweep_at(&mut self, at: impl FnOnce() -> Instant) -> bool {
        let arm = self.caller_sweep.is_none();
        if arm {
            self.caller_sweep = Some(at());
        }
        arm
    }

    /// Arms the polls of the tasks for `at`, the earliest one due (`None`: no task is).
    pub fn task_polls(&mut self, at: Option<Instant>) {
        self.task_polls = at;
    }

    /// When the earliest timer is due.
    pub fn next(&mut self, current: impl Fn(u64, Instant) -> bool) -> Option<Instant> {
        let named = [
            self.retry.map(|(at, _)| at),
            self.listen_reopen.map(|(at, _)| at),
            self.listen_ack.map(|(at, _, _)| at),
            self.tools_refresh,
            self.caller_sweep,
            self.task_polls,
        ];
        named
            .into_iter()
            .flatten()
            .chain(self.next_call(&current))
            .min()
    }

    /// Takes one timer that is due at `now`, if any: the state machine's first, then the
    /// calls' in deadline order, then the rest.
    pub fn pop_due(
        &mut self,
        now: Instant,
        current: impl Fn(u64, Instant) -> bool,
    ) -> Option<Timer> {
        if let Some((_, token)) = self.retry.filter(|(at, _)| *at <= now) {
            self.retry = None;
            return Some(Timer::Retry(token));
        }
        if let Some(at) = self.next_call(&current).filter(|at| *at <= now) {
            let Reverse((_, key)) = self.calls.pop()?;
            debug_assert!(current(key, at));
            return Some(Timer::Call(key));
        }
        if let Some((_, seq)) = self.listen_reopen.filter(|(at, _)| *at <= now) {
            self.listen_reopen = None;
            return Some(Timer::ListenReopen(seq));
        }
        if let Some((_, seq, id)) = self.listen_ack.filter(|(at, _, _)| *at <= now) {
            self.listen_ack = None;
            return Some(Timer::ListenAck { seq, id });
        }
        if self.tools_refresh.is_some_and(|at| at <= now) {
            self.tools_refresh = None;
            return Some(Timer::ToolsRefresh);
        }
        if self.caller_sweep.is_some_and(|at| at <= now) {
            self.caller_sweep = None;
            return Some(Timer::CallerSweep);
        }
        if self.task_polls.is_some_and(|at| at <= now) {
            self.task_polls = None;
            return Some(Timer::TaskPolls);
        }
        None
    }

    /// Items in the call heap, stale ones included (for the test of its bound).
    #[cfg(test)]
    pub fn call_items(&self) -> usize {
        self.calls.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_earliest_of_every_kind_is_next_and_each_fires_once() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let mut timers = Timers::default();
        let always = |_: u64, _: Instant| true;
        assert_eq!(timers.next(always), None);
        timers.call(now + s(5), 1, 1, always);
        timers.retry(now + s(3), 7);
        timers.tools_refresh(now + s(4));
        assert!(timers.caller_sweep(now + s(9)));
        assert!(!timers.caller_sweep(now + s(1)), "armed already: kept");
        assert_eq!(timers.next(always), Some(now + s(3)));
        assert_eq!(timers.pop_due(now + s(2), always), None);
        let due: Vec<Timer> = std::iter::from_fn(|| timers.pop_due(now + s(10), always)).collect();
        assert_eq!(
            due,
            [
                Timer::Retry(7),
                Timer::Call(1),
                Timer::ToolsRefresh,
                Timer::CallerSweep
            ]
        );
        assert_eq!(timers.next(always), None);
    }

    #[test]
    fn a_stale_call_deadline_is_skipped() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let mut timers = Timers::default();
        // Call 1 moved from 5 s to 8 s (progress); call 2 is gone.
        let current = |key: u64, at: Instant| key == 1 && at == now + s(8);
        timers.call(now + s(5), 1, 2, current);
        timers.call(now + s(6), 2, 2, current);
        timers.call(now + s(8), 1, 2, current);
        assert_eq!(timers.next(current), Some(now + s(8)));
        assert_eq!(timers.pop_due(now + s(7), current), None);
        assert_eq!(timers.pop_due(now + s(8), current), Some(Timer::Call(1)));
    }

    #[test]
    fn the_one_call_in_the_table_drops_the_stale_items_and_no_live_one() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let mut timers = Timers::default();
        // Serial calls: each finished before the next, whose deadline leaves no stale item.
        let only = |k: u64| move |key: u64, _: Instant| key == k;
        for key in 1..=100 {
            timers.call(now + s(key), key, 1, only(key));
        }
        assert_eq!(timers.calls.len(), 1);
        // A call answered at once (gone from the table) beside a live one: nothing is lost.
        let live = |key: u64, _: Instant| key == 100;
        timers.call(now + s(200), 101, 1, live);
        assert_eq!(timers.next(live), Some(now + s(100)));
    }
}
