//! The messages of explicit tasks (the Tasks extension): start a tool as a task and get its
//! handle at once ([`StartTask`]), wait for it later, as long as one likes and as often as one
//! likes ([`AwaitTask`]), ask the server how it is doing ([`GetTask`]), cancel it
//! ([`CancelTask`]), and list the tasks the supervisor knows of a server ([`ListTasks`]).
//! A plain [`CallTool`](crate::CallTool) does all of that itself: these are for jobs that take
//! longer than a caller wants to wait.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{Map, Value};

use super::CallOptions;
use crate::error::Error;
use crate::session::request::CallRequest;
use crate::tasks::TaskHandle;
pub use crate::tasks::TaskInfo;

/// Calls tool `name` and answers as soon as the server says how it runs it: with the task's
/// handle ([`TaskStart::Running`]) when it runs it as a task, to be awaited with [`AwaitTask`];
/// with its result ([`TaskStart::Completed`]) when it answered at once (a server without the
/// Tasks extension always does). The timeout is the call's own, until that first answer.
///
/// ```no_run
/// use mcp_supervisor::{AwaitTask, StartTask, Supervisor, TaskStart};
/// use std::time::Duration;
///
/// async fn build(sup: &actix::Addr<Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
///     let start = StartTask::new("ci", "build", serde_json::json!({"target": "release"}));
///     match sup.send(start).await?? {
///         TaskStart::Completed(result) => println!("{:?}", result.content),
///         TaskStart::Running(task) => {
///             // Keep `task` (its server and id) to find it again; wait up to an hour now.
///             let wait = AwaitTask::new(task).timeout(Duration::from_secs(3600));
///             let result = sup.send(wait).await??;
///             println!("{:?}", result.content);
///         }
///         _ => {}
///     }
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct StartTask {
    /// Server name.
    pub server: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// Timeout (until the server's first answer), retry policy, progress.
    pub options: CallOptions,
}

impl StartTask {
    /// Starts tool `name` of `server` with `arguments` (a JSON object; anything else is no
    /// arguments).
    pub fn new(server: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        StartTask {
            server: server.into(),
            name: name.into(),
            arguments: match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            options: CallOptions::here(),
        }
    }
}

call_options!(StartTask);

impl Message for StartTask {
    type Result = Result<TaskStart, Error>;
}

impl From<StartTask> for CallRequest {
    fn from(start: StartTask) -> Self {
        let mut params = Map::with_capacity(2);
        params.insert("name".into(), Value::String(start.name.clone()));
        params.insert("arguments".into(), Value::Object(start.arguments));
        let mut request =
            CallRequest::of_value(start.server, "tools/call", Some(&Value::Object(params)));
        request.tool = Some(start.name);
        request.options = start.options.into();
        request.options.start_task = true;
        request
    }
}

/// How a server took a [`StartTask`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskStart {
    /// It runs the tool as this task.
    Running(TaskHandle),
    /// It answered at once, with this result.
    Completed(rmcp::model::CallToolResult),
}

/// Waits for task `handle` to end, and answers with its result, as [`CallTool`](crate::CallTool)
/// would have: `completed` → the result, `failed` → `rpc`, `cancelled` → `cancelled`, a task
/// the server no longer knows → `outcome_unknown`. When the timeout passes first, the answer
/// is [`Error::TaskTimeout`] and the task runs on: await it again. A task that ended while
/// nobody waited is answered at once, once. A handle from elsewhere (kept by the application
/// across a restart of its process) is polled from now on.
#[derive(Debug, Clone)]
pub struct AwaitTask {
    /// The task.
    pub handle: TaskHandle,
    /// How long to wait; the server's `call_timeout` when `None`.
    pub timeout: Option<Duration>,
}

impl AwaitTask {
    /// Waits for `handle`.
    pub fn new(handle: TaskHandle) -> Self {
        AwaitTask {
            handle,
            timeout: None,
        }
    }

    /// Waits at most `timeout` (the task is not cancelled when it passes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl Message for AwaitTask {
    type Result = Result<rmcp::model::CallToolResult, Error>;
}

/// Asks the server how task `handle` is doing (`tasks/get`), without waiting for its end. The
/// result of a completed task is not taken by it: [`AwaitTask`] still gets it.
#[derive(Debug, Clone)]
pub struct GetTask {
    /// The task.
    pub handle: TaskHandle,
    /// Timeout, retry policy.
    pub options: CallOptions,
}

impl GetTask {
    /// Asks about `handle`.
    pub fn new(handle: TaskHandle) -> Self {
        GetTask {
            handle,
            options: CallOptions::here(),
        }
    }
}

call_options!(GetTask);

impl Message for GetTask {
    type Result = Result<TaskInfo, Error>;
}

/// Asks the server to cancel task `handle` (`tasks/cancel`). Cancellation is cooperative: the
/// server acknowledges it, and the task may still complete; whoever awaits it is answered
/// with however it ends (`cancelled`, if it was).
#[derive(Debug, Clone)]
pub struct CancelTask {
    /// The task.
    pub handle: TaskHandle,
    /// Timeout, retry policy.
    pub options: CallOptions,
}

impl CancelTask {
    /// Cancels `handle`.
    pub fn new(handle: TaskHandle) -> Self {
        CancelTask {
            handle,
            options: CallOptions::here(),
        }
    }
}

call_options!(CancelTask);

impl Message for CancelTask {
    type Result = Result<(), Error>;
}

/// The tasks the supervisor follows on `server`: those running, then those that ended with
/// their outcome not taken yet.
#[derive(Debug, Clone)]
pub struct ListTasks {
    /// Server name.
    pub server: String,
}

impl ListTasks {
    /// The tasks of `server`.
    pub fn new(server: impl Into<String>) -> Self {
        ListTasks {
            server: server.into(),
        }
    }
}

impl Message for ListTasks {
    type Result = Result<Vec<TaskInfo>, Error>;
}

/// What a `tasks/get` answer says of task `handle`.
pub(crate) fn task_info(handle: TaskHandle, answer: &Value) -> Result<TaskInfo, String> {
    // A session-era server's task (2025-11-25) reads with its own field names, and inlines
    // no outcome.
    let state = crate::protocol::tasks::parse_task(answer)
        .or_else(|_| crate::protocol::tasks::parse_experimental_task(answer))?;
    if state.task_id != handle.task_id {
        return Err(format!(
            "asked for task {}, answered with task {}",
            crate::protocol::text::server_text(&handle.task_id),
            crate::protocol::text::server_text(&state.task_id)
        ));
    }
    let mut info = TaskInfo::new(handle, state.status);
    info.status_message = state.status_message;
    info.poll_interval = state.poll_interval;
    if state.ttl.is_some() {
        info.handle.ttl = state.ttl;
    }
    Ok(info)
}

/// The request of a [`GetTask`] or [`CancelTask`].
pub(crate) fn task_request(
    handle: &TaskHandle,
    method: &'static str,
    options: CallOptions,
) -> CallRequest {
    let params = crate::protocol::tasks::task_params(&handle.task_id);
    let mut request = CallRequest::of_value(handle.server.clone(), method, Some(&params));
    request.options = options.into();
    request
}
