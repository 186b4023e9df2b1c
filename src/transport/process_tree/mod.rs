//! The processes a server started that left its process group, found through `/proc`, so that
//! stopping the server reaches them too.
//!
//! The stdio transport stops a server by signalling its process group, which covers what
//! `npx` or `uv` start. A descendant that called `setsid()` or `setpgid()` is in a group of its
//! own and would survive as an orphan. While the server still runs, such a descendant is still
//! in its tree (parent by parent), so before the server is stopped its tree is read from
//! `/proc` and remembered; once the group is gone, whatever of that snapshot still runs is
//! killed. Each process is remembered with its start time, so that a pid the kernel has since
//! given to an unrelated process is never signalled. Reading `/proc` costs about 20 µs a
//! process on the machine this was measured on (2 ms for 100), so it happens off the actor's
//! thread, in one walk shared by the servers stopped at the same time (`walk`); a server that
//! is killed rather than shut down is stopped (SIGSTOP) while its tree is read, so that it
//! cannot exit and orphan its children in the meantime.
//!
//! The parts: `tree` (a process as `/proc` shows it, and a server's strays among all of them),
//! `walk` (the shared walks), and here what is remembered of a server's strays and how they
//! are killed.
//!
//! What this cannot reach: a descendant whose chain of parents to the server was already
//! broken when the snapshot was taken (a daemon that double-forked: its parent exited, and it
//! was re-parented to init or to a subreaper), and one started after the last snapshot. Only
//! a cgroup, or the application setting `PR_SET_CHILD_SUBREAPER` and reaping its own orphans,
//! holds those; a library must not flip a process-wide setting on its own. On systems without
//! `/proc` the snapshot is empty and only the process group is stopped.

mod tree;
mod walk;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use super::ReapGuard;
use tree::{parse_stat, read_proc, Proc, MAX_DESCENDANTS};

/// What of a server's tree its process group does not cover, remembered across snapshots.
#[derive(Debug, Default)]
pub(crate) struct Strays(Vec<Proc>);

impl Strays {
    /// Adds the current strays of the server `leader`, from a walk of `/proc` shared with the
    /// servers stopped at the same time, off the caller's thread. Call it while the leader
    /// still runs (and has not been reaped, so its pid is still its own): once it has exited,
    /// its children belong to someone else.
    pub async fn snapshot(&mut self, leader: Pid) {
        self.add(walk::strays_of(leader).await);
    }

    fn add(&mut self, found: Vec<Proc>) {
        for p in found {
            if self.0.len() < MAX_DESCENDANTS && !self.0.contains(&p) {
                self.0.push(p);
            }
        }
    }

    /// SIGKILLs every remembered process that still runs and is still the same process, and
    /// returns them, to wait for.
    pub fn kill(&mut self) -> Killed {
        let mut killed = Vec::new();
        for p in self.0.drain(..) {
            if read_proc(p.pid).is_some_and(|now| now.start == p.start) {
                // ESRCH (it just exited) is what we want anyway.
                let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
                killed.push(p);
            }
        }
        Killed(killed)
    }
}

/// How long to wait for killed strays to be gone: SIGKILL takes effect in microseconds, but
/// `kill` returns before it has.
const STRAYS_GONE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Strays that were sent SIGKILL: not ours to reap (they were re-parented), so whether they
/// are gone is read from `/proc`.
#[derive(Debug, Default)]
#[must_use = "the processes may still run for a moment: wait for them"]
pub(crate) struct Killed(Vec<Proc>);

impl Killed {
    fn all_gone(&mut self) -> bool {
        self.0.retain(still_runs);
        self.0.is_empty()
    }

    /// Waits (bounded) until every one is gone, without blocking the thread.
    pub async fn wait(mut self) {
        let deadline = tokio::time::Instant::now() + STRAYS_GONE_WAIT;
        while !self.all_gone() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// The same, blocking: for the blocking pool.
    pub fn wait_blocking(mut self) {
        let deadline = std::time::Instant::now() + STRAYS_GONE_WAIT;
        while !self.all_gone() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Whether `p` still runs: its pid is still it (same start time) and it is not a zombie.
fn still_runs(p: &Proc) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", p.pid)) else {
        return false;
    };
    // The state is the first field after the command, which ends at the last ')'.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    let same = parse_stat(p.pid, &stat).is_some_and(|now| now.start == p.start);
    same && !matches!(state, Some('Z' | 'X' | 'x'))
}

/// SIGKILLs a process group when dropped: however a kill that was handed to the blocking pool
/// ends (run, or dropped unrun by a runtime shutting down), the group goes.
struct KillGroup(Pid);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // ESRCH (the group is gone) is the outcome we want anyway.
        let _ = killpg(self.0, Signal::SIGKILL);
    }
}

/// Kills the server `leader`'s group and its strays (those in `known`, and those its tree
/// shows now) without waiting, for a caller that cannot (a `Drop`). `running`: the leader has
/// not been reaped, so its pid is still its own. The leader is stopped first, so that its
/// children stay its children while its tree is read on the blocking pool; then the group and
/// the strays get SIGKILL. Without a runtime, the group alone is killed at once. `done` is
/// dropped when all of that is over.
pub(crate) fn kill_tree_detached(leader: Pid, running: bool, mut known: Strays, done: ReapGuard) {
    let group = KillGroup(leader);
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) if running => handle,
        _ => {
            drop(group);
            // No runtime to wait on, and a `Drop` must not block: signalled is all we can do.
            let _ = known.kill();
            return;
        }
    };
    let _ = kill(leader, Signal::SIGSTOP);
    handle.spawn_blocking(move || {
        known.add(walk::strays_of_blocking(leader));
        drop(group);
        known.kill().wait_blocking();
        drop(done);
    });
}
