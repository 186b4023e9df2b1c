//! The commands: what each one asks of the supervisor and which exit code its outcome earns.
//!
//! Its own room so that a command reads whole in a few lines: the session (`session.rs`) has
//! started the servers and will stop them, and `output.rs` formats what is printed. A new
//! command is a variant in `cli.rs`, an arm in [`Session::run`] and a method here.

use std::time::{Duration, Instant};

use mcp_supervisor::{CallTool, Error, ServerStatus};
use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::cli::{CallArgs, Command};
use crate::output::{human_line, json_line, print_status_table, print_tools};
use crate::session::Session;
use crate::{EXIT_FAILED, EXIT_OK};

impl Session {
    /// Runs one command to its end; answers its exit code.
    pub(crate) async fn run(&mut self, command: &Command) -> u8 {
        match command {
            Command::Status(wait) => self.status(wait.wait).await,
            Command::Tools { wait, .. } => self.tools(wait.wait).await,
            Command::Call(args) => self.call(args).await,
            Command::Watch => self.watch().await,
        }
    }

    async fn status(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) => {
                print_status_table(&statuses);
                all_ready(&statuses)
            }
            Err(message) => {
                eprintln!("mcpctl: {message}");
                EXIT_FAILED
            }
        }
    }

    async fn tools(&mut self, wait: Duration) -> u8 {
        match self.settle(wait).await {
            Ok(statuses) => {
                for (i, status) in statuses.iter().enumerate() {
                    if i > 0 {
                        println!();
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

    async fn call(&mut self, args: &CallArgs) -> u8 {
        let mut code = EXIT_OK;
        for seq in 1..=args.repeat {
            if seq > 1 {
                tokio::time::sleep(args.interval).await;
            }
            let call = CallTool::new(
                &args.server,
                &args.tool,
                Value::Object(args.arguments.clone()),
            )
            .timeout(args.timeout);
            let started = Instant::now();
            let outcome = match self.sup.send(call).await {
                Ok(outcome) => outcome,
                // The supervisor is gone: the call never got an answer.
                Err(_) => Err(Error::Stopped {
                    server: args.server.clone(),
                }),
            };
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            if !succeeded(&outcome) {
                code = EXIT_FAILED;
            }
            if args.json {
                println!("{}", json_line(seq, ms, &outcome));
            } else {
                println!("{}", human_line(seq, ms, &outcome, args.repeat > 1));
            }
        }
        code
    }

    async fn watch(&mut self) -> u8 {
        eprintln!("mcpctl: watching; Ctrl-C to stop");
        while let Some(event) = self.events.recv().await {
            self.printer.print(&event);
        }
        eprintln!("mcpctl: the supervisor's events stopped");
        EXIT_FAILED
    }
}

fn all_ready(statuses: &[ServerStatus]) -> u8 {
    if statuses.iter().all(|s| s.state.is_ready()) {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn succeeded(outcome: &Result<CallToolResult, Error>) -> bool {
    matches!(outcome, Ok(result) if result.is_error != Some(true))
}
