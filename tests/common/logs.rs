//! Log capture for one test, in a test binary whose tests run side by side: the capture is the
//! `tracing` default of the test's own thread, never the process's. An `#[actix::test]` runs
//! the supervisor, its actors and its transports on the test's thread, so the capture sees
//! every line of its test and none of another test's (whose lines would change what a test
//! counts). `log` records (awc, actix-http) reach it too.

use std::sync::{Arc, Mutex, OnceLock};

use tracing::dispatcher::DefaultGuard;
use tracing::Dispatch;
use tracing_subscriber::util::SubscriberInitExt as _;

/// What a capture was written, as the `fmt` subscriber formatted it.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The lines written so far.
    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures what this thread logs at `level` and above, formatted by `tracing-subscriber`'s
/// `fmt` (without colours), until the guard drops.
pub fn capture(level: tracing::Level) -> (LogCapture, DefaultGuard) {
    let logs = LogCapture::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (logs, set_thread_default(subscriber))
}

/// Makes `subscriber` this thread's default until the guard drops, and routes `log` records to
/// the thread's default as well.
pub fn set_thread_default(subscriber: impl Into<Dispatch>) -> DefaultGuard {
    // While at most one dispatcher exists, tracing-core works out a callsite's interest from
    // the default of the thread that reaches it first: a callsite first reached on another
    // test's thread (which has no subscriber) would be cached as "never", and this capture
    // would miss its lines. A second dispatcher that lives as long as the process makes it ask
    // every live dispatcher instead.
    static SECOND: OnceLock<Dispatch> = OnceLock::new();
    SECOND.get_or_init(|| Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    subscriber.into().set_default()
}
