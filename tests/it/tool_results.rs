//! Our one-pass parser of a tool call's result (`protocol::tool_result`) against rmcp's own
//! `Deserialize`: on any result, in any member order, with blocks of every kind and broken
//! ones, both give the same `CallToolResult`, or both refuse it.

use mcp_supervisor::model::CallToolResult;
use mcp_supervisor::protocol::tool_result::ToolResult;
use proptest::prelude::*;

/// A JSON object's text with its members in the given order (a `Map` would sort them).
fn object(members: Vec<(&'static str, String)>) -> String {
    let body: Vec<String> = members
        .into_iter()
        .map(|(key, value)| format!("\"{key}\":{value}"))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn maybe(
    member: (&'static str, &'static str),
) -> impl Strategy<Value = Option<(&'static str, String)>> {
    proptest::option::of(Just((member.0, member.1.to_owned())))
}

fn text_block() -> impl Strategy<Value = String> {
    (
        proptest::option::of(prop_oneof![
            Just("\"text\""),
            Just("\"image\""),
            Just("5"),
            Just("\"nonsense\"")
        ]),
        proptest::option::of(prop_oneof![
            Just("\"hello\""),
            Just("\"esc\\\"aped \\u00e9\\n\""),
            Just("7")
        ]),
        maybe(("annotations", r#"{"audience":["user"],"priority":0.5}"#)),
        maybe(("_meta", r#"{"k":[1,2]}"#)),
        maybe(("extra", "null")),
        maybe(("annotations", r#"{"priority":"high"}"#)),
        // A member twice: both parses refuse it.
        maybe(("type", "\"text\"")),
        maybe(("text", "\"again\"")),
    )
        .prop_flat_map(|(kind, text, a, m, x, bad, type_again, text_again)| {
            let mut members = Vec::new();
            members.extend(kind.map(|k| ("type", k.to_owned())));
            members.extend(text.map(|t| ("text", t.to_owned())));
            members.extend(a);
            members.extend(m);
            members.extend(x);
            members.extend(bad);
            members.extend(type_again);
            members.extend(text_again);
            Just(members).prop_shuffle()
        })
        .prop_map(object)
}

fn other_block() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#"{"type":"image","data":"aGk=","mimeType":"image/png"}"#.to_owned()),
        Just(r#"{"mimeType":"audio/wav","type":"audio","data":"aGk="}"#.to_owned()),
        Just(r#"{"type":"resource_link","uri":"file:///a","name":"a"}"#.to_owned()),
        Just(r#"{"type":"resource","resource":{"uri":"u","text":"t"}}"#.to_owned()),
        Just(r#"{"resource":{"uri":"u","blob":"aGk="},"type":"resource"}"#.to_owned()),
        Just(r#"{"type":"image"}"#.to_owned()),
        Just(r#"{"type":"image","data":"aGk=","mimeType":"image/png","data":"aGk="}"#.to_owned()),
        Just(r#"{"type":"image","data":"aGk=","mimeType":"image/png","type":"text"}"#.to_owned()),
        // A tagged enum also takes a sequence: the tag, then the members in order.
        Just(r#"["text","hi",null,null]"#.to_owned()),
        Just(r#"["text","hi"]"#.to_owned()),
        Just(r#"["image","aGk=","image/png",null,null]"#.to_owned()),
        Just("{}".to_owned()),
        Just("[]".to_owned()),
        Just("\"text\"".to_owned()),
        Just("7".to_owned()),
    ]
}

fn result() -> impl Strategy<Value = String> {
    (
        proptest::option::of(proptest::collection::vec(
            prop_oneof![3 => text_block(), 1 => other_block()],
            0..4,
        )),
        proptest::option::of(prop_oneof![Just("null"), Just(r#"{"a":1}"#), Just("[1]")]),
        proptest::option::of(prop_oneof![Just("true"), Just("false"), Just("\"yes\"")]),
        proptest::option::of(prop_oneof![
            Just("\"complete\""),
            Just("\"input_required\"")
        ]),
        maybe(("_meta", r#"{"trace":"x"}"#)),
        maybe(("unknown", "{}")),
    )
        .prop_flat_map(|(content, structured, error, kind, meta, unknown)| {
            let mut members = Vec::new();
            members.extend(content.map(|blocks| ("content", format!("[{}]", blocks.join(",")))));
            members.extend(structured.map(|s| ("structuredContent", s.to_owned())));
            members.extend(error.map(|e| ("isError", e.to_owned())));
            members.extend(kind.map(|k| ("resultType", k.to_owned())));
            members.extend(meta);
            members.extend(unknown);
            Just(members).prop_shuffle()
        })
        .prop_map(object)
}

fn same_outcome(text: &str) {
    let ours = serde_json::from_str::<ToolResult>(text).map(|r| r.0);
    let rmcp = serde_json::from_str::<CallToolResult>(text);
    match (ours, rmcp) {
        (Ok(ours), Ok(rmcp)) => assert_eq!(ours, rmcp, "{text}"),
        (Err(_), Err(_)) => {}
        (ours, rmcp) => panic!("{text}: ours {ours:?}, rmcp {rmcp:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn our_parse_of_a_tool_result_is_rmcps(text in result()) {
        same_outcome(&text);
    }
}

#[test]
fn the_usual_results_parse_the_same() {
    for text in [
        r#"{"content":[{"type":"text","text":"hi"}]}"#,
        r#"{"content":[{"text":"hi","type":"text"}],"isError":false}"#,
        r#"{"content":[],"structuredContent":null}"#,
        r#"{"isError":true}"#,
        r#"{}"#,
        r#"{"_meta":{}}"#,
        r#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#,
        r#"{"resultType":"input_required","content":[]}"#,
        r#"{"content":[{"type":"text"}]}"#,
        r#"{"content":[{"type":"text","text":"a","type":"text"}]}"#,
        r#"{"content":[{"type":"text","text":"a","annotations":{"audience":["user"],"priority":0.5}}]}"#,
        r#"{"content":[["text","hi",null,null]]}"#,
        r#"{"content":[{"text":"a","text":"b","type":"text"}]}"#,
        r#"{"content":[{"type":"image","data":"a","mimeType":"image/png","data":"b"}]}"#,
    ] {
        same_outcome(text);
    }
}
