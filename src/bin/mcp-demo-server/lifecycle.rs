//! The lifecycle: answering `initialize`, and negotiating the protocol version.
//!
//! Its own room because the version rules (which versions are echoed, what is offered instead,
//! `DEMO_PROTOCOL_VERSION` forcing an answer) are what handshake tests exercise. The 2026-07-28
//! revision's counterpart, `server/discover`, is in `discover`; which of the two a connection
//! gets is decided in `era`.

use serde_json::{json, Value};

use super::jsonrpc::Args;
use super::server::Server;

/// Protocol versions we accept from the client as-is; anything else gets the latest.
const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const LATEST_VERSION: &str = "2025-11-25";
/// What both eras tell a client about this server.
pub(crate) const INSTRUCTIONS: &str = "Demo server for mcp-supervisor tests.";

pub(crate) fn server_info() -> Value {
    json!({ "name": "mcp-demo-server", "version": env!("CARGO_PKG_VERSION") })
}

impl Server {
    pub(crate) fn initialize(&self, id: &Value, params: &Args) {
        let requested = params.get("protocolVersion");
        let shown = match requested {
            Some(Value::String(version)) => version.clone(),
            Some(other) => other.to_string(),
            None => "null".to_owned(),
        };
        self.log_event(&format!("initialize {shown}"));
        let version = match &self.config.protocol_override {
            Some(forced) => forced.as_str(),
            None => requested
                .and_then(Value::as_str)
                .filter(|v| SUPPORTED_VERSIONS.contains(v))
                .unwrap_or(LATEST_VERSION),
        };
        let result = json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": { "listChanged": true },
                "resources": { "subscribe": true },
                "prompts": {},
                "logging": {},
                "extensions": { super::skills::EXTENSION: {} },
            },
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        });
        self.respond(id, Ok(result));
        self.write_long_line_if_asked();
    }
}
