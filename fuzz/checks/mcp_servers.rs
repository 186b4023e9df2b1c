//! The `mcpServers` loader (`config::mcp_servers`): JSON with comments, each host's keys, and
//! the `${…}` expansion of its values (`expand.rs`). A configuration file is often someone
//! else's (a `.vscode/mcp.json` in a cloned repository), and its variables hold secrets.
//!
//! A whole document: it loads or gives typed `config` errors; no error and no `Debug` of what
//! was loaded shows the value of a variable (the file names `${TOKEN}`; only the server gets
//! what it stands for); what an expansion makes is bounded by the text and the values it
//! names. One value: the expansion is what a plain model of the documented rules says (so a
//! `${…}` is expanded or reported, never passed on), and `$${` gives back any text literally.

use mcp_supervisor::config::LoadOptions;
use mcp_supervisor::protocol::text::{is_unsafe, SERVER_TEXT_LIMIT};
use mcp_supervisor::{Error, ErrorKind, Transport};
use serde_json::json;

/// The value of `${TOKEN}`: it must never be shown.
pub const SECRET_TOKEN: &str = "t0ken-S3CRET-value";
/// The value of `${input:key}`: it must never be shown.
pub const SECRET_INPUT: &str = "inpUt-S3CRET-value";
const HOME: &str = "/home/fuzz";
const WORKSPACE: &str = "/work/proj";
/// The longest value a reference can stand for here.
const LONGEST_VALUE: usize = 18;

fn options() -> LoadOptions {
    LoadOptions::new()
        .env_vars([
            ("HOME", HOME),
            ("TOKEN", SECRET_TOKEN),
            ("EMPTY", ""),
            ("T", "x"),
        ])
        .input("key", SECRET_INPUT)
        .workspace_folder(WORKSPACE)
}

/// Fuzz entry: the first byte chooses between a whole document (even) and one value (odd).
pub fn fuzz_mcp_servers(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if mode % 2 == 0 {
        check_document(&text);
    } else {
        check_value(&text);
    }
}

/// A whole `mcpServers` document.
pub fn check_document(text: &str) {
    // `envFile` names a file to read: a fuzzer must not read files its input names.
    if text.contains("envFile") {
        return;
    }
    let shows_secrets = shows_secrets(text);
    let loaded = match options().load_json(text) {
        Ok(loaded) => loaded,
        Err(e) => return check_error(&e, text, shows_secrets),
    };
    for e in &loaded.invalid {
        check_error(e, text, shows_secrets);
    }
    // A gap this target found and that is left for a change of its own (it needs the URL as
    // written wherever a URL is shown, the HTTP transport's logs included): `Debug`, like the
    // logs, shows the command, the cwd and the URL's path as expanded (the URL's userinfo and
    // query are hidden). Only those three may show a variable's value.
    let shown_as_expanded = loaded
        .servers
        .iter()
        .any(|server| match server.transport() {
            Transport::Stdio(stdio) => {
                is_secret_in(&stdio.command) || is_secret_in(&format!("{:?}", stdio.cwd))
            }
            Transport::Http(http) => is_secret_in(&http.url),
            _ => false,
        });
    if !shows_secrets && !shown_as_expanded {
        let shown = format!("{loaded:?}");
        assert!(
            !shown.contains(SECRET_TOKEN) && !shown.contains(SECRET_INPUT),
            "a variable's value in Debug: {shown}"
        );
    }
    let bound = text.len() * LONGEST_VALUE.max(1);
    for server in &loaded.servers {
        let values: Vec<&str> = match server.transport() {
            Transport::Stdio(stdio) => std::iter::once(stdio.command.as_str())
                .chain(stdio.args.iter().map(String::as_str))
                .chain(stdio.env.values().map(String::as_str))
                .chain(stdio.cwd.iter().filter_map(|p| p.to_str()))
                .collect(),
            Transport::Http(http) => std::iter::once(http.url.as_str())
                .chain(http.headers.values().map(String::as_str))
                .collect(),
            _ => Vec::new(),
        };
        for value in values {
            assert!(
                value.len() <= bound,
                "{} bytes from {} bytes",
                value.len(),
                text.len()
            );
        }
    }
}

/// Whether an error quoting `text` may show a secret's characters without any variable's value
/// in it: the text holds them itself, or its escaping makes them (a tab before `0ken-…` is
/// shown `\t0ken-…`, which holds `t0ken-…`; the fuzzer found that).
fn shows_secrets(text: &str) -> bool {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if is_unsafe(c) => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => escaped.push(c),
        }
    }
    is_secret_in(text) || is_secret_in(&escaped)
}

fn is_secret_in(text: &str) -> bool {
    text.contains(SECRET_TOKEN) || text.contains(SECRET_INPUT)
}

/// A loader error: a `config` error, no variable's value in it, and the file's text in it
/// escaped and bounded.
fn check_error(e: &Error, text: &str, shows_secrets: bool) {
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    let shown = e.to_string();
    if !shows_secrets {
        assert!(
            !shown.contains(SECRET_TOKEN) && !shown.contains(SECRET_INPUT),
            "a variable's value in an error: {shown}"
        );
    }
    assert!(!shown.chars().any(is_unsafe), "{shown:?}");
    // The server's name, the field and the message, each bounded.
    assert!(
        shown.len() <= 3 * SERVER_TEXT_LIMIT + 100,
        "{} bytes from {}",
        shown.len(),
        text.len()
    );
}

/// One value, as a stdio server's argument: what the model says, and `$${` escapes anything.
pub fn check_value(text: &str) {
    let document = json!({"mcpServers": {"s": {"command": "c", "args": [text, escape(text)]}}});
    let loaded = options().strict(true).load_json(&document.to_string());
    let want = model_expand(text, 0);
    match (loaded, want) {
        (Ok(loaded), Ok(want)) => {
            let Transport::Stdio(stdio) = loaded.servers[0].transport() else {
                panic!("a stdio entry");
            };
            assert_eq!(stdio.args[0], want, "{text:?}");
            assert_eq!(stdio.args[1], text, "escaped: {:?}", escape(text));
        }
        (Err(e), Err(())) => {
            let shows_secrets = shows_secrets(text);
            check_error(&e, text, shows_secrets);
        }
        (got, want) => panic!("{text:?}: loaded {got:?}, the model says {want:?}"),
    }
}

/// `text` written so that it expands to itself: every `${` as `$${`.
pub fn escape(text: &str) -> String {
    text.replace("${", "$${")
}

/// The expansion rules of `expand.rs`'s documentation, written plainly over characters:
/// `$${` is `${`; `${` opens a reference closed by the `}` that balances it; any other `$` is
/// itself.
fn model_expand(text: &str, depth: usize) -> Result<String, ()> {
    if depth > 8 {
        return Err(());
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i..].starts_with(&['$', '$', '{']) {
            out.push_str("${");
            i += 3;
        } else if chars[i..].starts_with(&['$', '{']) {
            let mut open = 0usize;
            let mut close = None;
            for (j, c) in chars.iter().enumerate().skip(i + 2) {
                match c {
                    '{' => open += 1,
                    '}' if open == 0 => {
                        close = Some(j);
                        break;
                    }
                    '}' => open -= 1,
                    _ => {}
                }
            }
            let close = close.ok_or(())?;
            let inner: String = chars[i + 2..close].iter().collect();
            out.push_str(&model_reference(&inner, depth)?);
            i = close + 1;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// What the reference `${inner}` stands for, with the variables of [`options`].
fn model_reference(inner: &str, depth: usize) -> Result<String, ()> {
    if let Some(id) = inner.strip_prefix("input:") {
        return if id == "key" {
            Ok(SECRET_INPUT.to_owned())
        } else {
            Err(())
        };
    }
    let (env_only, reference) = match inner.strip_prefix("env:") {
        Some(reference) => (true, reference),
        None => (false, inner),
    };
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    let env = |name: &str| -> Result<Option<&str>, ()> {
        let mut chars = name.chars();
        let first = chars.next().ok_or(())?;
        if !(first.is_ascii_alphabetic() || first == '_')
            || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(());
        }
        Ok(match name {
            "HOME" => Some(HOME),
            "TOKEN" => Some(SECRET_TOKEN),
            "EMPTY" => Some(""),
            "T" => Some("x"),
            _ => None,
        })
    };
    let value = match (env_only, name) {
        (false, "userHome") => Some(HOME),
        (false, "workspaceFolder") => Some(WORKSPACE),
        (false, "workspaceFolderBasename") => Some("proj"),
        (false, "pathSeparator" | "/") => Some("/"),
        _ => env(name)?,
    };
    match (value, default) {
        (Some(value), Some(_)) if !value.is_empty() => Ok(value.to_owned()),
        (Some(value), None) => Ok(value.to_owned()),
        (_, Some(default)) => model_expand(default, depth + 1),
        (None, None) => Err(()),
    }
}
