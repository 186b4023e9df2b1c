//! A response's result, kept as it came and parsed once, by whoever knows what it should be
//! (straight into a typed call's output, say): [`RawResult`].
//!
//! Most response lines have one of two shapes, `{"jsonrpc":"2.0","id":N,"result":…}` (serde
//! and pydantic servers) and `{"result":…,"jsonrpc":"2.0","id":N}` (the TypeScript SDK). Such a
//! line is recognized by those fixed parts alone ([`plain_response`]): its result is not walked
//! to find where it ends, and the one parse of the whole line, into the caller's type, also
//! checks that it is the JSON-RPC response it looked like, with that very id. Every other frame
//! is parsed member by member ([`parse_frame`]).
//!
//! A line that only looked like a response (not JSON, or with a `method` or `error` member too)
//! must end up where the full parse would have sent it: skipped and counted, or routed as the
//! request or error it is, never as an answer to a call. So whoever finds that a line's result
//! does not parse, and whoever takes one without parsing it, asks [`RawResult::unless_plain`]:
//! it gives the full parse of a line that is not the plain response it looked like.
//!
//! One rule holds however a result is read: one nested deeper than [`MAX_RESULT_DEPTH`] is
//! refused. A raw `Value` cannot be built deeper (serde_json's recursion limit protects the
//! stack that building and dropping it would use), and a typed parse would skip an unknown
//! member of any depth; so [`RawResult::parse`] looks at the depth first, and a result is
//! either read the same by every caller or refused by all.

use bytes::Bytes;
use serde::de::{DeserializeOwned, Error as _, IgnoredAny};

use super::jsonrpc::{parse_frame, FrameError, Id, Inbound};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// How deep a result may nest (arrays and objects): what serde_json can read into a `Value`
/// from a response line, its limit of 127 levels less the line's own envelope.
pub const MAX_RESULT_DEPTH: usize = 126;

/// The result of a successful response, as its JSON text.
#[derive(Debug, Clone)]
pub struct RawResult(Text);

#[derive(Debug, Clone)]
enum Text {
    /// A whole line of a plain shape; the result is its `result` member.
    Line { line: Bytes, id: i64 },
    /// The result's own text.
    Result(Box<RawValue>),
}

impl RawResult {
    /// The result whose text is `text`.
    pub fn of_text(text: Box<RawValue>) -> Self {
        RawResult(Text::Result(text))
    }

    /// Parses the result into `T`. For a line recognized by its shape, this is where it is
    /// found not to be one (not JSON, another id, an error or a method member too).
    /// A result nested deeper than [`MAX_RESULT_DEPTH`] is refused, whatever `T` is.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match &self.0 {
            Text::Result(text) => {
                too_deep(text.get().as_bytes(), MAX_RESULT_DEPTH)?;
                serde_json::from_str(text.get())
            }
            Text::Line { line, id } => {
                // The envelope is one level more.
                too_deep(line, MAX_RESULT_DEPTH + 1)?;
                let whole: Whole<T> = serde_json::from_slice(line)?;
                if whole.id != Some(*id) || whole.error.is_some() || whole.method.is_some() {
                    return Err(serde_json::Error::custom(
                        "not the plain response its first and last bytes made it look like",
                    ));
                }
                Ok(whole.result)
            }
        }
    }

    /// Whether this is a line taken for a plain response by its fixed parts alone, not
    /// confirmed yet (see [`RawResult::unless_plain`]).
    pub fn is_line(&self) -> bool {
        matches!(self.0, Text::Line { .. })
    }

    /// The result as a `Value`.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.parse()
    }

    /// `None` if this is certainly the result of a response: always, unless it is a line taken
    /// for a plain response by its fixed parts alone, which the full parse finds is not one;
    /// then that parse, to route the line as what it is. Costs a full parse of such a line.
    pub fn unless_plain(&self) -> Option<Reparsed> {
        let Text::Line { line, id } = &self.0 else {
            return None;
        };
        let parsed = parse_frame(line);
        if let Ok(
            [Inbound::Response {
                id: Id::Number(got),
                ..
            }],
        ) = parsed.as_deref()
        {
            if got == id {
                return None;
            }
        }
        Some(Reparsed {
            line: line.clone(),
            parsed,
        })
    }
}

/// A line that looked like a plain response and is not one, as the full parse makes it out.
#[derive(Debug)]
pub struct Reparsed {
    /// The line.
    pub line: Bytes,
    /// Its messages, or why it is none (the line is to be skipped and counted).
    pub parsed: Result<Vec<Inbound>, FrameError>,
}

/// Refuses JSON text whose arrays and objects nest deeper than `limit`. Cheap for the usual
/// result: text shorter than twice `limit`, or with no more than `limit` opening brackets,
/// cannot nest deeper (as valid JSON), which its length or one pass
/// over its bytes tells (a branch-free count the compiler vectorises: a search that stops at
/// each bracket costs more for the few a result has); other text is walked once, its strings
/// skipped whole.
fn too_deep(json: &[u8], limit: usize) -> Result<(), serde_json::Error> {
    // JSON nested deeper than `limit` holds more than `limit` opening brackets and as many
    // closing ones; shorter text is not that deep, or not JSON, which its parse then refuses
    // anyway. Most results are short.
    if json.len() <= 2 * limit + 1 {
        return Ok(());
    }
    // Counted in chunks small enough for a byte-wide sum, which the compiler keeps in vector
    // registers.
    let opening: usize = json
        .chunks(255)
        .map(|chunk| {
            let count: u8 = chunk
                .iter()
                .map(|&b| u8::from((b == b'[') | (b == b'{')))
                .fold(0, u8::wrapping_add);
            usize::from(count)
        })
        .sum();
    if opening <= limit || nesting(json) <= limit {
        return Ok(());
    }
    Err(serde_json::Error::custom(format_args!(
        "the result is nested more than {} levels deep",
        limit
    )))
}

/// The deepest nesting of arrays and objects in JSON text (brackets inside strings do not
/// count; text that is not JSON gets some number, and fails its parse anyway).
fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    while let Some(offset) = memchr::memchr3(b'"', b'[', b'{', &json[at..]).map(|o| at + o) {
        // Closing brackets up to here.
        for &b in &json[at..offset] {
            if b == b']' || b == b'}' {
                depth = depth.saturating_sub(1);
            }
        }
        if json[offset] == b'"' {
            at = string_end(json, offset + 1);
        } else {
            depth += 1;
            deepest = deepest.max(depth);
            at = offset + 1;
        }
    }
    deepest
}

/// The position after the string whose contents start at `from` (the end of the text if it
/// does not end).
fn string_end(json: &[u8], mut from: usize) -> usize {
    while let Some(offset) = memchr::memchr2(b'"', b'\\', &json[from..]).map(|o| from + o) {
        if json[offset] == b'"' {
            return offset + 1;
        }
        from = offset + 2; // An escape: the next byte is not the string's end.
        if from >= json.len() {
            break;
        }
    }
    json.len()
}

/// A response line as a whole: every member it may not have is looked for too.
#[derive(Deserialize)]
struct Whole<T> {
    #[serde(default)]
    id: Option<i64>,
    result: T,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

/// If `line` has one of the two plain shapes of a response, its id and its result (the line
/// itself, parsed later).
pub fn plain_response(line: &Bytes) -> Option<(i64, RawResult)> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const RESULT: &[u8] = b",\"result\":";
    const RESULT_FIRST: &[u8] = b"{\"result\":";
    const TAIL: &[u8] = b",\"jsonrpc\":\"2.0\",\"id\":";
    if !line.ends_with(b"}") {
        return None;
    }
    let id = if let Some(rest) = line.strip_prefix(HEAD) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if !rest[digits..].starts_with(RESULT) {
            return None;
        }
        number(&rest[..digits])?
    } else if line.starts_with(RESULT_FIRST) {
        let body = &line[..line.len() - 1];
        let digits = body.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        let (before, id) = body.split_at(body.len() - digits);
        if !before.ends_with(TAIL) || before.len() < RESULT_FIRST.len() + TAIL.len() {
            return None;
        }
        number(id)?
    } else {
        return None;
    };
    let result = RawResult(Text::Line {
        line: line.clone(),
        id,
    });
    Some((id, result))
}

/// A JSON integer's digits (ASCII digits, no sign, no leading zero) as an id that fits.
fn number(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    digits.iter().try_fold(0i64, |n, d| {
        let digit = d.is_ascii_digit().then(|| i64::from(d - b'0'))?;
        n.checked_mul(10)?.checked_add(digit)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plain(line: &str) -> Option<(i64, Value)> {
        let (id, result) = plain_response(&Bytes::copy_from_slice(line.as_bytes()))?;
        Some((id, result.to_value().unwrap_or(json!("unparsable"))))
    }

    #[test]
    fn both_plain_shapes_are_recognized_and_parsed_once() {
        assert_eq!(
            plain(r#"{"jsonrpc":"2.0","id":12,"result":{"a":[1,"}"]}}"#),
            Some((12, json!({"a": [1, "}"]})))
        );
        assert_eq!(
            plain(r#"{"result":{"content":[]},"jsonrpc":"2.0","id":7}"#),
            Some((7, json!({"content": []})))
        );
        assert_eq!(
            plain(r#"{"jsonrpc":"2.0","id":0,"result":null}"#),
            Some((0, Value::Null))
        );
    }

    #[test]
    fn other_shapes_are_left_to_the_full_parse() {
        for line in [
            r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} "#,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
            r#"{"result":,"jsonrpc":"2.0","id":}"#,
            r#"{"result":"jsonrpc":"2.0","id":3}"#,
        ] {
            assert_eq!(plain(line).map(|(id, _)| id), None, "{line}");
        }
    }

    #[test]
    fn a_line_that_only_looks_plain_is_reparsed_as_what_it_is() {
        let reparsed = |line: &str| {
            let (_, result) = plain_response(&Bytes::copy_from_slice(line.as_bytes())).unwrap();
            result.unless_plain().map(|r| r.parsed)
        };
        assert!(reparsed(r#"{"jsonrpc":"2.0","id":5,"result":{"a":1}}"#).is_none());
        assert!(matches!(
            reparsed(r#"{"jsonrpc":"2.0","id":5,"result":{}}x}"#),
            Some(Err(FrameError::NotJson(_)))
        ));
        assert!(matches!(
            reparsed(r#"{"jsonrpc":"2.0","id":5,"result":{},"method":"ping"}"#)
                .as_ref()
                .map(|p| p.as_ref().map(Vec::as_slice)),
            Some(Ok([Inbound::Request { .. }]))
        ));
        assert!(matches!(
            reparsed(r#"{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}}"#)
                .as_ref()
                .map(|p| p.as_ref().map(Vec::as_slice)),
            Some(Ok([Inbound::Error { .. }]))
        ));
        let text =
            RawResult::of_text(serde_json::value::RawValue::from_string("{}".into()).unwrap());
        assert!(
            text.unless_plain().is_none(),
            "a result parsed member by member is one"
        );
    }

    #[test]
    fn a_line_that_only_looks_plain_fails_when_parsed() {
        let lines: [&[u8]; 7] = [
            br#"{"jsonrpc":"2.0","id":5,"result":{"a":1}"#,
            br#"{"jsonrpc":"2.0","id":5,"result":{},"id":6}"#,
            br#"{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":5,"result":{},"method":"x"}"#,
            br#"{"result":{"x":"a"},"y":{"z":1,"jsonrpc":"2.0","id":5}"#,
            br#"{"result":,"jsonrpc":"2.0","id":3}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"\xff\"}",
        ];
        for line in lines {
            let (_, result) = plain_response(&Bytes::copy_from_slice(line))
                .unwrap_or_else(|| panic!("{:?} looks plain", String::from_utf8_lossy(line)));
            assert!(
                result.to_value().is_err(),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// `[[...]]` `depth` levels deep, with an unknown member that deep beside `content`.
    fn deep_result(depth: usize) -> String {
        let member = format!("{}{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        format!(r#"{{"content":[{{"type":"text","text":"x"}}],"deep":{member}}}"#)
    }

    fn both_ways(result: &RawResult) -> (bool, bool) {
        let raw = result.to_value().is_ok();
        let typed = result
            .parse::<crate::protocol::tool_result::ToolResult>()
            .is_ok();
        (raw, typed)
    }

    #[test]
    fn a_result_is_read_typed_and_raw_alike_up_to_the_depth_bound_and_refused_past_it() {
        for depth in [
            MAX_RESULT_DEPTH - 1,
            MAX_RESULT_DEPTH,
            MAX_RESULT_DEPTH + 1,
            5000,
        ] {
            let text = deep_result(depth);
            let own = RawResult::of_text(RawValue::from_string(text.clone()).unwrap());
            let line = format!(r#"{{"jsonrpc":"2.0","id":4,"result":{text}}}"#);
            let (_, line) = plain_response(&Bytes::from(line)).expect("a plain line");
            let read = depth <= MAX_RESULT_DEPTH;
            assert_eq!(both_ways(&own), (read, read), "{depth} levels, own text");
            assert_eq!(both_ways(&line), (read, read), "{depth} levels, a line");
        }
        let refused = RawResult::of_text(RawValue::from_string(deep_result(200)).unwrap());
        let error = refused.to_value().unwrap_err().to_string();
        assert!(error.contains("nested more than 126 levels"), "{error}");
    }

    #[test]
    fn nesting_skips_strings_and_their_escapes() {
        assert_eq!(nesting(br#"{"a":[1,{"b":[]}]}"#), 4);
        assert_eq!(nesting(br#"["[[[{{{", "\"[[[", "\\", []]"#), 2);
        assert_eq!(nesting(br#""unterminated [[[ \"#), 0);
        assert_eq!(nesting(b"]]]][[]"), 2, "not JSON: some number, no panic");
        assert_eq!(nesting(b""), 0);
    }
}
