//! One entry of an `mcpServers` object: every host's keys for it, read into a [`ServerConfig`]
//! or an [`Error::Config`] whose field is the JSON path (`mcpServers.fs.args[1]`).
//!
//! Its own room because this is where the hosts' formats meet: Claude's `command`/`args`/
//! `env`/`type`, Cursor's and VS Code's `envFile`, VS Code's `enabled`, Windsurf's
//! `serverUrl`, Claude Code's `oauth`, our own `"mcp-supervisor"` key. Keys that no host gives a meaning we could
//! use (`autoApprove`, `disabledTools`, `timeout`, VS Code's `dev`, ...) are ignored, as the
//! hosts ignore each other's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::expand::{Expanded, Vars};
use super::own_settings::{self, OWN_KEY};
use super::{env_file, ServerConfig};
use crate::config::transport::show_path_as_written;
#[cfg(feature = "http")]
use crate::config::OAuthConfig;
use crate::config::{HttpMode, Settings, Transport};
use crate::error::Error;

/// What an entry is for the loader.
pub(super) enum Entry {
    /// A server to run.
    Server(Box<ServerConfig>),
    /// `"disabled": true` or `"enabled": false`.
    Disabled,
}

/// What every entry of one document is read with.
pub(super) struct Context<'a> {
    /// The JSON path of the servers object (`mcpServers`, `servers` or
    /// `projects["/path"].mcpServers`), the start of every path.
    pub(super) key: &'a str,
    pub(super) vars: Vars<'a>,
    /// The folder relative `envFile` paths are relative to, if any.
    pub(super) base_dir: Option<&'a Path>,
    /// The settings the entry is checked under.
    pub(super) settings: &'a Settings,
}

/// Reads one entry. Its errors name the server and the JSON path of the field.
pub(super) fn parse(ctx: &Context<'_>, name: &str, value: &Value) -> Result<Entry, Error> {
    let at = At { ctx, name };
    let Some(obj) = value.as_object() else {
        return Err(Error::config(
            Some(name),
            format!("{}.{name}", ctx.key),
            "expected an object",
        ));
    };
    if is_off(&at, obj)? {
        return Ok(Entry::Disabled);
    }
    let kind = match obj.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(at.error("type", "expected a string")),
    };
    let url_key = match (obj.contains_key("url"), obj.contains_key("serverUrl")) {
        (true, true) => {
            return Err(at.error(
                "serverUrl",
                "both `url` and `serverUrl` are given: keep one",
            ))
        }
        (true, false) => Some("url"),
        (false, true) => Some("serverUrl"),
        (false, false) => None,
    };
    // An HTTP entry's mode: a URL alone, or `"http"` (which VS Code also reads this way),
    // tries Streamable HTTP and falls back to the legacy HTTP+SSE transport.
    let http = match kind {
        None if url_key.is_some() && !obj.contains_key("command") => Some(HttpMode::Auto),
        None | Some("stdio") => None,
        Some("http") => Some(HttpMode::Auto),
        Some("streamable-http" | "streamableHttp") => Some(HttpMode::StreamableHttp),
        Some("sse") => Some(HttpMode::Sse),
        Some(other) => {
            return Err(at.error(
                "type",
                format!("unknown transport `{other}` (expected \"stdio\", \"http\" or \"sse\")"),
            ))
        }
    };
    let mut shown = Shown {
        url_key: url_key.unwrap_or("url"),
        url: None,
    };
    let mut config = match http {
        Some(mode) => parse_http(&at, obj, &mut shown)?.http_mode(mode),
        None => parse_stdio(&at, obj)?,
    };
    apply_own_settings(&at, obj, &mut config)?;
    config
        .validate_with(ctx.settings)
        .map_err(|e| at.reword(e, &shown))?;
    Ok(Entry::Server(Box::new(config)))
}

/// `disabled: true` (Claude, Cursor, Windsurf) or `enabled: false` (VS Code).
fn is_off(at: &At<'_>, obj: &Map<String, Value>) -> Result<bool, Error> {
    let flag = |key: &str| match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(at.error(key, "expected true or false")),
    };
    Ok(flag("disabled")? == Some(true) || flag("enabled")? == Some(false))
}

/// What the JSON path of an entry's fields starts with, and how its errors are worded.
struct At<'a> {
    ctx: &'a Context<'a>,
    name: &'a str,
}

/// How validation's errors are worded: the URL's key, and what must not be shown (fields
/// whose values came from variables).
struct Shown {
    /// The key the URL is under: `url`, or Windsurf's `serverUrl`.
    url_key: &'static str,
    /// The URL as written, when it held a reference.
    url: Option<String>,
}

impl At<'_> {
    fn field(&self, f: &str) -> String {
        format!("{}.{}.{f}", self.ctx.key, self.name)
    }

    fn error(&self, f: &str, message: impl Into<String>) -> Error {
        Error::config(Some(self.name), self.field(f), message)
    }

    /// A string field, expanded (`path`: with a leading `~` too).
    fn expand(&self, f: &str, value: &Value, path: bool) -> Result<Expanded, Error> {
        let Value::String(text) = value else {
            return Err(self.error(f, "expected a string"));
        };
        let vars = &self.ctx.vars;
        let expanded = if path {
            vars.expand_path(text)
        } else {
            vars.expand(text)
        };
        expanded.map_err(|message| self.error(f, message))
    }

    /// An error of [`ServerConfig::validate_with`], with the field as its JSON path, and not
    /// showing a value that came from a variable.
    fn reword(&self, e: Error, shown: &Shown) -> Error {
        let Error::Config { field, message, .. } = e else {
            return e;
        };
        let (field, message) = match field.as_str() {
            "url" => match &shown.url {
                Some(template) => (
                    self.field(shown.url_key),
                    format!("`{template}` does not expand to a valid http:// or https:// URL"),
                ),
                None => (self.field(shown.url_key), message),
            },
            "command" => (self.field("command"), message),
            f if f.starts_with("headers.") => (self.field(f), message),
            f => match own_settings::json_key_of(f) {
                Some(key) if message.ends_with("(this server's own setting)") => {
                    (self.field(&format!("{OWN_KEY}.{key}")), message)
                }
                _ => (field, message),
            },
        };
        Error::config(Some(self.name), field, message)
    }
}

/// A stdio entry: `command`, `args`, `envFile`, `env`, `cwd`.
fn parse_stdio(at: &At<'_>, obj: &Map<String, Value>) -> Result<ServerConfig, Error> {
    let command = match obj.get("command") {
        Some(value) => at.expand("command", value, true)?.value,
        None => return Err(at.error("command", "missing")),
    };
    if command.trim().is_empty() {
        return Err(at.error("command", "must not be empty"));
    }
    let mut config = ServerConfig::stdio(at.name, command);
    let mut args = Vec::new();
    let mut shown_args = BTreeMap::new();
    match obj.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(values)) => {
            for (i, value) in values.iter().enumerate() {
                let expanded = at.expand(&format!("args[{i}]"), value, false)?;
                if let (true, Value::String(template)) = (expanded.had_vars, value) {
                    shown_args.insert(i, template.clone());
                }
                args.push(expanded.value);
            }
        }
        Some(_) => return Err(at.error("args", "expected an array of strings")),
    }
    if let Transport::Stdio(stdio) = &mut config.transport {
        stdio.args = args;
        stdio.shown_args = shown_args;
    }
    if let Some(value) = obj.get("envFile").filter(|v| !v.is_null()) {
        let path = PathBuf::from(at.expand("envFile", value, true)?.value);
        let path = match (path.is_absolute(), at.ctx.base_dir) {
            (true, _) => path,
            (false, Some(base)) => base.join(path),
            (false, None) => {
                return Err(at.error(
                    "envFile",
                    "a relative path, and no folder to resolve it in: load the file with \
                     `load_file`, or give `LoadOptions::base_dir`",
                ))
            }
        };
        let vars = env_file::read(&path).map_err(|message| at.error("envFile", message))?;
        for (k, v) in vars {
            config = config.env(k, v);
        }
    }
    // After envFile: an explicit `env` entry wins over the file.
    for (k, v) in string_map(at, obj, "env")? {
        config = config.env(k, v);
    }
    match obj.get("cwd") {
        None | Some(Value::Null) => {}
        Some(value) => config = config.cwd(at.expand("cwd", value, true)?.value),
    }
    Ok(config)
}

/// An HTTP entry: `url` (or `serverUrl`) and `headers`.
fn parse_http(
    at: &At<'_>,
    obj: &Map<String, Value>,
    shown: &mut Shown,
) -> Result<ServerConfig, Error> {
    let url_key = shown.url_key;
    let url = match obj.get(url_key) {
        Some(value) => {
            let expanded = at.expand(url_key, value, false)?;
            if let (true, Value::String(template)) = (expanded.had_vars, value) {
                shown.url = Some(template.clone());
            }
            expanded.value
        }
        None => return Err(at.error("url", "missing")),
    };
    let mut config = ServerConfig::http(at.name, url);
    if let (Transport::Http(http), Some(template)) = (&config.transport, &shown.url) {
        show_path_as_written(&http.url, template);
    }
    for (k, v) in string_map(at, obj, "headers")? {
        config = config.header(k, v);
    }
    #[cfg(feature = "http")]
    if let Some(oauth) = parse_oauth(at, obj)? {
        config = config.oauth(oauth);
    }
    Ok(config)
}

/// Claude Code's `oauth` key (`clientId`, `callbackPort`), with `clientSecret` (expanded, so
/// `"${CLIENT_SECRET}"` keeps it out of the file), `clientMetadataUrl`, and `grant`
/// (`authorization_code`, the default, or `client_credentials`). An authorization code grant
/// read from a file has no [`Authorizer`](crate::auth::Authorizer): it uses the tokens in its
/// store until the application adds one ([`ServerConfig::oauth_authorizer`]).
#[cfg(feature = "http")]
fn parse_oauth(at: &At<'_>, obj: &Map<String, Value>) -> Result<Option<OAuthConfig>, Error> {
    let oauth = match obj.get("oauth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(oauth)) => oauth,
        Some(_) => return Err(at.error("oauth", "expected an object")),
    };
    let text = |key: &str| -> Result<Option<String>, Error> {
        match oauth.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Ok(Some(
                at.expand(&format!("oauth.{key}"), value, false)?.value,
            )),
        }
    };
    let client_id = text("clientId")?;
    let secret = text("clientSecret")?;
    let mut config = match text("grant")?.as_deref() {
        None | Some("authorization_code") => {
            let mut config = OAuthConfig::stored_tokens(std::sync::Arc::new(
                crate::auth::MemoryTokenStore::default(),
            ));
            if let Some(id) = client_id {
                config = config.client_id(id);
            }
            if let Some(secret) = secret {
                config = config.client_secret(secret);
            }
            config
        }
        Some("client_credentials") => {
            let id = client_id.ok_or_else(|| at.error("oauth.clientId", "missing"))?;
            let secret = secret.ok_or_else(|| at.error("oauth.clientSecret", "missing"))?;
            OAuthConfig::client_credentials(id, secret)
        }
        Some(_) => {
            return Err(at.error(
                "oauth.grant",
                "expected \"authorization_code\" or \"client_credentials\"",
            ))
        }
    };
    match oauth.get("callbackPort") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) => match n.as_u64().and_then(|p| u16::try_from(p).ok()) {
            Some(port) if port > 0 => config = config.callback_port(port),
            _ => return Err(at.error("oauth.callbackPort", "expected a port number")),
        },
        Some(_) => return Err(at.error("oauth.callbackPort", "expected a port number")),
    }
    if let Some(url) = text("clientMetadataUrl")? {
        config = config.client_metadata_url(url);
    }
    Ok(Some(config))
}

/// An optional object of strings (`env`, `headers`), its values expanded.
fn string_map(
    at: &At<'_>,
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Vec<(String, String)>, Error> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), at.expand(&format!("{key}.{k}"), v, false)?.value)))
            .collect(),
        Some(_) => Err(at.error(key, "expected an object")),
    }
}

/// Our own `"mcp-supervisor"` key, if the entry has it.
fn apply_own_settings(
    at: &At<'_>,
    obj: &Map<String, Value>,
    config: &mut ServerConfig,
) -> Result<(), Error> {
    let own = match obj.get(OWN_KEY) {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(own)) => own,
        Some(_) => return Err(at.error(OWN_KEY, "expected an object of settings")),
    };
    let own = own_settings::parse(own)
        .map_err(|(key, message)| at.error(&format!("{OWN_KEY}.{key}"), message))?;
    config.overrides = own.overrides;
    if let Some(inherit) = own.inherit_env {
        match &mut config.transport {
            Transport::Stdio(stdio) => stdio.inherit_env = inherit,
            Transport::Http(_) => {
                return Err(at.error(
                    &format!("{OWN_KEY}.inheritEnv"),
                    "applies to stdio servers only",
                ))
            }
        }
    }
    Ok(())
}
