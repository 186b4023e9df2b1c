//! [`ServerEvent`] as JSON, tagged by `type` (`state_changed`, `tools_changed`,
//! `resource_updated`, `log`, `notification`): the form of the status scope's event stream.

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
}

impl ServerEvent {
    /// The event's `type` in its serde form: `state_changed`, `tools_changed`,
    /// `resource_updated`, `log` or `notification`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ServerEvent::StateChanged { .. } => "state_changed",
            ServerEvent::ToolsChanged { .. } => "tools_changed",
            ServerEvent::ResourceUpdated { .. } => "resource_updated",
            ServerEvent::Log { .. } => "log",
            ServerEvent::Notification { .. } => "notification",
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
            } => EventView::ToolsChanged {
                server,
                added,
                removed,
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
}
