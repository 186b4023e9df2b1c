//! The `mcpServers` JSON loader: turns the configuration files that Claude Desktop, Cursor and
//! VS Code users already have into [`ServerConfig`]s.
//!
//! Its own room because the file format is not our API: its keys, aliases and error messages
//! (which name the server and the JSON path of the field) are kept apart from the builders they
//! call.

use std::path::Path;

use serde_json::Value;

use super::ServerConfig;
use crate::error::Error;

impl ServerConfig {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Transport;

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
}
