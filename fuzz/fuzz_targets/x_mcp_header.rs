//! Fuzz target: see `fuzz_x_mcp_header` in `fuzz/checks/x_mcp_header.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_x_mcp_header(data));
