//! Leases: which replica polls which task, when the replicas of a service share one task
//! store (see [`TaskStore::lease`](crate::tasks::TaskStore::lease)).
//!
//! Each running task is leased to one replica, which alone asks the server about it. The
//! driver tends the leases every third of a lease: it renews this replica's, takes over those
//! that lapsed (their replica died), and looks in the store for the outcome of the tasks
//! another replica polls that a caller here waits for. This room holds what the session makes
//! of that ([`LeaseTend`]); the table keeps, per task, whether it is polled here.
//!
//! The one rule the session keeps: no poll goes out once the leases may have lapsed. The
//! driver counts a renewal's lease from *before* it sent the renewal, by this process's
//! clock, and the store counts it from the renewal, by the database's; so a replica stops
//! polling before another may take its tasks, and no task is polled by two at once.

use std::time::Instant;

use serde_json::Value;

use super::tasks::Restored;
use super::Session;
use crate::error::Error;
use crate::protocol::text::server_text;

/// Whether this replica's polls wait for leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leases {
    /// The store has no leases: one process follows every task.
    None,
    /// Polls go out only before `until` (`None`: not renewed yet, so none go out).
    Held { until: Option<Instant> },
}

impl Leases {
    /// The leases that hold no longer than either (tasks handed from one generation to the
    /// next hold only as long as the old one's leases did, until a renewal of the new one).
    pub fn earliest(self, other: Leases) -> Leases {
        match (self, other) {
            (Leases::Held { until: a }, Leases::Held { until: b }) => Leases::Held {
                until: a.zip(b).map(|(a, b)| a.min(b)),
            },
            (Leases::None, held) | (held, Leases::None) => held,
        }
    }

    /// Whether a poll due at `at` may go out.
    pub fn admits(self, at: Instant) -> bool {
        match self {
            Leases::None => true,
            Leases::Held { until } => until.is_some_and(|until| at < until),
        }
    }
}

/// What the driver learnt from the store when it tended the leases.
#[derive(Debug, Default)]
pub(crate) struct LeaseTend {
    /// Until when the leases hold, when they were renewed; `None` when the renewal failed
    /// (the leases lapse when they do, and polls stop then).
    pub hold_until: Option<Instant>,
    /// Tasks polled here whose lease another replica holds now.
    pub lost: Vec<String>,
    /// Tasks whose lease lapsed, taken over: polled here from now on.
    pub taken: Vec<Restored>,
    /// Tasks another replica polls that ended there, each with its outcome (an error for one
    /// whose outcome is gone: delivered elsewhere, or forgotten).
    pub ended: Vec<(String, Result<Value, Error>)>,
}

impl Session {
    /// The store has leases: polls wait for them from now on.
    pub fn lease_tasks(&mut self) {
        self.tasks.lease_tasks();
    }

    /// The running tasks polled here, whose leases the driver renews.
    pub fn tasks_polled_here(&self) -> Vec<String> {
        self.tasks.polled_here()
    }

    /// The tasks another replica polls that callers here wait for: the driver looks for
    /// their outcome in the store.
    pub fn tasks_followed_elsewhere(&mut self) -> Vec<String> {
        self.tasks.followed_elsewhere()
    }

    /// Carries out what the driver learnt when it tended the leases.
    pub fn leases_tended(&mut self, tend: LeaseTend, now: Instant) {
        let LeaseTend {
            hold_until,
            lost,
            taken,
            ended,
        } = tend;
        if let Some(until) = hold_until {
            self.tasks.leases_hold_until(until);
        }
        for id in lost {
            tracing::warn!(server = %self.name, task = %server_text(&id), "another replica took this task's lease over; it is polled there from now on");
            self.tasks.polled_elsewhere(&id);
        }
        if !taken.is_empty() {
            tracing::info!(server = %self.name, tasks = taken.len(), "took over tasks whose lease lapsed");
        }
        self.restore_tasks(taken, now);
        for (id, outcome) in ended {
            let next = self.tasks.ended_elsewhere(&id, outcome);
            self.on_task_next(&id, next, now);
        }
        self.flush_task_writes();
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
        self.act_on_internal(now);
    }

    /// The store says another replica holds task `id`'s lease: it is not polled here.
    pub(super) fn polled_elsewhere(&mut self, id: &str, now: Instant) {
        tracing::debug!(server = %self.name, task = %server_text(id), "another replica polls this task; its outcome is awaited in the task store");
        self.tasks.polled_elsewhere(id);
        self.rearm_task_polls(now);
        self.listen_for_tasks(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn handed_tasks_hold_no_longer_than_the_old_generations_leases() {
        let now = Instant::now();
        let (soon, later) = (now + Duration::from_secs(1), now + Duration::from_secs(9));
        let held = |until| Leases::Held { until };
        assert_eq!(
            held(Some(later)).earliest(held(Some(soon))),
            held(Some(soon))
        );
        assert_eq!(
            held(Some(later)).earliest(held(None)),
            held(None),
            "never renewed"
        );
        assert_eq!(Leases::None.earliest(Leases::None), Leases::None);
        assert!(!held(Some(soon)).admits(soon), "up to, not at, the end");
        assert!(held(Some(soon)).admits(now));
        assert!(Leases::None.admits(later));
    }
}
