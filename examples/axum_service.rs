//! An axum service in front of an MCP server, through `McpClient` (no actix in the service):
//! `POST /tools/{server}/{tool}` calls a tool with the JSON body as its arguments, `GET /status`
//! lists the servers. `cargo run --example axum_service`, then
//! `curl -d '{"a": 2, "b": 3}' -H 'content-type: application/json' localhost:8080/tools/demo/add`.
//! `PORT` sets the port. The server is the in-tree demo server, compiled in as in the quickstart.
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use mcp_supervisor::{McpClient, ServerConfig, Supervisor};
use serde_json::{json, Value};

/// A call's error as an HTTP answer: the status a gateway answers for its kind (the
/// library's `Error::http_status`: 504 for a timeout, 503 while unavailable, 404 for an unknown
/// server, 502 for the rest of the server's failures) and its stable code.
fn failed(e: mcp_supervisor::Error) -> (StatusCode, Json<Value>) {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_GATEWAY);
    (
        status,
        Json(json!({"error": e.code(), "message": e.to_string()})),
    )
}

async fn call_tool(
    State(client): State<McpClient>,
    Path((server, tool)): Path<(String, String)>,
    Json(arguments): Json<Value>,
) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    let result = client
        .call_tool(&server, &tool, arguments)
        .await
        .map_err(failed)?;
    Ok(Json(json!(result)))
}

async fn status(State(client): State<McpClient>) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    let servers = client.status().await.map_err(failed)?;
    let states = servers
        .iter()
        .map(|s| json!({"name": s.name, "state": s.state.name()}));
    Ok(Json(Value::Array(states.collect())))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--demo-server") {
        demo_server::main();
        return Ok(());
    }
    let exe = std::env::current_exe()?.display().to_string();
    let demo = ServerConfig::stdio("demo", exe).args(["--demo-server"]);
    let client = McpClient::start(Supervisor::builder().server(demo))?;
    let app = Router::new()
        .route("/tools/{server}/{tool}", post(call_tool))
        .route("/status", get(status))
        .with_state(client.clone());
    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    client.shutdown().await;
    Ok(())
}
