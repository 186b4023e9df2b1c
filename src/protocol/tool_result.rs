//! A `tools/call` result parsed in one pass: [`ToolResult`], the same
//! [`CallToolResult`] as rmcp's own `Deserialize` makes, without the buffering that rmcp's
//! content blocks cost.
//!
//! rmcp's `ContentBlock` is an internally tagged enum (`"type": "text"`, ...): serde reads
//! each block into a buffer of its own first, to find the tag, and then reads the buffer into
//! the variant. Nearly every block of nearly every result is text with `type` as its first
//! member, so a block whose first member says `"text"` is read straight into a
//! [`TextContent`]; any other block is handed to rmcp as a `Value`. The rules of the result
//! itself (at least one known member, `resultType` `complete` when present, a present
//! `structuredContent: null` kept) are rmcp's, and `tests/it/tool_results.rs` holds the two
//! parses to the same outcome.

use std::fmt;

use rmcp::model::{CallToolResult, ContentBlock, MetaObject, ResultType, TextContent};
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{DeserializeSeed, Error as _, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A tool call's result, parsed as rmcp parses it, in one pass.
#[derive(Debug)]
pub struct ToolResult(pub CallToolResult);

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Members {
            #[serde(default)]
            result_type: Option<ResultType>,
            content: Option<Vec<Block>>,
            #[serde(default, deserialize_with = "present")]
            structured_content: Option<Value>,
            is_error: Option<bool>,
            #[serde(rename = "_meta")]
            meta: Option<MetaObject>,
        }
        let members = Members::deserialize(deserializer)?;
        if members
            .result_type
            .as_ref()
            .is_some_and(|kind| !kind.is_complete())
        {
            return Err(D::Error::custom(
                "a tool call's result must have resultType \"complete\" when it has one",
            ));
        }
        if members.content.is_none()
            && members.structured_content.is_none()
            && members.is_error.is_none()
        {
            return Err(D::Error::custom(
                "a tool call's result needs content, structuredContent or isError",
            ));
        }
        let mut result = CallToolResult::default();
        result.result_type = members.result_type;
        result.content = members
            .content
            .map(|blocks| blocks.into_iter().map(|Block(block)| block).collect())
            .unwrap_or_default();
        result.structured_content = members.structured_content;
        result.is_error = members.is_error;
        result.meta = members.meta;
        Ok(ToolResult(result))
    }
}

/// Keeps an explicit `null` apart from an absent member.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// One content block.
struct Block(ContentBlock);

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Block;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
        let mut seen = Map::new();
        match map.next_key::<Key>()? {
            Some(Key::Type) => match map.next_value::<Kind>()? {
                // The usual block: the rest of its members are a text block's.
                Kind::Text => {
                    let rest = MapAccessDeserializer::new(RestOfText(map));
                    return Ok(Block(ContentBlock::Text(TextContent::deserialize(rest)?)));
                }
                Kind::Other(kind) => {
                    seen.insert("type".to_owned(), Value::String(kind));
                }
            },
            Some(Key::Borrowed(key)) => {
                seen.insert(key.to_owned(), map.next_value()?);
            }
            Some(Key::Owned(key)) => {
                seen.insert(key, map.next_value()?);
            }
            None => {}
        }
        // Any other block, as rmcp reads it: a member twice is refused, as there.
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            if seen.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
            seen.insert(key, value);
        }
        rmcp_block(Value::Object(seen))
    }

    /// A block as a sequence (serde's tagged enums take one: the tag, then the members in
    /// order), as rmcp reads it.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Block, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        rmcp_block(Value::Array(items))
    }
}

/// A block that is not the usual text block, read by rmcp's own `Deserialize`.
fn rmcp_block<E: serde::de::Error>(block: Value) -> Result<Block, E> {
    ContentBlock::deserialize(block)
        .map(Block)
        .map_err(E::custom)
}

/// The members of a text block after its `type`, refusing a second `type` as rmcp's tagged
/// enum does (the text block's own `Deserialize` would ignore it).
struct RestOfText<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for RestOfText<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.0.next_key::<Key<'de>>()? {
            None => Ok(None),
            Some(Key::Type) => Err(A::Error::duplicate_field("type")),
            Some(Key::Borrowed(key)) => seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some),
            Some(Key::Owned(key)) => seed.deserialize(key.into_deserializer()).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A block member's name: the tag, or another (borrowed from the input when it can be).
enum Key<'de> {
    Type,
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(match key {
                    "type" => Key::Type,
                    other => Key::Borrowed(other),
                })
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(match key {
                    "type" => Key::Type,
                    other => Key::Owned(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A block's tag: text, or another kind.
enum Kind {
    Text,
    Other(String),
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl Visitor<'_> for KindVisitor {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block's type")
            }
            fn visit_str<E: serde::de::Error>(self, kind: &str) -> Result<Kind, E> {
                Ok(match kind {
                    "text" => Kind::Text,
                    other => Kind::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_str(KindVisitor)
    }
}
