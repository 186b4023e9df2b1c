//! The answers we owe a server that wait to go out to it: one count, kept by every path that
//! queues or sends one, and the bound past which the server's requests are not taken in full.
//! Shared by both transports.
//!
//! When a server floods us with requests, what piles up is their answers: our own requests are
//! bounded by `max_in_flight`, and our notifications by the calls they belong to. So the bound
//! is on the answers (on HTTP, on every line waiting for the serial POSTs: the answers and the
//! few notifications). What a transport does at the bound differs, because its reading and its
//! writing are tied differently:
//!
//! - stdio drops the answer where it is queued, whichever way its request came, and the reader
//!   does not hand out a request whose answer would be dropped: the request goes unanswered,
//!   and reading goes on. Its reader never waits for its writer: there is one pipe each way,
//!   and a server that writes a burst of requests before it reads its stdin again blocks on
//!   its stdout — were we to stop reading until it read our answers, neither would go on.
//! - HTTP stops reading the stream that brought the request until there is room: its streams
//!   and its POSTs are separate connections, so the server's writing to the stream does not
//!   hold up our POSTs, and TCP holds the flood in the server.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Lines (answers) waiting to go out to a server, past which a request from it is not taken
/// in: its answer would only queue up behind them.
pub(crate) const MAX_BACKLOG: usize = 64;

/// The lines waiting to go out, and the signal that they dropped below [`MAX_BACKLOG`].
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    lines: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    /// `n` more lines wait (stdio: an answer was queued).
    #[cfg_attr(not(feature = "stdio"), allow(dead_code))]
    pub fn add(&self, n: usize) {
        self.lines.fetch_add(n, Ordering::AcqRel);
    }

    /// `n` of the lines that were added went out.
    #[cfg_attr(not(feature = "stdio"), allow(dead_code))]
    pub fn remove(&self, n: usize) {
        let before = self.lines.fetch_sub(n, Ordering::AcqRel);
        self.drained_from(before, before.saturating_sub(n));
    }

    /// `lines` wait now (HTTP: the send loop holds them all, and counts them itself).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub fn set(&self, lines: usize) {
        let before = self.lines.swap(lines, Ordering::AcqRel);
        self.drained_from(before, lines);
    }

    fn drained_from(&self, before: usize, now: usize) {
        // Only a backlog that was full can have someone waiting (they wait only after seeing
        // it full, registered before they looked): the waiters' lock is not taken per line.
        if before >= MAX_BACKLOG && now < MAX_BACKLOG {
            self.drained.notify_waiters();
        }
    }

    /// Whether the answer to one more request may be queued now.
    pub fn has_room(&self) -> bool {
        self.lines.load(Ordering::Acquire) < MAX_BACKLOG
    }

    /// Returns once there is room for one more answer.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a wake-up in between is not lost.
            drained.as_mut().enable();
            if self.has_room() {
                return;
            }
            drained.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn room_comes_back_when_the_lines_drop_below_the_bound() {
        let backlog = std::sync::Arc::new(Backlog::default());
        backlog.add(MAX_BACKLOG);
        assert!(!backlog.has_room());
        let waiting = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no room while the bound is reached");
        backlog.remove(1);
        assert!(backlog.has_room());
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken by the line that went out")
            .unwrap();

        backlog.set(MAX_BACKLOG + 3);
        assert!(!backlog.has_room());
        backlog.set(0);
        assert!(backlog.has_room());
    }
}
