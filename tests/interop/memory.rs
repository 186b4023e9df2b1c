//! Scenario 7 of the interop suite, in a process of its own (`common::alone`) so that the
//! process's peak RSS belongs to it alone: a server that prints non-JSON lines and one that
//! sends a 64 MiB line on stdout. Calls keep working, and the client never holds the long line
//! in memory. Needs the servers `.ci/interop` installs; `#[ignore]`d in a plain `cargo test`.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use mcp_supervisor::*;
use serde_json::json;

/// A field of /proc/self/status, in bytes.
fn proc_status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

crate::test_alone!(
    #[ignore = "needs the servers .ci/interop installs"]
    s7_garbage_and_a_64_mib_line_keep_memory_bounded => garbage_and_a_64_mib_line
);

async fn garbage_and_a_64_mib_line() {
    let dir = PathBuf::from(
        std::env::var_os("MCP_INTEROP_DIR").expect("MCP_INTEROP_DIR: run through .ci/interop"),
    );
    let server = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let server = server.display();
    let noisy = ServerConfig::stdio("noisy", "sh").args([
        "-c",
        &format!("i=0; while [ $i -lt 100 ]; do echo \"not json $i\"; i=$((i+1)); done; exec node {server} stdio"),
    ]);
    let huge = ServerConfig::stdio("huge", "sh").args([
        "-c",
        &format!("head -c 67108864 /dev/zero | tr '\\0' x; echo; exec node {server} stdio"),
    ]);
    let rss_before = proc_status_bytes("VmRSS:");
    let (sup, events) = start_supervisor(quick_settings(), [noisy, huge]);
    events.ready("noisy", 1).await;
    events.ready("huge", 1).await;
    for server in ["noisy", "huge"] {
        for i in 0..20 {
            let call = CallTool::new(server, "echo", json!({"message": format!("m{i}")}))
                .timeout(Duration::from_secs(10));
            sup.send(call).await.unwrap().unwrap();
        }
    }
    let statuses = sup.send(GetStatus::all()).await.unwrap().unwrap();
    let noisy = statuses.iter().find(|s| s.name == "noisy").unwrap();
    let huge = statuses.iter().find(|s| s.name == "huge").unwrap();
    assert_eq!(noisy.counters.skipped_non_json, 100);
    assert_eq!(huge.counters.skipped_oversized, 1);
    // Every call above was answered (unwrapped); the counters also count the supervisor's own
    // calls: server-everything announces tools/list_changed right after `initialized`, and
    // the refresh that follows may or may not have run yet.
    assert_eq!(noisy.counters.calls_failed + huge.counters.calls_failed, 0);
    assert!(noisy.counters.calls_ok + huge.counters.calls_ok >= 40);

    let peak = proc_status_bytes("VmHWM:");
    let growth = peak.saturating_sub(rss_before);
    let figure = format!(
        "100 non-JSON lines and a 64 MiB line skipped; 40 calls ok; peak RSS {} MiB (+{} MiB)",
        peak >> 20,
        growth >> 20
    );
    eprintln!("{figure}");
    assert!(growth < 32 << 20, "{figure}");
    record(
        "7 non-JSON stdout / 64 MiB line (server-everything)",
        "ok",
        &figure,
    );
    sup.send(Shutdown).await.unwrap();
}
