//! Tasks (the 2026-07-28 Tasks extension, `io.modelcontextprotocol/tasks`) against task
//! servers we did not write the runtime of (rows marked T), over the library's public API:
//!
//! - `ts`: `tests/interop/tasks_ts_server.mjs` on the TypeScript SDK v2 server
//!   (`@modelcontextprotocol/server` 2.4.0) and `@modelcontextprotocol/ext-tasks` 0.2.2. That
//!   package is the *requester* side of Tasks (`./client`: sessions that call tools and poll)
//!   and a 2025-11-25 *receiver* for a client's sampling and elicitation (`./receiver`): it has
//!   no server runtime that runs a tool as a task. A server "on ext-tasks" is therefore the SDK
//!   (transports, `server/discover`, `Mcp-Name` checks) with ext-tasks' V2 wire (the
//!   `hasTaskClientCapabilityV2` check, and the zod schemas every `CreateTaskResult`,
//!   `GetTaskResult` and `inputResponses` is checked against), around a task table the script
//!   keeps itself — in files when `TASKS_DIR` is set. So what survives its kill -9 is the
//!   script's doing, not the package's.
//! - `py`: `tests/interop/tasks_py_server.py` on FastMCP 4.1.4 with `fastmcp-tasks` 4.1.4, a
//!   complete server-side implementation (`tasks/get`, `tasks/update`, `tasks/cancel`, the
//!   `CreateTaskResult`, input through its guard pattern), its tasks run and kept by Docket:
//!   `memory://` (its default: an in-process BurnerRedis, `docket/_redis_memory.py`) or a
//!   Redis server (`redis://`).
//!
//! Both serve only the 2026-07-28 flavour (`resultType: "task"`): fastmcp-tasks binds its
//! `tasks/*` methods to `MODERN_PROTOCOL_VERSIONS` only (`fastmcp_tasks/extension.py`), and the
//! TypeScript script rejects the session era. The 2025-11-25 experimental tasks, which the
//! client does not speak, are not served by either.
//!
//! The five cases, for each server:
//!
//! 1. `completion`: a task to its end, through `StartTask` + `AwaitTask` and through a plain
//!    `CallTool`, over stdio and over Streamable HTTP (where `tasks/get` carries `Mcp-Name`,
//!    which both servers check against `taskId`).
//! 2. `input`: a task that asks (`input_required`, an elicitation), answered once through the
//!    request handler with `tasks/update`, however often the polls show it.
//! 3. `cancel`: `CancelTask` on a running task; its awaiter hears `cancelled`.
//! 4. `server_kill`: the stdio server killed with SIGKILL while its task runs, respawned by the
//!    supervisor. Where the tasks outlive the process (the script's `TASKS_DIR`; Redis for
//!    fastmcp-tasks), the call is answered with the result; where they were in memory (the
//!    script without `TASKS_DIR`, fastmcp-tasks' default `memory://`), the new process never
//!    heard of the task and the caller gets `outcome_unknown` — what that backend can do, not a
//!    failure of the case. fastmcp-tasks' Docket redelivers the job whose worker died once its
//!    lease lapses, so the job's body runs a second time (at least once, as Docket promises):
//!    the client still gets one result.
//! 5. `client_kill`: the client process (this test binary, re-executed with only that test)
//!    killed with SIGKILL after it started a task, with a `SqliteTaskStore`; the next client on
//!    the same store follows the task and delivers its result, once (a third finds nothing).
//!    The server is an HTTP server the test owns, which outlives the client (a stdio server
//!    would die with its client: that is case 4).
//!
//! `#[ignore]`d: `.ci/interop` installs the pinned servers (and Debian's `redis-server`), runs
//! these with `--ignored` and prints the figures they record.

mod servers;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::tasks::{SqliteTaskStore, TaskStore};
use mcp_supervisor::{
    AwaitTask, CallTool, CancelTask, ErrorKind, ListTasks, RpcError, ServerConfig, ServerRequest,
    Shutdown, StartTask, Supervisor, TaskInfo, TaskStart,
};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::common::interop::lines_in;
use crate::common::*;
use servers::*;

/// Answers every elicitation with `{"ok": true}`, as a person would: after [`THINKING`], while
/// the task's polls go on (each shows the same request again). Records what it was asked.
struct Confirm(Arc<Mutex<Vec<String>>>);

/// How long the "person" takes to answer: three polls or so (every 100 ms, the floor).
const THINKING: Duration = Duration::from_millis(300);

impl Actor for Confirm {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Confirm {
    type Result = ResponseFuture<Result<Value, RpcError>>;
    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.0.lock().unwrap().push(request.method);
        Box::pin(async {
            tokio::time::sleep(THINKING).await;
            Ok(json!({"action": "accept", "content": {"ok": true}}))
        })
    }
}

/// What a supervisor of one server is started with.
#[derive(Default)]
struct Options {
    /// Answers the server's elicitations (and records what it was asked).
    handler: Option<Arc<Mutex<Vec<String>>>>,
    /// A task store that outlives this supervisor.
    store: Option<std::path::PathBuf>,
}

fn supervise(config: ServerConfig, options: Options) -> (Addr<Supervisor>, Events) {
    let (events, recipient) = Events::start();
    let mut builder = Supervisor::builder()
        .settings(quick_settings())
        .server(config)
        .subscriber(recipient);
    if let Some(asked) = options.handler {
        builder = builder.request_handler(
            Confirm(asked).start().recipient(),
            json!({"elicitation": {}}),
        );
    }
    if let Some(store) = options.store {
        let store = SqliteTaskStore::open(store).expect("a task store");
        builder = builder.task_store(Arc::new(store));
    }
    (builder.start().expect("a valid configuration"), events)
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

fn job(args: Value) -> CallTool {
    CallTool::new(NAME, "job", args).timeout(Duration::from_secs(30))
}

/// Starts `job` with `args` and returns its handle: the server must run it as a task.
async fn start(sup: &Addr<Supervisor>, args: Value) -> mcp_supervisor::TaskHandle {
    let start = StartTask::new(NAME, "job", args).timeout(Duration::from_secs(30));
    match sup.send(start).await.unwrap().expect("the job started") {
        TaskStart::Running(handle) => handle,
        TaskStart::Completed(result) => panic!("answered at once, not as a task: {result:?}"),
        other => panic!("{other:?}"),
    }
}

async fn tasks(sup: &Addr<Supervisor>) -> Vec<TaskInfo> {
    sup.send(ListTasks::new(NAME)).await.unwrap().unwrap()
}

/// Case 1: a task to its end, through the explicit handle and through a plain call.
async fn completion(pkg: Pkg, http: bool) {
    let dir = tempdir();
    let runs = path(&dir).join("runs");
    let server = if http {
        Some(pkg.http(&runs).await)
    } else {
        None
    };
    let config = match &server {
        Some(server) => ServerConfig::http(NAME, server.url()),
        None => pkg.stdio(&Keep::Memory, &runs),
    };
    let (sup, events) = supervise(config, Options::default());
    events.ready(NAME, 1).await;

    let started = Instant::now();
    let handle = start(&sup, json!({"ms": 300, "text": "explicit"})).await;
    let handed = started.elapsed();
    let result = sup
        .send(AwaitTask::new(handle.clone()).timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the task's result");
    let explicit = started.elapsed();
    assert_eq!(text_of(&result), "explicit");
    assert_eq!(result.is_error, Some(false));

    let sent = Instant::now();
    let result = sup
        .send(job(json!({"ms": 300, "text": "plain call"})))
        .await
        .unwrap()
        .expect("the call's result");
    let plain = sent.elapsed();
    assert_eq!(text_of(&result), "plain call");
    assert!(tasks(&sup).await.is_empty(), "both delivered");
    let via = if http { "Streamable HTTP" } else { "stdio" };
    record(
        &format!("T {}: a task to completion ({via})", pkg.label()),
        "ok",
        &format!(
            "handle after {} ms, result {} ms after StartTask (job of 300 ms); CallTool answered in {} ms",
            ms(handed),
            ms(explicit),
            ms(plain)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// Case 2: a task that asks, answered once through the request handler.
async fn input(pkg: Pkg) {
    let dir = tempdir();
    let runs = path(&dir).join("runs");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let options = Options {
        handler: Some(asked.clone()),
        ..Options::default()
    };
    let (sup, events) = supervise(pkg.stdio(&Keep::Memory, &runs), options);
    events.ready(NAME, 1).await;
    let sent = Instant::now();
    let call = CallTool::new(NAME, "ask", json!({"ms": 400})).timeout(Duration::from_secs(30));
    let result = sup
        .send(call)
        .await
        .unwrap()
        .expect("answered after the input");
    let took = sent.elapsed();
    assert_eq!(text_of(&result), "confirmed");
    // Polled every 100 ms (the floor; both ask for 50) while the answer took 300 ms, each poll
    // showing the same request (under fastmcp-tasks' own key, `<taskId>:<digest>`): asked once.
    assert_eq!(asked.lock().unwrap().as_slice(), ["elicitation/create"]);
    let legs = if pkg == Pkg::Py {
        // The guard pattern: a leg that asked, and one re-entered with the answer.
        assert_eq!(
            lines_in(&runs),
            2,
            "one leg that asks, one that is answered"
        );
        "; 2 legs (asked, re-entered with the answer)"
    } else {
        ""
    };
    record(
        &format!(
            "T {}: input_required answered through the handler",
            pkg.label()
        ),
        "ok",
        &format!(
            "elicitation asked once (answered after {} ms, polls going on), sent with tasks/update; result in {} ms{legs}",
            ms(THINKING),
            ms(took)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// Case 3: a running task cancelled; whoever awaits it hears `cancelled`.
async fn cancel(pkg: Pkg) {
    let dir = tempdir();
    let runs = path(&dir).join("runs");
    let (sup, events) = supervise(pkg.stdio(&Keep::Memory, &runs), Options::default());
    events.ready(NAME, 1).await;
    let handle = start(&sup, json!({"ms": 60_000})).await;
    let waiting =
        actix::spawn(sup.send(AwaitTask::new(handle.clone()).timeout(Duration::from_secs(30))));
    let sent = Instant::now();
    sup.send(CancelTask::new(handle.clone()))
        .await
        .unwrap()
        .expect("the server acknowledged the cancel");
    let error = waiting
        .await
        .unwrap()
        .unwrap()
        .expect_err("a cancelled task has no result");
    let took = sent.elapsed();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(tasks(&sup).await.is_empty());
    record(
        &format!("T {}: a running task cancelled", pkg.label()),
        "ok",
        &format!(
            "tasks/cancel acknowledged; the awaiter got {} {} ms after it (job of 60 s)",
            error.code(),
            ms(took)
        ),
    );
    sup.send(Shutdown).await.unwrap();
}

/// Case 4: the stdio server killed with SIGKILL mid-task and respawned by the supervisor, with
/// its tasks kept where they outlive it, and in memory.
async fn server_kill(pkg: Pkg) {
    let dir = tempdir();
    let redis = match pkg {
        Pkg::Py => Some(servers::redis().await),
        Pkg::Ts => None,
    };
    let durable = match &redis {
        Some(redis) => Keep::Durable(redis.url().to_owned()),
        None => Keep::Durable(path(&dir).join("tasks").display().to_string()),
    };
    let mut figures = Vec::new();
    for keep in [durable, Keep::Memory] {
        let runs = path(&dir).join(format!("runs-{}", figures.len()));
        let (sup, events) = supervise(pkg.stdio(&keep, &runs), Options::default());
        events.ready(NAME, 1).await;
        let before = status(&sup, NAME).await.pid.expect("a pid");
        let pending = actix::spawn(sup.send(job(json!({"ms": 1500}))));
        // The call has its CreateTaskResult (and, on fastmcp-tasks, a worker runs the job's
        // body) before the kill, so that a running task is what dies.
        until_async(|| {
            let sup = sup.clone();
            async move {
                sup.send(ListTasks::new(NAME))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .is_some_and(|t| !t.is_empty())
            }
        })
        .await;
        if pkg == Pkg::Py {
            until("the job's body runs", || lines_in(&runs) == 1).await;
        }
        kill(before, Signal::SIGKILL);
        let killed = Instant::now();
        let answer = pending.await.unwrap().unwrap();
        let took = killed.elapsed();
        assert_ne!(status(&sup, NAME).await.pid, Some(before), "respawned");
        match keep {
            Keep::Durable(_) => {
                let result = answer.expect("the restarted server finished the task");
                assert_eq!(text_of(&result), "done");
                let runs = lines_in(&runs);
                if pkg == Pkg::Py {
                    // Docket redelivered the job whose worker died: its body ran again.
                    assert_eq!(runs, 2, "the job's body ran {runs} times");
                }
                figures.push(match pkg {
                    Pkg::Ts => format!("TASKS_DIR: result {} ms after the kill", ms(took)),
                    _ => format!(
                        "Redis: result {} ms after the kill (Docket redelivered the job: its body ran {runs} times)",
                        ms(took)
                    ),
                });
            }
            Keep::Memory => {
                let error = answer.expect_err("the restarted server never heard of the task");
                assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
                let store = match pkg {
                    Pkg::Ts => "in memory",
                    Pkg::Py => "memory://",
                };
                figures.push(format!(
                    "{store}: {} {} ms after the kill",
                    error.code(),
                    ms(took)
                ));
            }
        }
        sup.send(Shutdown).await.unwrap();
    }
    record(
        &format!(
            "T {}: a task across kill -9 of the server (stdio)",
            pkg.label()
        ),
        "ok",
        &figures.join("; "),
    );
}

/// In the client process's environment: its directory (the task store) and the server's URL.
const CHILD_DIR: &str = "MCP_INTEROP_TASK_CHILD_DIR";
const CHILD_URL: &str = "MCP_INTEROP_TASK_CHILD_URL";
const MARK: &str = "TASKSTARTED ";

/// The client process: starts a task, says which, and waits to be killed.
async fn child(dir: &Path, url: &str) {
    let options = Options {
        store: Some(dir.join("tasks.sqlite3")),
        ..Options::default()
    };
    let (sup, events) = supervise(ServerConfig::http(NAME, url), options);
    events.ready(NAME, 1).await;
    let handle = start(&sup, json!({"ms": 1500})).await;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK}{}", handle.task_id).unwrap();
    out.flush().unwrap();
    drop(out);
    std::future::pending::<()>().await;
}

/// Case 5: the client process killed with SIGKILL after it started a task; the next one on
/// the same task store delivers the result, once.
async fn client_kill(pkg: Pkg, test: &str) {
    if let (Ok(dir), Ok(url)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_URL)) {
        return child(Path::new(&dir), &url).await;
    }
    let dir = tempdir();
    let runs = path(&dir).join("runs");
    let server = pkg.http(&runs).await;
    let mut client = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, path(&dir))
        .env(CHILD_URL, server.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the client process");
    // The harness writes `test ... ` before the test's own output, on the same line.
    let stdout = client.stdout.take().unwrap();
    let read = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.split_once(MARK).map(|(_, id)| id.to_owned()))
    });
    let task_id = tokio::time::timeout(Duration::from_secs(60), read).await;
    client.kill().unwrap(); // SIGKILL (and, had it said nothing in time, the end of its stdout)
    client.wait().unwrap();
    let killed = Instant::now();
    let task_id = task_id
        .expect("the client said which task it started within 60 s")
        .unwrap()
        .expect("the client started a task");

    let store = path(&dir).join("tasks.sqlite3");
    let options = || Options {
        store: Some(store.clone()),
        ..Options::default()
    };
    let (sup, _events) = supervise(ServerConfig::http(NAME, server.url()), options());
    let followed = tasks(&sup).await;
    assert_eq!(followed.len(), 1, "{followed:?}");
    assert_eq!(followed[0].handle.task_id, task_id);
    assert_eq!(followed[0].handle.tool, "job");
    let result = sup
        .send(AwaitTask::new(followed[0].handle.clone()).timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the result, in the restarted client");
    let took = killed.elapsed();
    assert_eq!(text_of(&result), "done");
    assert!(tasks(&sup).await.is_empty(), "delivered");
    sup.send(Shutdown).await.unwrap();

    // Delivered once: a third client on the store has nothing left to follow or deliver.
    let (sup, _events) = supervise(ServerConfig::http(NAME, server.url()), options());
    assert!(tasks(&sup).await.is_empty(), "delivered once");
    sup.send(Shutdown).await.unwrap();
    let records = SqliteTaskStore::open(&store)
        .unwrap()
        .list(Some(NAME))
        .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(records[0].delivered, "{records:?}");
    let ran = if pkg == Pkg::Py {
        let runs = lines_in(&runs);
        assert_eq!(runs, 1, "the server was not touched: the job ran once");
        "; the job ran once"
    } else {
        ""
    };
    record(
        &format!("T {}: a task across kill -9 of the client (HTTP, SqliteTaskStore)", pkg.label()),
        "ok",
        &format!(
            "followed again from the store; result {} ms after the kill (job of 1500 ms), delivered once{ran}",
            ms(took)
        ),
    );
}

/// Declares, for each server, a module with one `#[ignore]`d test per case.
macro_rules! task_tests {
    ($($module:ident = $pkg:expr;)*) => {$(
        mod $module {
            use super::*;

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs"]
            async fn completion_stdio() {
                super::completion($pkg, false).await
            }

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs"]
            async fn completion_http() {
                super::completion($pkg, true).await
            }

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs"]
            async fn input() {
                super::input($pkg).await
            }

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs"]
            async fn cancel() {
                super::cancel($pkg).await
            }

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs (and redis-server)"]
            async fn server_kill() {
                super::server_kill($pkg).await
            }

            #[actix::test]
            #[ignore = "needs the servers .ci/interop installs"]
            async fn client_kill() {
                let test = concat!("tasks::", stringify!($module), "::client_kill");
                super::client_kill($pkg, test).await
            }
        }
    )*};
}

task_tests! {
    ts = Pkg::Ts;
    py = Pkg::Py;
}
