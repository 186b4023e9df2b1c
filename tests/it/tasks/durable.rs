//! Durable tasks: with a task store, a task outlives a restart of this process. A supervisor
//! that shut down, or a client process killed with SIGKILL, leaves its tasks in the store; the
//! next supervisor on the same store follows them again and delivers each outcome once.
//!
//! The killed client is this test binary again, started with only the test that starts it
//! (`--exact`) and [`CHILD`] naming its directory: that test then plays the client, starts a
//! task, writes its id and waits to be killed. The parent waits for that line, never for a
//! time.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::tasks::{SqliteTaskStore, TaskStore};
use mcp_supervisor::{
    AwaitTask, ListTasks, ServerConfig, Shutdown, StartTask, Supervisor, TaskStart, TaskStatus,
};
use serde_json::json;

use crate::common::*;

/// In the child's environment: its directory (store, demo server files).
const CHILD: &str = "MCP_TEST_DURABLE_TASK_CHILD";
const MARK: &str = "TASKSTARTED ";

/// The demo server whose `long_job`s are kept in `dir` (so that they outlive its process).
fn server(dir: &Path) -> ServerConfig {
    demo_in("modern", "jobs", dir).env(
        "DEMO_TASKS_DIR",
        dir.join("server-tasks").display().to_string(),
    )
}

fn supervise(dir: &Path) -> actix::Addr<Supervisor> {
    let store = SqliteTaskStore::open(dir.join("tasks.sqlite3")).expect("a store");
    Supervisor::builder()
        .settings(quick_settings())
        .server(server(dir))
        .task_store(Arc::new(store))
        .start()
        .expect("a supervisor")
}

async fn followed(sup: &actix::Addr<Supervisor>) -> Vec<mcp_supervisor::TaskInfo> {
    sup.send(ListTasks::new("jobs")).await.unwrap().unwrap()
}

#[actix::test]
async fn a_task_outlives_its_supervisor_and_its_outcome_is_delivered_once() {
    let dir = tempdir();
    let sup = supervise(&path(&dir));
    let start = StartTask::new("jobs", "long_job", json!({"ms": 800, "poll_ms": 50}));
    let TaskStart::Running(handle) = sup.send(start).await.unwrap().expect("started") else {
        panic!("a task")
    };
    sup.send(Shutdown).await.unwrap();

    // The next supervisor (a restart of the application) follows it from the store.
    let sup = supervise(&path(&dir));
    let tasks = followed(&sup).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].handle.task_id, handle.task_id);
    assert_eq!(tasks[0].handle.tool, "long_job");
    let result = sup
        .send(AwaitTask::new(tasks[0].handle.clone()).timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the result");
    assert_eq!(text_of(&result), "done");
    sup.send(Shutdown).await.unwrap();

    // Delivered: a third start has nothing left to follow or deliver, and awaiting the
    // handle again does not ask the server for the outcome a second time.
    let sup = supervise(&path(&dir));
    assert!(followed(&sup).await.is_empty());
    let again = sup
        .send(AwaitTask::new(handle.clone()))
        .await
        .unwrap()
        .expect_err("delivered already");
    assert_eq!(again.kind(), mcp_supervisor::ErrorKind::OutcomeUnknown);
    assert!(again.to_string().contains("delivered already"), "{again}");
    let store = SqliteTaskStore::open(path(&dir).join("tasks.sqlite3")).unwrap();
    let record = store.list(Some("jobs")).unwrap();
    assert!(record.iter().all(|r| r.delivered), "{record:?}");
    sup.send(Shutdown).await.unwrap();
}

#[actix::test]
async fn an_outcome_that_came_while_nobody_waited_is_kept_across_a_restart() {
    let dir = tempdir();
    let sup = supervise(&path(&dir));
    let start = StartTask::new("jobs", "long_job", json!({"ms": 100, "poll_ms": 20}));
    let TaskStart::Running(handle) = sup.send(start).await.unwrap().expect("started") else {
        panic!("a task")
    };
    until_async(|| {
        let sup = sup.clone();
        async move {
            followed(&sup)
                .await
                .first()
                .is_some_and(|t| t.status == TaskStatus::Completed)
        }
    })
    .await;
    sup.send(Shutdown).await.unwrap();
    let sup = supervise(&path(&dir));
    let tasks = followed(&sup).await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Completed);
    let result = sup
        .send(AwaitTask::new(handle.clone()))
        .await
        .unwrap()
        .expect("kept, delivered now");
    assert_eq!(text_of(&result), "done");
    assert!(followed(&sup).await.is_empty(), "delivered once");
    sup.send(Shutdown).await.unwrap();
}

/// The child: starts a task, says which, and waits to be killed.
async fn child(dir: &Path) {
    let sup = supervise(dir);
    let start = StartTask::new("jobs", "long_job", json!({"ms": 1500, "poll_ms": 50}));
    let TaskStart::Running(handle) = sup.send(start).await.unwrap().expect("started") else {
        panic!("a task")
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK}{}", handle.task_id).unwrap();
    out.flush().unwrap();
    drop(out);
    std::future::pending::<()>().await;
}

#[actix::test]
async fn a_task_outlives_a_sigkill_of_the_client_process() {
    if let Ok(dir) = std::env::var(CHILD) {
        return child(Path::new(&dir)).await;
    }
    let dir = tempdir();
    let name = module_path!()
        .split_once("::")
        .map_or("", |(_, m)| m)
        .to_owned()
        + "::a_task_outlives_a_sigkill_of_the_client_process";
    let mut client = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(CHILD, path(&dir))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the client process");
    let stdout = client.stdout.take().unwrap();
    let task_id = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.split_once(MARK).map(|(_, id)| id.to_owned()))
    })
    .await
    .unwrap()
    .expect("the client started a task");
    client.kill().unwrap(); // SIGKILL
    client.wait().unwrap();

    let sup = supervise(&path(&dir));
    let tasks = followed(&sup).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].handle.task_id, task_id);
    let result = sup
        .send(AwaitTask::new(tasks[0].handle.clone()).timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the result, in the restarted client");
    assert_eq!(text_of(&result), "done");
    sup.send(Shutdown).await.unwrap();
    let sup = supervise(&path(&dir));
    assert!(followed(&sup).await.is_empty(), "delivered once");
    sup.send(Shutdown).await.unwrap();
}

/// Two supervisors on one store (two replicas of a service, or a replacement's two
/// generations) both follow a task: its result is delivered once. (Each runs its own demo
/// server on the same task files; that an input key is answered once by two followers is the
/// session's `what_another_follower_recorded_first_is_not_done_again`.)
#[actix::test]
async fn two_followers_on_one_store_answer_once_and_deliver_once() {
    let dir = tempdir();
    let sup = supervise(&path(&dir));
    let start = StartTask::new("jobs", "long_job", json!({"ms": 600, "poll_ms": 20}));
    let TaskStart::Running(handle) = sup.send(start).await.unwrap().expect("started") else {
        panic!("a task")
    };
    sup.send(Shutdown).await.unwrap();

    let (one, two) = (supervise(&path(&dir)), supervise(&path(&dir)));
    let wait = |sup: &actix::Addr<Supervisor>| {
        sup.send(AwaitTask::new(handle.clone()).timeout(Duration::from_secs(10)))
    };
    let (a, b) = futures_util::future::join(wait(&one), wait(&two)).await;
    let outcomes = [a.unwrap(), b.unwrap()];
    let delivered = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(delivered, 1, "{outcomes:?}");
    for outcome in &outcomes {
        if let Err(e) = outcome {
            assert_eq!(e.kind(), mcp_supervisor::ErrorKind::OutcomeUnknown, "{e}");
            assert!(e.to_string().contains("delivered already"), "{e}");
        }
    }
    one.send(Shutdown).await.unwrap();
    two.send(Shutdown).await.unwrap();
}
