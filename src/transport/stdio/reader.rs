//! The reader of a server's stdout: lines through the bounded codec, parsed into messages,
//! non-JSON and over-long lines skipped and counted; the end of the connection when stdout
//! closes, or shortly after the server's own process exited.
//!
//! It never waits for the writer: a server that writes a burst of requests before it reads
//! its stdin again would otherwise block on its stdout while we wait for its stdin. What a
//! server that does not read its stdin can make us hold is bounded where the answers to its
//! requests are queued (`writer`); while that bound is reached, the reader leaves its
//! requests unanswered before they are handed out — their answers would be dropped anyway,
//! and a server that floods us while it reads nothing must not look alive to the liveness
//! check for it.
//!
//! A hand-written [`Stream`] rather than an `async` loop: it runs once per message of every
//! call, and polling stdout first, and what else may end the connection (a failed write, the
//! server's exit, the drain deadline) only when stdout has nothing, makes no future per
//! message and moves no state in and out of one.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_util::{Stream, StreamExt};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::ChildStdout;
use tokio::sync::oneshot::{self, error::TryRecvError};
use tokio::time::Sleep;
use tokio_util::codec::FramedRead;

use super::writer::Queue;
use super::{ProcessHandle, EXIT_DRAIN_GRACE};
use crate::error::Error;
use crate::protocol::codec::{Line, LineCodec};
use crate::protocol::jsonrpc::{parse_line_into, Inbound};
use crate::transport::{SkipCounters, TransportEvent};

/// A future the reader keeps across polls.
type Waiting<T> = Pin<Box<dyn Future<Output = T>>>;

/// What else ends the connection: news of a failed write to stdin, and of the server's exit
/// (either sender dropped unsent: nothing can tell us any more, which counts as the news).
pub(super) struct Ends {
    pub write_failed: oneshot::Receiver<std::io::Error>,
    pub exited: oneshot::Receiver<()>,
}

/// Turns stdout into [`TransportEvent`]s.
pub(super) struct Reader {
    server: Arc<str>,
    lines: FramedRead<ChildStdout, LineCodec>,
    /// Messages parsed and not yet handed out (a batch is several).
    queued: VecDeque<Inbound>,
    write_failed: Option<oneshot::Receiver<std::io::Error>>,
    /// A pid-less handle: reads the exit status and stderr, never signals. Taken by `closing`.
    report: Option<ProcessHandle>,
    /// Until the server's own process exited.
    exited: Option<oneshot::Receiver<()>>,
    /// Once it did: stdout is read until this fires, no longer.
    drain: Option<Pin<Box<Sleep>>>,
    /// The server's process group, killed when the server exited but its stdout stays open.
    group: Option<Pid>,
    skips: Arc<SkipCounters>,
    /// What waits for the server's stdin: its requests go unanswered while their answers
    /// would find no room there.
    stdin: Arc<Queue>,
    /// The connection's end, being reported (with the exit status and stderr tail).
    closing: Option<Waiting<TransportEvent>>,
    done: bool,
}

impl Reader {
    /// A reader of the server's stdout `lines`; `report` is a pid-less handle of the process,
    /// for its exit.
    pub(super) fn new(
        server: Arc<str>,
        lines: FramedRead<ChildStdout, LineCodec>,
        ends: Ends,
        report: ProcessHandle,
        group: Option<Pid>,
        skips: Arc<SkipCounters>,
        stdin: Arc<Queue>,
    ) -> Self {
        Reader {
            server,
            lines,
            queued: VecDeque::new(),
            write_failed: Some(ends.write_failed),
            report: Some(report),
            exited: Some(ends.exited),
            drain: None,
            group,
            skips,
            stdin,
            closing: None,
            done: false,
        }
    }

    /// The reader as the connection's stream of events.
    pub(super) fn into_stream(
        self,
    ) -> futures_util::stream::LocalBoxStream<'static, TransportEvent> {
        self.boxed_local()
    }

    /// The next parsed message to hand out, leaving the server's requests unanswered while
    /// their answers would find no room.
    fn next_queued(&mut self) -> Option<Inbound> {
        loop {
            let message = self.queued.pop_front()?;
            if !matches!(message, Inbound::Request { .. }) || self.stdin.has_room_for_answer() {
                return Some(message);
            }
            self.stdin.unanswered();
        }
    }

    fn on_line(&mut self, line: Line) {
        match line {
            Line::Complete(bytes) => {
                if let Err(e) = parse_line_into(&bytes, &mut self.queued) {
                    self.skips.skipped_line(&self.server, &e, &bytes);
                }
            }
            Line::Oversized { len } => {
                self.skips.oversized.fetch_add(1, Ordering::Relaxed);
                crate::telemetry::message_skipped(&self.server, "oversized");
                tracing::warn!(server = %self.server, bytes = len, "skipped a line on stdout longer than max_message_bytes");
            }
        }
    }

    /// The connection is over, for `message`: its `Closed` event follows, with the exit status
    /// and stderr tail once they are in (or a short wait for them has passed).
    fn close(&mut self, message: String) {
        let server = self.server.clone();
        let report = self.report.take();
        self.closing = Some(Box::pin(async move {
            let (exit_status, stderr_tail) = match report {
                Some(mut report) => report.exit_report().await,
                None => (None, Vec::new()),
            };
            TransportEvent::Closed(Error::process_ended(
                &server,
                message,
                exit_status,
                stderr_tail,
            ))
        }));
    }

    /// What else may end the connection, looked at after every line without waiting for it:
    /// a stdout that never runs dry (a flood from a process the server left behind) must not
    /// keep the drain from ending, nor a failed write from being seen.
    fn ends_now(&mut self) {
        if let Some(failed) = self.write_failed.as_mut() {
            match failed.try_recv() {
                Ok(e) => {
                    self.write_failed = None;
                    return self.close(format!("writing to the server's stdin failed: {e}"));
                }
                Err(TryRecvError::Closed) => self.write_failed = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        if let Some(exited) = self.exited.as_mut() {
            if !matches!(exited.try_recv(), Err(TryRecvError::Empty)) {
                self.exited = None;
                self.drain = Some(Box::pin(tokio::time::sleep(EXIT_DRAIN_GRACE)));
            }
        }
        let drained = self
            .drain
            .as_ref()
            .is_some_and(|drain| drain.deadline() <= tokio::time::Instant::now());
        if drained {
            self.drain_over();
        }
    }

    /// The drain after the server's exit is over: stdout is not read any longer.
    fn drain_over(&mut self) {
        self.drain = None;
        // Something the server started holds its stdout: it goes with the group.
        if let Some(group) = self.group {
            let _ = killpg(group, Signal::SIGKILL);
        }
        self.close("the server exited, but a process it started kept its stdout open".into());
    }

    /// [`Reader::ends_now`], waiting: looked at when stdout has nothing to give, so that the
    /// reader is woken by them. True if something changed and the reader must look again.
    fn poll_ends(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(failed) = self.write_failed.as_mut() {
            if let Poll::Ready(failed) = Pin::new(failed).poll(cx) {
                self.write_failed = None;
                if let Ok(e) = failed {
                    self.close(format!("writing to the server's stdin failed: {e}"));
                }
                return true;
            }
        }
        if let Some(exited) = self.exited.as_mut() {
            if Pin::new(exited).poll(cx).is_ready() {
                // The server's own process exited: stdout gets a short grace to deliver what
                // is still buffered.
                self.exited = None;
                self.drain = Some(Box::pin(tokio::time::sleep(EXIT_DRAIN_GRACE)));
                return true;
            }
        }
        if let Some(drain) = self.drain.as_mut() {
            if drain.as_mut().poll(cx).is_ready() {
                self.drain_over();
                return true;
            }
        }
        false
    }
}

impl Stream for Reader {
    type Item = TransportEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TransportEvent>> {
        let this = self.get_mut();
        loop {
            // What was read before the end is handed out before the end is.
            if let Some(message) = this.next_queued() {
                return Poll::Ready(Some(TransportEvent::Message(message)));
            }
            if let Some(closing) = this.closing.as_mut() {
                let event = ready!(closing.as_mut().poll(cx));
                this.closing = None;
                this.done = true;
                return Poll::Ready(Some(event));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.lines.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(line))) => {
                    this.on_line(line);
                    this.ends_now();
                }
                Poll::Ready(Some(Err(e))) => {
                    this.close(format!("reading the server's stdout failed: {e}"))
                }
                Poll::Ready(None) => this.close("the server closed its stdout".into()),
                Poll::Pending if this.poll_ends(cx) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
