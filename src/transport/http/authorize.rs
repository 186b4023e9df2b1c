//! Where a refused POST meets the authorization provider: a `401` or `403` answer of a server
//! configured with OAuth is handed to [`Provider::refused`] before anything else reads it, and
//! the request is re-sent when the provider says a new token may help.
//!
//! Its own room so that the send path stays a few lines longer, not a different shape: the
//! send loop asks [`on_refusal`] and either sends again or stops.

use awc::http::StatusCode;

use super::{Response, Shared};
use crate::auth::challenge;
use crate::auth::provider::Verdict;
use crate::transport::TransportEvent;

/// The re-sends one request has had after a refusal: at most one for a `401` (a new token)
/// and one for a `403` (a step-up), so that a server that refuses every token cannot make us
/// authorize again and again for one request.
#[derive(Default)]
pub(super) struct Rounds {
    unauthorized: bool,
    forbidden: bool,
    /// A re-send with the DPoP nonce the server asked for (RFC 9449 §9).
    nonce: bool,
}

/// What the send path does next.
pub(super) enum Next {
    /// Not a refusal for the provider: read the answer as always.
    Answer(Response),
    /// Send the request again.
    Resend,
    /// Done: the request has been answered (with an error).
    Done,
}

/// Hands a refusal to the provider, if there is one and the request may still be re-sent.
/// `sent`: the tokens' generation the request carried.
pub(super) async fn on_refusal(
    shared: &Shared,
    response: Response,
    id: Option<u64>,
    sent: u64,
    rounds: &mut Rounds,
) -> Next {
    let status = response.status();
    let Some(auth) = &shared.auth else {
        return Next::Answer(response);
    };
    if status == StatusCode::UNAUTHORIZED && !rounds.nonce {
        if let Some(nonce) = dpop_nonce(&response) {
            rounds.nonce = true;
            if auth.set_rs_nonce(&nonce) {
                return Next::Resend;
            }
        }
    }
    let used = match status {
        StatusCode::UNAUTHORIZED => &mut rounds.unauthorized,
        StatusCode::FORBIDDEN => &mut rounds.forbidden,
        _ => return Next::Answer(response),
    };
    if std::mem::replace(used, true) {
        return Next::Answer(response);
    }
    let values = challenge_values(&response);
    let challenges = challenge::parse_all(values.iter().map(String::as_str));
    let detail = values.first().cloned().unwrap_or_default();
    let verdict = tokio::select! {
        verdict = auth.refused(status.as_u16(), &challenges, &detail, sent) => verdict,
        _ = shared.closed() => return Next::Done,
    };
    match verdict {
        Verdict::Resend => Next::Resend,
        Verdict::Fail { error, close } => {
            match id {
                Some(id) => {
                    shared
                        .emit(TransportEvent::CallFailed {
                            id,
                            error: error.clone(),
                        })
                        .await
                }
                None => {
                    tracing::warn!(server = %shared.server, error = %error, "a notification was refused")
                }
            }
            if close {
                shared.emit(TransportEvent::Closed(error)).await;
            }
            Next::Done
        }
    }
}

/// The answer's `WWW-Authenticate` values, bounded in number and length.
fn challenge_values(response: &Response) -> Vec<String> {
    response
        .headers()
        .get_all("www-authenticate")
        .take(challenge::MAX_CHALLENGES)
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(4096)
                .collect()
        })
        .collect()
}

/// The nonce of a `use_dpop_nonce` challenge (RFC 9449 §9), if the answer is one.
fn dpop_nonce(response: &Response) -> Option<String> {
    let values = challenge_values(response);
    let challenges = challenge::parse_all(values.iter().map(String::as_str));
    challenges
        .iter()
        .any(|c| c.error() == Some("use_dpop_nonce"))
        .then(|| {
            response
                .headers()
                .get("dpop-nonce")?
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .flatten()
}
