//! The in-tree HTTP test server (`tests/common/http_server/`) in both protocol eras, driven by
//! plain HTTP requests (`client`: awc, and raw TCP where the bytes matter), not by our client:
//! the client's HTTP tests lean on what this server answers, so its modern side (2026-07-28) is
//! checked here on its own.
//!
//! The families: `headers` (the header rules, what is recorded, `x-mcp-header`), `streams`
//! (call streams and listen streams), `mrtr` (`confirm`'s rounds), `eras` (discover and no
//! session, legacy-only and modern-only answers, an upgrade at run time).

mod client;
mod eras;
mod headers;
mod mrtr;
mod streams;
