//! The spans a service's traces get from us: one `mcp.connect` per connection attempt, with
//! its outcome, era and protocol version when it ends. One global subscriber per test binary,
//! so these tests live apart.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_supervisor::*;
use tracing_subscriber::fmt::format::FmtSpan;

/// Everything the subscriber writes, with each span's fields as it closes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn install() -> Captured {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_span_events(FmtSpan::CLOSE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        captured
    }

    /// The lines that report a closed `mcp.connect` span of `server`.
    fn connect_spans(&self, server: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains("mcp.connect{") && l.contains(&format!("server={server} ")))
            .filter(|l| l.contains(": close "))
            .map(str::to_owned)
            .collect()
    }
}

#[actix::test]
async fn each_connection_attempt_is_a_span_with_its_outcome() {
    let captured = Captured::install();
    let dir = tempdir();
    let missing = ServerConfig::stdio("missing", "/nonexistent/mcp-server");
    let mut settings = quick_settings();
    settings.max_reconnect_attempts = Some(1);
    let (sup, events) = start_supervisor(settings, [demo("demo", dir.path()), missing]);
    events.ready("demo", 1).await;
    until("the missing server's first attempt ended", || {
        !captured.connect_spans("missing").is_empty()
    })
    .await;
    sup.send(Shutdown).await.unwrap();

    let ready = captured.connect_spans("demo");
    assert_eq!(ready.len(), 1, "{ready:?}");
    for field in [
        "attempt=1",
        "transport=\"stdio\"",
        "outcome=\"ready\"",
        "era=\"legacy\"",
        "protocol_version=\"2025-11-25\"",
        "duration_ms=",
    ] {
        assert!(ready[0].contains(field), "{field} in {}", ready[0]);
    }
    let failed = &captured.connect_spans("missing")[0];
    assert!(
        failed.contains("outcome=\"invalid_connection\""),
        "{failed}"
    );
    assert!(
        !failed.contains("era="),
        "no era without a connection: {failed}"
    );
}
