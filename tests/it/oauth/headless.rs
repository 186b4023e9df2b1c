//! A headless [`Authorizer`]: it fetches the authorization URL without following the
//! redirect and reads the callback parameters from `Location`, as an auto-approving
//! authorization server allows. It counts its uses, can be told to decline, to take its
//! time (a user who is slow to sign in), and to wait for a test's go (a user who signs in
//! when the test has seen what it waits for).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_supervisor::auth::{
    AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer,
};

#[derive(Clone, Default)]
pub struct Headless {
    pub uses: Arc<AtomicUsize>,
    pub decline: Arc<AtomicBool>,
    /// How long the user takes to sign in, in milliseconds.
    pub slowness_ms: Arc<AtomicU64>,
    /// When set, the user signs in once it holds `true`.
    pub go: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Authorizer for Headless {
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture {
        self.uses.fetch_add(1, Ordering::SeqCst);
        let decline = self.decline.load(Ordering::SeqCst);
        let slowness = Duration::from_millis(self.slowness_ms.load(Ordering::SeqCst));
        let go = self.go.clone();
        Box::pin(async move {
            if decline {
                return Err("the user is not here".into());
            }
            if let Some(mut go) = go {
                go.wait_for(|go| *go)
                    .await
                    .map_err(|_| "the test that held the user back has gone")?;
            }
            // The user reading the page, typing a password: part of the scenario, not a
            // synchronisation.
            tokio::time::sleep(slowness).await;
            let client = awc::Client::builder().disable_redirects().finish();
            let response = client
                .get(&request.url)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or("no Location")?;
            AuthorizationResponse::from_redirect(location)
        })
    }
}
