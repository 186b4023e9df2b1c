//! The modern revision's `server/discover`: what we send, and what a server's answer tells us.
//! Pure. Read leniently: servers in the field (and the conformance suite's) put `serverInfo` at
//! the top level or in the result's `_meta`, and may leave out `ttlMs` or `cacheScope`; only a
//! missing or malformed `supportedVersions` makes an answer unusable.
//!
//! The answer may be reused for `ttlMs` (a freshness hint, like HTTP's `max-age`): discovery runs
//! again on a reconnect only when it has expired, never on a timer of its own (the revision says
//! clients should not poll).

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::protocol::as_sent::{SentCapabilities, SentImplementation};
use crate::protocol::era::{named_versions, Era};
use crate::protocol::lifecycle::Negotiated;

/// The `_meta` key of the server's identity in a modern result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The longest a discovery answer is reused, whatever `ttlMs` says.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What a `server/discover` answer says.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// The versions the server speaks, as it listed them, escaped and bounded
    /// ([`named_versions`]).
    pub supported_versions: Vec<String>,
    /// Its capabilities, as it sent them.
    pub capabilities: SentCapabilities,
    /// Its identity, when it gave one, as it sent it.
    pub server_info: Option<SentImplementation>,
    /// How to use it, for people and models.
    pub instructions: Option<String>,
    /// How long this answer may be reused (`ttlMs`; 0 when absent or negative).
    pub ttl: Duration,
    /// `private` (only for us) or `public` (any client may reuse it); `private` when absent.
    pub cache_scope: String,
}

impl Discovered {
    /// What a connection that uses `version` knows of its server.
    pub fn negotiated(self, version: String) -> Negotiated {
        Negotiated {
            era: Era::Modern,
            version,
            server_info: self.server_info,
            capabilities: self.capabilities,
            instructions: self.instructions,
            fresh_for: Some(self.ttl),
        }
    }
}

/// The `server/discover` request's params: only the per-request `_meta`.
pub fn discover_params(meta: Map<String, Value>) -> Value {
    json!({ "_meta": meta })
}

/// Parses a `server/discover` result.
pub fn parse_discover_result(server: &str, result: &Value) -> Result<Discovered, Error> {
    let invalid = |why: &str| Error::invalid_response(server, "server/discover", why);
    let Some(object) = result.as_object() else {
        return Err(invalid("the result is not an object"));
    };
    let supported_versions = object
        .get("supportedVersions")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("no supportedVersions list"))?
        .iter()
        .map(Value::as_str)
        .collect::<Option<Vec<&str>>>()
        .ok_or_else(|| invalid("supportedVersions holds something other than strings"))?;
    let supported_versions = named_versions(supported_versions);
    let capabilities = match object.get("capabilities") {
        None | Some(Value::Null) => SentCapabilities::default(),
        Some(caps) => serde_json::from_value(caps.clone())
            .map_err(|e| invalid(&format!("capabilities: {e}")))?,
    };
    // `_meta` is where the revision puts it; some servers still send it at the top level.
    let server_info = object
        .get("_meta")
        .and_then(|m| m.get(SERVER_INFO_KEY))
        .or_else(|| object.get("serverInfo"))
        .and_then(|info| serde_json::from_value(info.clone()).ok());
    let ttl = object
        .get("ttlMs")
        .and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .map(|ms| Duration::from_millis(ms.min(MAX_TTL.as_millis() as f64) as u64))
        .unwrap_or(Duration::ZERO);
    Ok(Discovered {
        supported_versions,
        capabilities,
        server_info,
        instructions: object
            .get("instructions")
            .and_then(Value::as_str)
            .map(crate::protocol::text::server_text),
        ttl,
        cache_scope: object
            .get("cacheScope")
            .and_then(Value::as_str)
            .filter(|s| *s == "public")
            .unwrap_or("private")
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_revision_shape() {
        let got = parse_discover_result(
            "s",
            &json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}, "x-future": {"on": true}},
                "ttlMs": 60000,
                "cacheScope": "public",
                "_meta": {SERVER_INFO_KEY: {"name": "demo", "version": "1", "x-build": 7}}
            }),
        )
        .unwrap();
        assert_eq!(got.supported_versions, ["2026-07-28"]);
        assert!(got.capabilities.tools.is_some());
        // What rmcp's types have no field for is kept too.
        assert_eq!(got.capabilities.object()["x-future"], json!({"on": true}));
        let info = got.server_info.unwrap();
        assert_eq!(
            (info.name.as_str(), &info.object()["x-build"]),
            ("demo", &json!(7))
        );
        assert_eq!(got.ttl, Duration::from_secs(60));
        assert_eq!(got.cache_scope, "public");
    }

    #[test]
    fn reads_what_servers_in_the_field_send_too() {
        // Top-level serverInfo, no ttl, no scope, no capabilities.
        let got = parse_discover_result(
            "s",
            &json!({"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "x", "version": "0"}}),
        )
        .unwrap();
        assert_eq!(
            got.server_info.map(|i| i.name.clone()).as_deref(),
            Some("x")
        );
        assert_eq!(got.ttl, Duration::ZERO);
        assert_eq!(got.cache_scope, "private");
        let negative = parse_discover_result(
            "s",
            &json!({"supportedVersions": [], "ttlMs": -5, "capabilities": {}}),
        )
        .unwrap();
        assert_eq!(negative.ttl, Duration::ZERO);
        let huge =
            parse_discover_result("s", &json!({"supportedVersions": [], "ttlMs": 1e300})).unwrap();
        assert_eq!(huge.ttl, MAX_TTL);
    }

    #[test]
    fn an_answer_without_versions_is_invalid() {
        for bad in [
            json!("nope"),
            json!({}),
            json!({"supportedVersions": "2026-07-28"}),
            json!({"supportedVersions": [2026]}),
            json!({"supportedVersions": [], "capabilities": {"tools": 3}}),
        ] {
            let e = parse_discover_result("s", &bad).unwrap_err();
            assert_eq!(e.code(), "invalid_response", "{bad}");
        }
    }

    /// Found by the fuzz target `discover`: the versions went into log lines and error
    /// messages raw when none was ours (a `\n` forged a log line), however many there were.
    #[test]
    fn the_versions_a_server_names_are_kept_escaped_and_bounded() {
        let mut listed: Vec<Value> = (0..100)
            .map(|i| json!(format!("v{i}\n\u{1b}[2J")))
            .collect();
        listed[0] = json!("x".repeat(10_000));
        listed.push(json!("2026-07-28"));
        let got = parse_discover_result("s", &json!({ "supportedVersions": listed })).unwrap();
        assert_eq!(got.supported_versions.len(), 17, "the first 16 and ours");
        assert_eq!(got.supported_versions[1], "v1\\n\\u{1b}[2J");
        assert!(got.supported_versions[0].len() <= crate::protocol::text::SERVER_TEXT_LIMIT);
        assert_eq!(got.supported_versions[16], "2026-07-28");
    }
}
