//! The client side of the official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! 0.1.16 and 0.2.0-alpha.12; see `.ci/conformance`).
//!
//! The suite starts this program with the test server's URL as the last argument and sets
//! `MCP_CONFORMANCE_SCENARIO` (the scenario's name), `MCP_CONFORMANCE_PROTOCOL_VERSION` (the
//! revision the run is for; 0.1.16 sets none) and, for some scenarios,
//! `MCP_CONFORMANCE_CONTEXT` (JSON, e.g. the `toolCalls` to make). The client supervises that
//! one server over Streamable HTTP with the normal runtime, its `protocol` setting pinned to
//! the era of that revision (or `auto`, see [`protocol_for`]), does what the scenario asks
//! (`scenarios`; `handler` answers the server's requests; `auth` authorizes, headlessly, for
//! the `auth/*` scenarios), and exits 0 if every
//! call got the answer it should (the suite judges the rest from what it saw on the wire).
//!
//! ```sh
//! cargo build --example conformance_client
//! node tests/conformance/node_modules/conformance-next/dist/index.js client \
//!     --command "exec target/debug/examples/conformance_client" \
//!     --scenario tools_call --spec-version 2026-07-28
//! ```

mod auth;
mod handler;
mod scenarios;

use std::time::Duration;

use actix::{Actor, System};
use mcp_supervisor::protocol::era::ProtocolChoice;
use mcp_supervisor::{GetStatus, ServerConfig, ServerState, Shutdown, Supervisor};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use handler::{Client, States};
use scenarios::{Session, SERVER};

/// The `protocol` setting for the revision a run is for: the `initialize` handshake up to
/// 2025-11-25 (and when the suite names none, as 0.1.16 does), the stateless revision from
/// 2026-07-28 on. A non-empty `MCP_CONFORMANCE_CLIENT_PROTOCOL` (`auto`, `legacy` or `modern`)
/// overrides it, so that the negotiation can meet the suite's servers too.
fn protocol_for(version: Option<&str>) -> Result<ProtocolChoice, String> {
    match std::env::var("MCP_CONFORMANCE_CLIENT_PROTOCOL") {
        Ok(choice) if !choice.is_empty() => ProtocolChoice::parse(&choice).ok_or_else(|| {
            format!("MCP_CONFORMANCE_CLIENT_PROTOCOL={choice:?}: expected auto, legacy or modern")
        }),
        // Revisions are dates, so they compare as strings.
        _ => Ok(match version {
            Some(v) if v > "2025-11-25" => ProtocolChoice::Modern,
            _ => ProtocolChoice::Legacy,
        }),
    }
}

async fn run(
    url: String,
    scenario: String,
    context: Value,
) -> Result<(), Box<dyn std::error::Error>> {
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let protocol = protocol_for(version.as_deref())?;
    eprintln!(
        "conformance client: scenario {scenario} at {}, protocol {}",
        version.as_deref().unwrap_or("(unset)"),
        protocol.name()
    );
    let (states_tx, mut states) = mpsc::unbounded_channel();
    let sup = Supervisor::builder()
        .server(
            ServerConfig::http(SERVER, url)
                .oauth(auth::config(&scenario, &context))
                .protocol(protocol)
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
    let status = sup.send(GetStatus::server(SERVER)).await??;
    let tools: Vec<_> = status.into_iter().flat_map(|s| s.tools).collect();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    eprintln!("conformance client: tools {names:?}");

    let session = Session {
        sup,
        tools,
        context,
    };
    let outcome = scenarios::run(&scenario, &session).await;
    session.sup.send(Shutdown).await?;
    outcome
}

fn main() {
    // The suite keeps the client's stderr (`stderr.txt` of each run): WARN and above by
    // default, e.g. the tools dropped for invalid `x-mcp-header` annotations; `RUST_LOG` for more.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let Some(url) = std::env::args()
        .skip(1)
        .last()
        .filter(|u| u.starts_with("http"))
    else {
        eprintln!("usage: conformance_client <server url>  (scenario in MCP_CONFORMANCE_SCENARIO)");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(context) => context,
            Err(e) => {
                eprintln!("conformance client: MCP_CONFORMANCE_CONTEXT is not JSON: {e}");
                std::process::exit(2);
            }
        },
        Err(_) => Value::Null,
    };
    let outcome = System::new().block_on(run(url, scenario, context));
    if let Err(e) = outcome {
        eprintln!("conformance client: {e}");
        std::process::exit(1);
    }
}
