//! The writer of a server's stdin: what the actor sends is appended to one shared buffer (no
//! allocation or channel message per line), and the writer task writes all of it at once. It
//! tells the reader how much it has yet to write, so that a server that floods us with
//! requests but does not read our answers is held up by its own pipe rather than by our memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

/// Lines queued for the server's stdin and not yet written, past which a request from the
/// server is not read (its answer would only queue up behind them): a server that floods us
/// with requests but does not read our answers is held up by its own pipe, not by our memory.
pub(super) const MAX_BACKLOG: usize = 64;

/// A write buffer grown past this by one huge message is not kept for the next ones.
const KEEP_CAPACITY: usize = 1 << 20;

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

/// The lines queued for the writer, shared by every [`LineSender`] and the writer task.
#[derive(Debug, Default)]
pub(super) struct Queue {
    state: Mutex<Queued>,
}

#[derive(Debug, Default)]
struct Queued {
    bytes: Vec<u8>,
    lines: usize,
    /// The writer, waiting for something to write (kept under the same lock as the bytes, so a
    /// line and its wake-up cannot pass each other).
    writer: Option<Waker>,
    /// Live senders: the writer ends, and stdin closes, when the last one is gone.
    senders: usize,
    /// The writer is gone (stdin failed or closed): nothing more is taken.
    closed: bool,
}

impl Queue {
    fn state(&self) -> MutexGuard<'_, Queued> {
        // Nothing panics while holding it; should something, the bytes are still bytes.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns once there is something to write, or no sender left.
    async fn ready(&self) {
        std::future::poll_fn(|cx| {
            let mut queued = self.state();
            if !queued.bytes.is_empty() || queued.senders == 0 {
                return Poll::Ready(());
            }
            match &queued.writer {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => queued.writer = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }
}

/// Appends lines to the writer's queue. Cheap to clone; the writer writes what is queued and
/// ends once every sender is dropped, which closes the server's stdin.
#[derive(Debug)]
pub(crate) struct LineSender(Arc<Queue>);

impl LineSender {
    /// The first sender of a new queue.
    pub(super) fn new() -> (LineSender, Arc<Queue>) {
        let queue = Arc::new(Queue::default());
        queue.state().senders = 1;
        (LineSender(queue.clone()), queue)
    }

    /// Queues one line, which `write` appends to the buffer it is given (newline included);
    /// false if the writer is gone.
    pub fn send_with(&self, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        let writer = {
            let mut queued = self.0.state();
            if queued.closed {
                return false;
            }
            write(&mut queued.bytes);
            queued.lines += 1;
            queued.writer.take()
        };
        if let Some(writer) = writer {
            writer.wake();
        }
        true
    }
}

impl Clone for LineSender {
    fn clone(&self) -> Self {
        self.0.state().senders += 1;
        LineSender(self.0.clone())
    }
}

impl Drop for LineSender {
    fn drop(&mut self) {
        let writer = {
            let mut queued = self.0.state();
            queued.senders = queued.senders.saturating_sub(1);
            if queued.senders == 0 {
                queued.writer.take()
            } else {
                None
            }
        };
        if let Some(writer) = writer {
            writer.wake();
        }
    }
}

/// Writes whatever is queued with as few syscalls as possible; reports the first failure.
pub(super) async fn write_loop(
    mut stdin: impl AsyncWrite + Unpin,
    queue: Arc<Queue>,
    failed: oneshot::Sender<std::io::Error>,
    backlog: Arc<Backlog>,
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    let mut failure = None;
    loop {
        let (lines, last) = {
            let mut queued = queue.state();
            // The writer's empty buffer becomes the queue's: neither allocates per write.
            std::mem::swap(&mut batch, &mut queued.bytes);
            (std::mem::take(&mut queued.lines), queued.senders == 0)
        };
        if batch.is_empty() {
            if last {
                break;
            }
            queue.ready().await;
            continue;
        }
        backlog.set(lines);
        if let Err(e) = stdin.write_all(&batch).await {
            failure = Some(e);
            break;
        }
        batch.clear();
        if batch.capacity() > KEEP_CAPACITY {
            batch = Vec::with_capacity(64 * 1024);
        }
        backlog.set(queue.state().lines);
    }
    // Closed before the failure is told, so that nothing is taken once it is known.
    queue.state().closed = true;
    if let Some(e) = failure {
        let _ = failed.send(e);
    }
    // Nothing more will be written: whoever waits for room must not wait for ever (the reader
    // then learns of the failure, or of the end, from its own stream).
    backlog.set(0);
    // Dropping stdin closes the pipe, which tells the server to exit.
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn writer(
        stdin: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (LineSender, oneshot::Receiver<std::io::Error>, Arc<Backlog>) {
        let (sender, queue) = LineSender::new();
        let (failed_tx, failed) = oneshot::channel();
        let backlog = Arc::new(Backlog::default());
        tokio::spawn(write_loop(stdin, queue, failed_tx, backlog.clone()));
        (sender, failed, backlog)
    }

    #[tokio::test]
    async fn lines_go_out_in_order_and_the_last_sender_closes_stdin() {
        let (stdin, mut server) = tokio::io::duplex(16);
        let (sender, _failed, backlog) = writer(stdin);
        let other = sender.clone();
        for i in 0..50 {
            let line = format!("line {i}\n");
            let by = if i % 2 == 0 { &sender } else { &other };
            assert!(by.send_with(|out| out.extend_from_slice(line.as_bytes())));
        }
        drop(sender);
        drop(other);
        let mut got = String::new();
        server.read_to_string(&mut got).await.unwrap();
        let want: String = (0..50).map(|i| format!("line {i}\n")).collect();
        assert_eq!(got, want, "every line, in order, then end of file");
        assert!(backlog.has_room());
    }

    #[tokio::test]
    async fn after_a_failed_write_nothing_more_is_taken() {
        let (stdin, server) = tokio::io::duplex(16);
        drop(server);
        let (sender, failed, _backlog) = writer(stdin);
        assert!(sender.send_with(|out| out.extend_from_slice(b"lost\n")));
        assert!(failed.await.is_ok(), "the failure is reported");
        assert!(!sender.send_with(|out| out.extend_from_slice(b"later\n")));
    }
}
