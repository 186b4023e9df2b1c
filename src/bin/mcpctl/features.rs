//! The commands about a server's resources and prompts: `resources`, `templates`, `read`,
//! `prompts` and `prompt`, with what they print for people (`--json` lines are `json.rs`'s).
//!
//! Its own room because these are the MCP features besides tools: their lists are fetched on
//! demand (the supervisor caches only tools), every page of them, bounded, and only from the
//! servers that declare the capability.

use std::time::{Duration, Instant};

use actix::Handler;
use mcp_supervisor::protocol::jsonrpc::codes::METHOD_NOT_FOUND;
use mcp_supervisor::protocol::text::server_text;
use mcp_supervisor::{
    AsSent, Error, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ReadResource,
    ServerStatus, Supervisor, TypedCall,
};
use rmcp::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Role};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::action::List;
use crate::commands::unavailable;
use crate::json;
use crate::output::{content_text, for_terminal, full_error, resource_text, shorten};
use crate::session::Session;
use crate::{EXIT_FAILED, EXIT_OK};

/// The most pages of one list fetched: a server whose cursors never end cannot keep us.
const MAX_PAGES: usize = 100;
/// Longest description shown in a list, in characters.
const DESCRIPTION_WIDTH: usize = 64;

/// Which list a command shows.
#[derive(Clone, Copy)]
pub(crate) enum Feature {
    Resources,
    /// Resource templates: part of the resources capability.
    Templates,
    Prompts,
}

impl Session {
    /// `resources` and `prompts`: every page of the list, from each Ready server that offers
    /// the feature.
    pub(crate) async fn list_feature(&mut self, feature: Feature, list: &List) -> u8 {
        let statuses = match self.settle(list.wait).await {
            Ok(statuses) => statuses,
            Err(message) => {
                eprintln!("mcpctl: {message}");
                return EXIT_FAILED;
            }
        };
        let mut code = EXIT_OK;
        let mut first = true;
        for status in &statuses {
            if !status.state.is_ready() {
                code = EXIT_FAILED;
                self.not_ready(status);
                continue;
            }
            if !offers(status, feature) {
                if list.server.is_some() && !self.json {
                    out!("{} offers no {}", status.name, feature.noun());
                }
                continue;
            }
            if !self.json && !std::mem::take(&mut first) {
                out!();
            }
            let ok = match feature {
                Feature::Resources => self.show_resources(&status.name, list.timeout).await,
                Feature::Templates => self.show_templates(&status.name, list.timeout).await,
                Feature::Prompts => self.show_prompts(&status.name, list.timeout).await,
            };
            if !ok {
                code = EXIT_FAILED;
            }
        }
        code
    }

    fn not_ready(&self, status: &ServerStatus) {
        let error = status
            .last_error
            .clone()
            .unwrap_or_else(|| unavailable(status, format!("it is {}", status.state.name())));
        if self.json {
            out!("{}", json::server_error(&status.name, &error));
        } else {
            out!(
                "{} ({}, {}): {}",
                status.name,
                status.transport,
                status.state.name(),
                full_error(&error)
            );
        }
    }

    async fn show_resources(&self, server: &str, timeout: Duration) -> bool {
        let pages = self
            .walk(
                server,
                |cursor| with_cursor(ListResources::new(server), cursor, timeout),
                |page| (page.resources, page.next_cursor),
            )
            .await;
        self.show_list(server, "resource", pages, resource_line)
    }

    /// A server that declares resources may still have no templates: one that answers
    /// "method not found" lists none, as one without the capability.
    async fn show_templates(&self, server: &str, timeout: Duration) -> bool {
        let pages = self
            .walk(
                server,
                |cursor| with_cursor(ListResourceTemplates::new(server), cursor, timeout),
                |page| (page.resource_templates, page.next_cursor),
            )
            .await;
        let pages = match pages {
            Err(Error::Rpc { code, .. }) if code == METHOD_NOT_FOUND => Ok(Vec::new()),
            pages => pages,
        };
        self.show_list(server, "template", pages, template_line)
    }

    async fn show_prompts(&self, server: &str, timeout: Duration) -> bool {
        let pages = self
            .walk(
                server,
                |cursor| with_cursor(ListPrompts::new(server), cursor, timeout),
                |page| (page.prompts, page.next_cursor),
            )
            .await;
        self.show_list(server, "prompt", pages, prompt_line)
    }

    /// Prints a fetched list: one JSON line per item (the item as the server listed it, every
    /// member included), or a heading and a line per item.
    fn show_list<T>(
        &self,
        server: &str,
        key: &str,
        items: Result<Vec<AsSent<T>>, Error>,
        columns: fn(&T) -> Vec<String>,
    ) -> bool {
        match (items, self.json) {
            (Ok(items), true) => {
                for item in &items {
                    out!("{}", json::item(server, key, item));
                }
                true
            }
            (Ok(items), false) => {
                out!("{server} ({} {key}s)", items.len());
                let rows: Vec<Vec<String>> = items.iter().map(|item| columns(item)).collect();
                for line in aligned(&rows) {
                    out!("  {line}");
                }
                true
            }
            (Err(e), true) => {
                out!("{}", json::server_error(server, &e));
                false
            }
            (Err(e), false) => {
                out!("{server}: error {}: {}", e.code(), full_error(&e));
                false
            }
        }
    }

    /// Every page of a list, following its cursors: at most [`MAX_PAGES`], and never the same
    /// cursor twice.
    async fn walk<M, T>(
        &self,
        server: &str,
        request: impl Fn(Option<String>) -> M,
        split: impl Fn(M::Output) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, Error>
    where
        M: TypedCall + Send + 'static,
        M::Output: Send,
        Supervisor: Handler<M>,
    {
        let mut items = Vec::new();
        let mut seen = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.send(server, request(cursor.clone())).await?;
            let (mut page_items, next) = split(page);
            items.append(&mut page_items);
            match next {
                Some(next) if !seen.contains(&next) => {
                    seen.push(next.clone());
                    cursor = Some(next);
                }
                _ => return Ok(items),
            }
        }
        Ok(items)
    }

    /// Sends a typed request; a supervisor that is gone is `stopped`.
    async fn send<M>(&self, server: &str, request: M) -> Result<M::Output, Error>
    where
        M: TypedCall + Send + 'static,
        M::Output: Send,
        Supervisor: Handler<M>,
    {
        match self.sup.send(request).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::Stopped {
                server: server.to_owned(),
            }),
        }
    }

    /// `read`: the resource's contents.
    pub(crate) async fn read(&self, server: &str, uri: &str, timeout: Duration) -> u8 {
        let started = Instant::now();
        let outcome = self
            .send(server, ReadResource::new(server, uri).timeout(timeout))
            .await;
        self.show_outcome(started, &outcome, read_text)
    }

    /// `prompt`: the rendered prompt's messages.
    pub(crate) async fn prompt(
        &self,
        server: &str,
        name: &str,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> u8 {
        let mut request = GetPrompt::new(server, name).timeout(timeout);
        request.arguments = arguments.clone();
        let started = Instant::now();
        let outcome = self.send(server, request).await;
        self.show_outcome(started, &outcome, prompt_text)
    }

    fn show_outcome<T: Serialize>(
        &self,
        started: Instant,
        outcome: &Result<T, Error>,
        text: fn(&T) -> String,
    ) -> u8 {
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match (outcome, self.json) {
            (_, true) => out!("{}", json::outcome(None, ms, outcome)),
            (Ok(result), false) => out!("{}", for_terminal(&text(result))),
            (Err(e), false) => out!("error {}: {}", e.code(), full_error(e)),
        }
        if outcome.is_ok() {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    }
}

impl Feature {
    fn noun(self) -> &'static str {
        match self {
            Feature::Resources => "resources",
            Feature::Templates => "resource templates",
            Feature::Prompts => "prompts",
        }
    }
}

/// Whether the server declared the capability in its handshake.
fn offers(status: &ServerStatus, feature: Feature) -> bool {
    let Some(capabilities) = &status.capabilities else {
        return false;
    };
    match feature {
        Feature::Resources | Feature::Templates => capabilities.resources.is_some(),
        Feature::Prompts => capabilities.prompts.is_some(),
    }
}

fn with_cursor<M: CursorRequest>(request: M, cursor: Option<String>, timeout: Duration) -> M {
    let request = match cursor {
        Some(cursor) => request.cursor(cursor),
        None => request,
    };
    request.with_timeout(timeout)
}

/// The list requests, which take a cursor and a timeout alike.
trait CursorRequest {
    fn cursor(self, cursor: String) -> Self;
    fn with_timeout(self, timeout: Duration) -> Self;
}

impl CursorRequest for ListResources {
    fn cursor(mut self, cursor: String) -> Self {
        self.cursor = Some(cursor);
        self
    }
    fn with_timeout(self, timeout: Duration) -> Self {
        self.timeout(timeout)
    }
}

impl CursorRequest for ListResourceTemplates {
    fn cursor(mut self, cursor: String) -> Self {
        self.cursor = Some(cursor);
        self
    }
    fn with_timeout(self, timeout: Duration) -> Self {
        self.timeout(timeout)
    }
}

impl CursorRequest for ListPrompts {
    fn cursor(mut self, cursor: String) -> Self {
        self.cursor = Some(cursor);
        self
    }
    fn with_timeout(self, timeout: Duration) -> Self {
        self.timeout(timeout)
    }
}

/// Columns two spaces apart, each as wide as its widest cell; lines end without spaces.
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, &width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

/// `demo://clock  clock  text/plain  A version number...`: all of it server text, escaped.
fn resource_line(r: &Resource) -> Vec<String> {
    vec![
        server_text(&r.uri),
        server_text(&r.name),
        server_text(r.mime_type.as_deref().unwrap_or("-")),
        server_text(&first_line(r.description.as_deref())),
    ]
}

/// `demo://greeting/{name}  greeting  text/plain  A greeting...`: all of it server text, escaped.
fn template_line(t: &ResourceTemplate) -> Vec<String> {
    vec![
        server_text(&t.uri_template),
        server_text(&t.name),
        server_text(t.mime_type.as_deref().unwrap_or("-")),
        server_text(&first_line(t.description.as_deref())),
    ]
}

/// `greet(name*)  Greets someone by name.`: `*` marks a required argument.
fn prompt_line(p: &Prompt) -> Vec<String> {
    let arguments: Vec<String> = p
        .arguments
        .iter()
        .flatten()
        .map(|a| {
            let star = if a.required == Some(true) { "*" } else { "" };
            format!("{}{star}", a.name)
        })
        .collect();
    vec![
        server_text(&format!("{}({})", p.name, arguments.join(", "))),
        server_text(&first_line(p.description.as_deref())),
    ]
}

fn first_line(text: Option<&str>) -> String {
    let line = text.unwrap_or_default().lines().next().unwrap_or_default();
    shorten(line.trim(), DESCRIPTION_WIDTH)
}

/// Each content of a read resource, text as is and blobs as their size.
fn read_text(result: &ReadResourceResult) -> String {
    let parts: Vec<String> = result.contents.iter().map(resource_text).collect();
    if parts.is_empty() {
        "(no contents)".into()
    } else {
        parts.join("\n")
    }
}

/// Each message of a rendered prompt, with its role.
fn prompt_text(result: &GetPromptResult) -> String {
    let messages: Vec<String> = result
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            format!("[{role}] {}", content_text(&m.content))
        })
        .collect();
    if messages.is_empty() {
        "(no messages)".into()
    } else {
        messages.join("\n")
    }
}
