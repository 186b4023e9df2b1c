//! The `mcpServers` loader: turns the configuration files that Claude Desktop, Claude Code,
//! Cursor, VS Code and Windsurf users already have into [`ServerConfig`]s.
//!
//! Its own room because the file format is not our API: its keys, aliases and error messages
//! (which name the server and the JSON path of the field) are kept apart from the builders they
//! call. This file reads the document (JSONC, bounded) and finds its servers (the top-level
//! objects, and a project's in Claude Code's `~/.claude.json`); the rooms beside
//! it hold the rest:
//!
//! - `options`: [`LoadOptions`] and [`Loaded`], the loader's public face.
//! - `entry`: one server's entry, every host's keys (`type`, `url`/`serverUrl`,
//!   `disabled`/`enabled`, `envFile`, ...), and errors worded with their JSON path.
//! - `expand`: `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${input:id}`, predefined variables,
//!   `~`.
//! - `env_file`: `envFile`, read with dotenvy.
//! - `own_settings`: our per-server settings under the `"mcp-supervisor"` key.

mod entry;
mod env_file;
mod expand;
mod options;
mod own_settings;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ServerConfig;
use crate::error::Error;

pub use options::{LoadOptions, Loaded};
pub(crate) use own_settings::{JsonSetting, SettingError};

/// The largest `mcpServers` file read: real ones are a few KiB, and this bounds what a wrong
/// path can make us read into memory.
const MAX_DOCUMENT_BYTES: u64 = 4 * 1024 * 1024;

impl ServerConfig {
    /// Parses an `mcpServers` document, all or nothing: the first invalid entry is the error.
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
    /// The format is the one of Claude Desktop and Code, Cursor, VS Code and Windsurf, read as
    /// docs/configuration.md describes: top-level `mcpServers` and VS Code's `servers` (both
    /// read when both are there; a name under both is that entry's error); stdio entries with
    /// `command`, `args`, `env`, `envFile`, `cwd`; HTTP entries with `type: "http"` (or just a
    /// `url` or Windsurf's `serverUrl`: Streamable HTTP, falling back to the legacy HTTP+SSE
    /// transport), `"streamable-http"` or `"sse"` (the legacy transport only) and `headers`;
    /// `disabled: true` or `enabled: false`; comments and trailing commas; `${VAR}`,
    /// `${VAR:-default}` and `${env:VAR}` expanded from the process's environment. Errors name
    /// the server and
    /// the field. A relative `envFile` is an error here (there is no file to be relative to),
    /// and so is `${input:…}`: [`LoadOptions`] gives both, partial loading, and the project
    /// whose servers Claude Code's `~/.claude.json` keeps under `projects`.
    pub fn from_mcp_servers_json(json: &str) -> Result<Vec<ServerConfig>, Error> {
        LoadOptions::new()
            .strict(true)
            .load_json(json)
            .map(|loaded| loaded.servers)
    }

    /// Reads and parses an `mcpServers` file, all or nothing (see
    /// [`ServerConfig::from_mcp_servers_json`]); a relative `envFile` is relative to the file's
    /// folder.
    pub fn from_mcp_servers_file(path: impl AsRef<Path>) -> Result<Vec<ServerConfig>, Error> {
        LoadOptions::new()
            .strict(true)
            .load_file(path)
            .map(|loaded| loaded.servers)
    }

    /// Reads an `mcpServers` file, loading every valid entry and reporting each invalid one on
    /// its own ([`Loaded::invalid`]), with the default [`LoadOptions`]. An unreadable file, or
    /// one that is not a JSON object of servers, is an `Err`.
    ///
    /// ```no_run
    /// use mcp_supervisor::ServerConfig;
    ///
    /// let loaded = ServerConfig::load_mcp_servers(".vscode/mcp.json")?;
    /// for problem in &loaded.invalid {
    ///     eprintln!("skipped: {problem}");
    /// }
    /// # Ok::<(), mcp_supervisor::Error>(())
    /// ```
    pub fn load_mcp_servers(path: impl AsRef<Path>) -> Result<Loaded, Error> {
        LoadOptions::new().load_file(path)
    }
}

/// Reads the file at `path` and loads it, its folder being the base of relative paths.
fn load_file(options: &LoadOptions, path: &Path) -> Result<Loaded, Error> {
    let text = read_document(path)?;
    let dir = path.parent().unwrap_or(Path::new(""));
    load_document(options, &text, Some(dir))
}

/// The text of an `mcpServers` file: bounded, UTF-8, without a byte order mark.
fn read_document(path: &Path) -> Result<String, Error> {
    let shown = path.display();
    let cannot =
        |e: std::io::Error| Error::config(None, "(file)", format!("cannot read {shown}: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(Error::config(
            None,
            "(file)",
            format!("{shown} is larger than {MAX_DOCUMENT_BYTES} bytes: not an mcpServers file"),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::config(None, "(file)", format!("{shown} is not UTF-8 text")))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

/// Parses JSON with comments and trailing commas, as VS Code writes it, and nothing looser:
/// the JSON5 extras (single quotes, unquoted keys, hex numbers, ...) are errors, as in
/// VS Code.
fn parse_jsonc(text: &str) -> Result<Value, Error> {
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_serde_value(text, &options)
        .map_err(|e| Error::config(None, "(document)", format!("not valid JSON: {e}")))
}

/// Loads a document; `file_dir` is the folder of the file it was read from, if any.
fn load_document(
    options: &LoadOptions,
    text: &str,
    file_dir: Option<&Path>,
) -> Result<Loaded, Error> {
    let doc = parse_jsonc(text)?;
    let Some(root) = doc.as_object() else {
        return Err(Error::config(None, "(document)", "expected a JSON object"));
    };
    let mut sections = sections(root)?;
    let project = project_servers(options, root)?;
    if let Some(project) = &project {
        sections.push(Section {
            key: &project.key,
            servers: project.servers,
            wins: true,
        });
    }
    let entries = entries(&sections);
    let workspace = options
        .workspace_folder
        .clone()
        .or_else(|| file_dir.and_then(workspace_of));
    let context = |key| entry::Context {
        key,
        vars: expand::Vars {
            env: options.env.as_ref(),
            inputs: &options.inputs,
            input_hint: options.input_hint.as_deref(),
            workspace_folder: workspace.as_deref(),
        },
        base_dir: options.base_dir.as_deref().or(file_dir),
        settings: &options.settings,
    };
    let mut loaded = Loaded::default();
    for (name, found) in entries {
        let parsed = match found.also_under {
            Some(other) => Err(Error::config(
                Some(name),
                format!("{}.{name}", found.key),
                format!(
                    "defined twice, under `{}` and under `{other}`: keep one",
                    found.key
                ),
            )),
            None => entry::parse(&context(found.key), name, found.value),
        };
        match parsed {
            Ok(entry::Entry::Server(config)) => loaded.servers.push(*config),
            Ok(entry::Entry::Disabled) => loaded.disabled.push(name.to_owned()),
            Err(e) if options.strict => return Err(e),
            Err(e) => loaded.invalid.push(e),
        }
    }
    Ok(loaded)
}

/// One object of servers in a document, and the JSON path of its key.
struct Section<'a> {
    key: &'a str,
    servers: &'a Map<String, Value>,
    /// Its entries replace those of the same name in the sections before it (a project's
    /// servers); otherwise a name in two sections is a clash.
    wins: bool,
}

/// The top-level objects of servers a document holds: `mcpServers` (Claude, Cursor, Windsurf)
/// and VS Code's `servers`, both read when both are there (a file one host wrote and another
/// added to), so that neither is dropped without a word.
fn sections(root: &Map<String, Value>) -> Result<Vec<Section<'_>>, Error> {
    let mut sections = Vec::new();
    for key in ["mcpServers", "servers"] {
        match root.get(key) {
            None => {}
            Some(Value::Object(servers)) => sections.push(Section {
                key,
                servers,
                wins: false,
            }),
            Some(_) => return Err(Error::config(None, key, "expected an object of servers")),
        }
    }
    // Claude Code's `~/.claude.json` (the file with `projects`) may keep every server under
    // its projects, and none at the top.
    if sections.is_empty() && !root.contains_key("projects") {
        return Err(Error::config(
            None,
            "mcpServers",
            "missing: expected {\"mcpServers\": {\"name\": {\"command\": ...}}}",
        ));
    }
    Ok(sections)
}

/// A project's servers in Claude Code's `~/.claude.json`, and the JSON path of their object.
struct ProjectServers<'a> {
    key: String,
    servers: &'a Map<String, Value>,
}

/// The servers Claude Code's `~/.claude.json` keeps for the project of
/// [`LoadOptions::project`] (its "local" scope), under `projects.<absolute path>.mcpServers`;
/// `None` without a project, or when the file has none for it.
fn project_servers<'a>(
    options: &LoadOptions,
    root: &'a Map<String, Value>,
) -> Result<Option<ProjectServers<'a>>, Error> {
    let (Some(project), Some(projects)) = (&options.project, root.get("projects")) else {
        return Ok(None);
    };
    let Some(projects) = projects.as_object() else {
        return Err(Error::config(
            None,
            "projects",
            "expected an object of projects",
        ));
    };
    // Claude Code keys a project by its absolute path; compared as paths, so that a trailing
    // `/` or a doubled one does not hide it, and resolved, so that neither do `..` nor a
    // symlink (on either side).
    let written = std::path::absolute(project).unwrap_or_else(|_| project.clone());
    let resolved = resolved(&written);
    let found = written
        .to_str()
        .and_then(|p| projects.get_key_value(p))
        .or_else(|| {
            projects.iter().find(|(k, _)| {
                let key = Path::new(k.as_str());
                key == written
                    || key == resolved
                    || resolved_key(key).is_some_and(|k| k == resolved)
            })
        });
    let Some((path, entry)) = found else {
        return Ok(None);
    };
    let at = format!("projects[{}]", Value::from(path.as_str()));
    let Some(entry) = entry.as_object() else {
        return Err(Error::config(None, at, "expected an object"));
    };
    match entry.get("mcpServers") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(servers)) => Ok(Some(ProjectServers {
            key: format!("{at}.mcpServers"),
            servers,
        })),
        Some(_) => Err(Error::config(
            None,
            format!("{at}.mcpServers"),
            "expected an object of servers",
        )),
    }
}

/// A project's path as the file system resolves it (`..`, symlinks) if it exists; else with
/// its `.` and `..` taken away as written.
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| lexically_normal(path))
}

/// A project key as the file system resolves it, if it is an absolute path that exists.
fn resolved_key(key: &Path) -> Option<PathBuf> {
    if key.is_absolute() {
        std::fs::canonicalize(key).ok()
    } else {
        None
    }
}

/// `path` without its `.` and with each `..` taking away the name before it (never the root).
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(normal.components().next_back(), Some(Component::Normal(_))) {
                    normal.pop();
                } else if !normal.has_root() {
                    normal.push(component);
                }
            }
            other => normal.push(other),
        }
    }
    normal
}

/// One server's entry, found in a section.
struct Found<'a> {
    /// The key of its section, the start of its JSON paths.
    key: &'a str,
    value: &'a Value,
    /// The key of another top-level section that has an entry of the same name: which one
    /// was meant cannot be told, so the name is that entry's error.
    also_under: Option<&'a str>,
}

/// Every entry of the sections, by name (in name order, as the hosts' maps are). A project's
/// entry replaces a top-level one of the same name whole, as Claude Code's local scope wins
/// over its user scope; two top-level ones clash.
fn entries<'a>(sections: &[Section<'a>]) -> BTreeMap<&'a str, Found<'a>> {
    let mut entries: BTreeMap<&str, Found> = BTreeMap::new();
    for section in sections {
        for (name, value) in section.servers {
            match entries.get_mut(name.as_str()) {
                Some(found) if section.wins => {
                    *found = Found {
                        key: section.key,
                        value,
                        also_under: None,
                    }
                }
                Some(found) => found.also_under = Some(section.key),
                None => {
                    let found = Found {
                        key: section.key,
                        value,
                        also_under: None,
                    };
                    entries.insert(name, found);
                }
            }
        }
    }
    entries
}

/// The workspace folder of a file in `dir`: the parent of a `.vscode` or `.cursor` folder.
fn workspace_of(dir: &Path) -> Option<PathBuf> {
    let dir = std::path::absolute(dir).ok()?;
    match dir.file_name()?.to_str()? {
        ".vscode" | ".cursor" => dir.parent().map(Path::to_path_buf),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
