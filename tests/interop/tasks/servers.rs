//! The two task servers and what they keep their tasks in: how each is started over stdio (the
//! supervisor's child) or Streamable HTTP (the test's child, which outlives a client process),
//! and the Redis server that fastmcp-tasks' Docket backend keeps tasks in when they are to
//! outlive the server process.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use mcp_supervisor::ServerConfig;

use crate::common::interop::*;

/// The name the supervisor knows the server by.
pub const NAME: &str = "tasks";

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pkg {
    /// `tasks_ts_server.mjs`: the TypeScript SDK v2 server with `@modelcontextprotocol/ext-tasks`
    /// 0.2.2's V2 wire schemas; its task table is the script's own (files in `TASKS_DIR`).
    Ts,
    /// `tasks_py_server.py`: FastMCP 4.1.4 with `fastmcp-tasks` 4.1.4 (tasks in Docket).
    Py,
}

/// Where the server keeps its tasks.
#[derive(Debug, Clone)]
pub enum Keep {
    /// In the server process: lost with it.
    Memory,
    /// Somewhere that outlives it: the TypeScript server's `TASKS_DIR`, or the Redis server at
    /// this URL for fastmcp-tasks.
    Durable(String),
}

impl Pkg {
    pub fn label(self) -> &'static str {
        match self {
            Pkg::Ts => "ext-tasks 0.2.2 (TS SDK v2 server)",
            Pkg::Py => "fastmcp-tasks 4.1.4",
        }
    }

    fn program(self) -> (String, PathBuf) {
        let dir = interop_dir();
        match self {
            Pkg::Ts => ("node".into(), dir.join("tasks_ts_server.mjs")),
            Pkg::Py => (
                dir.join(".venv/bin/python").display().to_string(),
                dir.join("tasks_py_server.py"),
            ),
        }
    }

    /// The variables that say where its tasks are, and where a Python job's runs are counted.
    fn env(self, keep: &Keep, runs: &Path) -> Vec<(&'static str, String)> {
        let mut env = vec![("TASKS_RUNS_FILE", runs.display().to_string())];
        match (self, keep) {
            (Pkg::Ts, Keep::Durable(dir)) => env.push(("TASKS_DIR", dir.clone())),
            (Pkg::Py, Keep::Durable(url)) => env.push(("FASTMCP_DOCKET_URL", url.clone())),
            (Pkg::Py, Keep::Memory) => env.push(("FASTMCP_DOCKET_URL", "memory://".into())),
            (Pkg::Ts, Keep::Memory) => {}
        }
        env
    }

    /// The server over stdio, as the supervisor's child.
    pub fn stdio(self, keep: &Keep, runs: &Path) -> ServerConfig {
        let (program, script) = self.program();
        let mut config =
            ServerConfig::stdio(NAME, program).args([script.display().to_string(), "stdio".into()]);
        for (key, value) in self.env(keep, runs) {
            config = config.env(key, value);
        }
        config
    }

    /// The server over Streamable HTTP on a free port, as the test's child (it outlives a
    /// client process); its tasks in memory.
    pub async fn http(self, runs: &Path) -> Child {
        let (program, script) = self.program();
        let port = free_port();
        let mut command = tokio::process::Command::new(program);
        command
            .arg(script)
            .args(["http", "--port", &port.to_string()])
            .envs(self.env(&Keep::Memory, runs));
        Child::spawn(command, port, format!("http://127.0.0.1:{port}/mcp")).await
    }
}

/// A process the test owns (killed when dropped), and the URL it serves.
pub struct Child {
    url: String,
    _child: tokio::process::Child,
}

impl Child {
    /// Starts `command` and waits until it listens on `port`.
    async fn spawn(mut command: tokio::process::Command, port: u16, url: String) -> Child {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        listening(port).await;
        Child { url, _child: child }
    }

    /// Where it serves.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A Redis server of its own (Debian's `redis-server`, which `.ci/interop` installs), on a
/// free port, keeping nothing on disk: the store that outlives the MCP server process.
pub async fn redis() -> Child {
    let port = free_port();
    let mut command = tokio::process::Command::new("redis-server");
    command.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]);
    Child::spawn(command, port, format!("redis://127.0.0.1:{port}/0")).await
}
