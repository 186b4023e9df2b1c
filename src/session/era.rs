//! What the session knows of its server's protocol era between connections: the era to try
//! first (what the last attempts found), what the last opening agreed on, and the last
//! `server/discover` answer while it may be reused (its `ttlMs`, capped at
//! [`MAX_TTL`](crate::protocol::discover::MAX_TTL)). How an era is negotiated is the
//! attempt's (`actor/connect`) and [`crate::protocol::era`]'s business; what goes on the wire
//! in each era is [`Wire`](super::wire::Wire)'s.
//!
//! A discovery is only as good as the connections it opens: one that an attempt used and that
//! failed, or that opened a connection that broke before the server answered anything, says
//! nothing true about the server any more (it may have been rolled back to the session era,
//! replaced, or never have been what the cache says), so it is dropped with them and the next
//! attempt asks again.

use std::time::Instant;

use crate::protocol::era::Era;
use crate::protocol::lifecycle::Negotiated;

/// What a connection attempt starts from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EraPlan {
    /// The era the last connection spoke (or an earlier attempt learned), tried first.
    pub remembered: Option<Era>,
    /// A `server/discover` answer still fresh, reused instead of asking again (the revision:
    /// no refetch while fresh, none on a timer).
    pub fresh: Option<Negotiated>,
}

/// The era knowledge of one server.
#[derive(Debug, Default)]
pub(crate) struct EraKnowledge {
    remembered: Option<Era>,
    /// What the last opening agreed on (era, version, the server's capabilities), kept while
    /// the server is down.
    negotiated: Option<Negotiated>,
    /// When the server last answered `server/discover` with an answer that may be reused: the
    /// one in `negotiated`.
    discovered_at: Option<Instant>,
}

impl EraKnowledge {
    /// What the next attempt starts from at `now`.
    pub fn plan(&self, now: Instant) -> EraPlan {
        EraPlan {
            remembered: self.remembered,
            fresh: self.fresh_discovery(now),
        }
    }

    /// The last discovery, if the server said it may be reused and it is still fresh.
    fn fresh_discovery(&self, now: Instant) -> Option<Negotiated> {
        let negotiated = self.negotiated.as_ref()?;
        let ttl = negotiated.fresh_for?;
        let fetched = self.discovered_at?;
        let fresh = negotiated.era == Era::Modern && now.saturating_duration_since(fetched) < ttl;
        fresh.then(|| negotiated.clone())
    }

    /// What the last opening agreed on.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// An attempt opened a connection with `negotiated` (`reused`: with the fresh discovery it
    /// was given, asking nothing) at `now`.
    pub fn opened(&mut self, negotiated: Negotiated, reused: bool, now: Instant) {
        self.remembered = Some(negotiated.era);
        if negotiated.era == Era::Modern && !reused {
            self.discovered_at = Some(now);
        } else if negotiated.era == Era::Legacy {
            self.discovered_at = None;
        }
        self.negotiated = Some(negotiated);
    }

    /// An attempt failed; `learned`: the era it found the server speaks, if it found out
    /// (a stdio server that exits on `server/discover` is spoken to with the handshake next
    /// time). A discovery it was given is dropped: it opened nothing.
    pub fn attempt_failed(&mut self, used_discovery: bool, learned: Option<Era>) {
        if let Some(era) = learned {
            self.remembered = Some(era);
        }
        if used_discovery {
            self.forget_discovery();
        }
    }

    /// A connection broke; `proven`: the server had answered one of our requests on it. A
    /// connection that broke before any answer proves its discovery wrong, or at least not
    /// right: it is dropped.
    pub fn connection_lost(&mut self, proven: bool) {
        if !proven {
            self.forget_discovery();
        }
    }

    fn forget_discovery(&mut self) {
        if self.discovered_at.take().is_some() {
            tracing::debug!("a server/discover answer that did not hold up is dropped: the next attempt asks again");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn modern(ttl: Duration) -> Negotiated {
        Negotiated {
            era: Era::Modern,
            version: "2026-07-28".into(),
            server_info: None,
            capabilities: Default::default(),
            instructions: None,
            fresh_for: Some(ttl),
        }
    }

    #[test]
    fn a_fresh_discovery_is_reused_within_its_ttl_only() {
        let now = Instant::now();
        let mut era = EraKnowledge::default();
        assert_eq!(
            era.plan(now),
            EraPlan {
                remembered: None,
                fresh: None
            }
        );
        era.opened(modern(Duration::from_secs(60)), false, now);
        let plan = era.plan(now + Duration::from_secs(59));
        assert_eq!(plan.remembered, Some(Era::Modern));
        assert!(plan.fresh.is_some());
        assert!(era.plan(now + Duration::from_secs(60)).fresh.is_none());
    }

    #[test]
    fn a_discovery_a_failed_attempt_used_is_dropped_with_it() {
        let now = Instant::now();
        let mut era = EraKnowledge::default();
        era.opened(modern(Duration::from_secs(3600)), false, now);
        // An attempt that was not given it (none was fresh, say) does not drop it.
        era.attempt_failed(false, None);
        assert!(era.plan(now).fresh.is_some());
        era.attempt_failed(true, None);
        let plan = era.plan(now);
        assert!(plan.fresh.is_none(), "the next attempt asks again");
        assert_eq!(plan.remembered, Some(Era::Modern), "and tries modern first");
        // It finds the server speaks the session era now: that is tried first after.
        era.attempt_failed(false, Some(Era::Legacy));
        assert_eq!(era.plan(now).remembered, Some(Era::Legacy));
    }

    #[test]
    fn a_connection_that_broke_before_any_answer_drops_its_discovery() {
        let now = Instant::now();
        let mut era = EraKnowledge::default();
        era.opened(modern(Duration::from_secs(3600)), false, now);
        era.connection_lost(true);
        assert!(
            era.plan(now).fresh.is_some(),
            "a connection that worked keeps it"
        );
        era.connection_lost(false);
        assert!(era.plan(now).fresh.is_none());
    }
}
