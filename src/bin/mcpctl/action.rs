//! The command line resolved: which command, about which server, with which values.
//!
//! Its own room because the words of `call`, `read` and `prompt` mean different things by
//! where the servers come from: with a config file the first names the server, with a server
//! given by `--stdio`/`--http` there is only that one and no name to give. Everything here is
//! checked before any server starts; an error is a usage error (exit code 2).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::cli::{CallArgs, Command, ListArgs, PromptArgs, ReadArgs, TaskArgs, TasksCommand};

/// One command, with every value it needs.
#[derive(Debug)]
pub(crate) enum Action {
    Status {
        server: Option<String>,
        wait: Duration,
    },
    Tools(List),
    Resources(List),
    Templates(List),
    Prompts(List),
    Call {
        server: String,
        tool: String,
        arguments: Arguments,
        timeout: Duration,
        repeat: u32,
        interval: Duration,
        /// `--task`: start it as a task and print its handle.
        task: bool,
    },
    Read {
        server: String,
        uri: String,
        timeout: Duration,
    },
    Prompt {
        server: String,
        name: String,
        arguments: Map<String, Value>,
        timeout: Duration,
    },
    Watch {
        /// Apply each change of the mcpServers file.
        reload: bool,
    },
    Tasks(TaskAction),
}

/// `tasks list`, `show`, `wait`, `cancel`.
#[derive(Debug)]
pub(crate) enum TaskAction {
    /// The task store's tasks, of one server or all; no server is started.
    List {
        server: Option<String>,
    },
    Show(TaskRef),
    Wait(TaskRef),
    Cancel(TaskRef),
}

/// One task, as the command line names it, and the deadline of what is asked about it.
#[derive(Debug)]
pub(crate) struct TaskRef {
    pub(crate) server: String,
    pub(crate) task_id: String,
    pub(crate) timeout: Duration,
}

/// `tools`, `resources`, `templates`, `prompts`: all servers or one.
#[derive(Debug)]
pub(crate) struct List {
    pub(crate) server: Option<String>,
    pub(crate) wait: Duration,
    pub(crate) timeout: Duration,
}

impl Action {
    /// Resolves `command`; `single` is the name of the server given on the command line, if
    /// one was (then SERVER is left out of `call`, `read` and `prompt`).
    pub(crate) fn resolve(command: Command, single: Option<&str>) -> Result<Action, String> {
        Ok(match command {
            Command::Status { server, wait, .. } => Action::Status {
                server: only(server, single)?,
                wait: wait.wait,
            },
            Command::Tools(args) => Action::Tools(list(args, single)?),
            Command::Resources(args) => Action::Resources(list(args, single)?),
            Command::Templates(args) => Action::Templates(list(args, single)?),
            Command::Prompts(args) => Action::Prompts(list(args, single)?),
            Command::Call(args) => call(args, single)?,
            Command::Read(args) => read(args, single)?,
            Command::Prompt(args) => prompt(args, single)?,
            Command::Tasks { command } => Action::Tasks(match command {
                TasksCommand::List { server } => TaskAction::List {
                    server: only(server, single)?.or_else(|| single.map(str::to_owned)),
                },
                TasksCommand::Show(args) => TaskAction::Show(task_ref(args, single)?),
                TasksCommand::Wait(args) => TaskAction::Wait(task_ref(args, single)?),
                TasksCommand::Cancel(args) => TaskAction::Cancel(task_ref(args, single)?),
            }),
            Command::Watch { reload, .. } => {
                if reload && single.is_some() {
                    return Err(
                        "--reload watches the mcpServers file (--config), not a server \
                                given on the command line"
                            .into(),
                    );
                }
                Action::Watch { reload }
            }
            // A login is the status of the one server, reached through the browser.
            Command::Login { server, wait, .. } => {
                let server = only(server, single)?;
                if server.is_none() {
                    return Err("login needs the SERVER to log in to".into());
                }
                Action::Status { server, wait }
            }
            Command::Completions { .. } => {
                return Err("completions need no servers".into());
            }
        })
    }

    /// The one server the command is about, if it names one: the only one started.
    pub(crate) fn server(&self) -> Option<&str> {
        match self {
            Action::Tools(list)
            | Action::Resources(list)
            | Action::Templates(list)
            | Action::Prompts(list) => list.server.as_deref(),
            Action::Call { server, .. }
            | Action::Read { server, .. }
            | Action::Prompt { server, .. } => Some(server),
            Action::Status { server, .. } => server.as_deref(),
            Action::Tasks(
                TaskAction::Show(task) | TaskAction::Wait(task) | TaskAction::Cancel(task),
            ) => Some(&task.server),
            Action::Watch { .. } | Action::Tasks(TaskAction::List { .. }) => None,
        }
    }
}

/// An optional SERVER: with a server on the command line, it may only name that one.
fn only(server: Option<String>, single: Option<&str>) -> Result<Option<String>, String> {
    if let (Some(given), Some(single)) = (&server, single) {
        if given != single {
            return Err(format!(
                "the server given on the command line is named `{single}`, not `{given}` \
                 (leave SERVER out)"
            ));
        }
    }
    Ok(server)
}

fn list(args: ListArgs, single: Option<&str>) -> Result<List, String> {
    Ok(List {
        server: only(args.server, single)?,
        wait: args.wait.wait,
        timeout: args.timeout.timeout,
    })
}

/// Splits the words into the server's name and the rest: with a server on the command line,
/// its name, and all of the words.
fn server_and_rest(
    mut words: Vec<String>,
    single: Option<&str>,
    what: &str,
) -> Result<(String, Vec<String>), String> {
    match single {
        Some(name) => Ok((name.to_owned(), words)),
        None if words.len() < 2 => Err(format!(
            "expected SERVER {what} (SERVER is left out only with --stdio or --http)"
        )),
        None => {
            let server = words.remove(0);
            Ok((server, words))
        }
    }
}

fn call(args: CallArgs, single: Option<&str>) -> Result<Action, String> {
    let (server, mut rest) = server_and_rest(args.words, single, "TOOL [JSON | KEY=VALUE...]")?;
    if rest.is_empty() {
        return Err("expected TOOL [JSON | KEY=VALUE...]".into());
    }
    let tool = rest.remove(0);
    let arguments = Arguments::parse(&rest).map_err(|e| {
        if single.is_some() {
            format!("{e} (SERVER is left out with --stdio or --http)")
        } else {
            e
        }
    })?;
    Ok(Action::Call {
        server,
        tool,
        arguments,
        timeout: args.timeout.timeout,
        repeat: args.repeat,
        interval: args.interval,
        task: args.task,
    })
}

/// `[SERVER] TASK_ID`: a task id is the server's text, never empty, and at most what the task
/// store keeps.
fn task_ref(args: TaskArgs, single: Option<&str>) -> Result<TaskRef, String> {
    let (server, rest) = server_and_rest(args.words, single, "TASK_ID")?;
    let Ok([task_id]) = <[String; 1]>::try_from(rest) else {
        return Err("expected one TASK_ID (SERVER is left out with --stdio or --http)".into());
    };
    if task_id.is_empty() {
        return Err("TASK_ID is empty".into());
    }
    let limit = mcp_supervisor::tasks::record::MAX_NAME_BYTES;
    if task_id.len() > limit {
        return Err(format!(
            "TASK_ID is longer than a task id may be ({limit} bytes)"
        ));
    }
    Ok(TaskRef {
        server,
        task_id,
        timeout: args.timeout.timeout,
    })
}

fn read(args: ReadArgs, single: Option<&str>) -> Result<Action, String> {
    let (server, rest) = server_and_rest(args.words, single, "URI")?;
    match <[String; 1]>::try_from(rest) {
        Ok([uri]) => Ok(Action::Read {
            server,
            uri,
            timeout: args.timeout.timeout,
        }),
        Err(_) => Err("expected one URI (SERVER is left out with --stdio or --http)".into()),
    }
}

fn prompt(args: PromptArgs, single: Option<&str>) -> Result<Action, String> {
    let (server, rest) = server_and_rest(args.words, single, "NAME [KEY=VALUE...]")?;
    let mut rest = rest.into_iter();
    let name = rest.next().ok_or("expected NAME [KEY=VALUE...]")?;
    let mut arguments = Map::new();
    for word in rest {
        match word.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                // As `call`'s: a key given twice is a mistake, not the last one winning.
                if arguments.contains_key(key) {
                    return Err(format!("the argument `{key}` is given twice"));
                }
                arguments.insert(key.to_owned(), Value::String(value.to_owned()));
            }
            _ => return Err(format!("expected KEY=VALUE, not `{word}`")),
        }
    }
    Ok(Action::Prompt {
        server,
        name,
        arguments,
        timeout: args.timeout.timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn resolve(args: &[&str], single: Option<&str>) -> Result<Action, String> {
        let cli = Cli::try_parse_from(std::iter::once("mcpctl").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Action::resolve(cli.command, single)
    }

    #[test]
    fn call_names_its_server_only_with_a_config_file() {
        let Ok(Action::Call {
            server,
            tool,
            arguments,
            ..
        }) = resolve(&["call", "fs", "echo", r#"{"a":1}"#], None)
        else {
            panic!("not a call");
        };
        assert_eq!((server.as_str(), tool.as_str()), ("fs", "echo"));
        let Arguments::Json(arguments) = arguments else {
            panic!("not JSON: {arguments:?}");
        };
        assert_eq!(arguments.get("a"), Some(&Value::from(1)));

        let Ok(Action::Call { server, tool, .. }) = resolve(&["call", "echo"], Some("npx")) else {
            panic!("not a call");
        };
        assert_eq!((server.as_str(), tool.as_str()), ("npx", "echo"));

        assert!(resolve(&["call", "echo"], None).is_err());
        assert!(resolve(&["call", "fs", "echo", "{}"], Some("npx")).is_err());
        assert!(resolve(&["call", "fs", "echo", "[1]"], None).is_err());

        // Issue 20, item 6: KEY=VALUE words, typed once the tool's schema is known.
        let Ok(Action::Call { arguments, .. }) =
            resolve(&["call", "fs", "read", "path=/a", "head=3"], None)
        else {
            panic!("not a call");
        };
        assert!(
            matches!(&arguments, Arguments::Pairs(p) if p.len() == 2 && p[1] == ("head".into(), "3".into())),
            "{arguments:?}"
        );
        let e = resolve(&["call", "fs", "echo", "a=1", "b"], Some("npx")).unwrap_err();
        assert!(e.contains("SERVER is left out"), "{e}");
    }

    #[test]
    fn prompt_arguments_are_key_value_pairs() {
        let Ok(Action::Prompt {
            server,
            name,
            arguments,
            ..
        }) = resolve(&["prompt", "demo", "greet", "name=Ada=L"], None)
        else {
            panic!("not a prompt");
        };
        assert_eq!((server.as_str(), name.as_str()), ("demo", "greet"));
        assert_eq!(arguments.get("name"), Some(&Value::from("Ada=L")));
        assert!(resolve(&["prompt", "greet", "oops"], Some("demo")).is_err());
        // A key given twice is refused, as `call` refuses it.
        let e = resolve(&["prompt", "demo", "greet", "name=a", "name=b"], None).unwrap_err();
        assert!(e.contains("`name` is given twice"), "{e}");
    }

    #[test]
    fn read_takes_one_uri() {
        assert!(matches!(
            resolve(&["read", "demo://clock"], Some("demo")),
            Ok(Action::Read { .. })
        ));
        assert!(resolve(&["read", "demo://clock"], None).is_err());
        assert!(resolve(&["read", "x", "demo://clock"], Some("demo")).is_err());
    }

    #[test]
    fn a_task_is_named_by_its_server_and_id() {
        let Ok(Action::Tasks(TaskAction::Wait(task))) =
            resolve(&["tasks", "wait", "demo", "t-1", "--timeout", "2s"], None)
        else {
            panic!("not a wait");
        };
        assert_eq!(
            (task.server.as_str(), task.task_id.as_str()),
            ("demo", "t-1")
        );
        assert_eq!(task.timeout, Duration::from_secs(2));
        assert!(matches!(
            resolve(&["tasks", "show", "t-1"], Some("demo")),
            Ok(Action::Tasks(TaskAction::Show(_)))
        ));
        assert!(resolve(&["tasks", "cancel", "t-1"], None).is_err());
        assert!(resolve(&["tasks", "cancel", "demo", ""], None).is_err());
        let long = "x".repeat(2000);
        assert!(resolve(&["tasks", "wait", "demo", &long], None).is_err());
        let Ok(Action::Tasks(TaskAction::List { server })) = resolve(&["tasks", "list"], None)
        else {
            panic!("not a list");
        };
        assert_eq!(server, None);
        // `--task` starts one task: not with --repeat.
        assert!(resolve(&["call", "demo", "job", "--task", "--repeat", "2"], None).is_err());
        assert!(matches!(
            resolve(&["call", "demo", "job", "--task"], None),
            Ok(Action::Call { task: true, .. })
        ));
    }

    #[test]
    fn a_list_names_the_single_server_or_none() {
        assert!(resolve(&["tools"], Some("demo")).is_ok());
        assert!(resolve(&["tools", "demo"], Some("demo")).is_ok());
        assert!(resolve(&["tools", "other"], Some("demo")).is_err());
        assert!(resolve(&["status", "other"], Some("demo")).is_err());
        let Ok(Action::Status { server, .. }) = resolve(&["status", "fs"], None) else {
            panic!("not a status");
        };
        assert_eq!(server.as_deref(), Some("fs"));
    }
}
