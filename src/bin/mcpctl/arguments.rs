//! A tool's arguments as `call` takes them: one JSON object, or `KEY=VALUE` words typed by the
//! tool's input schema.
//!
//! Its own room because typing a word is a decision with rules of its own, made once the
//! server has listed its tools (the schema is the server's): `count=3` must be the number 3
//! for an integer property and `zip=01234` the text "01234" for a string one, and a word that
//! cannot be what the schema says is an error naming its key before the tool runs.

use serde_json::{Map, Value};

/// `call`'s arguments, as written.
#[derive(Debug)]
pub(crate) enum Arguments {
    /// One JSON object (or none: `{}`).
    Json(Map<String, Value>),
    /// `KEY=VALUE` words, in order; typed with [`typed`] once the tool's schema is known.
    Pairs(Vec<(String, String)>),
}

impl Arguments {
    /// Reads the words after the tool's name: one JSON object (a single word that is JSON, or
    /// starts like it), or `KEY=VALUE` words, each key once.
    pub(crate) fn parse(words: &[String]) -> Result<Arguments, String> {
        match words {
            [] => Ok(Arguments::Json(Map::new())),
            [one] if looks_like_json(one) => match serde_json::from_str(one) {
                Ok(Value::Object(map)) => Ok(Arguments::Json(map)),
                Ok(_) => Err("the tool's arguments must be a JSON object".into()),
                Err(e) => Err(format!("the tool's arguments are not valid JSON: {e}")),
            },
            words => {
                let mut pairs: Vec<(String, String)> = Vec::with_capacity(words.len());
                for word in words {
                    let Some((key, value)) = word.split_once('=').filter(|(k, _)| !k.is_empty())
                    else {
                        return Err(format!(
                            "expected KEY=VALUE (or one JSON object), not `{word}`"
                        ));
                    };
                    if pairs.iter().any(|(k, _)| k == key) {
                        return Err(format!("the argument `{key}` is given twice"));
                    }
                    pairs.push((key.to_owned(), value.to_owned()));
                }
                Ok(Arguments::Pairs(pairs))
            }
        }
    }
}

/// A single word meant as JSON: it parses as JSON, or starts as an object or array would (so
/// that a typo in it is reported as bad JSON, not as a word without `=`).
fn looks_like_json(word: &str) -> bool {
    word.trim_start().starts_with(['{', '[']) || serde_json::from_str::<Value>(word).is_ok()
}

/// The JSON types a schema's `type` may name, as `call` reads them.
const KNOWN_TYPES: [&str; 7] = [
    "string", "integer", "number", "boolean", "object", "array", "null",
];

/// How deep `anyOf`/`oneOf` branches are followed; deeper, the property is left untyped.
const MAX_DEPTH: usize = 16;

/// The arguments object of `KEY=VALUE` pairs, each value typed by `schema` (the tool's
/// `inputSchema`), by the JSON types `inputSchema.properties.<key>` allows: those its `type`
/// names (one, or a list), those of its `enum` values and its `const`, and those of the
/// branches of its `anyOf` and `oneOf` (pydantic's `Optional[str]` is
/// `{"anyOf": [{"type": "string"}, {"type": "null"}]}`):
///
/// - `string` among them: the text as it is, even if it looks like a number, is quoted or is
///   `null` (a string may be any text; to send null, leave the key out or give a JSON object);
/// - else the text parsed as JSON, and of one of them (`integer`, `number`, `boolean`, `null`,
///   `object`, `array`);
/// - none known (no schema, no such property, a type this does not know, or a branch that
///   says nothing this can read, such as a `$ref`): the text as JSON if it parses, else as a
///   string.
///
/// An integer is kept exactly, as a 64-bit one (from -2^63 to 2^64-1): a longer one, where a
/// number is expected or nothing is known, is an error rather than a float that rounds it.
/// The error names the key and what the schema expects; it does not show the value, which may
/// be a secret.
pub(crate) fn typed(
    pairs: &[(String, String)],
    schema: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let mut arguments = Map::new();
    for (key, text) in pairs {
        let types = properties
            .and_then(|p| p.get(key))
            .and_then(|p| allowed_types(p, 0))
            .unwrap_or_default();
        arguments.insert(key.clone(), typed_value(key, text, &types)?);
    }
    Ok(arguments)
}

/// The JSON types a property's schema allows; `None` when it says nothing this can read (any
/// value then goes).
fn allowed_types(schema: &Value, depth: usize) -> Option<Vec<&'static str>> {
    let schema = schema.as_object()?;
    let mut types = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => add(&mut types, t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .for_each(|t| add(&mut types, t)),
        _ => {}
    }
    let values = schema
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(schema.get("const"));
    for value in values {
        add(&mut types, type_of(value));
    }
    let branches: Vec<&Value> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    if !branches.is_empty() {
        if depth >= MAX_DEPTH {
            return None;
        }
        for branch in branches {
            // A branch that allows anything makes the whole allow anything.
            for t in allowed_types(branch, depth + 1)? {
                add(&mut types, t);
            }
        }
    }
    (!types.is_empty()).then_some(types)
}

/// Adds a known type name once.
fn add(types: &mut Vec<&'static str>, name: &str) {
    if let Some(known) = KNOWN_TYPES.iter().find(|k| **k == name) {
        if !types.contains(known) {
            types.push(known);
        }
    }
}

/// The schema type of a JSON value (`enum`, `const`).
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn typed_value(key: &str, text: &str, types: &[&str]) -> Result<Value, String> {
    if types.contains(&"string") {
        return Ok(Value::String(text.to_owned()));
    }
    let parsed = serde_json::from_str::<Value>(text).ok();
    if parsed.as_ref().is_some_and(|v| too_long_integer(text, v)) {
        return Err(format!(
            "the argument `{key}` is an integer beyond 64 bits (from -2^63 to 2^64-1): \
             it would lose its precision as a floating-point number"
        ));
    }
    if types.is_empty() {
        return Ok(parsed.unwrap_or_else(|| Value::String(text.to_owned())));
    }
    if let Some(value) = parsed.filter(|v| types.iter().any(|t| is_of(v, t))) {
        return Ok(value);
    }
    let expected: Vec<&str> = types.iter().map(|t| expected(t)).collect();
    Err(format!(
        "the argument `{key}` must be {}, as the tool's input schema says",
        expected.join(" or ")
    ))
}

/// Whether `text`, an integer as written (digits, perhaps a `-`), was parsed as a float: it
/// does not fit 64 bits (serde_json's `arbitrary_precision` is off).
fn too_long_integer(text: &str, parsed: &Value) -> bool {
    let text = text.trim();
    let digits = text.strip_prefix('-').unwrap_or(text);
    parsed.is_f64() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a parsed value is of a schema type. A string never is: a `string` property takes
/// the text as written (see [`typed`]).
fn is_of(value: &Value, schema_type: &str) -> bool {
    match schema_type {
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn expected(schema_type: &str) -> &'static str {
    match schema_type {
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "object" => "a JSON object",
        "array" => "a JSON array",
        "null" => "null",
        _ => "a string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn pairs(words: &[&str]) -> Vec<(String, String)> {
        match Arguments::parse(&self::words(words)) {
            Ok(Arguments::Pairs(pairs)) => pairs,
            other => panic!("not pairs: {other:?}"),
        }
    }

    #[test]
    fn one_json_object_or_key_value_words() {
        assert!(matches!(
            Arguments::parse(&words(&[r#"{"q":"a=b"}"#])),
            Ok(Arguments::Json(map)) if map["q"] == "a=b"
        ));
        assert!(matches!(Arguments::parse(&[]), Ok(Arguments::Json(map)) if map.is_empty()));
        assert_eq!(
            pairs(&["a=1", "b==2", "c="]),
            [("a", "1"), ("b", "=2"), ("c", "")].map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        for (bad, why) in [
            (&["[1]"][..], "must be a JSON object"),
            (&["5"], "must be a JSON object"),
            (&[r#"{"a":1"#], "not valid JSON"),
            (&["a=1", "oops"], "not `oops`"),
            (&["=1"], "not `=1`"),
            (&["a=1", "a=2"], "`a` is given twice"),
            (&["a=1", r#"{"b":2}"#], "KEY=VALUE"),
        ] {
            let e = Arguments::parse(&words(bad)).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn values_are_typed_by_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "opts": {"type": "object"},
            "tags": {"type": "array"},
            "maybe": {"type": ["integer", "null"]},
            "either": {"type": ["boolean", "string"]},
            "odd": {"type": "no-such-type"},
        }});
        let schema = schema.as_object();
        let typed_one = |key: &str, text: &str| {
            typed(&[(key.to_owned(), text.to_owned())], schema).map(|mut m| m.remove(key))
        };
        let cases = [
            ("name", "007", json!("007")),
            ("name", "true", json!("true")),
            ("name", r#""quoted""#, json!(r#""quoted""#)),
            ("name", "", json!("")),
            ("count", "3", json!(3)),
            ("count", "-3", json!(-3)),
            ("ratio", "2.5", json!(2.5)),
            ("ratio", "2", json!(2)),
            ("on", "false", json!(false)),
            ("opts", r#"{"a":[1]}"#, json!({"a": [1]})),
            ("tags", r#"["x",1]"#, json!(["x", 1])),
            ("maybe", "null", json!(null)),
            ("maybe", "4", json!(4)),
            // A string may be any text: `string` among the types keeps the text as it is.
            ("either", "true", json!("true")),
            ("either", "maybe", json!("maybe")),
            ("odd", "1", json!(1)),
            ("unknown", "1.5", json!(1.5)),
            ("unknown", r#"{"k":"v"}"#, json!({"k": "v"})),
            ("unknown", "plain text", json!("plain text")),
        ];
        for (key, text, want) in cases {
            assert_eq!(typed_one(key, text), Ok(Some(want)), "{key}={text}");
        }
        for (key, text, why) in [
            ("count", "3.5", "`count` must be an integer"),
            ("count", "three", "`count` must be an integer"),
            ("ratio", "NaN", "`ratio` must be a number"),
            ("on", "yes", "`on` must be true or false"),
            ("opts", "[1]", "`opts` must be a JSON object"),
            ("tags", "xyz", "`tags` must be a JSON array"),
            ("maybe", "s3cret", "`maybe` must be an integer or null"),
        ] {
            let e = typed_one(key, text).unwrap_err();
            assert!(e.contains(why), "{key}={text}: {e}");
            assert!(!e.contains(text), "the value is not shown: {e}");
        }
        // No schema at all: JSON if it parses, else a string.
        let untyped = typed(&pairs(&["a=1", "b=x"]), None).unwrap();
        assert_eq!(Value::Object(untyped), json!({"a": 1, "b": "x"}));
    }

    /// Review of issue 20, item 6: the types a property allows come from `type`, `enum`,
    /// `const`, `anyOf` and `oneOf` (pydantic's `Optional[...]`), and an integer is never
    /// rounded into a float.
    #[test]
    fn types_come_from_unions_enums_and_consts() {
        let schema = json!({"type": "object", "properties": {
            "opt_str": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
            "opt_int": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "nested": {"oneOf": [{"anyOf": [{"type": "boolean"}]}, {"type": "array"}]},
            "color": {"enum": ["red", "green"]},
            "level": {"enum": [1, 2, 3]},
            "fixed": {"const": true},
            "model": {"anyOf": [{"$ref": "#/$defs/Model"}, {"type": "null"}]},
            "id": {"type": "integer"},
            "ratio": {"type": "number"},
        }});
        let schema = schema.as_object();
        let typed_one = |key: &str, text: &str| {
            typed(&[(key.to_owned(), text.to_owned())], schema).map(|mut m| m.remove(key))
        };
        for (key, text, want) in [
            ("opt_str", "hello", json!("hello")),
            ("opt_str", "5", json!("5")),
            ("opt_str", "null", json!("null")),
            ("opt_int", "5", json!(5)),
            ("opt_int", "null", json!(null)),
            ("nested", "false", json!(false)),
            ("nested", "[1]", json!([1])),
            ("color", "1", json!("1")),
            ("level", "2", json!(2)),
            ("fixed", "true", json!(true)),
            ("model", r#"{"a":1}"#, json!({"a": 1})),
            (
                "id",
                "12345678901234567890",
                json!(12_345_678_901_234_567_890_u64),
            ),
            ("id", "-9223372036854775808", json!(i64::MIN)),
            ("ratio", "0.5", json!(0.5)),
        ] {
            assert_eq!(typed_one(key, text), Ok(Some(want)), "{key}={text}");
        }
        for (key, text, why) in [
            ("opt_int", "five", "`opt_int` must be an integer or null"),
            (
                "nested",
                "1",
                "`nested` must be true or false or a JSON array",
            ),
            ("level", "high", "`level` must be an integer"),
            (
                "id",
                "123456789012345678901",
                "`id` is an integer beyond 64 bits",
            ),
            (
                "id",
                "-9223372036854775809",
                "`id` is an integer beyond 64 bits",
            ),
            (
                "ratio",
                "123456789012345678901",
                "`ratio` is an integer beyond 64 bits",
            ),
            (
                "untyped",
                "123456789012345678901",
                "`untyped` is an integer beyond 64 bits",
            ),
        ] {
            let e = typed_one(key, text).unwrap_err();
            assert!(e.contains(why), "{key}={text}: {e}");
            assert!(!e.contains(text), "the value is not shown: {e}");
        }
        // Branches nested past any reason are left untyped.
        let mut deep = json!({"type": "integer"});
        for _ in 0..=MAX_DEPTH {
            deep = json!({"anyOf": [deep]});
        }
        assert_eq!(allowed_types(&deep, 0), None);
    }
}
