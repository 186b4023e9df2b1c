//! The demo server's two protocol eras, spoken to over raw pipes: the 2025 session era
//! (`initialize`) and the stateless 2026-07-28 revision, served side by side (`DEMO_ERA=dual`,
//! the default) or alone (`legacy`, `modern`). The client's fault tests run against both eras of
//! this server, so what it answers in each is pinned down here, byte by byte where the legacy
//! era must not change.

mod pipe;

mod listen;
mod mrtr;
mod negotiation;
mod tasks;
