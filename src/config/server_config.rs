//! [`ServerConfig`]: one server's name, how to reach it, and its setting overrides, with the
//! builder methods that set them.
//!
//! The setting overrides' own setters are generated in [`settings`](super::settings), the
//! checks are in [`validate`](super::validate), and the `mcpServers` loader is in
//! [`mcp_servers`](super::mcp_servers).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::settings::Overrides;
use super::transport::{HttpConfig, HttpMode, StdioConfig, Transport};

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
    pub(super) name: String,
    pub(super) transport: Transport,
    pub(super) overrides: Overrides,
    /// A builder method that does not fit the transport (e.g. `args` on an HTTP server),
    /// reported by `validate`.
    pub(super) misuse: Option<&'static str>,
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
                shown_args: BTreeMap::new(),
            }),
            overrides: Overrides::default(),
            misuse: None,
        }
    }

    /// A server reached over HTTP at `url`: Streamable HTTP, or, if the server refuses the
    /// first `initialize` POST with 400, 404 or 405, the legacy HTTP+SSE transport of revision
    /// 2024-11-05 at the same URL ([`HttpMode::Auto`]; [`http_mode`](Self::http_mode) pins
    /// one).
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
                mode: HttpMode::Auto,
                headers: BTreeMap::new(),
                #[cfg(feature = "http")]
                oauth: None,
            }),
            overrides: Overrides::default(),
            misuse: None,
        }
    }

    /// A server reached over the legacy HTTP+SSE transport of revision 2024-11-05, whose SSE
    /// stream is at `url` (often `.../sse`): [`http`](Self::http) with [`HttpMode::Sse`].
    ///
    /// ```
    /// use mcp_supervisor::ServerConfig;
    ///
    /// let old = ServerConfig::sse("old", "https://mcp.example.com/sse");
    /// assert_eq!(old.transport().kind(), "sse");
    /// ```
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::http(name, url).http_mode(HttpMode::Sse)
    }

    /// Which HTTP transport the server is spoken to with (HTTP only; the default is
    /// [`HttpMode::Auto`]).
    pub fn http_mode(mut self, mode: HttpMode) -> Self {
        match &mut self.transport {
            Transport::Http(http) => http.mode = mode,
            Transport::Stdio(_) => self.misuse = Some("http_mode"),
        }
        self
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

    /// Authorizes with MCP's OAuth profile (HTTP only): on a `401` the server's authorization
    /// server is discovered and a token obtained as `oauth` says, then sent with every request
    /// and refreshed ahead of its expiry.
    ///
    /// ```
    /// use mcp_supervisor::config::OAuthConfig;
    /// use mcp_supervisor::ServerConfig;
    ///
    /// let crm = ServerConfig::http("crm", "https://mcp.example.com/mcp")
    ///     .oauth(OAuthConfig::client_credentials("svc", "s3cret"));
    /// assert!(!format!("{crm:?}").contains("s3cret"));
    /// ```
    #[cfg(feature = "http")]
    pub fn oauth(mut self, oauth: super::OAuthConfig) -> Self {
        match &mut self.transport {
            Transport::Http(http) => http.oauth = Some(Box::new(oauth)),
            Transport::Stdio(_) => self.misuse = Some("oauth"),
        }
        self
    }

    /// Sets the [`Authorizer`](crate::auth::Authorizer) of this server's OAuth configuration
    /// (one loaded from an `mcpServers` file has none), or authorizes with the authorization
    /// code grant through it if the server had no OAuth configuration (HTTP only).
    #[cfg(feature = "http")]
    pub fn oauth_authorizer(mut self, authorizer: impl crate::auth::Authorizer) -> Self {
        match &mut self.transport {
            Transport::Http(http) => {
                let oauth = match http.oauth.take() {
                    Some(oauth) => oauth.authorizer(authorizer),
                    None => super::OAuthConfig::authorization_code(authorizer),
                };
                http.oauth = Some(Box::new(oauth));
            }
            Transport::Stdio(_) => self.misuse = Some("oauth_authorizer"),
        }
        self
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
}
