//! The writer of a server's stdin: what the actor sends is appended to one shared buffer (no
//! allocation or channel message per line), and the writer task writes all of it at once.
//!
//! The answers to the server's requests are bounded here, where every one of them is queued
//! ([`LineSender::answer`]): they are counted (under the buffer's lock, with their bytes) until
//! the batch that holds them is written, and while [`MAX_BACKLOG`] wait — the server is not
//! reading its stdin — a further answer is dropped, and its request goes unanswered (logged
//! and counted, [`Queue::unanswered`]). The reader looks at the same count to leave such
//! requests unanswered before they are handed out. Nothing waits on it: reading the server's
//! stdout never waits for its stdin (see [`crate::transport::backlog`] for why).

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::transport::backlog::{Backlog, MAX_BACKLOG};

/// A write buffer grown past this by one huge message is not kept for the next ones.
const KEEP_CAPACITY: usize = 1 << 20;

/// The lines queued for the writer, shared by every [`LineSender`] and the writer task.
#[derive(Debug)]
pub(super) struct Queue {
    state: Mutex<Queued>,
    /// Answers queued or being written, not yet written.
    answers: Backlog,
    /// The server's name, for the log of its unanswered requests.
    server: Arc<str>,
}

#[derive(Debug, Default)]
struct Queued {
    bytes: Vec<u8>,
    /// Answers among `bytes`: the writer uncounts them once it has written them.
    answers: usize,
    /// Requests left unanswered since an answer was last queued: the first is logged, and
    /// their number once an answer is queued again (or the writer ends).
    unanswered: u64,
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

    /// Whether the answer to one more of the server's requests may be queued: fewer than
    /// [`MAX_BACKLOG`] wait to be written.
    pub(super) fn has_room_for_answer(&self) -> bool {
        self.answers.has_room()
    }

    /// A request from the server goes unanswered, its answer finding no room (dropped, or
    /// never asked for): counted, and the first of a run logged.
    pub(super) fn unanswered(&self) {
        let first = {
            let mut queued = self.state();
            queued.unanswered += 1;
            queued.unanswered == 1
        };
        crate::telemetry::message_skipped(&self.server, "unanswered");
        if first {
            tracing::warn!(server = %self.server, waiting = MAX_BACKLOG, "the server is not reading its stdin: its requests go unanswered until the answers waiting for it are written");
        }
    }

    /// The end of a run of unanswered requests: how many.
    fn log_unanswered(&self, unanswered: u64) {
        if unanswered > 0 {
            tracing::warn!(server = %self.server, unanswered, "requests from the server went unanswered while it did not read its stdin");
        }
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
    /// The first sender of a new queue, for the server named `server`.
    pub(super) fn new(server: Arc<str>) -> (LineSender, Arc<Queue>) {
        let queue = Arc::new(Queue {
            state: Mutex::new(Queued {
                senders: 1,
                ..Queued::default()
            }),
            answers: Backlog::default(),
            server,
        });
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
            queued.writer.take()
        };
        if let Some(writer) = writer {
            writer.wake();
        }
        true
    }

    /// Queues the answer to one of the server's requests (newline-terminated), counted until
    /// it is written. False if it is not queued: the writer is gone, or [`MAX_BACKLOG`]
    /// answers wait already (the server is not reading its stdin) and this one is dropped.
    pub fn answer(&self, line: &[u8]) -> bool {
        let (writer, unanswered) = {
            let mut queued = self.0.state();
            if queued.closed {
                return false;
            }
            // Looked at, and counted, under the lock: two answers cannot both take the last
            // room, and the writer cannot uncount one before it is counted.
            if !self.0.answers.has_room() {
                drop(queued);
                self.0.unanswered();
                return false;
            }
            queued.bytes.extend_from_slice(line);
            queued.answers += 1;
            self.0.answers.add(1);
            (queued.writer.take(), std::mem::take(&mut queued.unanswered))
        };
        self.0.log_unanswered(unanswered);
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
) {
    let mut batch = Vec::with_capacity(64 * 1024);
    let mut failure = None;
    loop {
        let (answers, last) = {
            let mut queued = queue.state();
            // The writer's empty buffer becomes the queue's: neither allocates per write.
            std::mem::swap(&mut batch, &mut queued.bytes);
            (std::mem::take(&mut queued.answers), queued.senders == 0)
        };
        if batch.is_empty() {
            if last {
                break;
            }
            queue.ready().await;
            continue;
        }
        if let Err(e) = stdin.write_all(&batch).await {
            failure = Some(e);
            break;
        }
        // Counted until now: while a write blocks, the answers in it still wait.
        queue.answers.remove(answers);
        batch.clear();
        if batch.capacity() > KEEP_CAPACITY {
            batch = Vec::with_capacity(64 * 1024);
        }
    }
    // Closed before the failure is told, so that nothing is taken once it is known. (What was
    // counted stays counted: nothing more is queued.)
    let unanswered = {
        let mut queued = queue.state();
        queued.closed = true;
        std::mem::take(&mut queued.unanswered)
    };
    queue.log_unanswered(unanswered);
    if let Some(e) = failure {
        let _ = failed.send(e);
    }
    // Dropping stdin closes the pipe, which tells the server to exit.
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn writer(
        stdin: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (LineSender, oneshot::Receiver<std::io::Error>, Arc<Queue>) {
        let (sender, queue) = LineSender::new("test".into());
        let (failed_tx, failed) = oneshot::channel();
        tokio::spawn(write_loop(stdin, queue.clone(), failed_tx));
        (sender, failed, queue)
    }

    #[tokio::test]
    async fn lines_go_out_in_order_and_the_last_sender_closes_stdin() {
        let (stdin, mut server) = tokio::io::duplex(16);
        let (sender, _failed, queue) = writer(stdin);
        let other = sender.clone();
        for i in 0..50 {
            let line = format!("line {i}\n");
            let by = if i % 2 == 0 { &sender } else { &other };
            if i % 3 == 0 {
                assert!(by.answer(line.as_bytes()));
            } else {
                assert!(by.send_with(|out| out.extend_from_slice(line.as_bytes())));
            }
        }
        drop(sender);
        drop(other);
        let mut got = String::new();
        server.read_to_string(&mut got).await.unwrap();
        let want: String = (0..50).map(|i| format!("line {i}\n")).collect();
        assert_eq!(got, want, "every line, in order, then end of file");
        assert!(queue.has_room_for_answer(), "the answers were all written");
    }

    /// Issue 22, item 9 (b): the count was set by the writer as it took a batch, so answers
    /// queued while a write blocked went uncounted, without bound. Behind a request the server
    /// does not read, every answer counts until it is written, and past the bound one is
    /// dropped.
    #[tokio::test]
    async fn answers_behind_a_blocked_write_are_counted_and_bounded() {
        let (stdin, mut server) = tokio::io::duplex(1024);
        let (sender, _failed, queue) = writer(stdin);
        // A request larger than the pipe: its write blocks until the server reads.
        let large = vec![b'x'; 64 * 1024];
        assert!(sender.send_with(|out| {
            out.extend_from_slice(&large);
            out.push(b'\n');
        }));
        tokio::task::yield_now().await;
        for _ in 0..MAX_BACKLOG {
            assert!(sender.answer(b"{}\n"));
        }
        assert!(!queue.has_room_for_answer(), "the bound is reached");
        assert!(!sender.answer(b"{}\n"), "and the next answer is dropped");
        // The server reads everything: room again.
        let want = large.len() + 1 + MAX_BACKLOG * 3;
        let mut got = vec![0; want];
        server.read_exact(&mut got).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), queue.answers.room())
            .await
            .expect("the written answers are uncounted");
        assert!(sender.answer(b"{}\n"));
    }

    #[tokio::test]
    async fn after_a_failed_write_nothing_more_is_taken() {
        let (stdin, server) = tokio::io::duplex(16);
        drop(server);
        let (sender, failed, _queue) = writer(stdin);
        assert!(sender.send_with(|out| out.extend_from_slice(b"lost\n")));
        assert!(failed.await.is_ok(), "the failure is reported");
        assert!(!sender.send_with(|out| out.extend_from_slice(b"later\n")));
        assert!(!sender.answer(b"{}\n"));
    }
}
