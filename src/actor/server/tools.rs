//! The cached tool list: replaced after each handshake and after `tools/list_changed`, with the
//! difference reported as [`ServerEvent::ToolsChanged`]. Its own room because the refresh is a
//! small protocol of its own: a burst of notifications is gathered into one fetch of all pages,
//! made as ordinary calls through the actor, one fetch at a time, bounded like the handshake's.

use std::time::Duration;

use actix::prelude::*;
use rmcp::model::Tool;

use super::ServerActor;
use crate::actor::messages::{Call, ServerEvent};
use crate::error::Error;
use crate::protocol::{lifecycle, pagination};

/// How long to gather `tools/list_changed` notifications before fetching the list once.
const TOOLS_REFRESH_DEBOUNCE: Duration = Duration::from_millis(100);

/// Where the refresh of the tool list is. One runs at a time: notifications that arrive while
/// one runs ask for one more after it, so a flood of them costs two fetches, not one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refresh {
    Idle,
    /// Waiting out the debounce.
    Scheduled,
    /// Fetching; `again`: a notification came meanwhile.
    Running {
        again: bool,
    },
}

impl ServerActor {
    pub(super) fn schedule_tools_refresh(&mut self, ctx: &mut Context<Self>) {
        match self.tools_refresh {
            Refresh::Idle => {}
            Refresh::Scheduled | Refresh::Running { again: true } => return,
            Refresh::Running { again: false } => {
                self.tools_refresh = Refresh::Running { again: true };
                return;
            }
        }
        self.tools_refresh = Refresh::Scheduled;
        ctx.run_later(TOOLS_REFRESH_DEBOUNCE, |act, ctx| act.refresh_tools(ctx));
    }

    /// Fetches every page through the actor's own call path, with the bounds the handshake
    /// uses ([`pagination::list_all_tools`]).
    fn refresh_tools(&mut self, ctx: &mut Context<Self>) {
        self.tools_refresh = Refresh::Running { again: false };
        let addr = ctx.address();
        let server = self.name.to_string();
        let timeout = self.settings.call_timeout;
        let fetch = async move {
            pagination::list_all_tools(&server, async |params| {
                let call = Call::new(server.clone(), "tools/list", params).timeout(timeout);
                addr.send(call).await.map_err(|_| Error::Stopped {
                    server: server.clone(),
                })?
            })
            .await
        };
        ctx.spawn(fetch.into_actor(self).map(|result, act, ctx| {
            match result {
                Ok(listed) => {
                    if let Some(overflow) = &listed.overflow {
                        tracing::warn!(server = %act.name, error = %overflow, "tools/list was cut short");
                    }
                    act.replace_tools(listed.items, true);
                }
                Err(e) => {
                    tracing::warn!(server = %act.name, error = %e.without_stderr(), "refreshing the tool list failed")
                }
            }
            let again = act.tools_refresh == Refresh::Running { again: true };
            act.tools_refresh = Refresh::Idle;
            if again {
                act.schedule_tools_refresh(ctx);
            }
        }));
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
