//! The supervisor from a plain `#[tokio::main]` program, with no actix in sight: `McpClient`
//! runs the supervisor on an actix system of its own thread, and its methods work from any
//! runtime. `cargo run --example tokio_client`. The server is the in-tree demo server,
//! compiled in as in the quickstart: started with `--demo-server`, this binary is the server.
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use mcp_supervisor::{McpClient, ServerConfig, ServerEvent, ServerState, Supervisor};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--demo-server") {
        demo_server::main();
        return Ok(());
    }
    let exe = std::env::current_exe()?.display().to_string();
    let demo = ServerConfig::stdio("demo", exe).args(["--demo-server"]);
    let (client, mut events) = McpClient::start_with_events(Supervisor::builder().server(demo))?;

    // Calls made before the server is up wait for it; here we watch it come up first.
    while let Some(event) = events.next().await {
        if let ServerEvent::StateChanged { state, message, .. } = event {
            println!("demo: {message}");
            if state == ServerState::Ready {
                break;
            }
        }
    }
    let tools = client.tools("demo").await?;
    println!("demo has {} tools", tools.len());
    let sum = client
        .call_tool("demo", "add", json!({"a": 2, "b": 3}))
        .await?;
    println!("add 2 3 → {:?}", sum.structured_content);

    // A clone per task: the handle is `Clone + Send + Sync`.
    let echoes: Vec<_> = (0..3)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .call_tool("demo", "echo", json!({ "text": format!("echo {i}") }))
                    .await
            })
        })
        .collect();
    for echo in echoes {
        println!("{:?}", echo.await??.content);
    }
    client.shutdown().await;
    Ok(())
}
