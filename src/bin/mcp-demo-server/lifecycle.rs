//! The lifecycle: answering `initialize`, and negotiating the protocol version.
//!
//! Its own room because the version rules (which versions are echoed, what is offered instead,
//! `DEMO_PROTOCOL_VERSION` forcing an answer) are what handshake tests exercise. The 2026-07-28
//! revision's counterpart, `server/discover`, is in `discover`; which of the two a connection
//! gets is decided in `era`.

use serde_json::{json, Value};

use super::jsonrpc::Args;
use super::lock;
use super::server::Server;
use super::tools::{session_tasks_capability, SESSION_TASKS_VERSION};

/// Protocol versions we accept from the client as-is; anything else gets the latest.
const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const LATEST_VERSION: &str = "2025-11-25";
/// What both eras tell a client about this server.
pub(crate) const INSTRUCTIONS: &str = "Demo server for mcp-supervisor tests.";

/// The 2025 session of this connection, once `initialize` was answered.
#[derive(Default)]
pub(crate) struct Session {
    /// The version we answered.
    pub(crate) version: Option<String>,
    /// Whether `notifications/initialized` came: before it we send the client no requests.
    pub(crate) initialized: bool,
}

impl Session {
    /// Whether the session speaks 2025-11-25, the one 2025 revision with tasks.
    pub(crate) fn has_tasks(&self) -> bool {
        self.version.as_deref() == Some(SESSION_TASKS_VERSION)
    }

    /// Whether it may be sent our requests and notifications about its tasks.
    pub(crate) fn takes_requests(&self) -> bool {
        self.has_tasks() && self.initialized
    }
}

pub(crate) fn server_info() -> Value {
    let version = super::config::version_label().unwrap_or(env!("CARGO_PKG_VERSION"));
    json!({ "name": "mcp-demo-server", "version": version })
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
        let mut result = json!({
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
        // Tasks are experimental in 2025-11-25 and absent before: declared in that one only.
        let session = Session {
            version: Some(version.to_owned()),
            initialized: false,
        };
        if session.has_tasks() {
            result["capabilities"]["tasks"] = session_tasks_capability();
        }
        lock(&self.state).session = session;
        self.respond(id, Ok(result));
        self.write_long_line_if_asked();
    }

    /// `notifications/initialized`: the session may now be sent requests, among them the input
    /// requests of its tasks (of a restarted server's tasks, too).
    pub(crate) fn on_initialized(&self) {
        let mut state = lock(&self.state);
        state.session.initialized = true;
        if state.session.has_tasks() && !state.tasks.is_empty() {
            self.wake_clock(&mut state.tasks);
        }
    }
}
