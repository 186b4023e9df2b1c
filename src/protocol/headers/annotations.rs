//! The `x-mcp-header` annotations of a tool's `inputSchema`: which arguments the tool wants
//! mirrored into `Mcp-Param-*` headers, and whether the tool is valid at all (2026-07-28,
//! `basic/transports/streamable-http.mdx` §Schema Extension, `server/tools.mdx` §x-mcp-header;
//! our digest §3.2 and the `http-invalid-tool-headers` scenario, §7.3).
//!
//! An HTTP client must leave out of its tool list every tool with an invalid annotation: an
//! empty one, one that is not an RFC 9110 token, two that are equal ignoring case, one on a
//! property whose `type` is not exactly `"string"`, `"integer"` or `"boolean"`, or one that is
//! not *statically reachable*, i.e. not on a chain of `properties` keys from the root.
//!
//! Reachability is checked by walking the whole schema, not only the keywords we know, and
//! failing closed: an annotation under `items`, `prefixItems`, `oneOf`/`anyOf`/`allOf`/`not`,
//! `if`/`then`/`else`, `$defs`/`definitions` (where `$ref` targets live), `additionalProperties`,
//! `patternProperties` or any keyword we do not know makes the tool invalid. `$ref` is never
//! followed: an in-document target is found where it sits, and a remote one is not ours to
//! fetch. Only instance data is not walked (`const`, `enum`, `default`, `examples`): an object
//! there with an `x-mcp-header` key is a value, not an annotation. The walk uses an explicit
//! stack, so a deeply nested schema cannot overflow ours, and it visits each node once.
//!
//! The text in an [`InvalidHeaderAnnotation`] comes from the server, so it is escaped and
//! bounded ([`server_text`]) when the error is made.

use std::collections::HashMap;
use std::rc::Rc;

use rmcp::model::Tool;
use serde_json::{Map, Value};

use super::MCP_PARAM_PREFIX;
use crate::protocol::as_sent::ListedTool;
use crate::protocol::text::server_text;

/// The schema keyword of the annotation.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// Keywords whose value is instance data, never a schema: not walked.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];
/// Keywords whose value maps names to schemas (the map itself is not a schema).
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
];

/// The JSON Schema type of an annotated property: the only three a header can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `"type": "string"`: the string, encoded by [`header_value`](super::header_value).
    String,
    /// `"type": "integer"`: its decimal form, within ±(2^53−1).
    Integer,
    /// `"type": "boolean"`: `true` or `false`.
    Boolean,
}

impl Primitive {
    /// The JSON Schema type name.
    pub fn as_str(self) -> &'static str {
        match self {
            Primitive::String => "string",
            Primitive::Integer => "integer",
            Primitive::Boolean => "boolean",
        }
    }

    fn of_type(ty: &Value) -> Option<Self> {
        match ty.as_str()? {
            "string" => Some(Primitive::String),
            "integer" => Some(Primitive::Integer),
            "boolean" => Some(Primitive::Boolean),
            _ => None,
        }
    }
}

impl std::fmt::Display for Primitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One valid annotation: which argument goes into which header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamBinding {
    /// The declared name, its case kept (`Region` gives `Mcp-Param-Region`). An RFC 9110 token.
    pub header: String,
    /// The property keys from the schema's root to the annotated property, which is also the
    /// argument's path from the root of `arguments`: `["a", "b"]` for
    /// `properties.a.properties.b`.
    pub path: Vec<String>,
    /// The property's declared type.
    pub kind: Primitive,
}

impl ParamBinding {
    /// The full header name, `Mcp-Param-{header}`.
    pub fn header_name(&self) -> String {
        format!("{MCP_PARAM_PREFIX}{}", self.header)
    }
}

/// Why a tool's annotations are invalid, for the tool to be dropped with a warning. `at` is
/// where in the `inputSchema` the offending annotation sits, as a JSON Pointer fragment
/// (`#/properties/region`; `#` is the root); every text field is escaped and bounded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHeaderAnnotation {
    /// The annotation's value is not a JSON string.
    #[error("its x-mcp-header at {at} is {found}, not a string")]
    NotAString {
        /// Where the annotation sits.
        at: String,
        /// The value it has instead, as JSON.
        found: String,
    },
    /// The annotation is the empty string.
    #[error("its x-mcp-header at {at} is empty")]
    Empty {
        /// Where the annotation sits.
        at: String,
    },
    /// The annotation is not an RFC 9110 token (`1*tchar`): it has a space, a `:`, a
    /// non-ASCII or a control character, or another delimiter.
    #[error(
        "its x-mcp-header \"{name}\" at {at} is not an HTTP token (RFC 9110: letters, digits \
         and !#$%&'*+-.^_`|~ only)"
    )]
    NotAToken {
        /// Where the annotation sits.
        at: String,
        /// The annotation.
        name: String,
    },
    /// Two annotations of one schema name the same header, ignoring case.
    #[error(
        "its x-mcp-header \"{name}\" at {at} names the same header as \"{first_name}\" at \
         {first_at} (header names ignore case)"
    )]
    Duplicate {
        /// Where the second annotation sits.
        at: String,
        /// The second annotation.
        name: String,
        /// Where the first one sits.
        first_at: String,
        /// The first one.
        first_name: String,
    },
    /// The annotated property's `type` is not exactly `"string"`, `"integer"` or `"boolean"`
    /// (`number`, `object`, `array`, `null`, a list of types, or no type at all).
    #[error(
        "its x-mcp-header \"{name}\" at {at} is on a property of type {found}; only \"string\", \
         \"integer\" and \"boolean\" can be mirrored into a header"
    )]
    NotPrimitive {
        /// Where the annotation sits.
        at: String,
        /// The annotation.
        name: String,
        /// The property's `type` as JSON, or `(none)`.
        found: String,
    },
    /// The annotation is not on a chain of `properties` keys from the root: it is under
    /// `items`, a composition or conditional keyword, `$defs`, `additionalProperties`, ..., or
    /// on the root itself.
    #[error(
        "its x-mcp-header at {at} is not statically reachable: only a chain of `properties` \
         keys from the root may lead to it"
    )]
    Unreachable {
        /// Where the annotation sits.
        at: String,
    },
}

/// The bindings of a tool's `inputSchema`, in the order of the schema's keys, or the first
/// reason the tool is invalid. A schema that is not an object (`true`) has none.
pub fn param_bindings(input_schema: &Value) -> Result<Vec<ParamBinding>, InvalidHeaderAnnotation> {
    match input_schema {
        Value::Object(schema) => bindings_in(schema),
        _ => Ok(Vec::new()),
    }
}

/// [`param_bindings`] of a tool as rmcp holds it.
pub fn tool_bindings(tool: &Tool) -> Result<Vec<ParamBinding>, InvalidHeaderAnnotation> {
    bindings_in(&tool.input_schema)
}

/// Splits a tool list into the tools whose annotations are valid, in their order, and the
/// names of the others with the reason. The names are the server's text, raw: escape them
/// ([`server_text`]) or use [`dropped_tool_message`] to log them. For HTTP only: over stdio the
/// annotations may be ignored.
pub fn validate_tools(
    tools: Vec<ListedTool>,
) -> (Vec<ListedTool>, Vec<(String, InvalidHeaderAnnotation)>) {
    let mut kept = Vec::with_capacity(tools.len());
    let mut dropped = Vec::new();
    for tool in tools {
        match tool_bindings(&tool) {
            Ok(_) => kept.push(tool),
            Err(why) => dropped.push((tool.name.to_string(), why)),
        }
    }
    (kept, dropped)
}

/// The text of the WARN for a tool [`validate_tools`] dropped, its name escaped:
/// `tool "x" is left out of the tool list: its x-mcp-header ...`.
pub fn dropped_tool_message(tool: &str, why: &InvalidHeaderAnnotation) -> String {
    format!(
        "tool \"{}\" is left out of the tool list: {why}",
        server_text(tool)
    )
}

/// One step of the way from the root to a node: a keyword, a property name or an index.
struct Step<'a> {
    key: StepKey<'a>,
    parent: Option<Rc<Step<'a>>>,
}

/// A chain as deep as the schema is dropped link by link, not recursively.
impl Drop for Step<'_> {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(step) = next {
            next = match Rc::try_unwrap(step) {
                Ok(mut step) => step.parent.take(),
                Err(_) => None,
            };
        }
    }
}

enum StepKey<'a> {
    Key(&'a str),
    Index(usize),
}

/// A node still to visit: where it is, and whether only `properties` keys led to it.
struct Visit<'a> {
    node: &'a Value,
    at: Option<Rc<Step<'a>>>,
    reachable: bool,
}

fn step<'a>(at: &Option<Rc<Step<'a>>>, key: StepKey<'a>) -> Option<Rc<Step<'a>>> {
    Some(Rc::new(Step {
        key,
        parent: at.clone(),
    }))
}

/// The steps from the root to `at`, root first. Only made for an annotation found.
fn segments(at: &Option<Rc<Step<'_>>>) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = at.as_deref();
    while let Some(s) = cur {
        out.push(match s.key {
            StepKey::Key(key) => key.to_owned(),
            StepKey::Index(i) => i.to_string(),
        });
        cur = s.parent.as_deref();
    }
    out.reverse();
    out
}

/// `segments` as a JSON Pointer fragment (RFC 6901: `~` is `~0`, `/` is `~1`), escaped and
/// bounded for showing.
fn pointer(segments: &[String]) -> String {
    let mut out = String::from("#");
    for s in segments {
        out.push('/');
        out.push_str(&s.replace('~', "~0").replace('/', "~1"));
    }
    server_text(&out)
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The first annotation seen for each lowercased header name: its pointer and its name.
type Seen = HashMap<String, (String, String)>;

fn bindings_in(schema: &Map<String, Value>) -> Result<Vec<ParamBinding>, InvalidHeaderAnnotation> {
    let mut bindings = Vec::new();
    let mut seen = Seen::new();
    // The root is where the `properties` chain starts, but it is no property: an annotation
    // on it is unreachable (`binding` sees an empty `at`).
    if let Some(annotation) = schema.get(X_MCP_HEADER) {
        bindings.push(binding(schema, annotation, &None, true, &mut seen)?);
    }
    let mut children: Vec<Visit<'_>> = Vec::new();
    visit_schema(schema, &None, true, &mut children);
    let mut stack: Vec<Visit<'_>> = children.drain(..).rev().collect();
    while let Some(Visit {
        node,
        at,
        reachable,
    }) = stack.pop()
    {
        match node {
            Value::Object(schema) => {
                if let Some(annotation) = schema.get(X_MCP_HEADER) {
                    bindings.push(binding(schema, annotation, &at, reachable, &mut seen)?);
                }
                visit_schema(schema, &at, reachable, &mut children);
            }
            // A list of schemas (`allOf`, `prefixItems`, ...) or a malformed value: its
            // elements are looked at as schemas, off the `properties` chain.
            Value::Array(items) => {
                children.extend(items.iter().enumerate().map(|(i, node)| Visit {
                    node,
                    at: step(&at, StepKey::Index(i)),
                    reachable: false,
                }))
            }
            _ => {}
        }
        // Reversed onto the stack, so that nodes are visited in the order of their keys.
        stack.extend(children.drain(..).rev());
    }
    Ok(bindings)
}

/// Pushes onto `out` what is below the schema `schema` at `at`: the schemas of `properties`
/// (reachable if `schema` is), and every other keyword's value, unreachable, but for instance
/// data and the annotation itself.
fn visit_schema<'a>(
    schema: &'a Map<String, Value>,
    at: &Option<Rc<Step<'a>>>,
    reachable: bool,
    out: &mut Vec<Visit<'a>>,
) {
    for (key, value) in schema {
        let key = key.as_str();
        if key == X_MCP_HEADER || DATA_KEYWORDS.contains(&key) {
            continue;
        }
        match value {
            Value::Object(map) if key == "properties" || SCHEMA_MAP_KEYWORDS.contains(&key) => {
                let here = step(at, StepKey::Key(key));
                let properties = key == "properties";
                out.extend(map.iter().map(|(name, node)| Visit {
                    node,
                    at: step(&here, StepKey::Key(name)),
                    reachable: reachable && properties,
                }));
            }
            Value::Object(_) | Value::Array(_) => out.push(Visit {
                node: value,
                at: step(at, StepKey::Key(key)),
                reachable: false,
            }),
            _ => {}
        }
    }
}

/// Checks the annotation `annotation` of the schema `schema` at `at`.
fn binding(
    schema: &Map<String, Value>,
    annotation: &Value,
    at: &Option<Rc<Step<'_>>>,
    reachable: bool,
    seen: &mut Seen,
) -> Result<ParamBinding, InvalidHeaderAnnotation> {
    let segments = segments(at);
    let here = || pointer(&segments);
    if !reachable || segments.is_empty() {
        return Err(InvalidHeaderAnnotation::Unreachable { at: here() });
    }
    let Value::String(name) = annotation else {
        return Err(InvalidHeaderAnnotation::NotAString {
            at: here(),
            found: server_text(&annotation.to_string()),
        });
    };
    if name.is_empty() {
        return Err(InvalidHeaderAnnotation::Empty { at: here() });
    }
    if !name.bytes().all(is_tchar) {
        return Err(InvalidHeaderAnnotation::NotAToken {
            at: here(),
            name: server_text(name),
        });
    }
    let Some(kind) = schema.get("type").and_then(Primitive::of_type) else {
        let found = schema
            .get("type")
            .map_or_else(|| "(none)".to_owned(), |ty| server_text(&ty.to_string()));
        return Err(InvalidHeaderAnnotation::NotPrimitive {
            at: here(),
            name: server_text(name),
            found,
        });
    };
    // A token is ASCII, so ASCII lowercase is the whole of "ignoring case".
    if let Some((first_at, first_name)) = seen.get(&name.to_ascii_lowercase()) {
        return Err(InvalidHeaderAnnotation::Duplicate {
            at: here(),
            name: server_text(name),
            first_at: first_at.clone(),
            first_name: first_name.clone(),
        });
    }
    seen.insert(name.to_ascii_lowercase(), (here(), server_text(name)));
    // Reachable means the steps are `properties`, key, `properties`, key, ...
    let path = segments
        .chunks(2)
        .filter_map(|c| c.get(1).cloned())
        .collect();
    Ok(ParamBinding {
        header: name.clone(),
        path,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    /// A tool whose only argument is `region` with this property schema.
    fn one_property(property: Value) -> Value {
        json!({"type": "object", "properties": {"region": property}})
    }

    fn tool(name: &str, input_schema: Value) -> ListedTool {
        let Value::Object(schema) = input_schema else {
            panic!("test schemas are objects");
        };
        ListedTool::from_typed(Tool::new(name.to_owned(), "", Arc::new(schema))).unwrap()
    }

    fn binding(header: &str, path: &[&str], kind: Primitive) -> ParamBinding {
        ParamBinding {
            header: header.to_owned(),
            path: path.iter().map(|s| s.to_string()).collect(),
            kind,
        }
    }

    #[test]
    fn valid_annotations_give_their_bindings_in_key_order() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "method": {"type": "string", "x-mcp-header": "Method"},
                "float_val": {"type": "number"},
                "query": {"type": "string"},
                "odd": {"type": "string", "x-mcp-header": "A!#$%&'*+-.^_`|~9"},
            },
        });
        assert_eq!(
            param_bindings(&schema),
            Ok(vec![
                binding("Method", &["method"], Primitive::String),
                binding("A!#$%&'*+-.^_`|~9", &["odd"], Primitive::String),
                binding("Priority", &["priority"], Primitive::Integer),
                binding("Region", &["region"], Primitive::String),
                binding("Verbose", &["verbose"], Primitive::Boolean),
            ])
        );
        assert_eq!(
            binding("Method", &[], Primitive::String).header_name(),
            "Mcp-Param-Method"
        );
    }

    #[test]
    fn nested_objects_on_a_properties_chain_are_reachable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {
                        "location": {
                            "type": "object",
                            "properties": {
                                "region": {"type": "string", "x-mcp-header": "Region"},
                            },
                        },
                        "id": {"type": "integer", "x-mcp-header": "Target-Id"},
                    },
                },
                // A property may be called like a keyword: its key is a name, not a keyword.
                "items": {"type": "boolean", "x-mcp-header": "Items"},
                "properties": {
                    "type": "object",
                    "properties": {"x-mcp-header": {"type": "string", "x-mcp-header": "X"}},
                },
            },
        });
        assert_eq!(
            param_bindings(&schema),
            Ok(vec![
                binding("Items", &["items"], Primitive::Boolean),
                binding("X", &["properties", "x-mcp-header"], Primitive::String),
                binding("Target-Id", &["target", "id"], Primitive::Integer),
                binding(
                    "Region",
                    &["target", "location", "region"],
                    Primitive::String
                ),
            ])
        );
    }

    #[test]
    fn schemas_without_annotations_have_no_bindings() {
        for schema in [
            json!(true),
            json!({}),
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"a": {"type": "number"}}}),
            // Instance data is not walked: these are values, not annotations.
            json!({"type": "object", "properties": {"a": {
                "type": "object",
                "default": {"x-mcp-header": "A"},
                "examples": [{"x-mcp-header": "A"}],
                "const": {"x-mcp-header": "A"},
                "enum": [{"x-mcp-header": "A"}],
            }}}),
        ] {
            assert_eq!(param_bindings(&schema), Ok(vec![]), "{schema}");
        }
    }

    /// The 11 invalid tools of the conformance scenario `http-invalid-tool-headers` (alpha.12),
    /// and the reason each must be dropped for.
    fn conformance_invalid_tools() -> Vec<(&'static str, Value, InvalidHeaderAnnotation)> {
        let at = || "#/properties/region".to_owned();
        let not_primitive = |found: &str| InvalidHeaderAnnotation::NotPrimitive {
            at: at(),
            name: "Region".into(),
            found: found.into(),
        };
        let not_token = |name: &str| InvalidHeaderAnnotation::NotAToken {
            at: at(),
            name: name.into(),
        };
        let two = |first: &str, second: &str| {
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": first},
                "b": {"type": "string", "x-mcp-header": second},
            }})
        };
        let duplicate = |first: &str, second: &str| InvalidHeaderAnnotation::Duplicate {
            at: "#/properties/b".into(),
            name: second.into(),
            first_at: "#/properties/a".into(),
            first_name: first.into(),
        };
        let string = |name: &str| one_property(json!({"type": "string", "x-mcp-header": name}));
        vec![
            (
                "invalid_empty_header",
                string(""),
                InvalidHeaderAnnotation::Empty { at: at() },
            ),
            (
                "invalid_object_header",
                one_property(json!({"type": "object", "x-mcp-header": "Region"})),
                not_primitive("\"object\""),
            ),
            (
                "invalid_array_header",
                one_property(
                    json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Region"}),
                ),
                not_primitive("\"array\""),
            ),
            (
                "invalid_null_header",
                one_property(json!({"type": "null", "x-mcp-header": "Region"})),
                not_primitive("\"null\""),
            ),
            (
                "invalid_number_header",
                one_property(json!({"type": "number", "x-mcp-header": "Region"})),
                not_primitive("\"number\""),
            ),
            (
                "invalid_duplicate_same_case",
                two("Region", "Region"),
                duplicate("Region", "Region"),
            ),
            (
                "invalid_duplicate_diff_case",
                two("MyField", "myfield"),
                duplicate("MyField", "myfield"),
            ),
            (
                "invalid_space_in_name",
                string("My Region"),
                not_token("My Region"),
            ),
            (
                "invalid_colon_in_name",
                string("Region:Primary"),
                not_token("Region:Primary"),
            ),
            (
                "invalid_non_ascii_name",
                string("Région"),
                not_token("Région"),
            ),
            // Escaped where the error is made: a tab never reaches a log line.
            (
                "invalid_control_char_name",
                string("Region\t1"),
                not_token("Region\\t1"),
            ),
        ]
    }

    #[test]
    fn every_conformance_invalid_tool_is_rejected_for_its_reason() {
        for (name, schema, why) in conformance_invalid_tools() {
            assert_eq!(param_bindings(&schema), Err(why), "{name}");
        }
    }

    #[test]
    fn validate_tools_keeps_the_valid_ones_in_order_and_names_the_others() {
        let valid = |name: &str| {
            tool(
                name,
                one_property(json!({"type": "string", "x-mcp-header": "Region"})),
            )
        };
        let mut tools = vec![valid("valid_tool")];
        let mut expected_dropped = Vec::new();
        for (name, schema, why) in conformance_invalid_tools() {
            tools.push(tool(name, schema));
            expected_dropped.push((name.to_owned(), why));
        }
        tools.push(tool("plain", json!({"type": "object"})));
        tools.insert(3, valid("also_valid"));
        let (kept, dropped) = validate_tools(tools);
        let kept: Vec<_> = kept.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(kept, ["valid_tool", "also_valid", "plain"]);
        assert_eq!(dropped, expected_dropped);
    }

    #[test]
    fn other_types_than_exactly_the_three_primitives_are_rejected() {
        for (ty, found) in [
            (json!(["string", "null"]), "[\"string\",\"null\"]"),
            (json!(["string"]), "[\"string\"]"),
            (json!("String"), "\"String\""),
            (json!(7), "7"),
        ] {
            let schema = one_property(json!({"type": ty, "x-mcp-header": "Region"}));
            assert_eq!(
                param_bindings(&schema),
                Err(InvalidHeaderAnnotation::NotPrimitive {
                    at: "#/properties/region".into(),
                    name: "Region".into(),
                    found: found.into(),
                })
            );
        }
        let untyped = one_property(json!({"x-mcp-header": "Region"}));
        assert_eq!(
            param_bindings(&untyped),
            Err(InvalidHeaderAnnotation::NotPrimitive {
                at: "#/properties/region".into(),
                name: "Region".into(),
                found: "(none)".into(),
            })
        );
    }

    #[test]
    fn an_annotation_that_is_not_a_string_is_rejected() {
        for value in [json!(42), json!(null), json!(true), json!(["Region"])] {
            let schema = one_property(json!({"type": "string", "x-mcp-header": value}));
            assert_eq!(
                param_bindings(&schema),
                Err(InvalidHeaderAnnotation::NotAString {
                    at: "#/properties/region".into(),
                    found: value.to_string(),
                })
            );
        }
    }

    #[test]
    fn an_annotation_off_a_properties_chain_is_unreachable() {
        let a = json!({"type": "string", "x-mcp-header": "A"});
        let cases = [
            (json!({"type": "object", "x-mcp-header": "Root"}), "#"),
            (json!({"items": a}), "#/items"),
            (
                json!({"properties": {"list": {"type": "array", "items": a}}}),
                "#/properties/list/items",
            ),
            (json!({"prefixItems": [{}, a]}), "#/prefixItems/1"),
            (json!({"items": [a]}), "#/items/0"),
            (json!({"contains": a}), "#/contains"),
            (json!({"oneOf": [a]}), "#/oneOf/0"),
            (json!({"anyOf": [{}, a]}), "#/anyOf/1"),
            (json!({"allOf": [{"anyOf": [a]}]}), "#/allOf/0/anyOf/0"),
            (json!({"not": a}), "#/not"),
            (json!({"if": a}), "#/if"),
            (json!({"then": a}), "#/then"),
            (json!({"else": a}), "#/else"),
            (
                json!({"properties": {"r": {"$ref": "#/$defs/r"}}, "$defs": {"r": a}}),
                "#/$defs/r",
            ),
            (json!({"definitions": {"r": a}}), "#/definitions/r"),
            (json!({"additionalProperties": a}), "#/additionalProperties"),
            (
                json!({"unevaluatedProperties": a}),
                "#/unevaluatedProperties",
            ),
            (
                json!({"patternProperties": {"^r": a}}),
                "#/patternProperties/^r",
            ),
            (
                json!({"dependentSchemas": {"r": a}}),
                "#/dependentSchemas/r",
            ),
            (json!({"propertyNames": a}), "#/propertyNames"),
            // A `properties` chain below an unreachable node stays unreachable.
            (
                json!({"allOf": [{"properties": {"x": {"properties": {"y": a}}}}]}),
                "#/allOf/0/properties/x/properties/y",
            ),
            (
                json!({"$defs": {"o": {"properties": {"a": a}}}}),
                "#/$defs/o/properties/a",
            ),
            // Keywords nobody knows are walked too: fail closed.
            (json!({"x-vendor": {"deep": [a]}}), "#/x-vendor/deep/0"),
            (
                json!({"properties": {"a/b~c": {"not": a}}}),
                "#/properties/a~1b~0c/not",
            ),
        ];
        for (schema, at) in cases {
            assert_eq!(
                param_bindings(&schema),
                Err(InvalidHeaderAnnotation::Unreachable { at: at.into() }),
                "{schema}"
            );
        }
    }

    #[test]
    fn one_bad_annotation_beside_good_ones_makes_the_tool_invalid() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "A"},
                "b": {"type": "array", "items": {"type": "string", "x-mcp-header": "B"}},
            },
        });
        assert_eq!(
            param_bindings(&schema),
            Err(InvalidHeaderAnnotation::Unreachable {
                at: "#/properties/b/items".into()
            })
        );
    }

    #[test]
    fn a_deep_schema_is_walked_without_recursion() {
        let mut schema = json!({"type": "string", "x-mcp-header": "Deep"});
        for _ in 0..20_000 {
            // Not `json!`: it would copy `schema` through `to_value`, recursively.
            let mut properties = Map::new();
            properties.insert("n".to_owned(), schema);
            let mut object = Map::new();
            object.insert("type".to_owned(), json!("object"));
            object.insert("properties".to_owned(), Value::Object(properties));
            schema = Value::Object(object);
        }
        let bindings = param_bindings(&schema).map(|b| (b[0].header.clone(), b[0].path.len()));
        assert_eq!(bindings, Ok(("Deep".to_owned(), 20_000)));
        // Dropping a Value this deep recurses in serde_json; leak it instead of overflowing.
        std::mem::forget(schema);
    }

    #[test]
    fn the_warning_names_the_tool_and_the_reason_with_server_text_escaped() {
        let why = InvalidHeaderAnnotation::NotPrimitive {
            at: "#/properties/region".into(),
            name: "Region".into(),
            found: "\"number\"".into(),
        };
        assert_eq!(
            dropped_tool_message("bad\ntool", &why),
            "tool \"bad\\ntool\" is left out of the tool list: its x-mcp-header \"Region\" at \
             #/properties/region is on a property of type \"number\"; only \"string\", \
             \"integer\" and \"boolean\" can be mirrored into a header"
        );
        // A 100 kB name is kept bounded in the error.
        let long = format!("{} ", "x".repeat(100_000));
        let schema = one_property(json!({"type": "string", "x-mcp-header": long}));
        let Err(why @ InvalidHeaderAnnotation::NotAToken { .. }) = param_bindings(&schema) else {
            panic!("a name with a space is no token");
        };
        assert!(why.to_string().len() < 1000, "{}", why.to_string().len());
    }
}
