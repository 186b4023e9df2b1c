//! The writer of a server's stdin: batches what is queued into as few writes as possible, and
//! tells the reader how much it has yet to write, so that a server that floods us with requests
//! but does not read our answers is held up by its own pipe rather than by our memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::transport::Outgoing;

/// Lines queued for the server's stdin and not yet written, past which a request from the
/// server is not read (its answer would only queue up behind them): a server that floods us
/// with requests but does not read our answers is held up by its own pipe, not by our memory.
pub(super) const MAX_BACKLOG: usize = 64;

/// What the writer has not written yet, for the reader to wait on.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    lines: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    fn set(&self, lines: usize) {
        let before = self.lines.swap(lines, Ordering::AcqRel);
        // Only a backlog that was full can have someone waiting (they wait only after seeing
        // it full, registered before they looked): the waiters' lock is not taken per write.
        if before >= MAX_BACKLOG && lines < MAX_BACKLOG {
            self.drained.notify_waiters();
        }
    }

    /// Whether one more answer may be queued now.
    pub(super) fn has_room(&self) -> bool {
        self.lines.load(Ordering::Acquire) < MAX_BACKLOG
    }

    /// Returns once there is room for one more answer.
    pub(super) async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a wake-up in between is not lost.
            drained.as_mut().enable();
            if self.lines.load(Ordering::Acquire) < MAX_BACKLOG {
                return;
            }
            drained.await;
        }
    }
}

/// Writes whatever is queued with as few syscalls as possible; reports the first failure.
pub(super) async fn write_loop(
    mut stdin: ChildStdin,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    failed: oneshot::Sender<std::io::Error>,
    backlog: Arc<Backlog>,
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        let mut lines = 0;
        // A pipe holds no per-request resources: abandoned requests need nothing done.
        if let Outgoing::Line(line) | Outgoing::Modern { line, .. } = first {
            batch.extend_from_slice(&line);
            lines += 1;
        }
        while let Ok(more) = rx.try_recv() {
            if let Outgoing::Line(line) | Outgoing::Modern { line, .. } = more {
                batch.extend_from_slice(&line);
                lines += 1;
            }
            if batch.len() >= 1 << 20 {
                break;
            }
        }
        if batch.is_empty() {
            continue;
        }
        backlog.set(lines + rx.len());
        if let Err(e) = stdin.write_all(&batch).await {
            let _ = failed.send(e);
            break;
        }
        batch.clear();
        backlog.set(rx.len());
    }
    // Nothing more will be written: whoever waits for room must not wait for ever (the reader
    // then learns of the failure, or of the end, from its own stream).
    backlog.set(0);
    // All senders are gone: dropping stdin closes the pipe, which tells the server to exit.
}
