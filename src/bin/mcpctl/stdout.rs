//! mcpctl's standard output: every line it prints there, for people or scripts, goes through
//! [`line`] (the `out!` macro) or [`write_all`].
//!
//! Its own room because of what happens when the reader goes away early
//! (`mcpctl tools | head -2`): Rust ignores SIGPIPE, so a write fails with `BrokenPipe`, and
//! `println!` panics on it (exit code 101, and a panic message on stderr). Restoring SIGPIPE's
//! default would end mcpctl at once instead, leaving the servers it started without their
//! clean shutdown (a stdio server's process group, an HTTP session's DELETE). So a failed write
//! is recorded here, nothing more is printed, and the session ([`closed`]) stops the command and
//! shuts the servers down as after Ctrl-C. The exit code is then 0 when the reader went away
//! before the command finished: it took what it wanted, as with `ripgrep` (a shell's 141 would
//! fail every pipeline under `set -o pipefail`); a command that had finished keeps its own code
//! (a `status` with a failed server is 1, whether or not its lines were all read); any other
//! write error is said on stderr and exits with 1.

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

/// The exit code, given the command's own and whether stdout's closing cut the command short:
/// 0 if stdout's reader went away before the command finished, 1 if writing to stdout failed
/// otherwise, else the command's own. A command that had finished when its reader went away
/// keeps its code (`mcpctl status | head -1` with a failed server is 1, however the pipe
/// buffered).
pub(crate) fn exit_code(code: u8, cut_short: bool) -> u8 {
    exit_code_in(STATE.load(Ordering::Relaxed), code, cut_short)
}

fn exit_code_in(state: u8, code: u8, cut_short: bool) -> u8 {
    match state {
        GONE if cut_short => EXIT_OK,
        FAILED => EXIT_FAILED,
        _ => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_keeps_the_code_of_a_command_that_had_finished() {
        // Cut short by its reader going away (`watch`, repeated calls): 0.
        assert_eq!(exit_code_in(GONE, EXIT_OK, true), EXIT_OK);
        // Finished, and then its reader had gone: the command's own code.
        assert_eq!(exit_code_in(GONE, EXIT_FAILED, false), EXIT_FAILED);
        assert_eq!(exit_code_in(GONE, EXIT_OK, false), EXIT_OK);
        // Another write error is 1 however it ended; an open stdout, the command's own.
        assert_eq!(exit_code_in(FAILED, EXIT_OK, false), EXIT_FAILED);
        assert_eq!(exit_code_in(FAILED, EXIT_OK, true), EXIT_FAILED);
        assert_eq!(exit_code_in(OPEN, EXIT_FAILED, false), EXIT_FAILED);
    }
}
