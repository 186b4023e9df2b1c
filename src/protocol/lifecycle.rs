//! The handshake of the protocol revisions that have one (2024-11-05 to 2025-11-25): what we
//! offer in `initialize` and what we accept back. Pure: the actor's connect task does the IO.
//!
//! The stateless 2026-07-28 revision has no handshake: see [`era`](super::era) for how one is
//! chosen and [`discover`](super::discover) for its `server/discover`. Both end in a
//! [`Negotiated`]: what the connection speaks and knows of its server.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::InitializeResult;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::Error;
use crate::protocol::as_sent::{AsSent, ListedTool, SentCapabilities, SentImplementation};
use crate::protocol::era::Era;
use crate::protocol::pages::ToolsPage;

/// The protocol version we offer: the newest revision that still has the `initialize`
/// handshake. (rmcp's `ProtocolVersion::LATEST` is the stateless 2026-07-28 revision, which has
/// none, so it is named explicitly.)
pub const OFFERED_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every version we accept from a server's `initialize` answer, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// What a connection speaks and knows of its server, whichever era it was made in: from the
/// `initialize` result, or from `server/discover`.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiated {
    /// The era of the connection.
    pub era: Era,
    /// The protocol version in use.
    pub version: String,
    /// The server's identity (optional in the modern era), as it sent it.
    pub server_info: Option<SentImplementation>,
    /// The server's capabilities, as it sent them (those rmcp has no field for included, such
    /// as 2025-11-25's `tasks`).
    pub capabilities: SentCapabilities,
    /// How to use the server, for people and models.
    pub instructions: Option<String>,
    /// Modern era: how long the discovery answer may be reused. `None` for a handshake, which
    /// belongs to its connection.
    pub fresh_for: Option<Duration>,
}

/// Who we are, as `clientInfo` (handshake) or `io.modelcontextprotocol/clientInfo` (modern).
pub fn client_info() -> Value {
    json!({
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The `initialize` request's params.
pub fn initialize_params(client_capabilities: &Value) -> Value {
    json!({
        "protocolVersion": OFFERED_PROTOCOL_VERSION,
        "capabilities": client_capabilities,
        "clientInfo": client_info(),
    })
}

/// Checks the server's `initialize` result: it must parse, and its protocol version must be one
/// we speak. Its `capabilities` and `serverInfo` are kept whole.
pub fn accept_initialize_result(server: &str, mut result: Value) -> Result<Negotiated, Error> {
    // Check the version before the shape: a server of an unknown revision may well answer in a
    // shape we cannot parse, and the version is the more useful error.
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(version) = &version {
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str()) {
            return Err(Error::unsupported_version(
                server,
                version,
                SUPPORTED_PROTOCOL_VERSIONS,
            ));
        }
    }
    let invalid =
        |e: serde_json::Error| Error::invalid_response(server, "initialize", e.to_string());
    let init = InitializeResult::deserialize(&result).map_err(invalid)?;
    // Parsed, so both are there; kept whole beside their typed forms.
    let mut whole = |key: &str| match result.get_mut(key).map(Value::take) {
        Some(Value::Object(object)) => Ok(object),
        _ => Err(Error::invalid_response(
            server,
            "initialize",
            format!("{key} is not an object"),
        )),
    };
    let (capabilities, server_info) = (whole("capabilities")?, whole("serverInfo")?);
    Ok(Negotiated {
        era: Era::Legacy,
        version: init.protocol_version.to_string(),
        server_info: Some(AsSent::from_object(server_info).map_err(invalid)?),
        capabilities: AsSent::from_object(capabilities).map_err(invalid)?,
        instructions: init.instructions,
        fresh_for: None,
    })
}

/// One page of a `tools/list` answer: the tools, each kept whole, and the cursor of the next
/// page.
pub fn parse_tools_page(
    server: &str,
    result: Value,
) -> Result<(Vec<ListedTool>, Option<String>), Error> {
    let page = ToolsPage::deserialize(result)
        .map_err(|e| Error::invalid_response(server, "tools/list", e.to_string()))?;
    Ok((page.tools, page.next_cursor))
}

/// How a tool list differs from the one before it, by name: each list sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolsDiff {
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools that disappeared.
    pub removed: Vec<String>,
    /// Tools in both lists whose object differs in any member, one rmcp does not know
    /// (`execution`, a new revision's) included.
    pub changed: Vec<String>,
}

impl ToolsDiff {
    /// The lists are the same.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The differences between two tool lists. Compares whole objects, so that a changed
/// description, schema or `execution` is news like a tool that came or went. (A name listed
/// twice counts as its last entry.)
pub fn diff_tools(old: &[ListedTool], new: &[ListedTool]) -> ToolsDiff {
    fn by_name(tools: &[ListedTool]) -> BTreeMap<&str, &ListedTool> {
        tools.iter().map(|t| (&*t.name, t)).collect()
    }
    let (old, new) = (by_name(old), by_name(new));
    let mut diff = ToolsDiff::default();
    for (name, tool) in &new {
        match old.get(name) {
            None => diff.added.push((*name).to_owned()),
            Some(before) if before != tool => diff.changed.push((*name).to_owned()),
            Some(_) => {}
        }
    }
    diff.removed = old
        .keys()
        .filter(|name| !new.contains_key(*name))
        .map(|name| (*name).to_owned())
        .collect();
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init_result(version: &str) -> Value {
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "demo", "version": "1.0"}
        })
    }

    #[test]
    fn offers_2025_11_25_not_rmcp_latest() {
        let params = initialize_params(&json!({}));
        assert_eq!(params["protocolVersion"], "2025-11-25");
        assert_ne!(
            rmcp::model::ProtocolVersion::LATEST.to_string(),
            OFFERED_PROTOCOL_VERSION
        );
    }

    #[test]
    fn accepts_every_handshake_revision() {
        for v in SUPPORTED_PROTOCOL_VERSIONS {
            let r = accept_initialize_result("s", init_result(v)).unwrap();
            assert_eq!(r.version, *v);
            assert_eq!(
                r.server_info.map(|i| i.name.clone()).as_deref(),
                Some("demo")
            );
        }
    }

    #[test]
    fn capabilities_and_server_info_are_kept_whole() {
        let tasks = json!({"requests": {"tools": {"call": {}}}, "list": {}});
        let mut result = init_result("2025-11-25");
        result["capabilities"]["tasks"] = tasks.clone();
        result["serverInfo"]["x-build"] = json!("1234");
        let negotiated = accept_initialize_result("s", result).unwrap();
        assert!(negotiated.capabilities.tools.is_some(), "typed");
        assert_eq!(negotiated.capabilities.object()["tasks"], tasks);
        let info = negotiated.server_info.unwrap();
        assert_eq!(
            (info.name.as_str(), &info.object()["x-build"]),
            ("demo", &json!("1234"))
        );
    }

    #[test]
    fn rejects_unknown_versions_clearly() {
        for v in ["2026-07-28", "1999-01-01", ""] {
            let e = accept_initialize_result("s", init_result(v)).unwrap_err();
            assert_eq!(e.code(), "unsupported_protocol_version", "{v}");
            assert!(e.to_string().contains("2025-06-18"));
        }
    }

    #[test]
    fn malformed_results_are_invalid_responses() {
        let e =
            accept_initialize_result("s", json!({"protocolVersion": "2025-06-18"})).unwrap_err();
        assert_eq!(e.code(), "invalid_response");
        let e = accept_initialize_result("s", json!("nope")).unwrap_err();
        assert_eq!(e.code(), "invalid_response");
    }

    #[test]
    fn parses_pages_and_diffs_tools() {
        let (tools, next) = parse_tools_page(
            "s",
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "2"}),
        )
        .unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(next.as_deref(), Some("2"));
        let (more, none) = parse_tools_page(
            "s",
            json!({"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}),
        )
        .unwrap();
        assert_eq!(none, None);
        let diff = diff_tools(&tools, &more);
        assert_eq!(
            (diff.added, diff.removed),
            (vec!["b".to_owned()], vec!["a".to_owned()])
        );
        assert!(diff.changed.is_empty());
        assert!(parse_tools_page("s", json!({"tools": 3})).is_err());
    }

    #[test]
    fn a_change_in_any_member_is_a_changed_tool() {
        let page = |tools: Value| parse_tools_page("s", json!({ "tools": tools })).unwrap().0;
        let tool = |name: &str, extra: Value| {
            let mut t = json!({"name": name, "inputSchema": {"type": "object"}});
            if let (Some(t), Some(extra)) = (t.as_object_mut(), extra.as_object()) {
                t.extend(extra.clone());
            }
            t
        };
        let before = page(json!([
            tool("same", json!({"x-future": 1})),
            tool("unknown", json!({"x-future": 1})),
            tool(
                "execution",
                json!({"execution": {"taskSupport": "forbidden"}})
            ),
            tool("schema", json!({}))
        ]));
        let after = page(json!([
            tool("same", json!({"x-future": 1})),
            tool("unknown", json!({"x-future": 2})),
            tool(
                "execution",
                json!({"execution": {"taskSupport": "optional"}})
            ),
            tool(
                "schema",
                json!({"inputSchema": {"type": "object", "required": ["a"]}})
            )
        ]));
        let diff = diff_tools(&before, &after);
        assert_eq!(diff.changed, ["execution", "schema", "unknown"]);
        assert!(diff.added.is_empty() && diff.removed.is_empty());
        assert!(diff_tools(&after, &after).is_empty());
    }
}
