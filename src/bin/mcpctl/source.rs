//! Where the servers come from: an `mcpServers` file, read with the library's partial loader,
//! or one server given on the command line (`--stdio -- COMMAND ARGS`, `--http URL`).
//!
//! Its own room because both ways end in the same [`Servers`], and what the rest of mcpctl
//! needs to know about the file (the entries it could not load, the disabled ones) is decided
//! here: an invalid entry is reported and the valid ones are used, as the hosts do.

use std::path::{Path, PathBuf};

use mcp_supervisor::{Error, LoadOptions, ServerConfig};

use crate::cli::{Secret, SourceArgs};

/// The file read when neither `--config` nor a server on the command line is given.
const DEFAULT_CONFIG: &str = "mcp.json";

/// The servers a command may start.
#[derive(Debug)]
pub(crate) struct Servers {
    /// The valid, enabled servers.
    pub(crate) configs: Vec<ServerConfig>,
    /// One error per entry of the file that could not be loaded (naming server and field).
    pub(crate) invalid: Vec<Error>,
    /// The names of the file's disabled servers.
    pub(crate) disabled: Vec<String>,
    /// The file they came from and how it was read, for `watch --reload`; `None` for a server
    /// given on the command line.
    pub(crate) file: Option<(PathBuf, LoadOptions)>,
}

/// The server given on the command line, if one is; an error for options that do not fit.
pub(crate) fn single_server(
    source: &SourceArgs,
    command: &[String],
) -> Result<Option<ServerConfig>, String> {
    if !source.stdio && !command.is_empty() {
        return Err("a command after `--` needs --stdio".into());
    }
    if source.http.is_none() && !source.header.is_empty() {
        return Err("--header is for a server given with --http".into());
    }
    if !source.stdio && !source.env.is_empty() {
        return Err("--env is for a server given with --stdio".into());
    }
    if (source.stdio || source.http.is_some()) && !source.input.is_empty() {
        return Err("--input is for the `${input:…}` of a config file".into());
    }
    // As `call`'s and `prompt`'s arguments: an id given twice is a mistake, not the last one
    // winning.
    for (i, (id, _)) in source.input.iter().enumerate() {
        if source.input[..i].iter().any(|(earlier, _)| earlier == id) {
            return Err(format!("--input `{id}` is given twice"));
        }
    }
    if source.stdio {
        let Some((program, args)) = command.split_first() else {
            return Err("--stdio needs the server's command after `--`: \
                        mcpctl <COMMAND> --stdio -- npx -y some-mcp-server"
                .into());
        };
        let name = source.name.clone().unwrap_or_else(|| file_name(program));
        let mut config = ServerConfig::stdio(name, program).args(args);
        for (key, value) in &source.env {
            config = config.env(key, &value.0);
        }
        return Ok(Some(config));
    }
    if let Some(url) = &source.http {
        let name = source.name.clone().unwrap_or_else(|| host(url));
        let mut config = ServerConfig::http(name, url);
        for (key, value) in &source.header {
            config = config.header(key, &value.0);
        }
        return Ok(Some(config));
    }
    if source.name.is_some() {
        return Err("--name is for a server given with --stdio or --http".into());
    }
    Ok(None)
}

/// Reads the `mcpServers` file (`--config`, or `mcp.json`): every valid entry, and an error for
/// each invalid one. The file itself being unreadable or not an `mcpServers` file is an error.
/// The working directory is the project whose servers Claude Code's `~/.claude.json` keeps
/// under `projects`, as it is for Claude Code, started there; `inputs` are the values of
/// VS Code's `${input:id}` (`--input`).
pub(crate) fn load_file(
    config: Option<&Path>,
    inputs: &[(String, Secret)],
) -> Result<Servers, String> {
    let path = config.map_or_else(|| PathBuf::from(DEFAULT_CONFIG), Path::to_path_buf);
    let mut options = LoadOptions::new()
        .inputs(
            inputs
                .iter()
                .map(|(id, value)| (id.as_str(), value.0.as_str())),
        )
        .input_hint("mcpctl does not prompt for inputs; give its value with `--input {id}=…`");
    // A working directory that is gone has no project servers: the file's others still load.
    if let Ok(cwd) = std::env::current_dir() {
        options = options.project(cwd);
    }
    let loaded = options.load_file(&path).map_err(|e| e.to_string())?;
    if loaded.servers.is_empty() && loaded.invalid.is_empty() {
        return Err(format!(
            "{} configures no (enabled) servers",
            path.display()
        ));
    }
    Ok(Servers {
        configs: loaded.servers,
        invalid: loaded.invalid,
        disabled: loaded.disabled,
        file: Some((path, options)),
    })
}

impl Servers {
    /// One server, from the command line.
    pub(crate) fn single(config: ServerConfig) -> Servers {
        Servers {
            configs: vec![config],
            invalid: Vec::new(),
            disabled: Vec::new(),
            file: None,
        }
    }

    /// Keeps only `name`, for a command about one server; an error if the file has no valid
    /// server of that name (its own error, if its entry is invalid).
    pub(crate) fn only(mut self, name: &str) -> Result<Servers, String> {
        if let Some(error) = self.invalid.iter().find(|e| invalid_name(e) == Some(name)) {
            return Err(error.to_string());
        }
        let Some(at) = self.configs.iter().position(|s| s.name() == name) else {
            let names: Vec<&str> = self.configs.iter().map(ServerConfig::name).collect();
            let why = if self.disabled.iter().any(|d| d == name) {
                " (it is disabled)".to_owned()
            } else {
                format!(" (it has: {})", names.join(", "))
            };
            return Err(format!("no server named `{name}`{why}"));
        };
        let server = self.configs.swap_remove(at);
        Ok(Servers::single(server))
    }
}

/// The server an invalid entry's error names, if it names one.
pub(crate) fn invalid_name(error: &Error) -> Option<&str> {
    match error {
        Error::Config { server, .. } => server.as_deref(),
        _ => None,
    }
}

/// `npx` for `/usr/bin/npx`: a name for the `--stdio` server.
fn file_name(program: &str) -> String {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or("server")
        .to_owned()
}

/// `mcp.example.com` for `https://user@mcp.example.com:8443/mcp`: a name for the `--http`
/// server. The URL itself is checked when the server is added.
fn host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    if host.is_empty() {
        "server".into()
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_command_or_the_host() {
        assert_eq!(file_name("/usr/bin/npx"), "npx");
        assert_eq!(file_name("uvx"), "uvx");
        assert_eq!(
            host("https://user:pw@mcp.example.com:8443/mcp?x"),
            "mcp.example.com"
        );
        assert_eq!(host("http://[::1]:3001/mcp"), "::1");
        assert_eq!(host("http://127.0.0.1:3001"), "127.0.0.1");
        assert_eq!(host(""), "server");
    }
}
