//! The awc client of one connection and the TLS configuration every client shares.
//!
//! Its own room because nothing here is MCP: it is how we reach a server at all — rustls with
//! the ring provider and the webpki roots (never a process-wide default), no redirects, and no
//! client-wide timeout.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;

/// The TLS configuration, built once per process and shared by every connection: building it
/// copies the root store and allocates a session cache, tens of KiB per supervised server.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static TLS: std::sync::OnceLock<Result<Arc<rustls::ClientConfig>, String>> =
        std::sync::OnceLock::new();
    let built = TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(tls))
    });
    built.clone().map_err(|e| Error::config(None, "tls", e))
}

/// Connections beyond the calls in flight: the liveness check, the listen or GET stream and a
/// replacement of it, the serial POSTs of notifications and of answers to the server's
/// requests, the session's DELETE, with room to spare.
const RESERVED_CONNECTIONS: usize = 8;

/// The awc client of one connection. Its pool has a connection for every call the session lets
/// be in flight (`max_in_flight`) and a few more: a request that waits in awc's pool for a
/// connection is one the session believes written, and a liveness check that queued behind
/// the calls it judges would find a healthy server dead (awc's default is 100 connections, the
/// default `max_in_flight` 1024).
pub(super) fn build_client(
    connect_timeout: Duration,
    max_in_flight: usize,
    idle_timeout: Duration,
) -> Result<awc::Client, Error> {
    // awc keeps an idle connection 15 s by default, longer than most servers do: a request
    // sent as the server closes it finds the connection gone with no answer, and a
    // `tools/call` lost that way has an unknown outcome (two in 3,000 in the bench's fleet).
    // awc's check of a pooled connection before reuse only sees a close that has arrived.
    let connector = awc::Connector::new()
        .rustls_0_23(tls_config()?)
        .timeout(connect_timeout)
        .conn_keep_alive(idle_timeout)
        .limit(max_in_flight.saturating_add(RESERVED_CONNECTIONS));
    // No client-wide timeout: a request lives as long as its call, whose deadline the actor
    // keeps (an expired call's request is abandoned); connecting has the connector's timeout.
    Ok(awc::Client::builder()
        .connector(connector)
        .disable_redirects()
        .disable_timeout()
        .finish())
}
