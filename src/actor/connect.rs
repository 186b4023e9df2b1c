//! One connection attempt, start to finish: spawn the transport, run the handshake, fetch the
//! tool list, re-send the application's subscriptions. It runs as one future the actor spawns,
//! and hands over a connection only once it is ready for calls; if it fails, or is dropped
//! (timeout, shutdown), the half-made connection is killed with it.

use std::sync::Arc;

use futures_util::StreamExt;
use rmcp::model::{InitializeResult, Tool};
use serde_json::{json, Value};

use crate::actor::server_requests::ServerRequests;
use crate::config::{Settings, Transport};
use crate::error::Error;
use crate::protocol::jsonrpc::{self, Id, Inbound, RequestIds};
use crate::protocol::text::server_text;
use crate::protocol::{lifecycle, pagination};
use crate::transport::{http, stdio, Connection, Reaping, SkipCounters, TransportEvent};

/// Notifications kept from the handshake for the actor; more are dropped (and logged).
const MAX_HANDSHAKE_NOTIFICATIONS: usize = 256;

/// A connection ready for calls, with what the handshake learned.
pub(crate) struct Established {
    pub connection: Connection,
    pub init: InitializeResult,
    pub tools: Vec<Tool>,
    /// Notifications that arrived during the handshake (a `tools/list_changed`, a
    /// `resources/updated` right after a re-subscribe), for the actor to handle once Ready.
    pub notifications: Vec<(String, Option<Value>)>,
    /// The subscriptions this handshake sent: the application may have changed its set while
    /// it ran.
    pub subscribed: Vec<String>,
}

/// Everything an attempt needs, cloned out of the actor so the future owns it.
pub(crate) struct Attempt {
    pub server: Arc<str>,
    pub transport: Transport,
    pub settings: Settings,
    pub subscriptions: Vec<String>,
    pub client_capabilities: Value,
    pub server_requests: ServerRequests,
    pub skips: Arc<SkipCounters>,
    /// The server's request ids, shared with its call table: the handshake's ids are never
    /// used again on the connection it hands over.
    pub ids: RequestIds,
    /// The actor's count of its processes not gone yet (see [`Reaping`]).
    pub reaping: Reaping,
}

impl Attempt {
    /// Connects and initializes, within the configured connect timeout.
    pub async fn run(self) -> Result<Established, Error> {
        let limit = self.settings.connect_timeout;
        let server = self.server.clone();
        match tokio::time::timeout(limit, self.establish()).await {
            Ok(result) => result,
            Err(_) => Err(Error::connection(
                &server,
                format!("no answer to initialize within {limit:?}"),
            )),
        }
    }

    async fn establish(self) -> Result<Established, Error> {
        let connection = match &self.transport {
            Transport::Stdio(config) => stdio::spawn(
                &self.server,
                config,
                &self.settings,
                self.skips.clone(),
                &self.reaping,
            )?,
            Transport::Http(config) => {
                http::connect(&self.server, config, &self.settings, self.skips.clone())?
            }
        };
        let mut session = Handshake {
            attempt: &self,
            connection,
            notifications: Vec::new(),
        };
        let params = lifecycle::initialize_params(&self.client_capabilities);
        let result = session.request("initialize", Some(params)).await?;
        let init = lifecycle::accept_initialize_result(&self.server, result)?;
        session.connection.outbound.send(jsonrpc::notification_line(
            "notifications/initialized",
            None,
        ));
        session
            .connection
            .closer
            .initialized(&init.protocol_version.to_string());

        let tools = if init.capabilities.tools.is_some() {
            session.list_tools().await?
        } else {
            Vec::new()
        };
        let can_subscribe = init
            .capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            .unwrap_or(false);
        for uri in &self.subscriptions {
            if !can_subscribe {
                tracing::warn!(server = %self.server, uri = %uri, "server does not support resource subscriptions; not re-sent");
                break;
            }
            if let Err(e) = session
                .request("resources/subscribe", Some(json!({ "uri": uri })))
                .await
            {
                if e.kind() == crate::ErrorKind::Rpc {
                    tracing::warn!(server = %self.server, uri = %uri, error = %e, "re-subscribing failed");
                } else {
                    return Err(e);
                }
            }
        }
        tracing::debug!(server = %self.server, version = %init.protocol_version, tools = tools.len(), "initialized");
        Ok(Established {
            connection: session.connection,
            init,
            tools,
            notifications: session.notifications,
            subscribed: if can_subscribe {
                self.subscriptions.clone()
            } else {
                Vec::new()
            },
        })
    }
}

/// Requests on a connection the actor does not own yet: sent one at a time, answers read
/// straight from the event stream.
struct Handshake<'a> {
    attempt: &'a Attempt,
    connection: Connection,
    notifications: Vec<(String, Option<Value>)>,
}

impl Handshake<'_> {
    async fn request(&mut self, method: &str, params: Option<Value>) -> Result<Value, Error> {
        let id = self.attempt.ids.next();
        let server = &self.attempt.server;
        self.connection
            .outbound
            .send(jsonrpc::request_line(id, method, params.as_ref()));
        while let Some(event) = self.connection.events.next().await {
            match event {
                TransportEvent::Closed(e) => return Err(e),
                TransportEvent::Message(Inbound::Response { id: got, result })
                    if got.as_ours() == Some(id) =>
                {
                    return Ok(result)
                }
                TransportEvent::Message(Inbound::Error { id: got, error })
                    if got.as_ref().and_then(Id::as_ours) == Some(id) =>
                {
                    return Err(Error::rpc(server, method, error))
                }
                TransportEvent::Message(Inbound::Notification { method, params }) => {
                    if self.notifications.len() < MAX_HANDSHAKE_NOTIFICATIONS {
                        self.notifications.push((method, params));
                    } else {
                        tracing::debug!(server = %server, method = ?method, "notification during the handshake dropped: too many");
                    }
                }
                TransportEvent::Message(Inbound::Request { id, method, params }) => {
                    self.attempt.server_requests.answer(
                        &self.connection.outbound,
                        id,
                        method,
                        params,
                    );
                }
                TransportEvent::CallFailed { id: got, error } if got == id => return Err(error),
                TransportEvent::Interrupted { ids, error } if ids.contains(&id) => {
                    return Err(error)
                }
                // Never processed: the `Closed` that follows says why (e.g. connection refused).
                TransportEvent::Rejected(ids) if ids.contains(&id) => {}
                other => {
                    tracing::debug!(server = %server, event = %server_text(&format!("{other:?}")), "ignored during handshake");
                }
            }
        }
        Err(Error::connection(
            server,
            "connection closed during the handshake",
        ))
    }

    async fn list_tools(&mut self) -> Result<Vec<Tool>, Error> {
        let server = self.attempt.server.clone();
        let listed = pagination::list_all_tools(&server, async |params| {
            self.request("tools/list", params).await
        })
        .await?;
        if let Some(overflow) = &listed.overflow {
            tracing::warn!(server = %server, error = %overflow, "tools/list was cut short");
        }
        Ok(listed.items)
    }
}
