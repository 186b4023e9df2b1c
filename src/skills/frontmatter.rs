//! A `SKILL.md`'s YAML frontmatter, read into the JSON it stands for, so that it can be
//! compared field by field with the frontmatter of the skill's entry (SEP-2640, "Frontmatter
//! Verification").
//!
//! The frontmatter is the block between a first line `---` and the next line `---` (each may
//! have trailing spaces or tabs). It is parsed by a full YAML 1.2 parser (`saphyr-parser`'s
//! events) and turned into JSON by the core schema: plain `null`/`~`/empty, `true`/`false`,
//! integers (decimal, `0o`, `0x`) and floats are typed, every other scalar is a string, and
//! the core tags (`!!str`, `!!int`, ...) are honoured. A float JSON cannot hold (`.inf`,
//! `.nan`, or one too large for a double) is refused: kept as its text, it would equal an
//! entry's string of the same text. The conversion is bounded: it refuses anchors'
//! aliases (one alias can stand for exponentially many nodes, and a skill's frontmatter has no
//! use for them), tags of its own, keys that are not scalars, duplicate keys, nesting deeper
//! than [`MAX_DEPTH`] and more than [`MAX_NODES`] nodes. Pure: no IO.

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::{Map, Number, Value};

/// The deepest nesting of sequences and mappings a frontmatter may have.
pub const MAX_DEPTH: usize = 32;

/// The most nodes (scalars, sequences, mappings) a frontmatter may have.
pub const MAX_NODES: usize = 10_000;

/// A `SKILL.md` split into its frontmatter, read as JSON, and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Split<'a> {
    /// The frontmatter's fields.
    pub frontmatter: Map<String, Value>,
    /// Everything after the closing `---` line.
    pub body: &'a str,
}

/// Splits `text` into its frontmatter, parsed, and its body; the error says what is wrong.
pub fn split(text: &str) -> Result<Split<'_>, String> {
    let (yaml, body) = block(text)?;
    let value = parse(yaml)?;
    match value {
        Value::Object(frontmatter) => Ok(Split { frontmatter, body }),
        other => Err(format!(
            "its frontmatter is not a mapping but {}",
            kind(&other)
        )),
    }
}

/// The YAML between the opening and the closing `---` lines, and what follows the latter; the
/// error says which fence is missing.
fn block(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = strip_fence(text).ok_or("it does not begin with a `---` line")?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if let Some(after) = strip_fence(line) {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len() - after.len()..];
            return Ok((yaml, body));
        }
        offset += line.len();
    }
    Err("its frontmatter has no closing `---` line".into())
}

/// What follows a fence line at the start of `text` (`---`, then spaces or tabs, then a `\n`,
/// a `\r\n` or the end of the text), if `text` begins with one.
fn strip_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?.trim_start_matches([' ', '\t']);
    if rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix('\n')
        .or_else(|| rest.strip_prefix("\r\n"))
}

/// One YAML document, as JSON.
pub fn parse(yaml: &str) -> Result<Value, String> {
    let mut builder = Builder::default();
    for event in Parser::new_from_str(yaml) {
        let (event, span) = event.map_err(|e| format!("its frontmatter is not YAML: {e}"))?;
        builder
            .event(event)
            .map_err(|e| format!("its frontmatter (line {}): {e}", span.start.line()))?;
    }
    builder.finish()
}

/// A sequence or mapping being built.
enum Open {
    Seq(Vec<Value>),
    /// The mapping so far, and its pending key (a key waits for its value).
    Map(Map<String, Value>, Option<String>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    documents: usize,
    nodes: usize,
    done: Option<Value>,
}

impl Builder {
    fn event(&mut self, event: Event<'_>) -> Result<(), String> {
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => Ok(()),
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err("more than one YAML document".into());
                }
                Ok(())
            }
            Event::Alias(_) => Err("an alias (`*name`): aliases are not accepted".into()),
            Event::Scalar(text, style, _anchor, tag) => {
                let in_key_position = matches!(self.stack.last(), Some(Open::Map(_, None)));
                let value = if in_key_position {
                    // A key is a string whatever it looks like: JSON's keys are.
                    key_tag(tag.as_deref())?;
                    Value::String(text.into_owned())
                } else {
                    scalar(&text, style, tag.as_deref())?
                };
                self.add(value)
            }
            Event::SequenceStart(_, tag) => {
                collection_tag(tag.as_deref(), "seq")?;
                self.open(Open::Seq(Vec::new()))
            }
            Event::MappingStart(_, tag) => {
                collection_tag(tag.as_deref(), "map")?;
                self.open(Open::Map(Map::new(), None))
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Open::Seq(items)) => self.place(Value::Array(items)),
                Some(Open::Map(map, None)) => self.place(Value::Object(map)),
                Some(Open::Map(_, Some(key))) => Err(format!("the key {key:?} has no value")),
                None => Err("an unbalanced end of a collection".into()),
            },
        }
    }

    fn count(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!("more than {MAX_NODES} nodes"));
        }
        Ok(())
    }

    fn open(&mut self, open: Open) -> Result<(), String> {
        if matches!(self.stack.last(), Some(Open::Map(_, None))) {
            return Err("a key that is not a scalar".into());
        }
        self.count()?;
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        self.stack.push(open);
        Ok(())
    }

    fn add(&mut self, value: Value) -> Result<(), String> {
        self.count()?;
        self.place(value)
    }

    /// Puts a finished node where it belongs: into the open collection, or as the document.
    fn place(&mut self, value: Value) -> Result<(), String> {
        match self.stack.last_mut() {
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(_, key @ None)) => match value {
                Value::String(k) => *key = Some(k),
                _ => return Err("a key that is not a scalar".into()),
            },
            Some(Open::Map(map, key @ Some(_))) => {
                let k = key.take().unwrap_or_default();
                if map.contains_key(&k) {
                    return Err(format!("the key {k:?} appears twice"));
                }
                map.insert(k, value);
            }
            None if self.done.is_none() => self.done = Some(value),
            None => return Err("more than one YAML document".into()),
        }
        Ok(())
    }

    fn finish(self) -> Result<Value, String> {
        if !self.stack.is_empty() {
            return Err("it ends inside a collection".into());
        }
        // An empty document is null (an empty frontmatter block).
        Ok(self.done.unwrap_or(Value::Null))
    }
}

/// The core schema's name of a tag (`str` for `!!str`), `None` for a tag that is not one of
/// the core schema's.
fn core(tag: &Tag) -> Option<&str> {
    (tag.handle == "tag:yaml.org,2002:")
        .then_some(tag.suffix.as_str())
        .or_else(|| (tag.handle == "!!").then_some(tag.suffix.as_str()))
}

fn key_tag(tag: Option<&Tag>) -> Result<(), String> {
    match tag {
        None => Ok(()),
        Some(t) if core(t) == Some("str") => Ok(()),
        Some(t) => Err(format!("a key with the tag {}{}", t.handle, t.suffix)),
    }
}

fn collection_tag(tag: Option<&Tag>, expected: &str) -> Result<(), String> {
    match tag {
        None => Ok(()),
        Some(t) if core(t) == Some(expected) => Ok(()),
        Some(t) => Err(format!("the tag {}{}", t.handle, t.suffix)),
    }
}

/// A scalar in value position, resolved by the core schema (or its tag).
fn scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    // A plain scalar, or one tagged `!!float`, is read as a number if it can be.
    let numeric = match tag {
        None => matches!(style, ScalarStyle::Plain),
        Some(t) => core(t) == Some("float"),
    };
    if numeric && non_finite(text) {
        return Err(format!(
            "{text:?} is a float JSON cannot hold (an infinity, a NaN, or too large)"
        ));
    }
    let Some(tag) = tag else {
        return Ok(match style {
            ScalarStyle::Plain => plain(text),
            _ => Value::String(text.to_owned()),
        });
    };
    let wrong = || format!("{text:?} is not a valid !!{}", tag.suffix);
    match core(tag) {
        Some("str") => Ok(Value::String(text.to_owned())),
        Some("null") => null(text).ok_or_else(wrong),
        Some("bool") => boolean(text).ok_or_else(wrong),
        Some("int") => int(text).ok_or_else(wrong),
        Some("float") => int(text).or_else(|| float(text)).ok_or_else(wrong),
        _ => Err(format!("the tag {}{}", tag.handle, tag.suffix)),
    }
}

/// A plain scalar by the core schema: null, boolean, integer, float, or else a string.
fn plain(text: &str) -> Value {
    null(text)
        .or_else(|| boolean(text))
        .or_else(|| int(text))
        .or_else(|| float(text))
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

fn null(text: &str) -> Option<Value> {
    matches!(text, "" | "~" | "null" | "Null" | "NULL").then_some(Value::Null)
}

fn boolean(text: &str) -> Option<Value> {
    match text {
        "true" | "True" | "TRUE" => Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => Some(Value::Bool(false)),
        _ => None,
    }
}

fn int(text: &str) -> Option<Value> {
    let parsed = if let Some(octal) = text.strip_prefix("0o") {
        digits(octal, 8)
    } else if let Some(hex) = text.strip_prefix("0x") {
        digits(hex, 16)
    } else {
        let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Too large for JSON's integers: a float, as JSON would read it.
        return Some(match text.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => match text.parse::<u64>() {
                Ok(n) => Value::from(n),
                Err(_) => text.parse::<f64>().ok().and_then(float_value)?,
            },
        });
    };
    parsed.map(Value::from)
}

fn digits(text: &str, radix: u32) -> Option<u64> {
    if text.is_empty() || !text.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(text, radix).ok()
}

/// Whether `text` is a float by the core schema that JSON cannot hold: an infinity, a NaN, or
/// one too large for a double.
fn non_finite(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    matches!(
        unsigned,
        ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN"
    ) || (float_syntax(text) && text.parse::<f64>().is_ok_and(|f| !f.is_finite()))
}

fn float(text: &str) -> Option<Value> {
    if !float_syntax(text) {
        return None;
    }
    text.parse::<f64>().ok().and_then(float_value)
}

/// Whether `text` is written as the core schema's (finite) floats are.
fn float_syntax(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    // `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match fraction {
        Some(f) => all_digits(whole) && all_digits(f) && !(whole.is_empty() && f.is_empty()),
        None => !whole.is_empty() && all_digits(whole),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    mantissa_ok && exponent_ok
}

fn float_value(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

/// A word for what `value` is, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// Whether two JSON values are the same, numbers compared by value (`1` and `1.0` are the
/// same; JSON and YAML may write one number either way).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first field where `file` and `entry` differ, by name (`None`: they are the same).
pub fn first_difference(file: &Map<String, Value>, entry: &Map<String, Value>) -> Option<String> {
    let mut keys: Vec<&String> = file.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|k| match (file.get(*k), entry.get(*k)) {
            (Some(a), Some(b)) => !same(a, b),
            _ => true,
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fm(text: &str) -> Result<Value, String> {
        split(text).map(|s| Value::Object(s.frontmatter))
    }

    #[test]
    fn the_frontmatter_is_read_by_the_core_schema_and_the_body_follows_it() {
        let text = "---\nname: pdf-processing\ndescription: \"Extract: fill\"\nlicense: Apache-2.0\n\
                    metadata:\n  version: 2.1\n  count: 3\n  big: 0x10\n  on: true\n  none: ~\n\
                    allowed-tools: [Read, 'Bash(git:*)']\nliteral: |\n  two\n  lines\n---\n\n# Body\n";
        let split = split(text).unwrap();
        assert_eq!(
            Value::Object(split.frontmatter),
            json!({
                "name": "pdf-processing",
                "description": "Extract: fill",
                "license": "Apache-2.0",
                "metadata": {"version": 2.1, "count": 3, "big": 16, "on": true, "none": null},
                "allowed-tools": ["Read", "Bash(git:*)"],
                "literal": "two\nlines\n",
            })
        );
        assert_eq!(split.body, "\n# Body\n");
        // Fences may have trailing spaces or tabs, and the closing one may end the text; a
        // quoted or `!!str` infinity is a string.
        let split = super::split("--- \t\nname: x\nn: '.inf'\nm: !!str .nan\n---  ").unwrap();
        assert_eq!(
            Value::Object(split.frontmatter),
            json!({"name": "x", "n": ".inf", "m": ".nan"})
        );
        assert_eq!(split.body, "");
        // Quoted scalars stay strings; tags are honoured; CRLF fences and a BOM are read.
        assert_eq!(
            fm("\u{feff}---\r\nname: '1'\r\nversion: !!str 2\r\nn: !!float 3\r\n---\r\nbody")
                .unwrap(),
            json!({"name": "1", "version": "2", "n": 3})
        );
    }

    #[test]
    fn what_is_not_a_plain_frontmatter_is_refused() {
        for (text, why) in [
            ("name: x\n", "does not begin"),
            ("---\nname: x\n", "no closing `---` line"),
            ("---\nname: x\n--- x\n", "no closing `---` line"),
            ("--\nname: x\n---\n", "does not begin with a `---` line"),
            ("---\na: .inf\n---\n", "a float JSON cannot hold"),
            ("---\na: [-.NaN]\n---\n", "a float JSON cannot hold"),
            ("---\na: !!float .inf\n---\n", "a float JSON cannot hold"),
            ("---\na: 1e999\n---\n", "a float JSON cannot hold"),
            ("---\n- a\n---\n", "not a mapping"),
            ("---\na: &x [1]\nb: *x\n---\n", "alias"),
            ("---\na: 1\na: 2\n---\n", "twice"),
            ("---\n? [a]\n: 1\n---\n", "not a scalar"),
            ("---\na: !custom 1\n---\n", "tag"),
            ("---\na: !!int nope\n---\n", "not a valid"),
            ("---\na: [\n---\n", "not YAML"),
        ] {
            let e = fm(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
        let deep = format!("---\na: {}{}\n---\n", "[".repeat(40), "]".repeat(40));
        assert!(fm(&deep).unwrap_err().contains("deeper"));
        let many = format!("---\na: [{}]\n---\n", "1,".repeat(MAX_NODES));
        assert!(fm(&many).unwrap_err().contains("nodes"));
    }

    #[test]
    fn plain_scalars_resolve_as_the_core_schema_says() {
        for (text, value) in [
            ("12", json!(12)),
            ("-3", json!(-3)),
            ("0o17", json!(15)),
            ("1.5e3", json!(1500.0)),
            (".5", json!(0.5)),
            ("1_000", json!("1_000")),
            ("yes", json!("yes")),
            ("2024-01-01", json!("2024-01-01")),
            ("18446744073709551616", json!(18446744073709551616.0)),
        ] {
            assert_eq!(plain(text), value, "{text}");
        }
    }

    #[test]
    fn values_are_compared_with_numbers_by_value() {
        assert!(same(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!same(&json!({"a": 1}), &json!({"a": "1"})));
        let file = json!({"name": "x", "description": "Exfiltrate"});
        let entry = json!({"name": "x", "description": "Extract"});
        let (Value::Object(file), Value::Object(entry)) = (file, entry) else {
            unreachable!()
        };
        assert_eq!(
            first_difference(&file, &entry).as_deref(),
            Some("description")
        );
        assert_eq!(first_difference(&file, &file), None);
    }
}
