//! Newline framing with a maximum length, for stdio.
//!
//! A line longer than the limit is not buffered whole: once the buffer passes the limit (plus one
//! byte for a `\r` that may precede the newline) without a newline, what was read is thrown away and the codec skips to the next newline, then yields one
//! [`Line::Oversized`] item saying how many bytes it dropped. A bad line is an item, not an error,
//! so that one misbehaving line never ends the connection.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// One item read from a byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (and without a `\r` before it).
    Complete(Bytes),
    /// A line longer than the limit was dropped; `len` bytes were skipped (newline included).
    Oversized {
        /// Bytes dropped.
        len: usize,
    },
}

/// Splits a byte stream into lines of at most `max_len` bytes. Blank lines are skipped.
#[derive(Debug)]
pub struct LineCodec {
    max_len: usize,
    /// Bytes already searched for a newline, so each byte is scanned once.
    scanned: usize,
    /// Bytes dropped so far of an over-long line, while skipping to its end.
    discarding: Option<usize>,
}

impl LineCodec {
    /// A codec that accepts lines of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        LineCodec {
            max_len,
            scanned: 0,
            discarding: None,
        }
    }
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, Self::Error> {
        loop {
            let newline = memchr::memchr(b'\n', &buf[self.scanned..]);
            let Some(offset) = newline else {
                if let Some(dropped) = &mut self.discarding {
                    *dropped += buf.len();
                    buf.clear();
                    self.scanned = 0;
                } else if buf.len() > self.max_len + 1 {
                    // `max_len + 1`: the last byte may be the `\r` of a CRLF whose `\n` has
                    // not arrived yet, which does not count. Past that the line is too long
                    // however it ends, so where the read happened to stop changes nothing.
                    self.discarding = Some(buf.len());
                    buf.clear();
                    self.scanned = 0;
                } else {
                    self.scanned = buf.len();
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            self.scanned = 0;
            if let Some(dropped) = self.discarding.take() {
                buf.advance(end + 1);
                return Ok(Some(Line::Oversized {
                    len: dropped + end + 1,
                }));
            }
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if line.len() > self.max_len {
                return Ok(Some(Line::Oversized { len: end + 1 }));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Line::Complete(line.freeze())));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, Self::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        // A last line without a newline still counts.
        if let Some(dropped) = self.discarding.take() {
            let len = dropped + buf.len();
            buf.clear();
            return Ok(Some(Line::Oversized { len }));
        }
        self.scanned = 0;
        // The same rules as a line that ends in a newline: a `\r` before the end is dropped,
        // and the length limit holds.
        let raw_len = buf.len();
        let mut line = buf.split();
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max_len {
            return Ok(Some(Line::Oversized { len: raw_len }));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Ok(Some(Line::Complete(line.freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(codec: &mut LineCodec, buf: &mut BytesMut, chunk: &[u8]) -> Vec<Line> {
        buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(line) = codec.decode(buf).unwrap() {
            out.push(line);
        }
        out
    }

    fn complete(s: &str) -> Line {
        Line::Complete(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_lines_across_chunks() {
        let mut c = LineCodec::new(100);
        let mut buf = BytesMut::new();
        assert_eq!(feed(&mut c, &mut buf, b"{\"a\""), []);
        assert_eq!(
            feed(&mut c, &mut buf, b":1}\r\n\n  \n{}\nx"),
            [complete("{\"a\":1}"), complete("{}")]
        );
        assert_eq!(c.decode_eof(&mut buf).unwrap(), Some(complete("x")));
        assert_eq!(c.decode_eof(&mut buf).unwrap(), None);
    }

    #[test]
    fn drops_an_overlong_line_without_buffering_it() {
        let mut c = LineCodec::new(10);
        let mut buf = BytesMut::new();
        assert_eq!(feed(&mut c, &mut buf, &[b'x'; 8]), []);
        assert_eq!(feed(&mut c, &mut buf, &[b'x'; 8]), []);
        assert!(
            buf.is_empty(),
            "the over-long prefix must be dropped, not kept"
        );
        assert_eq!(feed(&mut c, &mut buf, &[b'x'; 1000]), []);
        assert!(buf.is_empty());
        assert_eq!(
            feed(&mut c, &mut buf, b"xx\n{}\n"),
            [Line::Oversized { len: 1019 }, complete("{}")]
        );
    }

    #[test]
    fn overlong_line_arriving_whole_is_dropped_too() {
        let mut c = LineCodec::new(4);
        let mut buf = BytesMut::new();
        // Arrives in one read together with its newline: never "in progress".
        let mut chunk = vec![b'y'; 6];
        chunk.extend_from_slice(b"\nok\n");
        assert_eq!(
            feed(&mut c, &mut buf, &chunk),
            [Line::Oversized { len: 7 }, complete("ok")]
        );
    }

    #[test]
    fn overlong_line_at_eof_is_reported() {
        let mut c = LineCodec::new(4);
        let mut buf = BytesMut::new();
        assert_eq!(feed(&mut c, &mut buf, b"zzzzzzzz"), []);
        assert_eq!(
            c.decode_eof(&mut buf).unwrap(),
            Some(Line::Oversized { len: 8 })
        );
    }

    #[test]
    fn a_crlf_line_of_exactly_the_limit_is_kept_whatever_the_chunking() {
        // Found by the property test below: "abcd\r" arriving before its "\n" used to be taken
        // for a line over the limit of 4.
        let mut c = LineCodec::new(4);
        let mut buf = BytesMut::new();
        assert_eq!(feed(&mut c, &mut buf, b"abcd\r"), []);
        assert_eq!(feed(&mut c, &mut buf, b"\n"), [complete("abcd")]);
    }

    #[test]
    fn a_last_line_without_newline_follows_the_same_rules() {
        let mut c = LineCodec::new(4);
        let mut buf = BytesMut::new();
        assert_eq!(feed(&mut c, &mut buf, b"abcde"), []);
        assert_eq!(
            c.decode_eof(&mut buf).unwrap(),
            Some(Line::Oversized { len: 5 })
        );
        let mut buf = BytesMut::from(&b"ab\r"[..]);
        assert_eq!(c.decode_eof(&mut buf).unwrap(), Some(complete("ab")));
        assert!(buf.is_empty());
    }
}
