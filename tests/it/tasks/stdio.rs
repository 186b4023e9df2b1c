//! Over stdio, against the demo server's `long_job` in the 2026-07-28 era: input asked through
//! the request handler, each way a job ends, and a server killed mid-task — whose task is
//! polled on after the restart when the server keeps its tasks, and is an unknown outcome when
//! it does not.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use mcp_supervisor::{CallTool, ErrorKind, RpcError, ServerConfig, ServerRequest, Supervisor};
use serde_json::{json, Value};

use crate::common::*;

/// Answers every elicitation with `{"ok": <ok>}`, and counts what it was asked.
struct Confirm {
    ok: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Actor for Confirm {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Confirm {
    type Result = Result<Value, RpcError>;
    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.asked.lock().unwrap().push(request.method);
        Ok(json!({"action": "accept", "content": {"ok": self.ok}}))
    }
}

fn supervise(
    config: ServerConfig,
    ok: bool,
) -> (Addr<Supervisor>, Events, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (events, recipient) = Events::start();
    let handler = Confirm {
        ok,
        asked: asked.clone(),
    };
    let sup = Supervisor::builder()
        .settings(quick_settings())
        .server(config)
        .subscriber(recipient)
        .request_handler(handler.start().recipient(), json!({"elicitation": {}}))
        .start()
        .unwrap();
    (sup, events, asked)
}

fn job(args: Value) -> CallTool {
    CallTool::new("demo", "long_job", args).timeout(Duration::from_secs(20))
}

#[actix::test]
async fn a_job_that_asks_is_answered_once_through_the_request_handler() {
    let dir = tempdir();
    for (ok, expected) in [(true, "done"), (false, "declined")] {
        let (sup, events, asked) = supervise(demo_in("modern", "demo", &path(&dir)), ok);
        events.ready("demo", 1).await;
        let args = json!({"ms": 400, "poll_ms": 20, "ask": true});
        let result = sup.send(job(args)).await.unwrap().expect("the result");
        assert_eq!(text_of(&result), expected);
        // Polled every 20 ms while it waited for the answer: asked once all the same.
        assert_eq!(asked.lock().unwrap().as_slice(), ["elicitation/create"]);
    }
}

#[actix::test]
async fn each_way_a_job_ends_reaches_the_caller() {
    let dir = tempdir();
    let (sup, events, _) = supervise(demo_in("modern", "demo", &path(&dir)), true);
    events.ready("demo", 1).await;
    let fast = |extra: Value| {
        let mut args = json!({"ms": 100, "poll_ms": 20});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        job(args)
    };
    let tool_error = sup
        .send(fast(json!({"error_result": true, "text": "bad input"})))
        .await
        .unwrap()
        .expect("a tool error is a result");
    assert_eq!(tool_error.is_error, Some(true));
    assert_eq!(text_of(&tool_error), "bad input");
    let failed = sup
        .send(fast(json!({"fail": true})))
        .await
        .unwrap()
        .expect_err("failed");
    assert_eq!(failed.kind(), ErrorKind::Rpc);
    assert!(failed.to_string().contains("the job failed"), "{failed}");
}

/// The server is killed while its task runs: the supervisor restarts it, and the call's task
/// is asked about on the new process — which knows it when it keeps its tasks on disk.
#[actix::test]
async fn a_task_outlives_a_kill_of_its_server_when_the_server_keeps_it() {
    let dir = tempdir();
    let tasks = path(&dir).join("tasks");
    for keeps in [true, false] {
        let mut config = demo_in("modern", "demo", &path(&dir));
        if keeps {
            config = config.env("DEMO_TASKS_DIR", tasks.display().to_string());
        }
        let (sup, events, _) = supervise(config, true);
        events.ready("demo", 1).await;
        let before = status(&sup, "demo").await.pid.expect("a pid");
        let pending = sup.send(job(json!({"ms": 1500, "poll_ms": 50})));
        let pending = actix::spawn(pending);
        // The call has its CreateTaskResult before the kill, so that a task is what dies.
        until_async(|| {
            let sup = sup.clone();
            async move {
                sup.send(mcp_supervisor::ListTasks::new("demo"))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .is_some_and(|t| !t.is_empty())
            }
        })
        .await;
        kill(before, nix::sys::signal::Signal::SIGKILL);
        let answer = pending.await.unwrap().unwrap();
        if keeps {
            let result = answer.expect("the restarted server finished the task");
            assert_eq!(text_of(&result), "done");
        } else {
            let error = answer.expect_err("the restarted server never heard of it");
            assert_eq!(error.kind(), ErrorKind::OutcomeUnknown, "{error}");
        }
        assert_ne!(status(&sup, "demo").await.pid, Some(before));
    }
}
