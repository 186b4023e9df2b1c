//! The actors the conformance client registers with the supervisor: [`Client`] answers the
//! server's requests (in the session era as server-initiated requests, in the 2026-07-28
//! revision as the input a multi-round-trip result asks for), [`States`] forwards state changes.

use actix::{Actor, Context, Handler};
use mcp_supervisor::{RpcError, ServerEvent, ServerRequest, ServerState};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

/// Accepts every elicitation with the values its schema suggests (SEP-1034 defaults); roots
/// are an empty list.
pub struct Client;

impl Actor for Client {
    type Context = Context<Self>;
}

impl Handler<ServerRequest> for Client {
    type Result = Result<Value, RpcError>;

    fn handle(&mut self, request: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        eprintln!("conformance client: the server asks {}", request.method);
        match request.method.as_str() {
            "elicitation/create" => Ok(json!({
                "action": "accept",
                "content": accepted_content(request.params.as_ref()),
            })),
            "roots/list" => Ok(json!({ "roots": [] })),
            other => Err(RpcError::new(-32601, format!("{other} is not supported"))),
        }
    }
}

/// For every property of `params.requestedSchema`: its `default`, or `true` for a boolean
/// without one (a confirmation); other properties without a default are left out.
fn accepted_content(params: Option<&Value>) -> Map<String, Value> {
    let properties = params
        .and_then(|p| p.pointer("/requestedSchema/properties"))
        .and_then(Value::as_object);
    properties
        .into_iter()
        .flatten()
        .filter_map(|(name, schema)| {
            let value = match schema.get("default") {
                Some(default) => default.clone(),
                None if schema.get("type") == Some(&json!("boolean")) => Value::Bool(true),
                None => return None,
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// Forwards state changes, so that `main` can wait for Ready or Failed.
pub struct States(pub mpsc::UnboundedSender<ServerState>);

impl Actor for States {
    type Context = Context<Self>;
}

impl Handler<ServerEvent> for States {
    type Result = ();

    fn handle(&mut self, event: ServerEvent, _: &mut Context<Self>) {
        if let ServerEvent::StateChanged { state, message, .. } = event {
            eprintln!("conformance client: {}: {message}", state.name());
            let _ = self.0.send(state);
        }
    }
}
