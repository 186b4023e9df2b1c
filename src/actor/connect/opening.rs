//! The opening of a connection: agreeing on a protocol era and version with the server.
//!
//! The modern era (2026-07-28) is asked for with `server/discover`; the legacy one with the
//! `initialize` handshake. Which is tried first follows the `protocol` setting and the era the
//! last connection found ([`ProtocolChoice::first_try`]); with `auto`, an answer that says the
//! server speaks the other era switches to it at once, in the same attempt (re-spawning a stdio
//! server that exits on the probe is spoken to with the handshake by the next attempt), and
//! says why when the server changed. What an answer
//! means is decided in [`crate::protocol::era`]; this file does the asking.
//!
//! Over HTTP, the transport is settled here too: an `initialize` that Streamable HTTP refuses
//! with 400, 404 or 405 is sent again over the legacy HTTP+SSE transport at the same URL, for
//! a server of [`HttpMode::Auto`] (the spec's backwards compatibility). The legacy transport
//! carries the session era only: over it, only `initialize` is tried.

use super::Handshake;
use crate::error::Error;
use crate::protocol::discover::{discover_params, parse_discover_result};
use crate::protocol::era::{
    judge_initialize_error, judge_probe, shared_modern_version, Era, ProbeVerdict, ProtocolChoice,
    MODERN_VERSIONS,
};
use crate::protocol::jsonrpc::{self, RpcError};
use crate::protocol::lifecycle::{self, Negotiated, SUPPORTED_PROTOCOL_VERSIONS};
use crate::protocol::meta::RequestMeta;
use crate::session::wire::Wire;
use crate::ErrorKind as Kind;
#[cfg(feature = "http")]
use crate::{config::HttpMode, transport::Link};

/// What one try of an era found.
enum Tried {
    Open(Box<Negotiated>),
    /// The server speaks the other era; `version`: the modern version to ask for next.
    OtherEra {
        reason: String,
        version: Option<String>,
    },
}

impl Tried {
    fn other(reason: impl Into<String>) -> Self {
        Tried::OtherEra {
            reason: reason.into(),
            version: None,
        }
    }
}

/// Tries of an era in one attempt: the first, the other, and back once (a server whose answer
/// to a probe came late, and pinned it to the era we had just left).
const MAX_TRIES: usize = 3;

impl Handshake<'_> {
    /// Agrees on an era and version; the note says why the era is not the remembered one.
    /// A discovery still fresh is used as it is (then `reused` is set).
    pub(super) async fn open(&mut self) -> Result<(Negotiated, Option<String>), Error> {
        let opened = self.negotiate().await;
        let keep = match &opened {
            Ok((negotiated, _)) => negotiated.era == Era::Modern,
            // The lines may say why it failed.
            Err(_) => true,
        };
        self.connection.closer.opening_done(keep);
        opened
    }

    async fn negotiate(&mut self) -> Result<(Negotiated, Option<String>), Error> {
        let choice = self.attempt.settings.protocol;
        if self.sse {
            return self.over_sse(choice).await;
        }
        if let Some(fresh) = self
            .attempt
            .plan
            .era
            .fresh
            .clone()
            .filter(|_| choice != ProtocolChoice::Legacy)
        {
            let meta = RequestMeta::new(
                &fresh.version,
                &self.attempt.plan.modern_capabilities,
                self.attempt.settings.log_level,
            );
            self.wire = Wire::modern(self.link.clone(), meta, self.attempt.is_http());
            self.reused = true;
            return Ok((fresh, None));
        }
        let first = choice.first_try(self.attempt.plan.era.remembered);
        let mut era = first;
        let mut version = MODERN_VERSIONS[0].to_owned();
        let mut note = None;
        // Why each try found the other era, for the error should none settle it.
        let mut reasons = Vec::with_capacity(MAX_TRIES);
        for _ in 0..MAX_TRIES {
            let tried = match era {
                Era::Modern => {
                    // What a server writes to stderr in answer to a probe it does not know
                    // explains nothing later: it is held aside for the rest of the opening
                    // (stderr is read apart from stdout, and may come after the answer), and
                    // left out of the stderr tail if the server turns out not to be modern.
                    self.connection.closer.hold_stderr();
                    self.try_modern(&version).await?
                }
                Era::Legacy => self.try_legacy().await?,
            };
            let (reason, next_version) = match tried {
                Tried::Open(negotiated) => {
                    self.attempt.learned.set(Some(negotiated.era));
                    return Ok((*negotiated, note));
                }
                Tried::OtherEra { reason, version } => (reason, version),
            };
            if self.sse {
                // `initialize` went over the legacy HTTP+SSE transport, which carries no other
                // era.
                return Err(Self::modern_over_sse(&self.attempt.server, &reason));
            }
            if !choice.may_fall_back() {
                return Err(self.pinned_era_refused(choice, &reason));
            }
            let server = &self.attempt.server;
            tracing::debug!(server = %server, from = %era, to = %era.other(), reason = %reason, "speaking the other protocol era");
            if note.is_none() {
                note = self.changed_note(era, &reason);
            }
            if let Some(next) = next_version {
                version = next;
            }
            reasons.push(format!("{era}: {reason}"));
            era = era.other();
        }
        Err(Error::connection(
            &self.attempt.server,
            format!(
                "the server answered neither the modern nor the legacy opening consistently ({})",
                reasons.join("; ")
            ),
        ))
    }

    /// `server/discover` at `version` (and once more at the version a `-32022` names).
    async fn try_modern(&mut self, version: &str) -> Result<Tried, Error> {
        let mut version = version.to_owned();
        let mut asked_again = false;
        loop {
            let meta = RequestMeta::new(
                &version,
                &self.attempt.plan.modern_capabilities,
                self.attempt.settings.log_level,
            );
            self.wire = Wire::modern(self.link.clone(), meta.clone(), self.attempt.is_http());
            let params = discover_params(meta.keys());
            let http = self.attempt.is_http();
            let probe = self.send("server/discover", Some(&params));
            let Some(answer) = self.probe_answer(probe).await else {
                let waited = self.attempt.settings.ping_timeout;
                return Ok(Tried::other(format!(
                    "it read server/discover and did not answer it within {waited:?}"
                )));
            };
            let rpc = match answer {
                Ok(result) => return self.discovered(&version, &result, asked_again),
                Err(Error::Rpc {
                    code,
                    message,
                    data,
                    ..
                }) => RpcError {
                    code,
                    message,
                    data,
                },
                Err(e) if matches!(e.kind(), Kind::InvalidResponse | Kind::Refused) => {
                    // An answer, but not a modern one (HTTP 400 with a legacy body, HTML, ...).
                    return Ok(Tried::other(format!(
                        "server/discover: {}",
                        e.without_stderr()
                    )));
                }
                Err(e) if !http && e.kind() == Kind::InvalidConnection => {
                    // Older servers exit on a request before `initialize`; so does a server
                    // that fails to start at all, which cannot be told apart. The attempt fails
                    // as the process did (so a crashing start-up costs the retries it always
                    // did), and the next one starts with the handshake.
                    self.attempt.learned.set(Some(Era::Legacy));
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            match judge_probe(Err(&rpc), &version) {
                ProbeVerdict::RetryWith(next) if !asked_again => {
                    asked_again = true;
                    version = next;
                }
                ProbeVerdict::RetryWith(_) | ProbeVerdict::Modern => {
                    return Err(self.unsupported(&version));
                }
                ProbeVerdict::NoSharedModernVersion { supported } => {
                    return self.no_shared_modern_version(supported);
                }
                ProbeVerdict::Legacy(reason) => return Ok(Tried::other(reason)),
            }
        }
    }

    /// A `server/discover` result at `version`.
    fn discovered(
        &mut self,
        version: &str,
        result: &serde_json::Value,
        asked_again: bool,
    ) -> Result<Tried, Error> {
        let discovered = match parse_discover_result(&self.attempt.server, result) {
            Ok(discovered) => discovered,
            Err(e) => return Ok(Tried::other(e.without_stderr())),
        };
        if discovered.supported_versions.iter().any(|v| v == version) {
            return Ok(Tried::Open(Box::new(
                discovered.negotiated(version.to_owned()),
            )));
        }
        match shared_modern_version(&discovered.supported_versions) {
            Some(other) if !asked_again => Ok(Tried::Open(Box::new(discovered.negotiated(other)))),
            _ => self.no_shared_modern_version(discovered.supported_versions),
        }
    }

    /// A modern server that lists no modern version we speak: the legacy handshake may still
    /// work if it lists a legacy one; otherwise there is nothing to speak.
    fn no_shared_modern_version(&self, supported: Vec<String>) -> Result<Tried, Error> {
        let legacy = supported
            .iter()
            .any(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()));
        if legacy {
            return Ok(Tried::other(format!(
                "it speaks none of our modern versions, but {}",
                supported.join(", ")
            )));
        }
        Err(self.unsupported(&supported.join(", ")))
    }

    /// The opening over the legacy HTTP+SSE transport: the `initialize` handshake, whatever
    /// era was remembered, since the transport carries no other.
    async fn over_sse(
        &mut self,
        choice: ProtocolChoice,
    ) -> Result<(Negotiated, Option<String>), Error> {
        if choice == ProtocolChoice::Modern {
            return Err(self.pinned_era_refused(
                choice,
                "it speaks the legacy HTTP+SSE transport, which carries the session era only",
            ));
        }
        match self.try_legacy().await? {
            Tried::Open(negotiated) => {
                self.attempt.learned.set(Some(Era::Legacy));
                Ok((*negotiated, None))
            }
            Tried::OtherEra { reason, .. } => {
                Err(Self::modern_over_sse(&self.attempt.server, &reason))
            }
        }
    }

    /// A server on the legacy HTTP+SSE transport that answered `initialize` the modern way.
    fn modern_over_sse(server: &str, reason: &str) -> Error {
        Error::connection(
            server,
            format!("a server on the legacy HTTP+SSE transport answered initialize as one of the 2026-07-28 revision, which that transport cannot carry ({reason})"),
        )
    }

    /// The `initialize` handshake.
    async fn try_legacy(&mut self) -> Result<Tried, Error> {
        // Whatever the probe before found, a request the server sends now is of the session
        // era, for the application's handler.
        self.wire = Wire::legacy(self.link.clone());
        let params = lifecycle::initialize_params(&self.attempt.plan.client_capabilities);
        #[cfg(feature = "http")]
        let retry = params.clone();
        let answer = self.request("initialize", Some(params)).await;
        #[cfg(feature = "http")]
        let answer = match answer {
            Err(refused) if !self.sse && self.attempt.http_mode() == Some(HttpMode::Auto) => {
                match self.connection.closer.initialize_refused() {
                    Some(status) => self.initialize_over_sse(status, refused, retry).await,
                    None => Err(refused),
                }
            }
            answer => answer,
        };
        self.initialize_answered(answer)
    }

    /// Streamable HTTP refused `initialize` with `status` (400, 404 or 405): as the spec's
    /// backwards compatibility says, the same URL is tried with the legacy HTTP+SSE transport
    /// (a GET for its SSE stream and its `endpoint` event), and `initialize` sent again over
    /// it. If the URL serves no such stream either, the error says both.
    #[cfg(feature = "http")]
    async fn initialize_over_sse(
        &mut self,
        status: u16,
        refused: Error,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, Error> {
        let server = self.attempt.server.clone();
        tracing::debug!(server = %server, status, "Streamable HTTP refused initialize; trying the legacy HTTP+SSE transport at the same URL");
        let connection = match self.attempt.open_sse() {
            Ok(connection) => connection,
            Err(_) => return Err(refused),
        };
        // The Streamable HTTP connection is dropped, which closes it.
        self.connection = connection;
        let link: std::rc::Rc<dyn Link> = std::rc::Rc::new(self.connection.outbound.clone());
        self.link = link;
        self.wire = Wire::legacy(self.link.clone());
        self.sse = true;
        match self.request("initialize", Some(params)).await {
            Ok(answer) => Ok(answer),
            Err(error) if self.connection.closer.not_sse() => {
                // Both halves bounded, so that the second is not cut off the error's end.
                let message = |e: &Error| -> String {
                    let text = match e {
                        Error::Connection { message, .. } => message.clone(),
                        other => other.without_stderr(),
                    };
                    text.chars().take(240).collect()
                };
                Err(Error::connection(
                    &server,
                    format!(
                        "{}; nor is there a legacy HTTP+SSE stream: {}",
                        message(&refused),
                        message(&error)
                    ),
                ))
            }
            Err(error) => Err(error),
        }
    }

    /// The answer to the probe `probe`, or `None` if the server read it and does not answer.
    ///
    /// An HTTP server answers every POST, and a server the `protocol` setting pins to the
    /// modern era must answer the probe: they get the attempt's whole time. A stdio server
    /// that does not know the method may not answer at all (older SDKs log a validation error
    /// instead), which waiting alone cannot tell from a server that is slow to start: every
    /// `ping_timeout` without an answer, its stdin pipe says whether it has read the probe. Not
    /// read yet, it is still starting, and the wait goes on (within the attempt's time); read
    /// and not answered, it does not know the method. So how long a server takes to start does
    /// not change the era it gets.
    async fn probe_answer(&mut self, probe: u64) -> Option<Result<serde_json::Value, Error>> {
        let method = "server/discover";
        if self.attempt.is_http() || !self.attempt.settings.protocol.may_fall_back() {
            return Some(self.answer_to(probe, method).await);
        }
        let wait = self.attempt.settings.ping_timeout;
        loop {
            if let Ok(answer) = tokio::time::timeout(wait, self.answer_to(probe, method)).await {
                return Some(answer);
            }
            match self.connection.closer.stdin_unread() {
                Some(unread) if unread > 0 => {
                    tracing::debug!(server = %self.attempt.server, unread, "the server has not read server/discover yet: still starting");
                }
                _ => return None,
            }
        }
    }

    /// What `initialize` was answered: the session era opened, or a modern server.
    fn initialize_answered(
        &mut self,
        answer: Result<serde_json::Value, Error>,
    ) -> Result<Tried, Error> {
        let result = match answer {
            Ok(result) => result,
            Err(Error::Rpc {
                code,
                message,
                data,
                ..
            }) => {
                let rpc = RpcError {
                    code,
                    message,
                    data,
                };
                if let Some(version) = judge_initialize_error(&rpc) {
                    return Ok(Tried::OtherEra {
                        reason: format!("it refused initialize and speaks {version}"),
                        version: Some(version),
                    });
                }
                return Err(Error::rpc(&self.attempt.server, "initialize", rpc));
            }
            Err(e) => return Err(e),
        };
        // A server of the modern era answering `initialize` with its own version.
        let answered = result.get("protocolVersion").and_then(|v| v.as_str());
        if let Some(version) = answered.filter(|v| MODERN_VERSIONS.contains(v)) {
            return Ok(Tried::OtherEra {
                reason: format!("it answered initialize with {version}"),
                version: Some(version.to_owned()),
            });
        }
        let negotiated = lifecycle::accept_initialize_result(&self.attempt.server, result)?;
        self.wire = Wire::legacy(self.link.clone());
        self.connection.outbound.send(jsonrpc::notification_line(
            "notifications/initialized",
            None,
        ));
        self.connection.closer.initialized(&negotiated.version);
        Ok(Tried::Open(Box::new(negotiated)))
    }

    /// Why the era is not `left`, the one tried first, if the server spoke `left` last time
    /// (it changed, and says so here).
    fn changed_note(&self, left: Era, reason: &str) -> Option<String> {
        (self.attempt.plan.era.remembered == Some(left)).then(|| {
            format!(
                "the server no longer speaks the {left} protocol era ({reason}); now speaking {}",
                left.other()
            )
        })
    }

    /// No version in common: `version` is what the server named.
    fn unsupported(&self, version: &str) -> Error {
        let ours: Vec<&str> = MODERN_VERSIONS
            .iter()
            .chain(SUPPORTED_PROTOCOL_VERSIONS)
            .copied()
            .collect();
        Error::unsupported_version(&self.attempt.server, version, &ours)
    }

    /// The era the setting pins is not what the server speaks.
    fn pinned_era_refused(&self, choice: ProtocolChoice, reason: &str) -> Error {
        let ours: Vec<&str> = match choice {
            ProtocolChoice::Modern => MODERN_VERSIONS.to_vec(),
            _ => SUPPORTED_PROTOCOL_VERSIONS.to_vec(),
        };
        Error::unsupported_version(
            &self.attempt.server,
            &format!("of another era ({reason}; the `protocol` setting is `{choice}`)"),
            &ours,
        )
    }
}
