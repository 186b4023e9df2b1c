//! The value encoding shared by `Mcp-Name` and `Mcp-Param-*` (2026-07-28,
//! `basic/transports/streamable-http.mdx` §Value Encoding; our digest §3.3).
//!
//! A value goes out plain when it already is a safe HTTP field value, and only then: the
//! conformance suite compares `Mcp-Name` byte for byte, so `file:///a%20b.txt` must not be
//! wrapped. Anything else is the Base64 sentinel `=?base64?{standard Base64, padded}?=` of its
//! UTF-8 bytes. "Safe" is stricter than RFC 9110 in one place: a TAB is allowed inside a field
//! value, but the conformance suite wants every TAB wrapped, and wrapping one costs nothing
//! because the server decodes before comparing.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The opening marker of the Base64 sentinel. Lowercase and case-sensitive.
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// The closing marker of the Base64 sentinel.
pub const SENTINEL_SUFFIX: &str = "?=";

/// `value` as an HTTP header value: as it is when that is safe, otherwise its Base64 sentinel.
///
/// It is wrapped when it has a character outside 0x20–0x7E (non-ASCII, or a control character,
/// TAB, CR and LF included, anywhere), a leading or trailing space, or when it already looks
/// like a sentinel (starts with `=?base64?` and ends with `?=`), so that a receiver's decoder
/// gives back the literal text. Internal spaces stay plain (`us west 1`), and the empty string
/// stays empty: an empty value is sent, not omitted.
///
/// The result always is visible ASCII with internal spaces only, so it is a valid header value
/// for any HTTP stack.
pub fn header_value(value: &str) -> String {
    if needs_encoding(value) {
        format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            STANDARD.encode(value.as_bytes())
        )
    } else {
        value.to_owned()
    }
}

/// Whether [`header_value`] wraps `value` in the Base64 sentinel.
pub fn needs_encoding(value: &str) -> bool {
    // Bytes, not chars: every byte of a non-ASCII char is ≥ 0x80, so this also finds those.
    value.bytes().any(|b| !(0x20..=0x7e).contains(&b))
        // Only a space is left of the whitespace once the line above passed.
        || value.starts_with(' ')
        || value.ends_with(' ')
        // Overlapping markers (`=?base64?=`) count too: wrapping is always safe, and no
        // receiver can then read the value as something it is not.
        || (value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX))
}

/// Why a header value in the sentinel form could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSentinel {
    /// Between the markers is not canonical, padded, standard Base64.
    #[error("the Base64 sentinel does not hold canonical padded Base64")]
    Base64,
    /// The Base64 decodes to bytes that are not UTF-8.
    #[error("the Base64 sentinel does not decode to UTF-8")]
    Utf8,
}

/// The receiving side of [`header_value`], as a server applies it before comparing a header
/// with the body: a value in the sentinel form is decoded, any other value is returned as it
/// is. For tests and test servers; the client never decodes.
pub fn decode_header_value(value: &str) -> Result<String, InvalidSentinel> {
    let inner = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX));
    let Some(inner) = inner else {
        return Ok(value.to_owned());
    };
    let bytes = STANDARD
        .decode(inner)
        .map_err(|_| InvalidSentinel::Base64)?;
    String::from_utf8(bytes).map_err(|_| InvalidSentinel::Utf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A valid HTTP field value as this module promises it: visible ASCII and internal spaces
    /// only, no leading or trailing whitespace.
    fn is_plain_header_value(value: &str) -> bool {
        value.bytes().all(|b| (0x20..=0x7e).contains(&b))
            && !value.starts_with(' ')
            && !value.ends_with(' ')
    }

    fn sentinel(b64: &str) -> String {
        format!("=?base64?{b64}?=")
    }

    #[test]
    fn safe_values_go_out_plain() {
        for value in [
            "us-west1",
            "us west 1",
            "test-method",
            "my-hyphenated-tool",
            "file:///path/to/file%20name.txt",
            "https://example.com/resource?id=123",
            "42",
            "",
            // Only the exact lowercase markers are the sentinel.
            "=?BASE64?abc?=",
            "=?base64?abc",
            "abc?=",
        ] {
            assert_eq!(header_value(value), value, "{value:?}");
        }
    }

    #[test]
    fn unsafe_values_are_wrapped_as_the_spec_examples_show() {
        let cases = [
            ("Hello, 世界", "SGVsbG8sIOS4lueVjA=="),
            (" padded ", "IHBhZGRlZCA="),
            ("line1\nline2", "bGluZTEKbGluZTI="),
            ("line1\r\nline2", "bGluZTENCmxpbmUy"),
            ("\tindented", "CWluZGVudGVk"),
            (" us-west1", "IHVzLXdlc3Qx"),
            ("us-west1 ", "dXMtd2VzdDEg"),
            ("=?base64?literal?=", "PT9iYXNlNjQ/bGl0ZXJhbD89"),
        ];
        for (value, b64) in cases {
            assert_eq!(header_value(value), sentinel(b64), "{value:?}");
            assert_eq!(
                decode_header_value(&header_value(value)).as_deref(),
                Ok(value)
            );
        }
    }

    #[test]
    fn a_tab_or_a_control_character_anywhere_is_wrapped() {
        for value in ["a\tb", "a\u{7f}b", "a\0b", "é", "a\u{85}b", "=?base64?="] {
            let out = header_value(value);
            assert!(out.starts_with(SENTINEL_PREFIX), "{value:?} → {out}");
            assert_eq!(decode_header_value(&out).as_deref(), Ok(value));
        }
    }

    #[test]
    fn decoding_rejects_what_a_strict_server_rejects() {
        assert_eq!(decode_header_value("plain"), Ok("plain".to_owned()));
        assert_eq!(
            decode_header_value(&sentinel("%%%")),
            Err(InvalidSentinel::Base64)
        );
        // Unpadded is not canonical.
        assert_eq!(
            decode_header_value(&sentinel("IHBhZGRlZCA")),
            Err(InvalidSentinel::Base64)
        );
        assert_eq!(
            decode_header_value(&sentinel("//4=")),
            Err(InvalidSentinel::Utf8)
        );
        assert_eq!(decode_header_value(&sentinel("")), Ok(String::new()));
    }

    proptest! {
        #[test]
        fn output_is_a_valid_header_value_that_decodes_back(value in any::<String>()) {
            let out = header_value(&value);
            prop_assert!(is_plain_header_value(&out), "{value:?} → {out:?}");
            prop_assert_eq!(out.is_empty(), value.is_empty());
            prop_assert_eq!(decode_header_value(&out), Ok(value.clone()));
            if !needs_encoding(&value) {
                prop_assert_eq!(&out, &value);
            }
        }

        #[test]
        fn printable_ascii_is_kept_unless_it_must_not_be(value in "[ -~]{0,40}") {
            let out = header_value(&value);
            let edge_space = value.starts_with(' ') || value.ends_with(' ');
            let looks_wrapped = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
            prop_assert_eq!(out == value, !edge_space && !looks_wrapped);
            prop_assert_eq!(decode_header_value(&out), Ok(value.clone()));
        }
    }
}
