//! The official SDK as a stdio client: rmcp's child-process transport and `call_tool`, the
//! reference our runtime is compared with.

use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::json;

use crate::echo::{check_result, ECHO_BIN, TEXT};
use crate::workload::{Load, Measured};

/// Latencies and throughput of rmcp's client under `load`.
pub(super) async fn run(load: &Load) -> Measured {
    let transport = TokioChildProcess::new(tokio::process::Command::new(ECHO_BIN))
        .expect("spawn the echo server for rmcp");
    let client = Arc::new(().serve(transport).await.expect("rmcp initialize"));
    let args = json!({"text": TEXT})
        .as_object()
        .cloned()
        .expect("an object");
    let call = move || {
        let client = client.clone();
        let args = args.clone();
        async move {
            let params = CallToolRequestParams::new("echo").with_arguments(args);
            let result = client.call_tool(params).await.expect("rmcp call_tool");
            check_result(&result);
        }
    };
    load.run(call).await
}
