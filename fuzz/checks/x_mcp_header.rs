//! A tool's `x-mcp-header` annotations (`protocol::headers`, `annotations.rs`) and the
//! `Mcp-Param-*` headers they give a call (`mirror.rs`), for any schema and arguments a server
//! and a caller can send.
//!
//! The annotations are checked against a plain recursive model of the revision's rules: the
//! tool is valid exactly when every annotation in a schema position is a non-empty token, on a
//! `properties` chain from the root, on a property of type `string`, `integer` or `boolean`,
//! and unique ignoring case; then the bindings are the model's, in order, and otherwise the
//! error is for the first invalid one, escaped and bounded. Each header is then the argument
//! at the binding's path, encoded, or left out for the documented reason.

use mcp_supervisor::protocol::headers::{
    decode_header_value, dropped_tool_message, param_bindings, param_header, param_headers,
    InvalidHeaderAnnotation, Omitted, ParamBinding, Primitive, MAX_SAFE_INTEGER, X_MCP_HEADER,
};
use mcp_supervisor::protocol::text::{is_unsafe, SERVER_TEXT_LIMIT};
use serde_json::{Map, Value};

use super::header_value::is_header_value;

/// Fuzz entry: the input is `{"inputSchema": …, "arguments": …}`, or a schema alone.
pub fn fuzz_x_mcp_header(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (schema, arguments) = match input.get("inputSchema") {
        Some(schema) => (schema, input.get("arguments")),
        None => (&input, None),
    };
    check_annotations(schema, arguments);
}

/// The bindings of `schema` against the model, and the headers of a call with `arguments`.
pub fn check_annotations(schema: &Value, arguments: Option<&Value>) {
    let got = param_bindings(schema);
    let want = model_bindings(schema);
    let bindings = match (got, want) {
        (Ok(got), Ok(want)) => {
            assert_eq!(got, want);
            got
        }
        (Err(e), Err(reason)) => {
            assert_eq!(reason_of(&e), reason, "{e}");
            check_error_text(&e);
            return;
        }
        (got, want) => panic!("bindings {got:?}, but the model says {want:?}"),
    };
    let mut sent = Vec::new();
    for binding in &bindings {
        let argument = at_path(arguments, &binding.path);
        match param_header(binding, arguments) {
            Ok(header) => {
                check_header(binding, argument, &header);
                sent.push(header);
            }
            Err(omitted) => check_omitted(binding, argument, &omitted),
        }
    }
    assert_eq!(param_headers(&bindings, arguments), sent);
}

/// An invalid annotation's error, as logged with the tool's name: every piece of server text
/// in it escaped, and each bounded.
fn check_error_text(e: &InvalidHeaderAnnotation) {
    let text = e.to_string();
    assert!(!text.chars().any(is_unsafe), "{text:?}");
    assert!(
        text.len() <= 4 * SERVER_TEXT_LIMIT + 300,
        "{} bytes",
        text.len()
    );
    let message = dropped_tool_message(&text, e);
    assert!(!message.chars().any(is_unsafe), "{message:?}");
    assert!(message.len() <= 5 * SERVER_TEXT_LIMIT + 400);
}

fn check_header(
    binding: &ParamBinding,
    argument: Option<&Value>,
    (name, value): &(String, String),
) {
    assert_eq!(*name, format!("Mcp-Param-{}", binding.header));
    assert!(is_header_value(value), "{value:?}");
    match (binding.kind, argument) {
        (Primitive::String, Some(Value::String(s))) => {
            assert_eq!(decode_header_value(value).as_ref(), Ok(s))
        }
        (Primitive::Boolean, Some(Value::Bool(b))) => assert_eq!(*value, b.to_string()),
        (Primitive::Integer, Some(Value::Number(n))) => {
            let sent: i64 = value.parse().expect("an integer header is decimal");
            assert!(sent.unsigned_abs() <= MAX_SAFE_INTEGER);
            assert_eq!(sent as f64, n.as_f64().expect("a JSON number is an f64"));
        }
        (kind, argument) => panic!("a {kind} header {value:?} for {argument:?}"),
    }
}

fn check_omitted(binding: &ParamBinding, argument: Option<&Value>, omitted: &Omitted) {
    match (omitted, argument) {
        (Omitted::Absent, None) | (Omitted::Null, Some(Value::Null)) => {}
        (Omitted::WrongType { expected, .. }, Some(argument)) => {
            assert_eq!(*expected, binding.kind);
            let fits = match (binding.kind, argument) {
                (Primitive::String, Value::String(_)) | (Primitive::Boolean, Value::Bool(_)) => {
                    true
                }
                // An integer in JSON Schema's sense: no fraction.
                (Primitive::Integer, Value::Number(n)) => n
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
                _ => false,
            };
            assert!(!fits, "{argument} was refused as {}", binding.kind);
        }
        (Omitted::OutOfRange { .. }, Some(Value::Number(n))) => {
            assert_eq!(binding.kind, Primitive::Integer);
            let in_range = match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.unsigned_abs() <= MAX_SAFE_INTEGER,
                (None, Some(u)) => u <= MAX_SAFE_INTEGER,
                _ => n
                    .as_f64()
                    .is_some_and(|f| f.abs() <= MAX_SAFE_INTEGER as f64),
            };
            assert!(!in_range, "{n} was refused as out of range");
        }
        (omitted, argument) => panic!("left out ({omitted}) with {argument:?}"),
    }
}

/// The value at `path` in `arguments`, through objects only.
fn at_path<'a>(arguments: Option<&'a Value>, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(arguments?, |value, key| value.as_object()?.get(key))
}

/// Keywords whose value is instance data, never a schema.
const DATA: &[&str] = &["const", "enum", "default", "examples"];
/// Keywords whose object value maps names to schemas.
const NAMES_TO_SCHEMAS: &[&str] = &[
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
];

/// One annotation in a schema position: the steps to its schema and whether they are a
/// `properties` chain from the root.
struct Annotation<'a> {
    steps: Vec<String>,
    reachable: bool,
    schema: &'a Map<String, Value>,
    value: &'a Value,
}

/// Every annotation under `node`, in the order of the keys (the node's own first).
fn annotations<'a>(
    node: &'a Value,
    steps: &mut Vec<String>,
    reachable: bool,
    out: &mut Vec<Annotation<'a>>,
) {
    match node {
        Value::Object(schema) => {
            if let Some(value) = schema.get(X_MCP_HEADER) {
                out.push(Annotation {
                    steps: steps.clone(),
                    reachable,
                    schema,
                    value,
                });
            }
            for (key, child) in schema {
                if key == X_MCP_HEADER || DATA.contains(&key.as_str()) {
                    continue;
                }
                steps.push(key.clone());
                match child {
                    Value::Object(map) if NAMES_TO_SCHEMAS.contains(&key.as_str()) => {
                        for (name, child) in map {
                            steps.push(name.clone());
                            annotations(child, steps, reachable && key == "properties", out);
                            steps.pop();
                        }
                    }
                    _ => annotations(child, steps, false, out),
                }
                steps.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                steps.push(i.to_string());
                annotations(item, steps, false, out);
                steps.pop();
            }
        }
        _ => {}
    }
}

/// The model: the bindings, or the reason (a variant's name) of the first invalid annotation.
fn model_bindings(schema: &Value) -> Result<Vec<ParamBinding>, &'static str> {
    if !schema.is_object() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    annotations(schema, &mut Vec::new(), true, &mut found);
    let mut seen = std::collections::HashSet::new();
    let mut bindings = Vec::new();
    for a in found {
        if !a.reachable || a.steps.is_empty() {
            return Err("Unreachable");
        }
        let Value::String(name) = a.value else {
            return Err("NotAString");
        };
        if name.is_empty() {
            return Err("Empty");
        }
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if !name.bytes().all(tchar) {
            return Err("NotAToken");
        }
        let kind = match a.schema.get("type").and_then(Value::as_str) {
            Some("string") => Primitive::String,
            Some("integer") => Primitive::Integer,
            Some("boolean") => Primitive::Boolean,
            _ => return Err("NotPrimitive"),
        };
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err("Duplicate");
        }
        bindings.push(ParamBinding {
            header: name.clone(),
            path: a.steps.iter().skip(1).step_by(2).cloned().collect(),
            kind,
        });
    }
    Ok(bindings)
}

fn reason_of(e: &InvalidHeaderAnnotation) -> &'static str {
    match e {
        InvalidHeaderAnnotation::NotAString { .. } => "NotAString",
        InvalidHeaderAnnotation::Empty { .. } => "Empty",
        InvalidHeaderAnnotation::NotAToken { .. } => "NotAToken",
        InvalidHeaderAnnotation::Duplicate { .. } => "Duplicate",
        InvalidHeaderAnnotation::NotPrimitive { .. } => "NotPrimitive",
        InvalidHeaderAnnotation::Unreachable { .. } => "Unreachable",
    }
}
