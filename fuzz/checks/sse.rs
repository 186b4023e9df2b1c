//! The Server-Sent Events parser (`protocol::sse`): however the input is cut into reads, it
//! yields what the HTML standard's rules, written plainly, yield for the whole input, and it
//! never buffers much more than its limit.

use super::split_fuzz_input;
use mcp_supervisor::protocol::sse::{SseItem, SseParser};
use std::time::Duration;

/// The Server-Sent Events rules of the HTML standard, written plainly over the whole input
/// (no size limit).
pub fn sse_model(input: &[u8]) -> Vec<SseItem> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let mut lines = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < input.len() {
        match input[i] {
            b'\r' => {
                lines.push(&input[start..i]);
                if input.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            b'\n' => {
                lines.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let (mut out, mut data, mut event, mut id) = (Vec::new(), String::new(), None, None);
    for line in lines {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if let Some(d) = data.strip_suffix('\n').filter(|d| !d.is_empty()) {
                out.push(SseItem::Event {
                    id: id.clone(),
                    event: event.take(),
                    data: d.to_owned(),
                });
            }
            data.clear();
            event = None;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "event" => event = Some(value.to_owned()),
            "id" if !value.contains('\0') => id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    out.push(SseItem::Retry(Duration::from_millis(ms)));
                }
            }
            _ => {}
        }
    }
    out
}

/// Feeds `input` to an SSE parser cut at `cuts` (a repeated cut is an empty read), checking
/// what it buffers.
pub fn parse_sse(input: &[u8], cuts: &[usize], max_event_bytes: usize) -> Vec<SseItem> {
    let mut parser = SseParser::new(max_event_bytes);
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
        let cut = cut.clamp(start, input.len());
        out.extend(parser.feed(&input[start..cut]));
        start = cut;
        assert!(
            parser.buffered() <= max_event_bytes + 17,
            "buffered {} bytes with a limit of {max_event_bytes}",
            parser.buffered()
        );
    }
    out
}

/// Fuzz entry: the SSE parser matches its model without a limit, and gives the same items under
/// any cuts with one.
pub fn fuzz_sse(data: &[u8]) {
    let (param, cuts, input) = split_fuzz_input(data);
    assert_eq!(parse_sse(input, &cuts, 1 << 20), sse_model(input));
    let max = usize::from(param % 64) + 1;
    assert_eq!(parse_sse(input, &cuts, max), parse_sse(input, &[], max));
}
