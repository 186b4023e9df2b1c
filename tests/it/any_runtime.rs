//! The supervisor from plain tokio, with no actix anywhere in the caller: [`McpClient`] runs an
//! actix system of its own and its methods work from any executor and thread; starting the
//! `Supervisor` itself there is a typed error, never a panic.

use std::time::Duration;

use crate::common::*;
use mcp_supervisor::*;
use serde_json::json;

/// Waits on a client's event stream for `server` to be Ready.
async fn ready(events: &mut EventStream, server: &str) {
    let wait = async {
        while let Some(event) = events.next().await {
            if let ServerEvent::StateChanged {
                server: s,
                state: ServerState::Ready,
                ..
            } = &event
            {
                if s == server {
                    return;
                }
            }
        }
        panic!("the event stream ended before {server} was Ready");
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("{server} was not Ready within 10 s"));
}

/// A client of a supervisor of one server, with its events from the start.
fn start_one(config: ServerConfig) -> (McpClient, EventStream) {
    McpClient::start_with_events(
        Supervisor::builder()
            .settings(quick_settings())
            .server(config),
    )
    .expect("started")
}

fn echo_text(result: &model::CallToolResult) -> String {
    serde_json::to_value(&result.content).expect("content")[0]["text"]
        .as_str()
        .expect("a text content")
        .to_owned()
}

#[tokio::test]
async fn starting_the_supervisor_without_an_actix_system_is_an_error_not_a_panic() {
    let dir = tempdir();
    let err = Supervisor::builder()
        .server(demo("demo", dir.path()))
        .start()
        .expect_err("no actix system runs here");
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(matches!(err, Error::Runtime { .. }), "{err:?}");
    assert!(err.to_string().contains("McpClient"), "{err}");
}

#[tokio::test]
async fn a_client_calls_lists_and_shuts_down_under_plain_tokio() {
    let dir = tempdir();
    let (client, mut events) = start_one(demo("demo", dir.path()));
    ready(&mut events, "demo").await;

    let result = client
        .call_tool("demo", "echo", json!({"text": "from tokio"}))
        .await
        .expect("echo");
    assert_eq!(echo_text(&result), "from tokio");
    // Any typed call, with its options.
    let listed = client
        .call(ListTools::new("demo").timeout(Duration::from_secs(5)))
        .await
        .expect("tools/list");
    assert!(listed.tools.iter().any(|t| t.name == "echo"));
    let cached = client.tools("demo").await.expect("cached tools");
    assert!(cached.iter().any(|t| t.name == "add"));
    let statuses = client.status().await.expect("status");
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, ServerState::Ready);
    let pid = statuses[0].pid.expect("a stdio server has a pid");
    let missing = client.status_of("nope").await.expect_err("no such server");
    assert_eq!(missing.kind(), ErrorKind::ServerNotFound);

    client.shutdown().await;
    assert!(!is_running(pid), "the server's process outlived shutdown");
    // The stream ends with the supervisor, after its last word: demo's Stopped.
    let last = tokio::time::timeout(Duration::from_secs(5), async {
        let mut last = None;
        while let Some(event) = events.next().await {
            last = Some(event);
        }
        last
    })
    .await
    .expect("the event stream ended");
    assert!(
        matches!(
            &last,
            Some(ServerEvent::StateChanged {
                state: ServerState::Stopped,
                ..
            })
        ),
        "{last:?}"
    );
    let after = client
        .call_tool("demo", "echo", json!({"text": "late"}))
        .await
        .expect_err("shut down");
    assert_eq!(after.kind(), ErrorKind::Stopped);
    let after = client.status().await.expect_err("shut down");
    assert_eq!(after.kind(), ErrorKind::Stopped);
}

#[tokio::test]
async fn a_client_is_shared_by_threads_with_runtimes_of_their_own() {
    let dir = tempdir();
    let (client, mut events) = start_one(demo("demo", dir.path()));
    ready(&mut events, "demo").await;
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async move {
                    let text = format!("thread {i}");
                    let result = client
                        .call_tool("demo", "echo", json!({ "text": text }))
                        .await
                        .expect("echo");
                    assert_eq!(echo_text(&result), text);
                })
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("no thread panicked");
    }
    client.shutdown().await;
}

#[tokio::test]
async fn events_subscribed_later_see_what_follows_and_servers_added_at_run_time() {
    let dir = tempdir();
    let client =
        McpClient::start(Supervisor::builder().settings(quick_settings())).expect("started");
    let mut events = client.events().await.expect("subscribed");
    client
        .add_server(demo("late", dir.path()))
        .await
        .expect("added");
    ready(&mut events, "late").await;
    client.remove_server("late").await.expect("removed");
    assert!(client.status().await.expect("status").is_empty());
    client.shutdown().await;
}

#[tokio::test]
async fn dropping_the_last_client_stops_its_servers() {
    let dir = tempdir();
    let (client, mut events) = start_one(demo("demo", dir.path()));
    ready(&mut events, "demo").await;
    let pid = client.status().await.expect("status")[0]
        .pid
        .expect("a pid");
    let clone = client.clone();
    drop(client);
    let echo = clone
        .call_tool("demo", "echo", json!({"text": "still held"}))
        .await;
    assert_eq!(
        echo_text(&echo.expect("a clone still holds the supervisor")),
        "still held"
    );
    drop(clone);
    // The stream ends once the supervisor has stopped every server.
    tokio::time::timeout(Duration::from_secs(10), async {
        while events.next().await.is_some() {}
    })
    .await
    .expect("the event stream ended");
    assert!(
        gone_within(pid, Duration::from_secs(5)).await,
        "the server outlived the last handle"
    );
}

#[actix::test]
async fn inside_an_actix_system_the_client_uses_it() {
    let dir = tempdir();
    let (client, mut events) = start_one(demo("demo", dir.path()));
    assert!(
        format!("{client:?}").contains("own_thread: false"),
        "{client:?}"
    );
    ready(&mut events, "demo").await;
    let result = client
        .call_tool("demo", "echo", json!({"text": "same system"}))
        .await
        .expect("echo");
    assert_eq!(echo_text(&result), "same system");
    // The actor API and the handle reach one supervisor.
    let statuses = client
        .supervisor()
        .send(GetStatus::all())
        .await
        .expect("delivered")
        .expect("status");
    assert!(
        statuses[0].counters.calls_ok >= 1,
        "{:?}",
        statuses[0].counters
    );
    client.shutdown().await;
}

/// A thread of actix's `SyncArbiter` has a `System` and no arbiter to run actors on: starting
/// the supervisor there is the typed error, and `McpClient` starts a thread of its own.
#[actix::test]
async fn a_sync_arbiter_thread_gets_the_error_and_the_client_a_thread_of_its_own() {
    use actix::{Actor, Handler, Message, SyncArbiter, SyncContext};

    struct Blocking;
    impl Actor for Blocking {
        type Context = SyncContext<Self>;
    }
    struct Try;
    impl Message for Try {
        type Result = Result<(Option<ErrorKind>, bool), ()>;
    }
    impl Handler<Try> for Blocking {
        type Result = Result<(Option<ErrorKind>, bool), ()>;
        fn handle(&mut self, _: Try, _: &mut SyncContext<Self>) -> Self::Result {
            let direct = Supervisor::builder().start().err().map(|e| e.kind());
            let client = McpClient::start(Supervisor::builder());
            let own_thread = client
                .as_ref()
                .is_ok_and(|c| format!("{c:?}").contains("own_thread: true"));
            Ok((direct, own_thread))
        }
    }
    let blocking = SyncArbiter::start(1, || Blocking);
    let (direct, own_thread) = blocking
        .send(Try)
        .await
        .expect("the handler answered")
        .expect("ok");
    assert_eq!(direct, Some(ErrorKind::Config));
    assert!(own_thread, "McpClient::start on a SyncArbiter thread");
}

/// The supervisor's logs go to the subscriber that was the caller's default when the handle
/// started, also one set for the caller's thread only.
#[tokio::test]
async fn the_supervisor_thread_logs_to_the_callers_subscriber() {
    let (logs, _guard) = logs::capture(tracing::Level::DEBUG);
    let dir = tempdir();
    let (client, mut events) = start_one(demo("logged", dir.path()));
    ready(&mut events, "logged").await;
    client
        .call_tool("logged", "echo", json!({"text": "seen"}))
        .await
        .expect("echo");
    client.shutdown().await;
    let lines = logs.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("call finished") && l.contains("server=logged")),
        "{lines:#?}"
    );
}
