//! Variables in `mcpServers` values, expanded the way the hosts do: Claude Code's `${VAR}` and
//! `${VAR:-default}`, Cursor's and VS Code's `${env:VAR}`, VS Code's `${input:id}`, their
//! predefined `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`,
//! `${pathSeparator}` and `${/}`, and a leading `~` in paths.
//!
//! Its own room because this is where a configuration meets secrets: a value comes from the
//! environment or from the application, and every error here names the reference as written
//! (`${MY_TOKEN}`), never what it stands for.
//!
//! The rules, decided where the hosts differ or say nothing:
//!
//! - A variable that is not set, without a default, is an error: never an empty string, never
//!   the text passed through (Claude Code passes it through; the server then gets `${TOKEN}` as
//!   its token and fails far from the cause).
//! - `${VAR:-default}` takes the default when `VAR` is unset or empty (as in a POSIX shell);
//!   the default may itself hold references (`${A:-${B}}`), expanded only when used. The
//!   default is also allowed after `env:` (`${env:VAR:-default}`).
//! - `$VAR` without braces is left as it is (no host expands it, and `$` is common in
//!   arguments). `$${` is a literal `${` (our escape, as in docker compose: no host has one).
//! - Anything else in `${…}` is an error naming it: an unclosed `${`, `${}`, `${a b}`,
//!   `${command:…}`, Windsurf's `${file:…}`. A typo must not reach a server as text.
//! - Predefined names win over environment variables of the same name. `${workspaceFolder}` is
//!   the folder given by the application, or the parent of a `.vscode` or `.cursor` folder the
//!   file is in.
//! - `~` and `~/…` at the start of `command`, `cwd` and `envFile` are the home directory
//!   (`HOME`); `~user` is left as it is, and so is `~` in arguments (servers such as the
//!   filesystem server expand it themselves, and a host passes it on unchanged).

use std::collections::BTreeMap;
use std::path::Path;

/// Defaults nested deeper than this are refused: a configuration never needs it, and the
/// expansion of a hostile one stays bounded.
const MAX_DEPTH: usize = 8;

/// What the error for an `${input:id}` without a value says, `{id}` standing for the id.
pub(super) const DEFAULT_INPUT_HINT: &str =
    "a service cannot prompt for an input; supply its value with `LoadOptions::input(\"{id}\", …)`";

/// Where variables come from.
pub(super) struct Vars<'a> {
    /// The environment to look variables up in; the process's when `None`.
    pub(super) env: Option<&'a BTreeMap<String, String>>,
    /// Values for `${input:id}`, supplied by the application.
    pub(super) inputs: &'a BTreeMap<String, String>,
    /// How an input without a value is told to be supplied (`{id}`: the input's id); the
    /// library's own words when `None`.
    pub(super) input_hint: Option<&'a str>,
    /// `${workspaceFolder}`.
    pub(super) workspace_folder: Option<&'a Path>,
}

/// A value after expansion.
#[derive(Debug, PartialEq)]
pub(super) struct Expanded {
    pub(super) value: String,
    /// Whether the text held a reference: then the value may be a secret, and is shown as the
    /// text it came from.
    pub(super) had_vars: bool,
}

impl Vars<'_> {
    /// Expands every reference in `text`. The error says what is wrong with which reference,
    /// and never shows a variable's value.
    pub(super) fn expand(&self, text: &str) -> Result<Expanded, String> {
        let mut had_vars = false;
        let value = self.expand_at(text, 0, &mut had_vars)?;
        Ok(Expanded { value, had_vars })
    }

    /// Expands a path: a leading `~` or `~/`, then the references.
    pub(super) fn expand_path(&self, text: &str) -> Result<Expanded, String> {
        let rest = match text.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => return self.expand(text),
        };
        let home = self
            .lookup_env("HOME")?
            .filter(|home| !home.is_empty())
            .ok_or("a leading `~` stands for the home directory, but HOME is not set")?;
        let mut expanded = self.expand(rest)?;
        expanded.value.insert_str(0, &home);
        Ok(expanded)
    }

    fn expand_at(&self, text: &str, depth: usize, had_vars: &mut bool) -> Result<String, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "variables are nested more than {MAX_DEPTH} deep in defaults"
            ));
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            if let Some(after) = rest.strip_prefix("$${") {
                out.push_str("${");
                rest = after;
            } else if let Some(after) = rest.strip_prefix("${") {
                let (inner, after) = split_braced(after).ok_or_else(|| {
                    format!(
                        "`${{` without its closing `}}` (write `$${{` for a literal `${{`) in `{}`",
                        shorten(rest)
                    )
                })?;
                *had_vars = true;
                out.push_str(&self.resolve(inner, depth, had_vars)?);
                rest = after;
            } else {
                out.push('$');
                rest = &rest[1..];
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The value of one reference, `inner` being the text between `${` and its `}`.
    fn resolve(&self, inner: &str, depth: usize, had_vars: &mut bool) -> Result<String, String> {
        let shown = format!("`${{{inner}}}`");
        if let Some(id) = inner.strip_prefix("input:") {
            return match self.inputs.get(id) {
                Some(value) => Ok(value.clone()),
                None if id.is_empty() => Err(format!("{shown} names no input")),
                None => {
                    let hint = self.input_hint.unwrap_or(DEFAULT_INPUT_HINT);
                    Err(format!("{shown}: {}", hint.replace("{id}", id)))
                }
            };
        }
        let (env_prefixed, reference) = match inner.strip_prefix("env:") {
            Some(reference) => (true, reference),
            None => (false, inner),
        };
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        let value = if env_prefixed {
            check_name(name, &shown)?;
            self.lookup_env(name).map_err(|e| format!("{shown}: {e}"))?
        } else {
            match self.predefined(name, &shown)? {
                Some(value) => value,
                None => {
                    check_name(name, &shown)?;
                    self.lookup_env(name).map_err(|e| format!("{shown}: {e}"))?
                }
            }
        };
        match (value, default) {
            (Some(value), Some(_)) if !value.is_empty() => Ok(value),
            (Some(value), None) => Ok(value),
            (_, Some(default)) => self.expand_at(default, depth + 1, had_vars),
            (None, None) => Err(match name {
                "workspaceFolder" | "workspaceFolderBasename" => format!(
                    "{shown}: no workspace folder is known; give it with \
                     `LoadOptions::workspace_folder`"
                ),
                _ => format!(
                    "{shown} is not set, and has no default (`${{{name}:-default}}` gives one)"
                ),
            }),
        }
    }

    /// The predefined variables of VS Code and Cursor: `Ok(None)` when `name` is not one of
    /// them, `Ok(Some(None))` when it is but has no value here.
    fn predefined(&self, name: &str, shown: &str) -> Result<Option<Option<String>>, String> {
        let folder = || {
            self.workspace_folder
                .map(|dir| dir.to_str().map(str::to_owned))
                .map(|dir| dir.ok_or(format!("{shown}: the workspace folder is not valid UTF-8")))
                .transpose()
        };
        Ok(Some(match name {
            "userHome" => self
                .lookup_env("HOME")
                .map_err(|e| format!("{shown}: {e}"))?,
            "workspaceFolder" => folder()?,
            "workspaceFolderBasename" => self
                .workspace_folder
                .and_then(Path::file_name)
                .map(|base| {
                    base.to_str()
                        .map(str::to_owned)
                        .ok_or(format!("{shown}: the workspace folder is not valid UTF-8"))
                })
                .transpose()?,
            "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => return Ok(None),
        }))
    }

    /// A variable of the environment: `Ok(None)` when unset.
    fn lookup_env(&self, name: &str) -> Result<Option<String>, String> {
        match self.env {
            Some(env) => Ok(env.get(name).cloned()),
            None => match std::env::var(name) {
                Ok(value) => Ok(Some(value)),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(std::env::VarError::NotUnicode(_)) => {
                    Err(format!("the variable {name} is not valid UTF-8"))
                }
            },
        }
    }
}

/// Splits `text` (just after a `${`) at the `}` that closes it, counting the braces of nested
/// references and of defaults such as `{"a":1}`: the inside and what follows.
fn split_braced(text: &str) -> Option<(&str, &str)> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[..i], &text[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// A variable name as hosts and shells accept it: a letter or `_`, then letters, digits, `_`.
fn check_name(name: &str, shown: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(());
    }
    let message = match name.split_once(':') {
        // `${VAR:=x}`, `${VAR:?x}`, `${VAR:+x}`: shell operators, not a prefix.
        Some((prefix, rest)) if !rest.starts_with(['=', '?', '+']) => format!(
            "{shown}: `${{{prefix}:…}}` variables are not supported (only `${{VAR}}`, \
             `${{VAR:-default}}`, `${{env:VAR}}` and `${{input:id}}`)"
        ),
        _ => format!("{shown} is not a variable reference (write `$${{` for a literal `${{`)"),
    };
    Err(message)
}

/// The start of a piece of configuration text, for an error message (references, not values).
fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expand_with(env: &BTreeMap<String, String>, text: &str) -> Result<String, String> {
        let inputs = [("api-key".to_string(), "in-put".to_string())].into();
        let vars = Vars {
            env: Some(env),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: Some(Path::new("/work/proj")),
        };
        vars.expand(text).map(|e| e.value)
    }

    #[test]
    fn claude_code_and_cursor_forms_expand() {
        let env = env(&[("TOKEN", "t0k"), ("EMPTY", ""), ("HOME", "/home/u")]);
        let cases = [
            ("Bearer ${TOKEN}", "Bearer t0k"),
            ("${env:TOKEN}", "t0k"),
            ("${MISSING:-fallback}", "fallback"),
            ("${TOKEN:-fallback}", "t0k"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${EMPTY}", ""),
            ("${env:MISSING:-d}", "d"),
            ("${MISSING:-}", ""),
            ("${MISSING:-${TOKEN}}", "t0k"),
            ("${MISSING:-${OTHER:-deep}}", "deep"),
            ("${MISSING:-{\"a\":1}}", "{\"a\":1}"),
            ("${input:api-key}", "in-put"),
            ("${userHome}/x", "/home/u/x"),
            ("${workspaceFolder}/.env", "/work/proj/.env"),
            ("${workspaceFolderBasename}", "proj"),
            ("a${/}b${pathSeparator}c", "a/b/c"),
            ("${TOKEN}${TOKEN}", "t0kt0k"),
        ];
        for (text, want) in cases {
            assert_eq!(expand_with(&env, text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn text_without_braced_references_is_left_as_is() {
        let env = env(&[("TOKEN", "t0k")]);
        let cases = [
            ("$TOKEN", "$TOKEN"),
            ("price: 5$", "price: 5$"),
            ("$$", "$$"),
            ("a $ b", "a $ b"),
            ("$${TOKEN}", "${TOKEN}"),
            ("$${", "${"),
            ("${MISSING:-$${x}}", "${x}"),
            ("{}", "{}"),
            ("ünïcödé ${TOKEN} ✓", "ünïcödé t0k ✓"),
        ];
        for (text, want) in cases {
            assert_eq!(expand_with(&env, text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn what_cannot_be_expanded_is_an_error_naming_the_reference_not_the_value() {
        let env = env(&[("SECRET", "hunter2")]);
        let cases = [
            ("${MISSING}", "`${MISSING}` is not set"),
            ("${env:MISSING}", "`${env:MISSING}` is not set"),
            ("${input:other}", "LoadOptions::input(\"other\""),
            ("${input:}", "names no input"),
            ("${SECRET", "without its closing"),
            ("${}", "is not a variable reference"),
            ("${a b}", "is not a variable reference"),
            ("${1X}", "is not a variable reference"),
            (
                "${file:/run/secrets/x}",
                "`${file:…}` variables are not supported",
            ),
            (
                "${command:pick}",
                "`${command:…}` variables are not supported",
            ),
            ("${env:}", "is not a variable reference"),
            ("${SECRET:=x}", "`${SECRET:=x}` is not a variable reference"),
            (
                "${A:-${B:-${C:-${D:-${E:-${F:-${G:-${H:-${I:-${J}}}}}}}}}}",
                "nested more than",
            ),
        ];
        for (text, want) in cases {
            let e = expand_with(&env, text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains("hunter2"), "{text}: {e}");
        }
    }

    #[test]
    fn an_input_without_a_value_says_how_to_give_one() {
        let inputs = BTreeMap::new();
        let env = BTreeMap::new();
        let mut vars = Vars {
            env: Some(&env),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        let e = vars.expand("${input:api-key}").unwrap_err();
        assert!(e.ends_with("`LoadOptions::input(\"api-key\", …)`"), "{e}");
        vars.input_hint = Some("give it with `--input {id}=…`");
        let e = vars.expand("${input:api-key}").unwrap_err();
        assert_eq!(e, "`${input:api-key}`: give it with `--input api-key=…`");
    }

    #[test]
    fn workspace_variables_need_a_workspace() {
        let inputs = BTreeMap::new();
        let env = BTreeMap::new();
        let vars = Vars {
            env: Some(&env),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        let e = vars.expand("${workspaceFolder}/x").unwrap_err();
        assert!(e.contains("LoadOptions::workspace_folder"), "{e}");
        assert_eq!(vars.expand("${workspaceFolder:-.}").unwrap().value, ".");
    }

    #[test]
    fn a_leading_tilde_is_home_in_paths() {
        let inputs = BTreeMap::new();
        let with_home = env(&[("HOME", "/home/u"), ("D", "data")]);
        let vars = Vars {
            env: Some(&with_home),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        let path = |text: &str| vars.expand_path(text).map(|e| e.value);
        assert_eq!(path("~").as_deref(), Ok("/home/u"));
        assert_eq!(path("~/bin/srv").as_deref(), Ok("/home/u/bin/srv"));
        assert_eq!(path("~/${D}").as_deref(), Ok("/home/u/data"));
        assert_eq!(path("~bob/x").as_deref(), Ok("~bob/x"));
        assert_eq!(path("/a/~/b").as_deref(), Ok("/a/~/b"));
        assert!(!vars.expand_path("~/x").unwrap().had_vars);
        assert!(vars.expand_path("~/${D}").unwrap().had_vars);
        // Only the leading `~` of the text as written: not one a variable expands to.
        let tilde_var = env(&[("HOME", "/home/u"), ("P", "~/x")]);
        let vars = Vars {
            env: Some(&tilde_var),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        assert_eq!(vars.expand_path("${P}").unwrap().value, "~/x");
        let no_home = BTreeMap::new();
        let vars = Vars {
            env: Some(&no_home),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        assert!(vars.expand_path("~/x").unwrap_err().contains("HOME"));
    }

    #[test]
    fn had_vars_marks_values_that_may_be_secrets() {
        let env = env(&[("T", "x")]);
        let inputs = BTreeMap::new();
        let vars = Vars {
            env: Some(&env),
            inputs: &inputs,
            input_hint: None,
            workspace_folder: None,
        };
        assert!(!vars.expand("plain $T").unwrap().had_vars);
        assert!(!vars.expand("$${T}").unwrap().had_vars);
        assert!(vars.expand("--key=${T}").unwrap().had_vars);
    }
}
