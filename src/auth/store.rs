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
mod tests {
    use super::*;

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
