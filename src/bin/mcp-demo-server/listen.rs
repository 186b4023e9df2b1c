//! `subscriptions/listen`: the 2026-07-28 revision's channel for change notifications, which
//! replaces `resources/subscribe` and the unsolicited `list_changed` of the 2025 revisions.
//!
//! A listen is a request that stays open: its first message is
//! `notifications/subscriptions/acknowledged` with the part of its filter we honour, then every
//! change it asked for arrives as a notification whose `params._meta` names it
//! (`io.modelcontextprotocol/subscriptionId`, the listen's JSON-RPC id with its JSON type kept),
//! and it ends with its JSON-RPC result: when the client cancels it
//! (`notifications/cancelled {requestId}`) or `DEMO_LISTEN_END_AFTER_MS` after it opened.
//! Several may be open at once. The changes come from the same places as in the 2025 era (the
//! `notify` tool), which call [`Server::deliver`] instead of sending to the session. With the
//! Tasks extension a listen may also name tasks (`notifications.taskIds`, only from a client that
//! declares the extension, else `-32021`): it is acknowledged with the ones we know, and hears
//! `notifications/tasks` (the full `DetailedTask`) on each change of their status, from the
//! task clock (`tools/tasks`).
//!
//! The acknowledgement and every delivery are written with the state lock held, so no
//! notification of a listen can overtake its acknowledgement, nor follow its result.

use std::thread;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::era::{Era, SUBSCRIPTION_ID_KEY};
use super::jsonrpc::{Args, RpcError};
use super::server::Server;
use super::tools::{declares_tasks, missing_tasks_capability};
use super::{lock, stderr_line};

/// Listens open at once; a client opening more is refused rather than remembered forever.
const MAX_LISTENS: usize = 64;
/// Resource URIs one listen may name, and task ids.
const MAX_URIS: usize = 256;
const MAX_TASK_IDS: usize = 256;
/// Longer than any task id of ours: names no task, and is not kept.
const MAX_TASK_ID_LEN: usize = 64;

struct Listen {
    id: Value,
    /// The id as compact JSON, so `7` and `"7"` are different listens.
    key: String,
    /// Tells a re-opened listen with the same id from the one a timer was set for.
    serial: u64,
    tools: bool,
    uris: Vec<String>,
    /// The tasks it hears about: those it named that we knew when it opened.
    task_ids: Vec<String>,
}

/// The open listens, in the order they were opened.
#[derive(Default)]
pub(crate) struct Listens {
    open: Vec<Listen>,
    opened: u64,
}

/// A change a listen may have asked to hear about.
pub(crate) enum Change<'a> {
    ToolsListChanged,
    ResourceUpdated(&'a str),
    /// A task's status changed; `detailed` is its `DetailedTask`.
    Task {
        task_id: &'a str,
        detailed: &'a Value,
    },
}

/// What a listen asked for, as far as we honour it.
struct Filter {
    tools: bool,
    uris: Option<Vec<String>>,
    /// The task ids asked for; narrowed to the known ones when the listen opens.
    task_ids: Option<Vec<String>>,
}

impl Filter {
    /// The honoured subset, as the acknowledgement states it: tool-list changes, resource
    /// updates and the known tasks (what `server/discover` declares); prompt- and resource-list
    /// changes never happen here, so they are not honoured.
    fn honoured(&self) -> Value {
        let mut honoured = Map::new();
        if self.tools {
            honoured.insert("toolsListChanged".into(), json!(true));
        }
        if let Some(uris) = &self.uris {
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        if let Some(task_ids) = &self.task_ids {
            honoured.insert("taskIds".into(), json!(task_ids));
        }
        Value::Object(honoured)
    }
}

fn parse_filter(params: &Args) -> Result<Filter, RpcError> {
    let Some(Value::Object(filter)) = params.get("notifications") else {
        return Err(RpcError::invalid_params(
            "subscriptions/listen needs `notifications` (an object)",
        ));
    };
    let flag = |key: &str| match filter.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(on)) => Ok(*on),
        Some(_) => Err(RpcError::invalid_params(format!(
            "`notifications.{key}` must be a boolean"
        ))),
    };
    let tools = flag("toolsListChanged")?;
    flag("promptsListChanged")?;
    flag("resourcesListChanged")?;
    let uris = match filter.get("resourceSubscriptions") {
        None | Some(Value::Null) => None,
        Some(Value::Array(given)) if given.len() <= MAX_URIS => {
            let mut uris: Vec<String> = Vec::new();
            for uri in given {
                let uri = uri.as_str().ok_or_else(|| {
                    RpcError::invalid_params("`notifications.resourceSubscriptions` holds URIs")
                })?;
                if !uris.iter().any(|u| u == uri) {
                    uris.push(uri.to_owned());
                }
            }
            Some(uris)
        }
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "`notifications.resourceSubscriptions` must be an array of at most {MAX_URIS} URIs"
            )))
        }
    };
    let task_ids = match filter.get("taskIds") {
        None | Some(Value::Null) => None,
        Some(Value::Array(given)) if given.len() <= MAX_TASK_IDS => {
            let mut ids: Vec<String> = Vec::new();
            for id in given {
                let id = id.as_str().ok_or_else(|| {
                    RpcError::invalid_params("`notifications.taskIds` holds task ids (strings)")
                })?;
                if id.len() <= MAX_TASK_ID_LEN && !ids.iter().any(|i| i == id) {
                    ids.push(id.to_owned());
                }
            }
            Some(ids)
        }
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "`notifications.taskIds` must be an array of at most {MAX_TASK_IDS} task ids"
            )))
        }
    };
    Ok(Filter {
        tools,
        uris,
        task_ids,
    })
}

impl Server {
    /// Opens a listen: acknowledged now, answered when it ends.
    pub(crate) fn listen(&self, id: &Value, params: &Args) {
        let mut filter = match parse_filter(params) {
            Ok(filter) => filter,
            Err(error) => return self.respond(id, Err(error)),
        };
        if filter.task_ids.is_some() && !declares_tasks(params) {
            return self.respond(id, Err(missing_tasks_capability()));
        }
        let key = id.to_string();
        let opened = {
            let mut state = lock(&self.state);
            if let Some(task_ids) = &mut filter.task_ids {
                task_ids.retain(|task_id| state.tasks.knows_modern(task_id));
            }
            let honoured = filter.honoured();
            let listens = &mut state.listens;
            if listens.open.iter().any(|l| l.key == key) {
                None
            } else if listens.open.len() >= MAX_LISTENS {
                Some(Err(MAX_LISTENS))
            } else {
                listens.opened = listens.opened.saturating_add(1);
                let serial = listens.opened;
                listens.open.push(Listen {
                    id: id.clone(),
                    key: key.clone(),
                    serial,
                    tools: filter.tools,
                    uris: filter.uris.unwrap_or_default(),
                    task_ids: filter.task_ids.unwrap_or_default(),
                });
                // Logged first, so a test that saw the acknowledgement finds the line.
                self.log_event(&format!("listen {id} {honoured}"));
                let ack =
                    json!({ "notifications": honoured, "_meta": { SUBSCRIPTION_ID_KEY: id } });
                self.notify("notifications/subscriptions/acknowledged", Some(ack));
                Some(Ok(serial))
            }
        };
        let serial = match opened {
            Some(Ok(serial)) => serial,
            Some(Err(limit)) => {
                let error = RpcError::invalid_request(format!("at most {limit} listens at once"));
                return self.respond(id, Err(error));
            }
            None => {
                let error = RpcError::invalid_request(format!("a listen with id {id} is open"));
                return self.respond(id, Err(error));
            }
        };
        if let Some(ms) = self.config.era.listen_end_after_ms {
            self.end_listen_later(key, serial, ms);
        }
    }

    /// Sends `change` to every open listen that asked for it.
    pub(crate) fn deliver(&self, change: Change<'_>) {
        let state = lock(&self.state);
        self.deliver_to(&state.listens, &change);
    }

    /// `deliver`, for a caller that holds the state lock already (the task clock).
    pub(crate) fn deliver_to(&self, listens: &Listens, change: &Change<'_>) {
        for listen in &listens.open {
            let (method, mut params) = match *change {
                Change::ToolsListChanged if listen.tools => {
                    ("notifications/tools/list_changed", json!({}))
                }
                Change::ResourceUpdated(uri) if listen.uris.iter().any(|u| u == uri) => {
                    ("notifications/resources/updated", json!({ "uri": uri }))
                }
                Change::Task { task_id, detailed }
                    if listen.task_ids.iter().any(|t| t == task_id) =>
                {
                    ("notifications/tasks", detailed.clone())
                }
                _ => continue,
            };
            params["_meta"] = json!({ SUBSCRIPTION_ID_KEY: listen.id });
            self.log_event(&format!("deliver {} {method}", listen.id));
            self.notify(method, Some(params));
        }
    }

    /// `notifications/cancelled` naming an open listen ends it (answered, as a graceful end).
    pub(crate) fn end_cancelled_listen(&self, params: &Args) {
        let key = params.get("requestId").unwrap_or(&Value::Null).to_string();
        self.end_listen(&key, None, "cancelled");
    }

    fn end_listen_later(&self, key: String, serial: u64, ms: u64) {
        let server = self.clone();
        let spawned = thread::Builder::new().spawn(move || {
            thread::sleep(Duration::from_millis(ms));
            server.end_listen(&key, Some(serial), "timer");
        });
        if let Err(e) = spawned {
            stderr_line(&format!("demo: cannot start listen timer: {e}"));
        }
    }

    /// Ends the listen `key` (only the one opened as `serial`, if given) with its result.
    fn end_listen(&self, key: &str, serial: Option<u64>, why: &str) {
        let ended = {
            let mut state = lock(&self.state);
            let open = &mut state.listens.open;
            open.iter()
                .position(|l| l.key == key && serial.is_none_or(|s| s == l.serial))
                .map(|at| open.remove(at))
        };
        let Some(listen) = ended else { return };
        // Reached from a notification or a timer, which have no era of their own.
        let modern = self.in_era(Era::Modern { log_level: None });
        modern.log_event(&format!("listen-end {} {why}", listen.id));
        let result = json!({ "resultType": "complete",
                             "_meta": { SUBSCRIPTION_ID_KEY: listen.id } });
        modern.respond(&listen.id, Ok(result));
    }
}
