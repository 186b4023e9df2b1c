//! Mirroring a `tools/call`'s arguments into `Mcp-Param-{Name}` headers, from the tool's
//! [`ParamBinding`]s (2026-07-28, `basic/transports/streamable-http.mdx` §Client Behavior, steps
//! 3–5; our digest §3.2–3.3 and the `http-custom-headers` scenario, §7.3).
//!
//! Each binding's argument is read at its exact property path. A value is sent when present,
//! the header is omitted when the value (or an object on its way) is absent or JSON `null`. A
//! value of the wrong JSON type for the declared kind is omitted too rather than sent malformed,
//! as is an integer outside ±(2^53−1), which the revision does not allow (the server then
//! answers `-32602` or `-32020` for the body it sees, which is the honest outcome). Why a header
//! was left out is returned by [`param_header`] for a debug log.

use serde_json::Value;

use super::annotations::{ParamBinding, Primitive};
use super::header_value;

/// The largest integer magnitude a header may carry: 2^53−1, JavaScript's safe range.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why [`param_header`] gave no header for a binding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Omitted {
    /// No value at the path: the argument, or an object on its way, is absent (or the value on
    /// the way is not an object).
    #[error("no argument at its path")]
    Absent,
    /// The argument is JSON `null`.
    #[error("the argument is null")]
    Null,
    /// The argument's JSON type is not the declared one (a number with a fraction for an
    /// integer counts as `number`).
    #[error("the argument is a JSON {found}, but the schema declares {expected}")]
    WrongType {
        /// The declared kind.
        expected: Primitive,
        /// The argument's JSON type.
        found: &'static str,
    },
    /// An integer outside ±(2^53−1).
    #[error("the integer {value} is outside ±(2^53−1)")]
    OutOfRange {
        /// The integer, as JSON.
        value: String,
    },
}

/// The `Mcp-Param-*` headers of one call, in the order of `bindings`: `(name, value)` with the
/// name as declared (`Mcp-Param-Region`) and the value encoded. `arguments` is the call's
/// `arguments` object; `None` means no arguments.
pub fn param_headers(
    bindings: &[ParamBinding],
    arguments: Option<&Value>,
) -> Vec<(String, String)> {
    bindings
        .iter()
        .filter_map(|binding| param_header(binding, arguments).ok())
        .collect()
}

/// The header of one binding, or why there is none.
pub fn param_header(
    binding: &ParamBinding,
    arguments: Option<&Value>,
) -> Result<(String, String), Omitted> {
    let mut value = arguments.ok_or(Omitted::Absent)?;
    for key in &binding.path {
        value = value
            .as_object()
            .and_then(|object| object.get(key))
            .ok_or(Omitted::Absent)?;
    }
    let text = match (binding.kind, value) {
        (_, Value::Null) => return Err(Omitted::Null),
        (Primitive::String, Value::String(s)) => header_value(s),
        (Primitive::Boolean, Value::Bool(b)) => b.to_string(),
        (Primitive::Integer, Value::Number(n)) => integer(n)?,
        (expected, other) => {
            return Err(Omitted::WrongType {
                expected,
                found: json_type(other),
            })
        }
    };
    Ok((binding.header_name(), text))
}

/// `n` in decimal if it is an integer in range. JSON Schema's `integer` is any number without
/// a fraction, so `42.0` is `42`.
fn integer(n: &serde_json::Number) -> Result<String, Omitted> {
    let out_of_range = || Omitted::OutOfRange {
        value: n.to_string(),
    };
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() <= MAX_SAFE_INTEGER {
            Ok(i.to_string())
        } else {
            Err(out_of_range())
        };
    }
    if n.is_u64() {
        // Above i64::MAX, so far above the range.
        return Err(out_of_range());
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(Omitted::WrongType {
            expected: Primitive::Integer,
            found: "number",
        });
    }
    // Exact: every integer up to 2^53 is an f64, and the cast cannot saturate within range.
    if f.abs() <= MAX_SAFE_INTEGER as f64 {
        Ok((f as i64).to_string())
    } else {
        Err(out_of_range())
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::headers::param_bindings;
    use serde_json::json;

    /// The `test_custom_headers` tool of the conformance scenario `http-custom-headers`.
    fn conformance_bindings() -> Vec<ParamBinding> {
        let s = |header: &str| json!({"type": "string", "x-mcp-header": header});
        let schema = json!({
            "type": "object",
            "properties": {
                "region": s("Region"),
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "debug": {"type": "boolean", "x-mcp-header": "Debug"},
                "empty_val": s("EmptyVal"),
                "method": s("Method"),
                "non_ascii": s("NonAscii"),
                "whitespace": s("Whitespace"),
                "leading_space": s("LeadingSpace"),
                "trailing_space": s("TrailingSpace"),
                "internal_space": s("InternalSpace"),
                "control_char": s("ControlChar"),
                "crlf": s("CrLf"),
                "tab": s("Tab"),
                "float_val": {"type": "number"},
                "query": {"type": "string"},
            },
        });
        param_bindings(&schema).expect("the conformance tool is valid")
    }

    fn sorted(mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
        headers.sort();
        headers
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        sorted(
            expected
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn the_conformance_arguments_give_the_expected_headers() {
        let arguments = json!({
            "region": "us-west1",
            "priority": 42,
            "verbose": false,
            "debug": true,
            "empty_val": "",
            "method": "test-method",
            "non_ascii": "Hello, 世界",
            "whitespace": " padded ",
            "leading_space": " us-west1",
            "trailing_space": "us-west1 ",
            "internal_space": "us west 1",
            "control_char": "line1\nline2",
            "crlf": "line1\r\nline2",
            "tab": "\tindented",
            "float_val": 2.5,
            "query": "SELECT 1",
        });
        let headers = sorted(param_headers(&conformance_bindings(), Some(&arguments)));
        assert_eq!(
            headers,
            pairs(&[
                ("Mcp-Param-Region", "us-west1"),
                ("Mcp-Param-Priority", "42"),
                ("Mcp-Param-Verbose", "false"),
                ("Mcp-Param-Debug", "true"),
                ("Mcp-Param-EmptyVal", ""),
                ("Mcp-Param-Method", "test-method"),
                ("Mcp-Param-NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ("Mcp-Param-Whitespace", "=?base64?IHBhZGRlZCA=?="),
                ("Mcp-Param-LeadingSpace", "=?base64?IHVzLXdlc3Qx?="),
                ("Mcp-Param-TrailingSpace", "=?base64?dXMtd2VzdDEg?="),
                ("Mcp-Param-InternalSpace", "us west 1"),
                ("Mcp-Param-ControlChar", "=?base64?bGluZTEKbGluZTI=?="),
                ("Mcp-Param-CrLf", "=?base64?bGluZTENCmxpbmUy?="),
                ("Mcp-Param-Tab", "=?base64?CWluZGVudGVk?="),
            ])
        );
        // Not annotated: never mirrored, under any spelling.
        for (name, _) in &headers {
            let lower = name.to_ascii_lowercase();
            assert!(
                !lower.contains("float") && !lower.contains("query"),
                "{name}"
            );
        }
    }

    #[test]
    fn a_null_argument_omits_its_header() {
        // The `test_custom_headers_null` call.
        let bindings = conformance_bindings();
        let arguments = json!({"region": "us-west1", "verbose": null});
        assert_eq!(
            param_headers(&bindings, Some(&arguments)),
            pairs(&[("Mcp-Param-Region", "us-west1")])
        );
        let verbose = bindings.iter().find(|b| b.header == "Verbose").unwrap();
        assert_eq!(param_header(verbose, Some(&arguments)), Err(Omitted::Null));
    }

    #[test]
    fn an_absent_argument_or_parent_omits_its_header() {
        let schema = json!({"type": "object", "properties": {"target": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        }}});
        let bindings = param_bindings(&schema).unwrap();
        let region = |arguments: Option<Value>| param_header(&bindings[0], arguments.as_ref());
        assert_eq!(
            region(Some(json!({"target": {"region": "eu"}}))),
            Ok(("Mcp-Param-Region".to_owned(), "eu".to_owned()))
        );
        for arguments in [
            None,
            Some(json!({})),
            Some(json!({"target": {}})),
            Some(json!({"region": "eu"})),
            Some(json!({"target": "eu"})),
            Some(json!({"target": [{"region": "eu"}]})),
            Some(json!([])),
        ] {
            assert_eq!(
                region(arguments.clone()),
                Err(Omitted::Absent),
                "{arguments:?}"
            );
        }
        assert_eq!(region(Some(json!({"target": null}))), Err(Omitted::Absent));
        assert_eq!(
            region(Some(json!({"target": {"region": null}}))),
            Err(Omitted::Null)
        );
        assert_eq!(param_headers(&bindings, None), vec![]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_omitted_not_sent_malformed() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
        }});
        let bindings = param_bindings(&schema).unwrap();
        let get = |header: &str, value: Value| {
            let binding = bindings.iter().find(|b| b.header == header).unwrap();
            let arguments = json!({ binding.path[0].clone(): value });
            param_header(binding, Some(&arguments))
        };
        let wrong = |expected, found| Err(Omitted::WrongType { expected, found });
        assert_eq!(get("S", json!(42)), wrong(Primitive::String, "number"));
        assert_eq!(
            get("S", json!({"a": 1})),
            wrong(Primitive::String, "object")
        );
        assert_eq!(get("I", json!("42")), wrong(Primitive::Integer, "string"));
        assert_eq!(get("I", json!(true)), wrong(Primitive::Integer, "boolean"));
        assert_eq!(get("I", json!(1.5)), wrong(Primitive::Integer, "number"));
        assert_eq!(get("B", json!("true")), wrong(Primitive::Boolean, "string"));
        assert_eq!(get("B", json!([true])), wrong(Primitive::Boolean, "array"));
        assert_eq!(get("B", json!(0)), wrong(Primitive::Boolean, "number"));
    }

    #[test]
    fn integers_go_out_in_decimal_within_the_safe_range_only() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"},
        }});
        let bindings = param_bindings(&schema).unwrap();
        let n =
            |value: Value| param_header(&bindings[0], Some(&json!({ "n": value }))).map(|(_, v)| v);
        let max = MAX_SAFE_INTEGER as i64;
        assert_eq!(n(json!(42)), Ok("42".to_owned()));
        assert_eq!(n(json!(-7)), Ok("-7".to_owned()));
        assert_eq!(n(json!(0)), Ok("0".to_owned()));
        assert_eq!(n(json!(max)), Ok(max.to_string()));
        assert_eq!(n(json!(-max)), Ok((-max).to_string()));
        // JSON Schema's integer: a number without a fraction.
        assert_eq!(n(json!(42.0)), Ok("42".to_owned()));
        assert_eq!(n(json!(-0.0)), Ok("0".to_owned()));
        assert_eq!(n(json!(9007199254740991.0)), Ok(max.to_string()));
        let out = |value: &str| {
            Err(Omitted::OutOfRange {
                value: value.into(),
            })
        };
        assert_eq!(n(json!(max + 1)), out("9007199254740992"));
        assert_eq!(n(json!(-max - 1)), out("-9007199254740992"));
        assert_eq!(n(json!(i64::MIN)), out("-9223372036854775808"));
        assert_eq!(n(json!(u64::MAX)), out("18446744073709551615"));
        assert_eq!(n(json!(1e300)), out("1e+300"));
    }
}
