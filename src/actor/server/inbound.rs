//! What the server sends on a live connection, routed: answers to the call table, requests to
//! the application's handler, notifications to the call they concern (progress) or out as
//! [`ServerEvent`]s. Its own room so that the actor's loop reads "a message came" and this file
//! says where each kind goes.

use std::time::Instant;

use actix::prelude::*;
use serde_json::Value;

use super::ServerActor;
use crate::actor::messages::ServerEvent;
use crate::config::Transport;
use crate::error::Error;
use crate::protocol::era::{judge_initialize_error, Era};
use crate::protocol::jsonrpc::{self, codes, Id, Inbound, RpcError};
use crate::protocol::response::Reparsed;
use crate::protocol::text::server_text;

impl ServerActor {
    pub(super) fn on_message(&mut self, message: Inbound, ctx: &mut Context<Self>) {
        match message {
            // A line taken for a response by its fixed parts alone is confirmed by the parse of
            // its result into its caller's type (see `CallTable::on_raw_response`); the listen
            // stream's, which nothing parses, is confirmed here.
            Inbound::Response { id, result } if self.is_listen(&id) => {
                match result.unless_plain() {
                    Some(reparsed) => self.on_reparsed(reparsed, ctx),
                    None => self.on_listen_end(&id, Ok(()), ctx),
                }
            }
            Inbound::Error {
                id: Some(id),
                error,
            } if self.is_listen(&id) => self.on_listen_end(&id, Err(error), ctx),
            Inbound::Response { id, result } => {
                let modern = self
                    .live
                    .as_ref()
                    .is_some_and(|l| l.wire.era() == Era::Modern);
                // A modern result is looked into (does it ask for input?); a legacy one goes
                // to its caller as it came, parsed there once into what the caller wants.
                let reparsed = match modern.then(|| result.to_value()) {
                    Some(Ok(parsed)) => return self.on_modern_response(&id, parsed, ctx),
                    // Not parsed: the call is answered with why, as any unparsable result,
                    // unless the line was not the response it looked like.
                    Some(Err(_)) | None => self.calls.on_raw_response(&id, result),
                };
                if let Some(reparsed) = reparsed {
                    self.on_reparsed(reparsed, ctx);
                }
            }
            Inbound::Error {
                id: Some(id),
                error,
            } => {
                if !self.refused_for_era(&id, &error, ctx) {
                    self.calls.on_error_response(&id, error)
                }
            }
            Inbound::Error { id: None, error } => {
                tracing::warn!(server = %self.name, code = error.code, message = %server_text(&error.message), "server reported an error it could not attribute to a request");
            }
            Inbound::Request { id, method, params } => {
                let Some(live) = &self.live else { return };
                if live.wire.era() == Era::Modern {
                    // The 2026-07-28 revision asks for input in results, never with requests
                    // of the server's own.
                    tracing::debug!(server = %self.name, method = %server_text(&method), "a modern server sent a request; refused");
                    let error = RpcError::new(
                        codes::METHOD_NOT_FOUND,
                        "servers of the 2026-07-28 revision ask for input with input_required results",
                    );
                    live.wire
                        .outbound()
                        .send(jsonrpc::response_line(&id, &Err(error)));
                    return;
                }
                self.server_requests
                    .answer(live.wire.outbound(), id, method, params);
            }
            Inbound::Notification { method, params } => self.on_notification(method, params, ctx),
        }
    }

    /// A stdio line that looked like a plain response and is not one, routed as the full parse
    /// makes it out, as the reader would have: its messages, or a counted skip.
    fn on_reparsed(&mut self, reparsed: Reparsed, ctx: &mut Context<Self>) {
        match reparsed.parsed {
            // Parsed member by member: these are what they say they are.
            Ok(messages) => {
                for message in messages {
                    self.on_message(message, ctx);
                }
            }
            Err(e) => self.skips.skipped_line(&self.name, &e, &reparsed.line),
        }
    }

    /// A session-era request over HTTP answered `-32022` with a modern version we speak: the
    /// server behind the URL was replaced by one that speaks only the 2026-07-28 revision (an
    /// upgrade, which nothing else may tell: a server that serves the session era statelessly
    /// has no session to lose and no stream to end). The request was refused unprocessed, so it
    /// waits for the next connection, like one a lost session refused; this connection is over,
    /// with the reason, and the next attempt meets the server in its era at once (its handshake
    /// is refused the same way, which switches it). A stdio server is the process we started
    /// and cannot have been replaced: its `-32022` is an answer like any other.
    fn refused_for_era(&mut self, id: &Id, error: &RpcError, ctx: &mut Context<Self>) -> bool {
        let legacy_http = matches!(self.config.transport(), Transport::Http(_))
            && self
                .live
                .as_ref()
                .is_some_and(|l| l.wire.era() == Era::Legacy);
        let Some(wire_id) = id.as_ours().filter(|_| legacy_http) else {
            return false;
        };
        let Some(version) = judge_initialize_error(error) else {
            return false;
        };
        tracing::warn!(server = %self.name, version = %version, "a request was refused for its protocol era: the server speaks only the modern one now; reconnecting");
        self.calls.unsend(&[wire_id]);
        let reason = Error::connection(
            &self.name,
            format!("the server no longer speaks the legacy protocol era (it refused a request and speaks {version})"),
        );
        self.connection_lost(reason, ctx);
        true
    }

    pub(super) fn on_notification(
        &mut self,
        method: String,
        params: Option<Value>,
        ctx: &mut Context<Self>,
    ) {
        let server = self.name.to_string();
        match method.as_str() {
            "notifications/progress" => {
                let Some(params) = params else { return };
                self.calls.on_progress(&params, Instant::now());
            }
            "notifications/tools/list_changed" => self.schedule_tools_refresh(ctx),
            "notifications/subscriptions/acknowledged" => {
                self.on_listen_acknowledged(params.as_ref())
            }
            "notifications/resources/updated" => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match uri {
                    Some(uri) => self.emit(ServerEvent::ResourceUpdated {
                        server,
                        uri: uri.to_owned(),
                    }),
                    None => {
                        tracing::warn!(server = %server, "resources/updated without a uri; ignored")
                    }
                }
            }
            "notifications/message" => {
                let params = params.unwrap_or(Value::Null);
                tracing::debug!(server = %server, params = %server_text(&params.to_string()), "server log message");
                self.emit(ServerEvent::Log { server, params });
            }
            _ => self.emit(ServerEvent::Notification {
                server,
                method,
                params,
            }),
        }
    }
}
