//! The provider the HTTP transport asks for its `Authorization` header, and tells about the
//! `401`s and `403`s it gets: the one place that decides what an authorization failure means.
//!
//! One per connection, on the connection's arbiter; the tokens outlive it in the
//! [`TokenStore`](super::TokenStore), so a reconnect or a server restart with a token still
//! valid needs no new authorization. The policy:
//!
//! - before each request, a token that expires within [`REFRESH_MARGIN`] is renewed (refresh
//!   token, or a new client credentials grant);
//! - a `401`: discovery again (the server may have moved to another authorization server),
//!   then a refresh if there is a refresh token from the same issuer, else a full
//!   authorization; the refused request is re-sent once (it was not processed). A refresh that
//!   fails is not followed by an interactive authorization on our own: the server needs
//!   authorization ([`Error::AuthorizationRequired`]), and the connection ends in `Failed`
//!   rather than a reconnect loop; the application runs its [`Authorizer`](super::Authorizer)
//!   when it is ready, by `Reconnect`;
//! - a `403` with `insufficient_scope`: a step-up — a new authorization for the union of the
//!   scopes asked for before and the challenged ones — only if that union is larger, at most
//!   [`MAX_STEP_UPS`] per connection, then the request is re-sent once;
//! - one authorization at a time: requests refused meanwhile wait, then are re-sent with the
//!   new token.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use awc::http::header::{HeaderName, HeaderValue, AUTHORIZATION};
use url::Url;

use super::challenge::Challenge;
use super::discovery::{discover, Found};
use super::flow::{authorize, dpop_key, initial_scope, union, Failed};
use super::grant::{Grant, TokenRequest};
use super::identity::identify;
use super::Tokens;
use crate::config::OAuthConfig;
use crate::error::Error;
use crate::protocol::text::server_text;

/// A token this close to its expiry is renewed before the next request.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// Step-ups (re-authorizations for more scopes) per connection.
pub const MAX_STEP_UPS: usize = 2;

/// What the transport does with a refused request.
pub(crate) enum Verdict {
    /// Send it again, with the new token.
    Resend,
    /// Answer it with this error; `close`: the connection is over (authorization required).
    Fail { error: Error, close: bool },
}

pub(crate) struct Provider {
    server: Arc<str>,
    url: String,
    parsed: Url,
    config: OAuthConfig,
    http: awc::Client,
    state: RefCell<State>,
    /// One authorization (or renewal) at a time.
    lock: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    tokens: Option<Tokens>,
    /// Bumped whenever the tokens change, so that a request refused with old ones is simply
    /// re-sent.
    generation: u64,
    found: Option<Found>,
    /// The scopes last asked for.
    requested: Option<String>,
    /// Scope sets stepped up to on this connection.
    stepped_up: Vec<String>,
    /// A refresh failed: the grant is over.
    refresh_failed: bool,
    /// The MCP server's DPoP nonce.
    rs_nonce: Option<String>,
}

impl Provider {
    pub fn new(
        server: Arc<str>,
        url: &str,
        config: OAuthConfig,
        http: awc::Client,
    ) -> Result<Provider, Error> {
        let parsed = Url::parse(url)
            .map_err(|e| Error::config(Some(&server), "url", format!("not a URL: {e}")))?;
        let tokens = config.store.tokens(url);
        if tokens.is_some() {
            tracing::debug!(server = %server, "using the stored token");
        }
        Ok(Provider {
            server,
            url: url.to_owned(),
            parsed,
            config,
            http,
            state: RefCell::new(State {
                tokens,
                ..State::default()
            }),
            lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The headers that present the token on a `method` request (none before the first
    /// token): `Authorization: Bearer`, or for a DPoP-bound token `Authorization: DPoP` and a
    /// fresh `DPoP` proof (with the server's nonce, if it gave one).
    pub fn headers(&self, method: &str) -> Vec<(HeaderName, HeaderValue)> {
        let state = self.state.borrow();
        let Some(tokens) = &state.tokens else {
            return Vec::new();
        };
        let token = tokens.access_token.expose();
        let mut headers = Vec::with_capacity(2);
        let scheme = if tokens.dpop { "DPoP" } else { "Bearer" };
        if let Ok(mut value) = HeaderValue::from_str(&format!("{scheme} {token}")) {
            value.set_sensitive(true);
            headers.push((AUTHORIZATION, value));
        }
        if tokens.dpop {
            let proof = self.config.dpop_key.key().and_then(|key| {
                key.proof(method, &self.url, Some(token), state.rs_nonce.as_deref())
            });
            match proof.map(|p| HeaderValue::from_str(&p)) {
                Ok(Ok(value)) => headers.push((HeaderName::from_static("dpop"), value)),
                _ => {
                    tracing::warn!(server = %self.server, "no DPoP proof could be made for a request")
                }
            }
        }
        headers
    }

    /// The server asked for a DPoP nonce (`use_dpop_nonce`, RFC 9449 §9): later proofs carry
    /// it. True if it is new (a re-send may help).
    pub fn set_rs_nonce(&self, nonce: &str) -> bool {
        let mut state = self.state.borrow_mut();
        if state.rs_nonce.as_deref() == Some(nonce) {
            return false;
        }
        state.rs_nonce = Some(nonce.chars().take(256).collect());
        true
    }

    /// The generation of the current tokens.
    pub fn generation(&self) -> u64 {
        self.state.borrow().generation
    }

    /// Renews a token about to expire, before it is sent. A failure is logged and the old
    /// token sent: the server's `401` then says what to do.
    pub async fn fresh(&self) {
        let due = |state: &State| {
            let deadline = SystemTime::now().checked_add(REFRESH_MARGIN);
            state
                .tokens
                .as_ref()
                .and_then(|t| t.expires_at)
                .zip(deadline)
                .is_some_and(|(at, d)| at <= d)
        };
        if !due(&self.state.borrow()) {
            return;
        }
        let generation = self.generation();
        let _one = self.lock.lock().await;
        if self.generation() != generation || !due(&self.state.borrow()) {
            return;
        }
        let known = self.state.borrow().found.clone();
        let found = match known {
            Some(found) => found,
            None => match discover(&self.http, &self.parsed, &self.url, None).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(server = %self.server, error = %server_text(&e), "renewing the token ahead of its expiry: discovery failed");
                    return;
                }
            },
        };
        let Some(old) = self.state.borrow().tokens.clone() else {
            return;
        };
        if old.issuer != found.issuer {
            return;
        }
        let requested = self.state.borrow().requested.clone();
        let renewed = if old.refresh_token.is_some() {
            self.refresh(&found, &old).await
        } else if self.config.headless {
            self.full(&found, requested.as_deref())
                .await
                .map_err(|f| f.0)
        } else {
            return;
        };
        match renewed {
            Ok(tokens) => {
                tracing::debug!(server = %self.server, "token renewed ahead of its expiry");
                self.state.borrow_mut().found = Some(found);
                self.set_tokens(tokens);
            }
            Err(e) => {
                tracing::warn!(server = %self.server, error = %server_text(&e), "renewing the token ahead of its expiry failed");
                let mut state = self.state.borrow_mut();
                if old.refresh_token.is_some() {
                    state.refresh_failed = true;
                }
            }
        }
    }

    /// A request sent with tokens of generation `sent` was refused with `status` (401 or
    /// 403) and these challenges (`detail`: the first, for the error).
    pub async fn refused(
        &self,
        status: u16,
        challenges: &[Challenge],
        detail: &str,
        sent: u64,
    ) -> Verdict {
        let _one = self.lock.lock().await;
        if self.generation() != sent {
            return Verdict::Resend;
        }
        let challenge = super::challenge::pick(challenges);
        let result = if status == 403 {
            if challenge.and_then(Challenge::error) != Some("insufficient_scope") {
                return self.refusal(status, detail);
            }
            match self.step_up(challenge).await {
                Some(result) => result,
                None => return self.refusal(status, detail),
            }
        } else {
            self.unauthorized(challenge).await
        };
        match result {
            Ok(()) => Verdict::Resend,
            Err(Failed(reason)) => {
                tracing::warn!(server = %self.server, status, reason = %server_text(&reason), "authorization failed: the server needs authorization");
                Verdict::Fail {
                    error: Error::authorization_required(&self.server, reason),
                    close: status == 401,
                }
            }
        }
    }

    fn refusal(&self, status: u16, detail: &str) -> Verdict {
        Verdict::Fail {
            error: Error::unauthorized(&self.server, status, detail),
            close: false,
        }
    }

    /// A 401: refresh, or authorize anew.
    async fn unauthorized(&self, challenge: Option<&Challenge>) -> Result<(), Failed> {
        let found = discover(&self.http, &self.parsed, &self.url, challenge)
            .await
            .map_err(Failed)?;
        let old = self.state.borrow().tokens.clone();
        if let Some(old) = &old {
            if old.issuer != found.issuer {
                tracing::info!(server = %self.server, from = %server_text(&old.issuer), to = %server_text(&found.issuer), "the server moved to another authorization server: authorizing there anew");
                self.forget_tokens();
            } else if old.refresh_token.is_some() && !self.state.borrow().refresh_failed {
                match self.refresh(&found, old).await {
                    Ok(tokens) => {
                        tracing::debug!(server = %self.server, "token refreshed after a 401");
                        self.state.borrow_mut().found = Some(found);
                        self.set_tokens(tokens);
                        return Ok(());
                    }
                    Err(e) => {
                        self.forget_tokens();
                        if !self.config.headless {
                            return Err(Failed(format!("refreshing the token failed: {e}")));
                        }
                    }
                }
            } else if self.state.borrow().refresh_failed && !self.config.headless {
                self.forget_tokens();
                return Err(Failed(
                    "the token was refused and refreshing it failed".into(),
                ));
            }
        }
        let scope = initial_scope(challenge.and_then(Challenge::scope), &found, &self.config);
        let tokens = self.full(&found, scope.as_deref()).await?;
        self.state.borrow_mut().found = Some(found);
        self.set_tokens(tokens);
        Ok(())
    }

    /// A 403 `insufficient_scope`: authorize for more scopes, unless that asks for nothing
    /// new or the step-ups are used up (`None`: do not step up).
    async fn step_up(&self, challenge: Option<&Challenge>) -> Option<Result<(), Failed>> {
        let (have, want) = {
            let state = self.state.borrow();
            let granted = state.tokens.as_ref().and_then(|t| t.scope.as_deref());
            let requested = state.requested.as_deref();
            let have = union([requested, granted]);
            let want = union([requested, granted, challenge.and_then(Challenge::scope)]);
            if want == have
                || state.stepped_up.len() >= MAX_STEP_UPS
                || state.stepped_up.contains(&want)
            {
                tracing::warn!(server = %self.server, "insufficient scope, and a step-up would not help (or they are used up)");
                return None;
            }
            (have, want)
        };
        tracing::info!(server = %self.server, from = %server_text(&have.to_string()), to = %server_text(&want.to_string()), "stepping up the authorization for more scopes");
        self.state.borrow_mut().stepped_up.push(want.clone());
        let result = async {
            let found = discover(&self.http, &self.parsed, &self.url, challenge)
                .await
                .map_err(Failed)?;
            let tokens = self.full(&found, Some(&want)).await?;
            self.state.borrow_mut().found = Some(found);
            self.set_tokens(tokens);
            Ok(())
        };
        Some(result.await)
    }

    /// A full authorization: identity, then the grant.
    async fn full(&self, found: &Found, scope: Option<&str>) -> Result<Tokens, Failed> {
        let client = identify(&self.http, &self.config, found)
            .await
            .map_err(Failed)?;
        self.state.borrow_mut().requested = scope.map(Into::into);
        let tokens = authorize(
            &self.http,
            &self.server,
            &self.config,
            found,
            &client,
            scope,
        )
        .await?;
        tracing::info!(server = %self.server, issuer = %server_text(&found.issuer), expires = ?tokens.expires_at, "authorized");
        Ok(tokens)
    }

    async fn refresh(&self, found: &Found, old: &Tokens) -> Result<Tokens, String> {
        let refresh = old.refresh_token.as_ref().ok_or("no refresh token")?;
        let client = identify(&self.http, &self.config, found).await?;
        let endpoint = found
            .metadata
            .token_endpoint
            .as_deref()
            .ok_or("the authorization server metadata has no token_endpoint")?;
        TokenRequest {
            http: &self.http,
            endpoint,
            issuer: &found.issuer,
            client: &client,
            resource: &found.resource,
            scope: None,
            dpop: dpop_key(&self.config, found)?,
        }
        .send(Grant::Refresh(refresh))
        .await
        .map(|mut tokens| {
            if tokens.scope.is_none() {
                tokens.scope = old.scope.clone();
            }
            tokens
        })
    }

    fn set_tokens(&self, tokens: Tokens) {
        self.config.store.save_tokens(&self.url, tokens.clone());
        let mut state = self.state.borrow_mut();
        state.tokens = Some(tokens);
        state.refresh_failed = false;
        state.generation += 1;
    }

    fn forget_tokens(&self) {
        self.config.store.clear_tokens(&self.url);
        let mut state = self.state.borrow_mut();
        state.tokens = None;
        state.generation += 1;
    }
}
