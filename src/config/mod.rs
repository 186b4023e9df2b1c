//! Server configuration: how to reach each server ([`ServerConfig`], [`Transport`]), the limits
//! and timings that govern it ([`Settings`]), and loading the `mcpServers` JSON format that
//! Claude Desktop and Code, Cursor, VS Code and Windsurf users already have ([`LoadOptions`],
//! [`Loaded`]).
//!
//! Settings are layered: built-in defaults, then the supervisor's global settings
//! ([`SupervisorBuilder::settings`](crate::SupervisorBuilder::settings)), then what each
//! `ServerConfig` overrides.
//!
//! - `settings`: [`Settings`], their defaults, and how overrides layer on them.
//! - `transport`: [`Transport`], [`StdioConfig`], [`HttpConfig`] and its [`HttpMode`], and what of them may be shown.
//! - `oauth`: [`OAuthConfig`], how a server behind MCP's authorization profile is authorized.
//! - `server_config`: [`ServerConfig`] and its builder methods.
//! - `validate`: [`ServerConfig::validate`], every check in one place.
//! - `mcp_servers`: the `mcpServers` JSON loader ([`ServerConfig::load_mcp_servers`],
//!   [`LoadOptions`], [`ServerConfig::from_mcp_servers_json`]): the document (JSONC), each
//!   host's keys, variable expansion, `envFile`, our own per-server settings.

mod mcp_servers;
#[cfg(feature = "http")]
mod oauth;
mod server_config;
mod settings;
mod transport;
mod validate;

pub use mcp_servers::{LoadOptions, Loaded};
#[cfg(feature = "http")]
pub use oauth::{OAuthConfig, DEFAULT_REDIRECT_URI};
pub use server_config::ServerConfig;
pub use settings::Settings;
pub use transport::{HttpConfig, HttpMode, StdioConfig, Transport, SAFE_ENV_VARS};

pub(crate) use transport::missing_transport;
#[cfg(feature = "http")]
pub(crate) use transport::redact_url;
