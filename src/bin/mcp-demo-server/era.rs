//! The two protocol eras: which one a request speaks, which ones this server serves
//! (`DEMO_ERA`), the pinning of a connection to one of them, and the refusals that follow.
//!
//! The 2025 revisions ("legacy") open a connection with `initialize`. The 2026-07-28 revision
//! ("modern") has no handshake: a request is modern when its `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion`, and it must then also carry the client's
//! capabilities. A dual-era server (the default) serves both on one stdio connection the way the
//! SDKs do: `server/discover` is answered without deciding anything (TS `serveStdio`), the first
//! modern request served pins the connection modern (a later `initialize` gets `-32022`, as TS
//! does), and an `initialize` pins it legacy (a later modern request gets `-32600`, as python
//! does).
//!
//! Kept in one room so that every era rule, and every refusal it leads to, is read in one place:
//! `server` only asks [`Server::admit`] which handlers a request goes to.

use serde_json::{json, Map, Value};

use super::config::env_u64;
use super::jsonrpc::{Args, RpcError, METHOD_NOT_FOUND};
use super::server::Server;
use super::{lock, stderr_line};

/// The revision the modern handlers speak.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
pub(crate) const DISCOVER: &str = "server/discover";

/// The `_meta` keys of the 2026-07-28 revision.
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The log levels of `notifications/message`, least severe first.
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Which eras this server serves: `DEMO_ERA`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EraMode {
    /// Both, each connection pinned by its first decisive request (the default).
    Dual,
    /// The 2025 revisions only: today's server, and modern requests are unknown methods.
    Legacy,
    /// 2026-07-28 only: `initialize` is refused with `-32022`.
    Modern,
}

/// The settings of the modern side, read once at start-up.
pub(crate) struct EraConfig {
    pub(crate) mode: EraMode,
    /// `DEMO_MODERN_VERSIONS`: what `server/discover` lists and modern requests may ask for.
    pub(crate) versions: Vec<String>,
    /// `DEMO_DISCOVER_TTL_MS`: the `ttlMs` of the `server/discover` result.
    pub(crate) discover_ttl_ms: u64,
    /// `DEMO_LISTEN_END_AFTER_MS`: every listen ends gracefully this long after it opened.
    pub(crate) listen_end_after_ms: Option<u64>,
    /// `DEMO_LIST_CONFIRM`: list the `confirm` tool (it is callable either way).
    pub(crate) list_confirm: bool,
}

impl EraConfig {
    pub(crate) fn from_env() -> Self {
        let mode = match std::env::var("DEMO_ERA") {
            Err(_) => EraMode::Dual,
            Ok(raw) => match raw.trim() {
                "" | "dual" => EraMode::Dual,
                "legacy" => EraMode::Legacy,
                "modern" => EraMode::Modern,
                _ => {
                    stderr_line(&format!(
                        "demo: ignoring DEMO_ERA={raw:?}: expected dual, legacy or modern"
                    ));
                    EraMode::Dual
                }
            },
        };
        let mut versions: Vec<String> = std::env::var("DEMO_MODERN_VERSIONS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        if versions.is_empty() {
            versions.push(MODERN_VERSION.to_owned());
        }
        EraConfig {
            mode,
            versions,
            discover_ttl_ms: env_u64("DEMO_DISCOVER_TTL_MS").unwrap_or(0),
            listen_end_after_ms: env_u64("DEMO_LISTEN_END_AFTER_MS"),
            list_confirm: super::config::env_flag("DEMO_LIST_CONFIRM"),
        }
    }
}

/// What a dual-era connection has been decided to speak.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Pin {
    /// Nothing decisive yet (a `server/discover` probe decides nothing).
    #[default]
    Open,
    /// An `initialize` was answered: a 2025 session.
    Legacy,
    /// A modern request was served.
    Modern,
}

/// The era side of the shared state.
#[derive(Default)]
pub(crate) struct EraState {
    pub(crate) pin: Pin,
    /// Modern requests seen, for `DEMO_REJECT_FIRST_MODERN`.
    pub(crate) modern_requests: u64,
}

/// The era of the request a `Server` handle is serving. Worker threads get a clone of the handle,
/// so a deferred answer is shaped in the era its request was made in.
#[derive(Clone, Debug, Default)]
pub(crate) enum Era {
    #[default]
    Legacy,
    Modern {
        /// `_meta["io.modelcontextprotocol/logLevel"]`: without it no `notifications/message`
        /// may be sent for the request.
        log_level: Option<String>,
    },
}

impl Era {
    pub(crate) fn is_modern(&self) -> bool {
        matches!(self, Era::Modern { .. })
    }

    /// Whether a log message of `level` may be sent for this request: always in the legacy era
    /// (the session's `logging/setLevel` is not modelled), in the modern one only when the
    /// request asked for that level or a less severe one.
    pub(crate) fn wants_log(&self, level: &str) -> bool {
        match self {
            Era::Legacy => true,
            Era::Modern { log_level: None } => false,
            Era::Modern {
                log_level: Some(wanted),
            } => severity(level) >= severity(wanted),
        }
    }
}

fn severity(level: &str) -> usize {
    LOG_LEVELS.iter().position(|l| *l == level).unwrap_or(0)
}

/// Which handlers a request goes to.
pub(crate) enum Admission {
    /// The 2025 handlers, exactly as before.
    Legacy,
    /// The 2026-07-28 handlers, through this handle (its era marks results and log lines).
    Modern(Server),
}

/// `-32022`, with the versions we speak and the one that was asked for, as given.
pub(crate) fn unsupported_version(versions: &[String], requested: Option<&Value>) -> RpcError {
    let requested = requested.cloned().unwrap_or(Value::Null);
    let shown = match &requested {
        Value::String(version) => version.clone(),
        other => other.to_string(),
    };
    let message = format!(
        "Unsupported protocol version: {shown} (this server speaks {})",
        versions.join(", ")
    );
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, message)
        .with_data(json!({ "supported": versions, "requested": requested }))
}

impl Server {
    /// A handle on the same server serving a request of `era`.
    pub(crate) fn in_era(&self, era: Era) -> Server {
        Server {
            era,
            ..self.clone()
        }
    }

    /// Decides which handlers serve a request, pinning the connection where the request is
    /// decisive. A refused request is answered (and logged as `refused <method> <id> <code>`)
    /// here, and `None` is returned.
    pub(crate) fn admit(&self, id: &Value, method: &str, params: &Args) -> Option<Admission> {
        let meta = params.get("_meta").and_then(Value::as_object);
        let enveloped = meta.is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY));
        match self.judge(method, meta, params) {
            Ok(admission) => Some(admission),
            Err(error) => {
                let era = if enveloped {
                    Era::Modern { log_level: None }
                } else {
                    Era::Legacy
                };
                let line = format!("refused {method} {id} {}", error.code());
                self.in_era(era).log_event(&line);
                self.respond(id, Err(error));
                None
            }
        }
    }

    fn judge(
        &self,
        method: &str,
        meta: Option<&Map<String, Value>>,
        params: &Args,
    ) -> Result<Admission, RpcError> {
        let config = &self.config.era;
        let envelope = meta.and_then(|m| Some((m, m.get(PROTOCOL_VERSION_KEY)?)));
        let mut state = lock(&self.state);
        let connection = match config.mode {
            EraMode::Legacy => Pin::Legacy,
            EraMode::Modern => Pin::Modern,
            EraMode::Dual => state.era.pin,
        };
        if method == "initialize" {
            if connection == Pin::Modern {
                return Err(unsupported_version(
                    &config.versions,
                    params.get("protocolVersion"),
                ));
            }
            state.era.pin = Pin::Legacy;
            return Ok(Admission::Legacy);
        }
        let Some((meta, asked)) = envelope else {
            return match connection {
                // A bare `server/discover` is answered anyway: a probe decides nothing.
                Pin::Modern | Pin::Open if method == DISCOVER => Ok(self.modern_handle(None)),
                Pin::Legacy if method == DISCOVER && config.mode == EraMode::Dual => {
                    Err(legacy_session_refusal(method))
                }
                Pin::Modern => Err(RpcError::invalid_params(format!(
                    "params._meta has no `{PROTOCOL_VERSION_KEY}`: this connection speaks \
                     {MODERN_VERSION}, every request must carry it"
                ))),
                Pin::Open | Pin::Legacy => Ok(Admission::Legacy),
            };
        };
        if config.mode == EraMode::Legacy {
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ));
        }
        if connection == Pin::Legacy {
            return Err(legacy_session_refusal(method));
        }
        state.era.modern_requests = state.era.modern_requests.saturating_add(1);
        if state.era.modern_requests <= self.config.faults.reject_first_modern() {
            return Err(unsupported_version(&config.versions, Some(asked)));
        }
        if !asked
            .as_str()
            .is_some_and(|v| config.versions.iter().any(|s| s == v))
        {
            return Err(unsupported_version(&config.versions, Some(asked)));
        }
        if !meta
            .get(CLIENT_CAPABILITIES_KEY)
            .is_some_and(Value::is_object)
        {
            return Err(RpcError::invalid_params(format!(
                "params._meta must carry `{CLIENT_CAPABILITIES_KEY}` (an object)"
            )));
        }
        let log_level = match meta.get(LOG_LEVEL_KEY) {
            None => None,
            Some(Value::String(level)) if LOG_LEVELS.contains(&level.as_str()) => {
                Some(level.clone())
            }
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "`{LOG_LEVEL_KEY}` is not a log level: {other}"
                )))
            }
        };
        if method != DISCOVER && config.mode == EraMode::Dual {
            state.era.pin = Pin::Modern;
        }
        drop(state);
        Ok(self.modern_handle(log_level))
    }

    fn modern_handle(&self, log_level: Option<String>) -> Admission {
        Admission::Modern(self.in_era(Era::Modern { log_level }))
    }
}

/// python's answer to a modern request on a connection that has a 2025 session.
fn legacy_session_refusal(method: &str) -> RpcError {
    RpcError::invalid_request(format!(
        "this connection has a 2025-era session (initialize was answered); \
         the {MODERN_VERSION} request {method} is not served on it"
    ))
}
