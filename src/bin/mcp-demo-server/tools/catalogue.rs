//! The tool catalogue: names, descriptions, schemas and hints, in listing order, and
//! `tools/list` over it.
//!
//! The hints matter to the supervisor (they decide what may be re-sent after a crash), so the
//! listing is kept in one place where it can be read against the tools' actual behaviour.

use serde_json::{json, Value};

use super::super::jsonrpc::{Args, Reply};
use super::super::lock;
use super::super::pagination;
use super::super::server::Server;

/// How `long_job` is listed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LongJob {
    /// Not at all (the default: it is callable either way).
    Hidden,
    /// As a tool (`DEMO_LIST_TASKS`).
    Listed,
    /// With `execution.taskSupport: "optional"`: in a 2025-11-25 session, where tasks are asked
    /// for by the client, tool by tool.
    WithTaskSupport,
}

impl Server {
    pub(crate) fn list_tools(&self, params: &Args) -> Reply {
        let (with_extra, session_tasks) = {
            let state = lock(&self.state);
            (state.extra_tool, state.session.has_tasks())
        };
        let long_job = match (
            self.config.list_tasks,
            session_tasks && !self.era.is_modern(),
        ) {
            (false, _) => LongJob::Hidden,
            (true, false) => LongJob::Listed,
            (true, true) => LongJob::WithTaskSupport,
        };
        let tools = tool_definitions(self.config.era.list_confirm, long_job, with_extra);
        pagination::page("tools", &tools, params, self.config.page_size)
    }
}

/// The tools in listing order; `confirm` is listed only with `DEMO_LIST_CONFIRM` and `long_job`
/// only with `DEMO_LIST_TASKS` (both are callable either way, and the listing stays what the
/// existing tests count), `extra` only exists after `notify {kind: "tools_changed"}`.
fn tool_definitions(with_confirm: bool, long_job: LongJob, with_extra: bool) -> Vec<Value> {
    let mut tools = vec![
        json!({ "name": "echo", "description": "Echoes the text back.",
            "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } },
                             "required": ["text"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "add", "description": "Adds two numbers.",
            "inputSchema": { "type": "object", "required": ["a", "b"],
                             "properties": { "a": { "type": "number" }, "b": { "type": "number" } } },
            "outputSchema": { "type": "object", "properties": { "sum": { "type": "number" } },
                              "required": ["sum"] },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "slow", "description": "Waits, reporting progress after each step.",
            "inputSchema": { "type": "object", "properties": {
                "seconds": { "type": "number", "minimum": 0, "default": 1 },
                "steps": { "type": "integer", "minimum": 0, "default": 5 } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "counter",
            "description": "Increments a persistent counter (NOT idempotent); can crash or delay.",
            "inputSchema": { "type": "object", "properties": {
                "delay_ms": { "type": "integer", "minimum": 0, "default": 0 },
                "crash": { "type": "boolean", "default": false } } },
            "outputSchema": { "type": "object", "properties": { "count": { "type": "integer" } },
                              "required": ["count"] },
            "annotations": { "readOnlyHint": false, "destructiveHint": false,
                             "idempotentHint": false } }),
        json!({ "name": "touch", "description": "Records a touch; safe to repeat.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": false, "destructiveHint": false,
                             "idempotentHint": true } }),
        json!({ "name": "hang", "description": "Never answers.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "ask_client",
            "description": "Sends a request to the client and returns its response.",
            "inputSchema": { "type": "object", "required": ["method"], "properties": {
                "method": { "type": "string" }, "params": { "type": "object" } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "notify", "description": "Sends a notification to the client.",
            "inputSchema": { "type": "object", "required": ["kind"], "properties": {
                "kind": { "type": "string", "enum": ["tools_changed", "log", "resource_updated"] } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "long_line", "description": "Writes one huge non-JSON line to stdout.",
            "inputSchema": { "type": "object", "required": ["bytes"], "properties": {
                "bytes": { "type": "integer", "minimum": 0 } } },
            "annotations": { "readOnlyHint": true } }),
        json!({ "name": "garbage", "description": "Writes non-JSON lines to stdout.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
    ];
    if with_confirm {
        tools.push(json!({ "name": "confirm",
            "description": "Asks the client to confirm, `rounds` times (an elicitation; \
                            multi-round-trip in 2026-07-28, after a state-only round if asked).",
            "inputSchema": { "type": "object", "properties": {
                "rounds": { "type": "integer", "minimum": 1, "maximum": 1000, "default": 1 },
                "state_only": { "type": "boolean", "default": false } } },
            "annotations": { "readOnlyHint": true } }));
    }
    if long_job != LongJob::Hidden {
        let mut tool = json!({ "name": "long_job",
            "description": "A job of `ms` milliseconds answered with a task; asks to continue \
                            half-way with `ask`, fails with `fail`, ends with an isError result \
                            with `error_result`.",
            "inputSchema": { "type": "object", "properties": {
                "ms": { "type": "integer", "minimum": 0, "maximum": 86_400_000, "default": 2000 },
                "poll_ms": { "type": "integer", "minimum": 1, "maximum": 3_600_000,
                             "default": 200 },
                "ask": { "type": "boolean", "default": false },
                "fail": { "type": "boolean", "default": false },
                "error_result": { "type": "boolean", "default": false },
                "text": { "type": "string", "maxLength": 4096, "default": "done" },
                "ttl_ms": { "type": "integer", "minimum": 1, "maximum": 604_800_000,
                            "default": 600_000 } } },
            "annotations": { "readOnlyHint": true } });
        if long_job == LongJob::WithTaskSupport {
            tool["execution"] = json!({ "taskSupport": "optional" });
        }
        tools.push(tool);
    }
    if with_extra {
        tools.push(
            json!({ "name": "extra", "description": "Appears after tools_changed.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "readOnlyHint": true } }),
        );
    }
    tools
}
