//! Protocol eras and how one is chosen for a server. Pure: the connect task does the IO and
//! asks this module what an answer means.
//!
//! MCP has two families of revisions. The *legacy* ones (2024-11-05 to 2025-11-25) open a
//! connection with the `initialize` handshake and, over HTTP, a session. The *modern* one
//! (2026-07-28) has neither: every request carries the protocol version, the client's
//! capabilities and identity in its `_meta`, and `server/discover` tells what a server speaks.
//! Servers of the current SDKs speak both (dual-era); older ones only the legacy revisions; some
//! only the modern one.
//!
//! [`ProtocolChoice::Auto`] (the default) probes with `server/discover` and falls back to
//! `initialize` on any answer that is not modern; the era found is remembered per server and
//! tried first on the next connection, and the other era is tried at once, in the same attempt,
//! when the remembered one fails in a way that says the server changed. The rules for reading
//! an answer are [`judge_probe`] and [`judge_initialize_error`].

use std::fmt;

use serde_json::Value;

use crate::protocol::jsonrpc::RpcError;
use crate::protocol::lifecycle;
use crate::protocol::text::server_text;

/// The modern revisions this client speaks, newest first.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// JSON-RPC error codes of the 2026-07-28 revision.
pub mod codes {
    /// A request's headers do not match its body (HTTP), e.g. `Mcp-Method`.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The server needs a client capability the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The server does not speak the requested protocol version; `data.supported` lists what
    /// it does.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Which protocol revisions to speak to a server: the `protocol` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ProtocolChoice {
    /// Ask the modern way first, fall back to `initialize` (the default).
    #[default]
    Auto,
    /// Only the `initialize` handshake (2024-11-05 to 2025-11-25).
    Legacy,
    /// Only the stateless revision (2026-07-28).
    Modern,
}

impl ProtocolChoice {
    /// The setting's name as written in configuration: `auto`, `legacy` or `modern`.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolChoice::Auto => "auto",
            ProtocolChoice::Legacy => "legacy",
            ProtocolChoice::Modern => "modern",
        }
    }

    /// Parses `auto`, `legacy` or `modern`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(ProtocolChoice::Auto),
            "legacy" => Some(ProtocolChoice::Legacy),
            "modern" => Some(ProtocolChoice::Modern),
            _ => None,
        }
    }

    /// The era to try first, given what the last connection found (if anything).
    pub fn first_try(self, remembered: Option<Era>) -> Era {
        match (self, remembered) {
            (ProtocolChoice::Legacy, _) => Era::Legacy,
            (ProtocolChoice::Modern, _) => Era::Modern,
            (ProtocolChoice::Auto, Some(era)) => era,
            (ProtocolChoice::Auto, None) => Era::Modern,
        }
    }

    /// Whether the other era may be tried after `era` failed.
    pub fn may_fall_back(self) -> bool {
        self == ProtocolChoice::Auto
    }
}

impl fmt::Display for ProtocolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The family of revisions a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 to 2025-11-25: `initialize`, sessions.
    Legacy,
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
}

impl Era {
    /// `legacy` or `modern`.
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// The other era.
    pub fn other(self) -> Era {
        match self {
            Era::Legacy => Era::Modern,
            Era::Modern => Era::Legacy,
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the answer to a `server/discover` probe means.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeVerdict {
    /// A modern server: go on in the modern era (the result is to be parsed by
    /// [`discover`](crate::protocol::discover)).
    Modern,
    /// A modern server that does not speak the version we asked for, but this one, which we
    /// speak too: ask again with it.
    RetryWith(String),
    /// A modern server that speaks no modern version we do; `supported` is its list. With
    /// legacy versions in it, the legacy handshake may still work.
    NoSharedModernVersion {
        /// The versions the server named.
        supported: Vec<String>,
    },
    /// Not a modern server (or one we cannot talk to the modern way): try `initialize`. The
    /// reason is for people.
    Legacy(String),
}

/// The most versions kept from a server's list beyond the ones we speak (see
/// [`named_versions`]).
pub const MAX_NAMED_VERSIONS: usize = 16;

/// The versions a server names (`server/discover`'s `supportedVersions`, a `-32022` error's
/// `data.supported`), as they are kept: they are server text that ends up in log lines and
/// error messages when none is ours, so each is escaped and bounded ([`server_text`]), and of
/// a long list only the first [`MAX_NAMED_VERSIONS`] are kept, and every one we speak wherever
/// it is. A version we speak is plain ASCII, so escaping never changes whether one matches.
pub fn named_versions<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let ours = |v: &str| {
        MODERN_VERSIONS.contains(&v) || lifecycle::SUPPORTED_PROTOCOL_VERSIONS.contains(&v)
    };
    // Past the bound, each of ours once: a list that repeats one of ours without end must not
    // be kept without end.
    let mut ours_kept: Vec<&str> = Vec::new();
    names
        .into_iter()
        .enumerate()
        .filter(|(i, v)| {
            if *i < MAX_NAMED_VERSIONS {
                return true;
            }
            if !ours(v) || ours_kept.contains(v) {
                return false;
            }
            ours_kept.push(v);
            true
        })
        .map(|(_, v)| server_text(v))
        .collect()
}

/// The versions in a `-32022` error's `data.supported`, as [`named_versions`] keeps them.
pub fn supported_versions(error: &RpcError) -> Option<Vec<String>> {
    let list = error.data.as_ref()?.get("supported")?.as_array()?;
    Some(named_versions(list.iter().filter_map(Value::as_str)))
}

/// The newest modern version in `supported` that we speak.
pub fn shared_modern_version(supported: &[String]) -> Option<String> {
    MODERN_VERSIONS
        .iter()
        .find(|v| supported.iter().any(|s| s == *v))
        .map(|v| (*v).to_owned())
}

/// Reads the JSON-RPC answer to our `server/discover` probe: a result is modern (its content is
/// checked when it is parsed); `-32022` names the versions the server speaks; any other error
/// (method not found, invalid params, a legacy server's "not initialized") means legacy. The
/// rule must not hang on one error code: the revision says so.
pub fn judge_probe(answer: Result<&Value, &RpcError>, asked: &str) -> ProbeVerdict {
    let error = match answer {
        Ok(_) => return ProbeVerdict::Modern,
        Err(error) => error,
    };
    if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION {
        if let Some(supported) = supported_versions(error) {
            return match shared_modern_version(&supported) {
                // Asked for this very version and still refused (a server may refuse the first
                // request of all, as the conformance suite's does): ask once more.
                Some(version) => ProbeVerdict::RetryWith(version),
                None => ProbeVerdict::NoSharedModernVersion { supported },
            };
        }
    }
    ProbeVerdict::Legacy(format!(
        "server/discover ({asked}) was answered with error {}",
        error.code
    ))
}

/// What an error answer to `initialize`, or to any request of a session-era connection, means:
/// a modern-only server refuses the handshake, and every request without the 2026-07-28
/// envelope, with `-32022` and names its versions, which is evidence to switch to the modern era
/// (the version returned).
pub fn judge_initialize_error(error: &RpcError) -> Option<String> {
    if error.code != codes::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    shared_modern_version(&supported_versions(error)?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Found by fuzzing: a list that repeats one of our versions past the bound kept every
    /// repetition (23 of a 40-long list); each of ours is kept once there now.
    #[test]
    fn a_list_repeating_one_of_our_versions_stays_bounded() {
        let mut names = vec!["x"; MAX_NAMED_VERSIONS];
        names.extend(std::iter::repeat_n("2026-07-28", 1000));
        names.push("2025-11-25");
        names.push("2025-11-25");
        let kept = named_versions(names);
        assert_eq!(kept.len(), MAX_NAMED_VERSIONS + 2, "{kept:?}");
        assert_eq!(kept[MAX_NAMED_VERSIONS], "2026-07-28");
        assert_eq!(kept[MAX_NAMED_VERSIONS + 1], "2025-11-25");
    }

    use super::*;

    fn error(code: i64, data: Option<Value>) -> RpcError {
        RpcError {
            code,
            message: "no".into(),
            data,
        }
    }

    #[test]
    fn auto_starts_modern_and_then_goes_where_it_found_the_server() {
        assert_eq!(ProtocolChoice::Auto.first_try(None), Era::Modern);
        assert_eq!(
            ProtocolChoice::Auto.first_try(Some(Era::Legacy)),
            Era::Legacy
        );
        assert_eq!(
            ProtocolChoice::Legacy.first_try(Some(Era::Modern)),
            Era::Legacy
        );
        assert_eq!(
            ProtocolChoice::Modern.first_try(Some(Era::Legacy)),
            Era::Modern
        );
        assert!(ProtocolChoice::Auto.may_fall_back());
        assert!(!ProtocolChoice::Modern.may_fall_back());
        for choice in [
            ProtocolChoice::Auto,
            ProtocolChoice::Legacy,
            ProtocolChoice::Modern,
        ] {
            assert_eq!(ProtocolChoice::parse(choice.name()), Some(choice));
        }
        assert_eq!(ProtocolChoice::parse("2026"), None);
    }

    #[test]
    fn a_probe_result_is_modern_and_any_other_error_is_legacy() {
        assert_eq!(
            judge_probe(Ok(&json!({})), "2026-07-28"),
            ProbeVerdict::Modern
        );
        for code in [-32601, -32602, -32600, -32000, -32001, -32603] {
            let verdict = judge_probe(Err(&error(code, None)), "2026-07-28");
            assert!(
                matches!(verdict, ProbeVerdict::Legacy(_)),
                "{code}: {verdict:?}"
            );
        }
    }

    #[test]
    fn unsupported_version_names_what_to_ask_next() {
        let refuse = |supported: Value| {
            error(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                Some(json!({"supported": supported, "requested": "2026-07-28"})),
            )
        };
        assert_eq!(
            judge_probe(Err(&refuse(json!(["2026-07-28"]))), "2026-07-28"),
            ProbeVerdict::RetryWith("2026-07-28".into())
        );
        assert_eq!(
            judge_probe(
                Err(&refuse(json!(["2099-01-01", "2025-11-25"]))),
                "2026-07-28"
            ),
            ProbeVerdict::NoSharedModernVersion {
                supported: vec!["2099-01-01".into(), "2025-11-25".into()]
            }
        );
        // Without the list, -32022 says nothing we can use.
        let bare = error(codes::UNSUPPORTED_PROTOCOL_VERSION, None);
        assert!(matches!(
            judge_probe(Err(&bare), "2026-07-28"),
            ProbeVerdict::Legacy(_)
        ));
    }

    #[test]
    fn a_modern_only_server_refusing_initialize_is_recognised() {
        let refused = error(
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            Some(json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})),
        );
        assert_eq!(
            judge_initialize_error(&refused).as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(judge_initialize_error(&error(-32602, None)), None);
    }

    /// A `-32022` error's versions are kept as `server/discover`'s are: escaped and bounded.
    #[test]
    fn the_versions_of_an_unsupported_version_error_are_escaped_and_bounded() {
        let mut listed: Vec<Value> = (0..40).map(|i| json!(format!("v{i}\r"))).collect();
        listed.push(json!("2025-06-18"));
        let named = supported_versions(&error(-32022, Some(json!({ "supported": listed }))));
        let named = named.unwrap();
        assert_eq!(named.len(), 17, "the first 16 and ours");
        assert_eq!(named[0], "v0\\r");
        assert_eq!(named[16], "2025-06-18");
    }
}
