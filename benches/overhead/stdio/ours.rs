//! Our runtime as a stdio client, three ways: `ours` (`CallTool` straight to the
//! `ServerActor`), `ours-sup` (`CallTool` through the `Supervisor`, one more actor hop) and
//! `ours-call` (untyped `Call` to the `ServerActor`, no typed result to build).

use std::time::Duration;

use mcp_supervisor::{Call, CallTool, ServerConfig, Shutdown};
use serde_json::{json, Value};

use crate::echo::{check_raw_result, check_result, ECHO_BIN, TEXT};
use crate::supervised::supervise_one;
use crate::workload::{Load, Measured};

/// Latencies and throughput of `client` (`ours`, `ours-sup` or `ours-call`) under `load`.
pub(super) async fn run(client: &str, load: &Load) -> Measured {
    let (sup, addr) = supervise_one(ServerConfig::stdio("echo", ECHO_BIN)).await;
    let out = match client {
        "ours" => {
            let call = move || {
                let sent = addr.send(CallTool::new("echo", "echo", json!({"text": TEXT})));
                async move {
                    let result = sent.await.expect("actor alive").expect("echo call");
                    check_result(&result);
                }
            };
            load.run(call).await
        }
        "ours-sup" => {
            let sup = sup.clone();
            let call = move || {
                let sent = sup.send(CallTool::new("echo", "echo", json!({"text": TEXT})));
                async move {
                    let result = sent.await.expect("supervisor alive").expect("echo call");
                    check_result(&result);
                }
            };
            load.run(call).await
        }
        _ => {
            let call = move || {
                let sent = addr.send(Call::new(
                    "echo",
                    "tools/call",
                    Some(json!({"name": "echo", "arguments": {"text": TEXT}})),
                ));
                async move {
                    let result: Value = sent.await.expect("actor alive").expect("echo call");
                    check_raw_result(Some(&result));
                }
            };
            load.run(call).await
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;
    out
}
