//! The client in both protocol eras: negotiation (every fallback), the modern revision's
//! requests and headers, multi-round-trip requests, and a server that changes era while it is
//! supervised. The servers are the in-tree demo server (stdio, `DEMO_ERA`) and the in-tree HTTP
//! test server (`Era`), each speaking the session era, the 2026-07-28 revision, or both.

mod era_change;
mod http;
mod listen;
mod mrtr;
mod negotiation;
