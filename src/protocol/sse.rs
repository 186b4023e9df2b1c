//! Server-Sent Events parsing, incremental and bounded. Pure: feed it bytes as they arrive.
//!
//! Follows the HTML living standard's event-stream rules: lines end in CRLF, LF or CR (also
//! split across chunks); `:` lines are comments (keep-alives); `data:` lines accumulate; an
//! empty line dispatches the event — unless it has no data, as the priming events MCP servers
//! send to hand out an event id first. `id:` sets the last event id even then; `retry:` takes
//! digits only; a byte-order mark at the start of the stream is skipped. One event larger than the limit is dropped whole and reported, without being
//! buffered whole.

use std::time::Duration;

/// What the parser produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event with data.
    Event {
        /// The event id in force when it was dispatched (the stream's last event id).
        id: Option<String>,
        /// The `event:` type, if any (`message` is the default).
        event: Option<String>,
        /// The data, lines joined by `\n`.
        data: String,
    },
    /// The server asked for this reconnection delay.
    Retry(Duration),
    /// An event over the size limit was dropped.
    Oversized {
        /// Bytes dropped.
        bytes: usize,
    },
}

/// An incremental SSE parser with a size limit per event.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF right after it does not end another line.
    after_cr: bool,
    data: String,
    event: Option<String>,
    last_event_id: Option<String>,
    /// Bytes dropped of the current over-long event or line, while skipping to its end.
    dropped: Option<usize>,
    /// Bytes of a leading byte-order mark matched so far; `None` once past the stream's start.
    bom_matched: Option<usize>,
}

/// UTF-8's byte-order mark, which the standard says to ignore at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser that accepts events of up to `max_event_bytes` of data.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            event: None,
            last_event_id: None,
            dropped: None,
            bom_matched: Some(0),
        }
    }

    /// The stream's last event id: what to send as `Last-Event-ID` when resuming.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Bytes held for the event being read: never much more than the limit, however long the
    /// server's event is.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Feeds a chunk; returns what it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        let Some(matched) = self.bom_matched else {
            self.feed_lines(chunk, &mut out);
            return out;
        };
        // The stream may begin with a byte-order mark, itself possibly cut across reads.
        let seen = BOM[matched..]
            .iter()
            .zip(chunk)
            .take_while(|(want, got)| want == got)
            .count();
        if matched + seen == BOM.len() {
            self.bom_matched = None;
            self.feed_lines(&chunk[seen..], &mut out);
        } else if seen == chunk.len() {
            self.bom_matched = Some(matched + seen);
        } else {
            // Not a mark after all: what looked like one was data.
            self.bom_matched = None;
            self.feed_lines(&BOM[..matched + seen], &mut out);
            self.feed_lines(&chunk[seen..], &mut out);
        }
        out
    }

    fn feed_lines(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) {
        if chunk.is_empty() {
            return; // An empty read must not forget that the last one ended in CR.
        }
        let mut rest = chunk;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.take_bytes(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.on_line(&line, out);
            let crlf = rest[pos] == b'\r' && rest.get(pos + 1) == Some(&b'\n');
            if rest[pos] == b'\r' && pos + 1 == rest.len() {
                self.after_cr = true;
            }
            rest = &rest[pos + if crlf { 2 } else { 1 }..];
        }
        self.take_bytes(rest);
    }

    /// Adds bytes of the current line, dropping what exceeds the limit.
    fn take_bytes(&mut self, bytes: &[u8]) {
        if let Some(dropped) = &mut self.dropped {
            *dropped += bytes.len();
            return;
        }
        if self.line.len() + self.data.len() + bytes.len() > self.max_event_bytes + 16 {
            self.dropped = Some(self.line.len() + self.data.len() + bytes.len());
            self.line.clear();
            self.data.clear();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn on_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) {
        if line.is_empty() {
            if let Some(bytes) = self.dropped.take() {
                out.push(SseItem::Oversized { bytes });
                self.data.clear();
                self.event = None;
                return;
            }
            self.dispatch(out);
            return;
        }
        if self.dropped.is_some() {
            return;
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return; // A comment: keep-alive.
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() > self.max_event_bytes {
                    self.dropped = Some(self.data.len() + value.len());
                    self.data.clear();
                    return;
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    out.push(SseItem::Retry(Duration::from_millis(ms)));
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = self.event.take();
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // The last line's '\n'.
        if data.is_empty() {
            // A priming event (an id with empty data) or a lone id: nothing to deliver. The
            // standard would deliver `data:` with an empty value; nothing in MCP wants it.
            return;
        }
        out.push(SseItem::Event {
            id: self.last_event_id.clone(),
            event,
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: Option<&str>, data: &str) -> SseItem {
        SseItem::Event {
            id: id.map(str::to_owned),
            event: None,
            data: data.to_owned(),
        }
    }

    #[test]
    fn parses_events_ids_and_retry() {
        let mut p = SseParser::new(1024);
        let got = p.feed(b"id: 1\ndata:\n\n: keep-alive\n\nretry: 500\nid: 2\ndata: {\"a\":1}\n\n");
        // The priming event (empty data) sets the id but is not delivered.
        assert_eq!(
            got,
            [
                SseItem::Retry(Duration::from_millis(500)),
                event(Some("2"), "{\"a\":1}")
            ]
        );
        assert_eq!(p.last_event_id(), Some("2"));
    }

    #[test]
    fn handles_crlf_cr_and_chunk_boundaries_anywhere() {
        let text = b"event: message\r\ndata: line one\r\ndata: line two\r\rdata:x\r\n\r\n";
        let want = vec![
            SseItem::Event {
                id: None,
                event: Some("message".into()),
                data: "line one\nline two".into(),
            },
            event(None, "x"),
        ];
        for split in 0..text.len() {
            let mut p = SseParser::new(1024);
            let mut got = p.feed(&text[..split]);
            got.extend(p.feed(&text[split..]));
            assert_eq!(got, want, "split at {split}");
        }
        let mut p = SseParser::new(1024);
        let got: Vec<_> = text.iter().flat_map(|b| p.feed(&[*b])).collect();
        assert_eq!(got, want, "byte by byte");
    }

    #[test]
    fn ignores_unknown_fields_and_bad_retry() {
        let mut p = SseParser::new(1024);
        let got = p.feed(b"retry: soon\nfoo: bar\ndata\ndata: y\n\ndata\n\n");
        assert_eq!(got, [event(None, "\ny")]);
    }

    #[test]
    fn drops_an_oversized_event_without_buffering_it_and_recovers() {
        let mut p = SseParser::new(16);
        let mut got = p.feed(b"data: ");
        for _ in 0..1000 {
            got.extend(p.feed(&[b'z'; 100]));
            assert!(p.buffered() <= 64, "buffered too much");
        }
        got.extend(p.feed(b"\n\ndata: ok\n\n"));
        assert!(
            matches!(got[0], SseItem::Oversized { bytes } if bytes > 100_000),
            "{got:?}"
        );
        assert_eq!(got[1], event(None, "ok"));
    }

    #[test]
    fn an_empty_read_between_cr_and_lf_does_not_split_the_line_end() {
        // Found by the property test below: an empty chunk forgot that the previous one ended
        // in CR, so its LF ended a second, empty line and dispatched the event early.
        let mut p = SseParser::new(1024);
        let mut got = p.feed(b"data: a\r");
        got.extend(p.feed(b""));
        got.extend(p.feed(b"\ndata: b\n\n"));
        assert_eq!(got, [event(None, "a\nb")]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_ignored() {
        let mut p = SseParser::new(1024);
        let mut got = p.feed(b"\xEF\xBB");
        got.extend(p.feed(b"\xBFdata: x\n\n"));
        assert_eq!(got, [event(None, "x")]);
    }
}
