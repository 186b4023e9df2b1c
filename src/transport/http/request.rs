//! Every request this transport sends — POST, GET, DELETE — with its headers, and the session
//! id those headers carry.
//!
//! Its own room so that what goes on the wire is decided in one place: the configured headers,
//! the OAuth token (`Authorization: Bearer`, from the provider; a token it cannot present
//! makes the request an error, never one without it),
//! `Accept`/`Accept-Encoding`/`Content-Type`, `Mcp-Session-Id` (taken from the first answer that carries one)
//! and `MCP-Protocol-Version` (once the handshake agreed on one), and `Last-Event-ID` on a
//! resuming GET. Sending and reading the answers is the callers' business.

use awc::http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE};
use awc::ClientRequest;

use super::Shared;
use crate::error::Error;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";

/// A POST of one message. The initialize request goes without a session (it is what creates
/// one); every other carries ours. The flag says whether it did, which decides what a 404 or a
/// 400 means.
///
/// A request of the 2026-07-28 revision (`modern`) brings its own headers (the protocol
/// version, `Mcp-Method`, ...) and carries no session: that revision has none.
pub(super) fn post(
    shared: &Shared,
    method: Option<&str>,
    modern: Option<&[(String, String)]>,
) -> Result<(ClientRequest, bool), Error> {
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
