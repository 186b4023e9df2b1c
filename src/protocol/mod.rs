//! The wire protocol, pure: no actix, no IO.

pub mod codec;
pub mod headers;
pub mod jsonrpc;
pub mod lifecycle;
pub mod pagination;
pub mod sse;
pub mod text;
