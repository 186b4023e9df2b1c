//! The tools: `tools/call` dispatch, the result shapes, and the tools that answer at once.
//!
//! Tools that answer later, from a worker thread, are in `deferred`; the listing (names,
//! schemas, hints) is in `catalogue`; the 2026-07-28 era's multi-round-trip forms of `confirm`
//! and `ask_client` are in `mrtr`; `long_job`, answered with a task, and the task methods of
//! both eras are in `tasks`. A new tool is added in the catalogue and in `call_tool` or
//! `call_quick_tool`. A tool that notifies (`notify`) does so in the era of its call: to the
//! session in the 2025 era, to the listens that asked for it in the 2026-07-28 one.

mod catalogue;
mod deferred;
mod mrtr;
mod tasks;

pub(crate) use mrtr::Flows;
pub(crate) use tasks::{
    declares_tasks, missing_tasks_capability, session_tasks_capability, Tasks,
    SESSION_TASKS_VERSION, TASKS_EXTENSION,
};

use std::io::Write;
use std::process;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::jsonrpc::{required_str, required_u64, Args, Reply, RpcError};
use super::listen::Change;
use super::lock;
use super::resources::CLOCK_URI;
use super::server::Server;

/// What a tool call produced right away.
pub(crate) enum Outcome {
    /// Answer now.
    Reply(Reply),
    /// A worker thread answers later, or nobody ever does (`hang`, cancellation).
    Deferred,
}

fn text_result(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }], "isError": false })
}

fn structured_result(text: impl Into<String>, structured: Value) -> Value {
    let mut result = text_result(text);
    result["structuredContent"] = structured;
    result
}

impl Server {
    pub(crate) fn call_tool(&self, id: &Value, params: &Args) -> Outcome {
        self.crash_if_asked();
        let Ok(name) = required_str(params, "name") else {
            return Outcome::Reply(Err(RpcError::invalid_params("tools/call needs a `name`")));
        };
        self.log_event(&format!("call {name}"));
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Args::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(_) => {
                let error = RpcError::invalid_params("`arguments` must be an object");
                return Outcome::Reply(Err(error));
            }
        };
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .cloned();
        let modern = self.era.is_modern();
        let stray = params.contains_key("inputResponses") || params.contains_key("requestState");
        if modern && stray && !mrtr::MRTR_TOOLS.contains(&name) {
            return Outcome::Reply(self.refuse_stray_input(id, name, params));
        }
        if let Some(refusal) = self.refuse_task_augmentation(name, params) {
            return Outcome::Reply(Err(refusal));
        }
        let outcome = match name {
            "slow" => self.tool_slow(id, &args, progress_token),
            "counter" => self.tool_counter(id, &args),
            "confirm" if modern => Ok(Outcome::Reply(self.mrtr_confirm(id, &args, params))),
            "confirm" => self.tool_confirm(id, &args),
            "ask_client" if modern => Ok(Outcome::Reply(self.mrtr_ask_client(id, &args, params))),
            "ask_client" => self.tool_ask_client(id, &args),
            tasks::LONG_JOB => self.tool_long_job(id, &args, params),
            "hang" => {
                self.log_event(&format!("hang {id}"));
                Ok(Outcome::Deferred)
            }
            _ => self
                .call_quick_tool(name, &args)
                .map(|r| Outcome::Reply(Ok(r))),
        };
        outcome.unwrap_or_else(|error| Outcome::Reply(Err(error)))
    }

    /// Tools that finish immediately on the reader thread.
    fn call_quick_tool(&self, name: &str, args: &Args) -> Reply {
        match name {
            "echo" => {
                let text = required_str(args, "text")?;
                Ok(text_result(match super::config::version_label() {
                    Some(version) => format!("[{version}] {text}"),
                    None => text.to_owned(),
                }))
            }
            "add" => tool_add(args),
            "touch" => {
                self.log_event("touch");
                Ok(text_result("touched"))
            }
            "notify" => self.tool_notify(args),
            "long_line" => {
                let bytes = required_u64(args, "bytes")?;
                self.out.write_long_line(bytes);
                Ok(text_result(format!("wrote {bytes}")))
            }
            "garbage" => {
                self.write_garbage();
                Ok(text_result("ok"))
            }
            "extra" if lock(&self.state).extra_tool => Ok(text_result("extra")),
            _ => Err(RpcError::invalid_params(format!("unknown tool: {name}"))),
        }
    }

    fn tool_notify(&self, args: &Args) -> Reply {
        match required_str(args, "kind")? {
            "tools_changed" => {
                {
                    let mut state = lock(&self.state);
                    state.extra_tool = !state.extra_tool;
                }
                if self.era.is_modern() {
                    self.deliver(Change::ToolsListChanged);
                } else {
                    self.notify("notifications/tools/list_changed", None);
                }
            }
            "log" => {
                let params =
                    json!({ "level": "info", "logger": "demo", "data": "hello from demo" });
                if self.era.wants_log("info") {
                    self.notify("notifications/message", Some(params));
                }
            }
            "resource_updated" => {
                let subscribed = {
                    let mut state = lock(&self.state);
                    state.resource_version += 1;
                    state.subscriptions.contains(CLOCK_URI)
                };
                if self.era.is_modern() {
                    self.deliver(Change::ResourceUpdated(CLOCK_URI));
                } else if subscribed {
                    let params = json!({ "uri": CLOCK_URI });
                    self.notify("notifications/resources/updated", Some(params));
                }
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown kind: {other} (expected tools_changed, log or resource_updated)"
                )))
            }
        }
        Ok(text_result("notified"))
    }

    fn write_garbage(&self) {
        // Varies per call so clients cannot get away with matching one fixed string.
        let noise = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ process::id();
        self.out.write_with(|out| {
            writeln!(out, "this is not json")?;
            writeln!(out, "{{\"unterminated\": ")?;
            writeln!(out, "~~ noise {noise:08x} <<not a message>> %% ~~")
        });
    }
}

fn tool_add(args: &Args) -> Reply {
    let number = |key: &str| {
        args.get(key)
            .filter(|v| v.is_number())
            .ok_or_else(|| RpcError::invalid_params(format!("`{key}` must be a number")))
    };
    let (a, b) = (number("a")?, number("b")?);
    // Integers stay integers ("5", not "5.0"); anything else is added as floats.
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            serde_json::Number::from_f64(sum)
                .map(Value::Number)
                .ok_or_else(|| RpcError::invalid_params("the sum is not a finite number"))?
        }
    };
    Ok(structured_result(sum.to_string(), json!({ "sum": sum })))
}
