//! [`TokenStore`]: where tokens and client registrations live between connections, so that a
//! reconnect or a restart of the server reuses a token that is still valid instead of
//! authorizing again. [`MemoryTokenStore`] is the default.
//!
//! Tokens are kept per MCP server URL and stamped with the issuer of the authorization
//! server that issued them; registrations (from Dynamic Client Registration) are kept per
//! issuer. A token or registration stamped with another issuer than the one discovery finds
//! now is never used (2026-07-28, "Authorization Server Binding"): a server that moved to
//! another authorization server gets a new registration and new tokens there.
//!
//! Configured client credentials (a `client_id` with its secret, key or assertion) are bound
//! the same way: an [`IssuerBinding`] per MCP server URL records the issuer they were first
//! sent to, and they are not sent to another (see
//! [`OAuthConfig::allow_issuer_migration`](crate::config::OAuthConfig::allow_issuer_migration)).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::SystemTime;

use super::Secret;

/// The tokens of one MCP server, as the authorization server issued them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Tokens {
    /// The issuer of the authorization server that issued them.
    pub issuer: String,
    /// The access token.
    pub access_token: Secret,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<Secret>,
    /// When the access token expires, if the server said (`expires_in`).
    pub expires_at: Option<SystemTime>,
    /// The scopes granted (or requested, when the answer did not say), space separated.
    pub scope: Option<String>,
    /// Bound to this configuration's DPoP key (RFC 9449): presented with the `DPoP` scheme
    /// and a proof.
    pub dpop: bool,
}

impl Tokens {
    /// Tokens issued by `issuer`.
    pub fn new(issuer: impl Into<String>, access_token: impl Into<Secret>) -> Self {
        Tokens {
            issuer: issuer.into(),
            access_token: access_token.into(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            dpop: false,
        }
    }

    /// With a refresh token.
    pub fn refresh_token(mut self, token: impl Into<Secret>) -> Self {
        self.refresh_token = Some(token.into());
        self
    }

    /// With an expiry time.
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// With the granted scopes.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Why the access token cannot be presented in an `Authorization` header, if it cannot:
    /// RFC 6750's token is visible ASCII without spaces, and an HTTP header can carry no line
    /// break or other control character. Says what is wrong, never the token.
    pub(crate) fn unsendable(&self) -> Option<&'static str> {
        let token = self.access_token.expose();
        if token.is_empty() {
            return Some("it is empty");
        }
        token.chars().find_map(|c| match c {
            '\r' | '\n' => Some("it contains a line break (CR or LF)"),
            ' ' | '\t' => Some("it contains a space"),
            c if c.is_ascii_control() => Some("it contains a control character"),
            c if !c.is_ascii() => Some("it contains a character outside visible ASCII"),
            _ => None,
        })
    }
}

/// A client registration at one authorization server (Dynamic Client Registration).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Registration {
    /// The issuer of the authorization server it belongs to.
    pub issuer: String,
    /// The client id it issued.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The token endpoint authentication method it granted, if it said.
    pub auth_method: Option<String>,
}

/// The authorization server a server's configured client credentials belong to: the issuer
/// they were first sent to, for that client id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IssuerBinding {
    /// The configured client id.
    pub client_id: String,
    /// The issuer of the authorization server its credentials were first sent to.
    pub issuer: String,
}

impl IssuerBinding {
    /// Credentials of `client_id`, bound to `issuer`.
    pub fn new(client_id: impl Into<String>, issuer: impl Into<String>) -> Self {
        IssuerBinding {
            client_id: client_id.into(),
            issuer: issuer.into(),
        }
    }
}

/// Keeps tokens and registrations between connections. Implement it to keep them in a
/// keyring, a database or an encrypted file; it must keep them confidential, and keep the
/// issuer bindings as long as the tokens (they are what keeps configured credentials from
/// being sent to another authorization server after a restart).
///
/// ```
/// use mcp_supervisor::auth::{MemoryTokenStore, TokenStore, Tokens};
///
/// let store = MemoryTokenStore::default();
/// store.save_tokens("https://mcp.example.com/mcp", Tokens::new("https://auth.example.com", "t"));
/// assert!(store.tokens("https://mcp.example.com/mcp").is_some());
/// ```
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens last saved for the MCP server at `server_url`.
    fn tokens(&self, server_url: &str) -> Option<Tokens>;
    /// Saves (replaces) the tokens of the MCP server at `server_url`.
    fn save_tokens(&self, server_url: &str, tokens: Tokens);
    /// Forgets the tokens of the MCP server at `server_url` (they were refused).
    fn clear_tokens(&self, server_url: &str);
    /// The registration at the authorization server `issuer`.
    fn registration(&self, issuer: &str) -> Option<Registration>;
    /// Saves (replaces) the registration at the authorization server `issuer`.
    fn save_registration(&self, issuer: &str, registration: Registration);
    /// The issuer the configured client credentials of the MCP server at `server_url` are
    /// bound to.
    fn issuer_binding(&self, server_url: &str) -> Option<IssuerBinding>;
    /// Saves (replaces) that binding.
    fn save_issuer_binding(&self, server_url: &str, binding: IssuerBinding);

    /// Waits for the right to renew the tokens of the MCP server at `server_url` (refresh
    /// them, or authorize anew) and holds it until the guard is dropped. A store that
    /// processes share must serialize renewals across them: two processes refreshing one
    /// rotated refresh token at once would void the grant for all, and two signing in would
    /// ask the user twice. The renewer reads the store again once it holds the right
    /// ([`tokens_for_renewal`](Self::tokens_for_renewal)), and takes what another process
    /// saved meanwhile instead of renewing.
    ///
    /// The default serializes the renewals of one server URL by this store within this process
    /// (every connection that shares the store), which is all a store of one process needs.
    /// `Err`: the store cannot say (the renewal is not tried; the call that needed it is
    /// answered `unavailable`).
    fn lock_renewal(&self, server_url: &str) -> RenewalFuture {
        let lock = LocalRenewal::lock(store_id(self), server_url.to_owned());
        Box::pin(async move { Ok(RenewalGuard::holding(lock.await)) })
    }

    /// The tokens of the MCP server at `server_url` as stored now, for a renewal that holds
    /// the [`lock_renewal`](Self::lock_renewal): `Err` when the store cannot say, so that a
    /// renewal is not made from tokens another process may have renewed already. The default
    /// is [`tokens`](Self::tokens), which cannot fail.
    fn tokens_for_renewal(&self, server_url: &str) -> Result<Option<Tokens>, TokenStoreError> {
        Ok(self.tokens(server_url))
    }

    /// Saves the tokens a renewal got (see [`save_tokens`](Self::save_tokens)): `Err` when
    /// they could not be saved, which the renewer reports (another process would renew from
    /// the old ones). The default is `save_tokens`, which cannot fail.
    fn save_renewed_tokens(&self, server_url: &str, tokens: Tokens) -> Result<(), TokenStoreError> {
        self.save_tokens(server_url, tokens);
        Ok(())
    }
}

/// What tells one store from another in this process: its address (two stores alive at once
/// never share one; a store dropped and another made at its address only serializes them).
pub(crate) fn store_id<S: TokenStore + ?Sized>(store: &S) -> usize {
    std::ptr::from_ref(store).cast::<()>() as usize
}

/// The renewals of one server URL by one store in this process, one at a time: the default
/// [`TokenStore::lock_renewal`], and what a shared store takes before its own lock (so that
/// one process waits on one connection, not one per waiter). Apart per store: the stores of
/// separate configurations (one per user, say) do not wait for each other's sign-ins.
pub(crate) struct LocalRenewal {
    key: (usize, String),
    held: Option<tokio::sync::OwnedMutexGuard<()>>,
}

/// The locks of [`LocalRenewal`], per store and server URL; an entry lives while someone holds
/// or waits for it.
type LocalLocks = Mutex<HashMap<(usize, String), std::sync::Arc<tokio::sync::Mutex<()>>>>;
static LOCAL_RENEWALS: std::sync::LazyLock<LocalLocks> = std::sync::LazyLock::new(Mutex::default);

impl LocalRenewal {
    /// Waits for the renewals of `url` by store `store` ([`store_id`]) in this process, and
    /// holds them until dropped.
    pub(crate) async fn lock(store: usize, url: String) -> LocalRenewal {
        let key = (store, url);
        let lock = {
            let mut locks = LOCAL_RENEWALS.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(key.clone()).or_default().clone()
        };
        let held = lock.lock_owned().await;
        LocalRenewal {
            key,
            held: Some(held),
        }
    }
}

impl Drop for LocalRenewal {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let lock = std::sync::Arc::clone(tokio::sync::OwnedMutexGuard::mutex(&held));
        drop(held);
        let mut locks = LOCAL_RENEWALS.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and ours: nobody else holds or waits for it.
        if std::sync::Arc::strong_count(&lock) == 2 {
            locks.remove(&self.key);
        }
    }
}

/// What [`TokenStore::lock_renewal`] returns: the right to renew, once it is granted.
pub type RenewalFuture =
    Pin<Box<dyn Future<Output = Result<RenewalGuard, TokenStoreError>> + Send + 'static>>;

/// The right to renew one server's tokens ([`TokenStore::lock_renewal`]), given up when
/// dropped.
///
/// ```
/// use mcp_supervisor::auth::RenewalGuard;
///
/// // A store's lock that is released when its sender is dropped, for instance.
/// let (release, released) = std::sync::mpsc::channel::<()>();
/// let guard = RenewalGuard::holding(release);
/// drop(guard);
/// assert!(released.recv().is_err(), "released");
/// ```
pub struct RenewalGuard {
    _held: Option<Box<dyn Send>>,
}

impl RenewalGuard {
    /// A right that holds nothing (nothing to serialize: a store nobody else renews from).
    pub fn unshared() -> Self {
        RenewalGuard { _held: None }
    }

    /// A right that lasts as long as `held` (a lock's handle, a channel whose end the lock's
    /// holder waits on): dropping the guard drops it.
    pub fn holding(held: impl Send + 'static) -> Self {
        RenewalGuard {
            _held: Some(Box::new(held)),
        }
    }
}

impl std::fmt::Debug for RenewalGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self._held.is_some() {
            "RenewalGuard(held)"
        } else {
            "RenewalGuard(unshared)"
        })
    }
}

/// Why a [`TokenStore`] could not do what was asked of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The database (or other backing store) failed or cannot be reached.
    #[error("the token store at {database}: {message}")]
    Database {
        /// Where it is, without any password.
        database: String,
        /// What failed.
        message: String,
    },
    /// A value the store was given is not one it can keep.
    #[error("the token store cannot take this {what}: {why}")]
    Invalid {
        /// What the value is.
        what: &'static str,
        /// Why it cannot be kept.
        why: &'static str,
    },
}

/// A [`TokenStore`] in memory: tokens survive reconnects and server restarts, not a restart of
/// this process. Clones of the `Arc` it is shared by see the same tokens.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, Tokens>>,
    registrations: Mutex<HashMap<String, Registration>>,
    bindings: Mutex<HashMap<String, IssuerBinding>>,
}

/// Servers (and issuers) a [`MemoryTokenStore`] keeps; a full store forgets an arbitrary
/// entry for a new one.
const MAX_ENTRIES: usize = 1024;

fn put<V>(map: &Mutex<HashMap<String, V>>, key: &str, value: V) {
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_ENTRIES && !map.contains_key(key) {
        if let Some(victim) = map.keys().next().cloned() {
            map.remove(&victim);
        }
    }
    map.insert(key.to_owned(), value);
}

impl TokenStore for MemoryTokenStore {
    fn tokens(&self, server_url: &str) -> Option<Tokens> {
        let map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        map.get(server_url).cloned()
    }

    fn save_tokens(&self, server_url: &str, tokens: Tokens) {
        put(&self.tokens, server_url, tokens);
    }

    fn clear_tokens(&self, server_url: &str) {
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(server_url);
    }

    fn registration(&self, issuer: &str) -> Option<Registration> {
        let map = self.registrations.lock().unwrap_or_else(|e| e.into_inner());
        map.get(issuer).cloned()
    }

    fn save_registration(&self, issuer: &str, registration: Registration) {
        put(&self.registrations, issuer, registration);
    }

    fn issuer_binding(&self, server_url: &str) -> Option<IssuerBinding> {
        let map = self.bindings.lock().unwrap_or_else(|e| e.into_inner());
        map.get(server_url).cloned()
    }

    fn save_issuer_binding(&self, server_url: &str, binding: IssuerBinding) {
        put(&self.bindings, server_url, binding);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// What every token store does, whatever keeps it: tokens, registrations and bindings
    /// read back as saved, replaced, forgotten, and kept apart by key.
    pub(crate) fn suite(store: &dyn TokenStore) {
        let url = "https://mcp.example.com/mcp";
        assert_eq!(store.tokens(url), None);
        let at = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
        let mut full = Tokens::new("https://as", "access-1")
            .refresh_token("refresh-1")
            .expires_at(at)
            .scope("mcp:basic offline_access");
        full.dpop = true;
        store.save_tokens(url, full.clone());
        assert_eq!(store.tokens(url), Some(full));
        let bare = Tokens::new("https://as", "access-2");
        store.save_tokens(url, bare.clone());
        assert_eq!(store.tokens(url), Some(bare.clone()), "replaced whole");
        store.save_tokens("https://other.example/mcp", Tokens::new("https://as", "x"));
        store.clear_tokens(url);
        assert_eq!(store.tokens(url), None);
        assert!(store.tokens("https://other.example/mcp").is_some(), "apart");

        assert_eq!(store.registration("https://as"), None);
        let public = Registration {
            issuer: "https://as".into(),
            client_id: "c-1".into(),
            client_secret: None,
            auth_method: Some("none".into()),
        };
        store.save_registration("https://as", public.clone());
        assert_eq!(store.registration("https://as"), Some(public));
        let confidential = Registration {
            issuer: "https://as".into(),
            client_id: "c-2".into(),
            client_secret: Some(Secret::new("s-2")),
            auth_method: None,
        };
        store.save_registration("https://as", confidential.clone());
        assert_eq!(store.registration("https://as"), Some(confidential));

        assert_eq!(store.issuer_binding(url), None);
        store.save_issuer_binding(url, IssuerBinding::new("svc", "https://as"));
        store.save_issuer_binding(url, IssuerBinding::new("svc", "https://as2"));
        assert_eq!(
            store.issuer_binding(url),
            Some(IssuerBinding::new("svc", "https://as2"))
        );
    }

    #[actix::test]
    async fn the_memory_store_keeps_what_a_store_keeps_and_serializes_renewals_in_the_process() {
        let store = MemoryTokenStore::default();
        suite(&store);
        let url = "https://mcp.example.com/serialized";
        let first = store.lock_renewal(url).await.unwrap();
        // Another connection of this store, renewing the same server: it waits.
        let mut second = store.lock_renewal(url);
        let elsewhere = store.lock_renewal("https://mcp.example.com/other").await;
        assert!(elsewhere.is_ok(), "another server's renewals are apart");
        // Another store (another configuration's) does not wait for this one's.
        let other = MemoryTokenStore::default();
        assert!(
            other.lock_renewal(url).await.is_ok(),
            "another store's are apart"
        );
        assert!(
            futures_util::poll!(&mut second).is_pending(),
            "waits while the first holds it"
        );
        drop(first);
        let second = second.await.unwrap();
        assert_eq!(format!("{second:?}"), "RenewalGuard(held)");
        drop(second);
        let locks = LOCAL_RENEWALS.lock().unwrap();
        assert!(
            !locks.contains_key(&(store_id(&store), url.to_owned())),
            "forgotten once nobody holds it"
        );
    }

    #[test]
    fn debug_of_tokens_and_registrations_hides_secrets() {
        let t = Tokens::new("https://as", "access-XYZ").refresh_token("refresh-XYZ");
        let r = Registration {
            issuer: "https://as".into(),
            client_id: "c".into(),
            client_secret: Some(Secret::new("secret-XYZ")),
            auth_method: None,
        };
        let store = MemoryTokenStore::default();
        store.save_tokens("u", t.clone());
        store.save_registration("https://as", r.clone());
        let shown = format!("{t:?} {r:?} {store:?}");
        assert!(!shown.contains("XYZ"), "{shown}");
        assert_eq!(store.tokens("u"), Some(t));
        assert_eq!(store.registration("https://as"), Some(r));
        store.clear_tokens("u");
        assert_eq!(store.tokens("u"), None);
        let binding = IssuerBinding::new("c", "https://as");
        store.save_issuer_binding("u", binding.clone());
        assert_eq!(store.issuer_binding("u"), Some(binding));
    }

    #[test]
    fn memory_store_is_bounded() {
        let store = MemoryTokenStore::default();
        for i in 0..MAX_ENTRIES + 10 {
            store.save_tokens(&format!("u{i}"), Tokens::new("i", "t"));
        }
        assert_eq!(store.tokens.lock().unwrap().len(), MAX_ENTRIES);
    }
}
