//! The newline codec (`protocol::codec`): however the input is cut into reads, it yields what
//! a plain model of the rules yields for the whole input, and never buffers much more than its
//! limit.

use super::split_fuzz_input;
use bytes::{Bytes, BytesMut};
use mcp_supervisor::protocol::codec::{Line, LineCodec};
use tokio_util::codec::Decoder;

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

/// Fuzz entry: the line codec matches its model under any cuts and limit.
pub fn fuzz_line_codec(data: &[u8]) {
    let (param, cuts, input) = split_fuzz_input(data);
    let max_len = usize::from(param % 64) + 1;
    assert_eq!(
        decode_lines(input, &cuts, max_len),
        line_model(input, max_len)
    );
}
