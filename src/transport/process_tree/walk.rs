//! One walk of `/proc` for every server whose tree is asked for at once.
//!
//! Reading a server's strays means reading every process's `stat` (about 20 µs each: 4 ms on
//! a machine running 200 processes), whoever asks. Stopping 100 servers at once used to walk
//! `/proc` 100 times over — 150 ms where stopping them otherwise takes 15. So the walks are
//! shared: whoever asks joins the list of the next walk; one thread, started when the first
//! asks, takes the whole list, walks once, answers everyone on it from that one reading, and
//! looks again. A snapshot is always taken by a walk that started after it was asked for (what
//! it must see is the tree once the server is about to be stopped), so stopping 100 servers at
//! once costs two walks: one for the first, one for the 99 that asked during it.
//!
//! The thread is ours, not the runtime's blocking pool: it serves every runtime of the process
//! (each `actix::System` has its own), and must not die with the one that happened to start
//! it. It ends when nobody waits. Should it not start, or panic, the callers walk on their own.

use std::sync::{Mutex, MutexGuard};

use nix::unistd::Pid;
use tokio::sync::oneshot;

use super::tree::{all_processes, Proc, Tree};

/// Servers whose strays are wanted from the next walk, and where each answer goes.
struct Asked {
    servers: Vec<(Pid, oneshot::Sender<Vec<Proc>>)>,
    /// The walking thread runs: it takes `servers` before each walk, and ends (clearing this
    /// under the same lock) only when it finds none.
    walking: bool,
}

static ASKED: Mutex<Asked> = Mutex::new(Asked {
    servers: Vec::new(),
    walking: false,
});

fn asked() -> MutexGuard<'static, Asked> {
    // Nothing panics while holding it; should something, the list is still a list.
    ASKED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The strays of the server `leader` (also its group's id), from a walk that starts after
/// this call. Call it while the leader runs and has not been reaped.
pub(super) async fn strays_of(leader: Pid) -> Vec<Proc> {
    if let Some(answer) = ask(leader) {
        // An error: the walking thread panicked. Walk alone then.
        if let Ok(strays) = answer.await {
            return strays;
        }
    }
    tokio::task::spawn_blocking(move || walk_alone(leader))
        .await
        .unwrap_or_default()
}

/// [`strays_of`], for a thread that may block (the blocking pool).
pub(super) fn strays_of_blocking(leader: Pid) -> Vec<Proc> {
    ask(leader)
        .and_then(|answer| answer.blocking_recv().ok())
        .unwrap_or_else(|| walk_alone(leader))
}

/// Puts `leader` on the next walk's list, starting the walking thread if none runs; `None` if
/// it cannot start.
fn ask(leader: Pid) -> Option<oneshot::Receiver<Vec<Proc>>> {
    let (answer, answered) = oneshot::channel();
    let start = {
        let mut asked = asked();
        asked.servers.push((leader, answer));
        !std::mem::replace(&mut asked.walking, true)
    };
    if start {
        let started = std::thread::Builder::new()
            .name("mcp-proc-walk".into())
            .spawn(walk_while_asked);
        if let Err(e) = started {
            tracing::debug!(error = %e, "cannot start the /proc walking thread; walking alone");
            // Whoever asked meanwhile finds its answer dropped, and walks alone too.
            let mut asked = asked();
            asked.walking = false;
            asked.servers.clear();
            return None;
        }
    }
    Some(answered)
}

/// The walking thread: walks for everyone asked, until nobody is.
fn walk_while_asked() {
    let _panicked = OnPanic;
    loop {
        let servers = {
            let mut asked = asked();
            if asked.servers.is_empty() {
                asked.walking = false;
                return;
            }
            std::mem::take(&mut asked.servers)
        };
        #[cfg(test)]
        tests::WALKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tree = Tree::of(all_processes());
        for (leader, answer) in servers {
            let raw = leader.as_raw();
            // Whoever asked may have stopped waiting: nothing to do then.
            let _ = answer.send(tree.strays(raw, raw));
        }
    }
}

/// Should the walking thread panic, the next to ask starts another, and those waiting walk
/// alone (their answers are dropped).
struct OnPanic;

impl Drop for OnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut asked = asked();
            asked.walking = false;
            asked.servers.clear();
        }
    }
}

/// One walk for one server, on the caller's thread.
fn walk_alone(leader: Pid) -> Vec<Proc> {
    let raw = leader.as_raw();
    Tree::of(all_processes()).strays(raw, raw)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    use super::*;

    /// Walks of the walking thread so far.
    pub(super) static WALKS: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);

    /// Many servers asked for at once: each gets its own strays, from shared walks.
    #[tokio::test]
    async fn servers_asked_for_at_once_each_get_their_own_strays() {
        // A leader of its own group with one child that left it: `setsid` in a shell.
        let mut leaders = Vec::new();
        for _ in 0..8 {
            let child = Command::new("sh")
                .args(["-c", "setsid sleep 30 & wait"])
                .stdin(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("sh runs");
            leaders.push(child);
        }
        let pids: Vec<Pid> = leaders
            .iter()
            .map(|c| Pid::from_raw(c.id() as i32))
            .collect();
        // The shells start their `sleep` in their own time: ask until each has one.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let found = loop {
            let found =
                futures_util::future::join_all(pids.iter().map(|pid| strays_of(*pid))).await;
            if found.iter().all(|strays| strays.len() == 1) || std::time::Instant::now() > deadline
            {
                break found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        for (pid, strays) in pids.iter().zip(&found) {
            assert_eq!(strays.len(), 1, "the setsid child of {pid}: {strays:?}");
            assert_eq!(strays[0].ppid, pid.as_raw(), "its own child, no other's");
        }
        // 32 asked at once: a handful of walks between them (one for the first, one for those
        // who asked during it), not one each.
        let asked: Vec<Pid> = pids.iter().cycle().take(32).copied().collect();
        let walks = WALKS.load(std::sync::atomic::Ordering::Relaxed);
        let again = futures_util::future::join_all(asked.iter().map(|pid| strays_of(*pid))).await;
        let walks = WALKS.load(std::sync::atomic::Ordering::Relaxed) - walks;
        assert!(
            walks <= 8,
            "{walks} walks of /proc for 32 servers asked for at once"
        );
        assert_eq!(
            again[..8],
            found[..],
            "the same strays from the shared walks"
        );
        let first = pids[0];
        let blocking = tokio::task::spawn_blocking(move || strays_of_blocking(first));
        assert_eq!(
            blocking.await.unwrap(),
            found[0],
            "the blocking way sees the same"
        );
        for (mut leader, strays) in leaders.into_iter().zip(found) {
            for stray in strays {
                let _ = nix::sys::signal::kill(Pid::from_raw(stray.pid), nix::sys::signal::SIGKILL);
            }
            let _ = leader.kill();
            let _ = leader.wait();
        }
    }
}
