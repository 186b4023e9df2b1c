//! Server configuration: how to reach each server ([`ServerConfig`], [`Transport`]), the limits
//! and timings that govern it ([`Settings`]), and loading the `mcpServers` JSON format that
//! Claude Desktop, Cursor and VS Code users already have.
//!
//! Settings are layered: built-in defaults, then the supervisor's global settings
//! ([`SupervisorBuilder::settings`](crate::SupervisorBuilder::settings)), then what each
//! `ServerConfig` overrides.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::error::Error;
use crate::policy::backoff::Backoff;

/// Declares [`Settings`] (every field concrete, with its default), the per-server overrides
/// (every field optional) and a setter for each on [`ServerConfig`], from one list, so that a new
/// setting is one line here.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $field:ident : $ty:ty = $default:expr; )*) => {
        /// Limits and timings of one supervised server.
        ///
        /// `Settings::default()` holds the built-in defaults; set global ones on the supervisor
        /// builder and per-server ones on [`ServerConfig`].
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $field: $default, )* }
            }
        }

        #[derive(Debug, Clone, Default, PartialEq)]
        struct Overrides {
            $( $field: Option<$ty>, )*
        }

        impl Settings {
            fn apply(&self, o: &Overrides) -> Settings {
                Settings { $( $field: o.$field.clone().unwrap_or_else(|| self.$field.clone()), )* }
            }
        }

        impl ServerConfig {
            $(
                $(#[doc = $doc])*
                ///
                /// Overrides the supervisor's global setting for this server.
                pub fn $field(mut self, value: $ty) -> Self {
                    self.overrides.$field = Some(value);
                    self
                }
            )*
        }
    };
}

settings! {
    /// Retries after the first failed start-up attempt before the server is `Failed` (default 3).
    max_connect_retries: u32 = 3;
    /// Backoff between start-up retries (default 500 ms, 1 s, 2 s, +50 % jitter).
    startup_backoff: Backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(2));
    /// Backoff between reconnect attempts after a Ready connection broke (default 100 ms doubling
    /// to 30 s, +50 % jitter). The first reconnect attempt is immediate.
    reconnect_backoff: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
    /// Reconnect attempts after a Ready connection broke before giving up; `None` (the default)
    /// never gives up.
    max_reconnect_attempts: Option<u32> = None;
    /// The first reconnect after a stable connection waits a random time below this, so that
    /// the clients of a restarted server do not all come back in the same instant (only while
    /// `reconnect_backoff` has jitter). `None` (the default): at once for stdio servers, which
    /// are ours alone, and spread over 1 s for HTTP servers, which many clients share.
    first_reconnect_spread: Option<Duration> = None;
    /// How long a connection must stay Ready before the reconnect backoff starts from the
    /// beginning again (default 10 s), so a server that crashes right after start-up cannot make
    /// us reconnect in a tight loop.
    stability_window: Duration = Duration::from_secs(10);
    /// Time allowed to spawn the server and complete the handshake (default 30 s).
    connect_timeout: Duration = Duration::from_secs(30);
    /// Timeout of calls that do not set their own (default 60 s).
    call_timeout: Duration = Duration::from_secs(60);
    /// Timeout of the liveness ping sent after a call timed out (default 5 s). A failed ping
    /// marks the connection broken.
    ping_timeout: Duration = Duration::from_secs(5);
    /// Calls in flight plus calls waiting for a connection, per server (default 1024); beyond
    /// it calls fail at once with `Overloaded`.
    max_in_flight: usize = 1024;
    /// Largest message accepted from the server (default 16 MiB); longer lines are dropped and
    /// counted.
    max_message_bytes: usize = 16 * 1024 * 1024;
    /// How long to wait after closing stdin, and again after SIGTERM, before escalating on
    /// shutdown (default 2 s each).
    shutdown_grace: Duration = Duration::from_secs(2);
    /// Lines of the server's stderr kept to attach to connection errors (default 20).
    stderr_tail_lines: usize = 20;
    /// Whether tool annotations from this server (`readOnlyHint`, `idempotentHint`) may be
    /// believed when deciding to re-send a `tools/call` after a reconnect (default false: the
    /// spec says to distrust annotations from untrusted servers).
    trusted: bool = false;
}

/// How to reach an MCP server.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio(StdioConfig),
    /// A remote server speaking MCP Streamable HTTP.
    Http(HttpConfig),
}

/// A Streamable HTTP endpoint.
#[derive(Clone, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `https://mcp.example.com/mcp`.
    pub url: String,
    /// Headers sent with every request, e.g. `Authorization`. Their values never appear in logs
    /// or `Debug` output.
    pub headers: BTreeMap<String, String>,
}

// Header values are credentials more often than not: Debug shows their names only, and the
// URL without its userinfo and query (where hosted servers often put API keys).
impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &redact_url(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A child process to run as an MCP server.
#[derive(Clone, PartialEq)]
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
}

/// Variables passed to child processes when the environment is not inherited.
pub const SAFE_ENV_VARS: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"];

// Environment values often hold API keys: Debug shows their names only.
impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
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
    /// A short name for status tables: `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }
}

/// One MCP server to supervise: its name, how to reach it, and setting overrides.
///
/// ```
/// use mcp_supervisor::ServerConfig;
/// use std::time::Duration;
///
/// let fs = ServerConfig::stdio("fs", "npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv"])
///     .env("LOG_LEVEL", "warn")
///     .call_timeout(Duration::from_secs(10))
///     .max_connect_retries(5);
/// assert_eq!(fs.name(), "fs");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    name: String,
    transport: Transport,
    overrides: Overrides,
    /// A builder method that does not fit the transport (e.g. `args` on an HTTP server),
    /// reported by `validate`.
    misuse: Option<&'static str>,
}

impl ServerConfig {
    /// A server started as a child process running `command`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        ServerConfig {
            name: name.into(),
            transport: Transport::Stdio(StdioConfig {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                inherit_env: false,
            }),
            overrides: Overrides::default(),
            misuse: None,
        }
    }

    /// A server reached over MCP Streamable HTTP at `url`.
    ///
    /// ```
    /// use mcp_supervisor::ServerConfig;
    ///
    /// let search = ServerConfig::http("search", "https://mcp.example.com/mcp")
    ///     .bearer_token("s3cret")
    ///     .header("X-Team", "infra");
    /// assert!(!format!("{search:?}").contains("s3cret"));
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig {
            name: name.into(),
            transport: Transport::Http(HttpConfig {
                url: url.into(),
                headers: BTreeMap::new(),
            }),
            overrides: Overrides::default(),
            misuse: None,
        }
    }

    /// Adds a header sent with every request (HTTP only).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            Transport::Http(http) => {
                http.headers.insert(name.into(), value.into());
            }
            Transport::Stdio(_) => self.misuse = Some("header"),
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (HTTP only).
    pub fn bearer_token(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.header("Authorization", value)
    }

    fn stdio_mut(&mut self, method: &'static str) -> Option<&mut StdioConfig> {
        match &mut self.transport {
            Transport::Stdio(stdio) => Some(stdio),
            Transport::Http(_) => {
                self.misuse = Some(method);
                None
            }
        }
    }

    /// The server's name, unique within a supervisor.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the server is reached.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Appends arguments to the command (stdio only).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let Some(stdio) = self.stdio_mut("args") {
            stdio.args.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the child (stdio only).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Some(stdio) = self.stdio_mut("env") {
            stdio.env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the child's working directory (stdio only).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Some(stdio) = self.stdio_mut("cwd") {
            stdio.cwd = Some(dir.into());
        }
        self
    }

    /// Passes this process's whole environment to the child (stdio only).
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        if let Some(stdio) = self.stdio_mut("inherit_env") {
            stdio.inherit_env = inherit;
        }
        self
    }

    /// The settings in force for this server, given the supervisor's global ones.
    pub fn settings(&self, global: &Settings) -> Settings {
        global.apply(&self.overrides)
    }

    /// Checks the parts of the configuration that can be wrong before anything runs.
    pub fn validate(&self) -> Result<(), Error> {
        let name = Some(self.name.as_str());
        if self.name.trim().is_empty() {
            return Err(Error::config(
                None,
                "name",
                "a server name must not be empty",
            ));
        }
        if let Some(field) = self.misuse {
            let kind = self.transport.kind();
            return Err(Error::config(
                name,
                field,
                format!("does not apply to a server over {kind}"),
            ));
        }
        match &self.transport {
            Transport::Stdio(stdio) => {
                if stdio.command.trim().is_empty() {
                    return Err(Error::config(name, "command", "must not be empty"));
                }
            }
            Transport::Http(http) => validate_http(name, http)?,
        }
        if self.overrides.max_in_flight == Some(0) {
            return Err(Error::config(name, "max_in_flight", "must be at least 1"));
        }
        if self.overrides.max_message_bytes.is_some_and(|n| n < 1024) {
            return Err(Error::config(
                name,
                "max_message_bytes",
                "must be at least 1024",
            ));
        }
        Ok(())
    }

    /// Parses an `mcpServers` JSON document, as written for Claude Desktop, Cursor or VS Code:
    ///
    /// ```
    /// use mcp_supervisor::ServerConfig;
    ///
    /// let servers = ServerConfig::from_mcp_servers_json(r#"{
    ///   "mcpServers": {
    ///     "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"] },
    ///     "off": { "command": "x", "disabled": true }
    ///   }
    /// }"#)?;
    /// assert_eq!(servers.len(), 1);
    /// assert_eq!(servers[0].name(), "fs");
    /// # Ok::<(), mcp_supervisor::Error>(())
    /// ```
    ///
    /// The top-level key may be `mcpServers` or VS Code's `servers`. A stdio server takes
    /// `command`, `args`, `env`, `cwd`, and optionally `type: "stdio"`; an HTTP server takes
    /// `type: "http"` (or `"streamable-http"`, or just a `url`), `url` and `headers`. Any server
    /// may say `disabled: true`. `type: "sse"`, the legacy HTTP+SSE transport, is rejected.
    /// Errors name the server and the field.
    pub fn from_mcp_servers_json(json: &str) -> Result<Vec<ServerConfig>, Error> {
        let doc: Value = serde_json::from_str(json)
            .map_err(|e| Error::config(None, "(document)", format!("not valid JSON: {e}")))?;
        let Some(root) = doc.as_object() else {
            return Err(Error::config(None, "(document)", "expected a JSON object"));
        };
        let (key, servers) = match (root.get("mcpServers"), root.get("servers")) {
            (Some(s), _) => ("mcpServers", s),
            (None, Some(s)) => ("servers", s),
            (None, None) => {
                return Err(Error::config(
                    None,
                    "mcpServers",
                    "missing: expected {\"mcpServers\": {\"name\": {\"command\": ...}}}",
                ))
            }
        };
        let Some(servers) = servers.as_object() else {
            return Err(Error::config(None, key, "expected an object of servers"));
        };
        let mut out = Vec::with_capacity(servers.len());
        for (name, entry) in servers {
            if let Some(config) = parse_server(key, name, entry)? {
                out.push(config);
            }
        }
        Ok(out)
    }

    /// Reads and parses an `mcpServers` JSON file (see [`ServerConfig::from_mcp_servers_json`]).
    pub fn from_mcp_servers_file(path: impl AsRef<Path>) -> Result<Vec<ServerConfig>, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::config(
                None,
                "(file)",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Self::from_mcp_servers_json(&text)
    }
}

/// One entry of an `mcpServers` object; `None` for a disabled server.
fn parse_server(key: &str, name: &str, entry: &Value) -> Result<Option<ServerConfig>, Error> {
    let server = Some(name);
    let field = |f: &str| format!("{key}.{name}.{f}");
    let Some(obj) = entry.as_object() else {
        return Err(Error::config(
            server,
            format!("{key}.{name}"),
            "expected an object",
        ));
    };
    if let Some(disabled) = obj.get("disabled") {
        match disabled.as_bool() {
            Some(true) => return Ok(None),
            Some(false) => {}
            None => {
                return Err(Error::config(
                    server,
                    field("disabled"),
                    "expected true or false",
                ))
            }
        }
    }
    let kind = match obj.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(Error::config(server, field("type"), "expected a string")),
    };
    match kind {
        None if obj.contains_key("url") && !obj.contains_key("command") => {
            return parse_http(name, obj, &field).map(Some)
        }
        None | Some("stdio") => {}
        Some("http" | "streamable-http" | "streamableHttp") => {
            return parse_http(name, obj, &field).map(Some)
        }
        Some("sse") => {
            return Err(Error::config(
                server,
                field("type"),
                "the legacy HTTP+SSE transport is not supported; use Streamable HTTP (\"type\": \"http\")",
            ))
        }
        Some(other) => {
            return Err(Error::config(
                server,
                field("type"),
                format!("unknown transport `{other}` (expected \"stdio\" or \"http\")"),
            ))
        }
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(Value::String(_)) => {
            return Err(Error::config(server, field("command"), "must not be empty"))
        }
        Some(_) => return Err(Error::config(server, field("command"), "expected a string")),
        None => return Err(Error::config(server, field("command"), "missing")),
    };
    let mut config = ServerConfig::stdio(name, command);
    match obj.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(args)) => {
            let mut parsed = Vec::with_capacity(args.len());
            for (i, arg) in args.iter().enumerate() {
                match arg {
                    Value::String(s) => parsed.push(s.clone()),
                    _ => {
                        return Err(Error::config(
                            server,
                            field(&format!("args[{i}]")),
                            "expected a string",
                        ))
                    }
                }
            }
            config = config.args(parsed);
        }
        Some(_) => {
            return Err(Error::config(
                server,
                field("args"),
                "expected an array of strings",
            ))
        }
    }
    for (k, v) in string_map(obj, "env", server, &field)? {
        config = config.env(k, v);
    }
    match obj.get("cwd") {
        None | Some(Value::Null) => {}
        Some(Value::String(dir)) => config = config.cwd(dir),
        Some(_) => return Err(Error::config(server, field("cwd"), "expected a string")),
    }
    Ok(Some(config))
}

/// An HTTP entry of an `mcpServers` object: `url` and optional `headers`.
fn parse_http(
    name: &str,
    obj: &serde_json::Map<String, Value>,
    field: &dyn Fn(&str) -> String,
) -> Result<ServerConfig, Error> {
    let server = Some(name);
    let url = match obj.get("url") {
        Some(Value::String(url)) => url,
        Some(_) => return Err(Error::config(server, field("url"), "expected a string")),
        None => return Err(Error::config(server, field("url"), "missing")),
    };
    let mut config = ServerConfig::http(name, url.as_str());
    for (k, v) in string_map(obj, "headers", server, field)? {
        config = config.header(k, v);
    }
    config.validate()?;
    Ok(config)
}

/// A URL fit for logs: without `user:password@` and without the query string, where API keys
/// tend to live.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let hidden = if authority.contains('@') { "***@" } else { "" };
    let query = if url.contains('?') { "?***" } else { "" };
    if scheme.is_empty() {
        format!("{hidden}{host}{path}{query}")
    } else {
        format!("{scheme}://{hidden}{host}{path}{query}")
    }
}

/// An optional object of strings (`env`, `headers`) of an `mcpServers` entry.
fn string_map<'a>(
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
    server: Option<&str>,
    field: &dyn Fn(&str) -> String,
) -> Result<Vec<(&'a String, &'a String)>, Error> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                _ => Err(Error::config(
                    server,
                    field(&format!("{key}.{k}")),
                    "expected a string",
                )),
            })
            .collect(),
        Some(_) => Err(Error::config(server, field(key), "expected an object")),
    }
}

fn validate_http(server: Option<&str>, http: &HttpConfig) -> Result<(), Error> {
    let url = http.url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => {}
        _ => {
            return Err(Error::config(
                server,
                "url",
                format!("`{url}` is not an http:// or https:// URL"),
            ))
        }
    }
    for (k, v) in &http.headers {
        let name_ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !name_ok {
            return Err(Error::config(
                server,
                format!("headers.{k}"),
                "not a valid header name",
            ));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            // The value is not shown: it may be a credential.
            return Err(Error::config(
                server,
                format!("headers.{k}"),
                "the value contains a line break",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_layer_on_global_settings() {
        let global = Settings {
            max_connect_retries: 7,
            ..Settings::default()
        };
        let cfg = ServerConfig::stdio("a", "x").call_timeout(Duration::from_secs(1));
        let s = cfg.settings(&global);
        assert_eq!(s.max_connect_retries, 7);
        assert_eq!(s.call_timeout, Duration::from_secs(1));
        assert_eq!(s.ping_timeout, Settings::default().ping_timeout);
    }

    #[test]
    fn parses_claude_desktop_format() {
        let servers = ServerConfig::from_mcp_servers_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "/srv"], "env": {"K": "v"}, "cwd": "/tmp"},
                "mem": {"type": "stdio", "command": "node", "args": []}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let Transport::Stdio(fs) = servers[0].transport() else {
            panic!()
        };
        assert_eq!(fs.command, "npx");
        assert_eq!(fs.args, ["-y", "pkg", "/srv"]);
        assert_eq!(fs.env.get("K").map(String::as_str), Some("v"));
        assert_eq!(fs.cwd.as_deref(), Some(Path::new("/tmp")));
        assert_eq!(servers[1].name(), "mem");
    }

    #[test]
    fn accepts_vscode_servers_key() {
        let servers =
            ServerConfig::from_mcp_servers_json(r#"{"servers": {"a": {"command": "x"}}}"#).unwrap();
        assert_eq!(servers[0].name(), "a");
    }

    #[test]
    fn errors_name_server_and_field() {
        let cases = [
            (
                r#"{"mcpServers": {"fs": {"args": []}}}"#,
                "mcpServers.fs.command",
            ),
            (
                r#"{"mcpServers": {"fs": {"command": 3}}}"#,
                "mcpServers.fs.command",
            ),
            (
                r#"{"mcpServers": {"fs": {"command": "x", "args": ["a", 1]}}}"#,
                "mcpServers.fs.args[1]",
            ),
            (
                r#"{"mcpServers": {"fs": {"command": "x", "env": {"K": 1}}}}"#,
                "mcpServers.fs.env.K",
            ),
            (
                r#"{"mcpServers": {"fs": {"type": "sse", "url": "http://x"}}}"#,
                "mcpServers.fs.type",
            ),
            (
                r#"{"mcpServers": {"fs": {"type": "http"}}}"#,
                "mcpServers.fs.url",
            ),
            (
                r#"{"mcpServers": {"fs": {"type": "http", "url": 3}}}"#,
                "mcpServers.fs.url",
            ),
            (r#"{"mcpServers": {"fs": {"url": "ftp://x"}}}"#, "url"),
            (
                r#"{"mcpServers": {"fs": {"url": "http://x", "headers": {"A": 1}}}}"#,
                "mcpServers.fs.headers.A",
            ),
            (r#"{"mcpServers": {"fs": "npx"}}"#, "mcpServers.fs"),
        ];
        for (json, want_field) in cases {
            match ServerConfig::from_mcp_servers_json(json) {
                Err(Error::Config { server, field, .. }) => {
                    assert_eq!(server.as_deref(), Some("fs"), "{json}");
                    assert_eq!(field, want_field, "{json}");
                }
                other => panic!("{json}: expected a config error, got {other:?}"),
            }
        }
        assert!(ServerConfig::from_mcp_servers_json("not json").is_err());
        assert!(ServerConfig::from_mcp_servers_json("[]").is_err());
        assert!(ServerConfig::from_mcp_servers_json("{}").is_err());
    }

    #[test]
    fn parses_http_servers() {
        let servers = ServerConfig::from_mcp_servers_json(
            r#"{"mcpServers": {
                "a": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t"}},
                "b": {"type": "streamable-http", "url": "http://127.0.0.1:8080/mcp"},
                "c": {"url": "http://c.example/mcp"}
            }}"#,
        )
        .unwrap();
        let kinds: Vec<_> = servers.iter().map(|s| s.transport().kind()).collect();
        assert_eq!(kinds, ["http", "http", "http"]);
        let Transport::Http(a) = servers[0].transport() else {
            panic!()
        };
        assert_eq!(a.url, "https://a.example/mcp");
        assert_eq!(
            a.headers.get("Authorization").map(String::as_str),
            Some("Bearer t")
        );
        assert!(!format!("{:?}", servers[0]).contains("Bearer t"));
    }

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
    fn stdio_options_on_http_servers_are_rejected() {
        let e = ServerConfig::http("h", "http://x/mcp")
            .args(["a"])
            .validate()
            .unwrap_err();
        assert!(
            matches!(e, Error::Config { ref field, .. } if field == "args"),
            "{e}"
        );
        let e = ServerConfig::stdio("s", "x")
            .bearer_token("t")
            .validate()
            .unwrap_err();
        assert!(
            matches!(e, Error::Config { ref field, .. } if field == "header"),
            "{e}"
        );
        let e = ServerConfig::http("h", "http://x/mcp")
            .header("X", "a\nb")
            .validate()
            .unwrap_err();
        assert!(!e.to_string().contains("a\nb"));
    }

    #[test]
    fn debug_hides_env_values() {
        let cfg = ServerConfig::stdio("a", "x").env("API_KEY", "sekrit");
        let shown = format!("{cfg:?}");
        assert!(shown.contains("API_KEY"));
        assert!(!shown.contains("sekrit"));
    }

    #[test]
    fn validate_rejects_empty_command_and_zero_limits() {
        assert!(ServerConfig::stdio("a", " ").validate().is_err());
        assert!(ServerConfig::stdio("", "x").validate().is_err());
        assert!(ServerConfig::stdio("a", "x")
            .max_in_flight(0)
            .validate()
            .is_err());
        assert!(ServerConfig::stdio("a", "x").validate().is_ok());
    }
}
