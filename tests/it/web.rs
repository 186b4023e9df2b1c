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

/// The scope's routes in-process, asked as if from `peer` (issue 22, item 14).
async fn ask_as(
    scope: actix_web::Scope,
    peer: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    use actix_web::body::MessageBody;
    let app = actix_web::test::init_service(App::new().service(scope)).await;
    let mut request = actix_web::test::TestRequest::get()
        .uri(path)
        .peer_addr(peer.parse().expect("a socket address"));
    for header in headers {
        request = request.insert_header(*header);
    }
    let answer = actix_web::test::call_service(&app, request.to_request()).await;
    let code = answer.status().as_u16();
    // The event stream never ends: its first chunk is the snapshot.
    let mut body = std::pin::pin!(answer.into_body());
    let chunk = futures_util::future::poll_fn(|cx| body.as_mut().poll_next(cx))
        .await
        .expect("a first chunk")
        .expect("no error");
    let text = String::from_utf8(chunk.to_vec()).expect("UTF-8");
    let json = match text.strip_prefix("event: status\ndata: ") {
        Some(data) => data.trim_end(),
        None => text.as_str(),
    };
    (code, serde_json::from_str(json).expect("JSON"))
}

/// Asserts that `view` (statuses) is the redacted one: health, no details, no server text.
fn assert_redacted(view: &Value) {
    let text = view.to_string();
    for secret in [
        "\"pid\"",
        "\"tools\"",
        "\"server_info\"",
        "stderr_tail",
        "onerror",
        "exit code",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} in the redacted view: {text}"
        );
    }
    let alpha = &view[0];
    assert_eq!(alpha["state"], json!({"name": "ready"}));
    assert_eq!(alpha["tool_count"], 10);
    assert_eq!(alpha["redacted"], true);
    assert!(alpha["counters"]["calls_ok"].is_u64(), "{alpha}");
    let broken = &view[2];
    assert_eq!(broken["state"]["name"], "failed");
    let code = json!({"code": broken["last_error"]["code"]});
    assert_eq!(broken["last_error"], code, "an error is its code only");
    assert_eq!(broken["state"]["error"], code);
}

#[actix::test]
async fn a_request_from_elsewhere_gets_the_redacted_view() {
    use mcp_supervisor::web::{status_scope_with, Visibility};
    let (sup, _events, _dir) = three_servers().await;
    let remote = "203.0.113.9:40000";
    for path in ["/status", "/status/events"] {
        let (code, view) = ask_as(status_scope(sup.clone()), remote, path, &[]).await;
        assert_eq!(code, 200, "{path}");
        assert_redacted(&view);
        // Through a proxy on this machine: redacted too.
        let forwarded = [("x-forwarded-for", "203.0.113.9")];
        let (_, view) = ask_as(
            status_scope(sup.clone()),
            "127.0.0.1:40000",
            path,
            &forwarded,
        )
        .await;
        assert_redacted(&view);
        // Redacted for everyone when the application says so.
        let scope = status_scope_with(sup.clone(), Visibility::Redacted);
        let (_, view) = ask_as(scope, "127.0.0.1:40000", path, &[]).await;
        assert_redacted(&view);
    }
}

#[actix::test]
async fn this_machine_or_an_application_that_opts_in_gets_the_full_view() {
    use mcp_supervisor::web::{status_scope_with, Visibility};
    let (sup, _events, _dir) = three_servers().await;
    for path in ["/status", "/status/events"] {
        for (scope, peer) in [
            (status_scope(sup.clone()), "127.0.0.1:40000"),
            (status_scope(sup.clone()), "[::1]:40000"),
            (
                status_scope_with(sup.clone(), Visibility::Full),
                "203.0.113.9:40000",
            ),
        ] {
            let (code, view) = ask_as(scope, peer, path, &[]).await;
            assert_eq!(code, 200);
            let alpha = &view[0];
            assert!(alpha["pid"].as_u64().is_some(), "{peer} {path}: {alpha}");
            assert_eq!(alpha["tools"].as_array().map(Vec::len), Some(10));
            assert!(alpha.get("redacted").is_none(), "{alpha}");
            let tail = &view[2]["last_error"]["stderr_tail"];
            assert!(
                tail.to_string().contains("onerror"),
                "{peer} {path}: {tail}"
            );
        }
    }
}

/// Over a real socket: the events of a stream that gets the redacted view say what happened
/// in words of the view's own, never the error's text.
#[actix::test]
async fn the_redacted_event_stream_follows_a_kill_without_server_text() {
    let (sup, _events, _dir) = three_servers().await;
    let url = serve(sup);
    let answer = awc::Client::new()
        .get(format!("{url}/status/events"))
        .insert_header(("forwarded", "for=203.0.113.9"))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("an answer");
    let mut sse = Sse {
        body: answer,
        buffer: Vec::new(),
    };
    let (name, snapshot) = sse.next().await;
    assert_eq!(name, "status");
    assert_redacted(&snapshot);
    let (_, full) = get_json(&format!("{url}/status")).await;
    let pid = full[0]["pid"]
        .as_u64()
        .expect("alpha's pid, from this machine") as u32;
    kill(pid, Signal::SIGKILL);
    let lost = sse.until_state("alpha", "reconnecting").await;
    assert_eq!(
        lost,
        json!({"type": "state_changed", "server": "alpha", "message": "Reconnecting (attempt 1)",
               "state": {"name": "reconnecting", "attempt": 1, "retry_in_ms": lost["state"]["retry_in_ms"]}})
    );
    sse.until_state("alpha", "ready").await;
}
