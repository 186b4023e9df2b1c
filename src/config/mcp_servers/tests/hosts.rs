//! Each host's format features, and variable expansion in every field.

#[cfg(feature = "http")]
use super::http;
use super::{config_error, only, opts, stdio};
use crate::config::ServerConfig;

/// Claude Code: `${VAR}` and `${VAR:-default}` in command, args, env, cwd; url and headers.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn claude_code_variables_expand_in_every_field() {
    let loaded = opts()
        .load_json(
            r#"{"mcpServers": {
                "s": {"command": "${BIN}/srv", "args": ["--token=${TOKEN}", "$TOKEN", "${MODE:-fast}"],
                      "env": {"API_KEY": "${TOKEN}", "PLAIN": "x"}, "cwd": "${HOME}/work"},
                "h": {"type": "http", "url": "http://127.0.0.1:${PORT}/mcp?key=${TOKEN}",
                      "headers": {"Authorization": "Bearer ${TOKEN}"}}
            }}"#,
        )
        .unwrap();
    assert!(loaded.invalid.is_empty(), "{:?}", loaded.invalid);
    let h = http(&loaded.servers[0]);
    assert_eq!(h.url, "http://127.0.0.1:8080/mcp?key=tok-SECRET-1");
    assert_eq!(h.headers["Authorization"], "Bearer tok-SECRET-1");
    let s = stdio(&loaded.servers[1]);
    assert_eq!(s.command, "/opt/bin/srv");
    assert_eq!(s.args, ["--token=tok-SECRET-1", "$TOKEN", "fast"]);
    assert_eq!(s.env["API_KEY"], "tok-SECRET-1");
    assert_eq!(s.env["PLAIN"], "x");
    assert_eq!(s.cwd.as_deref(), Some(std::path::Path::new("/home/u/work")));
    // The expanded secret is in neither server's Debug, nor the Loaded's.
    let shown = format!("{loaded:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.contains("--token=${TOKEN}"), "{shown}");
}

/// A key in a URL's path (hosted servers put them there: `https://host/${KEY}/mcp`) is shown
/// as written — in `Debug`, in what the transport says of the URL, and in the URLs made from
/// it — while the server is reached at the expanded URL.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn a_variable_in_a_urls_path_is_shown_as_written_never_expanded() {
    let loaded = opts()
        .load_json(
            r#"{"mcpServers": {
                "z": {"type": "http", "url": "https://u:${TOKEN}@mcp.example/${TOKEN}/sse?k=${TOKEN}"}
            }}"#,
        )
        .unwrap();
    let config = only(loaded);
    let h = http(&config);
    assert_eq!(
        h.url,
        "https://u:tok-SECRET-1@mcp.example/tok-SECRET-1/sse?k=tok-SECRET-1"
    );
    let shown = crate::config::redact_url(&h.url);
    assert_eq!(shown, "https://***@mcp.example/${TOKEN}/sse?***");
    let debug = format!("{config:?}");
    assert!(!debug.contains("SECRET"), "{debug}");
    assert!(debug.contains("mcp.example/${TOKEN}/sse"), "{debug}");
    // A URL made from it (the OAuth protected-resource metadata URL) shows the path as
    // written too.
    let metadata = "https://mcp.example/.well-known/oauth-protected-resource/tok-SECRET-1/sse";
    assert_eq!(
        crate::config::redact_url(metadata),
        "https://mcp.example/.well-known/oauth-protected-resource/${TOKEN}/sse"
    );
}

/// The original functions expand from the process's environment too.
#[test]
fn the_strict_functions_expand_from_the_process_environment() {
    let Ok(path) = std::env::var("PATH") else {
        return; // nothing to compare with
    };
    let servers = ServerConfig::from_mcp_servers_json(
        r#"{"mcpServers": {"a": {"command": "x", "env": {"P": "${PATH}", "Q": "${env:PATH}"}}}}"#,
    )
    .unwrap();
    assert_eq!(stdio(&servers[0]).env["P"], path);
    assert_eq!(stdio(&servers[0]).env["Q"], path);
    let e = ServerConfig::from_mcp_servers_json(
        r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${MCP_SUPERVISOR_TEST_UNSET_7F3A}"}}}}"#,
    )
    .unwrap_err();
    let (server, field, message) = config_error(&e);
    assert_eq!((server, field), (Some("a"), "mcpServers.a.env.K"));
    assert!(
        message.contains("`${MCP_SUPERVISOR_TEST_UNSET_7F3A}` is not set"),
        "{message}"
    );
}

/// An unset variable is an error naming server, field and variable, in every field.
#[test]
fn unset_variables_are_errors_naming_server_and_field() {
    let cases = [
        (r#"{"command": "${NOPE}"}"#, "command"),
        (r#"{"command": "x", "args": ["a", "${NOPE}"]}"#, "args[1]"),
        (r#"{"command": "x", "env": {"K": "${env:NOPE}"}}"#, "env.K"),
        (r#"{"command": "x", "cwd": "${NOPE}/d"}"#, "cwd"),
        (r#"{"command": "x", "envFile": "${NOPE}"}"#, "envFile"),
        (r#"{"url": "http://${NOPE}/mcp"}"#, "url"),
        (r#"{"serverUrl": "http://${NOPE}/mcp"}"#, "serverUrl"),
        (
            r#"{"url": "http://h/mcp", "headers": {"X-Key": "${NOPE}"}}"#,
            "headers.X-Key",
        ),
        (r#"{"command": "x", "args": ["${input:key}"]}"#, "args[0]"),
    ];
    for (entry, want) in cases {
        let json = format!(r#"{{"mcpServers": {{"bad": {entry}, "good": {{"command": "x"}}}}}}"#);
        let loaded = opts().load_json(&json).unwrap();
        assert_eq!(loaded.servers.len(), 1, "{entry}");
        assert_eq!(loaded.invalid.len(), 1, "{entry}");
        let (server, field, message) = config_error(&loaded.invalid[0]);
        assert_eq!(server, Some("bad"), "{entry}");
        assert_eq!(field, format!("mcpServers.bad.{want}"), "{entry}");
        assert!(
            message.contains("NOPE") || message.contains("input:key"),
            "{message}"
        );
    }
}

/// An error never shows the value a variable expanded to.
#[test]
#[cfg(feature = "http")] // its URL and header are checked with the `http` feature's crates
fn errors_show_the_reference_not_the_value() {
    let options = opts().env_vars([("URL", "ftp://user:SECRET-2@h/x"), ("NL", "a\nSECRET-3")]);
    let loaded = options
        .load_json(
            r#"{"mcpServers": {
                "u": {"url": "${URL}"},
                "h": {"url": "http://h/mcp", "headers": {"X": "${NL}"}}
            }}"#,
        )
        .unwrap();
    assert_eq!(loaded.invalid.len(), 2);
    for e in &loaded.invalid {
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }
    let (_, field, message) = config_error(&loaded.invalid[1]);
    assert_eq!(field, "mcpServers.u.url");
    assert!(message.contains("`${URL}`"), "{message}");
    assert_eq!(config_error(&loaded.invalid[0]).1, "mcpServers.h.headers.X");
    assert!(!format!("{options:?}").contains("SECRET"));
}

/// Issue 20, item 1: Claude Code's `~/.claude.json` keeps a project's servers under
/// `projects.<absolute path>.mcpServers`; with `LoadOptions::project` they are read besides
/// the top-level ones, and win over a top-level entry of the same name, whole.
#[test]
fn claude_code_project_servers() {
    let doc = r#"{
        "numStartups": 12,
        "mcpServers": {
            "user": {"command": "user-mcp"},
            "both": {"command": "top-mcp", "env": {"ONLY_TOP": "1"}}
        },
        "projects": {
            "/work/app": {
                "allowedTools": [],
                "mcpServers": {
                    "both": {"command": "project-mcp"},
                    "local": {"command": "local-mcp", "args": ["${NOPE}"]}
                }
            },
            "/work/other": {"mcpServers": {"elsewhere": {"command": "x"}}},
            "/work/empty": {"allowedTools": []}
        }
    }"#;
    let loaded = opts().project("/work/app").load_json(doc).unwrap();
    let names: Vec<_> = loaded.servers.iter().map(ServerConfig::name).collect();
    assert_eq!(names, ["both", "user"]);
    let both = stdio(&loaded.servers[0]);
    assert_eq!(both.command, "project-mcp");
    assert!(both.env.is_empty(), "replaced whole, not merged: {both:?}");
    // A project entry's errors carry its JSON path.
    let (server, field, _) = config_error(&loaded.invalid[0]);
    assert_eq!(server, Some("local"));
    assert_eq!(field, r#"projects["/work/app"].mcpServers.local.args[0]"#);
    // The same project written otherwise: a trailing `/`, a doubled one, `.` and `..` (of a
    // path that does not exist: taken away as written). The project's own entries are read:
    // its `both`, and its `local`, invalid.
    for written in [
        "/work/app/",
        "/work//app",
        "/work/./app",
        "/work/other/../app",
        "/work/x/y/../../app/",
    ] {
        let loaded = opts().project(written).load_json(doc).unwrap();
        let names: Vec<_> = loaded.servers.iter().map(ServerConfig::name).collect();
        assert_eq!(names, ["both", "user"], "{written}");
        assert_eq!(
            stdio(&loaded.servers[0]).command,
            "project-mcp",
            "{written}"
        );
        assert_eq!(loaded.invalid.len(), 1, "{written}");
    }
    // Another project, a project without servers, no project, a file without `projects`:
    // the top-level servers only.
    for options in [
        opts().project("/work/nowhere"),
        opts().project("/work/empty"),
        opts(),
    ] {
        let loaded = options.load_json(doc).unwrap();
        let names: Vec<_> = loaded.servers.iter().map(ServerConfig::name).collect();
        assert_eq!(names, ["both", "user"]);
        assert_eq!(stdio(&loaded.servers[0]).command, "top-mcp");
    }
    let plain = r#"{"mcpServers": {"a": {"command": "x"}}}"#;
    assert_eq!(
        opts()
            .project("/work/app")
            .load_json(plain)
            .unwrap()
            .servers
            .len(),
        1
    );
    // A `~/.claude.json` may have no top-level servers at all.
    let only_projects = r#"{"projects": {"/work/app": {"mcpServers": {"p": {"command": "x"}}}}}"#;
    let loaded = opts()
        .project("/work/app")
        .load_json(only_projects)
        .unwrap();
    assert_eq!(only(loaded).name(), "p");
    assert!(opts().load_json(only_projects).unwrap().servers.is_empty());
    // A project's servers that are not an object are the document's error.
    let bad = r#"{"projects": {"/work/app": {"mcpServers": []}}}"#;
    let e = opts().project("/work/app").load_json(bad).unwrap_err();
    assert_eq!(config_error(&e).1, r#"projects["/work/app"].mcpServers"#);
}

/// A project that exists is found through `..` and symlinks, on either side: the project
/// given through a symlink or a `..` finds the key Claude Code wrote, and a key written
/// through a symlink is found from the real folder.
#[cfg(unix)]
#[test]
fn claude_code_project_found_through_dot_dot_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("sub")).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let real = std::fs::canonicalize(&real).unwrap();
    let doc = |key: &std::path::Path| {
        serde_json::json!({
            "mcpServers": {"both": {"command": "top-mcp"}},
            "projects": {key.to_str().unwrap(): {"mcpServers": {"both": {"command": "project-mcp"}}}},
        })
        .to_string()
    };
    let project_command = |project: &std::path::Path, key: &std::path::Path| {
        let loaded = opts().project(project).load_json(&doc(key)).unwrap();
        stdio(&only(loaded)).command.clone()
    };
    for project in [link.clone(), real.join("sub/.."), link.join("sub/..")] {
        assert_eq!(
            project_command(&project, &real),
            "project-mcp",
            "{project:?}"
        );
    }
    assert_eq!(project_command(&real, &link), "project-mcp");
    // Another folder is another project.
    assert_eq!(project_command(&real.join("sub"), &real), "top-mcp");
}

/// Cursor: `${env:VAR}`, `${userHome}`, `${workspaceFolder}`, `envFile`.
#[test]
fn cursor_format() {
    let dir = tempfile::tempdir().unwrap();
    let cursor = dir.path().join(".cursor");
    std::fs::create_dir(&cursor).unwrap();
    std::fs::write(dir.path().join(".env"), "FROM_FILE=f\nBOTH=file\n").unwrap();
    let file = cursor.join("mcp.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"c": {
            "command": "${userHome}/bin/srv",
            "args": ["${workspaceFolder}", "${workspaceFolderBasename}"],
            "env": {"K": "${env:TOKEN}", "BOTH": "explicit"},
            "envFile": "../.env"
        }}}"#,
    )
    .unwrap();
    let c = only(opts().load_file(&file).unwrap());
    let s = stdio(&c);
    let root = std::path::absolute(dir.path()).unwrap();
    assert_eq!(s.command, "/home/u/bin/srv");
    assert_eq!(s.args[0], root.to_str().unwrap());
    assert_eq!(s.args[1], root.file_name().unwrap().to_str().unwrap());
    assert_eq!(s.env["K"], "tok-SECRET-1");
    assert_eq!(s.env["FROM_FILE"], "f");
    assert_eq!(s.env["BOTH"], "explicit", "explicit env wins over envFile");
    // The application's workspace folder wins over the inferred one.
    let c = only(opts().workspace_folder("/else").load_file(&file).unwrap());
    assert_eq!(stdio(&c).args, ["/else", "else"]);
}

/// VS Code: `servers`, JSONC, `${input:…}`, `enabled: false`, `type: "stdio"`, `envFile`.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn vscode_format() {
    let dir = tempfile::tempdir().unwrap();
    let vscode = dir.path().join(".vscode");
    std::fs::create_dir(&vscode).unwrap();
    std::fs::write(
        dir.path().join("srv.env"),
        "# secrets\nDB_URL=\"postgres://x\"\n",
    )
    .unwrap();
    let file = vscode.join("mcp.json");
    std::fs::write(
        &file,
        r#"// VS Code writes comments...
        {
          "inputs": [
            { "type": "promptString", "id": "api-key", "description": "API key", "password": true },
          ],
          "servers": {
            /* a local server */
            "db": { "type": "stdio", "command": "db-mcp", "envFile": "${workspaceFolder}/srv.env",
                    "env": { "KEY": "${input:api-key}" }, },
            "gh": { "type": "http", "url": "https://api.example.com/mcp/",
                    "headers": { "Authorization": "Bearer ${input:api-key}" } },
            "off": { "command": "x", "enabled": false },
          }, // ...and trailing commas
        }"#,
    )
    .unwrap();
    let loaded = opts()
        .input("api-key", "in-SECRET-4")
        .load_file(&file)
        .unwrap();
    assert!(loaded.invalid.is_empty(), "{:?}", loaded.invalid);
    assert_eq!(loaded.disabled, ["off"]);
    let [db, gh] = &loaded.servers[..] else {
        panic!("{loaded:?}")
    };
    assert_eq!(stdio(db).env["KEY"], "in-SECRET-4");
    assert_eq!(stdio(db).env["DB_URL"], "postgres://x");
    assert_eq!(http(gh).headers["Authorization"], "Bearer in-SECRET-4");
    assert!(!format!("{loaded:?}").contains("SECRET"));
    // Without the input's value: an error naming server, field and input, for both servers.
    let loaded = opts().load_file(&file).unwrap();
    assert_eq!(loaded.invalid.len(), 2);
    let (server, field, message) = config_error(&loaded.invalid[0]);
    assert_eq!((server, field), (Some("db"), "servers.db.env.KEY"));
    assert!(
        message.contains("LoadOptions::input(\"api-key\""),
        "{message}"
    );
    assert_eq!(
        config_error(&loaded.invalid[1]).1,
        "servers.gh.headers.Authorization"
    );
}

/// Windsurf: `serverUrl` is the HTTP url; `${env:VAR}`; `disabled`.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn windsurf_format() {
    let loaded = opts()
        .load_json(
            r#"{"mcpServers": {
                "remote": {"serverUrl": "https://mcp.example.com/mcp", "headers": {"X-Key": "${env:TOKEN}"}},
                "gone": {"command": "x", "disabled": true},
                "both": {"url": "https://a/mcp", "serverUrl": "https://b/mcp"}
            }}"#,
        )
        .unwrap();
    assert_eq!(loaded.disabled, ["gone"]);
    let remote = &loaded.servers[0];
    assert_eq!(remote.name(), "remote");
    assert_eq!(http(remote).url, "https://mcp.example.com/mcp");
    assert_eq!(http(remote).headers["X-Key"], "tok-SECRET-1");
    assert_eq!(
        config_error(&loaded.invalid[0]).1,
        "mcpServers.both.serverUrl"
    );
}

/// Claude Code's `oauth` key: `clientId` and `callbackPort`, the secret expanded from a
/// variable and kept out of `Debug`; our `grant` picks client credentials.
#[test]
#[cfg(feature = "http")] // reads HTTP entries, which a build without `http` refuses
fn claude_code_oauth_key() {
    let loaded = opts()
        .load_json(
            r#"{"mcpServers": {
                "user": {"type": "http", "url": "https://mcp.example.com/mcp",
                         "oauth": {"clientId": "app-1", "callbackPort": 8765}},
                "svc": {"type": "http", "url": "https://mcp.example.com/mcp",
                        "oauth": {"clientId": "svc", "clientSecret": "${TOKEN}", "grant": "client_credentials"}},
                "bad": {"type": "http", "url": "https://mcp.example.com/mcp",
                        "oauth": {"callbackPort": 70000}}
            }}"#,
        )
        .unwrap();
    assert_eq!(loaded.servers.len(), 2, "{:?}", loaded.invalid);
    let user = http(&loaded.servers[1]).oauth.as_deref().expect("oauth");
    assert_eq!(user.client_id.as_deref(), Some("app-1"));
    assert_eq!(user.redirect_uri, "http://localhost:8765/callback");
    assert!(!user.headless);
    let svc = http(&loaded.servers[0]).oauth.as_deref().expect("oauth");
    assert!(svc.headless);
    assert_eq!(
        svc.client_secret.as_ref().map(|s| s.expose()),
        Some("tok-SECRET-1")
    );
    let shown = format!("{loaded:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(format!("{:?}", loaded.invalid).contains("oauth.callbackPort"));
}
