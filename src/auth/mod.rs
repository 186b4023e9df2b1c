//! Authorization for remote servers: MCP's OAuth 2.1 profile (revisions 2025-11-25 and
//! 2026-07-28, with the 2025-03-26 fallbacks and the client credentials extension).
//!
//! Configure it with [`OAuthConfig`](crate::config::OAuthConfig) on an HTTP server
//! ([`ServerConfig::oauth`](crate::ServerConfig::oauth)). The HTTP transport sends the token
//! with every request; on a `401` the server's authorization server is discovered and a token
//! obtained, and the refused request is re-sent once, invisibly to the caller. When no token
//! can be obtained (a refresh failed, the application's [`Authorizer`] gave up), the server
//! goes to `Failed` with [`Error::AuthorizationRequired`](crate::Error::AuthorizationRequired)
//! — never a reconnect loop — and `Reconnect` starts over once the application is ready.
//! No token or secret appears in a log line, a `Debug` output or an error: they are
//! [`Secret`]s.
//!
//! One concept per file:
//!
//! - `secret`: [`Secret`], the redacting wrapper of every credential;
//! - `challenge`: the `WWW-Authenticate` parser;
//! - `metadata`: the metadata documents, where they are looked for, and their checks
//!   (RFC 9728 §3.3 resource binding, RFC 8414 issuer echo, PKCE S256, HTTPS);
//! - `discovery`: from a `401` to the validated metadata of the authorization server;
//! - `identity`: pre-registered client, Client ID Metadata Document, Dynamic Client
//!   Registration;
//! - `grant`: token requests and client authentication (`client_secret_basic`/`_post`,
//!   `none`, `private_key_jwt`);
//! - `authorizer`: the application's [`Authorizer`], PKCE, and the `state`/`iss` checks;
//! - `dpop`: DPoP key pairs and proofs (RFC 9449);
//! - `enterprise`: [`EnterpriseIdp`], the token exchange of enterprise-managed authorization;
//! - `flow`: one authorization (client credentials or authorization code) and scope choice;
//! - `store`: [`TokenStore`] and [`MemoryTokenStore`]; `file_store`: [`FileTokenStore`], a
//!   `0600` file for command-line tools;
//! - `provider`: what the transport asks (the header) and tells (`401`, `403`): refresh
//!   ahead of expiry and on a `401`, step-up, the authorization-required verdict;
//! - `http`: the bounded HTTP exchanges of all of the above.

mod authorizer;
// Public but hidden for the fuzz target `www_authenticate` (fuzz/): not API.
#[doc(hidden)]
pub mod challenge;
mod discovery;
pub(crate) mod dpop;
mod enterprise;
mod file_store;
mod flow;
mod grant;
mod http;
mod identity;
mod metadata;
pub(crate) mod provider;
mod secret;
mod store;

pub use authorizer::{AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer};
pub use enterprise::EnterpriseIdp;
pub use file_store::FileTokenStore;
pub(crate) use metadata::require_secure;
pub use secret::Secret;
pub use store::{MemoryTokenStore, Registration, TokenStore, Tokens};
