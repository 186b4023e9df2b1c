//! The demo server spoken to over raw pipes: JSON lines in, JSON lines out, no client library in
//! between, so these tests see exactly what the server writes.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{json, Value};

/// A generous bound on any one wait: only a hang reaches it.
const WAIT: Duration = Duration::from_secs(10);

/// The `_meta` of a modern request, as the 2026-07-28 revision requires it.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
        "io.modelcontextprotocol/clientInfo": { "name": "eras-test", "version": "1" },
    })
}

/// `params` with the modern `_meta` added.
pub fn modern(mut params: Value) -> Value {
    params["_meta"] = meta();
    params
}

/// A running demo server with its own event log and stderr file.
pub struct Demo {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Messages read while looking for another one, in order.
    backlog: VecDeque<String>,
    log: PathBuf,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Demo {
    /// Starts the demo server with these extra environment variables.
    pub fn start(env: &[(&str, &str)]) -> Demo {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("events.log");
        let stderr = dir.path().join("stderr.log");
        let stderr_file = std::fs::File::create(&stderr).expect("the stderr file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-demo-server"))
            .env("DEMO_EVENT_LOG", &log)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr_file)
            .spawn()
            .expect("the demo server starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Demo {
            child,
            stdin,
            lines,
            backlog: VecDeque::new(),
            log,
            stderr,
            _dir: dir,
        }
    }

    /// Kills the server with SIGKILL (`Child::kill`) and reaps it: nothing it had not written
    /// survives.
    pub fn kill(self) {
        drop(self);
    }

    pub fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("the demo server reads stdin");
        self.stdin.flush().expect("flush");
    }

    pub fn send_request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    }

    pub fn cancel(&mut self, id: Value) {
        let params = json!({ "requestId": id });
        self.send(
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": params }),
        );
    }

    /// The next line the server writes (from the backlog first), raw.
    pub fn next_line(&mut self) -> String {
        if let Some(line) = self.backlog.pop_front() {
            return line;
        }
        match self.lines.recv_timeout(WAIT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("the demo server wrote nothing in {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the demo server closed stdout"),
        }
    }

    /// The next message the server writes.
    pub fn next(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The first message (in order, from the backlog first) that `pick` accepts; the others
    /// are kept for later, in order.
    pub fn wait_for(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let mut skipped = VecDeque::new();
        let found = loop {
            let line = match self.backlog.pop_front() {
                Some(line) => line,
                None => match self.lines.recv_timeout(WAIT) {
                    Ok(line) => line,
                    Err(_) => panic!("no {what} within {WAIT:?}; saw {skipped:?}"),
                },
            };
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if pick(&message) {
                break message;
            }
            skipped.push_back(line);
        };
        skipped.extend(self.backlog.drain(..));
        self.backlog = skipped;
        found
    }

    /// The response to request `id`, whatever came before it (kept for later).
    pub fn response(&mut self, id: &Value) -> Value {
        let what = format!("response to {id}");
        self.wait_for(&what, |m| {
            m.get("id") == Some(id) && m.get("method").is_none()
        })
    }

    /// Sends a request and returns its response.
    pub fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_request(id.clone(), method, params);
        self.response(&id)
    }

    /// The `result` of a request, which must succeed.
    pub fn result(&mut self, id: Value, method: &str, params: Value) -> Value {
        let response = self.request(id, method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// The `error` of a request, which must fail.
    pub fn error(&mut self, id: Value, method: &str, params: Value) -> Value {
        let response = self.request(id, method, params);
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!("{method} succeeded: {response}"),
        }
    }

    /// A legacy session: `initialize` (2025-11-25) and `notifications/initialized`.
    pub fn initialize(&mut self, id: Value) -> Value {
        let params = json!({ "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} },
                             "clientInfo": { "name": "eras-test", "version": "1" } });
        let result = self.result(id, "initialize", params);
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        result
    }

    /// The event log's lines so far.
    pub fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The server's stderr lines so far (it writes each line whole, unbuffered).
    pub fn stderr(&self) -> Vec<String> {
        std::fs::read_to_string(&self.stderr)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Asserts that the log has `line`.
    pub fn assert_logged(&self, line: &str) {
        let log = self.log();
        assert!(log.iter().any(|l| l == line), "no {line:?} in {log:#?}");
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result's first content block.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
