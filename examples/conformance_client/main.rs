//! The client side of the official MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! The suite starts this program with the test server's URL as the last argument and the
//! scenario's name in `MCP_CONFORMANCE_SCENARIO`. It supervises that one server over Streamable
//! HTTP with the normal runtime, does what the scenario asks, and exits 0 if every call got its
//! answer (the suite judges the rest from what it saw on the wire).
//!
//! ```sh
//! cargo build --example conformance_client
//! npx conformance client --command "exec target/debug/examples/conformance_client" --scenario tools_call
//! ```

use std::time::Duration;

use actix::{Actor, Context, Handler, System};
use mcp_supervisor::{
    CallTool, GetStatus, RpcError, ServerConfig, ServerEvent, ServerRequest, ServerState, Shutdown,
    Supervisor,
};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

/// Answers the server's requests: elicitations are accepted with the defaults the requested
/// schema gives (SEP-1034); roots are an empty list.
struct Client;

impl Actor for Client {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Client {
    type Result = Result<Value, RpcError>;

    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        match request.method.as_str() {
            "elicitation/create" => Ok(json!({
                "action": "accept",
                "content": schema_defaults(request.params.as_ref()),
            })),
            "roots/list" => Ok(json!({ "roots": [] })),
            other => Err(RpcError::new(-32601, format!("{other} is not supported"))),
        }
    }
}

/// The `default` of every property of `params.requestedSchema`.
fn schema_defaults(params: Option<&Value>) -> Map<String, Value> {
    let properties = params
        .and_then(|p| p.pointer("/requestedSchema/properties"))
        .and_then(Value::as_object);
    properties
        .into_iter()
        .flatten()
        .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
        .collect()
}

/// Forwards state changes, so `main` can wait for Ready or Failed.
struct States(mpsc::UnboundedSender<ServerState>);

impl Actor for States {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for States {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        if let ServerEvent::StateChanged { state, message, .. } = event {
            eprintln!("conformance client: {}: {message}", state.name());
            let _ = self.0.send(state);
        }
    }
}

/// The tool a scenario wants called, and its arguments.
fn tool_for(scenario: &str) -> Option<(&'static str, Value)> {
    match scenario {
        "tools_call" => Some(("add_numbers", json!({"a": 5, "b": 3}))),
        "sse-retry" => Some(("test_reconnection", json!({}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults", json!({})))
        }
        _ => None,
    }
}

async fn run(url: String, scenario: String) -> Result<(), Box<dyn std::error::Error>> {
    let (states_tx, mut states) = mpsc::unbounded_channel();
    let sup = Supervisor::builder()
        .server(
            ServerConfig::http("conformance", url)
                .max_connect_retries(1)
                .call_timeout(Duration::from_secs(20)),
        )
        .subscriber(States(states_tx).start().recipient())
        .request_handler(Client.start().recipient(), json!({ "elicitation": {} }))
        .start()?;

    loop {
        match states.recv().await {
            Some(ServerState::Ready) => break,
            Some(ServerState::Failed { error, .. }) => return Err(error.into()),
            Some(_) => {}
            None => return Err("the supervisor stopped".into()),
        }
    }
    let status = sup.send(GetStatus::server("conformance")).await??;
    let tools: Vec<String> = status
        .iter()
        .flat_map(|s| s.tools.iter().map(|t| t.name.to_string()))
        .collect();
    eprintln!("conformance client: scenario {scenario}, tools {tools:?}");

    if let Some((tool, arguments)) = tool_for(&scenario) {
        let result = sup
            .send(CallTool::new("conformance", tool, arguments))
            .await??;
        println!("{}", serde_json::to_string(&result.content)?);
        if result.is_error == Some(true) {
            return Err(format!("{tool} answered with an error").into());
        }
    }
    sup.send(Shutdown).await?;
    Ok(())
}

fn main() {
    let Some(url) = std::env::args()
        .skip(1)
        .last()
        .filter(|u| u.starts_with("http"))
    else {
        eprintln!("usage: conformance_client <server url>  (scenario in MCP_CONFORMANCE_SCENARIO)");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let outcome = System::new().block_on(run(url, scenario));
    if let Err(e) = outcome {
        eprintln!("conformance client: {e}");
        std::process::exit(1);
    }
}
