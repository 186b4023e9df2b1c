//! The commands: what each one asks of the supervisor and which exit code its outcome earns.
//!
//! Its own room so that a command reads whole in a few lines: the session (`session.rs`) has
//! started the servers and will stop them, `output.rs` formats what is printed for people and
//! `json.rs` what is printed for scripts. A new command is a variant in `cli.rs` and
//! `action.rs`, an arm in [`Session::run`] and a method here (or, for resources and prompts, in
//! `features.rs`; for tasks, in `tasks.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_supervisor::watch::{ConfigWatcher, WatchOutcome};
use mcp_supervisor::{CallTool, Error, ServerStatus};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::action::Action;
use crate::arguments::{typed, Arguments};
use crate::features::Feature;
use crate::json;
use crate::output::{print_status_table, print_tools};
use crate::session::Session;
use crate::source::invalid_name;
use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

impl Session {
    /// Runs one command to its end; answers its exit code.
    pub(crate) async fn run(&mut self, action: &Action) -> u8 {
        match action {
            Action::Status { wait, .. } => self.status(*wait).await,
            Action::Tools(list) => self.tools(list.wait).await,
            Action::Resources(list) => self.list_feature(Feature::Resources, list).await,
            Action::Templates(list) => self.list_feature(Feature::Templates, list).await,
            Action::Prompts(list) => self.list_feature(Feature::Prompts, list).await,
            Action::Call {
                server,
                tool,
                arguments,
                timeout,
                repeat,
                interval,
                task,
            } => {
                let call = Repeated {
                    server,
                    tool,
                    arguments,
                    timeout: *timeout,
                    repeat: *repeat,
                    interval: *interval,
                    task: *task,
                };
                self.call(call).await
            }
            Action::Read {
                server,
                uri,
                timeout,
            } => self.read(server, uri, *timeout).await,
            Action::Prompt {
                server,
                name,
                arguments,
                timeout,
            } => self.prompt(server, name, arguments, *timeout).await,
            Action::Watch { reload } => self.watch(*reload).await,
            Action::Tasks(action) => self.task(action).await,
        }
    }

    /// `status`: 0 if every server is Ready, 1 if one is not (an invalid entry of the file
    /// counts as one that is not).
    async fn status(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) => {
                if self.json {
                    for status in &statuses {
                        out!("{}", json::status(status));
                    }
                    for e in &self.invalid {
                        out!("{}", json::invalid_entry(invalid_name(e), e));
                    }
                    for name in &self.disabled {
                        out!("{}", json::disabled_entry(name));
                    }
                } else {
                    print_status_table(&statuses, &self.invalid, &self.disabled);
                }
                if self.invalid.is_empty() {
                    all_ready(&statuses)
                } else {
                    EXIT_FAILED
                }
            }
            Err(message) => {
                eprintln!("mcpctl: {message}");
                EXIT_FAILED
            }
        }
    }

    async fn tools(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) if self.json => {
                for status in &statuses {
                    if status.state.is_ready() {
                        for tool in &status.tools {
                            out!("{}", json::item(&status.name, "tool", tool));
                        }
                        if let Some(why) = &status.tools_truncated {
                            out!("{}", json::item(&status.name, "tools_truncated", why));
                        }
                    } else if let Some(e) = &status.last_error {
                        out!("{}", json::server_error(&status.name, e));
                    } else {
                        let reason = format!("it is {}", status.state.name());
                        out!(
                            "{}",
                            json::server_error(&status.name, &unavailable(status, reason))
                        );
                    }
                }
                all_ready(&statuses)
            }
            Ok(statuses) => {
                for (i, status) in statuses.iter().enumerate() {
                    if i > 0 {
                        out!();
                    }
                    print_tools(status);
                }
                all_ready(&statuses)
            }
            Err(message) => {
                eprintln!("mcpctl: {message}");
                EXIT_FAILED
            }
        }
    }

    async fn call(&mut self, args: Repeated<'_>) -> u8 {
        // Waiting for the tool's schema counts against the first call's `--timeout`.
        let begun = Instant::now();
        let arguments = match args.arguments {
            Arguments::Json(map) => map.clone(),
            Arguments::Pairs(pairs) => {
                let schema = self
                    .input_schema(args.server, args.tool, args.timeout)
                    .await;
                match typed(pairs, schema.as_deref()) {
                    Ok(map) => map,
                    Err(message) => {
                        eprintln!("mcpctl: {message}");
                        return EXIT_USAGE;
                    }
                }
            }
        };
        if args.task {
            let timeout = args.timeout.saturating_sub(begun.elapsed());
            return self
                .start_task(args.server, args.tool, arguments, timeout)
                .await;
        }
        let mut code = EXIT_OK;
        for seq in 1..=args.repeat {
            if seq > 1 {
                tokio::time::sleep(args.interval).await;
            }
            let timeout = if seq == 1 {
                args.timeout.saturating_sub(begun.elapsed())
            } else {
                args.timeout
            };
            let call = CallTool::new(args.server, args.tool, Value::Object(arguments.clone()))
                .timeout(timeout);
            let started = Instant::now();
            let outcome = match self.sup.send(call).await {
                Ok(outcome) => outcome,
                // The supervisor is gone: the call never got an answer.
                Err(_) => Err(Error::Stopped {
                    server: args.server.to_owned(),
                }),
            };
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            if exit_code(&outcome) != EXIT_OK {
                code = EXIT_FAILED;
            }
            self.print_call_outcome(Some(seq), ms, &outcome, args.repeat > 1);
        }
        code
    }

    /// The input schema of `server`'s tool, from its cached tool list once it is Ready (at most
    /// `limit`); `None` if it is not, or has no such tool: the call then says why.
    async fn input_schema(
        &mut self,
        server: &str,
        tool: &str,
        limit: Duration,
    ) -> Option<Arc<Map<String, Value>>> {
        let statuses = self.settle(limit).await.ok()?;
        let status = statuses.iter().find(|s| s.name == server)?;
        let tool = status.tools.iter().find(|t| t.name == tool)?;
        Some(tool.input_schema.clone())
    }

    async fn watch(&mut self, reload: bool) -> u8 {
        let mut watcher = match (&self.file, reload) {
            (Some((path, options)), true) => {
                match ConfigWatcher::start(self.sup.clone(), path, options.clone()) {
                    Ok(watcher) => {
                        eprintln!(
                            "mcpctl: watching, and applying each change of {}; Ctrl-C to stop",
                            path.display()
                        );
                        Some(watcher)
                    }
                    Err(e) => {
                        eprintln!("mcpctl: {e}");
                        return EXIT_USAGE;
                    }
                }
            }
            _ => {
                eprintln!("mcpctl: watching; Ctrl-C to stop");
                None
            }
        };
        loop {
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(event) => self.printer.print(&event),
                    None => break,
                },
                Some(outcome) = next_outcome(&mut watcher) => {
                    self.printer.print_reload(&outcome);
                }
            }
        }
        eprintln!("mcpctl: the supervisor's events stopped");
        EXIT_FAILED
    }
}

/// The watcher's next outcome; never, without a watcher.
async fn next_outcome(watcher: &mut Option<ConfigWatcher>) -> Option<WatchOutcome> {
    match watcher {
        Some(watcher) => watcher.next().await,
        None => std::future::pending().await,
    }
}

/// `call`'s values, borrowed from the action.
struct Repeated<'a> {
    server: &'a str,
    tool: &'a str,
    arguments: &'a Arguments,
    timeout: Duration,
    repeat: u32,
    interval: Duration,
    task: bool,
}

/// Why a server that is not Ready and has no error is not: its state.
pub(crate) fn unavailable(status: &ServerStatus, reason: String) -> Error {
    Error::Unavailable {
        server: status.name.clone(),
        reason,
        attempts: 0,
        stderr_tail: Vec::new(),
    }
}

fn all_ready(statuses: &[ServerStatus]) -> u8 {
    if statuses.iter().all(|s| s.state.is_ready()) {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// A tool call's exit code: 0 for a result that is not a tool error, else 1.
pub(crate) fn exit_code(outcome: &Result<CallToolResult, Error>) -> u8 {
    if matches!(outcome, Ok(result) if result.is_error != Some(true)) {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}
