//! The checks of the fuzz targets, shared by `cargo fuzz` (`fuzz/fuzz_targets/`, one thin file
//! per target) and by `cargo test` (`tests/it/parser_properties.rs`, which runs them over
//! proptest inputs and over every file of `fuzz/corpus/`).
//!
//! One file per target under `checks/`, each with its entry `fuzz_<target>` and the plain
//! models or invariants it checks against. The rule behind every check: a parser of input from
//! outside the process gives what the rules it implements say, or a typed error that is
//! escaped and bounded; never a panic, a hang, or output that grows out of proportion.

#![allow(dead_code)] // Each includer uses the part it needs.

// Paths relative to this file's folder, for both includers.
#[path = "checks/discover.rs"]
mod discover;
#[path = "checks/header_value.rs"]
mod header_value;
#[path = "checks/jsonrpc_frame.rs"]
mod jsonrpc_frame;
#[path = "checks/line_codec.rs"]
mod line_codec;
#[path = "checks/mcp_servers.rs"]
mod mcp_servers;
#[path = "checks/sse.rs"]
mod sse;
#[path = "checks/www_authenticate.rs"]
mod www_authenticate;
#[path = "checks/x_mcp_header.rs"]
mod x_mcp_header;

pub use discover::*;
pub use header_value::*;
pub use jsonrpc_frame::*;
pub use line_codec::*;
pub use mcp_servers::*;
pub use sse::*;
pub use www_authenticate::*;
pub use x_mcp_header::*;

/// An entry: the whole check of one fuzz input.
pub type Target = fn(&[u8]);

/// Every target, by its name in `fuzz/Cargo.toml` and `fuzz/corpus/`. `cargo test` runs each
/// one's corpus through it and checks that this list and `fuzz/corpus/` name the same targets.
pub const TARGETS: &[(&str, Target)] = &[
    ("line_codec", fuzz_line_codec),
    ("sse", fuzz_sse),
    ("jsonrpc_frame", fuzz_jsonrpc_frame),
    ("www_authenticate", fuzz_www_authenticate),
    ("header_value", fuzz_header_value),
    ("x_mcp_header", fuzz_x_mcp_header),
    ("discover", fuzz_discover),
    ("mcp_servers", fuzz_mcp_servers),
];

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

/// Whether `text` is safe to show as `protocol::text::server_text` makes it: no character it
/// escapes, and no longer than its limit.
pub fn is_shown_safely(text: &str) -> bool {
    use mcp_supervisor::protocol::text::{is_unsafe, SERVER_TEXT_LIMIT};
    text.len() <= SERVER_TEXT_LIMIT && !text.chars().any(is_unsafe)
}
