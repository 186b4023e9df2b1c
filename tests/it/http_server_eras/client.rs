//! A plain HTTP client for the test server (awc, and raw TCP where the bytes matter): requests
//! built by hand, well-formed or broken on purpose, and their answers as JSON or SSE events.

use std::pin::Pin;
use std::time::Duration;

use actix_web::http::header::HeaderMap;
use awc::error::PayloadError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

pub(crate) const VERSION: &str = "2026-07-28";
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// A generous bound on waiting for one SSE event (a hang fails the test instead of blocking).
pub(crate) const EVENT_WAIT: Duration = Duration::from_secs(10);

pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>;

/// A POST to send: its headers (in order) and its JSON body.
#[derive(Clone)]
pub(crate) struct Req {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Req {
    /// A request of the session era: only the content headers.
    pub(crate) fn legacy(id: Value, method: &str, params: Value) -> Req {
        Req {
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                (
                    "Accept".into(),
                    "application/json, text/event-stream".into(),
                ),
            ],
            body: json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        }
    }

    /// A well-formed modern request: the `_meta` keys, `MCP-Protocol-Version`, `Mcp-Method`,
    /// and `Mcp-Name` (plain) where the method has one.
    pub(crate) fn modern(id: Value, method: &str, mut params: Value) -> Req {
        params["_meta"] = json!({
            META_VERSION: VERSION,
            META_CAPABILITIES: {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "eras-test", "version": "1"},
        });
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            _ => None,
        };
        let mut req = Req::legacy(id, method, params)
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            req = req.header("Mcp-Name", &name);
        }
        req
    }

    /// Sets a header (replacing one of the same name).
    pub(crate) fn header(mut self, name: &str, value: &str) -> Req {
        self = self.without(name);
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub(crate) fn without(mut self, name: &str) -> Req {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    /// Sets (`Some`) or removes (`None`) a key of `params._meta`.
    pub(crate) fn meta(mut self, key: &str, value: Option<Value>) -> Req {
        let meta = self.body["params"]["_meta"]
            .as_object_mut()
            .expect("a modern request");
        match value {
            Some(value) => meta.insert(key.to_owned(), value),
            None => meta.remove(key),
        };
        self
    }

    /// Without an id: a notification.
    pub(crate) fn notification(mut self) -> Req {
        if let Some(body) = self.body.as_object_mut() {
            body.remove("id");
        }
        self
    }

    /// Sets a key of `params`.
    pub(crate) fn param(mut self, key: &str, value: Value) -> Req {
        self.body["params"][key] = value;
        self
    }

    /// Sends it on a plain TCP connection (`Connection: close`) and reads the raw answer to
    /// its end, on a blocking thread: the bytes show whether a chunked body ended with its
    /// terminating chunk, which awc does not tell (it reads a closed connection as an end).
    pub(crate) fn send_raw(&self, port: u16) -> actix_web::rt::task::JoinHandle<Vec<u8>> {
        let body = self.body.to_string();
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        actix_web::rt::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
            tcp.set_read_timeout(Some(EVENT_WAIT))
                .expect("a read timeout");
            tcp.write_all(head.as_bytes()).expect("send");
            let mut answer = Vec::new();
            tcp.read_to_end(&mut answer)
                .expect("the answer ends in time");
            answer
        })
    }

    pub(crate) async fn send(&self, url: &str) -> Answer {
        self.send_as(url, awc::http::Method::POST).await
    }

    pub(crate) async fn send_as(&self, url: &str, method: awc::http::Method) -> Answer {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .finish();
        let mut request = client.request(method.clone(), url);
        for (name, value) in &self.headers {
            request = request.append_header((name.as_str(), value.as_str()));
        }
        let response = if method == awc::http::Method::POST {
            request.send_body(self.body.to_string()).await
        } else {
            request.send().await
        };
        let response = response.expect("the test server answers");
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: Box::pin(response),
        }
    }
}

/// A `tools/call` the modern way.
pub(crate) fn call(id: i64, tool: &str, arguments: Value) -> Req {
    Req::modern(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Body,
}

impl Answer {
    pub(crate) fn content_type(&self) -> String {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The whole body as JSON (`null` if empty).
    pub(crate) async fn json(mut self) -> Value {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.body.next().await {
            bytes.extend_from_slice(&chunk.expect("a whole body"));
        }
        if bytes.is_empty() {
            return Value::Null;
        }
        serde_json::from_slice(&bytes).expect("a JSON body")
    }

    /// The JSON-RPC response, whether it came as JSON or as the last event of an SSE stream.
    pub(crate) async fn response(self) -> Value {
        if self.content_type().starts_with("text/event-stream") {
            let mut sse = self.sse();
            let events = sse.rest().await;
            assert_eq!(sse.end, Some(End::Closed), "{}", sse.raw);
            events.last().cloned().expect("a response on the stream")
        } else {
            self.json().await
        }
    }

    pub(crate) fn sse(self) -> Sse {
        assert!(
            self.content_type().starts_with("text/event-stream"),
            "an SSE answer, not {}",
            self.content_type()
        );
        Sse {
            body: self.body,
            buf: Vec::new(),
            raw: String::new(),
            end: None,
        }
    }
}

/// How awc saw an SSE body end. A connection closed mid-body counts as `Closed` too (awc reads
/// it as the end of the body), so a cut is checked on the raw bytes ([`Req::send_raw`]).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum End {
    /// The body ended.
    Closed,
    /// awc reported a body error.
    Error,
}

/// An SSE response being read: data events as JSON, as they come.
pub(crate) struct Sse {
    pub(crate) body: Body,
    pub(crate) buf: Vec<u8>,
    /// Everything received, for assertions on the framing.
    pub(crate) raw: String,
    pub(crate) end: Option<End>,
}

impl Sse {
    /// The next data event (comments and empty data skipped); `None` once the stream ended.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..at + 2).collect();
                let event = String::from_utf8(event).expect("UTF-8 events");
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let data = data.join("\n");
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data).expect("JSON data"));
                }
                continue;
            }
            if self.end.is_some() {
                return None;
            }
            let chunk = tokio::time::timeout(EVENT_WAIT, self.body.next())
                .await
                .expect("an event or the end of the stream in time");
            match chunk {
                Some(Ok(bytes)) => {
                    self.raw.push_str(&String::from_utf8_lossy(&bytes));
                    self.buf.extend_from_slice(&bytes);
                }
                Some(Err(_)) => self.end = Some(End::Error),
                None => self.end = Some(End::Closed),
            }
        }
    }

    /// Every event until the stream ends.
    pub(crate) async fn rest(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

pub(crate) fn sentinel(text: &str) -> String {
    format!("=?base64?{}?=", STANDARD.encode(text.as_bytes()))
}

pub(crate) fn error_code(body: &Value) -> Option<i64> {
    body.pointer("/error/code").and_then(Value::as_i64)
}

pub(crate) fn text(body: &Value) -> &str {
    body.pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("a text result: {body}"))
}
