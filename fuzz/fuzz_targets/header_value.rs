//! Fuzz target: see `fuzz_header_value` in `fuzz/checks/header_value.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_header_value(data));
