//! Fuzz target: see `fuzz_jsonrpc_frame` in `fuzz/checks/jsonrpc_frame.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_jsonrpc_frame(data));
