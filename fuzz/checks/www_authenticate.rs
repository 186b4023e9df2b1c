//! The `WWW-Authenticate` parser (`auth::challenge`): what a server's `401` or `403` says.
//!
//! The invariants: at most `MAX_CHALLENGES` challenges of `MAX_PARAMS` parameters; schemes and
//! parameter names are tokens, names lowercased; no value is longer than the input; the
//! accessors read the parameters the parser kept; `pick` takes the first `Bearer`/`DPoP`
//! challenge, else the first. And the round trip: what was parsed, written back as RFC 9110
//! says (quoted strings with `\` escapes), parses into the same challenges, so that a value
//! with quotes, backslashes or commas in it comes out as the server meant it.

use mcp_supervisor::auth::challenge::{parse_all, pick, Challenge, MAX_CHALLENGES, MAX_PARAMS};

/// Fuzz entry: the input is the header's values, one per line (a server may send the header
/// several times).
pub fn fuzz_www_authenticate(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let challenges = parse_all(text.split('\n'));
    check_challenges(&challenges, text.len());
    let written = write_challenges(&challenges);
    assert_eq!(
        parse_all([written.as_str()]),
        challenges,
        "written back as {written:?}"
    );
}

/// The parser's output on an input of `input_len` bytes keeps its bounds and its accessors'
/// promises.
pub fn check_challenges(challenges: &[Challenge], input_len: usize) {
    assert!(challenges.len() <= MAX_CHALLENGES, "{}", challenges.len());
    for challenge in challenges {
        assert!(is_token(&challenge.scheme), "scheme {:?}", challenge.scheme);
        let params = challenge.params();
        assert!(params.len() <= MAX_PARAMS, "{}", params.len());
        for (name, value) in params {
            assert!(is_token(name), "parameter name {name:?}");
            assert_eq!(*name, name.to_ascii_lowercase());
            assert!(value.len() <= input_len, "a value longer than the input");
            // Case-insensitive, and the first of a repeated name.
            let first = params.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            assert_eq!(
                challenge.param(&name.to_ascii_uppercase()),
                first.map(String::as_str)
            );
        }
        let named = |n: &str| params.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(
            challenge.resource_metadata(),
            named("resource_metadata").filter(|v| !v.is_empty())
        );
        assert_eq!(
            challenge.scope(),
            named("scope").filter(|v| !v.trim().is_empty())
        );
        assert_eq!(challenge.error(), named("error"));
    }
    let bearer = challenges
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer") || c.scheme.eq_ignore_ascii_case("dpop"));
    assert_eq!(pick(challenges), bearer.or(challenges.first()));
}

/// The challenges as one header value: `Scheme name="value", name="value", Other`.
pub fn write_challenges(challenges: &[Challenge]) -> String {
    let written: Vec<String> = challenges
        .iter()
        .map(|challenge| {
            let params: Vec<String> = challenge
                .params()
                .iter()
                .map(|(name, value)| format!("{name}={}", quoted(value)))
                .collect();
            if params.is_empty() {
                challenge.scheme.clone()
            } else {
                format!("{} {}", challenge.scheme, params.join(", "))
            }
        })
        .collect();
    written.join(", ")
}

/// An RFC 9110 quoted-string.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// An RFC 9110 token, or a token68's characters but `=` (the parser keeps `/` in tokens).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b))
}
