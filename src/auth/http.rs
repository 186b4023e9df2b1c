//! The HTTP exchanges of authorization — metadata GETs, token and registration POSTs — over
//! the connection's awc client (no redirects followed), each bounded in time and size.
//!
//! Its own room so that the flow reads as OAuth, not as awc. A metadata document that is not
//! there (4xx, and 502 as some gateways answer) is `Ok(None)`, so the caller tries the next
//! place; anything else that fails is an error, [`Failure::NotNow`] when trying again later
//! may work (no connection, a timeout, a 5xx or 429, a body cut short). Nothing here logs a
//! body, a form or a header value: token answers and requests carry secrets.

use std::time::Duration;

use awc::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use super::failure::Failure;

/// How long one authorization exchange may take.
const TIMEOUT: Duration = Duration::from_secs(15);
/// The largest metadata document or token answer we read.
const BODY_LIMIT: usize = 256 * 1024;

/// A JSON document at `url`, or `None` when it is not there.
pub(crate) async fn get_json(client: &awc::Client, url: &str) -> Result<Option<Value>, Failure> {
    let shown = crate::config::redact_url(url);
    let mut response = client
        .get(url)
        .insert_header((ACCEPT, "application/json"))
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| Failure::NotNow(format!("GET {shown} failed: {e}")))?;
    let status = response.status().as_u16();
    if status == 429 {
        return Err(Failure::NotNow(format!("GET {shown} answered HTTP 429")));
    }
    if (400..500).contains(&status) || status == 502 {
        return Ok(None);
    }
    if status >= 500 {
        return Err(Failure::NotNow(format!(
            "GET {shown} answered HTTP {status}"
        )));
    }
    if !(200..300).contains(&status) {
        return Err(Failure::Needed(format!(
            "GET {shown} answered HTTP {status}"
        )));
    }
    let body = response
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| Failure::NotNow(format!("reading {shown} failed: {e}")))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| Failure::Needed(format!("{shown} is not JSON: {e}")))
}

/// What a token or registration endpoint answered.
pub(crate) struct Answer {
    pub status: u16,
    /// The body, if it is JSON.
    pub body: Option<Value>,
    /// Its `Content-Type` (bounded), to say what came instead of JSON.
    pub content_type: Option<String>,
    /// The `DPoP-Nonce` the server sent (RFC 9449 §8).
    pub dpop_nonce: Option<String>,
}

impl Answer {
    /// The string member `key` of a JSON object body.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.body.as_ref()?.get(key)?.as_str()
    }

    /// What the body is, for an error that says it is not JSON: `an HTML page`, `a
    /// "text/plain" body`, `an empty body`.
    pub fn described(&self) -> String {
        let kind = self
            .content_type
            .as_deref()
            .and_then(|t| t.split(';').next())
            .map(str::trim)
            .filter(|t| !t.is_empty());
        match kind {
            Some(t) if t.eq_ignore_ascii_case("text/html") => "an HTML page".to_owned(),
            Some(t) => format!("a `{}` body", t.chars().take(64).collect::<String>()),
            None => "a body without a content type".to_owned(),
        }
    }
}

/// POSTs a form (with HTTP Basic client authentication, and a DPoP proof, when given).
pub(crate) async fn post_form(
    client: &awc::Client,
    url: &str,
    form: &[(&str, &str)],
    basic: Option<String>,
    dpop: Option<String>,
) -> Result<Answer, Failure> {
    let mut request = client
        .post(url)
        .insert_header((ACCEPT, "application/json"))
        .timeout(TIMEOUT);
    if let Some(basic) = basic {
        let mut value = awc::http::header::HeaderValue::from_str(&format!("Basic {basic}"))
            .map_err(|_| Failure::from("the client credentials do not fit in a header"))?;
        value.set_sensitive(true);
        request = request.insert_header((AUTHORIZATION, value));
    }
    if let Some(proof) = dpop {
        request = request.insert_header(("dpop", proof));
    }
    let response = request.send_form(&form).await;
    read(url, response).await
}

/// POSTs a JSON document (Dynamic Client Registration).
pub(crate) async fn post_json(
    client: &awc::Client,
    url: &str,
    body: &Value,
) -> Result<Answer, Failure> {
    let response = client
        .post(url)
        .insert_header((ACCEPT, "application/json"))
        .timeout(TIMEOUT)
        .send_json(body)
        .await;
    read(url, response).await
}

async fn read(
    url: &str,
    response: Result<
        awc::ClientResponse<
            impl futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
        >,
        awc::error::SendRequestError,
    >,
) -> Result<Answer, Failure> {
    let shown = crate::config::redact_url(url);
    let mut response =
        response.map_err(|e| Failure::NotNow(format!("POST {shown} failed: {e}")))?;
    let status = response.status().as_u16();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(256).collect::<String>())
    };
    let dpop_nonce = header("dpop-nonce");
    let content_type = header(CONTENT_TYPE.as_str());
    let body = response
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| Failure::NotNow(format!("reading the answer of {shown} failed: {e}")))?;
    Ok(Answer {
        status,
        body: serde_json::from_slice(&body).ok(),
        content_type,
        dpop_nonce,
    })
}
