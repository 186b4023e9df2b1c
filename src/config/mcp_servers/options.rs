//! [`LoadOptions`], what the application tells the `mcpServers` loader (the values of
//! `${input:…}`, the environment, the folders relative paths and `${workspaceFolder}` mean, the
//! project of Claude Code's per-project servers, strict or partial loading), and [`Loaded`], what a load gives back.
//!
//! Its own room because it is the loader's public face: the parsing behind it
//! (`entry`, `expand`, `env_file`, `own_settings`) is not API.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::{ServerConfig, Settings};
use crate::error::Error;

/// How to load an `mcpServers` file: a builder, then [`load_file`](Self::load_file) or
/// [`load_json`](Self::load_json).
///
/// ```
/// use mcp_supervisor::config::LoadOptions;
///
/// let loaded = LoadOptions::new()
///     .input("api-key", "s3cret") // the value of `${input:api-key}`
///     .env_vars([("HOME", "/home/svc")]) // instead of the process's environment
///     .load_json(r#"{
///       // VS Code's format: JSON with comments and trailing commas
///       "servers": {
///         "search": { "type": "http", "url": "https://mcp.example.com/mcp",
///                     "headers": { "Authorization": "Bearer ${input:api-key}" } },
///         "broken": { "type": "websocket", "url": "wss://old.example.com/ws" },
///       },
///     }"#)?;
/// assert_eq!(loaded.servers.len(), 1); // the valid entry is loaded...
/// assert_eq!(loaded.invalid.len(), 1); // ...and the other reported, naming server and field
/// assert!(!format!("{loaded:?}").contains("s3cret"));
/// # Ok::<(), mcp_supervisor::Error>(())
/// ```
///
/// By default a load is partial (every valid entry loads, each invalid one is reported in
/// [`Loaded::invalid`]), variables come from the process's environment, `${input:…}` has no
/// values, relative `envFile` paths are relative to the file's folder (a document given as a
/// string has none: see [`base_dir`](Self::base_dir)), and entries are checked under the
/// built-in default [`Settings`].
#[derive(Clone, Default)]
pub struct LoadOptions {
    pub(super) inputs: BTreeMap<String, String>,
    pub(super) input_hint: Option<String>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) base_dir: Option<PathBuf>,
    pub(super) workspace_folder: Option<PathBuf>,
    pub(super) project: Option<PathBuf>,
    pub(super) strict: bool,
    pub(super) settings: Settings,
}

// Inputs and environment values are secrets as often as not: Debug shows their names only.
impl fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadOptions")
            .field("inputs", &self.inputs.keys().collect::<Vec<_>>())
            .field("input_hint", &self.input_hint)
            .field(
                "env",
                &self.env.as_ref().map(|env| env.keys().collect::<Vec<_>>()),
            )
            .field("base_dir", &self.base_dir)
            .field("workspace_folder", &self.workspace_folder)
            .field("project", &self.project)
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

impl LoadOptions {
    /// The defaults: partial, the process's environment, no inputs.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of VS Code's `${input:id}`. A service cannot prompt as VS Code does, so the
    /// application supplies the values (from its own secret store, say); a reference to an
    /// input without a value is an error naming the server, the field and the input.
    pub fn input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), value.into());
        self
    }

    /// Several inputs at once (see [`input`](Self::input)).
    pub fn inputs<I, K, V>(mut self, inputs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.inputs
            .extend(inputs.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// How the error for an `${input:id}` without a value tells the user to supply one, `{id}`
    /// standing for the input's id: an application names its own way (a command-line tool its
    /// option, a service its secret store). The error reads `` `${input:id}`: <hint> ``.
    /// Default: ``a service cannot prompt for an input; supply its value with
    /// `LoadOptions::input("{id}", …)` ``.
    ///
    /// ```
    /// use mcp_supervisor::config::LoadOptions;
    ///
    /// let loaded = LoadOptions::new()
    ///     .input_hint("give its value with `--input {id}=…`")
    ///     .load_json(r#"{"servers": {"s": {"command": "srv", "env": {"KEY": "${input:key}"}}}}"#)?;
    /// assert!(loaded.invalid[0].to_string().ends_with("give its value with `--input key=…`"));
    /// # Ok::<(), mcp_supervisor::Error>(())
    /// ```
    pub fn input_hint(mut self, hint: impl Into<String>) -> Self {
        self.input_hint = Some(hint.into());
        self
    }

    /// Looks `${VAR}`, `${env:VAR}` and `HOME` (for `~`) up in these variables instead of the
    /// process's environment. Does not change the environment the servers get.
    pub fn env_vars<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let env = self.env.get_or_insert_with(BTreeMap::new);
        env.extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The folder relative `envFile` paths are relative to. Default: the folder of the file
    /// for [`load_file`](Self::load_file); none for [`load_json`](Self::load_json), where a
    /// relative `envFile` is then an error (the current directory of a service is rarely what
    /// the file's author meant).
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// What `${workspaceFolder}` (VS Code, Cursor) stands for. Default: the folder holding
    /// the `.vscode` or `.cursor` folder the file is in, if it is in one; otherwise the
    /// variable is an error.
    pub fn workspace_folder(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace_folder = Some(dir.into());
        self
    }

    /// The project whose servers Claude Code's `~/.claude.json` keeps under
    /// `projects.<absolute path>.mcpServers` (its "local" scope): they are read besides the
    /// top-level `mcpServers` (its "user" scope), and one of them replaces a top-level entry of
    /// the same name whole, as in Claude Code, where the local scope takes precedence. Claude
    /// Code's project is the folder it was started in; a relative path here is made absolute
    /// against the current directory. The project and each key are compared as paths (a
    /// trailing or doubled `/` does not matter), and as resolved by the file system when they
    /// exist (`..` and symlinks, as [`std::fs::canonicalize`] resolves them; a path that does
    /// not exist has its `..` taken away as written). A file without `projects`, or without
    /// this project, loads its top-level servers only. Default: none (`projects` is not read).
    ///
    /// ```
    /// use mcp_supervisor::config::LoadOptions;
    ///
    /// let loaded = LoadOptions::new()
    ///     .project("/home/ada/app")
    ///     .load_json(r#"{
    ///       "mcpServers": { "fs": { "command": "fs-mcp" }, "db": { "command": "db-mcp" } },
    ///       "projects": {
    ///         "/home/ada/app": { "mcpServers": { "db": { "command": "db-mcp", "args": ["--app"] } } },
    ///         "/home/ada/other": { "mcpServers": { "web": { "command": "web-mcp" } } }
    ///       }
    ///     }"#)?;
    /// let names: Vec<&str> = loaded.servers.iter().map(|s| s.name()).collect();
    /// assert_eq!(names, ["db", "fs"]); // `db` is the project's: with `--app`
    /// # Ok::<(), mcp_supervisor::Error>(())
    /// ```
    pub fn project(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project = Some(dir.into());
        self
    }

    /// All or nothing: the first invalid entry fails the whole load, as
    /// [`ServerConfig::from_mcp_servers_json`] does (default false: partial).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The global settings the servers will run under, so that each entry is checked with the
    /// settings that will be in force for it (default: the built-in defaults). The supervisor
    /// checks again when the servers are added.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Reads and loads an `mcpServers` file. The file itself being unreadable or not a JSON
    /// object of servers is an `Err`; an invalid entry is one only in strict mode.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Loaded, Error> {
        super::load_file(self, path.as_ref())
    }

    /// Loads an `mcpServers` document given as text (see [`load_file`](Self::load_file)).
    pub fn load_json(&self, json: &str) -> Result<Loaded, Error> {
        super::load_document(self, json, None)
    }
}

/// What an `mcpServers` load gives: the servers to run, the entries that are invalid (each an
/// [`Error::Config`] naming the server and the field), and the names of disabled servers.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Loaded {
    /// The valid, enabled servers, by name.
    pub servers: Vec<ServerConfig>,
    /// One error per invalid entry, by server name; empty in strict mode.
    pub invalid: Vec<Error>,
    /// The servers turned off with `"disabled": true` or `"enabled": false`, by name.
    pub disabled: Vec<String>,
}
