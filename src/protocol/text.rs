//! Text a server sent us, made safe to keep and to show: bounded in size and with every
//! character that could rewrite a log line or a terminal escaped.
//!
//! A server chooses every byte of an error message, a protocol version, a stderr line or an
//! HTTP error body. Spliced raw into a log line, a `\n` forges a whole new log record (with a
//! level and timestamp of the server's choosing), a `\r` or an ANSI escape rewrites what a
//! terminal shows, and a Unicode bidi override makes a line read differently than it is; kept
//! raw in an error, one megabyte of it is copied into every status query and event. So every
//! piece of server text the crate keeps in an [`Error`](crate::Error) or writes to a log goes
//! through [`server_text`] (or [`server_bytes`]) once, where it enters:
//!
//! - control characters (C0, DEL, C1) are written as escapes (`\n`, `\r`, `\t`, `\u{1b}`, ...),
//!   as are the bidi controls (U+061C, U+200E/F, U+202A..E, U+2066..9) and the line and
//!   paragraph separators U+2028/9, which some viewers break lines at;
//! - the result is at most [`SERVER_TEXT_LIMIT`] bytes, cut on a character boundary, ending in
//!   `… (N bytes cut)` when something was cut (N counts the server's bytes that were dropped).
//!
//! Backslashes are left alone: a server can write a literal `\n`, which looks like an escape but
//! breaks no line. Pure: no IO.

use std::fmt::Write;

/// The most bytes of server text the crate keeps or shows in one place (one error message, one
/// stderr line, one log field), the note of what was cut included.
pub const SERVER_TEXT_LIMIT: usize = 512;

/// Room kept for the note `… (N bytes cut)`: "…" is 3 bytes, a `usize` at most 20 digits.
const NOTE_ROOM: usize = "… ( bytes cut)".len() + 20;

/// `text`, escaped and bounded to [`SERVER_TEXT_LIMIT`] bytes.
pub fn server_text(text: &str) -> String {
    bounded(text, SERVER_TEXT_LIMIT, 0)
}

/// Bytes from a server (a line that is not JSON, an HTTP header), decoded leniently (invalid
/// UTF-8 becomes U+FFFD), escaped and bounded like [`server_text`]. Only the start of a long
/// input is decoded at all.
pub fn server_bytes(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(SERVER_TEXT_LIMIT)];
    bounded(
        &String::from_utf8_lossy(head),
        SERVER_TEXT_LIMIT,
        bytes.len() - head.len(),
    )
}

/// Whether `c` is escaped: it could break, rewrite or reorder a line where it is shown.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if is_unsafe(c) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Escapes `text` into at most `limit` bytes (`limit` ≥ the note's room). `already_cut`: bytes
/// of the server's text the caller dropped before `text`'s end, reported in the note.
fn bounded(text: &str, limit: usize, already_cut: usize) -> String {
    debug_assert!(limit >= 2 * NOTE_ROOM);
    let room = limit.saturating_sub(NOTE_ROOM);
    let mut out = String::with_capacity(text.len().min(limit));
    // Where the text must be cut if a note is needed: the output length before the first
    // character that went past `room`, and that character's position in `text`.
    let mut cut: Option<(usize, usize)> = None;
    let mut overflowed = false;
    for (at, c) in text.char_indices() {
        let before = out.len();
        push_escaped(&mut out, c);
        if cut.is_none() && out.len() > room {
            cut = Some((before, at));
        }
        if out.len() > limit {
            overflowed = true;
            break;
        }
    }
    if !overflowed && already_cut == 0 {
        return out;
    }
    let dropped = match cut {
        Some((len, at)) => {
            out.truncate(len);
            text.len() - at + already_cut
        }
        None => already_cut,
    };
    let _ = write!(out, "… ({dropped} bytes cut)");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_kept_as_it_is() {
        assert_eq!(
            server_text("no such tool: `x` (ü, 日本)"),
            "no such tool: `x` (ü, 日本)"
        );
        assert_eq!(server_text(""), "");
        assert_eq!(server_text("a \\n literal"), "a \\n literal");
    }

    #[test]
    fn line_breaks_and_terminal_controls_are_escaped() {
        assert_eq!(
            server_text("bad\n2026-12-01T00:00:00Z ERROR forged\r"),
            "bad\\n2026-12-01T00:00:00Z ERROR forged\\r"
        );
        assert_eq!(
            server_text("\u{1b}[31mred\u{1b}[0m\u{7}\t\u{0}\u{7f}\u{9b}"),
            "\\u{1b}[31mred\\u{1b}[0m\\u{7}\\t\\u{0}\\u{7f}\\u{9b}"
        );
        assert_eq!(
            server_text("abc\u{202E}fed\u{2066}\u{2028}\u{200f}"),
            "abc\\u{202e}fed\\u{2066}\\u{2028}\\u{200f}"
        );
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary_with_a_note() {
        let version = "9".repeat(1 << 20);
        let shown = server_text(&version);
        assert!(shown.len() <= SERVER_TEXT_LIMIT, "{}", shown.len());
        let kept = shown.find('…').unwrap();
        assert_eq!(
            &shown[kept..],
            format!("… ({} bytes cut)", (1 << 20) - kept)
        );

        // Multi-byte characters are never split.
        let wide = "日".repeat(400);
        let shown = server_text(&wide);
        assert!(shown.len() <= SERVER_TEXT_LIMIT);
        let kept = shown.find('…').unwrap();
        assert_eq!(kept % 3, 0);
        assert!(shown.ends_with(&format!("({} bytes cut)", 1200 - kept)));
    }

    #[test]
    fn text_that_fits_exactly_is_not_cut() {
        let exact = "x".repeat(SERVER_TEXT_LIMIT);
        assert_eq!(server_text(&exact), exact);
        let over = "x".repeat(SERVER_TEXT_LIMIT + 1);
        assert!(server_text(&over).ends_with("bytes cut)"));
    }

    #[test]
    fn bytes_are_decoded_leniently_and_only_their_start() {
        assert_eq!(server_bytes(b"ok \xff\xfe\r"), "ok \u{fffd}\u{fffd}\\r");
        let big = vec![b'a'; 1 << 20];
        let shown = server_bytes(&big);
        assert!(shown.len() <= SERVER_TEXT_LIMIT);
        let kept = shown.find('…').unwrap();
        assert!(shown.ends_with(&format!("({} bytes cut)", (1 << 20) - kept)));
        // Cut just past the decoded head: the note still counts every byte.
        let just_over = vec![b'a'; SERVER_TEXT_LIMIT + 3];
        let shown = server_bytes(&just_over);
        let kept = shown.find('…').unwrap();
        assert!(shown.ends_with(&format!("({} bytes cut)", SERVER_TEXT_LIMIT + 3 - kept)));
    }

    proptest! {
        #[test]
        fn output_is_safe_and_bounded(text in any::<String>()) {
            let shown = server_text(&text);
            prop_assert!(shown.len() <= SERVER_TEXT_LIMIT);
            prop_assert!(!shown.chars().any(is_unsafe), "{shown:?}");
            if text.len() <= SERVER_TEXT_LIMIT / 6 {
                // Short enough that even all-escapes fit: nothing is cut.
                prop_assert!(!shown.contains("bytes cut)"));
            }
        }

        #[test]
        fn long_unsafe_text_is_safe_and_bounded(
            picks in proptest::collection::vec(0usize..8, 0..1500),
            other in any::<String>(),
        ) {
            // Mostly characters that must be escaped (and so grow), long enough to be cut.
            const PICKS: [char; 7] = ['\n', '\r', '\u{1b}', '\u{202e}', '\u{9b}', 'é', '日'];
            let text: String = picks
                .iter()
                .map(|&i| PICKS.get(i).copied().unwrap_or('a'))
                .chain(other.chars())
                .collect();
            let shown = server_text(&text);
            prop_assert!(shown.len() <= SERVER_TEXT_LIMIT);
            prop_assert!(!shown.chars().any(is_unsafe), "{shown:?}");
        }

        #[test]
        fn bytes_are_safe_and_bounded(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let shown = server_bytes(&bytes);
            prop_assert!(shown.len() <= SERVER_TEXT_LIMIT);
            prop_assert!(!shown.chars().any(is_unsafe), "{shown:?}");
        }
    }
}
