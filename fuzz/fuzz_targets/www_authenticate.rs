//! Fuzz target: see `fuzz_www_authenticate` in `fuzz/checks/www_authenticate.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_www_authenticate(data));
