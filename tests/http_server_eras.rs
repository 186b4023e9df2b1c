//! The in-tree HTTP test server (`tests/common/http_server/`) in both protocol eras, driven by
//! plain HTTP requests (awc), not by our client: the client's HTTP tests lean on what this
//! server answers, so its modern side (2026-07-28) is checked here on its own: the header
//! rules, `server/discover`, no sessions, listen streams, `confirm`'s rounds, and what a
//! legacy-only and a modern-only server answer to the other era.

mod common;

use std::pin::Pin;
use std::time::Duration;

use actix_web::http::header::HeaderMap;
use awc::error::PayloadError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use common::http_server::{Era, RoundAnswer, TestHttpServer, INVALID_HEADER_TOOLS};
use common::until;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

const VERSION: &str = "2026-07-28";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// A generous bound on waiting for one SSE event (a hang fails the test instead of blocking).
const EVENT_WAIT: Duration = Duration::from_secs(10);

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>;

/// A POST to send: its headers (in order) and its JSON body.
#[derive(Clone)]
struct Req {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Req {
    /// A request of the session era: only the content headers.
    fn legacy(id: Value, method: &str, params: Value) -> Req {
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
    fn modern(id: Value, method: &str, mut params: Value) -> Req {
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
    fn header(mut self, name: &str, value: &str) -> Req {
        self = self.without(name);
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn without(mut self, name: &str) -> Req {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    /// Sets (`Some`) or removes (`None`) a key of `params._meta`.
    fn meta(mut self, key: &str, value: Option<Value>) -> Req {
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
    fn notification(mut self) -> Req {
        if let Some(body) = self.body.as_object_mut() {
            body.remove("id");
        }
        self
    }

    /// Sets a key of `params`.
    fn param(mut self, key: &str, value: Value) -> Req {
        self.body["params"][key] = value;
        self
    }

    /// Sends it on a plain TCP connection (`Connection: close`) and reads the raw answer to
    /// its end, on a blocking thread: the bytes show whether a chunked body ended with its
    /// terminating chunk, which awc does not tell (it reads a closed connection as an end).
    fn send_raw(&self, port: u16) -> actix_web::rt::task::JoinHandle<Vec<u8>> {
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

    async fn send(&self, url: &str) -> Answer {
        self.send_as(url, awc::http::Method::POST).await
    }

    async fn send_as(&self, url: &str, method: awc::http::Method) -> Answer {
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
fn call(id: i64, tool: &str, arguments: Value) -> Req {
    Req::modern(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Body,
}

impl Answer {
    fn content_type(&self) -> String {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The whole body as JSON (`null` if empty).
    async fn json(mut self) -> Value {
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
    async fn response(self) -> Value {
        if self.content_type().starts_with("text/event-stream") {
            let mut sse = self.sse();
            let events = sse.rest().await;
            assert_eq!(sse.end, Some(End::Clean), "{}", sse.raw);
            events.last().cloned().expect("a response on the stream")
        } else {
            self.json().await
        }
    }

    fn sse(self) -> Sse {
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

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum End {
    Clean,
    Cut,
}

/// An SSE response being read: data events as JSON, as they come.
struct Sse {
    body: Body,
    buf: Vec<u8>,
    /// Everything received, for assertions on the framing.
    raw: String,
    end: Option<End>,
}

impl Sse {
    /// The next data event (comments and empty data skipped); `None` once the stream ended.
    async fn next(&mut self) -> Option<Value> {
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
                Some(Err(_)) => self.end = Some(End::Cut),
                None => self.end = Some(End::Clean),
            }
        }
    }

    /// Every event until the stream ends.
    async fn rest(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

fn sentinel(text: &str) -> String {
    format!("=?base64?{}?=", STANDARD.encode(text.as_bytes()))
}

fn error_code(body: &Value) -> Option<i64> {
    body.pointer("/error/code").and_then(Value::as_i64)
}

fn text(body: &Value) -> &str {
    body.pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("a text result: {body}"))
}

#[actix::test]
async fn every_header_rule_is_enforced_with_the_requests_id() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let list = Req::modern(json!("L"), "tools/list", json!({}));
    let read = Req::modern(json!(9), "resources/read", json!({"uri": "test://r"}));
    let mut twice = read.clone();
    twice
        .headers
        .push(("Mcp-Name".to_owned(), "test://r".to_owned()));
    let cases: Vec<(&str, Req, i64)> = vec![
        (
            "no MCP-Protocol-Version",
            list.clone().without("MCP-Protocol-Version"),
            -32020,
        ),
        (
            "MCP-Protocol-Version differs from _meta",
            list.clone().header("MCP-Protocol-Version", "2025-11-25"),
            -32020,
        ),
        (
            "an unsupported version",
            list.clone()
                .header("MCP-Protocol-Version", "2099-01-01")
                .meta(META_VERSION, Some(json!("2099-01-01"))),
            -32022,
        ),
        (
            "no _meta protocol version",
            list.clone().meta(META_VERSION, None),
            -32602,
        ),
        (
            "no client capabilities",
            list.clone().meta(META_CAPABILITIES, None),
            -32602,
        ),
        ("no Mcp-Method", list.clone().without("Mcp-Method"), -32020),
        (
            "Mcp-Method not the body's",
            list.clone().header("Mcp-Method", "tools/call"),
            -32020,
        ),
        (
            "Mcp-Method in another case",
            list.clone().header("Mcp-Method", "Tools/List"),
            -32020,
        ),
        ("no Mcp-Name", read.clone().without("Mcp-Name"), -32020),
        (
            "Mcp-Name not the uri",
            read.clone().header("Mcp-Name", "test://other"),
            -32020,
        ),
        (
            "Mcp-Name not the tool",
            call(3, "echo", json!({"text": "x"})).header("Mcp-Name", "counter"),
            -32020,
        ),
        ("Mcp-Name sent twice", twice, -32020),
        (
            "Mcp-Name encoded needlessly but wrongly",
            read.clone().header("Mcp-Name", &sentinel("test://s")),
            -32020,
        ),
    ];
    for (what, req, code) in cases {
        let answer = req.send(&url).await;
        assert_eq!(answer.status, 400, "{what}");
        let body = answer.json().await;
        assert_eq!(error_code(&body), Some(code), "{what}: {body}");
        assert_eq!(body["id"], req.body["id"], "{what}: the request's id");
        if code == -32022 {
            assert_eq!(body["error"]["data"]["supported"], json!([VERSION]));
            assert_eq!(body["error"]["data"]["requested"], json!("2099-01-01"));
        }
    }
    assert_eq!(server.stats().rejected(-32020), 10);
    assert_eq!(server.stats().rejected(-32602), 2);
    assert_eq!(server.stats().rejected(-32022), 1);
    assert_eq!(server.stats().tool_calls("echo"), 0, "nothing refused ran");

    // The well-formed requests pass, an encoded Mcp-Name is decoded before comparing.
    let answer = list.send(&url).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json().await["result"]["resultType"], "complete");
    let odd = "test://räksmörgås ";
    let read_odd = Req::modern(json!(10), "resources/read", json!({"uri": odd}))
        .header("Mcp-Name", &sentinel(odd));
    let body = read_odd.send(&url).await.json().await;
    assert_eq!(body["result"]["contents"][0]["uri"], odd, "{body}");
    let raw = read_odd.clone().header("Mcp-Name", "=?base64?not base64?=");
    assert_eq!(error_code(&raw.send(&url).await.json().await), Some(-32020));

    // Another supported list: 2026-07-28 is then refused with it.
    server.faults().modern_versions(&["2099-01-01"]);
    let answer = list.send(&url).await;
    assert_eq!(answer.status, 400);
    let body = answer.json().await;
    assert_eq!(body["error"]["data"]["supported"], json!(["2099-01-01"]));
    assert_eq!(body["error"]["data"]["requested"], json!(VERSION));
    server.stop().await;
}

#[actix::test]
async fn the_headers_of_every_request_are_recorded() {
    let server = TestHttpServer::start().await;
    server.faults().json_responses(true);
    call(1, "echo", json!({"text": "x"}))
        .header("Mcp-Param-Anything", "")
        .send(&server.url())
        .await
        .json()
        .await;
    let seen = server.stats().last_post("tools/call").expect("seen");
    assert!(seen.modern);
    assert_eq!(seen.http_method, "POST");
    assert_eq!(seen.id, Some(json!(1)));
    assert_eq!(seen.header("mcp-method"), Some("tools/call"));
    assert_eq!(seen.header("MCP-NAME"), Some("echo"));
    assert_eq!(seen.header("mcp-protocol-version"), Some(VERSION));
    assert_eq!(seen.header("mcp-session-id"), None);
    assert_eq!(
        seen.param_headers(),
        vec![("anything".to_owned(), String::new())],
        "an empty value is kept"
    );
    assert_eq!(seen.meta().expect("_meta")[META_VERSION], VERSION);
    let legacy = Req::legacy(
        json!(2),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    legacy.send(&server.url()).await.json().await;
    assert!(!server.stats().last_post("initialize").expect("seen").modern);
    assert_eq!(server.stats().modern_posts(), 1);
    server.stop().await;
}

#[actix::test]
async fn discover_describes_the_server_and_no_session_is_made() {
    let server = TestHttpServer::start().await;
    server.faults().discover_ttl_ms(1234);
    let url = server.url();
    let answer = Req::modern(json!(1), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(answer.status, 200);
    assert!(answer.headers.get("mcp-session-id").is_none());
    let result = answer.json().await["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([VERSION]));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["ttlMs"], 1234);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-http-server"
    );
    assert!(result.get("serverInfo").is_none(), "not a body field");
    server.faults().server_info(false);
    let result = Req::modern(json!(2), "server/discover", json!({}))
        .send(&url)
        .await
        .json()
        .await["result"]
        .clone();
    assert!(result.get("_meta").is_none(), "{result}");

    // Removed methods and unknown ones: 404 with -32601.
    for method in [
        "ping",
        "resources/subscribe",
        "logging/setLevel",
        "initialize/x",
    ] {
        let answer = Req::modern(json!(3), method, json!({})).send(&url).await;
        assert_eq!(answer.status, 404, "{method}");
        assert_eq!(error_code(&answer.json().await), Some(-32601), "{method}");
    }
    // A notification is accepted without a session.
    let note = Req::modern(json!(null), "notifications/whatever", json!({})).notification();
    assert_eq!(note.send(&url).await.status, 202);
    // No GET stream and no DELETE for the modern era, even on a dual-era server.
    let head = Req::modern(json!(4), "x", json!({}));
    assert_eq!(head.send_as(&url, awc::http::Method::GET).await.status, 405);
    assert_eq!(
        head.send_as(&url, awc::http::Method::DELETE).await.status,
        405
    );
    // A legacy GET still gets the legacy answer (no session: 400).
    let legacy = Req::legacy(json!(5), "x", json!({}));
    assert_eq!(
        legacy.send_as(&url, awc::http::Method::GET).await.status,
        400
    );
    assert_eq!(server.stats().sessions(), 0);
    assert!(server
        .stats()
        .seen()
        .iter()
        .filter(|s| s.modern)
        .all(|s| s.header("mcp-session-id").is_none()));
    server.stop().await;
}

#[actix::test]
async fn a_call_streams_progress_without_event_ids_and_a_cut_loses_it() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let slow = call(1, "slow", json!({"seconds": 0.1, "steps": 2}))
        .meta("progressToken", Some(json!("p1")));
    let mut sse = slow.send(&url).await.sse();
    let events = sse.rest().await;
    assert_eq!(sse.end, Some(End::Clean));
    assert_eq!(
        events.len(),
        3,
        "two progress notifications, then the answer"
    );
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "p1");
    assert_eq!(events[2]["result"]["resultType"], "complete");
    assert_eq!(text(&events[2]), "done");
    assert!(
        !sse.raw.lines().any(|l| l.starts_with("id:")),
        "no event ids: {}",
        sse.raw
    );

    // A cut stream: the first progress notification, then the connection drops; the tool
    // still runs to its end, nothing can resume the answer.
    server.faults().drop_sse_after(Some(1));
    let raw = call(2, "slow", json!({"seconds": 0.1, "steps": 2}))
        .meta("progressToken", Some(json!("p2")))
        .send_raw(server.port())
        .await
        .expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("notifications/progress"), "{raw}");
    assert!(!raw.contains("\"result\""), "the answer is lost: {raw}");
    assert!(!raw.ends_with("0\r\n\r\n"), "cut, not ended: {raw}");
    let stats = server.stats();
    until("the cut call's tool ends", || stats.tool_calls("slow") == 2).await;

    // JSON answers by the same switch as the legacy era.
    server.faults().json_responses(true);
    let answer = call(3, "echo", json!({"text": "plain"})).send(&url).await;
    assert!(answer.content_type().starts_with("application/json"));
    assert_eq!(text(&answer.json().await), "plain");
    server.stop().await;
}

#[actix::test]
async fn echo_region_checks_its_param_headers_and_the_lists_follow_their_switches() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let region = |id, region: &str, header: Option<&str>| {
        let req = call(id, "echo_region", json!({"region": region, "text": "hi"}));
        match header {
            Some(value) => req.header("Mcp-Param-Region", value),
            None => req,
        }
    };
    let ok = region(1, "us-west1", Some("us-west1")).send(&url).await;
    assert_eq!(text(&ok.response().await), "us-west1: hi");
    let encoded = region(2, "Région 1", Some(&sentinel("Région 1")))
        .send(&url)
        .await;
    assert_eq!(text(&encoded.response().await), "Région 1: hi");
    for (what, req) in [
        ("a wrong value", region(3, "us-west1", Some("eu-west1"))),
        ("no header", region(4, "us-west1", None)),
        ("non-ASCII sent raw", region(5, "Région", Some("Région"))),
        (
            "a header for an absent argument",
            region(6, "us", Some("us")).header("Mcp-Param-Priority", "1"),
        ),
        (
            "an integer that differs",
            call(
                7,
                "echo_region",
                json!({"region": "us", "text": "t", "priority": 5}),
            )
            .header("Mcp-Param-Region", "us")
            .header("Mcp-Param-Priority", "6"),
        ),
    ] {
        let answer = req.send(&url).await;
        assert_eq!(answer.status, 400, "{what}");
        assert_eq!(error_code(&answer.json().await), Some(-32020), "{what}");
    }
    let priority = call(
        8,
        "echo_region",
        json!({"region": "us", "text": "t", "priority": 5}),
    )
    .header("Mcp-Param-Region", "us")
    .header("Mcp-Param-Priority", "5");
    assert_eq!(text(&priority.send(&url).await.response().await), "us: t");
    assert_eq!(server.stats().tool_calls("echo_region"), 3);

    let names = |body: Value| -> Vec<String> {
        body["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let list = Req::modern(json!(9), "tools/list", json!({}));
    let listed = list.send(&url).await.json().await;
    assert_eq!(
        names(listed.clone()),
        ["echo", "slow", "counter", "notify_resource"],
        "by default both eras list the same tools"
    );
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["cacheScope"], "private");
    assert_eq!(listed["result"]["ttlMs"], 0);
    server.faults().modern_tools(true);
    server.faults().invalid_header_tools(true);
    let listed = names(list.send(&url).await.json().await);
    assert_eq!(listed.len(), 4 + 2 + INVALID_HEADER_TOOLS.len());
    assert_eq!(&listed[4..6], ["echo_region", "confirm"]);
    assert_eq!(&listed[6..], INVALID_HEADER_TOOLS);
    server.stop().await;
}

#[actix::test]
async fn a_listen_is_acknowledged_carries_its_notifications_and_ends_gracefully() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let stats = server.stats();
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourceSubscriptions": ["test://r"],
    });
    let listen = Req::modern(
        json!("L1"),
        "subscriptions/listen",
        json!({"notifications": filter}),
    );
    let answer = listen.send(&url).await;
    assert_eq!(answer.status, 200);
    let mut sse = answer.sse();
    let ack = sse.next().await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"]}),
        "prompts are not honoured: the server has no prompts"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(stats.open_listens(), 1);

    // A modern notify_resource reaches the listen; an unsubscribed uri does not (the
    // tools_changed after it is the next event).
    let notify = |id, uri: &str| call(id, "notify_resource", json!({"uri": uri}));
    notify(2, "test://other").send(&url).await.response().await;
    notify(3, "test://r").send(&url).await.response().await;
    let updated = sse.next().await.expect("the update");
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://r");
    assert_eq!(updated["params"]["_meta"][SUBSCRIPTION_ID], "L1");
    server.faults().tools_changed();
    let changed = sse.next().await.expect("list_changed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], "L1");

    // The server ends it: the listen's result, then the end of the stream.
    server.faults().end_listens();
    let end = sse.next().await.expect("the listen's result");
    assert_eq!(end["id"], "L1");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(sse.next().await, None);
    assert_eq!(sse.end, Some(End::Clean));
    assert_eq!(stats.open_listens(), 0);

    // A numeric id stays a number; a listen ends by itself after its lifetime; one the client
    // closes stops counting as open.
    server.faults().end_listens_after(Some(50));
    let numbered = Req::modern(
        json!(7),
        "subscriptions/listen",
        json!({"notifications": {}}),
    );
    let mut sse = numbered.send(&url).await.sse();
    let ack = sse.next().await.expect("ack");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);
    assert_eq!(ack["params"]["notifications"], json!({}));
    let end = sse.next().await.expect("the result after the lifetime");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], 7);
    assert_eq!(sse.next().await, None);
    // On the wire: the result, then the terminating chunk.
    let raw = numbered
        .send_raw(server.port())
        .await
        .expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("\"result\""), "{raw}");
    assert!(raw.ends_with("\r\n0\r\n\r\n"), "a clean end: {raw}");
    server.faults().end_listens_after(None);
    let mut sse = listen.send(&url).await.sse();
    sse.next().await.expect("ack");
    until("one open listen", || stats.open_listens() == 1).await;
    drop(sse);
    until("the closed listen is gone", || stats.open_listens() == 0).await;
    // A cut listen ends without a result or the terminating chunk.
    let raw = listen.send_raw(server.port());
    until("the raw listen is open", || stats.open_listens() == 1).await;
    server.faults().cut_listens();
    let raw = raw.await.expect("the raw answer");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains("acknowledged"), "{raw}");
    assert!(!raw.contains("\"result\""), "{raw}");
    assert!(!raw.ends_with("0\r\n\r\n"), "cut, not ended: {raw}");
    assert_eq!(stats.listens_opened(), 5);

    // An invalid filter is refused.
    let bad = Req::modern(
        json!(8),
        "subscriptions/listen",
        json!({"notifications": 1}),
    );
    assert_eq!(error_code(&bad.send(&url).await.json().await), Some(-32602));
    server.stop().await;
}

#[actix::test]
async fn confirm_completes_only_with_the_verbatim_state() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let confirm = |id| call(id, "confirm", json!({}));
    let first = confirm(1).send(&url).await.response().await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["confirm"],
        json!({"method": "elicitation/create", "params": {
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        }})
    );
    let state = result["requestState"].as_str().expect("a state").to_owned();
    let accept = json!({"confirm": {"action": "accept", "content": {"ok": true}}});

    // A state re-serialized (parsed as the JSON it looks like, written back) is not the state.
    let reserialized = serde_json::from_str::<Value>(&state)
        .expect("the state looks like JSON")
        .to_string();
    assert_ne!(reserialized, state);
    for (what, req) in [
        (
            "a re-serialized state",
            confirm(2)
                .param("inputResponses", accept.clone())
                .param("requestState", json!(reserialized)),
        ),
        (
            "responses without a state",
            confirm(3).param("inputResponses", accept.clone()),
        ),
        (
            "a state without the responses asked for",
            confirm(4).param("requestState", json!(state)),
        ),
    ] {
        let body = req.send(&url).await.response().await;
        assert_eq!(error_code(&body), Some(-32602), "{what}: {body}");
    }
    let done = confirm(5)
        .param("inputResponses", accept.clone())
        .param("requestState", json!(state))
        .send(&url)
        .await
        .response()
        .await;
    assert_eq!(text(&done), "confirmed: true");
    assert_eq!(done["result"]["resultType"], "complete");
    let rounds = server.stats().rounds();
    let summary: Vec<(Value, bool, RoundAnswer)> = rounds
        .iter()
        .map(|r| (r.id.clone(), r.request_state.is_some(), r.answer))
        .collect();
    use RoundAnswer::*;
    assert_eq!(
        summary,
        [
            (json!(1), false, InputRequired),
            (json!(2), true, Rejected),
            (json!(3), false, Rejected),
            (json!(4), true, Rejected),
            (json!(5), true, Complete),
        ]
    );
    assert_eq!(rounds[4].request_state.as_deref(), Some(state.as_str()));
    assert_eq!(server.stats().tool_calls("confirm"), 1);

    // Load shedding first, then two asks; declining ends it.
    server.faults().confirm_state_only(1);
    server.faults().confirm_rounds(2);
    let mut req = confirm(10);
    let mut answers = Vec::new();
    let last = loop {
        let body = req.send(&url).await.response().await;
        let result = body["result"].clone();
        if result["resultType"] != "input_required" {
            break body;
        }
        answers.push(result.get("inputRequests").is_some());
        let state = result["requestState"].clone();
        req = confirm(11 + answers.len() as i64).param("requestState", state);
        if result.get("inputRequests").is_some() {
            let decline = json!({"confirm": {"action": "decline"}});
            req = req.param("inputResponses", decline);
        }
        assert!(answers.len() < 10, "the flow ends");
    };
    assert_eq!(answers, [false, true, true], "state only, then two asks");
    assert_eq!(text(&last), "not confirmed: decline");

    // Without the elicitation capability the server does not ask: -32021.
    let blind = confirm(20).meta(META_CAPABILITIES, Some(json!({})));
    let answer = blind.send(&url).await;
    assert_eq!(answer.status, 400);
    let body = answer.json().await;
    assert_eq!(error_code(&body), Some(-32021));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    // A state on a tool that asked for nothing has leaked from another flow.
    let leaked = call(21, "echo", json!({"text": "x"})).param("requestState", json!(state));
    let body = leaked.send(&url).await.response().await;
    assert_eq!(error_code(&body), Some(-32602));
    server.stop().await;
}

#[actix::test]
async fn a_legacy_only_server_answers_a_modern_post_as_a_ts_v1_server() {
    let server = TestHttpServer::start_with(Era::Legacy).await;
    let url = server.url();
    let answer = Req::modern(json!(1), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json().await,
        json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32000, "message": "Bad Request: Server not initialized",
        }})
    );
    // Only the envelope, no version header: the same.
    let enveloped = Req::modern(json!(2), "tools/list", json!({})).without("MCP-Protocol-Version");
    assert_eq!(
        error_code(&enveloped.send(&url).await.json().await),
        Some(-32000)
    );
    // A GET with the modern version header gets the legacy answer.
    let head = Req::modern(json!(3), "x", json!({}));
    assert_eq!(head.send_as(&url, awc::http::Method::GET).await.status, 400);
    // initialize works as ever.
    let init = Req::legacy(
        json!(4),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    assert!(answer.headers.get("mcp-session-id").is_some());
    assert_eq!(
        answer.json().await["result"]["protocolVersion"],
        "2025-11-25"
    );
    assert_eq!(server.stats().modern_posts(), 0);
    server.stop().await;
}

#[actix::test]
async fn a_modern_only_server_refuses_initialize_and_every_legacy_request() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let url = server.url();
    let init = Req::legacy(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    assert_eq!(answer.status, 400);
    assert!(answer.headers.get("mcp-session-id").is_none());
    let body = answer.json().await;
    assert_eq!(body["id"], 1);
    assert_eq!(error_code(&body), Some(-32022));
    assert_eq!(
        body["error"]["data"],
        json!({"supported": [VERSION], "requested": "2025-11-25"})
    );
    let list = Req::legacy(json!(2), "tools/list", json!({}))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", "made-up");
    assert_eq!(
        error_code(&list.send(&url).await.json().await),
        Some(-32022)
    );
    let note = Req::legacy(json!(null), "notifications/initialized", json!({})).notification();
    assert_eq!(note.send(&url).await.status, 202);
    for method in [awc::http::Method::GET, awc::http::Method::DELETE] {
        let answer = Req::legacy(json!(3), "x", json!({}))
            .send_as(&url, method)
            .await;
        assert_eq!(answer.status, 405);
    }
    let discover = Req::modern(json!(4), "server/discover", json!({}))
        .send(&url)
        .await;
    assert_eq!(discover.status, 200);
    assert_eq!(server.stats().sessions(), 0);
    server.stop().await;
}

#[actix::test]
async fn a_dual_era_server_decides_per_request_and_can_be_upgraded_at_run_time() {
    let server = TestHttpServer::start().await;
    let url = server.url();
    let init = Req::legacy(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    let answer = init.send(&url).await;
    let session = answer
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let legacy_list = Req::legacy(json!(2), "tools/list", json!({}))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &session);
    assert_eq!(
        legacy_list.send(&url).await.json().await["result"]["tools"][0]["name"],
        "echo"
    );
    let modern_list = Req::modern(json!(3), "tools/list", json!({}));
    let body = modern_list.send(&url).await.json().await;
    assert_eq!(body["result"]["resultType"], "complete");
    // A legacy GET stream is open while the server is upgraded: the session goes, its stream
    // ends, and the next legacy request is refused the modern-only way.
    let get = Req::legacy(json!(4), "x", json!({}))
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session);
    let mut stream = get.send_as(&url, awc::http::Method::GET).await.sse();
    let stats = server.stats();
    until("the GET stream is open", || stats.gets() == 1).await;
    server.faults().era(Era::Modern);
    assert_eq!(stream.rest().await, Vec::<Value>::new());
    assert_eq!(server.stats().sessions(), 0);
    let body = legacy_list.send(&url).await.json().await;
    assert_eq!(error_code(&body), Some(-32022));
    assert_eq!(modern_list.send(&url).await.status, 200);
    server.stop().await;
}
