//! Streamable HTTP, serial: our runtime against a raw awc POST loop, both talking to the
//! in-tree test server on its own worker thread in the same child process, with JSON answers
//! and with SSE answers; and the report's HTTP section.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use mcp_supervisor::{CallTool, ServerConfig, Shutdown};
use serde_json::{json, Value};

use crate::echo::{check_raw_result, check_result, EchoParams, RawRequest, RawResponse, TEXT};
use crate::http_server;
use crate::report::{num, Report};
use crate::stats::{median, min, percentile, ratios};
use crate::supervised::supervise_one;
use crate::workload::serial;

/// A raw Streamable HTTP client: one awc POST per call, the answer read to its end.
struct RawHttp {
    client: awc::Client,
    url: String,
    session: String,
    next_id: Cell<u64>,
}

impl RawHttp {
    async fn start(url: &str) -> RawHttp {
        let client = awc::Client::default();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-bench", "version": "0"}}});
        let response = client
            .post(url)
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("content-type", "application/json"))
            .send_body(init.to_string())
            .await
            .expect("POST initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let raw = RawHttp {
            client,
            url: url.to_owned(),
            session,
            next_id: Cell::new(1),
        };
        let mut response = raw
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .await;
        let _ = response.body().await;
        raw
    }

    async fn post(&self, body: String) -> awc::ClientResponse {
        self.client
            .post(&self.url)
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("content-type", "application/json"))
            .insert_header(("mcp-session-id", self.session.as_str()))
            .insert_header(("mcp-protocol-version", "2025-11-25"))
            .send_body(body)
            .await
            .expect("POST")
    }

    async fn echo(&self) {
        use futures_util::StreamExt;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let body = serde_json::to_string(&RawRequest {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params: EchoParams::echo(),
        })
        .expect("serialize");
        let mut response = self.post(body).await;
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let answer: RawResponse = if sse {
            let mut buf: Vec<u8> = Vec::new();
            let mut answer = None;
            // Read until the response, like any client that wants its answer now; then on to
            // the end of the stream, which gives the connection back to the pool, as ours does.
            while answer.is_none() {
                let Some(chunk) = response.next().await else {
                    break;
                };
                buf.extend_from_slice(&chunk.expect("SSE chunk"));
                while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
                    for line in buf[..end].split(|b| *b == b'\n') {
                        if let Some(data) = line.strip_prefix(b"data: ") {
                            if data.is_empty() {
                                continue;
                            }
                            let message: RawResponse =
                                serde_json::from_slice(data).expect("SSE data is JSON-RPC");
                            if message.id == Some(id) {
                                answer = Some(message);
                            }
                        }
                    }
                    buf.drain(..end + 2);
                }
            }
            while let Some(chunk) = response.next().await {
                chunk.expect("SSE chunk");
            }
            answer.expect("the SSE stream carried the response")
        } else {
            let body = response.body().await.expect("JSON body");
            serde_json::from_slice(&body).expect("JSON-RPC body")
        };
        check_raw_result(answer.result.as_ref());
    }
}

/// The child's side: `reps` × (JSON, SSE) × (raw, ours, in alternating order), `calls` serial
/// calls each; p50 and p99 per repetition.
pub(crate) async fn child(calls: usize, reps: usize) -> Value {
    let server = http_server::TestHttpServer::start().await;
    let faults = server.faults();
    let raw = Rc::new(RawHttp::start(&server.url()).await);
    let (sup, addr) = supervise_one(ServerConfig::http("h", server.url())).await;
    let ours = move || {
        let sent = addr.send(CallTool::new("h", "echo", json!({"text": TEXT})));
        async move {
            let result = sent.await.expect("actor alive").expect("echo call");
            check_result(&result);
        }
    };
    let raw_call = move || {
        let raw = raw.clone();
        async move { raw.echo().await }
    };
    let mut out = serde_json::Map::new();
    out.insert("calls".into(), json!(calls));
    out.insert("reps".into(), json!(reps));
    let warmup = (calls / 10).max(50);
    for rep in 0..reps {
        for mode in ["json", "sse"] {
            faults.json_responses(mode == "json");
            // Alternate which client goes first.
            let order = if rep % 2 == 0 {
                ["raw", "ours"]
            } else {
                ["ours", "raw"]
            };
            for client in order {
                let lat = if client == "raw" {
                    serial(warmup, &raw_call).await;
                    serial(calls, &raw_call).await
                } else {
                    serial(warmup, &ours).await;
                    serial(calls, &ours).await
                };
                for (suffix, p) in [("p50", 0.5), ("p99", 0.99)] {
                    let key = format!("{mode}_{client}_{suffix}_us");
                    let entry = out.entry(key).or_insert_with(|| json!([]));
                    if let Value::Array(a) = entry {
                        a.push(json!(percentile(&lat, p)));
                    }
                }
                eprintln!(
                    "  http rep {rep} {mode} {client:<4} p50 {:>7.1} µs",
                    percentile(&lat, 0.5)
                );
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), sup.send(Shutdown)).await;
    server.stop().await;
    Value::Object(out)
}

/// Writes the HTTP table and its summary keys from the child's result.
pub(crate) fn report(report: &mut Report, http: &Value) {
    let hv = |key: &str| -> Vec<f64> {
        http.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect())
            .unwrap_or_default()
    };
    report.line(format!(
        "### Streamable HTTP, serial ({} calls × {} repetitions; median [best])\n",
        num(http, "calls"),
        num(http, "reps")
    ));
    report.line("| answers | raw awc p50 µs | ours p50 µs | ours p99 µs | ratio |");
    report.line("|---|---|---|---|---|");
    let mut worst = f64::NAN;
    for mode in ["json", "sse"] {
        let raw = hv(&format!("{mode}_raw_p50_us"));
        let ours = hv(&format!("{mode}_ours_p50_us"));
        let ours99 = hv(&format!("{mode}_ours_p99_us"));
        let r = ratios(&ours, &raw);
        report.line(format!(
            "| {} | {:.0} [{:.0}] | {:.0} [{:.0}] | {:.0} | {:.2}× [{:.2}×] |",
            mode.to_uppercase(),
            median(&raw),
            min(&raw),
            median(&ours),
            min(&ours),
            median(&ours99),
            median(&r),
            min(&r)
        ));
        report.put(&format!("http_{mode}_raw_p50_us"), median(&raw), 1);
        report.put(&format!("http_{mode}_ours_p50_us"), median(&ours), 1);
        report.put(
            &format!("http_{mode}_serial_p50_ratio_vs_raw"),
            median(&r),
            3,
        );
        worst = worst.max(median(&r));
    }
    report.put("http_serial_p50_ratio_vs_raw", worst, 3);
    report.line(String::new());
}
