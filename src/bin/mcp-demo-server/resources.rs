//! The MCP features besides tools: one resource (`demo://clock`), one resource template
//! (`demo://greeting/{name}`) and one prompt (`greet`).
//!
//! Both are tiny, but tests of subscriptions and of `prompts/get` need them to behave like the
//! real thing, so they get their own room rather than a corner of the dispatch table.

use serde_json::{json, Value};

use super::jsonrpc::{required_str, Args, Reply, RpcError, INVALID_PARAMS, RESOURCE_NOT_FOUND};
use super::lock;
use super::server::Server;

pub(crate) const CLOCK_URI: &str = "demo://clock";
/// What the URIs of the template `demo://greeting/{name}` start with.
const GREETING_PREFIX: &str = "demo://greeting/";

pub(crate) fn list_resources() -> Reply {
    Ok(json!({ "resources": [{
        "uri": CLOCK_URI,
        "name": "clock",
        "description": "A version number bumped by notify {kind: resource_updated}.",
        "mimeType": "text/plain",
    }] }))
}

pub(crate) fn list_resource_templates() -> Reply {
    Ok(json!({ "resourceTemplates": [{
        "uriTemplate": format!("{GREETING_PREFIX}{{name}}"),
        "name": "greeting",
        "description": "A greeting for {name}.",
        "mimeType": "text/plain",
    }] }))
}

impl Server {
    pub(crate) fn read_resource(&self, params: &Args) -> Reply {
        let uri = required_str(params, "uri")?;
        if let Some(file) = super::skills::read(uri) {
            return Ok(file);
        }
        if let Some(name) = uri.strip_prefix(GREETING_PREFIX).filter(|n| !n.is_empty()) {
            return Ok(json!({ "contents": [{
                "uri": uri,
                "mimeType": "text/plain",
                "text": format!("Hello, {name}!"),
            }] }));
        }
        if uri != CLOCK_URI {
            // The 2026-07-28 revision moved "resource not found" to invalid params.
            let code = if self.era.is_modern() {
                INVALID_PARAMS
            } else {
                RESOURCE_NOT_FOUND
            };
            return Err(RpcError::new(code, "resource not found"));
        }
        let version = lock(&self.state).resource_version;
        Ok(json!({ "contents": [{
            "uri": CLOCK_URI,
            "mimeType": "text/plain",
            "text": format!("version {version}"),
        }] }))
    }

    pub(crate) fn subscribe(&self, params: &Args, on: bool) -> Reply {
        let uri = required_str(params, "uri")?;
        {
            let mut state = lock(&self.state);
            if on {
                state.subscriptions.insert(uri.to_owned());
            } else {
                state.subscriptions.remove(uri);
            }
        }
        let verb = if on { "subscribe" } else { "unsubscribe" };
        self.log_event(&format!("{verb} {uri}"));
        Ok(json!({}))
    }
}

pub(crate) fn list_prompts() -> Reply {
    Ok(json!({ "prompts": [{
        "name": "greet",
        "description": "Greets someone by name.",
        "arguments": [{ "name": "name", "description": "Who to greet.", "required": true }],
    }] }))
}

pub(crate) fn get_prompt(params: &Args) -> Reply {
    let name = required_str(params, "name")?;
    if name != "greet" {
        return Err(RpcError::invalid_params(format!("unknown prompt: {name}")));
    }
    let who = params
        .get("arguments")
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("argument `name` is required"))?;
    Ok(json!({
        "description": "Greets someone by name.",
        "messages": [{ "role": "user",
                       "content": { "type": "text", "text": format!("Hello, {who}!") } }],
    }))
}
