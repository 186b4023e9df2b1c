//! The fault switches: every misbehaviour that an environment variable turns on.
//!
//! Kept in one room so that a reader sees at once everything the server can be told to do
//! wrong, and where in its life each fault strikes: at start-up (`at_start_up`), before a
//! `tools/call` is run (`crash_if_asked`), around every response (`write_garbage_lines`) and
//! after `initialize` (`write_long_line_if_asked`), on the first modern requests
//! (`reject_first_modern`), and on a `server/discover` probe (`probe_noise`). The tools that misbehave on request
//! (`counter {crash: true}`, `hang`, `long_line`, `garbage`) are tools, and live in `tools`.

use std::io::{self, Write};
use std::path::Path;
use std::process::{self, Command, Stdio};
use std::thread;
use std::time::Duration;

use super::config::{env_flag, env_path, env_u64};
use super::persist::{append_event, bump_count_file};
use super::server::Server;
use super::{lock, stderr_line};

/// The fault switches that act while serving, read once at start-up.
pub(crate) struct Faults {
    crash_after_calls: Option<u64>,
    garbage_lines: u64,
    long_line_bytes: Option<u64>,
    reject_first_modern: u64,
    probe_noise: u64,
}

impl Faults {
    pub(crate) fn from_env() -> Self {
        Faults {
            crash_after_calls: env_u64("DEMO_CRASH_AFTER_CALLS"),
            garbage_lines: env_u64("DEMO_GARBAGE_LINES").unwrap_or(0),
            long_line_bytes: env_u64("DEMO_LONG_LINE_BYTES"),
            reject_first_modern: env_u64("DEMO_REJECT_FIRST_MODERN").unwrap_or(0),
            probe_noise: env_u64("DEMO_PROBE_NOISE").unwrap_or(0),
        }
    }

    /// `DEMO_PROBE_NOISE`: a `server/discover` request is not answered, and makes the server
    /// complain on stderr in that many lines instead, as older Python SDK servers do with a
    /// method they do not know. True if the request is to go unanswered.
    pub(crate) fn probe_noise(&self, method: &str) -> bool {
        if method != super::era::DISCOVER || self.probe_noise == 0 {
            return false;
        }
        for i in 1..=self.probe_noise {
            stderr_line(&format!("demo: validation error {i} for server/discover"));
        }
        true
    }

    /// `DEMO_REJECT_FIRST_MODERN`: how many modern requests, counted from the first, are
    /// answered `-32022` whatever version they ask for (the era rules in `era` apply it).
    pub(crate) fn reject_first_modern(&self) -> u64 {
        self.reject_first_modern
    }

    /// `DEMO_GARBAGE_LINES`: written under the same lock as the response that follows them.
    pub(crate) fn write_garbage_lines(&self, out: &mut impl Write) -> io::Result<()> {
        for i in 1..=self.garbage_lines {
            writeln!(out, "garbage line {i}")?;
        }
        Ok(())
    }
}

impl Server {
    /// `DEMO_CRASH_AFTER_CALLS`: checked before the call is logged, so the event log only shows
    /// calls that actually ran.
    pub(crate) fn crash_if_asked(&self) {
        let Some(limit) = self.config.faults.crash_after_calls else {
            return;
        };
        if lock(&self.state).calls_answered >= limit {
            stderr_line("demo: crashing as asked");
            process::exit(3);
        }
    }

    /// `DEMO_LONG_LINE_BYTES`: a non-JSON line right after the `initialize` response.
    pub(crate) fn write_long_line_if_asked(&self) {
        if let Some(bytes) = self.config.faults.long_line_bytes {
            self.out.write_long_line(bytes);
        }
    }
}

/// The start-up faults, in the order they strike, after `demo: started pid=..` was written.
pub(crate) fn at_start_up(event_log: Option<&Path>) {
    for i in 1..=env_u64("DEMO_STDERR_LINES").unwrap_or(0) {
        stderr_line(&format!("demo stderr line {i}"));
    }
    fail_start_if_asked();
    // The grandchild is spawned before SIGTERM is ignored: ignored signals survive exec, and
    // the grandchild should stay an ordinary, killable process.
    if env_flag("DEMO_SPAWN_GRANDCHILD") {
        spawn_grandchild(event_log);
    }
    if env_flag("DEMO_IGNORE_SIGTERM") {
        ignore_sigterm();
    }
    if let Some(ms) = env_u64("DEMO_SLOW_START_MS") {
        thread::sleep(Duration::from_millis(ms));
    }
}

/// `DEMO_FAIL_STARTS`: fail the first N starts, counting starts in `DEMO_START_COUNT_FILE`.
fn fail_start_if_asked() {
    let Some(limit) = env_u64("DEMO_FAIL_STARTS").filter(|&n| n > 0) else {
        return;
    };
    let count = match env_path("DEMO_START_COUNT_FILE") {
        None => 1,
        Some(path) => bump_count_file(&path).unwrap_or_else(|e| {
            stderr_line(&format!(
                "demo: start count file unusable ({e}), failing anyway"
            ));
            1
        }),
    };
    if count <= limit {
        stderr_line(&format!("demo: simulated start-up failure {count}/{limit}"));
        process::exit(1);
    }
}

/// `DEMO_SPAWN_GRANDCHILD`: a child in our process group that outlives us unless the supervisor
/// kills the whole group. Its stdio is detached so it does not hold our pipes open.
fn spawn_grandchild(event_log: Option<&Path>) {
    let spawned = Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            append_event(event_log, &format!("grandchild pid={}", child.id()));
            // Reap it in the background (never blocking the server) so it cannot linger as a
            // zombie if it dies while we live.
            let reaper = thread::Builder::new().spawn(move || {
                let _ = child.wait();
            });
            if let Err(e) = reaper {
                stderr_line(&format!("demo: cannot start reaper thread: {e}"));
            }
        }
        Err(e) => stderr_line(&format!("demo: cannot spawn grandchild: {e}")),
    }
}

/// `DEMO_IGNORE_SIGTERM`: so tests can check that a supervisor escalates to SIGKILL.
fn ignore_sigterm() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: SigIgn installs no handler function, so no handler code can break
    // async-signal-safety, and no previously installed handler of ours is being replaced.
    let result = unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) };
    if let Err(e) = result {
        stderr_line(&format!("demo: cannot ignore SIGTERM: {e}"));
    }
}
