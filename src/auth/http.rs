//! The HTTP exchanges of authorization — metadata GETs, token and registration POSTs — over
//! the connection's awc client (no redirects followed), each bounded in time and size.
//!
//! Its own room so that the flow reads as OAuth, not as awc. A metadata document that is not
//! there (4xx, and 502 as some gateways answer) is `Ok(None)`, so the caller tries the next
//! place; anything else that fails is an error. Nothing here logs a body, a form or a header
//! value: token answers and requests carry secrets.

use std::time::Duration;

use awc::http::header::{ACCEPT, AUTHORIZATION};
use serde_json::Value;

/// How long one authorization exchange may take.
const TIMEOUT: Duration = Duration::from_secs(15);
/// The largest metadata document or token answer we read.
const BODY_LIMIT: usize = 256 * 1024;

/// A JSON document at `url`, or `None` when it is not there.
pub(crate) async fn get_json(client: &awc::Client, url: &str) -> Result<Option<Value>, String> {
    let mut response = client
        .get(url)
        .insert_header((ACCEPT, "application/json"))
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("GET {} failed: {e}", crate::config::redact_url(url)))?;
    let status = response.status().as_u16();
    if (400..500).contains(&status) || status == 502 {
        return Ok(None);
    }
    if !(200..300).contains(&status) {
        return Err(format!(
            "GET {} answered HTTP {status}",
            crate::config::redact_url(url)
        ));
    }
    let body = response
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| format!("reading {} failed: {e}", crate::config::redact_url(url)))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| format!("{} is not JSON: {e}", crate::config::redact_url(url)))
}

/// What a token or registration endpoint answered: its status and JSON body (`Null` if it
/// sent none or something else).
pub(crate) struct Answer {
    pub status: u16,
    pub body: Value,
    /// The `DPoP-Nonce` the server sent (RFC 9449 §8).
    pub dpop_nonce: Option<String>,
}

/// POSTs a form (with HTTP Basic client authentication, and a DPoP proof, when given).
pub(crate) async fn post_form(
    client: &awc::Client,
    url: &str,
    form: &[(&str, &str)],
    basic: Option<String>,
    dpop: Option<String>,
) -> Result<Answer, String> {
    let mut request = client
        .post(url)
        .insert_header((ACCEPT, "application/json"))
        .timeout(TIMEOUT);
    if let Some(basic) = basic {
        let mut value = awc::http::header::HeaderValue::from_str(&format!("Basic {basic}"))
            .map_err(|_| "the client credentials do not fit in a header".to_owned())?;
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
) -> Result<Answer, String> {
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
) -> Result<Answer, String> {
    let shown = crate::config::redact_url(url);
    let mut response = response.map_err(|e| format!("POST {shown} failed: {e}"))?;
    let status = response.status().as_u16();
    let dpop_nonce = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(256).collect());
    let body = response
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| format!("reading the answer of {shown} failed: {e}"))?;
    Ok(Answer {
        status,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        dpop_nonce,
    })
}
