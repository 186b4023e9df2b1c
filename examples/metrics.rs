//! Metrics in the Prometheus text format: the `metrics` feature records calls, states,
//! reconnects and skipped input through the `metrics` facade, and the application installs the
//! exporter it wants — here `metrics-exporter-prometheus`, whose `render()` is what a
//! `GET /metrics` route would answer.
//!
//! `cargo run --example metrics --features metrics`. The server is the in-tree demo server,
//! compiled in as in the quickstart: started with `--demo-server`, this binary is the server.
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use std::time::Duration;

use mcp_supervisor::{telemetry, CallTool, ServerConfig, Shutdown, Supervisor};
use metrics_exporter_prometheus::PrometheusBuilder;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--demo-server") {
        demo_server::main();
        return Ok(());
    }
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    telemetry::describe();
    actix::System::new().block_on(async {
        let exe = std::env::current_exe()?.to_string_lossy().into_owned();
        let supervisor = Supervisor::builder()
            .server(ServerConfig::stdio("demo", exe).args(["--demo-server"]))
            .start()?;
        for text in ["one", "two", "three"] {
            let echo = CallTool::new("demo", "echo", json!({ "text": text }))
                .timeout(Duration::from_secs(10));
            supervisor.send(echo).await??;
        }
        supervisor.send(Shutdown).await?;
        print!("{}", prometheus.render());
        Ok(())
    })
}
