//! Property tests of the pure parsers: however a byte stream is cut into reads, the line codec
//! and the SSE parser must give what a plain reference model gives for the whole input, and hold
//! no more than their limit. The models and checks are shared with the fuzz targets
//! (`fuzz/checks.rs`); the corpus of every target in `fuzz/corpus/` runs here too, so
//! `cargo test` covers what the fuzzers found.

#[path = "../../fuzz/checks.rs"]
mod checks;

use checks::*;
use proptest::prelude::*;

fn line_input() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => Just(b'a'),
        2 => Just(b'\n'),
        2 => Just(b'\r'),
        1 => Just(b' '),
        1 => any::<u8>(),
    ];
    proptest::collection::vec(byte, 0..48)
}

fn sse_input() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => Just(&b"data"[..]),
        2 => Just(&b":"[..]),
        2 => Just(&b" "[..]),
        3 => Just(&b"\n"[..]),
        2 => Just(&b"\r"[..]),
        1 => Just(&b"\r\n"[..]),
        1 => Just(&b"id"[..]),
        1 => Just(&b"event"[..]),
        1 => Just(&b"retry"[..]),
        1 => Just(&b"7"[..]),
        2 => Just(&b"x"[..]),
        1 => Just(&b"\0"[..]),
        1 => Just(&b"\xEF\xBB\xBF"[..]),
        1 => Just(&b"\xC3"[..]),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..160, 0..16).prop_map(|mut cuts| {
        cuts.sort_unstable();
        cuts
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn line_codec_every_single_cut_gives_the_model(input in line_input(), max_len in 1usize..10) {
        let want = line_model(&input, max_len);
        for cut in 0..=input.len() {
            prop_assert_eq!(&decode_lines(&input, &[cut], max_len), &want, "cut at {}", cut);
        }
    }

    #[test]
    fn line_codec_any_chunking_gives_the_model(
        input in line_input(),
        max_len in 1usize..10,
        cuts in cuts(),
    ) {
        prop_assert_eq!(decode_lines(&input, &cuts, max_len), line_model(&input, max_len));
    }

    #[test]
    fn sse_every_single_cut_gives_the_model(input in sse_input()) {
        let want = sse_model(&input);
        for cut in 0..=input.len() {
            prop_assert_eq!(&parse_sse(&input, &[cut], 1 << 20), &want, "cut at {}", cut);
        }
    }

    #[test]
    fn sse_any_chunking_gives_the_model(input in sse_input(), cuts in cuts()) {
        prop_assert_eq!(parse_sse(&input, &cuts, 1 << 20), sse_model(&input));
    }

    /// With a small limit the model does not apply (it has none), but where the reads happen to
    /// stop still must not matter, and the buffer stays bounded.
    #[test]
    fn sse_size_limit_does_not_depend_on_chunking(
        input in sse_input(),
        max in 1usize..24,
        cuts in cuts(),
    ) {
        prop_assert_eq!(parse_sse(&input, &cuts, max), parse_sse(&input, &[], max));
    }

    #[test]
    fn jsonrpc_frames_never_panic(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        fuzz_jsonrpc_frame(&input);
    }

    #[test]
    fn plain_looking_responses_are_what_the_full_parse_makes_of_them(input in plain_looking()) {
        fuzz_jsonrpc_frame(&input);
    }
}

/// Lines with the fixed parts of a plain response around JSON-ish bits: valid results, broken
/// ones, and members a response must not have (`error`, `method`, a second `id`).
fn plain_looking() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just(","),
        Just(":"),
        Just("\""),
        Just("\\"),
        Just("1"),
        Just("null"),
        Just("\"id\""),
        Just("\"error\""),
        Just("\"method\""),
        Just("\"result\""),
        Just("\"a\""),
        Just(" "),
        Just("\u{e9}"),
        Just("{}"),
        Just("\"x\":1"),
    ];
    let middle = proptest::collection::vec(token, 0..10).prop_map(|t| t.concat());
    (any::<bool>(), 0u32..20, middle).prop_map(|(head, id, middle)| {
        if head {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{middle}}}"#)
        } else {
            format!(r#"{{"result":{middle},"jsonrpc":"2.0","id":{id}}}"#)
        }
        .into_bytes()
    })
}

/// Every file of the fuzz corpus (seeds and whatever a fuzzing run added) through its target,
/// and one corpus folder for each target in `checks::TARGETS`, no more.
#[test]
fn fuzz_corpus_passes_every_target() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut folders: Vec<String> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|entry| entry.expect("a readable corpus folder").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    names.sort();
    assert_eq!(folders, names, "fuzz/corpus/ and checks::TARGETS disagree");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut ran = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a readable corpus entry").path();
            let data = std::fs::read(&path).expect("a readable corpus file");
            target(&data);
            ran += 1;
        }
        assert!(ran > 0, "the corpus of {name} is empty");
    }
}
