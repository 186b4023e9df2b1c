//! The wire protocol, pure: no actix, no IO.

pub mod as_sent;
pub mod codec;
pub mod discover;
pub mod era;
pub mod headers;
pub mod jsonrpc;
pub mod lifecycle;
pub mod meta;
pub mod mrtr;
pub mod pages;
pub mod pagination;
pub mod response;
pub mod sse;
pub mod tasks;
pub mod text;
pub mod tool_result;
