//! How to reach a server: the [`Transport`] enum with its [`StdioConfig`] and [`HttpConfig`]
//! (and its [`HttpMode`]: Streamable HTTP, the legacy HTTP+SSE transport, or either), the
//! variables a child gets by default ([`SAFE_ENV_VARS`]), and [`redact_url`].
//!
//! Its own room because these types hold credentials (environment values, header values, keys
//! in URLs, arguments expanded from variables): their hand-written `Debug` impls and the URL redaction that logs use live together,
//! so that what may be shown is decided in one place.

use crate::error::Error;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// How to reach an MCP server.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio(StdioConfig),
    /// A remote server speaking MCP over HTTP: Streamable HTTP, or the legacy HTTP+SSE
    /// transport of revision 2024-11-05 ([`HttpConfig::mode`]).
    Http(HttpConfig),
}

/// An HTTP endpoint.
#[derive(Clone, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `https://mcp.example.com/mcp`; for the legacy HTTP+SSE
    /// transport, its SSE stream, e.g. `https://mcp.example.com/sse`.
    pub url: String,
    /// Which HTTP transport the server speaks: [`HttpMode::Auto`] (the default) finds out.
    pub mode: HttpMode,
    /// Headers sent with every request, e.g. `Authorization`. Their values never appear in logs
    /// or `Debug` output.
    pub headers: BTreeMap<String, String>,
    /// OAuth authorization (MCP's authorization profile), if the server needs it (boxed:
    /// most servers have none).
    #[cfg(feature = "http")]
    pub oauth: Option<Box<super::OAuthConfig>>,
}

/// Which of MCP's HTTP transports a server is spoken to with.
///
/// The legacy HTTP+SSE transport is a mode of [`HttpConfig`], not a [`Transport`] of its own:
/// it is reached by URL with the same headers and OAuth as Streamable HTTP, and `auto` picks
/// between the two at connect time, which a choice between two transports could not express.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpMode {
    /// Streamable HTTP first; if the server refuses the first `initialize` POST with 400, 404
    /// or 405, the legacy HTTP+SSE transport at the same URL, as the spec's
    /// backwards-compatibility section says. What the server turned out to speak is tried
    /// first on every reconnect. The default.
    #[default]
    Auto,
    /// Streamable HTTP only (protocol revisions 2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport of revision 2024-11-05 only: a GET opens an SSE stream
    /// whose `endpoint` event names the URL every message is POSTed to; everything the server
    /// sends comes on that stream. It carries the session era (the `initialize` handshake)
    /// only, never the stateless 2026-07-28 revision.
    Sse,
}

impl HttpMode {
    /// The mode's name as written in configuration: `auto`, `streamable-http` or `sse`.
    pub fn name(self) -> &'static str {
        match self {
            HttpMode::Auto => "auto",
            HttpMode::StreamableHttp => "streamable-http",
            HttpMode::Sse => "sse",
        }
    }
}

// Header values are credentials more often than not: Debug shows their names only, and the
// URL without its userinfo and query (where hosted servers often put API keys), its path as
// written when it held variables.
impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("HttpConfig");
        f.field("url", &redact_url(&self.url))
            .field("mode", &self.mode)
            .field("headers", &self.headers.keys().collect::<Vec<_>>());
        #[cfg(feature = "http")]
        f.field("oauth", &self.oauth);
        f.finish()
    }
}

/// A child process to run as an MCP server.
#[derive(Clone)]
pub struct StdioConfig {
    /// The program to run, looked up in `PATH` when it has no `/`.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it, on top of the inherited ones.
    pub env: BTreeMap<String, String>,
    /// Its working directory; the supervisor's when `None`.
    pub cwd: Option<PathBuf>,
    /// Pass the whole environment of this process to the child (default false: only
    /// [`SAFE_ENV_VARS`] and `env`, so that secrets in the service's environment do not leak
    /// into third-party servers).
    pub inherit_env: bool,
    /// How `Debug` shows the arguments that were expanded from variables (by their index): as
    /// written in the configuration file (`--api-key=${KEY}`), since their values may be secrets.
    pub(super) shown_args: BTreeMap<usize, String>,
}

// Equal when they run the same thing: how arguments are shown is no part of it.
impl PartialEq for StdioConfig {
    fn eq(&self, other: &Self) -> bool {
        self.command == other.command
            && self.args == other.args
            && self.env == other.env
            && self.cwd == other.cwd
            && self.inherit_env == other.inherit_env
    }
}

/// Variables passed to child processes when the environment is not inherited.
pub const SAFE_ENV_VARS: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"];

// Environment values often hold API keys: Debug shows their names only. Arguments expanded from
// variables are shown as written (`--token=${TOKEN}`), not as what they expanded to.
impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<&String> = (self.args.iter().enumerate())
            .map(|(i, arg)| self.shown_args.get(&i).unwrap_or(arg))
            .collect();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("inherit_env", &self.inherit_env)
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio(s) => s.fmt(f),
            Transport::Http(h) => h.fmt(f),
        }
    }
}

impl Transport {
    /// A short name for status tables: `stdio`, `http`, or `sse` for a server configured with
    /// the legacy HTTP+SSE transport ([`HttpMode::Sse`]). (The status of an `auto` server
    /// that turned out to speak the legacy transport says `sse` too.)
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(HttpConfig {
                mode: HttpMode::Sse,
                ..
            }) => "sse",
            Transport::Http(_) => "http",
        }
    }

    /// The cargo feature this transport needs: `stdio` or `http`.
    pub fn feature(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }

    /// Whether this build can connect over this transport: each has its cargo feature
    /// (`stdio`, `http`; both on by default).
    pub fn is_compiled_in(&self) -> bool {
        match self {
            Transport::Stdio(_) => cfg!(feature = "stdio"),
            Transport::Http(_) => cfg!(feature = "http"),
        }
    }
}

/// The error for a server over a transport this build was compiled without.
pub(crate) fn missing_transport(server: &str, transport: &Transport) -> Error {
    let kind = transport.kind();
    let feature = transport.feature();
    Error::config(
        Some(server),
        "transport",
        format!("this build has no {kind} transport: enable the `{feature}` cargo feature of mcp-supervisor"),
    )
}

/// A URL fit for logs: without `user:password@` and without the query string, where API keys
/// tend to live; and with the path of a configured URL that held variables as it was written
/// (see [`show_path_as_written`]), wherever it appears in this one.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, authority, path) = parts(url);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let hidden = if authority.contains('@') { "***@" } else { "" };
    let query = if url.contains('?') { "?***" } else { "" };
    let mut path = path.to_owned();
    if let Ok(written) = WRITTEN_PATHS.read() {
        for (expanded, as_written) in written.iter() {
            if path.contains(expanded.as_str()) {
                path = path.replace(expanded.as_str(), as_written);
            }
        }
    }
    if scheme.is_empty() {
        format!("{hidden}{host}{path}{query}")
    } else {
        format!("{scheme}://{hidden}{host}{path}{query}")
    }
}

/// What a variable must expand to, at least, to be hidden in a path: keys are longer.
const MIN_KEY_LEN: usize = 8;

/// How many items two sequences share at their start.
fn common(a: impl Iterator<Item = u8>, b: impl Iterator<Item = u8>) -> usize {
    a.zip(b).take_while(|(x, y)| x == y).count()
}

/// A URL's scheme, authority and path (without query and fragment).
fn parts(url: &str) -> (&str, &str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    (scheme, authority, path)
}

/// The paths of configured URLs that held variables, expanded and as written. A key in a path
/// (`https://host/${KEY}/sse`) is no part of what [`redact_url`] can tell by its shape, and the
/// URLs made from a server's URL — the OAuth metadata URL puts its path after
/// `/.well-known/oauth-protected-resource` — are put together and quoted deep in code that
/// knows no configuration: so the loader tells them here, once per URL, and every URL shown
/// shows such a path as written. Process-wide and bounded (a configuration has a few).
static WRITTEN_PATHS: std::sync::RwLock<Vec<(String, String)>> = std::sync::RwLock::new(Vec::new());
const MAX_WRITTEN_PATHS: usize = 1024;

/// `url` was expanded from `template`: if their paths differ, `url`'s path is shown as written
/// wherever a shown URL holds it (see [`WRITTEN_PATHS`]).
pub(crate) fn show_path_as_written(url: &str, template: &str) {
    let (_, _, expanded) = parts(url);
    let (_, _, as_written) = parts(template);
    // What the variables in the path became: what differs between the two. A short value
    // (`/${VERSION}/mcp`) is no key, and hiding it would garble other URLs that hold it.
    let same_start = common(expanded.bytes(), as_written.bytes());
    let same_end = common(expanded.bytes().rev(), as_written.bytes().rev());
    let value = expanded.len().saturating_sub(same_start + same_end);
    if !as_written.contains('$') || value < MIN_KEY_LEN {
        return;
    }
    let Ok(mut written) = WRITTEN_PATHS.write() else {
        return;
    };
    if written.len() < MAX_WRITTEN_PATHS && !written.iter().any(|(e, _)| e == expanded) {
        written.push((expanded.to_owned(), as_written.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerConfig;

    #[test]
    fn urls_in_logs_lose_their_credentials() {
        assert_eq!(
            redact_url("https://u:pw@h.example:8443/mcp?key=s3cret#x"),
            "https://***@h.example:8443/mcp?***"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:80/mcp"),
            "http://127.0.0.1:80/mcp"
        );
        assert_eq!(redact_url("http://h"), "http://h");
        let cfg = ServerConfig::http("h", "https://h.example/mcp?api_key=s3cret");
        assert!(!format!("{cfg:?}").contains("s3cret"));
    }

    #[test]
    fn a_path_is_shown_as_written_only_where_a_key_went_into_it() {
        show_path_as_written(
            "https://h.example/k3y-0f-a-t3st-only/mcp",
            "https://h.example/${SHOWN_KEY}/mcp",
        );
        assert_eq!(
            redact_url("https://other.example/.well-known/x/k3y-0f-a-t3st-only/mcp"),
            "https://other.example/.well-known/x/${SHOWN_KEY}/mcp"
        );
        // A short value is no key; a URL that is one variable has no path as written.
        show_path_as_written("https://h.example/v2/mcp", "https://h.example/${V}/mcp");
        show_path_as_written("https://h.example/whole-url-path", "${WHOLE_URL}");
        assert_eq!(
            redact_url("https://h.example/v2/mcp"),
            "https://h.example/v2/mcp"
        );
        assert_eq!(
            redact_url("https://h.example/whole-url-path"),
            "https://h.example/whole-url-path"
        );
    }

    #[test]
    #[cfg(feature = "http")] // HTTP entries are refused by a build without `http`
    fn an_entrys_type_picks_the_http_mode() {
        let json = r#"{"mcpServers": {
            "a": {"url": "http://h/mcp"},
            "b": {"type": "http", "url": "http://h/mcp"},
            "c": {"type": "streamable-http", "url": "http://h/mcp"},
            "d": {"type": "sse", "url": "http://h/sse"}
        }}"#;
        let servers = ServerConfig::from_mcp_servers_json(json).unwrap();
        let modes: Vec<_> = servers
            .iter()
            .map(|s| match s.transport() {
                Transport::Http(h) => (h.mode, s.transport().kind()),
                Transport::Stdio(_) => panic!("{s:?}"),
            })
            .collect();
        assert_eq!(
            modes,
            [
                (HttpMode::Auto, "http"),
                (HttpMode::Auto, "http"),
                (HttpMode::StreamableHttp, "http"),
                (HttpMode::Sse, "sse"),
            ]
        );
        // The feature a legacy server needs is `http`, not `sse`.
        assert_eq!(servers[3].transport().feature(), "http");
    }

    #[test]
    fn debug_hides_env_values() {
        let cfg = ServerConfig::stdio("a", "x").env("API_KEY", "sekrit");
        let shown = format!("{cfg:?}");
        assert!(shown.contains("API_KEY"));
        assert!(!shown.contains("sekrit"));
    }
}
