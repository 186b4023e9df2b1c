//! Call overhead over stdio: every client against the same `mcp-echo-server`, each in a child
//! process of its own, under the same [`Load`]. One file per client; this one names them, runs
//! the one a child was started for and measures its process.
//!
//! A new client is a file here with a `run(&Load)`, a name in [`CLIENTS`] with its [`label`],
//! and a branch in [`child`]; its figures and ratios go in `report.rs`.

mod one_hop;
mod ours;
mod raw;
mod report;
// Not `rmcp`, which would shadow the crate of that name in this module.
mod rmcp_client;

use serde_json::{json, Value};

use crate::procfs::{peak_rss_kb, rss_kb};
use crate::stats::percentile;
use crate::workload::Load;

pub(crate) use report::report;

/// Concurrent callers in the throughput run.
pub(crate) const CALLERS: usize = 64;
/// The stdio clients, in the order of the first repetition.
pub(crate) const CLIENTS: [&str; 6] = ["raw", "one-hop", "ours", "ours-sup", "ours-call", "rmcp"];

/// How a client is named in the table.
fn label(client: &str) -> &'static str {
    match client {
        "raw" => "raw (hand-written tokio)",
        "one-hop" => "one hop: raw behind one actor",
        "ours" => "ours: `CallTool` → `ServerActor`",
        "ours-sup" => "ours: `CallTool` → `Supervisor`",
        "ours-call" => "ours: `Call` → `ServerActor`",
        "rmcp" => "rmcp 3.11 `call_tool`",
        _ => "?",
    }
}

/// The child's side: one client under `load`; its latencies, throughput and RSS.
pub(crate) async fn child(client: &str, load: &Load) -> Value {
    let rss_start = rss_kb();
    let measured = match client {
        "raw" => raw::run(load).await,
        "one-hop" => one_hop::run(load).await,
        "ours" | "ours-sup" | "ours-call" => ours::run(client, load).await,
        "rmcp" => rmcp_client::run(load).await,
        other => panic!("unknown client {other}"),
    };
    let peak = peak_rss_kb();
    let lat = &measured.lat;
    json!({
        "client": client,
        "serial_calls": lat.len(),
        "serial_p50_us": percentile(lat, 0.5),
        "serial_p99_us": percentile(lat, 0.99),
        "serial_mean_us": lat.iter().sum::<f64>() / lat.len().max(1) as f64,
        "concurrent_calls_per_s": measured.tput,
        "serial_cpu_us_per_call": measured.serial.cpu_us,
        "serial_writes_per_call": measured.serial.writes,
        "concurrent_cpu_us_per_call": measured.concurrent.cpu_us,
        "concurrent_writes_per_call": measured.concurrent.writes,
        "rss_start_kb": rss_start,
        "rss_peak_kb": peak,
    })
}
