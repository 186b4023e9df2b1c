//! actix-web glue (feature `actix-web`): what a service that exposes MCP servers over HTTP
//! would otherwise write by hand.
//!
//! - `response`: [`Error`](crate::Error) is a [`ResponseError`](actix_web::ResponseError), so
//!   a handler `?`s a call's error and the client gets the gateway status of
//!   [`Error::http_status`](crate::Error::http_status), `Retry-After` where waiting helps, and
//!   the [`ErrorView`](crate::ErrorView) as JSON (without the stderr tail).
//! - `scope`: [`status_scope`] and [`status_scope_with`], the operators' routes `GET /status`
//!   (JSON), `GET /status/events` (Server-Sent Events) and `GET /status/page` (HTML).
//! - `visibility`: [`Visibility`], who is shown everything (by default a request from this
//!   machine) and who the redacted view; `redacted`, what that view holds (an allowlist: no
//!   process ids, tool lists or server text).
//! - `events`: the event stream and its bounds.
//! - `page`: the HTML page (`page.html`, `page.js`), compiled in.
//!
//! The full status is for operators only: process ids, tool lists, and errors with what the
//! servers wrote, stderr included. Serve the scope on an address only operators reach, guard
//! it with a middleware that lets only them in (then [`Visibility::Full`]), or leave requests
//! from elsewhere the redacted view ([`status_scope`]'s default). Behind a reverse proxy on the
//! same machine every request comes from loopback: the default still redacts a request that
//! carries `Forwarded`, `X-Forwarded-For` or `X-Real-IP`; a proxy that sets none of them needs
//! [`Visibility::Redacted`] or a guard.
//!
//! ```
//! use actix_web::{test, App};
//! use mcp_supervisor::{web::status_scope, Supervisor};
//!
//! # actix::System::new().block_on(async {
//! let supervisor = Supervisor::builder().start().unwrap();
//! let app = test::init_service(App::new().service(status_scope(supervisor))).await;
//! let answer = test::call_service(&app, test::TestRequest::get().uri("/status").to_request()).await;
//! assert!(answer.status().is_success());
//! let statuses: serde_json::Value = test::read_body_json(answer).await;
//! assert_eq!(statuses, serde_json::json!([]), "no servers configured");
//! # });
//! ```
//!
//! In a service (see `examples/service.rs` for one with a tool endpoint):
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//! use mcp_supervisor::{web::status_scope, ServerConfig, Supervisor};
//!
//! #[actix_web::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let supervisor = Supervisor::builder()
//!         .server(ServerConfig::stdio("fs", "npx")
//!             .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv"]))
//!         .start()?;
//!     HttpServer::new(move || App::new().service(status_scope(supervisor.clone())))
//!         .bind(("127.0.0.1", 8080))?
//!         .run()
//!         .await?;
//!     Ok(())
//! }
//! ```

mod events;
mod page;
mod redacted;
mod response;
mod scope;
mod visibility;

pub use events::{KEEP_ALIVE, MAX_EVENT_STREAMS, STREAM_BUFFER};
pub use scope::{status_scope, status_scope_with};
pub use visibility::Visibility;
