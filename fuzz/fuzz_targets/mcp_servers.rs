//! Fuzz target: see `fuzz_mcp_servers` in `fuzz/checks/mcp_servers.rs` for what it checks.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::fuzz_mcp_servers(data));
