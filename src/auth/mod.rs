//! Authorization for remote servers: MCP's OAuth 2.1 profile (revisions 2025-11-25 and
//! 2026-07-28, with the 2025-03-26 fallbacks and the client credentials extension).
//!
//! Configure it with [`OAuthConfig`](crate::config::OAuthConfig) on an HTTP server
//! ([`ServerConfig::oauth`](crate::ServerConfig::oauth)). The HTTP transport sends the token
//! with every request; on a `401` the server's authorization server is discovered and a token
//! obtained, and the refused request is re-sent once, invisibly to the caller. When no token
//! can be obtained (a refresh refused, the application's [`Authorizer`] gave up), the server
//! goes to `Failed` with [`Error::AuthorizationRequired`](crate::Error::AuthorizationRequired)
//! — never a reconnect loop — and `Reconnect` starts over once the application is ready;
//! when none can be obtained *for now* (the authorization server unreachable, a 5xx), the
//! call is answered `unavailable` and the tokens are kept. Only HTTPS URLs are trusted (plain
//! HTTP on loopback), and configured credentials go to one authorization server only.
//! No token or secret appears in a log line, a `Debug` output or an error: they are
//! [`Secret`]s.
//!
//! One concept per file:
//!
//! - `secret`: [`Secret`], the redacting wrapper of every credential;
//! - `challenge`: the `WWW-Authenticate` parser;
//! - `trust`: which URLs authorization fetches from and sends to (HTTPS, plain HTTP only on
//!   loopback; no address nearer than the MCP server's own);
//! - `metadata`: the metadata documents, where they are looked for, and their checks
//!   (RFC 9728 §3.3 resource binding, RFC 8414 issuer echo, PKCE S256);
//! - `discovery`: from a `401` to the validated metadata of the authorization server;
//! - `failure`: why no token was obtained — not now, refused, or the application must act;
//! - `identity`: pre-registered client (bound to its issuer), Client ID Metadata Document,
//!   Dynamic Client Registration;
//! - `grant`: token requests and client authentication (`client_secret_basic`/`_post`,
//!   `none`, `private_key_jwt`);
//! - `authorizer`: the application's [`Authorizer`], PKCE, and the `state`/`iss` checks;
//! - `dpop`: DPoP key pairs and proofs (RFC 9449);
//! - `enterprise`: [`EnterpriseIdp`], the token exchange of enterprise-managed authorization;
//! - `flow`: one authorization (client credentials or authorization code) and scope choice;
//! - `sign_in`: the user's part of an authorization code grant in progress, which outlives
//!   the connection attempt that started it and is joined by the next;
//! - `store`: [`TokenStore`] and [`MemoryTokenStore`]; `file_store`: [`FileTokenStore`], a
//!   `0600` file for command-line tools; `postgres_store` (feature `postgres`):
//!   `PostgresTokenStore`, the store a fleet of replicas shares, renewals serialized by a
//!   row lock;
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
mod failure;
mod file_store;
mod flow;
mod grant;
mod http;
mod identity;
mod metadata;
#[cfg(feature = "postgres")]
mod postgres_store;
pub(crate) mod provider;
mod secret;
mod sign_in;
mod store;
mod trust;

pub use authorizer::{AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer};
pub use enterprise::EnterpriseIdp;
pub use file_store::FileTokenStore;
#[cfg(feature = "postgres")]
pub use postgres_store::PostgresTokenStore;
pub use secret::Secret;
pub(crate) use sign_in::{within_connect_timeout, SignIns};
pub use store::{
    IssuerBinding, MemoryTokenStore, Registration, RenewalFuture, RenewalGuard, TokenStore,
    TokenStoreError, Tokens,
};
pub(crate) use trust::{is_loopback, require_secure};
