//! The actix-web glue (`mcp_supervisor::web`, feature `actix-web`) served by a real actix-web
//! server in front of real demo servers: `GET /status`, `GET /status/events`, and errors
//! answered as a gateway answers them.

use std::time::Duration;

use crate::common::{demo, kill, quick_settings, start_supervisor, tempdir, three_servers};
use actix::Addr;
use actix_web::{web, App, HttpServer};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use mcp_supervisor::model::CallToolResult;
use mcp_supervisor::web::status_scope;
use mcp_supervisor::{CallTool, Supervisor};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

/// A tool route as a service would write it: the call's `Error` answers for itself.
async fn call_tool(
    supervisor: web::Data<Addr<Supervisor>>,
    path: web::Path<(String, String)>,
    arguments: web::Json<Value>,
) -> actix_web::Result<web::Json<CallToolResult>> {
    let (server, tool) = path.into_inner();
    let call =
        CallTool::new(server, tool, arguments.into_inner()).timeout(Duration::from_millis(500));
    let answer = supervisor
        .send(call)
        .await
        .map_err(actix_web::error::ErrorServiceUnavailable)?;
    Ok(web::Json(answer?))
}

/// Serves the status scope and the tool route on a free port; returns the base URL.
fn serve(supervisor: Addr<Supervisor>) -> String {
    let data = web::Data::new(supervisor.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/tools/{server}/{tool}", web::post().to(call_tool))
            .service(status_scope(supervisor.clone()))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .expect("a free port");
    let url = format!("http://{}", server.addrs()[0]);
    actix_rt::spawn(server.run());
    url
}

async fn get_json(url: &str) -> (u16, Value) {
    let mut answer = awc::Client::new().get(url).send().await.expect("an answer");
    let body = answer.json::<Value>().limit(1 << 22).await.expect("JSON");
    (answer.status().as_u16(), body)
}

#[actix::test]
async fn status_lists_every_server_as_json() {
    let (sup, _events, _dir) = three_servers().await;
    let url = serve(sup);
    let (code, all) = get_json(&format!("{url}/status")).await;
    assert_eq!(code, 200);
    let names: Vec<_> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("alpha"), json!("beta"), json!("broken")],
        "sorted by name"
    );
    let alpha = &all[0];
    assert_eq!(alpha["state"], json!({"name": "ready"}));
    assert_eq!(alpha["transport"], "stdio");
    assert_eq!(alpha["tool_count"], 10);
    assert_eq!(alpha["tools"].as_array().unwrap().len(), 10);
    assert!(alpha["pid"].as_u64().is_some_and(|p| p > 0), "{alpha}");
    assert!(alpha["in_state_for_ms"].as_u64().is_some(), "{alpha}");
    assert_eq!(alpha["counters"]["reconnects"], 0);
    let broken = &all[2];
    assert_eq!(broken["state"]["name"], "failed");
    assert_eq!(
        broken["state"]["revive_in_ms"],
        Value::Null,
        "revival is off"
    );
    let error = &broken["last_error"];
    assert_eq!(error["server"], "broken");
    let tail = error["stderr_tail"].as_array().expect("the stderr tail");
    assert!(
        tail.iter().any(|l| l == "<img src=x onerror=alert(1)>"),
        "the text as the server wrote it; the page shows it as text: {error}"
    );
}

/// Reads Server-Sent Events off a response body.
struct Sse<S> {
    body: S,
    buffer: Vec<u8>,
}

impl<S, E> Sse<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Debug,
{
    /// The next event (comments skipped): its name and its data as JSON.
    async fn next(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let block = String::from_utf8(block).expect("UTF-8");
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::to_owned)
                };
                if let (Some(name), Some(data)) = (field("event: "), field("data: ")) {
                    return (name, serde_json::from_str(&data).expect("JSON data"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.body.next())
                .await
                .expect("an event within 30 s")
                .expect("the stream stays open")
                .expect("no payload error");
            self.buffer.extend_from_slice(&chunk);
            assert!(self.buffer.len() < 1 << 22, "an event of bounded size");
        }
    }

    /// Skips events until `server` enters the state named `state`.
    async fn until_state(&mut self, server: &str, state: &str) -> Value {
        loop {
            let (name, data) = self.next().await;
            if name == "state_changed" && data["server"] == server && data["state"]["name"] == state
            {
                return data;
            }
        }
    }
}

#[actix::test]
async fn the_event_stream_opens_with_a_snapshot_and_follows_every_change() {
    let (sup, _events, _dir) = three_servers().await;
    let url = serve(sup);
    let answer = awc::Client::new()
        .get(format!("{url}/status/events"))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(
        answer.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut sse = Sse {
        body: answer,
        buffer: Vec::new(),
    };
    let (name, snapshot) = sse.next().await;
    assert_eq!(name, "status");
    assert_eq!(snapshot.as_array().unwrap().len(), 3);
    let pid = snapshot[0]["pid"].as_u64().expect("alpha's pid") as u32;

    kill(pid, Signal::SIGKILL);
    let lost = sse.until_state("alpha", "reconnecting").await;
    assert_eq!(lost["type"], "state_changed");
    assert_eq!(lost["state"]["attempt"], 1);
    assert!(
        lost["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{lost}"
    );
    sse.until_state("alpha", "ready").await;

    let (_, alpha) = get_json(&format!("{url}/status")).await;
    let alpha = &alpha[0];
    assert_eq!(alpha["counters"]["reconnects"], 1);
    assert_ne!(alpha["pid"], json!(pid), "a new process");
    let exit = alpha["last_error"]["exit_status"]
        .as_str()
        .unwrap_or_default();
    assert!(exit.contains("SIGKILL"), "{alpha}");
}

#[actix::test]
async fn call_errors_answer_as_a_gateway_does() {
    let dir = tempdir();
    let (sup, events) = start_supervisor(quick_settings(), [demo("demo", dir.path())]);
    events.ready("demo", 1).await;
    let url = serve(sup);
    let client = awc::Client::new();
    let post = |path: &str, body: Value| {
        let request = client.post(format!("{url}{path}"));
        async move {
            let mut answer = request.send_json(&body).await.expect("an answer");
            let json = answer.json::<Value>().await.expect("JSON");
            (answer.status().as_u16(), json)
        }
    };
    let (code, sum) = post("/tools/demo/add", json!({"a": 2, "b": 3})).await;
    assert_eq!((code, &sum["structuredContent"]), (200, &json!({"sum": 5})));
    let (code, missing) = post("/tools/nope/add", json!({})).await;
    assert_eq!(code, 404);
    assert_eq!(missing["code"], "server_not_found");
    assert_eq!(missing["server"], "nope");
    let (code, late) = post("/tools/demo/hang", json!({})).await;
    assert_eq!(code, 504);
    assert_eq!(late["code"], "timeout");
    assert_eq!(late["method"], "tools/call");
}
