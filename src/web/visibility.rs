//! [`Visibility`]: who is shown the full status and who the redacted view (`redacted`), decided
//! per request.
//!
//! The full view carries what an operator debugging a server needs and nobody else should
//! see: process ids, tool lists with their descriptions and schemas, the servers' identities,
//! capabilities and subscriptions, and errors with server text — messages, JSON-RPC `data` and
//! the stderr tail, where a server may print a path, a stack trace or a secret. By default
//! ([`Visibility::FullOnLoopback`]) only a request from this machine gets it: its peer address
//! is a loopback address and no proxy forwarded it (no `Forwarded`, `X-Forwarded-For` or
//! `X-Real-IP` header; a proxy that adds none makes every request look local, so behind one
//! choose [`Visibility::Redacted`], or guard the scope and choose [`Visibility::Full`]). A
//! request whose peer is unknown gets the redacted view.

use std::net::IpAddr;

use actix_web::HttpRequest;

/// Which requests the status scope shows everything to ([`status_scope_with`]); the others
/// get the redacted view: states, counters, eras and error codes, without process ids, tool
/// lists or server text.
///
/// [`status_scope_with`]: super::status_scope_with
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Visibility {
    /// The full view for requests from this machine (a loopback peer, not forwarded by a
    /// proxy), the redacted view for every other request. The default.
    #[default]
    FullOnLoopback,
    /// The full view for every request: for a scope the application guards itself, with a
    /// middleware that lets only operators in (`examples/service.rs` has one).
    Full,
    /// The redacted view for every request, this machine's too.
    Redacted,
}

/// The view one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum View {
    Full,
    Redacted,
}

/// Headers a proxy adds to say whom it forwards for.
const FORWARDING_HEADERS: [&str; 3] = ["forwarded", "x-forwarded-for", "x-real-ip"];

impl Visibility {
    /// The view `req` gets.
    pub(super) fn view_for(self, req: &HttpRequest) -> View {
        match self {
            Visibility::Full => View::Full,
            Visibility::Redacted => View::Redacted,
            Visibility::FullOnLoopback if from_this_machine(req) => View::Full,
            Visibility::FullOnLoopback => View::Redacted,
        }
    }
}

/// Whether `req` comes from this machine: a loopback peer (an IPv4-mapped one too), with no
/// header saying a proxy forwarded it for someone else.
fn from_this_machine(req: &HttpRequest) -> bool {
    let loopback = req.peer_addr().is_some_and(|peer| is_loopback(peer.ip()));
    let forwarded = FORWARDING_HEADERS
        .iter()
        .any(|name| req.headers().contains_key(*name));
    loopback && !forwarded
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn from(peer: &str) -> TestRequest {
        TestRequest::get().peer_addr(peer.parse().unwrap())
    }

    #[test]
    fn only_an_unforwarded_loopback_peer_gets_the_full_view_by_default() {
        let default = Visibility::default();
        for local in [
            "127.0.0.1:5000",
            "127.8.9.1:5000",
            "[::1]:5000",
            "[::ffff:127.0.0.1]:5000",
        ] {
            let req = from(local).to_http_request();
            assert_eq!(default.view_for(&req), View::Full, "{local}");
        }
        for remote in [
            "10.0.0.7:5000",
            "203.0.113.9:5000",
            "[2001:db8::1]:5000",
            "0.0.0.0:1",
        ] {
            let req = from(remote).to_http_request();
            assert_eq!(default.view_for(&req), View::Redacted, "{remote}");
        }
        for header in FORWARDING_HEADERS {
            let req = from("127.0.0.1:5000")
                .insert_header((header, "203.0.113.9"))
                .to_http_request();
            assert_eq!(default.view_for(&req), View::Redacted, "{header}");
        }
        let unknown = TestRequest::get().to_http_request();
        assert_eq!(
            default.view_for(&unknown),
            View::Redacted,
            "no peer address"
        );
    }

    #[test]
    fn full_and_redacted_hold_for_every_peer() {
        let remote = from("203.0.113.9:5000").to_http_request();
        let local = from("127.0.0.1:5000").to_http_request();
        assert_eq!(Visibility::Full.view_for(&remote), View::Full);
        assert_eq!(Visibility::Redacted.view_for(&local), View::Redacted);
    }
}
