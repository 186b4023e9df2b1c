//! `server/discover` results (`protocol::discover`), and the version list of a `-32022` error
//! (`protocol::era`): the server chooses every byte.
//!
//! A result is accepted only when it is an object whose `supportedVersions` is a list of
//! strings and whose `capabilities` (when given) are an object of `ServerCapabilities`; what
//! is accepted says what the server sent: the capabilities and identity whole (every member,
//! rmcp's type knows it or not) and as they deserialize, `ttlMs`
//! clamped to `0..=MAX_TTL`, `cacheScope` `public` only when it says so. Server text that is
//! kept to be shown (the versions, `instructions`) is escaped and bounded, and so is a refusal's
//! message. Written back as a result, what was accepted parses into the same thing.

use mcp_supervisor::protocol::discover::{
    parse_discover_result, Discovered, MAX_TTL, SERVER_INFO_KEY,
};
use mcp_supervisor::protocol::era::{named_versions, supported_versions, MAX_NAMED_VERSIONS};
use mcp_supervisor::protocol::jsonrpc::RpcError;
use mcp_supervisor::protocol::lifecycle::SUPPORTED_PROTOCOL_VERSIONS;
use mcp_supervisor::protocol::text::{server_text, SERVER_TEXT_LIMIT};
use mcp_supervisor::{SentCapabilities, SentImplementation};
use serde_json::{json, Value};
use std::time::Duration;

use super::is_shown_safely;

/// Fuzz entry: the input as a `server/discover` result, and as the `data` of a `-32022` error.
pub fn fuzz_discover(data: &[u8]) {
    let Ok(result) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    check_discover_result(&result);
    check_unsupported_version_data(&result);
}

/// What `parse_discover_result` makes of `result`.
pub fn check_discover_result(result: &Value) {
    let discovered = match parse_discover_result("fuzz", result) {
        Ok(discovered) => discovered,
        Err(e) => {
            assert_eq!(e.code(), "invalid_response");
            let text = e.to_string();
            assert!(
                !text.chars().any(mcp_supervisor::protocol::text::is_unsafe),
                "{text:?}"
            );
            assert!(
                text.len() <= SERVER_TEXT_LIMIT + 200,
                "{} bytes",
                text.len()
            );
            return;
        }
    };
    let object = result.as_object().expect("only an object is accepted");
    let versions: Vec<&str> = object["supportedVersions"]
        .as_array()
        .expect("only a list of versions is accepted")
        .iter()
        .map(|v| v.as_str().expect("only strings are accepted as versions"))
        .collect();
    assert_eq!(discovered.supported_versions, named_versions(versions));
    check_named_versions(&discovered.supported_versions);

    let capabilities = match object.get("capabilities") {
        None | Some(Value::Null) => SentCapabilities::default(),
        Some(caps) => serde_json::from_value(caps.clone()).expect("accepted capabilities parse"),
    };
    assert_eq!(discovered.capabilities, capabilities);
    assert_eq!(discovered.capabilities.typed(), capabilities.typed());
    if let Some(Value::Object(sent)) = object.get("capabilities") {
        assert_eq!(discovered.capabilities.object(), sent, "kept whole");
    }
    let info = object
        .get("_meta")
        .and_then(|meta| meta.get(SERVER_INFO_KEY))
        .or_else(|| object.get("serverInfo"));
    let info: Option<SentImplementation> =
        info.and_then(|i| serde_json::from_value(i.clone()).ok());
    assert_eq!(discovered.server_info, info);

    match (object.get("instructions"), &discovered.instructions) {
        (Some(Value::String(sent)), Some(kept)) => assert_eq!(*kept, server_text(sent)),
        (sent, kept) => assert!(kept.is_none(), "instructions {kept:?} from {sent:?}"),
    }
    if let Some(kept) = &discovered.instructions {
        assert!(is_shown_safely(kept), "{kept:?}");
    }

    assert!(discovered.ttl <= MAX_TTL);
    let ms = object.get("ttlMs").and_then(Value::as_f64);
    match ms {
        Some(ms) if ms >= 1.0 && ms.is_finite() => {
            let want = Duration::from_millis(ms.min(MAX_TTL.as_millis() as f64) as u64);
            assert_eq!(discovered.ttl, want);
        }
        Some(ms) if ms > 0.0 && ms.is_finite() => {
            assert!(discovered.ttl < Duration::from_millis(1))
        }
        _ => assert_eq!(discovered.ttl, Duration::ZERO),
    }
    let public = object.get("cacheScope") == Some(&json!("public"));
    assert_eq!(
        discovered.cache_scope,
        if public { "public" } else { "private" }
    );

    let written = write_back(&discovered);
    let again = parse_discover_result("fuzz", &written).expect("what was accepted parses again");
    assert_eq!(again, discovered, "written back as {written}");
}

/// A `-32022` error with `data` as its data: the versions it names are kept escaped and
/// bounded, as `named_versions` makes them.
pub fn check_unsupported_version_data(data: &Value) {
    let error = RpcError {
        code: -32022,
        message: String::new(),
        data: Some(data.clone()),
    };
    let Some(named) = supported_versions(&error) else {
        return;
    };
    let list = data["supported"].as_array().expect("only a list is read");
    assert_eq!(named, named_versions(list.iter().filter_map(Value::as_str)));
    check_named_versions(&named);
}

/// Versions kept from a server's list: a bounded number, each safe to show.
fn check_named_versions(versions: &[String]) {
    let ours =
        mcp_supervisor::protocol::era::MODERN_VERSIONS.len() + SUPPORTED_PROTOCOL_VERSIONS.len();
    assert!(
        versions.len() <= MAX_NAMED_VERSIONS + ours,
        "{} versions",
        versions.len()
    );
    for version in versions {
        assert!(is_shown_safely(version), "{version:?}");
    }
}

/// `discovered` as a result a server could send.
fn write_back(discovered: &Discovered) -> Value {
    let mut result = json!({
        "supportedVersions": discovered.supported_versions,
        "capabilities": discovered.capabilities,
        "ttlMs": discovered.ttl.as_millis() as u64,
        "cacheScope": discovered.cache_scope,
    });
    if let Some(info) = &discovered.server_info {
        result["serverInfo"] = json!(info);
    }
    if let Some(instructions) = &discovered.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}
