//! The servers of the modern-era interop suite, and how each is started, killed and brought
//! back: our TypeScript SDK v2 server script (`tests/interop/ts_server.mjs`) in its modes, our
//! Python SDK 2.3 server (`tests/interop/py_server.py`), and `mcp-server-time` from PyPI. A
//! stdio server is the supervisor's child (killed by pid, respawned by the supervisor); an HTTP
//! server is the test's child, killed and started again on the same port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::Addr;
use mcp_supervisor::protocol::era::{Era, ProtocolChoice};
use mcp_supervisor::{CallTool, ServerConfig, Supervisor};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::common::interop::*;
use crate::common::*;

/// Which server program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `ts_server.mjs` on `@modelcontextprotocol/server` 2.4.0.
    Ts,
    /// `py_server.py` on `mcp` 2.3.0 (dual-era; the SDK has no switch for one era alone).
    Py,
    /// `mcp-server-time` 2026.10.19 (dual-era, on `mcp` 2.3).
    Time,
}

/// How the TypeScript server is started (the Python ones are always dual-era).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `legacy: 'reject'`.
    ModernOnly,
    /// The SDK's default: both eras.
    Dual,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::ModernOnly => "modern",
            Mode::Dual => "dual",
        }
    }
}

/// The transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Stdio,
    Http,
}

/// One server in one mode, spoken to with one client setting, and the era that must come of it.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// Its name in the results table.
    pub label: &'static str,
    pub sdk: Sdk,
    pub via: Via,
    pub mode: Mode,
    /// The client's `protocol` setting.
    pub client: ProtocolChoice,
    /// The era that must be negotiated.
    pub era: Era,
}

/// The name the supervisor knows the server by.
pub const NAME: &str = "peer";

/// The resource the subscription scenarios subscribe to.
pub const COUNTER: &str = "test://counter";

impl Peer {
    /// The TypeScript server in `mode`, spoken to with `auto`.
    pub const fn ts(label: &'static str, via: Via, mode: Mode) -> Peer {
        Peer {
            label,
            sdk: Sdk::Ts,
            via,
            mode,
            client: ProtocolChoice::Auto,
            era: Era::Modern,
        }
    }

    /// The Python SDK server, spoken to with `client`.
    pub const fn py(label: &'static str, via: Via, client: ProtocolChoice) -> Peer {
        Peer {
            label,
            sdk: Sdk::Py,
            via,
            mode: Mode::Dual,
            client,
            era: match client {
                ProtocolChoice::Legacy => Era::Legacy,
                _ => Era::Modern,
            },
        }
    }

    /// The same peer spoken to with the client pinned to the session era.
    pub const fn pinned_legacy(mut self, label: &'static str) -> Peer {
        self.label = label;
        self.client = ProtocolChoice::Legacy;
        self.era = Era::Legacy;
        self
    }

    /// Starts the server (HTTP) or describes it (stdio), with its counter in `dir`.
    pub async fn start(&self, dir: &Path) -> Running {
        let count = dir.join("count");
        let (config, http) = match self.via {
            Via::Stdio => (self.stdio_config(&count), None),
            Via::Http => {
                let port = free_port();
                let server = HttpServer::start(*self, port, count.clone()).await;
                let url = format!("http://127.0.0.1:{port}/mcp");
                (ServerConfig::http(NAME, url), Some(server))
            }
        };
        Running {
            config: config.protocol(self.client),
            http,
            count,
            sdk: self.sdk,
        }
    }

    fn stdio_config(&self, count: &Path) -> ServerConfig {
        let dir = interop_dir();
        let count = count.display().to_string();
        match self.sdk {
            Sdk::Ts => ServerConfig::stdio(NAME, "node")
                .args([
                    dir.join("ts_server.mjs").display().to_string(),
                    "stdio".into(),
                    self.mode.arg().into(),
                ])
                .env("TS_SERVER_COUNT_FILE", count),
            Sdk::Py => ServerConfig::stdio(NAME, python())
                .args([
                    dir.join("py_server.py").display().to_string(),
                    "stdio".into(),
                ])
                .env("PY_SERVER_COUNT_FILE", count),
            Sdk::Time => ServerConfig::stdio(
                NAME,
                dir.join(".venv/bin/mcp-server-time").display().to_string(),
            )
            .args(["--local-timezone", "UTC"]),
        }
    }

    /// A quick read-only call, and a word its answer must contain.
    pub fn echo(&self, text: &str) -> (CallTool, String) {
        match self.sdk {
            Sdk::Ts | Sdk::Py => (
                CallTool::new(NAME, "echo", json!({ "text": text })),
                text.to_owned(),
            ),
            Sdk::Time => (
                CallTool::new(
                    NAME,
                    "convert_time",
                    json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
                ),
                "21:00".to_owned(),
            ),
        }
    }

    /// The slow tool: `steps` progress notifications over `seconds`.
    pub fn slow(&self, seconds: f64, steps: u32) -> CallTool {
        CallTool::new(NAME, "slow", json!({"seconds": seconds, "steps": steps}))
    }

    /// The non-idempotent tool, holding its answer back for `hold` after its effect.
    pub fn increment_holding(&self, hold: Duration) -> CallTool {
        let args = match self.sdk {
            Sdk::Py => json!({ "hold_seconds": hold.as_secs_f64() }),
            _ => json!({ "hold_ms": hold.as_millis() as u64 }),
        };
        CallTool::new(NAME, "increment", args)
    }

    /// The tool that sends `resources/updated` for the counter.
    pub fn touch(&self) -> CallTool {
        let tool = match self.sdk {
            Sdk::Py => "touch_resource",
            _ => "touch",
        };
        CallTool::new(NAME, tool, json!({ "uri": COUNTER }))
    }

    /// The tool that asks the client for input.
    pub fn confirm(&self) -> CallTool {
        CallTool::new(NAME, "confirm", json!({"question": "Go ahead?"}))
    }
}

fn python() -> String {
    interop_dir().join(".venv/bin/python").display().to_string()
}

/// A started server: the supervisor's config for it, and its HTTP process if the test owns one.
pub struct Running {
    pub config: ServerConfig,
    http: Option<HttpServer>,
    count: PathBuf,
    sdk: Sdk,
}

impl Running {
    /// kill -9 the server process: a stdio server by its pid (the supervisor respawns it), an
    /// HTTP server the test started (brought back by [`Running::restart`]).
    pub async fn kill(&mut self, sup: &Addr<Supervisor>) {
        match self.http.as_mut() {
            Some(http) => http.kill().await,
            None => {
                let pid = status(sup, NAME).await.pid.expect("a server process");
                kill(pid, Signal::SIGKILL);
                assert!(gone_within(pid, Duration::from_secs(5)).await);
            }
        }
    }

    /// Starts a killed HTTP server again on the same port (nothing to do for stdio).
    pub async fn restart(&mut self) {
        if let Some(http) = self.http.as_mut() {
            http.respawn().await;
        }
    }

    /// How often the non-idempotent tool has run.
    pub fn count(&self) -> u64 {
        match self.sdk {
            // py_server.py appends a line per run.
            Sdk::Py => lines_in(&self.count) as u64,
            // ts_server.mjs renames a file holding the number over the old one.
            _ => std::fs::read_to_string(&self.count)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
        }
    }
}

/// An HTTP server process the test owns, on a fixed port.
struct HttpServer {
    peer: Peer,
    port: u16,
    count: PathBuf,
    child: Option<tokio::process::Child>,
}

impl HttpServer {
    async fn start(peer: Peer, port: u16, count: PathBuf) -> Self {
        let mut server = HttpServer {
            peer,
            port,
            count,
            child: None,
        };
        server.respawn().await;
        server
    }

    async fn respawn(&mut self) {
        let dir = interop_dir();
        let port = self.port.to_string();
        let mut command = match self.peer.sdk {
            Sdk::Ts => {
                let mut c = tokio::process::Command::new("node");
                c.arg(dir.join("ts_server.mjs"))
                    .args(["http", self.peer.mode.arg(), "--port", &port])
                    .env("TS_SERVER_COUNT_FILE", &self.count);
                c
            }
            Sdk::Py => {
                let mut c = tokio::process::Command::new(python());
                c.arg(dir.join("py_server.py"))
                    .args(["http", "--port", &port])
                    .env("PY_SERVER_COUNT_FILE", &self.count);
                c
            }
            Sdk::Time => panic!("mcp-server-time serves stdio only"),
        };
        let child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        self.child = Some(child);
        listening(self.port).await;
    }

    async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("kill -9 the HTTP server");
        }
    }
}

/// The first content block's text of a tool result, or the result as JSON.
pub fn answer_text(result: &rmcp::model::CallToolResult) -> String {
    let text = text_of(result);
    if text.is_empty() {
        serde_json::to_string(&result.content).unwrap_or_default()
    } else {
        text
    }
}

/// A `ServerRequest` handler that accepts every elicitation with `{"confirm": true}` and
/// records the methods it was asked.
pub struct Accept(pub std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl actix::Actor for Accept {
    type Context = actix::Context<Self>;
}

impl actix::Handler<mcp_supervisor::ServerRequest> for Accept {
    type Result = Result<Value, mcp_supervisor::RpcError>;
    fn handle(
        &mut self,
        request: mcp_supervisor::ServerRequest,
        _: &mut actix::Context<Self>,
    ) -> Self::Result {
        self.0.lock().unwrap().push(request.method);
        Ok(json!({"action": "accept", "content": {"confirm": true}}))
    }
}
