//! The cached tool list: replaced after each handshake and after `tools/list_changed`, with the
//! difference reported as [`ServerEvent::ToolsChanged`], and whether it is the server's whole
//! list (the walk of its pages is bounded: see [`crate::protocol::pagination`]). Its own room
//! because the refresh is a small protocol of its own: a burst of notifications is gathered
//! into one fetch of all pages (the driver fetches them as ordinary calls, bounded like the
//! handshake's), one fetch at a time.

use std::time::{Duration, Instant};

use crate::policy::deadline::saturating_add;
use crate::protocol::as_sent::ListedTool;
use crate::protocol::lifecycle;
use crate::protocol::pagination::Listed;
use crate::session::events::ServerEvent;

/// How long to gather `tools/list_changed` notifications before fetching the list once.
pub(crate) const TOOLS_REFRESH_DEBOUNCE: Duration = Duration::from_millis(100);

/// Where the refresh of the tool list is. One runs at a time: notifications that arrive while
/// one runs ask for one more after it, so a flood of them costs two fetches, not one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Refresh {
    #[default]
    Idle,
    /// Waiting out the debounce.
    Scheduled,
    /// Fetching; `again`: a notification came meanwhile.
    Running { again: bool },
}

/// The tool list of one server and its refresh.
#[derive(Debug, Default)]
pub(crate) struct ToolCache {
    list: Vec<ListedTool>,
    /// Why the list is not the server's whole list, if it is not.
    cut: Option<String>,
    refresh: Refresh,
}

impl ToolCache {
    /// The cached list.
    pub fn list(&self) -> &[ListedTool] {
        &self.list
    }

    /// Why the cached list is not the server's whole list (the walk of its pages was cut
    /// short), if it is not.
    pub fn cut(&self) -> Option<&str> {
        self.cut.as_deref()
    }

    /// Replaces the list with what the server listed; the difference is an event when
    /// `report` (not on the first handshake). Tools are compared whole, so a tool that changed
    /// in any member (one rmcp does not know included) is reported as changed.
    pub fn replace(
        &mut self,
        server: &str,
        listed: Listed<ListedTool>,
        report: bool,
    ) -> Option<ServerEvent> {
        let Listed { items: tools, cut } = listed;
        let diff = report.then(|| lifecycle::diff_tools(&self.list, &tools));
        self.list = tools;
        self.cut = cut;
        let diff = diff.filter(|d| !d.is_empty())?;
        Some(ServerEvent::ToolsChanged {
            server: server.to_owned(),
            added: diff.added,
            removed: diff.removed,
            changed: diff.changed,
        })
    }

    /// `tools/list_changed` arrived at `now`: when to fetch, if a timer is to be armed.
    pub fn list_changed(&mut self, now: Instant) -> Option<Instant> {
        match self.refresh {
            Refresh::Idle => {
                self.refresh = Refresh::Scheduled;
                Some(saturating_add(now, TOOLS_REFRESH_DEBOUNCE))
            }
            Refresh::Scheduled | Refresh::Running { again: true } => None,
            Refresh::Running { again: false } => {
                self.refresh = Refresh::Running { again: true };
                None
            }
        }
    }

    /// The debounce is over: whether to fetch now.
    pub fn start_refresh(&mut self) -> bool {
        if self.refresh != Refresh::Scheduled {
            return false;
        }
        self.refresh = Refresh::Running { again: false };
        true
    }

    /// The fetch is done: whether another was asked for meanwhile (then it is scheduled as if
    /// a notification came now).
    pub fn refresh_done(&mut self) -> bool {
        let again = self.refresh == Refresh::Running { again: true };
        self.refresh = Refresh::Idle;
        again
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_notifications_costs_two_fetches_at_most() {
        let now = Instant::now();
        let mut tools = ToolCache::default();
        assert_eq!(tools.list_changed(now), Some(now + TOOLS_REFRESH_DEBOUNCE));
        assert_eq!(tools.list_changed(now), None, "already scheduled");
        assert!(tools.start_refresh());
        assert!(!tools.start_refresh(), "one at a time");
        for _ in 0..100 {
            assert_eq!(tools.list_changed(now), None);
        }
        assert!(tools.refresh_done(), "one more after it");
        assert!(tools.list_changed(now).is_some());
        assert!(tools.start_refresh());
        assert!(!tools.refresh_done());
    }
}
