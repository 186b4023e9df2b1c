//! Token requests — client credentials, authorization code, refresh — with client
//! authentication at the token endpoint, and reading their answers into [`Tokens`].
//!
//! Client authentication is chosen from what the registration (or the configuration) named
//! and what the authorization server's metadata lists: `client_secret_basic` (the RFC 8414
//! default), `client_secret_post`, `none` (a public client, id in the form), and
//! `private_key_jwt` (RFC 7523 §2.2: a signed assertion whose `aud` is the issuer and whose
//! `iss` and `sub` are the client id). RFC 8707's `resource` goes in every request.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use super::dpop::DpopKey;
use super::http::{post_form, Answer};
use super::{Secret, Tokens};

/// The longest `expires_in` we believe (a year); larger ones are cut to it.
const MAX_EXPIRES_IN: u64 = 365 * 24 * 3600;
/// The JWT-bearer grant type (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Lifetime of a client assertion.
const ASSERTION_LIFETIME: u64 = 300;

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    Basic,
    Post,
    None,
    PrivateKeyJwt,
}

impl AuthMethod {
    fn parse(name: &str) -> Option<AuthMethod> {
        Some(match name {
            "client_secret_basic" => AuthMethod::Basic,
            "client_secret_post" => AuthMethod::Post,
            "none" => AuthMethod::None,
            "private_key_jwt" => AuthMethod::PrivateKeyJwt,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// The client as the token endpoint sees it.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub id: String,
    pub secret: Option<Secret>,
    /// A PKCS#8 PEM private key, for `private_key_jwt`.
    pub key: Option<Secret>,
    /// `ES256` (default) or `RS256`.
    pub algorithm: Option<String>,
    pub method: AuthMethod,
}

/// Picks the token endpoint authentication method: the one named (by the registration or
/// the configuration) if the server supports it, else by what the client holds and the
/// server lists — a key: `private_key_jwt`; a secret: `client_secret_basic`, then
/// `client_secret_post`; else `none`.
pub(crate) fn choose_method(
    named: Option<&str>,
    supported: Option<&[String]>,
    has_secret: bool,
    has_key: bool,
) -> AuthMethod {
    let listed = |m: AuthMethod| supported.is_none_or(|s| s.iter().any(|x| x == m.name()));
    if let Some(m) = named.and_then(AuthMethod::parse) {
        if listed(m) {
            return m;
        }
    }
    if has_key && listed(AuthMethod::PrivateKeyJwt) {
        return AuthMethod::PrivateKeyJwt;
    }
    if has_secret {
        for m in [AuthMethod::Basic, AuthMethod::Post] {
            if listed(m) {
                return m;
            }
        }
        if !listed(AuthMethod::None) {
            return AuthMethod::Post;
        }
    }
    AuthMethod::None
}

/// One token request.
pub(crate) struct TokenRequest<'a> {
    pub http: &'a awc::Client,
    pub endpoint: &'a str,
    pub issuer: &'a str,
    pub client: &'a Client,
    /// RFC 8707 `resource`, verbatim.
    pub resource: &'a str,
    /// The scope asked for (also what is recorded when the answer names none).
    pub scope: Option<&'a str>,
    /// The DPoP key to bind the token to, when DPoP is used.
    pub dpop: Option<&'a DpopKey>,
}

/// The grant-specific part of the form.
pub(crate) enum Grant<'a> {
    ClientCredentials,
    /// RFC 7523 §2.1, with this assertion.
    JwtBearer(&'a Secret),
    Code {
        code: &'a Secret,
        verifier: &'a Secret,
        redirect_uri: &'a str,
    },
    Refresh(&'a Secret),
}

impl TokenRequest<'_> {
    /// Sends it; the tokens, or why there are none (without any secret in the text).
    pub async fn send(&self, grant: Grant<'_>) -> Result<Tokens, String> {
        // A DPoP server may ask for its nonce first (RFC 9449 §8): one more try with it.
        let mut nonce = None;
        for _ in 0..2 {
            let answer = self.post(&grant, nonce.as_deref()).await?;
            let asks_nonce = answer.status == 400
                && answer.body.get("error").and_then(Value::as_str) == Some("use_dpop_nonce");
            match (&answer.dpop_nonce, self.dpop) {
                (Some(new), Some(_)) if asks_nonce && nonce.as_ref() != Some(new) => {
                    nonce = Some(new.clone());
                    continue;
                }
                _ => {}
            }
            let mut tokens = read_tokens(self.issuer, &answer, self.dpop.is_some())?;
            if tokens.scope.is_none() {
                tokens.scope = self.scope.map(Into::into);
            }
            if let (Grant::Refresh(old), None) = (&grant, &tokens.refresh_token) {
                // No new refresh token: the old one stays valid (RFC 6749 §6).
                tokens.refresh_token = Some((*old).clone());
            }
            return Ok(tokens);
        }
        Err("the token endpoint asked for a DPoP nonce again".into())
    }

    /// One POST of the token request (a fresh client assertion and proof each time).
    async fn post(&self, grant: &Grant<'_>, nonce: Option<&str>) -> Result<Answer, String> {
        let mut form: Vec<(&str, String)> = Vec::with_capacity(10);
        match grant {
            Grant::ClientCredentials => form.push(("grant_type", "client_credentials".into())),
            Grant::JwtBearer(assertion) => {
                form.push(("grant_type", JWT_BEARER.into()));
                form.push(("assertion", assertion.expose().into()));
            }
            Grant::Code {
                code,
                verifier,
                redirect_uri,
            } => {
                form.push(("grant_type", "authorization_code".into()));
                form.push(("code", code.expose().into()));
                form.push(("code_verifier", verifier.expose().into()));
                form.push(("redirect_uri", (*redirect_uri).into()));
            }
            Grant::Refresh(token) => {
                form.push(("grant_type", "refresh_token".into()));
                form.push(("refresh_token", token.expose().into()));
            }
        }
        if let Some(scope) = self.scope {
            form.push(("scope", scope.into()));
        }
        form.push(("resource", self.resource.into()));
        let basic = self.authenticate(&mut form)?;
        let proof = match self.dpop {
            Some(key) => Some(key.proof("POST", self.endpoint, None, nonce)?),
            None => None,
        };
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_form(self.http, self.endpoint, &pairs, basic, proof).await
    }

    /// Adds the client authentication to the form; the Basic credentials, if that is it.
    fn authenticate(&self, form: &mut Vec<(&str, String)>) -> Result<Option<String>, String> {
        let client = self.client;
        let secret = || {
            client
                .secret
                .as_ref()
                .map(|s| s.expose().to_owned())
                .ok_or_else(|| format!("{} needs a client secret", client.method.name()))
        };
        match client.method {
            AuthMethod::Basic => {
                // RFC 6749 §2.3.1: both form-urlencoded before Base64.
                let enc = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", enc(&client.id), enc(&secret()?));
                Ok(Some(STANDARD.encode(pair)))
            }
            AuthMethod::Post => {
                form.push(("client_id", client.id.clone()));
                form.push(("client_secret", secret()?));
                Ok(None)
            }
            AuthMethod::None => {
                form.push(("client_id", client.id.clone()));
                Ok(None)
            }
            AuthMethod::PrivateKeyJwt => {
                let assertion = client_assertion(client, self.issuer)?;
                form.push(("client_id", client.id.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push(("client_assertion", assertion));
                Ok(None)
            }
        }
    }
}

/// A signed client assertion (RFC 7523 §3): `iss` and `sub` the client id, `aud` the
/// authorization server's issuer, five minutes long, with a fresh `jti`.
pub(crate) fn client_assertion(client: &Client, issuer: &str) -> Result<String, String> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let pem = client
        .key
        .as_ref()
        .ok_or("private_key_jwt needs a private key")?;
    let algorithm = client.algorithm.as_deref().unwrap_or("ES256");
    let (algorithm, key) = match algorithm {
        "ES256" => (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(pem.expose().as_bytes()),
        ),
        "RS256" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(pem.expose().as_bytes()),
        ),
        other => {
            return Err(format!(
                "signing algorithm `{other}` is not supported (ES256, RS256)"
            ))
        }
    };
    // The key's own error could quote it: say only what kind of problem it is.
    let key = key.map_err(|_| {
        "the private key is not a PKCS#8 PEM key of that algorithm (an EC key must include its public key)".to_owned()
    })?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "iss": client.id,
        "sub": client.id,
        "aud": issuer,
        "iat": now,
        "exp": now.saturating_add(ASSERTION_LIFETIME),
        "jti": super::authorizer::random_token(),
    });
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
        .map_err(|_| "signing the client assertion failed".to_owned())
}

/// The tokens in a token endpoint's answer, or its OAuth error (code and description, which
/// are the server's text: the caller escapes them).
pub(crate) fn read_tokens(issuer: &str, answer: &Answer, dpop: bool) -> Result<Tokens, String> {
    let body = &answer.body;
    let text = |k: &str| body.get(k).and_then(Value::as_str);
    if let Some(error) = text("error") {
        let description = text("error_description").unwrap_or("");
        let description: String = description.chars().take(200).collect();
        return Err(format!(
            "the token endpoint answered HTTP {} {error}: {description}",
            answer.status
        ));
    }
    if !(200..300).contains(&answer.status) {
        return Err(format!(
            "the token endpoint answered HTTP {}",
            answer.status
        ));
    }
    let access = text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint's answer has no access_token")?;
    let bound = match text("token_type") {
        Some(kind) if kind.eq_ignore_ascii_case("dpop") && dpop => true,
        Some(kind) if !kind.eq_ignore_ascii_case("bearer") => {
            return Err(format!("token type `{kind}` is not supported"));
        }
        _ => false,
    };
    let mut tokens = Tokens::new(issuer, access);
    tokens.dpop = bound;
    tokens.refresh_token = text("refresh_token").map(Secret::new);
    tokens.scope = text("scope").map(Into::into);
    tokens.expires_at = body
        .get("expires_in")
        .and_then(Value::as_u64)
        .and_then(|s| SystemTime::now().checked_add(Duration::from_secs(s.min(MAX_EXPIRES_IN))));
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn method_choice() {
        use AuthMethod::{Basic, Post, PrivateKeyJwt};
        let none = AuthMethod::None;
        // Registration named one the server lists.
        assert_eq!(
            choose_method(
                Some("client_secret_post"),
                Some(&list(&["client_secret_post"])),
                true,
                false
            ),
            Post
        );
        // The server lists only `none`; a secret does not matter.
        assert_eq!(
            choose_method(None, Some(&list(&["none"])), true, false),
            none
        );
        // No list: Basic with a secret (RFC 8414's default), else none.
        assert_eq!(choose_method(None, None, true, false), Basic);
        assert_eq!(choose_method(None, None, false, false), none);
        assert_eq!(
            choose_method(
                None,
                Some(&list(&["private_key_jwt", "client_secret_basic"])),
                false,
                true
            ),
            PrivateKeyJwt
        );
        assert_eq!(
            choose_method(
                Some("client_secret_basic"),
                Some(&list(&["client_secret_post"])),
                true,
                false
            ),
            Post
        );
    }

    #[test]
    fn token_answers() {
        let ok = Answer {
            status: 200,
            body: serde_json::json!({"access_token": "A", "token_type": "bearer", "expires_in": 60, "refresh_token": "R"}),
            dpop_nonce: None,
        };
        let t = read_tokens("iss", &ok, false).unwrap();
        assert_eq!(t.access_token.expose(), "A");
        assert!(t.expires_at.is_some());
        assert_eq!(t.refresh_token.unwrap().expose(), "R");
        let err = Answer {
            status: 400,
            body: serde_json::json!({"error": "invalid_grant", "error_description": "expired"}),
            dpop_nonce: None,
        };
        assert!(read_tokens("iss", &err, false)
            .unwrap_err()
            .contains("invalid_grant"));
        // Some servers say errors with 200.
        let err200 = Answer {
            status: 200,
            body: serde_json::json!({"error": "invalid_client"}),
            dpop_nonce: None,
        };
        assert!(read_tokens("iss", &err200, false).is_err());
        let huge = Answer {
            status: 200,
            body: serde_json::json!({"access_token": "A", "expires_in": u64::MAX}),
            dpop_nonce: None,
        };
        assert!(read_tokens("iss", &huge, false).is_ok());
        // A DPoP-bound token only when we asked for one.
        let dpop = Answer {
            status: 200,
            body: serde_json::json!({"access_token": "A", "token_type": "DPoP"}),
            dpop_nonce: None,
        };
        assert!(read_tokens("iss", &dpop, true).unwrap().dpop);
        assert!(read_tokens("iss", &dpop, false).is_err());
    }
}
