//! [`ServerEvent`] as JSON, tagged by `type` (`state_changed`, `tools_changed`,
//! `resource_updated`, `log`, `notification`, `replacing`, `replaced`, `replace_failed`,
//! `task_changed`): the form of the status scope's event stream.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::actor::messages::ServerEvent;
use crate::policy::state::ServerState;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventView<'a> {
    StateChanged {
        server: &'a str,
        state: &'a ServerState,
        message: &'a str,
    },
    ToolsChanged {
        server: &'a str,
        added: &'a [String],
        removed: &'a [String],
        changed: &'a [String],
    },
    ResourceUpdated {
        server: &'a str,
        uri: &'a str,
    },
    Log {
        server: &'a str,
        params: &'a Value,
    },
    Notification {
        server: &'a str,
        method: &'a str,
        params: &'a Option<Value>,
    },
    Replacing {
        server: &'a str,
    },
    Replaced {
        server: &'a str,
    },
    ReplaceFailed {
        server: &'a str,
        error: Box<crate::serialize::ErrorView>,
    },
    TaskChanged {
        server: &'a str,
        task_id: &'a str,
        tool: &'a str,
        status: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: &'a Option<String>,
    },
}

impl ServerEvent {
    /// The event's `type` in its serde form: `state_changed`, `tools_changed`,
    /// `resource_updated`, `log`, `notification`, `replacing`, `replaced`, `replace_failed` or
    /// `task_changed`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ServerEvent::StateChanged { .. } => "state_changed",
            ServerEvent::ToolsChanged { .. } => "tools_changed",
            ServerEvent::ResourceUpdated { .. } => "resource_updated",
            ServerEvent::Log { .. } => "log",
            ServerEvent::Notification { .. } => "notification",
            ServerEvent::Replacing { .. } => "replacing",
            ServerEvent::Replaced { .. } => "replaced",
            ServerEvent::ReplaceFailed { .. } => "replace_failed",
            ServerEvent::TaskChanged { .. } => "task_changed",
        }
    }
}

impl Serialize for ServerEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let view = match self {
            ServerEvent::StateChanged {
                server,
                state,
                message,
            } => EventView::StateChanged {
                server,
                state,
                message,
            },
            ServerEvent::ToolsChanged {
                server,
                added,
                removed,
                changed,
            } => EventView::ToolsChanged {
                server,
                added,
                removed,
                changed,
            },
            ServerEvent::ResourceUpdated { server, uri } => {
                EventView::ResourceUpdated { server, uri }
            }
            ServerEvent::Log { server, params } => EventView::Log { server, params },
            ServerEvent::Notification {
                server,
                method,
                params,
            } => EventView::Notification {
                server,
                method,
                params,
            },
            ServerEvent::Replacing { server } => EventView::Replacing { server },
            ServerEvent::Replaced { server } => EventView::Replaced { server },
            ServerEvent::ReplaceFailed { server, error } => EventView::ReplaceFailed {
                server,
                error: Box::new(error.into()),
            },
            ServerEvent::TaskChanged {
                server,
                task_id,
                tool,
                status,
                message,
            } => EventView::TaskChanged {
                server,
                task_id,
                tool,
                status: status.as_str(),
                message,
            },
        };
        view.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_tagged_by_type() {
        let e = ServerEvent::StateChanged {
            server: "fs".into(),
            state: ServerState::Ready,
            message: "Connected".into(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "state_changed", "server": "fs", "state": {"name": "ready"}, "message": "Connected"})
        );
        assert_eq!(e.type_name(), "state_changed");
        let n = ServerEvent::Notification {
            server: "fs".into(),
            method: "notifications/x".into(),
            params: None,
        };
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(v["type"], n.type_name());
        assert_eq!(v["params"], Value::Null);
    }

    #[test]
    fn a_replacement_step_is_tagged_and_a_failed_one_says_why() {
        let replaced = ServerEvent::Replaced {
            server: "fs".into(),
        };
        assert_eq!(
            serde_json::to_value(&replaced).unwrap(),
            json!({"type": "replaced", "server": "fs"})
        );
        let failed = ServerEvent::ReplaceFailed {
            server: "fs".into(),
            error: crate::error::Error::Stopped {
                server: "fs".into(),
            },
        };
        let v = serde_json::to_value(&failed).unwrap();
        assert_eq!(v["type"], "replace_failed");
        assert_eq!(v["error"]["code"], "stopped");
    }
}
