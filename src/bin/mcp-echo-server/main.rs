//! `mcp-echo-server`: the smallest efficient MCP server over stdio, for the overhead benchmark
//! (`cargo bench --bench overhead`). Every client the benchmark compares talks to this same
//! binary, so the differences measured are the clients' own.
//!
//! It answers `initialize`, `ping`, `tools/list` (one tool, `echo`) and `tools/call` of `echo
//! {text}` (answers `text`); notifications are read and ignored, other requests get -32601.
//!
//! Efficiency is the point, so the loop is as short as it can be: stdin is read in large chunks;
//! each complete line is answered as soon as it is parsed, into an output buffer; that buffer
//! is written to stdout (one `write` for everything answered) only when no further complete
//! line is buffered — a client that sends a burst gets its answers in a burst, and a client that
//! waits for each answer gets it at once. Only std and serde (serde_json, and
//! derive for the request's shape: strings are borrowed from the input, not copied).
//!
//! With `ECHO_TASKS=1` it is instead a server of the 2026-07-28 revision whose `task` tool is
//! answered with a task (the Tasks extension), for the benchmark's `tasks` part: see [`tasks`];
//! with `ECHO_TASKS=notify` it also tells listens of their tasks' completions.

use std::borrow::Cow;
use std::io::{self, Read, Write};

use serde::Deserialize;
use serde_json::{json, Value};

mod tasks;

/// Protocol versions we answer with as asked; anything else gets the latest.
const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const READ_CHUNK: usize = 64 * 1024;

fn main() {
    let tasks_mode = std::env::var_os("ECHO_TASKS");
    let served = match tasks_mode.as_ref().and_then(|v| v.to_str()) {
        Some("1") => tasks::serve(io::stdin().lock(), io::stdout().lock()),
        Some("notify") => tasks::serve_notifying(io::stdin().lock(), io::stdout()),
        _ => serve(io::stdin().lock(), io::stdout().lock()),
    };
    if let Err(e) = served {
        // A closed stdout (the client went away) is the usual way to end.
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("mcp-echo-server: {e}");
            std::process::exit(1);
        }
    }
}

/// Serves until stdin ends.
fn serve(mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    // `buf[start..end]` holds bytes read and not yet consumed (at most one partial line once
    // the complete ones are answered). Allocated once; grows only for lines longer than it.
    let mut buf = vec![0u8; READ_CHUNK * 2];
    let (mut start, mut end) = (0, 0);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        if start > 0 {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if buf.len() - end < READ_CHUNK {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match input.read(&mut buf[end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            // EOF: a last line without a newline is answered too.
            if start < end {
                answer(&buf[start..end], &mut out);
            }
            output.write_all(&out)?;
            return output.flush();
        }
        end += n;
        // Answer every complete line now buffered, then write all the answers at once.
        while let Some(pos) = buf[start..end].iter().position(|b| *b == b'\n') {
            answer(&buf[start..start + pos], &mut out);
            start += pos + 1;
        }
        if !out.is_empty() {
            // std's stdout (a LineWriter) writes a buffer that ends in a newline straight
            // through: one syscall for the whole batch.
            output.write_all(&out)?;
            output.flush()?;
            out.clear();
        }
    }
}

/// A request as far as we look at it: strings are borrowed from the line when they hold no
/// escapes, and nothing else is built.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(default)]
    id: Value,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// Appends the answer to one line (if it needs one) to `out`.
fn answer(line: &[u8], out: &mut Vec<u8>) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let request = match serde_json::from_slice::<Request>(line) {
        Ok(request) => request,
        Err(_) => {
            let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
            push(out, &error);
            return;
        }
    };
    if request.id.is_null() {
        return; // A notification (or a response): nothing to answer.
    }
    let id = request.id;
    let params = request.params.as_ref();
    let result = match request.method.as_deref().unwrap_or("") {
        "tools/call" => {
            // The hot path: the answer is written straight out, no JSON tree built.
            let name = params.and_then(|p| p.name.as_deref()).unwrap_or("");
            let text = params
                .and_then(|p| p.arguments.as_ref())
                .and_then(|a| a.text.as_deref());
            match (name, text) {
                ("echo", Some(text)) => {
                    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                    // Writing JSON into a Vec cannot fail.
                    let _ = serde_json::to_writer(&mut *out, &id);
                    out.extend_from_slice(
                        b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":",
                    );
                    let _ = serde_json::to_writer(&mut *out, text);
                    out.extend_from_slice(b"}],\"isError\":false}}\n");
                    return;
                }
                ("echo", None) => Err((-32602, "echo needs a string `text`".to_owned())),
                _ => Err((-32602, format!("Unknown tool: {name}"))),
            }
        }
        "initialize" => {
            let asked = params.and_then(|p| p.protocol_version.as_deref());
            let version = asked
                .filter(|v| SUPPORTED_VERSIONS.contains(v))
                .unwrap_or(SUPPORTED_VERSIONS[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-echo-server", "version": env!("CARGO_PKG_VERSION")},
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": [{
            "name": "echo",
            "description": "Answers its text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "annotations": {"readOnlyHint": true},
        }]})),
        "" => Err((-32600, "Invalid Request".to_owned())),
        other => Err((-32601, format!("Method not found: {other}"))),
    };
    let response = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    push(out, &response);
}

fn push(out: &mut Vec<u8>, message: &Value) {
    // Serializing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, message);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out).expect("serve");
        String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }

    #[test]
    fn answers_the_handshake_and_echo() {
        let got = run(concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi \"there\""}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#,
        ));
        assert_eq!(got.len(), 4);
        assert_eq!(got[0]["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(got[1]["result"]["tools"][0]["name"], "echo");
        assert_eq!(got[2]["id"], "x");
        assert_eq!(got[2]["result"]["content"][0]["text"], "hi \"there\"");
        assert_eq!(got[3]["error"]["code"], -32601);
    }
}
