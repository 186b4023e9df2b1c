//! The per-request metadata of the modern revision: every request carries, in `params._meta`,
//! the protocol version, the client's capabilities and identity (and a log level, when the
//! application set one), because the server keeps no state between requests. Pure.

use serde_json::{Map, Value};

use crate::protocol::lifecycle::client_info;

/// `_meta` key: the protocol version of the request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities, for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's identity.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the least severe log level the server may send for this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The severity of log messages a server may send (RFC 5424's levels, as MCP names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// Its name on the wire: `debug`, `info`, ... `emergency`.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Parses a level's name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == text)
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What every modern request of one connection carries.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// The keys, ready to merge into a request's `_meta`.
    keys: Map<String, Value>,
    /// The keys as a JSON object's text, for requests whose params have no `_meta` yet.
    json: String,
}

impl RequestMeta {
    /// The metadata for `version`, declaring `client_capabilities` (`{}` for none) and, if set,
    /// a `log_level`.
    pub fn new(version: &str, client_capabilities: &Value, log_level: Option<LogLevel>) -> Self {
        let mut keys = Map::new();
        keys.insert(PROTOCOL_VERSION.into(), Value::String(version.to_owned()));
        let capabilities = match client_capabilities {
            Value::Object(_) => client_capabilities.clone(),
            _ => Value::Object(Map::new()),
        };
        keys.insert(CLIENT_CAPABILITIES.into(), capabilities);
        keys.insert(CLIENT_INFO.into(), client_info());
        if let Some(level) = log_level {
            keys.insert(LOG_LEVEL.into(), Value::String(level.name().to_owned()));
        }
        let json = Value::Object(keys.clone()).to_string();
        RequestMeta { keys, json }
    }

    /// The keys as the JSON text of a `_meta` object (the whole `_meta` of a request that had
    /// none).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The protocol version these requests carry.
    pub fn version(&self) -> &str {
        self.keys
            .get(PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The keys alone, as `server/discover` sends them.
    pub fn keys(&self) -> Map<String, Value> {
        self.keys.clone()
    }

    /// `params` with the metadata merged into its `_meta` (a `params` object is made when there
    /// is none, as the revision requires one). Keys the caller put in `_meta` (a progress
    /// token, trace context) are kept; ours win where they clash.
    pub fn apply(&self, params: Option<Value>) -> Value {
        let mut object = match params {
            Some(Value::Object(map)) => map,
            // Params that are not an object cannot carry `_meta`; a server would refuse them
            // anyway, so say what we were asked rather than drop it silently.
            Some(other) => {
                let mut map = Map::new();
                map.insert("params".into(), other);
                map
            }
            None => Map::new(),
        };
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            for (key, value) in &self.keys {
                meta.insert(key.clone(), value.clone());
            }
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_request_gets_version_capabilities_and_identity() {
        let meta = RequestMeta::new("2026-07-28", &json!({"elicitation": {}}), None);
        let params = meta.apply(None);
        assert_eq!(params["_meta"][PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            params["_meta"][CLIENT_CAPABILITIES],
            json!({"elicitation": {}})
        );
        assert_eq!(params["_meta"][CLIENT_INFO]["name"], "mcp-supervisor");
        assert!(params["_meta"].get(LOG_LEVEL).is_none());
        assert_eq!(meta.version(), "2026-07-28");
    }

    #[test]
    fn the_callers_own_meta_and_params_are_kept() {
        let meta = RequestMeta::new("2026-07-28", &json!(null), Some(LogLevel::Warning));
        let params = meta.apply(Some(json!({
            "name": "echo",
            "_meta": {"progressToken": 7, PROTOCOL_VERSION: "1999-01-01"}
        })));
        assert_eq!(params["name"], "echo");
        assert_eq!(params["_meta"]["progressToken"], 7);
        assert_eq!(params["_meta"][PROTOCOL_VERSION], "2026-07-28", "ours win");
        assert_eq!(params["_meta"][CLIENT_CAPABILITIES], json!({}));
        assert_eq!(params["_meta"][LOG_LEVEL], "warning");
        assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warning));
        assert_eq!(LogLevel::parse("loud"), None);
        let odd = meta.apply(Some(json!({"_meta": 3})));
        assert_eq!(odd["_meta"][PROTOCOL_VERSION], "2026-07-28");
    }
}
