//! mcpctl's standard output: every line it prints there, for people or scripts, goes through
//! [`line`] (the `out!` macro) or [`write_all`].
//!
//! Its own room because of what happens when the reader goes away early
//! (`mcpctl tools | head -2`): Rust ignores SIGPIPE, so a write fails with `BrokenPipe`, and
//! `println!` panics on it (exit code 101, and a panic message on stderr). Restoring SIGPIPE's
//! default would end mcpctl at once instead, leaving the servers it started without their
//! clean shutdown (a stdio server's process group, an HTTP session's DELETE). So a failed write
//! is recorded here, nothing more is printed, and the session ([`closed`]) stops the command and
//! shuts the servers down as after Ctrl-C. The exit code is then 0 when the reader went away:
//! it took what it wanted, as with `ripgrep` (a shell's 141 would fail every pipeline under
//! `set -o pipefail`); any other write error is said on stderr and exits with 1.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use tokio::sync::Notify;

use crate::{EXIT_FAILED, EXIT_OK};

/// What became of stdout: [`OPEN`], [`GONE`] (its reader went away) or [`FAILED`].
static STATE: AtomicU8 = AtomicU8::new(OPEN);
const OPEN: u8 = 0;
const GONE: u8 = 1;
const FAILED: u8 = 2;

/// Wakes [`closed`] once stdout can take no more.
fn notify() -> &'static Notify {
    static NOTIFY: OnceLock<Notify> = OnceLock::new();
    NOTIFY.get_or_init(Notify::new)
}

/// Prints one line (`out!`, like `println!`); nothing once stdout has failed.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    if STATE.load(Ordering::Relaxed) != OPEN {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "{args}").and_then(|()| out.flush());
    if let Err(e) = written {
        failed(&e);
    }
}

/// Writes bytes as they are (a completion script); nothing once stdout has failed.
pub(crate) fn write_all(bytes: &[u8]) {
    if STATE.load(Ordering::Relaxed) != OPEN {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        failed(&e);
    }
}

fn failed(e: &std::io::Error) {
    let state = if e.kind() == ErrorKind::BrokenPipe {
        GONE
    } else {
        FAILED
    };
    if STATE.swap(state, Ordering::Relaxed) == OPEN {
        if state == FAILED {
            eprintln!("mcpctl: cannot write to stdout: {e}");
        }
        // A stored permit: the session may not be waiting yet.
        notify().notify_one();
    }
}

/// Resolves once stdout can take no more: the command has nothing left to do.
pub(crate) async fn closed() {
    if STATE.load(Ordering::Relaxed) == OPEN {
        notify().notified().await;
    }
}

/// The exit code, given the command's own: 0 if stdout's reader went away, 1 if writing to
/// stdout failed otherwise.
pub(crate) fn exit_code(code: u8) -> u8 {
    match STATE.load(Ordering::Relaxed) {
        GONE => EXIT_OK,
        FAILED => EXIT_FAILED,
        _ => code,
    }
}
