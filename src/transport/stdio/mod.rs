//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! - The child runs in a process group of its own, so that stopping it stops what it started
//!   too (servers launched through `npx` or `uv` leave grandchildren otherwise).
//! - It gets a safe environment unless the config says to inherit everything.
//! - stdout is split by [`LineCodec`] with the configured maximum size; a non-JSON or
//!   over-long line is logged, counted and skipped, never fatal.
//! - stderr goes to `tracing` (target `mcp_supervisor::stderr`), and its last lines are kept to
//!   be attached, with the exit status, to the error that reports the process's end. Both are
//!   server text: escaped and bounded ([`server_bytes`]) before they are logged or kept.
//! - Writes are batched: the writer task writes everything that is queued in one go.
//! - Reading stdout never waits for stdin. The answers to the server's requests that wait for
//!   its stdin are bounded: past the bound they are dropped, and its requests go unanswered.
//! - The connection ends when stdout closes, or [`EXIT_DRAIN_GRACE`] after the server's own
//!   process exited, whichever comes first: a process it started may hold its stdout open.
//! - Shutdown: close stdin, wait, SIGTERM, wait, SIGKILL — to the whole group; then SIGKILL
//!   to the descendants that had left the group ([`Strays`]). Dropping the handle kills both
//!   at once, so no path leaves an orphan that can be found (see `process_tree` for the rest).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio::sync::{oneshot, watch};
use tokio_util::codec::FramedRead;

mod reader;
mod writer;

use reader::{Ends, Reader};
use writer::write_loop;
pub(crate) use writer::LineSender;

use super::process_tree::{kill_tree_detached, Strays};
use super::{Connection, Outbound, Reaping, SkipCounters};
use crate::config::{Settings, StdioConfig, SAFE_ENV_VARS};
use crate::error::Error;
use crate::protocol::codec::{Line, LineCodec};
use crate::protocol::text::server_bytes;

/// Longest stderr line we keep; a server that writes megabytes to stderr gets them cut.
const MAX_STDERR_LINE: usize = 64 * 1024;
/// How long to wait for the exit status and the last stderr lines once stdout has closed.
const EXIT_REPORT_WAIT: Duration = Duration::from_millis(500);
/// How long stdout is still read after the server's own process exited: what it wrote before
/// it died is delivered, and then the connection ends even if a process it started keeps
/// stdout open (which would otherwise leave a dead server looking `Ready`).
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(200);

/// What a process wrote to stderr, as far as it is kept to explain a failure: its first lines
/// (what it said as it started: a missing setting, a version) and its last ones (its last words),
/// with a line saying how many in between were not kept.
///
/// What a server writes in answer to our own probe (a `server/discover` an older server does not
/// know, which some answer with pages of validation errors) explains nothing about why it fails
/// later, and would push out what does: while a probe runs, lines past the first ones are held
/// aside ([`StderrTail::hold`]), and then kept or replaced by one line that says how many were
/// left out ([`StderrTail::release`]). Every line is logged as it comes either way.
#[derive(Debug, Clone)]
pub(crate) struct StderrTail(Arc<Mutex<Tail>>);

#[derive(Debug)]
struct Tail {
    /// Lines kept in all (`stderr_tail_lines`).
    keep: usize,
    /// The first lines, up to a quarter of `keep`.
    head: Vec<String>,
    /// The last lines, up to the rest of `keep`.
    last: VecDeque<String>,
    /// Lines between the two that were not kept.
    skipped: usize,
    /// Lines written while a probe runs (the last of them), and how many there were.
    held: Option<(VecDeque<String>, usize)>,
}

impl StderrTail {
    /// A tail that keeps `keep` lines.
    fn new(keep: usize) -> Self {
        StderrTail(Arc::new(Mutex::new(Tail {
            keep,
            head: Vec::new(),
            last: VecDeque::new(),
            skipped: 0,
            held: None,
        })))
    }

    fn tail(&self) -> std::sync::MutexGuard<'_, Tail> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, line: String) {
        let mut tail = self.tail();
        if tail.head.len() < tail.keep / 4 {
            tail.head.push(line);
            return;
        }
        let room = tail.keep - tail.keep / 4;
        match &mut tail.held {
            Some((held, count)) => {
                *count += 1;
                if held.len() >= room {
                    held.pop_front();
                }
                if room > 0 {
                    held.push_back(line);
                }
            }
            None => tail.push_last(line),
        }
    }

    /// From now on (past the first lines), lines are held aside until [`StderrTail::release`].
    pub fn hold(&self) {
        self.tail().held.get_or_insert_with(Default::default);
    }

    /// Ends a [`StderrTail::hold`]: the held lines join the tail (`keep`), or are replaced by
    /// one line saying how many were left out (they answered our probe, not a failure).
    pub fn release(&self, keep: bool) {
        let mut tail = self.tail();
        let Some((held, count)) = tail.held.take() else {
            return;
        };
        if keep {
            tail.skipped += count - held.len();
            for line in held {
                tail.push_last(line);
            }
        } else if count > 0 {
            tail.push_last(format!(
                "[{count} stderr lines written in answer to our server/discover probe left out; they are in the log]"
            ));
        }
    }

    /// The kept lines, in order.
    pub fn lines(&self) -> Vec<String> {
        let tail = self.tail();
        let mut lines = tail.head.clone();
        if tail.skipped > 0 {
            lines.push(format!("[{} stderr lines not kept]", tail.skipped));
        }
        lines.extend(tail.last.iter().cloned());
        // Lines still held (the server died during the probe) are part of the story.
        lines.extend(tail.held.iter().flat_map(|(held, _)| held.iter().cloned()));
        lines
    }
}

impl Tail {
    fn push_last(&mut self, line: String) {
        let room = self.keep - self.keep / 4;
        if room == 0 {
            self.skipped += 1;
            return;
        }
        if self.last.len() >= room {
            self.last.pop_front();
            self.skipped += 1;
        }
        self.last.push_back(line);
    }
}

/// Controls a running child process and its process group.
pub(crate) struct ProcessHandle {
    /// The server's name, for the log lines of its shutdown.
    server: Arc<str>,
    pid: Option<Pid>,
    /// `Some(description)` once the child has exited and been reaped.
    exit: watch::Receiver<Option<String>>,
    stderr: StderrTail,
    stderr_done: watch::Receiver<bool>,
    /// Holds the server's stdin open (with the actor's sender) until [`Self::shutdown`] has
    /// looked at the server's tree: once stdin closes the server may exit at once, and its
    /// children stop being its children.
    stdin: Option<LineSender>,
    /// Descendants that left the process group, seen while the server ran.
    strays: Strays,
    /// The actor's count of processes not gone yet: a kill in the background holds it.
    reaping: Reaping,
    /// A second handle on the server's stdin pipe while the opening runs, to ask how much of
    /// what we wrote it has not read yet ([`ProcessHandle::stdin_unread`]). Dropped when the
    /// opening ends: it would keep stdin open.
    stdin_probe: Option<std::os::fd::OwnedFd>,
}

impl ProcessHandle {
    /// Holds the server's stderr lines aside while a probe of ours runs (see [`StderrTail`]).
    pub fn hold_stderr(&self) {
        self.stderr.hold();
    }

    /// The opening is over: the held stderr lines join the tail (`keep`) or are left out, and
    /// the second handle on stdin is let go.
    pub fn opening_done(&mut self, keep: bool) {
        self.stderr.release(keep);
        self.stdin_probe = None;
    }

    /// Bytes we wrote to the server's stdin that it has not read yet (during the opening).
    pub fn stdin_unread(&self) -> Option<u64> {
        let fd = self.stdin_probe.as_ref()?;
        rustix::io::ioctl_fionread(fd).ok()
    }

    /// The child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid.map(|p| p.as_raw() as u32)
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pid) = self.pid {
            // ESRCH (the group is gone) is the outcome we want anyway.
            let _ = killpg(pid, signal);
        }
    }

    async fn wait_exit(&mut self, limit: Duration) -> bool {
        let exited = tokio::time::timeout(limit, self.exit.wait_for(Option::is_some)).await;
        matches!(exited, Ok(Ok(_)))
    }

    /// Whether the child has not been reaped yet, so that its pid is still its own.
    fn running(&self) -> bool {
        self.exit.borrow().is_none()
    }

    /// Remembers the descendants that left the group, while the server still runs.
    async fn snapshot_strays(&mut self) {
        if let (Some(pid), true) = (self.pid, self.running()) {
            self.strays.snapshot(pid).await;
        }
    }

    /// Kills the whole group, and what of the server's tree left it, at once: for connections
    /// that are already broken or hung. Returns once the child is reaped.
    pub async fn kill(mut self) {
        let Some(pid) = self.pid else { return };
        if self.running() {
            // Stopped, it cannot exit: its children stay its children while its tree is read.
            let _ = kill(pid, Signal::SIGSTOP);
            self.strays.snapshot(pid).await;
        }
        self.signal_group(Signal::SIGKILL);
        self.strays.kill().wait().await;
        self.wait_exit(Duration::from_secs(5)).await;
        self.pid = None;
    }

    /// Stops the process politely, escalating: close stdin (the caller has dropped its
    /// sender), wait `grace`, SIGTERM the group, wait `grace`, SIGKILL the group; then SIGKILL
    /// what of the server's tree had left the group. Returns once the child is reaped.
    pub async fn shutdown(mut self, grace: Duration) {
        self.snapshot_strays().await;
        self.stdin = None;
        if !self.wait_exit(grace).await {
            tracing::debug!(server = %self.server, pid = self.pid(), "server did not exit after stdin closed; SIGTERM");
            self.snapshot_strays().await;
            self.signal_group(Signal::SIGTERM);
            if !self.wait_exit(grace).await {
                tracing::warn!(server = %self.server, pid = self.pid(), "server ignored SIGTERM; SIGKILL");
                self.snapshot_strays().await;
                self.signal_group(Signal::SIGKILL);
                self.wait_exit(Duration::from_secs(5)).await;
            }
        }
        // The leader is gone; whatever it started goes too, in its group or not.
        self.signal_group(Signal::SIGKILL);
        self.strays.kill().wait().await;
        self.pid = None;
    }

    /// The exit status and stderr tail, waiting a little for both to arrive.
    async fn exit_report(&mut self) -> (Option<String>, Vec<String>) {
        self.wait_exit(EXIT_REPORT_WAIT).await;
        let _ = tokio::time::timeout(EXIT_REPORT_WAIT, self.stderr_done.wait_for(|d| *d)).await;
        let status = self.exit.borrow().clone();
        (status, self.stderr.lines())
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        // The task that waits on the child reaps it; if the runtime is shutting down with us,
        // tokio's orphan queue does. Never block the actor's thread here: the tree is read on
        // the blocking pool.
        if let Some(pid) = self.pid {
            let strays = std::mem::take(&mut self.strays);
            kill_tree_detached(pid, self.running(), strays, self.reaping.track());
        }
    }
}

fn describe_exit(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("killed by signal {sig} ({})", s.as_str()),
            Err(_) => format!("killed by signal {sig}"),
        },
        _ => "exited".to_string(),
    }
}

/// What a failed spawn means. A program that is missing or may not be run, or a working
/// directory that is missing or cannot be entered, fails the same way every time: that is
/// [`Error::Spawn`], which is not retried, naming the setting to fix. Anything else (out of
/// memory, of processes, of file descriptors) may pass, and is a connection error.
fn spawn_error(server: &str, config: &StdioConfig, e: std::io::Error) -> Error {
    use nix::errno::Errno;
    let permanent = e.raw_os_error().map(Errno::from_raw).is_some_and(|errno| {
        matches!(
            errno,
            Errno::ENOENT
                | Errno::EACCES
                | Errno::EPERM
                | Errno::ENOTDIR
                | Errno::ENOEXEC
                | Errno::ELOOP
                | Errno::ENAMETOOLONG
        )
    });
    if !permanent {
        return Error::connection(server, format!("cannot start `{}`: {e}", config.command));
    }
    // The error does not say whether the program or the directory is at fault: check the
    // directory, which is the cheaper question.
    let bad_dir = config.cwd.as_ref().filter(|dir| {
        !dir.is_dir() || nix::unistd::access(dir.as_path(), nix::unistd::AccessFlags::X_OK).is_err()
    });
    Error::Spawn {
        server: server.to_owned(),
        command: config.command.clone(),
        cwd: bad_dir.map(|dir| dir.display().to_string()),
        field: if bad_dir.is_some() { "cwd" } else { "command" }.to_owned(),
        message: match bad_dir {
            Some(_) => format!("the working directory is missing or cannot be entered ({e})"),
            // A script whose `#!` interpreter is missing fails with ENOENT too.
            None if e.kind() == std::io::ErrorKind::NotFound
                && config.command.contains('/')
                && std::path::Path::new(&config.command).is_file() =>
            {
                format!("{e}: the file exists, so its `#!` interpreter is probably missing")
            }
            None => e.to_string(),
        },
    }
}

/// Starts the child and wires up its pipes.
pub(crate) fn spawn(
    server: &Arc<str>,
    config: &StdioConfig,
    settings: &Settings,
    skips: Arc<SkipCounters>,
    reaping: &Reaping,
) -> Result<Connection, Error> {
    let mut cmd = Command::new(&config.command);
    cmd.args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if !config.inherit_env {
        cmd.env_clear();
        for key in SAFE_ENV_VARS {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
    }
    cmd.envs(&config.env);
    if let Some(dir) = &config.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(server, config, e))?;
    let pid = child.id().map(|p| Pid::from_raw(p as i32));
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::connection(server, "child process has no pipes"));
    };
    tracing::debug!(server = %server, pid = child.id(), command = %config.command, "spawned server process");

    let (exit_tx, exit) = watch::channel(None);
    let (exited_tx, exited) = oneshot::channel();
    let reaped = reaping.track();
    tokio::spawn(async move {
        let _reaped = reaped;
        let status = match child.wait().await {
            Ok(status) => describe_exit(&status),
            Err(e) => format!("exit status unknown: {e}"),
        };
        let _ = exit_tx.send(Some(status));
        let _ = exited_tx.send(());
    });

    let stderr_tail = StderrTail::new(settings.stderr_tail_lines);
    let (stderr_done_tx, stderr_done) = watch::channel(false);
    {
        let server = server.clone();
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(stderr, LineCodec::new(MAX_STDERR_LINE));
            while let Some(Ok(line)) = lines.next().await {
                // Server text: escaped and bounded before it is logged or kept.
                let text = match line {
                    Line::Complete(bytes) => server_bytes(&bytes),
                    Line::Oversized { len } => format!("[{len} bytes of stderr dropped]"),
                };
                tracing::info!(target: "mcp_supervisor::stderr", server = %server, "{text}");
                tail.push(text);
            }
            let _ = stderr_done_tx.send(true);
        });
    }

    // A failed dup only costs the probe its view of the pipe (it then waits as for HTTP).
    let stdin_probe = {
        use std::os::fd::AsFd;
        stdin.as_fd().try_clone_to_owned().ok()
    };
    let (out_tx, queue) = LineSender::new(server.clone());
    let (write_failed_tx, write_failed) = oneshot::channel();
    tokio::spawn(write_loop(stdin, queue.clone(), write_failed_tx));

    let process = ProcessHandle {
        server: server.clone(),
        pid,
        exit: exit.clone(),
        stderr: stderr_tail.clone(),
        stderr_done: stderr_done.clone(),
        stdin: Some(out_tx.clone()),
        strays: Strays::default(),
        reaping: reaping.clone(),
        stdin_probe,
    };
    let report = ProcessHandle {
        server: server.clone(),
        pid: None,
        exit,
        stderr: stderr_tail,
        stderr_done,
        stdin: None,
        strays: Strays::default(),
        reaping: Reaping::default(),
        stdin_probe: None,
    };
    let reader = Reader::new(
        server.clone(),
        FramedRead::new(stdout, LineCodec::new(settings.max_message_bytes)),
        Ends {
            write_failed,
            exited,
        },
        report,
        pid,
        skips,
        queue,
    );
    Ok(Connection {
        outbound: Outbound::lines(out_tx),
        events: reader.into_stream(),
        closer: super::Closer::Process(process),
    })
}

#[cfg(test)]
mod tests {
    use super::StderrTail;

    fn push(tail: &StderrTail, from: usize, to: usize, what: &str) {
        for i in from..=to {
            tail.push(format!("{what} {i}"));
        }
    }

    #[test]
    fn the_tail_keeps_the_first_lines_and_the_last_and_counts_the_rest() {
        let tail = StderrTail::new(8); // 2 first, 6 last
        push(&tail, 1, 20, "line");
        assert_eq!(
            tail.lines(),
            [
                "line 1",
                "line 2",
                "[12 stderr lines not kept]",
                "line 15",
                "line 16",
                "line 17",
                "line 18",
                "line 19",
                "line 20"
            ]
        );
    }

    #[test]
    fn what_answers_a_probe_is_left_out_or_kept_as_the_opening_ends() {
        let tail = StderrTail::new(8);
        push(&tail, 1, 3, "start");
        tail.hold();
        push(&tail, 1, 94, "noise");
        tail.release(false);
        push(&tail, 1, 1, "last words");
        assert_eq!(
            tail.lines(),
            [
                "start 1",
                "start 2",
                "start 3",
                "[94 stderr lines written in answer to our server/discover probe left out; they are in the log]",
                "last words 1"
            ]
        );

        // A modern answer (or a failed opening): the lines stay, bounded like any others.
        let tail = StderrTail::new(8);
        push(&tail, 1, 2, "start");
        tail.hold();
        push(&tail, 1, 10, "said");
        assert!(
            tail.lines().contains(&"said 10".to_owned()),
            "held lines show while held"
        );
        tail.release(true);
        let lines = tail.lines();
        assert_eq!(lines[2], "[4 stderr lines not kept]");
        assert_eq!(lines.last().map(String::as_str), Some("said 10"));
        assert_eq!(lines.len(), 9);
    }
}
