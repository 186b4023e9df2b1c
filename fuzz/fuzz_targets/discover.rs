//! Fuzz target: see `fuzz_discover` in `fuzz/checks/discover.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_discover(data));
