//! Fuzz target: see `fuzz_sse` in `fuzz/checks/sse.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_sse(data));
