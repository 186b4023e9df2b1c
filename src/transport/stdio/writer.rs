//! The writer of a server's stdin: what the actor sends is appended to one shared buffer (no
//! allocation or channel message per line), and the writer task writes all of it at once.
//!
//! The answers to the server's requests are counted in the connection's [`Backlog`] as they
//! are queued (under the buffer's lock, with their bytes) and uncounted once the batch that
//! holds them is written: the count is exact whichever path queued them and however long a
//! write blocks, and the reader looks at it to bound what a server that does not read its
//! stdin can make us hold (see [`crate::transport::backlog`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::transport::backlog::Backlog;

/// A write buffer grown past this by one huge message is not kept for the next ones.
const KEEP_CAPACITY: usize = 1 << 20;

/// The lines queued for the writer, shared by every [`LineSender`], the writer task and the
/// reader (which looks at the answers that wait).
#[derive(Debug, Default)]
pub(super) struct Queue {
    state: Mutex<Queued>,
    /// Answers queued or being written, not yet written.
    answers: Backlog,
}

#[derive(Debug, Default)]
struct Queued {
    bytes: Vec<u8>,
    /// Answers among `bytes`: the writer uncounts them once it has written them.
    answers: usize,
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
    /// [`MAX_BACKLOG`](crate::transport::backlog::MAX_BACKLOG) wait to be written.
    pub(super) fn has_room_for_answer(&self) -> bool {
        self.answers.has_room()
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
        self.queue(false, write)
    }

    /// Queues the answer to one of the server's requests (newline-terminated), counted until
    /// it is written; false if the writer is gone.
    pub fn answer(&self, line: &[u8]) -> bool {
        self.queue(true, |buf| buf.extend_from_slice(line))
    }

    fn queue(&self, answer: bool, write: impl FnOnce(&mut Vec<u8>)) -> bool {
        let writer = {
            let mut queued = self.0.state();
            if queued.closed {
                return false;
            }
            write(&mut queued.bytes);
            if answer {
                // Under the lock, with its bytes: the writer cannot uncount it before it is
                // counted.
                queued.answers += 1;
                self.0.answers.add(1);
            }
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
    // counted stays counted: the connection is over, and the reader learns of it.)
    queue.state().closed = true;
    if let Some(e) = failure {
        let _ = failed.send(e);
    }
    // Dropping stdin closes the pipe, which tells the server to exit.
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::transport::backlog::MAX_BACKLOG;

    fn writer(
        stdin: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (LineSender, oneshot::Receiver<std::io::Error>, Arc<Queue>) {
        let (sender, queue) = LineSender::new();
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
    /// queued while a write blocked went uncounted. Behind a request the server does not
    /// read, every answer counts until it is written.
    #[tokio::test]
    async fn answers_queued_behind_a_blocked_write_are_counted_until_written() {
        let (stdin, mut server) = tokio::io::duplex(1024);
        let (sender, _failed, queue) = writer(stdin);
        // A request larger than the pipe: its write blocks until the server reads.
        let large = vec![b'x'; 64 * 1024];
        assert!(sender.send_with(|out| {
            out.extend_from_slice(&large);
            out.push(b'\n');
        }));
        tokio::task::yield_now().await;
        for _ in 0..MAX_BACKLOG - 1 {
            assert!(sender.answer(b"{}\n"));
        }
        assert!(queue.has_room_for_answer());
        assert!(sender.answer(b"{}\n"));
        assert!(!queue.has_room_for_answer(), "the bound is reached");
        // The server reads everything: room again.
        let want = large.len() + 1 + MAX_BACKLOG * 3;
        let mut got = vec![0; want];
        server.read_exact(&mut got).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), queue.answers.room())
            .await
            .expect("the written answers are uncounted");
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
