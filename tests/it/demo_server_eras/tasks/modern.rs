//! The 2026-07-28 Tasks extension: a `CreateTaskResult` for a client that declares it, `-32021`
//! for one that does not, `tasks/get|update|cancel`, and `notifications/tasks` on a listen.

use std::time::Duration;

use serde_json::{json, Value};

use super::super::pipe::{modern, Demo};
use super::{
    assert_instant, confirm_params, id, long_job, poll_until, stderr_count, task_files, task_id_of,
    text_result,
};

const TASKS: &str = "io.modelcontextprotocol/tasks";
const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// `params` of a modern request whose client declares the Tasks extension.
fn declaring(params: Value) -> Value {
    let mut params = modern(params);
    params["_meta"][CAPABILITIES]["extensions"] = json!({ TASKS: {} });
    params
}

/// Calls `long_job` with `arguments`: its `CreateTaskResult`.
fn create(demo: &mut Demo, arguments: Value) -> Value {
    let created = demo.result(id(), "tools/call", declaring(long_job(arguments)));
    assert_eq!(created["resultType"], "task", "{created}");
    created
}

/// One `tasks/get`: its response.
fn get(demo: &mut Demo, task_id: &str) -> Value {
    demo.request(id(), "tasks/get", declaring(json!({ "taskId": task_id })))
}

/// Polls task `task_id` until its status is `status`.
fn poll(demo: &mut Demo, task_id: &str, status: &str) -> (Value, usize) {
    poll_until(
        || get(demo, task_id)["result"].clone(),
        Duration::from_millis(20),
        status,
        |task| task["status"] == status,
    )
}

fn update(demo: &mut Demo, task_id: &str, responses: Value) -> Value {
    let params = declaring(json!({ "taskId": task_id, "inputResponses": responses }));
    demo.result(id(), "tasks/update", params)
}

#[test]
fn a_modern_task_runs_to_completion() {
    let mut demo = Demo::start(&[("DEMO_LIST_TASKS", "1"), ("DEMO_TOOLS_PAGE_SIZE", "100")]);
    let found = demo.result(id(), "server/discover", declaring(json!({})));
    assert_eq!(
        found["capabilities"]["extensions"][TASKS],
        json!({}),
        "{found}"
    );
    let listed = demo.result(id(), "tools/list", declaring(json!({})));
    let tools = listed["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 11, "the ten, and long_job: {listed}");
    let job = tools
        .iter()
        .find(|t| t["name"] == "long_job")
        .expect("long_job");
    assert_eq!(
        job.get("execution"),
        None,
        "the extension has no taskSupport"
    );

    let args = json!({ "ms": 200, "poll_ms": 20, "text": "finished" });
    let created = create(&mut demo, args);
    let task_id = task_id_of(&created);
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 600_000);
    assert_eq!(created["pollIntervalMs"], 20);
    assert_instant(&created["createdAt"]);
    assert_eq!(created["lastUpdatedAt"], created["createdAt"]);

    let (done, polls) = poll(&mut demo, &task_id, "completed");
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["result"], text_result("finished"));
    assert_eq!(done["createdAt"], created["createdAt"]);
    assert_instant(&done["lastUpdatedAt"]);
    assert!(
        done["lastUpdatedAt"].as_str() > created["createdAt"].as_str(),
        "{done}"
    );
    assert_eq!(stderr_count(&demo, &format!("task-start {task_id}")), 1);
    assert_eq!(stderr_count(&demo, &format!("task-poll {task_id}")), polls);

    let other = create(&mut demo, json!({}));
    assert_ne!(task_id_of(&other), task_id);
}

#[test]
fn a_modern_task_asks_and_is_answered_with_tasks_update() {
    let mut demo = Demo::start(&[]);
    let task_id = task_id_of(&create(
        &mut demo,
        json!({ "ask": true, "ms": 200, "poll_ms": 20 }),
    ));
    let (asking, _) = poll(&mut demo, &task_id, "input_required");
    let request = json!({ "method": "elicitation/create", "params": confirm_params() });
    assert_eq!(
        asking["inputRequests"],
        json!({ "confirm": request }),
        "{asking}"
    );

    // A key that is not outstanding is ignored: acknowledged, and the task still asks.
    let ack = update(
        &mut demo,
        &task_id,
        json!({ "other": { "action": "accept" } }),
    );
    assert_eq!(ack, json!({ "resultType": "complete" }));
    assert_eq!(
        get(&mut demo, &task_id)["result"]["status"],
        "input_required"
    );

    let accept = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    assert_eq!(
        update(&mut demo, &task_id, accept),
        json!({ "resultType": "complete" })
    );
    let (done, _) = poll(&mut demo, &task_id, "completed");
    assert_eq!(done["result"], text_result("done"));
    assert_eq!(done.get("inputRequests"), None);

    // Anything but an accepted `ok: true` ends the job as declined.
    let task_id = task_id_of(&create(&mut demo, json!({ "ask": true, "ms": 0 })));
    poll(&mut demo, &task_id, "input_required");
    let refuse = json!({ "confirm": { "action": "accept", "content": { "ok": false } } });
    update(&mut demo, &task_id, refuse);
    let (declined, _) = poll(&mut demo, &task_id, "completed");
    assert_eq!(declined["result"], text_result("declined"));
}

#[test]
fn a_modern_task_can_be_cancelled_fail_or_end_with_an_error_result() {
    let mut demo = Demo::start(&[]);
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 60_000 })));
    let cancel = declaring(json!({ "taskId": task_id }));
    let ack = demo.result(id(), "tasks/cancel", cancel.clone());
    assert_eq!(ack, json!({ "resultType": "complete" }));
    let cancelled = get(&mut demo, &task_id)["result"].clone();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled.get("result"), None);
    // Cancelling an ended task is acknowledged and changes nothing.
    assert_eq!(
        demo.result(id(), "tasks/cancel", cancel),
        json!({ "resultType": "complete" })
    );
    assert_eq!(get(&mut demo, &task_id)["result"]["status"], "cancelled");

    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 0, "fail": true })));
    let (failed, _) = poll(&mut demo, &task_id, "failed");
    assert_eq!(
        failed["error"],
        json!({ "code": -32603, "message": "the job failed" })
    );
    assert_eq!(failed.get("result"), None);

    // An isError result is a completed task here: `failed` is for JSON-RPC errors only.
    let args = json!({ "ms": 0, "error_result": true, "text": "no luck" });
    let task_id = task_id_of(&create(&mut demo, args));
    let (completed, _) = poll(&mut demo, &task_id, "completed");
    assert_eq!(
        completed["result"],
        json!({ "content": [{ "type": "text", "text": "no luck" }], "isError": true })
    );
}

#[test]
fn modern_task_requests_are_refused_without_the_extension_or_a_known_task() {
    let mut demo = Demo::start(&[]);
    let required = json!({ "requiredCapabilities": { "extensions": { TASKS: {} } } });
    let refused = demo.error(id(), "tools/call", modern(long_job(json!({}))));
    assert_eq!(refused["code"], -32021, "{refused}");
    assert_eq!(refused["data"], required);
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 0 })));
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = modern(json!({ "taskId": task_id, "inputResponses": {} }));
        let refused = demo.error(id(), method, params);
        assert_eq!(refused["code"], -32021, "{method}: {refused}");
    }
    let listen = modern(json!({ "notifications": { "taskIds": [task_id] } }));
    let refused = demo.error(id(), "subscriptions/listen", listen);
    assert_eq!(refused["code"], -32021, "{refused}");

    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let unknown = declaring(json!({ "taskId": "0".repeat(32), "inputResponses": {} }));
        let error = demo.error(id(), method, unknown);
        assert_eq!(
            error,
            json!({ "code": -32602, "message": "Failed to retrieve task: Task not found" }),
            "{method}"
        );
        let bad = demo.error(id(), method, declaring(json!({ "taskId": 7 })));
        assert_eq!(bad["code"], -32602, "{method}: {bad}");
    }
    // No such method in this era.
    let result = demo.error(
        id(),
        "tasks/result",
        declaring(json!({ "taskId": task_id })),
    );
    assert_eq!(result["code"], -32601);
    for bad in [json!({ "ms": "soon" }), json!({ "text": "x".repeat(5000) })] {
        let error = demo.error(id(), "tools/call", declaring(long_job(bad.clone())));
        assert_eq!(error["code"], -32602, "{bad}");
    }

    // Past its ttl a task is expired.
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 60_000, "ttl_ms": 1 })));
    let (error, _) = poll_until(
        || get(&mut demo, &task_id),
        Duration::from_millis(5),
        "expiry",
        |response| response.get("error").is_some(),
    );
    assert_eq!(
        error["error"],
        json!({ "code": -32602, "message": "Failed to retrieve task: Task has expired" })
    );
}

#[test]
fn a_listen_hears_its_tasks_change_after_their_acknowledgements() {
    let mut demo = Demo::start(&[]);
    let task_id = task_id_of(&create(
        &mut demo,
        json!({ "ask": true, "ms": 200, "poll_ms": 20 }),
    ));
    let listen = declaring(json!({ "notifications": { "taskIds": [task_id, "f".repeat(32)] } }));
    demo.send_request(json!("L"), "subscriptions/listen", listen);
    let ack = demo.wait_for("the acknowledgement", |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "taskIds": [task_id] }),
        "only the known task"
    );
    poll(&mut demo, &task_id, "input_required");

    let update_id = id();
    let accept = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    let params = declaring(json!({ "taskId": task_id, "inputResponses": accept }));
    demo.send_request(update_id.clone(), "tasks/update", params);
    // Everything up to the completion, in the order it was written.
    let mut seen = Vec::new();
    loop {
        let message = demo.next();
        let done = message["params"]["status"] == "completed";
        seen.push(message);
        if done {
            break;
        }
    }
    let acked_at = seen
        .iter()
        .position(|m| m["id"] == update_id)
        .expect("the update's acknowledgement");
    let statuses: Vec<(usize, &Value)> = seen
        .iter()
        .enumerate()
        .filter(|(_, m)| m["method"] == "notifications/tasks")
        .map(|(at, m)| (at, &m["params"]["status"]))
        .collect();
    for (at, status) in &statuses {
        if *status != "input_required" {
            assert!(*at > acked_at, "{status} told before the ack: {seen:#?}");
        }
    }
    let completed = &seen.last().expect("the completion")["params"];
    assert_eq!(completed["taskId"], task_id);
    assert_eq!(completed["result"], text_result("done"));
    assert_eq!(completed["_meta"][SUBSCRIPTION_ID], "L");
    assert_eq!(
        completed.get("resultType"),
        None,
        "a DetailedTask, not a result"
    );
}

#[test]
fn modern_tasks_survive_a_sigkill_only_with_a_tasks_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tasks_dir = dir.path().to_str().expect("utf-8").to_owned();
    let env = [("DEMO_TASKS_DIR", tasks_dir.as_str())];
    let mut demo = Demo::start(&env);
    let asked = task_id_of(&create(
        &mut demo,
        json!({ "ask": true, "ms": 300, "poll_ms": 20 }),
    ));
    let plain = task_id_of(&create(&mut demo, json!({ "ms": 300, "poll_ms": 20 })));
    poll(&mut demo, &asked, "input_required");
    let accept = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    update(&mut demo, &asked, accept);
    // Killed right after the acknowledgement: the answer must have been durable by then.
    demo.kill();
    let mut files = vec![format!("{asked}.json"), format!("{plain}.json")];
    files.sort();
    assert_eq!(task_files(dir.path()), files);

    let mut again = Demo::start(&env);
    for task_id in [&asked, &plain] {
        let (done, _) = poll(&mut again, task_id, "completed");
        assert_eq!(done["result"], text_result("done"), "{task_id}");
    }
    assert!(
        !again.stderr().iter().any(|l| l.starts_with("task-start")),
        "no job ran again: {:?}",
        again.stderr()
    );
    again.kill();

    // In memory only, a restart forgets.
    let mut demo = Demo::start(&[]);
    let task_id = task_id_of(&create(&mut demo, json!({ "ms": 60_000 })));
    demo.kill();
    let mut again = Demo::start(&[]);
    let lost = again.request(id(), "tasks/get", declaring(json!({ "taskId": task_id })));
    assert_eq!(
        lost["error"]["message"],
        "Failed to retrieve task: Task not found"
    );
}
