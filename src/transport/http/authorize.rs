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

/// Re-sends of one request after a refusal: one for a `401` (a new token), one for a step-up.
pub(super) const MAX_ROUNDS: u8 = 2;

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
/// `sent`: the tokens' generation the request carried; `rounds`: re-sends so far.
pub(super) async fn on_refusal(
    shared: &Shared,
    response: Response,
    id: Option<u64>,
    sent: u64,
    rounds: &mut u8,
) -> Next {
    let status = response.status();
    let Some(auth) = &shared.auth else {
        return Next::Answer(response);
    };
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) || *rounds >= MAX_ROUNDS
    {
        return Next::Answer(response);
    }
    *rounds += 1;
    let values: Vec<String> = response
        .headers()
        .get_all("www-authenticate")
        .take(challenge::MAX_CHALLENGES)
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(4096)
                .collect()
        })
        .collect();
    let challenges = challenge::parse_all(values.iter().map(String::as_str));
    let detail = values.first().cloned().unwrap_or_default();
    // A step-up only for a request that has not had one (the first round may be its 401).
    let step_up = *rounds == 1 || status == StatusCode::FORBIDDEN && *rounds == MAX_ROUNDS;
    let verdict = tokio::select! {
        verdict = auth.refused(status.as_u16(), &challenges, &detail, sent, step_up) => verdict,
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
