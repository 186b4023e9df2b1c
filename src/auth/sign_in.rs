//! Sign-ins in progress: the authorization code flow's wait for its user, which outlives the
//! connection attempt that started it.
//!
//! A user may take minutes to sign in, while a connection attempt is cut at `connect_timeout`
//! and every attempt builds a provider of its own. So the interactive part of an
//! authorization — the application's `Authorizer`, then the redemption of the code it brings —
//! runs as a task of its own, registered here under the MCP server's URL and the issuer: an
//! attempt that needs an authorization while one is in progress joins it (one `state`, one
//! authorization URL for the user) instead of voiding it with another, and the tokens it
//! brings are saved in the token store even when no attempt is left to take them.
//! `authorize_timeout` bounds it; while it waits, the connect timeout of that server's
//! attempts does not run ([`within_connect_timeout`]).
//!
//! The registry is shared by the clones of one [`OAuthConfig`](crate::config::OAuthConfig),
//! as its token store is; the task runs on the arbiter of the attempt that started it (an
//! `Authorizer`'s future need not be `Send`), and every joiner waits on a `watch` channel.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use tokio::sync::{watch, Notify};

use super::failure::Failure;
use super::Tokens;
use crate::config::Transport;

/// A sign-in's outcome, once there is one.
type Outcome = Option<Result<Tokens, Failure>>;

/// The sign-ins in progress, per MCP server URL and issuer.
#[derive(Default)]
pub(crate) struct SignIns {
    pending: Mutex<HashMap<(String, String), watch::Receiver<Outcome>>>,
    /// A sign-in started or ended.
    changed: Notify,
}

impl fmt::Debug for SignIns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignIns({} in progress)", self.lock().len())
    }
}

impl SignIns {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(String, String), watch::Receiver<Outcome>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The outcome of the sign-in at `issuer` for the MCP server at `server_url`: the one in
    /// progress, joined, or else `start`ed now as a task of its own.
    pub async fn join_or_start(
        self: &Arc<Self>,
        server_url: &str,
        issuer: &str,
        start: impl FnOnce() -> LocalBoxFuture<'static, Result<Tokens, Failure>>,
    ) -> Result<Tokens, Failure> {
        let key = (server_url.to_owned(), issuer.to_owned());
        let mut outcome = {
            let mut pending = self.lock();
            match pending.get(&key).filter(|rx| running(rx)) {
                Some(rx) => {
                    tracing::info!(issuer = %crate::protocol::text::server_text(issuer), "a sign-in is in progress for this server: waiting for it rather than starting another");
                    rx.clone()
                }
                None => {
                    let (tx, rx) = watch::channel(None);
                    pending.insert(key.clone(), rx.clone());
                    let registered = Registered {
                        sign_ins: self.clone(),
                        key,
                        rx: rx.clone(),
                    };
                    let sign_in = start();
                    actix::spawn(async move {
                        let outcome = sign_in.await;
                        let _ = tx.send(Some(outcome));
                        drop(registered);
                    });
                    self.changed.notify_waiters();
                    rx
                }
            }
        };
        let done = match outcome.wait_for(Option::is_some).await {
            Ok(done) => done.clone(),
            Err(_) => None,
        };
        done.unwrap_or_else(|| Err(abandoned()))
    }

    /// Resolves when a sign-in starts or ends (from its creation on: make it before looking,
    /// so that a change in between is not missed).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Whether a sign-in for the MCP server at `server_url` is in progress.
    pub fn in_progress(&self, server_url: &str) -> bool {
        self.lock()
            .iter()
            .any(|((url, _), rx)| url == server_url && running(rx))
    }

    /// Waits, bounded by `limit`, for `attempt`, the time a sign-in for the MCP server at
    /// `server_url` is in progress not counted. `None`: the limit passed.
    pub async fn within<F: Future>(
        &self,
        limit: Duration,
        server_url: &str,
        attempt: F,
    ) -> Option<F::Output> {
        let mut attempt = std::pin::pin!(attempt);
        let mut left = limit;
        loop {
            // Registered before the check, so that a change in between is not missed.
            let changed = self.changed.notified();
            if self.in_progress(server_url) {
                tokio::select! {
                    done = &mut attempt => return Some(done),
                    () = changed => continue,
                }
            }
            let counting = Instant::now();
            tokio::select! {
                done = &mut attempt => return Some(done),
                () = tokio::time::sleep(left) => return None,
                () = changed => left = left.saturating_sub(counting.elapsed()),
            }
        }
    }
}

/// Runs a connection attempt within `limit` (the server's `connect_timeout`), not counting
/// the time a sign-in for its server waits for the user: that part has `authorize_timeout`.
/// `None`: the limit passed.
pub(crate) async fn within_connect_timeout<F: Future>(
    limit: Duration,
    transport: &Transport,
    attempt: F,
) -> Option<F::Output> {
    if let Transport::Http(http) = transport {
        if let Some(oauth) = &http.oauth {
            return oauth.sign_ins.within(limit, &http.url, attempt).await;
        }
    }
    tokio::time::timeout(limit, attempt).await.ok()
}

/// Whether the sign-in behind `rx` may still bring an outcome (its task has not ended).
fn running(rx: &watch::Receiver<Outcome>) -> bool {
    rx.borrow().is_none() && rx.has_changed().is_ok()
}

fn abandoned() -> Failure {
    Failure::NotNow("the sign-in in progress ended without an outcome".into())
}

/// A sign-in's place in the registry, given up when its task ends (or is dropped).
struct Registered {
    sign_ins: Arc<SignIns>,
    key: (String, String),
    rx: watch::Receiver<Outcome>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        {
            let mut pending = self.sign_ins.lock();
            if pending
                .get(&self.key)
                .is_some_and(|rx| rx.same_channel(&self.rx))
            {
                pending.remove(&self.key);
            }
        }
        self.sign_ins.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[actix::test]
    async fn a_second_caller_joins_the_sign_in_in_progress() {
        let sign_ins = Arc::new(SignIns::default());
        let started = Arc::new(AtomicUsize::new(0));
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let start = |started: Arc<AtomicUsize>, wait: tokio::sync::oneshot::Receiver<()>| {
            move || -> LocalBoxFuture<'static, Result<Tokens, Failure>> {
                started.fetch_add(1, Ordering::SeqCst);
                Box::pin(async move {
                    let _ = wait.await;
                    Ok(Tokens::new("https://as", "t"))
                })
            }
        };
        let first = sign_ins.join_or_start("u", "https://as", start(started.clone(), wait));
        let (_unused, never) = tokio::sync::oneshot::channel::<()>();
        let second = sign_ins.join_or_start("u", "https://as", start(started.clone(), never));
        // Polled in order: the first registers its sign-in, the second joins it, then the
        // user answers.
        let answer = async {
            assert!(sign_ins.in_progress("u"));
            go.send(()).unwrap();
        };
        let (a, b, ()) = futures_util::future::join3(first, second, answer).await;
        assert_eq!(a.unwrap().access_token.expose(), "t");
        assert_eq!(b.unwrap().access_token.expose(), "t");
        assert_eq!(started.load(Ordering::SeqCst), 1, "one sign-in");
        assert!(!sign_ins.in_progress("u"));
    }

    #[actix::test]
    async fn the_limit_does_not_run_while_a_sign_in_waits() {
        let sign_ins = Arc::new(SignIns::default());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let joined = sign_ins.join_or_start("u", "https://as", move || {
            Box::pin(async move {
                let _ = wait.await;
                Ok(Tokens::new("https://as", "t"))
            })
        });
        let limit = Duration::from_millis(20);
        let attempt = async {
            let tokens = joined.await;
            tokens.map(|t| t.access_token.expose().to_owned())
        };
        let release = async {
            // Longer than the limit: the user is slow.
            tokio::time::sleep(limit * 5).await;
            go.send(()).unwrap();
        };
        let (done, ()) = tokio::join!(sign_ins.within(limit, "u", attempt), release);
        assert_eq!(done, Some(Ok("t".to_owned())));
        // Without a sign-in the limit holds.
        let idle = sign_ins
            .within(limit, "u", std::future::pending::<()>())
            .await;
        assert_eq!(idle, None);
    }
}
