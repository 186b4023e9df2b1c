//! `WWW-Authenticate` (RFC 9110 §11.6.1): the challenges of a `401` or `403`, and the
//! parameters MCP reads from them (`resource_metadata`, `scope`, `error`).
//!
//! Pure. A real auth-param parser, not a regex: several challenges in one value or in several
//! header lines, quoted strings with `\` escapes and commas inside, case-insensitive names,
//! any scheme (`Bearer`, `DPoP`, ...). Bounded: at most [`MAX_CHALLENGES`] challenges of
//! [`MAX_PARAMS`] parameters each are kept.

/// Challenges kept from one answer.
pub const MAX_CHALLENGES: usize = 8;
/// Parameters kept per challenge.
pub const MAX_PARAMS: usize = 16;

/// One challenge: its scheme and parameters, names lowercased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as sent (`Bearer`).
    pub scheme: String,
    params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every parameter kept, in order: (lowercased name, value).
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// `resource_metadata`: where the Protected Resource Metadata is (RFC 9728 §5.1).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata").filter(|v| !v.is_empty())
    }

    /// `scope`: the scopes the request needs, space separated.
    pub fn scope(&self) -> Option<&str> {
        self.param("scope").filter(|v| !v.trim().is_empty())
    }

    /// `error` (`invalid_token`, `insufficient_scope`, ...).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }
}

/// The challenges in the `WWW-Authenticate` values of an answer, in order.
pub fn parse_all<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in values {
        parse_into(value, &mut out);
    }
    out
}

/// The challenge MCP acts on: the first `Bearer` (or `DPoP`) one, else the first of any scheme.
pub fn pick(challenges: &[Challenge]) -> Option<&Challenge> {
    challenges
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer") || c.scheme.eq_ignore_ascii_case("dpop"))
        .or_else(|| challenges.first())
}

fn parse_into(value: &str, out: &mut Vec<Challenge>) {
    let mut p = Cursor {
        s: value.as_bytes(),
        i: 0,
    };
    loop {
        p.skip(|b| b == b' ' || b == b'\t' || b == b',');
        if p.done() || out.len() >= MAX_CHALLENGES {
            return;
        }
        let scheme = p.token();
        if scheme.is_empty() {
            p.i += 1; // not a token character: skip it
            continue;
        }
        let mut challenge = Challenge {
            scheme,
            params: Vec::new(),
        };
        loop {
            let start = p.i;
            p.skip(|b| b == b' ' || b == b'\t' || b == b',');
            let name = p.token();
            p.skip(|b| b == b' ' || b == b'\t');
            if name.is_empty() || p.peek() != Some(b'=') {
                // A new challenge's scheme (or a token68, which MCP never needs).
                p.i = if name.is_empty() { p.i } else { start };
                break;
            }
            p.i += 1;
            p.skip(|b| b == b' ' || b == b'\t');
            let value = if p.peek() == Some(b'"') {
                p.quoted()
            } else {
                p.token()
            };
            if challenge.params.len() < MAX_PARAMS {
                challenge.params.push((name.to_ascii_lowercase(), value));
            }
        }
        out.push(challenge);
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip(&mut self, what: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&what) {
            self.i += 1;
        }
    }

    /// An RFC 9110 token (tchar*), plus `/` so that token68-like values survive.
    fn token(&mut self) -> String {
        let start = self.i;
        self.skip(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b));
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// A quoted-string, the cursor on its opening quote; unterminated: up to the end.
    fn quoted(&mut self) -> String {
        self.i += 1;
        let mut value = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        value.push(next);
                        self.i += 1;
                    }
                }
                _ => value.push(b),
            }
        }
        String::from_utf8_lossy(&value).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_suites_challenge() {
        let c = parse_all([
            r#"Bearer error="invalid_token", error_description="Missing Authorization header", scope="mcp:basic", resource_metadata="http://localhost:41711/.well-known/oauth-protected-resource/mcp""#,
        ]);
        assert_eq!(c.len(), 1);
        let c = pick(&c).unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.error(), Some("invalid_token"));
        assert_eq!(c.scope(), Some("mcp:basic"));
        assert_eq!(
            c.resource_metadata(),
            Some("http://localhost:41711/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn several_challenges_escapes_commas_and_case() {
        let c = parse_all([
            r#"Basic realm="a, b", Bearer Scope="x y", error=insufficient_scope"#,
            r#"DPoP resource_metadata="https://h/.well-known/oauth-protected-resource", error_description="say \"hi\"""#,
        ]);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].scheme, "Basic");
        assert_eq!(c[0].param("REALM"), Some("a, b"));
        assert_eq!(pick(&c).unwrap().scope(), Some("x y"));
        assert_eq!(c[1].error(), Some("insufficient_scope"));
        assert_eq!(c[2].param("error_description"), Some(r#"say "hi""#));
        assert!(c[2].resource_metadata().is_some());
    }

    #[test]
    fn garbage_and_floods_are_bounded() {
        assert!(parse_all(["", " , ,", "\"\"\""]).is_empty());
        let flood = (0..100)
            .map(|i| format!("S{i} x=y"))
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(parse_all([flood.as_str()]).len(), MAX_CHALLENGES);
        let params = (0..100)
            .map(|i| format!("p{i}=v"))
            .collect::<Vec<_>>()
            .join(", ");
        let c = parse_all([format!("Bearer {params}").as_str()]);
        assert_eq!(c[0].params.len(), MAX_PARAMS);
        // Unterminated quote: kept up to the end, no panic.
        assert_eq!(parse_all([r#"Bearer scope="a b"#])[0].scope(), Some("a b"));
    }
}
