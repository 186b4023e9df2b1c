//! Fuzz target: see `fuzz_line_codec` in `fuzz/checks/line_codec.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_line_codec(data));
