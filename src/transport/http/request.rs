//! Every request this transport sends — POST, GET, DELETE — with its headers, and the session
//! id those headers carry.
//!
//! Its own room so that what goes on the wire is decided in one place: the configured headers,
//! the OAuth token (`Authorization: Bearer`, from the provider; a token it cannot present
//! makes the request an error, never one without it),
//! `Accept`/`Accept-Encoding`/`Content-Type`, `Mcp-Session-Id` (taken from the first answer that carries one)
//! and `MCP-Protocol-Version` (once the handshake agreed on one), and `Last-Event-ID` on a
//! resuming GET. Sending and reading the answers is the callers' business; what a request weighed,
//! to explain a server that refused it as too large, is told here ([`size_of`]).

use awc::http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE};
use awc::ClientRequest;

use super::Shared;
use crate::error::Error;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";

/// A POST of one message. The initialize request goes without a session (it is what creates
/// one); every other carries ours. Over the legacy HTTP+SSE transport it goes to the endpoint
/// the server named, which is the session. The flag says whether it did, which decides what a 404 or a
/// 400 means.
///
/// A request of the 2026-07-28 revision (`modern`) brings its own headers (the protocol
/// version, `Mcp-Method`, ...) and carries no session: that revision has none.
pub(super) fn post(
    shared: &Shared,
    method: Option<&str>,
    modern: Option<&[(String, String)]>,
) -> Result<(ClientRequest, bool), Error> {
    if shared.legacy_sse {
        // The endpoint the server named is the session: every POST to it has one.
        let url = shared.endpoint.borrow().clone().unwrap_or_default();
        let request = shared
            .request(shared.client.post(url))?
            .insert_header((CONTENT_TYPE, "application/json"));
        return Ok((shared.with_session(request).0, true));
    }
    let mut request = shared
        .request(shared.client.post(&shared.url))?
        .insert_header((ACCEPT, "application/json, text/event-stream"))
        .insert_header((CONTENT_TYPE, "application/json"));
    if let Some(headers) = modern {
        for (name, value) in headers {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        return Ok((request, false));
    }
    Ok(if method == Some("initialize") {
        (request, false)
    } else {
        shared.with_session(request)
    })
}

/// A GET for the session's event stream, resuming after `last_event_id` if given.
pub(super) fn get(shared: &Shared, last_event_id: Option<&str>) -> Result<ClientRequest, Error> {
    let request = shared
        .request(shared.client.get(&shared.url))?
        .insert_header((ACCEPT, "text/event-stream"));
    let (mut request, _) = shared.with_session(request);
    if let Some(id) = last_event_id {
        request = request.insert_header((LAST_EVENT_ID, id));
    }
    Ok(request)
}

/// The DELETE that ends `session`.
pub(super) fn delete(shared: &Shared, session: String) -> Result<ClientRequest, Error> {
    Ok(shared
        .request(shared.client.delete(&shared.url))?
        .insert_header((SESSION_HEADER, session)))
}

/// Headers past this size are over some servers' limit (Node's is 16 KiB, nginx's lines 8 KiB):
/// worth a word when a server refused or cut off a request.
const HEADERS_OFTEN_REFUSED: usize = 8 * 1024;

/// What a request weighed on the wire, to explain a server that refused it (413, 431) or closed
/// the connection before it had read it whole: its headers (the configured ones and, in the
/// 2026-07-28 revision, its own — `Mcp-Param-*` mirrors tool arguments), the largest of them,
/// and its body. The token's header is not counted: it is never named in an error.
pub(super) fn size_of(shared: &Shared, modern: Option<&[(String, String)]>, body: usize) -> String {
    // "Name: value\r\n" per header.
    let configured = shared
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), name.as_str().len() + value.len() + 4));
    let own = modern
        .into_iter()
        .flatten()
        .map(|(name, value)| (name.as_str(), name.len() + value.len() + 4));
    let (mut total, mut largest) = (0usize, None::<(&str, usize)>);
    for (name, size) in configured.chain(own) {
        total = total.saturating_add(size);
        if largest.is_none_or(|(_, most)| size > most) {
            largest = Some((name, size));
        }
    }
    let mut text = format!("the request had {} of headers", bytes(total));
    if let Some((name, size)) = largest.filter(|_| total > HEADERS_OFTEN_REFUSED) {
        text.push_str(&format!(", the largest {name} at {},", bytes(size)));
    }
    text.push_str(&format!(" and a body of {}", bytes(body)));
    if total > HEADERS_OFTEN_REFUSED {
        text.push_str("; many servers refuse more than 8 to 16 KB of headers");
    }
    text
}

/// `n` bytes for a person: "312 B", "266.2 KB".
fn bytes(n: usize) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KB", n as f64 / 1024.0),
        _ => format!("{:.1} MB", n as f64 / 1_048_576.0),
    }
}

impl Shared {
    /// Adds the configured headers and the OAuth token to a request, and asks for an
    /// uncompressed answer: we decompress nothing.
    fn request(&self, mut request: ClientRequest) -> Result<ClientRequest, Error> {
        for (name, value) in &self.headers {
            request = request.insert_header((name.clone(), value.clone()));
        }
        if let Some(auth) = &self.auth {
            let method = request.get_method().as_str().to_owned();
            for header in auth.headers(&method)? {
                request = request.insert_header(header);
            }
        }
        Ok(request.insert_header((ACCEPT_ENCODING, "identity")))
    }

    /// Adds the session and protocol version, when there are any.
    fn with_session(&self, mut request: ClientRequest) -> (ClientRequest, bool) {
        let session = self.session.borrow().clone();
        let had_session = session.is_some();
        if let Some(session) = session {
            request = request.insert_header((SESSION_HEADER, session));
        }
        if let Some(version) = self.protocol_version.borrow().clone() {
            request = request.insert_header((VERSION_HEADER, version));
        }
        (request, had_session)
    }

    /// Takes the session id from a response, if we have none yet.
    pub(super) fn capture_session(
        &self,
        response: &awc::ClientResponse<impl Sized>,
    ) -> Result<(), Error> {
        if self.session.borrow().is_some() {
            return Ok(());
        }
        let Some(value) = response.headers().get(SESSION_HEADER) else {
            return Ok(());
        };
        let bytes = value.as_bytes();
        if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(Error::invalid_response(
                &self.server,
                "initialize",
                "Mcp-Session-Id must be visible ASCII",
            ));
        }
        *self.session.borrow_mut() = Some(String::from_utf8_lossy(bytes).into_owned());
        Ok(())
    }
}
