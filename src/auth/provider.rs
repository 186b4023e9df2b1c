//! The provider the HTTP transport asks for its `Authorization` header, and tells about the
//! `401`s and `403`s it gets: the one place that decides what an authorization failure means.
//!
//! One per connection attempt, on the connection's arbiter; the tokens outlive it in the
//! [`TokenStore`](super::TokenStore), so a reconnect or a server restart with a token still
//! valid needs no new authorization (and a sign-in in progress outlives it too, see
//! `sign_in`). The policy:
//!
//! - before each request, a token that expires within [`REFRESH_MARGIN`] is renewed (refresh
//!   token, or a new client credentials grant);
//! - a `401`: discovery again (the server may have moved to another authorization server),
//!   then tokens another attempt (or a sign-in) saved meanwhile, else a refresh if there is a
//!   refresh token from the same issuer, else a full authorization; the refused request is
//!   re-sent once (it was not processed);
//! - a refresh the authorization server refuses with `invalid_grant`, `invalid_client` or
//!   `unauthorized_client` (RFC 6749 §5.2) ends the grant: its tokens are forgotten, and no
//!   interactive authorization follows on our own: the server needs authorization
//!   ([`Error::AuthorizationRequired`]), and the connection ends; the application runs its
//!   [`Authorizer`](super::Authorizer) when it is ready, by `Reconnect`;
//! - any other failure to refresh — the authorization server unreachable or slow, a 5xx or
//!   429, an answer that is not OAuth's, an error that condemns nothing — ends nothing: the
//!   tokens are kept, the refresh is tried [`REFRESH_TRIES`] times with backoff, then the call
//!   is answered `unavailable` (retryable) and the connection kept, and later refreshes wait
//!   out a growing pause ([`retry_backoff`]) so that calls do not hammer a struggling server;
//!   no user is ever asked to sign in because of it. The same goes for discovery and for the
//!   grants of a service (client credentials, JWT bearer) that fail that way;
//! - a `403` with `insufficient_scope`: a step-up — a new authorization for the union of the
//!   scopes asked for before and the challenged ones — only if that union is larger, at most
//!   [`MAX_STEP_UPS`] per connection, then the request is re-sent once;
//! - one authorization at a time: requests refused meanwhile wait, then are re-sent with the
//!   new token;
//! - and one at a time for every process that shares the token store: a refresh, or an
//!   authorization after a `401`, first takes the store's renewal lock
//!   ([`TokenStore::lock_renewal`](super::TokenStore::lock_renewal), [`RENEWAL_WAIT`] at
//!   most), then reads the store again and takes the tokens another process saved meanwhile
//!   instead of renewing them itself: a rotated refresh token is used once, and a fleet asks
//!   its user once.
//!
//! A token is presented only if it can be: one that an HTTP header cannot carry (a line
//! break, a control character) is refused where it comes from, naming why, never sent
//! without its `Authorization` header.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use awc::http::header::{HeaderName, HeaderValue, AUTHORIZATION};
use url::Url;

use super::challenge::Challenge;
use super::discovery::{discover, Found};
use super::failure::Failure;
use super::flow::{authorize, dpop_key, initial_scope, union, For, Renewal};
use super::grant::{Grant, TokenRequest};
use super::identity::identify;
use super::{RenewalGuard, Secret, Tokens};
use crate::config::OAuthConfig;
use crate::error::Error;
use crate::policy::backoff::Backoff;
use crate::policy::deadline::saturating_add;
use crate::protocol::text::server_text;

/// A token this close to its expiry is renewed before the next request.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// Step-ups (re-authorizations for more scopes) per connection.
pub const MAX_STEP_UPS: usize = 2;
/// How long a renewal waits for another process's renewal of the same tokens to end (the
/// store's renewal lock) before it is answered `unavailable`.
pub const RENEWAL_WAIT: Duration = Duration::from_secs(60);
/// Refreshes tried for one refused request before it is answered `unavailable`.
pub const REFRESH_TRIES: u32 = 3;
/// The pauses between those tries, and after a round of them failed before the next round:
/// from half a second, doubling (with jitter) up to 30 s.
pub fn retry_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(500), Duration::from_secs(30))
}

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
    /// The authorization server ended the grant: no refresh is tried again.
    refresh_failed: bool,
    /// Renewals failed for now: the next one waits until then.
    paused: Option<Pause>,
    /// The MCP server's DPoP nonce.
    rs_nonce: Option<String>,
    /// The tokens held were renewed but could not be saved: the store's are older (and may
    /// be spent), so they are saved again, not taken, at the next renewal.
    unsaved: bool,
}

/// Renewals that failed for now (not refused): when the next may be tried, and why the last
/// failed.
struct Pause {
    until: Instant,
    rounds: u32,
    reason: String,
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
        let tokens = config.store.tokens(url).filter(|tokens| match tokens.unsendable() {
            Some(why) => {
                tracing::warn!(server = %server, why, "the stored access token cannot be sent: not using it");
                false
            }
            None => true,
        });
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
    /// fresh `DPoP` proof (with the server's nonce, if it gave one). A token that cannot be
    /// presented is an error naming why, never a request without it.
    pub fn headers(&self, method: &str) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
        let state = self.state.borrow();
        let Some(tokens) = &state.tokens else {
            return Ok(Vec::new());
        };
        let unsendable = |why: &str| {
            Error::authorization_required(
                &self.server,
                format!("the access token cannot be sent: {why}"),
            )
        };
        if let Some(why) = tokens.unsendable() {
            return Err(unsendable(why));
        }
        let token = tokens.access_token.expose();
        let mut headers = Vec::with_capacity(2);
        let scheme = if tokens.dpop { "DPoP" } else { "Bearer" };
        let mut value = HeaderValue::from_str(&format!("{scheme} {token}"))
            .map_err(|_| unsendable("it is not a valid header value"))?;
        value.set_sensitive(true);
        headers.push((AUTHORIZATION, value));
        if tokens.dpop {
            let proof = self
                .config
                .dpop_key
                .key()
                .and_then(|key| {
                    key.proof(method, &self.url, Some(token), state.rs_nonce.as_deref())
                })
                .map_err(|e| unsendable(&format!("no DPoP proof could be made for it ({e})")))?;
            let value = HeaderValue::from_str(&proof)
                .map_err(|_| unsendable("its DPoP proof is not a valid header value"))?;
            headers.push((HeaderName::from_static("dpop"), value));
        }
        Ok(headers)
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
            let expiring = state
                .tokens
                .as_ref()
                .and_then(|t| t.expires_at)
                .zip(deadline)
                .is_some_and(|(at, d)| at <= d);
            expiring
                && state
                    .paused
                    .as_ref()
                    .is_none_or(|p| Instant::now() >= p.until)
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
                    tracing::warn!(server = %self.server, error = %server_text(e.reason()), "renewing the token ahead of its expiry: discovery failed");
                    if let Failure::NotNow(reason) = e {
                        self.pause(reason);
                    }
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
        let renewable = if old.refresh_token.is_some() {
            !self.state.borrow().refresh_failed
        } else {
            self.config.headless
        };
        if !renewable {
            return;
        }
        if self.config.sign_ins.in_progress(&self.url) {
            // It brings new tokens; renewing the old ones meanwhile would race it.
            return;
        }
        // A refresh token is used once; a client credentials grant can be asked again.
        let protects = old.refresh_token.is_some();
        let meanwhile = async {
            let fleet = self.renewal_lock(protects, false).await?;
            Ok::<_, Failure>((self.saved_meanwhile(&found, Some(&old), protects)?, fleet))
        };
        let _fleet = match meanwhile.await {
            Ok((Some(stored), _)) => {
                tracing::debug!(server = %self.server, "using the tokens another renewal saved meanwhile");
                self.state.borrow_mut().found = Some(found);
                self.adopt(stored);
                return;
            }
            Ok((None, fleet)) => fleet,
            Err(e) => {
                tracing::warn!(server = %self.server, error = %server_text(e.reason()), "renewing the token ahead of its expiry: not now");
                self.pause(e.reason().to_owned());
                return;
            }
        };
        let requested = self.state.borrow().requested.clone();
        let renewed = if old.refresh_token.is_some() {
            self.refresh(&found, &old).await
        } else {
            self.full(&found, requested.as_deref(), None, None).await
        };
        match renewed {
            Ok(tokens) => {
                tracing::debug!(server = %self.server, "token renewed ahead of its expiry");
                self.state.borrow_mut().found = Some(found);
                self.set_tokens(tokens);
            }
            Err(e) => {
                tracing::warn!(server = %self.server, error = %server_text(e.reason()), "renewing the token ahead of its expiry failed");
                if old.refresh_token.is_some() && e.ends_grant() {
                    self.state.borrow_mut().refresh_failed = true;
                } else {
                    self.pause(e.reason().to_owned());
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
            Err(failure @ Failure::NotNow(_)) => {
                tracing::warn!(server = %self.server, status, reason = %server_text(failure.reason()), "no token for now: the call is answered unavailable, the tokens kept");
                Verdict::Fail {
                    error: failure.into_error(&self.server),
                    close: false,
                }
            }
            Err(failure) => {
                tracing::warn!(server = %self.server, status, reason = %server_text(failure.reason()), "authorization failed: the server needs authorization");
                Verdict::Fail {
                    error: failure.into_error(&self.server),
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

    /// A 401: tokens saved meanwhile, a refresh, or a new authorization.
    async fn unauthorized(&self, challenge: Option<&Challenge>) -> Result<(), Failure> {
        let old = self.state.borrow().tokens.clone();
        let can_refresh = old.as_ref().is_some_and(|t| t.refresh_token.is_some())
            && !self.state.borrow().refresh_failed;
        if can_refresh {
            // Waiting out a pause: not even discovery is tried again before it ends.
            self.check_pause()?;
        }
        let found = match discover(&self.http, &self.parsed, &self.url, challenge).await {
            Ok(found) => found,
            Err(failure @ Failure::NotNow(_)) if can_refresh => {
                self.pause(failure.reason().to_owned());
                return Err(failure.context("discovering the authorization server"));
            }
            Err(failure) => return Err(failure),
        };
        // Held to the end (and by a sign-in that outlives this attempt): what is renewed here
        // is saved before another process looks.
        let protects = can_refresh || !self.config.headless;
        // Only an authorization may join a sign-in in progress; a refresh waits for it.
        let joins = !can_refresh && !self.config.headless;
        let fleet = self.renewal_lock(protects, joins).await?;
        if let Some(stored) = self.saved_meanwhile(&found, old.as_ref(), protects)? {
            tracing::debug!(server = %self.server, "using the tokens saved meanwhile");
            self.state.borrow_mut().found = Some(found);
            self.adopt(stored);
            return Ok(());
        }
        if let Some(old) = &old {
            if old.issuer != found.issuer {
                tracing::info!(server = %self.server, from = %server_text(&old.issuer), to = %server_text(&found.issuer), "the server moved to another authorization server: authorizing there anew");
                self.forget_tokens();
            } else if can_refresh {
                match self.refresh_with_retries(&found, old).await {
                    Ok(tokens) => {
                        tracing::debug!(server = %self.server, "token refreshed after a 401");
                        self.state.borrow_mut().found = Some(found);
                        self.set_tokens(tokens);
                        return Ok(());
                    }
                    Err(e) if e.ends_grant() => {
                        self.forget_tokens();
                        if !self.config.headless {
                            return Err(Failure::Needed(format!(
                                "refreshing the token failed: {}",
                                e.reason()
                            )));
                        }
                    }
                    // The grant stands: the tokens are kept, and no user is asked.
                    Err(e) => {
                        return Err(Failure::NotNow(format!(
                            "refreshing the token failed: {}",
                            e.reason()
                        )))
                    }
                }
            } else if self.state.borrow().refresh_failed && !self.config.headless {
                self.forget_tokens();
                return Err(Failure::Needed(
                    "the token was refused and refreshing it failed".into(),
                ));
            }
        }
        let scope = initial_scope(challenge.and_then(Challenge::scope), &found, &self.config);
        let replacing = old.map(|t| t.access_token);
        let tokens = self
            .full(&found, scope.as_deref(), fleet, replacing)
            .await?;
        self.state.borrow_mut().found = Some(found);
        self.set_tokens(tokens);
        Ok(())
    }

    /// The store's renewal lock for these tokens, [`RENEWAL_WAIT`] at most; shared with a
    /// sign-in this attempt starts, which may outlive it. `None`: for an attempt that `joins`
    /// (one that would authorize), a sign-in of this process is in progress for the server and
    /// holds it (the attempt joins that sign-in, or, if it ended meanwhile, the next takes the
    /// lock itself); or the lock failed and nothing `protects`: a renewal that uses no
    /// refresh token and asks no user (a client credentials grant) goes on without it.
    async fn renewal_lock(
        &self,
        protects: bool,
        joins: bool,
    ) -> Result<Option<Rc<RenewalGuard>>, Failure> {
        let sign_ins = &self.config.sign_ins;
        let mut lock = self.config.store.lock_renewal(&self.url);
        let wait = tokio::time::sleep(RENEWAL_WAIT);
        tokio::pin!(wait);
        let failure = loop {
            // Made before looking, so that a sign-in that starts in between (and takes the
            // lock this waits for) is not missed: this attempt joins it instead.
            let changed = sign_ins.changed();
            if joins && sign_ins.in_progress(&self.url) {
                return Ok(None);
            }
            tokio::select! {
                granted = &mut lock => match granted {
                    Ok(guard) => return Ok(Some(Rc::new(guard))),
                    Err(e) => break Failure::NotNow(format!("no renewal lock: {e}")),
                },
                () = changed, if joins => {}
                () = &mut wait => break Failure::NotNow(format!(
                    "another renewal of these tokens has been going on for {} s",
                    RENEWAL_WAIT.as_secs()
                )),
            }
        };
        if protects {
            return Err(failure);
        }
        tracing::debug!(server = %self.server, reason = %server_text(failure.reason()), "renewing without the store's renewal lock (no refresh token, no user to ask)");
        Ok(None)
    }

    /// Tokens in the store from the issuer found now, other than `old` and sendable: another
    /// attempt, a sign-in that outlived one, or another process got them meanwhile. Compared
    /// by the tokens themselves (a store may keep the expiry coarser than it was issued). A
    /// store that cannot be read fails the renewal when it `protects` something: a refresh
    /// from tokens another process renewed already would void the grant.
    fn saved_meanwhile(
        &self,
        found: &Found,
        old: Option<&Tokens>,
        protects: bool,
    ) -> Result<Option<Tokens>, Failure> {
        if self.state.borrow().unsaved {
            let held = self.state.borrow().tokens.clone();
            if let Some(held) = held {
                let saved = self.config.store.save_renewed_tokens(&self.url, held);
                self.state.borrow_mut().unsaved = saved.is_err();
                saved.map_err(|e| {
                    Failure::NotNow(format!("the renewed tokens still cannot be saved: {e}"))
                })?;
            }
            return Ok(None);
        }
        let stored = match self.config.store.tokens_for_renewal(&self.url) {
            Ok(stored) => stored,
            Err(e) if protects => {
                return Err(Failure::NotNow(format!(
                    "the token store cannot be read: {e}"
                )))
            }
            Err(_) => None,
        };
        let same = |a: &Tokens, b: &Tokens| {
            a.access_token == b.access_token && a.refresh_token == b.refresh_token
        };
        Ok(stored.filter(|stored| {
            stored.issuer == found.issuer
                && !old.is_some_and(|old| same(old, stored))
                && stored.unsendable().is_none()
        }))
    }

    /// Refreshes, trying again [`REFRESH_TRIES`] times in all (with [`retry_backoff`]'s
    /// pauses) while the failure is not a refusal that ends the grant. A round that fails
    /// pauses later renewals.
    async fn refresh_with_retries(&self, found: &Found, old: &Tokens) -> Result<Tokens, Failure> {
        let mut last = None;
        for n in 0..REFRESH_TRIES {
            if n > 0 {
                let pause = retry_backoff().delay(n - 1, &mut rand::rng());
                tokio::time::sleep(pause).await;
            }
            match self.refresh(found, old).await {
                Ok(tokens) => return Ok(tokens),
                Err(e) if e.ends_grant() => return Err(e),
                Err(e) => {
                    tracing::debug!(server = %self.server, attempt = n + 1, error = %server_text(e.reason()), "refreshing the token failed for now");
                    last = Some(e);
                }
            }
        }
        let last = last.unwrap_or_else(|| Failure::NotNow("no refresh was tried".into()));
        self.pause(format!("{} (tried {REFRESH_TRIES} times)", last.reason()));
        Err(last)
    }

    /// Renewals wait: the next not before a pause that grows with every round that failed.
    fn pause(&self, reason: String) {
        let mut state = self.state.borrow_mut();
        let rounds = state.paused.as_ref().map_or(0, |p| p.rounds);
        let wait = retry_backoff().delay(rounds, &mut rand::rng());
        state.paused = Some(Pause {
            until: saturating_add(Instant::now(), wait),
            rounds: rounds.saturating_add(1),
            reason,
        });
    }

    /// `NotNow` while renewals are paused, with the last reason and the time left.
    fn check_pause(&self) -> Result<(), Failure> {
        let state = self.state.borrow();
        match &state.paused {
            Some(p) if Instant::now() < p.until => Err(Failure::NotNow(format!(
                "refreshing the token failed: {}; the next try in {} ms",
                p.reason,
                p.until
                    .saturating_duration_since(Instant::now())
                    .as_millis()
            ))),
            _ => Ok(()),
        }
    }

    /// A 403 `insufficient_scope`: authorize for more scopes, unless that asks for nothing
    /// new or the step-ups are used up (`None`: do not step up).
    async fn step_up(&self, challenge: Option<&Challenge>) -> Option<Result<(), Failure>> {
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
            let found = discover(&self.http, &self.parsed, &self.url, challenge).await?;
            let protects = !self.config.headless;
            let fleet = self.renewal_lock(protects, protects).await?;
            let old = self.state.borrow().tokens.clone();
            // Another process that stepped up to these scopes meanwhile: its tokens serve.
            if let Some(stored) = self.saved_meanwhile(&found, old.as_ref(), protects)? {
                let scope = stored.scope.as_deref();
                if union([scope, Some(&want)]) == union([scope]) {
                    tracing::debug!(server = %self.server, "using the tokens another step-up saved meanwhile");
                    self.state.borrow_mut().found = Some(found);
                    self.adopt(stored);
                    return Ok(());
                }
            }
            let replacing = old.map(|t| t.access_token);
            let tokens = self.full(&found, Some(&want), fleet, replacing).await?;
            self.state.borrow_mut().found = Some(found);
            self.set_tokens(tokens);
            Ok(())
        };
        Some(result.await)
    }

    /// A full authorization: identity, then the grant. A sign-in it starts keeps `fleet` (the
    /// renewal lock) until it ends, or, without one (another sign-in was in progress), takes
    /// it itself and takes tokens other than `replacing` saved meanwhile.
    async fn full(
        &self,
        found: &Found,
        scope: Option<&str>,
        fleet: Option<Rc<RenewalGuard>>,
        replacing: Option<Secret>,
    ) -> Result<Tokens, Failure> {
        let client = identify(&self.http, &self.config, &self.url, found).await?;
        self.state.borrow_mut().requested = scope.map(Into::into);
        let server = For {
            name: &self.server,
            url: &self.url,
        };
        let renewal = match fleet {
            Some(guard) => Renewal::Held(guard),
            None => Renewal::ToTake { replacing },
        };
        let tokens = authorize(
            &self.http,
            server,
            &self.config,
            found,
            &client,
            scope,
            renewal,
        )
        .await?;
        tracing::info!(server = %self.server, issuer = %server_text(&found.issuer), expires = ?tokens.expires_at, "authorized");
        Ok(tokens)
    }

    async fn refresh(&self, found: &Found, old: &Tokens) -> Result<Tokens, Failure> {
        let refresh = old.refresh_token.as_ref().ok_or("no refresh token")?;
        let client = identify(&self.http, &self.config, &self.url, found).await?;
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

    /// Saves renewed tokens and sends them from now on. Tokens that cannot be saved still
    /// serve this connection, and are saved again at its next renewal (see `State::unsaved`);
    /// another process sharing the store renews from the old ones meanwhile.
    fn set_tokens(&self, tokens: Tokens) {
        let saved = self
            .config
            .store
            .save_renewed_tokens(&self.url, tokens.clone());
        if let Err(e) = &saved {
            tracing::error!(server = %self.server, error = %e, "the renewed tokens could not be saved: they serve this connection, and are saved again at its next renewal");
        }
        self.adopt(tokens);
        self.state.borrow_mut().unsaved = saved.is_err();
    }

    /// Makes `tokens` the ones sent from now on.
    fn adopt(&self, tokens: Tokens) {
        let mut state = self.state.borrow_mut();
        state.tokens = Some(tokens);
        state.refresh_failed = false;
        state.paused = None;
        state.generation += 1;
    }

    fn forget_tokens(&self) {
        self.config.store.clear_tokens(&self.url);
        let mut state = self.state.borrow_mut();
        state.tokens = None;
        state.unsaved = false;
        state.generation += 1;
    }
}
