//! The reader of a server's stdout: lines through the bounded codec, parsed into messages,
//! non-JSON and over-long lines skipped and counted; the end of the connection when stdout
//! closes, or shortly after the server's own process exited.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::StreamExt;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::ChildStdout;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::writer::Backlog;
use super::{ProcessHandle, EXIT_DRAIN_GRACE};
use crate::error::Error;
use crate::protocol::codec::{Line, LineCodec};
use crate::protocol::jsonrpc::{parse_frame_into, Inbound};
use crate::protocol::text::{server_bytes, server_text};
use crate::transport::{SkipCounters, TransportEvent};

/// Turns stdout into [`TransportEvent`]s.
pub(super) struct Reader {
    pub(super) server: Arc<str>,
    pub(super) lines: FramedRead<ChildStdout, LineCodec>,
    pub(super) queued: VecDeque<Inbound>,
    pub(super) write_failed: Option<oneshot::Receiver<std::io::Error>>,
    /// A pid-less handle: reads the exit status and stderr, never signals.
    pub(super) report: ProcessHandle,
    /// The server's process group, killed when the server exited but its stdout stays open.
    pub(super) group: Option<Pid>,
    /// Set when the server's own process exited: stdout is read until then, no longer.
    pub(super) drain_until: Option<Instant>,
    pub(super) skips: Arc<SkipCounters>,
    /// What the writer has yet to write: requests from the server wait for room.
    pub(super) backlog: Arc<Backlog>,
    pub(super) done: bool,
}

impl Reader {
    pub(super) fn into_stream(
        self,
    ) -> futures_util::stream::LocalBoxStream<'static, TransportEvent> {
        futures_util::stream::unfold(self, |mut r| async move {
            let event = r.next_event().await?;
            Some((event, r))
        })
        .boxed_local()
    }

    async fn next_event(&mut self) -> Option<TransportEvent> {
        loop {
            if let Some(msg) = self.queued.pop_front() {
                if matches!(msg, Inbound::Request { .. }) {
                    self.backlog.room().await;
                }
                return Some(TransportEvent::Message(msg));
            }
            if self.done {
                return None;
            }
            let drain_until = self.drain_until;
            let line = tokio::select! {
                line = self.lines.next() => line,
                failed = async { self.write_failed.as_mut()?.await.ok() }, if self.write_failed.is_some() => {
                    self.write_failed = None;
                    match failed {
                        Some(e) => return Some(self.closed(format!("writing to the server's stdin failed: {e}")).await),
                        None => continue,
                    }
                }
                // The server's own process exited (or nothing can tell us any more): stdout
                // gets a short grace to deliver what is still buffered.
                _ = async { drop(self.report.exit.wait_for(Option::is_some).await) }, if drain_until.is_none() => {
                    let now = Instant::now();
                    self.drain_until = Some(now.checked_add(EXIT_DRAIN_GRACE).unwrap_or(now));
                    continue;
                }
                _ = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() => {
                    // Something the server started holds its stdout: it goes with the group.
                    if let Some(group) = self.group {
                        let _ = killpg(group, Signal::SIGKILL);
                    }
                    return Some(
                        self.closed(
                            "the server exited, but a process it started kept its stdout open"
                                .to_string(),
                        )
                        .await,
                    );
                }
            };
            match line {
                Some(Ok(Line::Complete(bytes))) => match parse_frame_into(&bytes, &mut self.queued)
                {
                    Ok(()) => {}
                    Err(e) => {
                        self.skips.non_json.fetch_add(1, Ordering::Relaxed);
                        crate::telemetry::message_skipped(&self.server, "non_json");
                        tracing::warn!(server = %self.server, error = %server_text(&e.to_string()), line = %server_bytes(&bytes), "skipped a line on stdout that is not JSON-RPC");
                    }
                },
                Some(Ok(Line::Oversized { len })) => {
                    self.skips.oversized.fetch_add(1, Ordering::Relaxed);
                    crate::telemetry::message_skipped(&self.server, "oversized");
                    tracing::warn!(server = %self.server, bytes = len, "skipped a line on stdout longer than max_message_bytes");
                }
                Some(Err(e)) => {
                    return Some(
                        self.closed(format!("reading the server's stdout failed: {e}"))
                            .await,
                    )
                }
                None => {
                    return Some(
                        self.closed("the server closed its stdout".to_string())
                            .await,
                    )
                }
            }
        }
    }

    async fn closed(&mut self, message: String) -> TransportEvent {
        self.done = true;
        let (exit_status, stderr_tail) = self.report.exit_report().await;
        TransportEvent::Closed(Error::process_ended(
            &self.server,
            message,
            exit_status,
            stderr_tail,
        ))
    }
}
