//! What mcpctl prints for people and scripts: the status table (and why a server is not Ready,
//! or its tool list is cut short), the tool lists, the line for each call outcome (human or
//! JSON), and the text of a tool's content.
//!
//! Its own room so that the commands say what to show and this file how it looks; every
//! format a script may parse (the table's columns, `call --json`'s keys) is defined here.

use std::time::Duration;

use mcp_supervisor::protocol::text::{is_unsafe, server_text};
use mcp_supervisor::{Error, ListedTool, ServerStatus, TaskSupport};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool, ToolAnnotations};

use crate::source::invalid_name;

/// Longest server name and version shown in the status table, in characters.
const INFO_WIDTH: usize = 40;
/// Longest tool description shown by `tools`, in characters.
const DESCRIPTION_WIDTH: usize = 64;

/// The status table, then in full why each server that is not Ready is not (its error with
/// every stderr line it kept); the config file's invalid and disabled entries are rows too.
pub(crate) fn print_status_table(
    statuses: &[ServerStatus],
    invalid: &[Error],
    disabled: &[String],
) {
    let header = [
        "NAME",
        "TRANSPORT",
        "STATE",
        "ERA",
        "PROTOCOL",
        "SERVER",
        "TOOLS",
    ];
    let mut rows: Vec<Vec<String>> = statuses
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.transport.to_owned(),
                s.state.name().to_owned(),
                s.era.map_or("-".into(), |e| e.name().to_owned()),
                s.protocol_version.clone().unwrap_or_else(|| "-".into()),
                s.server_info.as_ref().map_or("-".into(), |i| {
                    shorten(
                        &server_text(&format!("{} {}", i.name, i.version)),
                        INFO_WIDTH,
                    )
                }),
                tool_count(s),
            ]
        })
        .collect();
    let other = |name: &str, state: &str| {
        let mut row = vec![name.to_owned(), "-".into(), state.to_owned()];
        row.extend(["-", "-", "-", "-"].map(String::from));
        row
    };
    rows.extend(
        invalid
            .iter()
            .map(|e| other(invalid_name(e).unwrap_or("?"), "invalid")),
    );
    rows.extend(disabled.iter().map(|name| other(name, "disabled")));
    print_table(&header, &rows);

    let mut reasons: Vec<(String, &Error)> = statuses
        .iter()
        .filter(|s| !s.state.is_ready())
        .filter_map(|s| s.last_error.as_ref().map(|e| (s.name.clone(), e)))
        .collect();
    reasons.extend(
        invalid
            .iter()
            .map(|e| (invalid_name(e).unwrap_or("?").to_owned(), e)),
    );
    for (name, error) in reasons {
        out!();
        out!("{name}: {}", full_error(error));
    }
    for s in statuses {
        if let Some(why) = &s.tools_truncated {
            out!();
            out!("{}: {}", s.name, truncated(why));
        }
    }
}

/// The number of tools a server listed, `10000+` when the list was cut short.
fn tool_count(status: &ServerStatus) -> String {
    let plus = if status.tools_truncated.is_some() {
        "+"
    } else {
        ""
    };
    format!("{}{plus}", status.tool_count())
}

/// What a list cut short is told as.
fn truncated(why: &str) -> String {
    format!("the tool list was cut short: {why}")
}

/// Left-aligned columns two spaces apart; the last one is not padded.
pub(crate) fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  "));
            }
        }
        out
    };
    out!("{}", line(header.to_vec()));
    for row in rows {
        out!("{}", line(row.iter().map(String::as_str).collect()));
    }
}

/// An error in full: its first line, then each stderr line it kept (`  | ...`). Nothing is
/// cut: the line that says why (`GITHUB_TOKEN not set`) may be the longest.
pub(crate) fn full_error(error: &Error) -> String {
    error.to_string()
}

pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

pub(crate) fn print_tools(status: &ServerStatus) {
    let state = status.state.name();
    if !status.state.is_ready() {
        let why = status
            .last_error
            .as_ref()
            .map_or(String::new(), |e| format!(": {}", full_error(e)));
        out!("{} ({}, {state}){why}", status.name, status.transport);
        return;
    }
    let cut = status
        .tools_truncated
        .as_ref()
        .map_or(String::new(), |why| format!("; {}", truncated(why)));
    out!(
        "{} ({}, {state}, {} tools{cut})",
        status.name,
        status.transport,
        status.tool_count()
    );
    let rows: Vec<[String; 3]> = status
        .tools
        .iter()
        .map(|tool| [tool.name.to_string(), hints(tool), description(tool)])
        .collect();
    let name_width = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let hint_width = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    for [name, hints, description] in rows {
        let line = format!("  {name:<name_width$}  {hints:<hint_width$}  {description}");
        out!("{}", line.trim_end());
    }
}

/// The hints a tool's annotations declare, e.g. `read-only, idempotent`; `-` if none. Only what
/// a hint says beyond the spec's defaults is shown: `destructive` or `non-destructive` (which
/// only matter for a tool that is not read-only), `idempotent`, `open-world`; and, from its
/// `execution`, `task optional` or `task required` (forbidden is the default).
fn hints(tool: &ListedTool) -> String {
    let none = ToolAnnotations::default();
    let a = tool.annotations.as_ref().unwrap_or(&none);
    let effect = match (a.read_only_hint, a.destructive_hint) {
        (Some(true), _) => Some("read-only"),
        (_, Some(true)) => Some("destructive"),
        (_, Some(false)) => Some("non-destructive"),
        (_, None) => None,
    };
    let task = match tool.task_support() {
        TaskSupport::Optional => Some("task optional"),
        TaskSupport::Required => Some("task required"),
        _ => None,
    };
    let declared: Vec<&str> = [
        effect,
        a.idempotent_hint.filter(|&b| b).map(|_| "idempotent"),
        a.open_world_hint.filter(|&b| b).map(|_| "open-world"),
        task,
    ]
    .into_iter()
    .flatten()
    .collect();
    if declared.is_empty() {
        "-".into()
    } else {
        declared.join(", ")
    }
}

fn description(tool: &Tool) -> String {
    let text = tool.description.as_deref().unwrap_or_default();
    shorten(
        text.lines().next().unwrap_or_default().trim(),
        DESCRIPTION_WIDTH,
    )
}

/// The result's text, `tool error: <text>`, or `error <kind>: <message>`; prefixed with the
/// sequence number and duration when the call is repeated.
pub(crate) fn human_line(
    seq: u32,
    ms: u64,
    outcome: &Result<CallToolResult, Error>,
    numbered: bool,
) -> String {
    let body = match outcome {
        Ok(result) if result.is_error == Some(true) => {
            format!("tool error: {}", for_terminal(&text(result)))
        }
        Ok(result) => for_terminal(&text(result)),
        Err(e) => format!("error {}: {e}", e.code()),
    };
    if numbered {
        let prefix = format!("#{seq} {ms}ms ");
        let indent = " ".repeat(prefix.len());
        format!("{prefix}{}", body.replace('\n', &format!("\n{indent}")))
    } else {
        body
    }
}

/// Content a server wrote (a tool's text, a resource, a prompt), for a terminal: whole, unlike
/// [`server_text`], with its line breaks and tabs, but every other control character, ANSI
/// escape and bidi override written as an escape (`\u{1b}`), so that what a server sends can
/// neither drive the terminal nor forge lines of our own output.
pub(crate) fn for_terminal(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) && c != '\n' && c != '\t' {
            shown.push_str(&c.escape_unicode().to_string());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The content of a tool result for people: text as is, other blocks as a one-line summary.
fn text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(content_text).collect();
    if !parts.is_empty() {
        return parts.join("\n");
    }
    match &result.structured_content {
        Some(value) => value.to_string(),
        None => "(empty result)".into(),
    }
}

pub(crate) fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image {}, {} bytes]", i.mime_type, base64_len(&i.data)),
        ContentBlock::Audio(a) => format!("[audio {}, {} bytes]", a.mime_type, base64_len(&a.data)),
        ContentBlock::Resource(r) => resource_text(&r.resource),
        ContentBlock::ResourceLink(link) => format!("[link {} {}]", link.name, link.uri),
        // Content types added in later versions.
        other => serde_json::to_string(other).unwrap_or_else(|_| "[content]".into()),
    }
}

pub(crate) fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents { uri, blob, .. } => {
            format!("[resource {uri}, {} bytes]", base64_len(blob))
        }
        // Kinds added in later versions.
        other => serde_json::to_string(other).unwrap_or_else(|_| "[resource]".into()),
    }
}

/// Decoded size of base64 data.
pub(crate) fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `30s` or `1500ms`, as durations are written on the command line.
pub(crate) fn show_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::for_terminal;

    #[test]
    fn server_content_cannot_drive_the_terminal() {
        let shown = for_terminal("red \u{1b}[31mtext\u{1b}[0m\r\u{202e}evil\u{7}\nnext\tline");
        assert_eq!(
            shown,
            "red \\u{1b}[31mtext\\u{1b}[0m\\u{d}\\u{202e}evil\\u{7}\nnext\tline"
        );
        let long = "x".repeat(10_000);
        assert_eq!(for_terminal(&long), long, "whole, not bounded");
    }
}
