//! [`ServerState`] as JSON: tagged by its [`name`](ServerState::name), its instants as
//! milliseconds from now, a failed state's error as an [`ErrorView`](super::ErrorView).

use serde::{Serialize, Serializer};

use super::millis_until;
use crate::error::Error;
use crate::policy::state::ServerState;

#[derive(Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
enum StateView<'a> {
    Connecting {
        attempt: u32,
        max: u32,
    },
    Ready,
    Reconnecting {
        attempt: u32,
        retry_in_ms: Option<u64>,
    },
    Failed {
        error: &'a Error,
        revive_in_ms: Option<u64>,
    },
    Stopped,
}

impl Serialize for ServerState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let view = match self {
            ServerState::Connecting { attempt, max } => StateView::Connecting {
                attempt: *attempt,
                max: *max,
            },
            ServerState::Ready => StateView::Ready,
            ServerState::Reconnecting { attempt, retry_at } => StateView::Reconnecting {
                attempt: *attempt,
                retry_in_ms: retry_at.map(millis_until),
            },
            ServerState::Failed { error, revive_at } => StateView::Failed {
                error,
                revive_in_ms: revive_at.map(millis_until),
            },
            ServerState::Stopped => StateView::Stopped,
        };
        view.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;

    #[test]
    fn states_are_tagged_by_name_and_instants_count_down() {
        assert_eq!(
            serde_json::to_value(ServerState::Ready).unwrap(),
            json!({"name": "ready"})
        );
        let later = Instant::now() + Duration::from_secs(60);
        let v = serde_json::to_value(ServerState::Reconnecting {
            attempt: 2,
            retry_at: Some(later),
        })
        .unwrap();
        assert_eq!(v["name"], "reconnecting");
        let ms = v["retry_in_ms"].as_u64().unwrap();
        assert!((59_000..=60_000).contains(&ms), "{ms}");
        let failed = ServerState::Failed {
            error: Error::Stopped {
                server: "fs".into(),
            },
            revive_at: Some(Instant::now()),
        };
        let v = serde_json::to_value(failed).unwrap();
        assert_eq!(v["error"]["code"], "stopped");
        assert_eq!(v["revive_in_ms"], 0, "a passed instant is 0, not negative");
    }
}
