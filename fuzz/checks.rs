//! The checks shared by the fuzz targets (`fuzz/fuzz_targets/`) and by `cargo test`
//! (`tests/it/parser_properties.rs`): simple reference models of the pure parsers, and runs of the
//! real parsers over an input cut into reads at given points.
//!
//! The rule behind every check: how a byte stream happens to be cut into reads must never change
//! what is parsed out of it, and no parser holds much more than its limit.

#![allow(dead_code)] // Each includer uses the part it needs.

use bytes::{Bytes, BytesMut};
use mcp_supervisor::protocol::codec::{Line, LineCodec};
use mcp_supervisor::protocol::jsonrpc::{parse_frame, Id, Inbound};
use mcp_supervisor::protocol::response::plain_response;
use mcp_supervisor::protocol::sse::{SseItem, SseParser};
use std::time::Duration;
use tokio_util::codec::Decoder;

/// Splits fuzzer bytes into (a parameter byte, cut points, the input).
pub fn split_fuzz_input(data: &[u8]) -> (u8, Vec<usize>, &[u8]) {
    let Some((&param, rest)) = data.split_first() else {
        return (0, Vec::new(), data);
    };
    let Some((&n, rest)) = rest.split_first() else {
        return (param, Vec::new(), rest);
    };
    let n = usize::from(n % 8).min(rest.len());
    let (cuts, input) = rest.split_at(n);
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|c| usize::from(*c) * input.len() / 255)
        .collect();
    cuts.sort_unstable();
    (param, cuts, input)
}

/// The newline codec: what it must yield for `input` read as a whole.
pub fn line_model(input: &[u8], max_len: usize) -> Vec<Line> {
    fn item(raw: &[u8], consumed: usize, max_len: usize) -> Option<Line> {
        let content = raw.strip_suffix(b"\r").unwrap_or(raw);
        if content.len() > max_len {
            Some(Line::Oversized { len: consumed })
        } else if content.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(Line::Complete(Bytes::copy_from_slice(content)))
        }
    }
    let mut out = Vec::new();
    let mut rest = input;
    while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
        out.extend(item(&rest[..pos], pos + 1, max_len));
        rest = &rest[pos + 1..];
    }
    if !rest.is_empty() {
        out.extend(item(rest, rest.len(), max_len));
    }
    out
}

/// Runs the codec over `input` cut at `cuts` as `FramedRead` would, checking what it buffers.
pub fn decode_lines(input: &[u8], cuts: &[usize], max_len: usize) -> Vec<Line> {
    let mut codec = LineCodec::new(max_len);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
        let cut = cut.clamp(start, input.len());
        buf.extend_from_slice(&input[start..cut]);
        start = cut;
        while let Some(line) = codec.decode(&mut buf).expect("the codec never fails") {
            out.push(line);
        }
        assert!(
            buf.len() <= max_len + 1,
            "buffered {} bytes with a limit of {max_len}",
            buf.len()
        );
    }
    while let Some(line) = codec.decode_eof(&mut buf).expect("the codec never fails") {
        out.push(line);
    }
    assert!(buf.is_empty(), "bytes left over at EOF");
    out
}

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

/// Fuzz entry: the line codec matches its model under any cuts and limit.
pub fn fuzz_line_codec(data: &[u8]) {
    let (param, cuts, input) = split_fuzz_input(data);
    let max_len = usize::from(param % 64) + 1;
    assert_eq!(
        decode_lines(input, &cuts, max_len),
        line_model(input, max_len)
    );
}

/// Fuzz entry: the SSE parser matches its model without a limit, and gives the same items under
/// any cuts with one.
pub fn fuzz_sse(data: &[u8]) {
    let (param, cuts, input) = split_fuzz_input(data);
    assert_eq!(parse_sse(input, &cuts, 1 << 20), sse_model(input));
    let max = usize::from(param % 64) + 1;
    assert_eq!(parse_sse(input, &cuts, max), parse_sse(input, &[], max));
}

/// Fuzz entry: any bytes parse into messages or a frame error, never a panic; and a line taken
/// for a plain response by its fixed parts alone is exactly what the full parse makes of it.
pub fn fuzz_jsonrpc_frame(data: &[u8]) {
    let full = parse_frame(data);
    check_plain_response(data, &full);
}

/// The rule of the plain-response fast path: a line it takes is confirmed exactly when the
/// full parse makes it that one response (then its result is the same), and otherwise the
/// line goes where the full parse puts it; a result that parses is always the full parse's.
pub fn check_plain_response(
    data: &[u8],
    full: &Result<Vec<Inbound>, mcp_supervisor::protocol::jsonrpc::FrameError>,
) {
    let Some((id, result)) = plain_response(&Bytes::copy_from_slice(data)) else {
        return;
    };
    let full_response = match full.as_deref() {
        Ok([Inbound::Response { id: got, result }]) if *got == Id::Number(id) => {
            Some(result.to_value())
        }
        _ => None,
    };
    assert_eq!(
        result.unless_plain().is_none(),
        full_response.is_some(),
        "confirmed exactly when the full parse finds this response"
    );
    if let Ok(value) = result.to_value() {
        let full_value = full_response.expect("a result that parses is the full parse's");
        assert_eq!(full_value.ok(), Some(value));
    }
}
