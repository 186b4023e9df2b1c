//! A task that outlives the process that started it.
//!
//! Run it with `cargo run --example durable_task`; nothing needs installing. The server is the
//! in-tree demo server, compiled into this example (started with `--demo-server`, this binary
//! *is* the server), speaking the 2026-07-28 revision, whose `long_job` runs as a task (the
//! Tasks extension) and keeps its tasks on disk.
//!
//! What it shows, in order:
//! - a client process starts `long_job` with `StartTask` and gets its task's handle at once;
//!   the task is recorded in an SQLite task store first;
//! - that client is killed with SIGKILL, mid-task;
//! - a new client on the same store follows the task again (`ListTasks`), answers the question
//!   the job asks half-way (`input_required`) through its request handler, and gets the result
//!   with `AwaitTask`;
//! - a third start finds nothing left: the result was delivered once.

#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use std::error::Error;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::tasks::SqliteTaskStore;
use mcp_supervisor::{
    AwaitTask, ListTasks, RpcError, ServerConfig, ServerRequest, Shutdown, StartTask, Supervisor,
    TaskStart,
};
use serde_json::{json, Value};

/// The argument that makes this binary run as the demo server.
const DEMO_SERVER_FLAG: &str = "--demo-server";
/// The argument that makes this binary the first client, which is killed mid-task.
const FIRST_CLIENT_FLAG: &str = "--first-client";
/// What the first client prints once it has its task.
const STARTED: &str = "started task ";

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some(DEMO_SERVER_FLAG) => {
            demo_server::main();
            Ok(())
        }
        Some(FIRST_CLIENT_FLAG) => {
            let dir = PathBuf::from(args.next().ok_or("the first client needs a directory")?);
            System::new().block_on(first_client(&dir))
        }
        _ => {
            let dir = tempfile::tempdir()?;
            let result = System::new().block_on(run(dir.path()));
            // The demo server keeps its tasks there; the store is there: both go.
            drop(dir);
            result
        }
    }
}

/// The demo server, its tasks kept in `dir`, speaking the 2026-07-28 revision.
fn server(dir: &Path) -> Result<ServerConfig, Box<dyn Error>> {
    let me = std::env::current_exe()?;
    Ok(ServerConfig::stdio("jobs", me.display().to_string())
        .args([DEMO_SERVER_FLAG])
        .env("DEMO_ERA", "modern")
        .env("DEMO_TASKS_DIR", dir.join("server").display().to_string()))
}

/// A supervisor recording its tasks in `dir`'s store, answering what servers ask with `yes`.
fn supervisor(dir: &Path) -> Result<Addr<Supervisor>, Box<dyn Error>> {
    let store = SqliteTaskStore::open(dir.join("tasks.sqlite3"))?;
    Ok(Supervisor::builder()
        .server(server(dir)?)
        .task_store(Arc::new(store))
        .request_handler(Yes.start().recipient(), json!({"elicitation": {}}))
        .start()?)
}

/// The first client: starts the job, says which task it is, and waits to be killed.
async fn first_client(dir: &Path) -> Result<(), Box<dyn Error>> {
    let sup = supervisor(dir)?;
    let start = StartTask::new("jobs", "long_job", json!({"ms": 3000, "ask": true}));
    match sup.send(start).await?? {
        TaskStart::Running(task) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{STARTED}{}", task.task_id)?;
            out.flush()?;
        }
        TaskStart::Completed(_) => return Err("the server ran the job at once".into()),
        _ => return Err("an answer this example does not know".into()),
    }
    std::future::pending::<()>().await;
    Ok(())
}

async fn run(dir: &Path) -> Result<(), Box<dyn Error>> {
    println!("1. A client starts long_job (3 s, with a question half-way) as a task.");
    let mut first = Command::new(std::env::current_exe()?)
        .arg(FIRST_CLIENT_FLAG)
        .arg(dir)
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = first.stdout.take().ok_or("no stdout")?;
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|line| line.starts_with(STARTED))
        .ok_or("the first client did not start a task")?;
    let task_id = line.trim_start_matches(STARTED).to_owned();
    println!(
        "   It has task {task_id}, recorded in {}.",
        dir.join("tasks.sqlite3").display()
    );

    println!("2. That client is killed with SIGKILL, mid-task.");
    first.kill()?;
    first.wait()?;

    println!("3. A new client, on the same task store:");
    let sup = supervisor(dir)?;
    let tasks = sup.send(ListTasks::new("jobs")).await??;
    for task in &tasks {
        println!(
            "   follows task {} ({} on {}), {}",
            task.handle.task_id, task.handle.tool, task.handle.server, task.status
        );
    }
    let task = tasks.first().ok_or("the new client follows no task")?;
    let wait = AwaitTask::new(task.handle.clone()).timeout(Duration::from_secs(30));
    let result = sup.send(wait).await??;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    println!("   and gets its result: {text:?}");
    sup.send(Shutdown).await?;

    println!("4. A third start has nothing left to follow: the result was delivered once.");
    let sup = supervisor(dir)?;
    let left = sup.send(ListTasks::new("jobs")).await??;
    println!("   tasks followed: {}", left.len());
    sup.send(Shutdown).await?;
    if text != "done" || !left.is_empty() {
        return Err("the task did not end as it should".into());
    }
    Ok(())
}

/// Answers every question of a server with `ok: true` (the job asks whether to continue).
struct Yes;

impl Actor for Yes {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Yes {
    type Result = Result<Value, RpcError>;

    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        println!("   the server asks ({}): answered yes", request.method);
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}
