//! The 2026-07-28 header rules a modern POST must follow, checked the way a strict server does
//! (spec `basic/transports/streamable-http.mdx` §Request Metadata and §Custom Headers; our
//! digest §2, §3.1–3.3). Each broken rule is a JSON-RPC error answered with HTTP 400 and the
//! request's id:
//!
//! 1. `MCP-Protocol-Version` missing → `-32020`; `params._meta`'s
//!    `io.modelcontextprotocol/protocolVersion` missing → `-32602`; the two differ → `-32020`.
//! 2. The version is not one the server speaks → `-32022` with `data: {supported, requested}`.
//! 3. `_meta`'s `io.modelcontextprotocol/clientCapabilities` missing → `-32602`.
//! 4. `Mcp-Method` missing or not the body's `method` → `-32020`.
//! 5. `Mcp-Name` missing or not `params.name` (`tools/call`, `prompts/get`) or `params.uri`
//!    (`resources/read`) → `-32020`.
//! 6. For a tool whose `inputSchema` has `x-mcp-header` annotations ([`check_params`]): each
//!    annotated argument present must come as `Mcp-Param-{Name}` with an equal value (integers
//!    compared as numbers), and an absent or `null` one must not → `-32020`.
//!
//! Header values are decoded from the Base64 sentinel `=?base64?…?=` before comparing. This is
//! an implementation of its own, not the client's (`src/protocol/headers`), so that the tests
//! compare the client with an independent reading of the rules. A header sent twice, or with a
//! byte outside visible ASCII and spaces (a client must encode those), never matches.

use actix_web::HttpRequest;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::era::{meta_version, MODERN_VERSION};

pub(super) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// A broken rule: the JSON-RPC error code, its message and its `data`.
pub(super) struct Broken {
    pub(super) code: i64,
    pub(super) message: String,
    pub(super) data: Option<Value>,
}

fn broken(code: i64, message: impl Into<String>) -> Broken {
    Broken {
        code,
        message: message.into(),
        data: None,
    }
}

/// The one value of a header: `None` when absent, `Err` when sent twice or not visible ASCII.
fn single(req: &HttpRequest, name: &str) -> Option<Result<String, ()>> {
    let mut values = req.headers().get_all(name);
    let first = values.next()?;
    if values.next().is_some() {
        return Some(Err(()));
    }
    let bytes = first.as_bytes();
    if bytes.iter().any(|b| !(0x20..=0x7e).contains(b)) {
        return Some(Err(()));
    }
    Some(Ok(String::from_utf8_lossy(bytes).trim().to_owned()))
}

/// A header value with the Base64 sentinel decoded (`Err` for a sentinel that is not canonical
/// padded Base64 of UTF-8).
pub(super) fn decode(value: &str) -> Result<String, ()> {
    let inner = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX));
    let Some(inner) = inner else {
        return Ok(value.to_owned());
    };
    let bytes = STANDARD.decode(inner).map_err(|_| ())?;
    // Canonical only: what decodes must encode back to the same text.
    if STANDARD.encode(&bytes) != inner {
        return Err(());
    }
    String::from_utf8(bytes).map_err(|_| ())
}

/// Whether header `name` carries exactly `expected` (decoded from the sentinel if `encoded`
/// values are allowed: `Mcp-Name` may be, `Mcp-Method` never needs to be).
fn mirrors(req: &HttpRequest, name: &str, expected: &str, encoded: bool) -> Result<(), Broken> {
    let matches = |value: &str| {
        if encoded {
            decode(value).as_deref() == Ok(expected)
        } else {
            value == expected
        }
    };
    match single(req, name) {
        None => Err(broken(
            -32020,
            format!("Header mismatch: {name} is missing"),
        )),
        Some(Err(())) => Err(broken(
            -32020,
            format!("Header mismatch: {name} is malformed"),
        )),
        Some(Ok(value)) if matches(&value) => Ok(()),
        Some(Ok(value)) => Err(Broken {
            code: -32020,
            message: format!("Header mismatch: {name} does not match the body"),
            data: Some(json!({"mismatch": {"header": name, "value": value, "body": expected}})),
        }),
    }
}

/// Rules 1–5 for a modern request (`versions`: the ones the server speaks).
pub(super) fn check_request(
    req: &HttpRequest,
    message: &Value,
    versions: &[String],
) -> Result<(), Broken> {
    let header = match single(req, "mcp-protocol-version") {
        None => {
            return Err(broken(
                -32020,
                "Header mismatch: MCP-Protocol-Version is missing",
            ))
        }
        Some(Err(())) => {
            return Err(broken(
                -32020,
                "Header mismatch: MCP-Protocol-Version is malformed",
            ))
        }
        Some(Ok(header)) => header,
    };
    let Some(meta) = meta_version(message) else {
        return Err(broken(
            -32602,
            "Invalid params: _meta is missing io.modelcontextprotocol/protocolVersion",
        ));
    };
    if meta.as_str() != Some(header.as_str()) {
        return Err(broken(
            -32020,
            "Header mismatch: MCP-Protocol-Version differs from _meta's protocolVersion",
        ));
    }
    if !versions.contains(&header) {
        return Err(Broken {
            code: -32022,
            message: format!("Unsupported protocol version: {header}"),
            data: Some(json!({"supported": versions, "requested": header})),
        });
    }
    let capabilities = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_CAPABILITIES));
    if capabilities.is_none() {
        return Err(broken(
            -32602,
            "Invalid params: _meta is missing io.modelcontextprotocol/clientCapabilities",
        ));
    }
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    mirrors(req, "mcp-method", method, false)?;
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(key) = name_key {
        let Some(name) = message
            .pointer(&format!("/params/{key}"))
            .and_then(Value::as_str)
        else {
            return Err(broken(
                -32602,
                format!("Invalid params: params.{key} is missing"),
            ));
        };
        mirrors(req, "mcp-name", name, true)?;
    }
    Ok(())
}

/// One `x-mcp-header` annotation: the property path, the header name and the declared type.
struct Annotation {
    path: Vec<String>,
    header: String,
    kind: String,
}

/// The annotations of a schema reachable through `properties` keys only (nested objects too).
fn annotations(schema: &Value, path: &mut Vec<String>, found: &mut Vec<Annotation>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
            found.push(Annotation {
                path: path.clone(),
                header: header.to_owned(),
                kind: property
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        annotations(property, path, found);
        path.pop();
    }
}

/// Rule 6: the `Mcp-Param-*` headers of a `tools/call` of a tool with this `inputSchema`.
pub(super) fn check_params(
    req: &HttpRequest,
    input_schema: &Value,
    args: &Value,
) -> Result<(), Broken> {
    let mut found = Vec::new();
    annotations(input_schema, &mut Vec::new(), &mut found);
    for annotation in found {
        let name = format!("mcp-param-{}", annotation.header.to_ascii_lowercase());
        let value = annotation
            .path
            .iter()
            .try_fold(args, |value, key| value.get(key));
        let header = single(req, &name);
        let value = match value {
            None | Some(Value::Null) if header.is_none() => continue,
            None | Some(Value::Null) => {
                let message = format!("Header mismatch: {name} sent for an absent argument");
                return Err(broken(-32020, message));
            }
            Some(value) => value,
        };
        let Some(Ok(header)) = header else {
            return Err(broken(
                -32020,
                format!("Header mismatch: {name} is missing or malformed"),
            ));
        };
        let Ok(header) = decode(&header) else {
            return Err(broken(
                -32020,
                format!("Header mismatch: {name} is malformed"),
            ));
        };
        let equal = match (annotation.kind.as_str(), value) {
            ("string", Value::String(s)) => *s == header,
            ("integer", Value::Number(n)) if n.as_i64().is_some() => {
                header.parse::<i64>().ok() == n.as_i64()
            }
            ("boolean", Value::Bool(b)) => header == b.to_string(),
            _ => {
                let message = format!(
                    "Invalid params: {} has the wrong type",
                    annotation.path.join(".")
                );
                return Err(broken(-32602, message));
            }
        };
        if !equal {
            return Err(Broken {
                code: -32020,
                message: format!("Header mismatch: {name} does not match the argument"),
                data: Some(json!({"mismatch": {"header": name, "value": header, "body": value}})),
            });
        }
    }
    Ok(())
}

/// The default modern version list.
pub(super) fn default_versions() -> Vec<String> {
    vec![MODERN_VERSION.to_owned()]
}
