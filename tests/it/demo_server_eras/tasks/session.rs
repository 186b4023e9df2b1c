//! The 2025-11-25 revision's tasks: `params.task` on `tools/call`, `tasks/get|result|cancel|list`,
//! the input request sent to the client as an `elicitation/create` tied to its task, and the
//! ordinary synchronous call without `params.task` or in an older session.

use std::time::Duration;

use serde_json::{json, Value};

use super::super::pipe::{text, Demo};
use super::{
    assert_instant, confirm_params, id, long_job, poll_until, stderr_count, task_files, task_id_of,
    text_result,
};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Calls `long_job` as a task (`params.task {ttl: 60000}`): its `task`.
fn create(demo: &mut Demo, arguments: Value) -> Value {
    let mut params = long_job(arguments);
    params["task"] = json!({ "ttl": 60_000 });
    let created = demo.result(id(), "tools/call", params);
    assert_eq!(created.get("resultType"), None, "{created}");
    created["task"].clone()
}

fn get(demo: &mut Demo, task_id: &str) -> Value {
    demo.request(id(), "tasks/get", json!({ "taskId": task_id }))
}

fn poll(demo: &mut Demo, task_id: &str, status: &str) -> (Value, usize) {
    poll_until(
        || get(demo, task_id)["result"].clone(),
        Duration::from_millis(20),
        status,
        |task| task["status"] == status,
    )
}

/// The next `elicitation/create` the server sends (other messages are kept).
fn next_elicitation(demo: &mut Demo) -> Value {
    demo.wait_for("an elicitation", |m| m["method"] == "elicitation/create")
}

fn answer(demo: &mut Demo, request: &Value, result: Value) {
    demo.send(json!({ "jsonrpc": "2.0", "id": request["id"], "result": result }));
}

#[test]
fn a_session_task_runs_to_completion_and_tasks_result_waits_for_it() {
    let mut demo = Demo::start(&[("DEMO_LIST_TASKS", "1"), ("DEMO_TOOLS_PAGE_SIZE", "100")]);
    let initialized = demo.initialize(id());
    assert_eq!(
        initialized["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    let listed = demo.result(id(), "tools/list", json!({}));
    let job = listed["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "long_job"))
        .expect("long_job");
    assert_eq!(job["execution"], json!({ "taskSupport": "optional" }));

    let task = create(&mut demo, json!({ "ms": 1000, "poll_ms": 50 }));
    let task_id = task_id_of(&task);
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["pollInterval"], 50);
    assert_instant(&task["createdAt"]);
    assert_eq!(task["lastUpdatedAt"], task["createdAt"]);

    // tasks/result waits for the end; the server answers other requests meanwhile.
    let result_id = id();
    demo.send_request(
        result_id.clone(),
        "tasks/result",
        json!({ "taskId": task_id }),
    );
    let ping_id = id();
    demo.send_request(ping_id.clone(), "ping", json!({}));
    let first = demo.wait_for("a response", |m| {
        m.get("id").is_some() && m.get("method").is_none()
    });
    assert_eq!(first["id"], ping_id, "{first}");

    let (done, polls) = poll_until(
        || get(&mut demo, &task_id)["result"].clone(),
        Duration::from_millis(50),
        "completed",
        |task| task["status"] == "completed",
    );
    assert_eq!(
        done.get("result"),
        None,
        "this revision inlines nothing: {done}"
    );
    let payload = demo.response(&result_id);
    let mut expected = text_result("done");
    expected["_meta"] = json!({ RELATED_TASK: { "taskId": task_id } });
    assert_eq!(payload["result"], expected);

    let listed = demo.result(id(), "tasks/list", json!({}));
    assert_eq!(listed["tasks"], json!([done]), "{listed}");
    assert_eq!(stderr_count(&demo, &format!("task-start {task_id}")), 1);
    assert_eq!(stderr_count(&demo, &format!("task-poll {task_id}")), polls);
}

#[test]
fn a_session_task_asks_the_client_with_an_elicitation_tied_to_it() {
    let mut demo = Demo::start(&[]);
    demo.initialize(id());
    let task_id = task_id_of(&create(&mut demo, json!({ "ask": true, "ms": 200 })));
    let asked = next_elicitation(&mut demo);
    let mut expected = confirm_params();
    expected["_meta"] = json!({ RELATED_TASK: { "taskId": task_id } });
    assert_eq!(asked["params"], expected);
    assert!(
        asked["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("srv-")),
        "{asked}"
    );
    let (asking, _) = poll(&mut demo, &task_id, "input_required");
    assert!(asking["statusMessage"].is_string(), "{asking}");

    answer(
        &mut demo,
        &asked,
        json!({ "action": "accept", "content": { "ok": true } }),
    );
    poll(&mut demo, &task_id, "completed");
    let payload = demo.result(id(), "tasks/result", json!({ "taskId": task_id }));
    assert_eq!(text(&payload), "done");

    let task_id = task_id_of(&create(&mut demo, json!({ "ask": true, "ms": 0 })));
    let asked = next_elicitation(&mut demo);
    answer(&mut demo, &asked, json!({ "action": "decline" }));
    poll(&mut demo, &task_id, "completed");
    let payload = demo.result(id(), "tasks/result", json!({ "taskId": task_id }));
    assert_eq!(text(&payload), "declined");
}

#[test]
fn a_session_task_can_be_cancelled_fail_or_end_with_an_error_result() {
    let mut demo = Demo::start(&[]);
    demo.initialize(id());
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 60_000 })));
    let cancelled = demo.result(id(), "tasks/cancel", json!({ "taskId": task_id }));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["taskId"], task_id);
    assert_eq!(get(&mut demo, &task_id)["result"]["status"], "cancelled");
    let again = demo.error(id(), "tasks/cancel", json!({ "taskId": task_id }));
    assert_eq!(
        again,
        json!({ "code": -32602,
                "message": "Cannot cancel task: already in terminal status 'cancelled'" })
    );
    let no_result = demo.error(id(), "tasks/result", json!({ "taskId": task_id }));
    assert_eq!(no_result["code"], -32603, "{no_result}");

    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 0, "fail": true })));
    poll(&mut demo, &task_id, "failed");
    let error = demo.error(id(), "tasks/result", json!({ "taskId": task_id }));
    assert_eq!(
        error,
        json!({ "code": -32603, "message": "the job failed" })
    );

    // This revision calls an isError result a failed task; tasks/result still returns it.
    let args = json!({ "ms": 0, "error_result": true, "text": "no luck" });
    let task_id = task_id_of(&create(&mut demo, args));
    poll(&mut demo, &task_id, "failed");
    let payload = demo.result(id(), "tasks/result", json!({ "taskId": task_id }));
    assert_eq!(payload["isError"], true);
    assert_eq!(text(&payload), "no luck");
}

#[test]
fn session_task_refusals_and_the_ordinary_call() {
    let mut demo = Demo::start(&[]);
    demo.initialize(id());
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = demo.error(id(), method, json!({ "taskId": "0".repeat(32) }));
        assert_eq!(
            error,
            json!({ "code": -32602, "message": "Failed to retrieve task: Task not found" }),
            "{method}"
        );
    }
    let echo = json!({ "name": "echo", "arguments": { "text": "x" }, "task": {} });
    assert_eq!(demo.error(id(), "tools/call", echo)["code"], -32601);
    let update = json!({ "taskId": "0".repeat(32), "inputResponses": {} });
    assert_eq!(demo.error(id(), "tasks/update", update)["code"], -32601);

    // Without params.task: an ordinary long call, its question a plain elicitation.
    let done = demo.result(id(), "tools/call", long_job(json!({ "ms": 20 })));
    assert_eq!(done, text_result("done"));
    let call_id = id();
    demo.send_request(
        call_id.clone(),
        "tools/call",
        long_job(json!({ "ms": 20, "ask": true })),
    );
    let asked = next_elicitation(&mut demo);
    assert_eq!(asked["params"], confirm_params(), "no task to relate to");
    answer(
        &mut demo,
        &asked,
        json!({ "action": "accept", "content": { "ok": true } }),
    );
    assert_eq!(demo.response(&call_id)["result"], text_result("done"));

    // A 2025-06-18 session has no tasks: no capability, no methods, params.task ignored.
    let mut older = Demo::start(&[]);
    let params = json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": { "name": "eras-test", "version": "1" } });
    let initialized = older.result(id(), "initialize", params);
    assert_eq!(
        initialized["capabilities"].get("tasks"),
        None,
        "{initialized}"
    );
    let error = older.error(id(), "tasks/get", json!({ "taskId": "0".repeat(32) }));
    assert_eq!(error["code"], -32601);
    let mut params = long_job(json!({ "ms": 0 }));
    params["task"] = json!({ "ttl": 1000 });
    assert_eq!(
        older.result(id(), "tools/call", params),
        text_result("done")
    );
}

#[test]
fn session_tasks_survive_a_sigkill_only_with_a_tasks_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tasks_dir = dir.path().to_str().expect("utf-8").to_owned();
    let env = [("DEMO_TASKS_DIR", tasks_dir.as_str())];
    let mut demo = Demo::start(&env);
    demo.initialize(id());
    let plain = task_id_of(&create(&mut demo, json!({ "ms": 300 })));
    let asked = task_id_of(&create(&mut demo, json!({ "ask": true, "ms": 0 })));
    next_elicitation(&mut demo);
    // Killed before the question was answered.
    demo.kill();
    assert_eq!(task_files(dir.path()).len(), 2);

    // The restarted server asks again, once its session is initialized, and goes on.
    let mut again = Demo::start(&env);
    again.initialize(id());
    let asked_again = next_elicitation(&mut again);
    assert_eq!(
        asked_again["params"]["_meta"][RELATED_TASK]["taskId"],
        asked
    );
    answer(
        &mut again,
        &asked_again,
        json!({ "action": "accept", "content": { "ok": true } }),
    );
    for task_id in [&plain, &asked] {
        poll(&mut again, task_id, "completed");
        let payload = again.result(id(), "tasks/result", json!({ "taskId": task_id }));
        assert_eq!(text(&payload), "done", "{task_id}");
    }
    let listed = again.result(id(), "tasks/list", json!({}));
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    assert!(
        !again.stderr().iter().any(|l| l.starts_with("task-start")),
        "no job ran again: {:?}",
        again.stderr()
    );
    again.kill();

    // In memory only, a restart forgets.
    let mut demo = Demo::start(&[]);
    demo.initialize(id());
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 60_000 })));
    demo.kill();
    let mut again = Demo::start(&[]);
    again.initialize(id());
    let lost = again.error(id(), "tasks/get", json!({ "taskId": task_id }));
    assert_eq!(lost["message"], "Failed to retrieve task: Task not found");
}
