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
//! process on the machine this was measured on (2 ms for 100), so it happens on tokio's
//! blocking pool, never on the actor's thread; a server that is killed rather than shut down is
//! stopped (SIGSTOP) while its tree is read, so that it cannot exit and orphan its children in
//! the meantime.
//!
//! What this cannot reach: a descendant whose chain of parents to the server was already
//! broken when the snapshot was taken (a daemon that double-forked: its parent exited, and it
//! was re-parented to init or to a subreaper), and one started after the last snapshot. Only
//! a cgroup, or the application setting `PR_SET_CHILD_SUBREAPER` and reaping its own orphans,
//! holds those; a library must not flip a process-wide setting on its own. On systems without
//! `/proc` the snapshot is empty and only the process group is stopped.

use std::collections::{HashMap, HashSet};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use super::ReapGuard;

/// The most descendants remembered: a fork bomb cannot make a snapshot unbounded.
const MAX_DESCENDANTS: usize = 4096;

/// A process, as `/proc` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Start time in clock ticks since boot: with the pid, it names one process for good.
    pub start: u64,
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may itself contain
/// spaces and parentheses, so the fields are read after the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) ... starttime(19).
    Some(Proc {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

/// Every process on the system (empty without `/proc`).
fn all_processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// The descendants of `root` among `processes` that are not in the process group `group`
/// (those the group's signals miss), nearest first, at most [`MAX_DESCENDANTS`].
fn strays_among(processes: &[Proc], root: i32, group: i32) -> Vec<Proc> {
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in processes {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut seen = HashSet::from([root]);
    let mut queue = std::collections::VecDeque::from([root]);
    let mut strays = Vec::new();
    while let Some(parent) = queue.pop_front() {
        for child in children.get(&parent).into_iter().flatten() {
            if seen.len() > MAX_DESCENDANTS || !seen.insert(child.pid) {
                continue;
            }
            if child.pgrp != group {
                strays.push(**child);
            }
            queue.push_back(child.pid);
        }
    }
    strays
}

/// The strays of the server `leader` (also its group's id) now. Reads all of `/proc`, about
/// 20 µs a process: call it off the actor's thread ([`Strays::snapshot`]).
fn strays_of(leader: Pid) -> Vec<Proc> {
    strays_among(&all_processes(), leader.as_raw(), leader.as_raw())
}

/// What of a server's tree its process group does not cover, remembered across snapshots.
#[derive(Debug, Default)]
pub(crate) struct Strays(Vec<Proc>);

impl Strays {
    /// Adds the current strays of the server `leader`, read on the blocking pool. Call it
    /// while the leader still runs (and has not been reaped, so its pid is still its own):
    /// once it has exited, its children belong to someone else.
    pub async fn snapshot(&mut self, leader: Pid) {
        let found = tokio::task::spawn_blocking(move || strays_of(leader)).await;
        self.add(found.unwrap_or_default());
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
        known.add(strays_of(leader));
        drop(group);
        known.kill().wait_blocking();
        drop(done);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgrp: i32) -> Proc {
        Proc {
            pid,
            ppid,
            pgrp,
            start: pid as u64 * 10,
        }
    }

    #[test]
    fn parses_stat_lines_with_awkward_names() {
        let stat = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 92 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(
            parse_stat(4242, stat),
            Some(Proc {
                pid: 4242,
                ppid: 17,
                pgrp: 4242,
                start: 987654
            })
        );
        assert_eq!(parse_stat(1, "1 (init"), None);
        assert_eq!(parse_stat(1, "1 (x) S 0"), None);
    }

    #[test]
    fn finds_descendants_that_left_the_group_at_any_depth() {
        // 100 leads group 100. 101 stays in it; 102 left (setsid); 103, a child of 102, is in
        // 102's group; 104, a grandchild through 101, left too. 200 is unrelated.
        let all = [
            p(100, 1, 100),
            p(101, 100, 100),
            p(102, 100, 102),
            p(103, 102, 102),
            p(104, 101, 104),
            p(200, 1, 200),
            p(201, 200, 201),
        ];
        let strays: Vec<i32> = strays_among(&all, 100, 100).iter().map(|p| p.pid).collect();
        assert_eq!(
            strays,
            [102, 104, 103],
            "breadth first: children, then grandchildren"
        );
        assert!(strays_among(&all, 999, 999).is_empty());
    }

    #[test]
    fn a_cycle_in_a_bad_snapshot_ends() {
        let all = [p(100, 101, 100), p(101, 100, 7)];
        assert_eq!(strays_among(&all, 100, 100).len(), 1);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_is_found_among_all() {
        let me = std::process::id() as i32;
        let all = all_processes();
        assert!(all.iter().any(|p| p.pid == me), "/proc lists this process");
    }
}
