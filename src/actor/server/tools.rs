//! The cached tool list: replaced after each handshake and after `tools/list_changed`, with the
//! difference reported as [`ServerEvent::ToolsChanged`]. Its own room because the refresh is a
//! small protocol of its own: a burst of notifications is gathered into one fetch of all pages,
//! made as ordinary calls through the actor.

use std::time::Duration;

use actix::prelude::*;
use rmcp::model::Tool;
use serde_json::json;

use super::ServerActor;
use crate::actor::messages::{Call, ServerEvent};
use crate::error::Error;
use crate::protocol::lifecycle;

/// How long to gather `tools/list_changed` notifications before fetching the list once.
const TOOLS_REFRESH_DEBOUNCE: Duration = Duration::from_millis(100);

impl ServerActor {
    pub(super) fn schedule_tools_refresh(&mut self, ctx: &mut Context<Self>) {
        if self.tools_refresh_pending {
            return;
        }
        self.tools_refresh_pending = true;
        ctx.run_later(TOOLS_REFRESH_DEBOUNCE, |act, ctx| {
            act.tools_refresh_pending = false;
            let addr = ctx.address();
            let server = act.name.to_string();
            let timeout = act.settings.call_timeout;
            let fetch = async move {
                let mut tools = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let call = Call::new(
                        server.clone(),
                        "tools/list",
                        cursor.as_ref().map(|c| json!({ "cursor": c })),
                    )
                    .timeout(timeout);
                    let result = addr
                        .send(call)
                        .await
                        .map_err(|_| Error::Stopped { server: server.clone() })??;
                    let (page, next) = lifecycle::parse_tools_page(&server, result)?;
                    tools.extend(page);
                    match next {
                        Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                        _ => return Ok::<_, Error>(tools),
                    }
                }
            };
            ctx.spawn(fetch.into_actor(act).map(|result, act, _| match result {
                Ok(tools) => act.replace_tools(tools, true),
                Err(e) => tracing::warn!(server = %act.name, error = %e.without_stderr(), "refreshing the tool list failed"),
            }));
        });
    }

    /// Replaces the cached list; `report` says whether differences are events (not on the
    /// first handshake).
    pub(super) fn replace_tools(&mut self, tools: Vec<Tool>, report: bool) {
        let (added, removed) = lifecycle::diff_tools(&self.tools, &tools);
        self.tools = tools;
        if report && (!added.is_empty() || !removed.is_empty()) {
            self.emit(ServerEvent::ToolsChanged {
                server: self.name.to_string(),
                added,
                removed,
            });
        }
    }
}
