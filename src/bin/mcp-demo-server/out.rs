//! The writer of stdout: every message is one line, written and flushed under one lock.
//!
//! The reader thread and the worker threads all write here; one lock per line is what keeps
//! their messages from interleaving mid-line.

use std::io::{self, BufWriter, Stdout, Write};
use std::process;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::lock;

/// Long lines are written in chunks of this size, so a multi-gigabyte line costs no memory.
const CHUNK: usize = 64 * 1024;
static X_CHUNK: [u8; CHUNK] = [b'x'; CHUNK];

#[derive(Clone)]
pub(crate) struct Out(Arc<Mutex<BufWriter<Stdout>>>);

impl Out {
    pub(crate) fn stdout() -> Self {
        Out(Arc::new(Mutex::new(BufWriter::new(io::stdout()))))
    }

    /// Runs `write` with the stdout lock held, then flushes. A failed write means the client has
    /// gone away, and without a client there is nothing left to do.
    pub(crate) fn write_with(&self, write: impl FnOnce(&mut BufWriter<Stdout>) -> io::Result<()>) {
        let mut out = lock(&self.0);
        if write(&mut out).and_then(|()| out.flush()).is_err() {
            process::exit(0);
        }
    }

    pub(crate) fn send(&self, message: &Value) {
        // `Value`'s Display is compact JSON, and JSON strings escape newlines: one line.
        self.write_with(|out| writeln!(out, "{message}"));
    }

    pub(crate) fn write_long_line(&self, bytes: u64) {
        self.write_with(|out| {
            let mut left = bytes;
            while left > 0 {
                let take = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
                out.write_all(&X_CHUNK[..take])?;
                left -= take as u64;
            }
            out.write_all(b"\n")
        });
    }
}
