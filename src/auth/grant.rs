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
use super::failure::Failure;
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
    pub async fn send(&self, grant: Grant<'_>) -> Result<Tokens, Failure> {
        // A DPoP server may ask for its nonce first (RFC 9449 §8): one more try with it.
        let mut nonce = None;
        for _ in 0..2 {
            let answer = self.post(&grant, nonce.as_deref()).await?;
            let asks_nonce = answer.status == 400 && answer.text("error") == Some("use_dpop_nonce");
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
        Err(Failure::NotNow(
            "the token endpoint asked for a DPoP nonce again".into(),
        ))
    }

    /// One POST of the token request (a fresh client assertion and proof each time).
    async fn post(&self, grant: &Grant<'_>, nonce: Option<&str>) -> Result<Answer, Failure> {
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

/// OAuth errors (RFC 6749 §5.2) that say the grant or the client is no good: a refresh token
/// refused with one of these is over.
const GRANT_OVER: [&str; 3] = ["invalid_grant", "invalid_client", "unauthorized_client"];
/// OAuth errors that say "not now" (the authorization endpoint's two, which some token
/// endpoints answer too).
const NOT_NOW: [&str; 2] = ["temporarily_unavailable", "server_error"];

/// The tokens in a token endpoint's answer, or why there are none: its OAuth error (whose
/// code and description are the server's text: the caller escapes them), or what the answer
/// is instead — kinds by [`Failure`]: a 5xx, a 429 or a body that is not JSON (a proxy's or a
/// login page) is [`Failure::NotNow`].
pub(crate) fn read_tokens(issuer: &str, answer: &Answer, dpop: bool) -> Result<Tokens, Failure> {
    let status = answer.status;
    let busy = status >= 500 || status == 429;
    if answer.body.is_none() {
        return Err(Failure::NotNow(format!(
            "the token endpoint answered HTTP {status} with {}, not JSON (is a login page or a \
             proxy in the way?)",
            answer.described()
        )));
    }
    if let Some(error) = answer.text("error") {
        let description: String = answer
            .text("error_description")
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        let reason = format!("the token endpoint answered HTTP {status} {error}: {description}");
        return Err(if busy || NOT_NOW.contains(&error) {
            Failure::NotNow(reason)
        } else {
            Failure::Refused {
                reason,
                grant_over: GRANT_OVER.contains(&error),
            }
        });
    }
    if !(200..300).contains(&status) {
        let reason = format!("the token endpoint answered HTTP {status}");
        return Err(if busy {
            Failure::NotNow(reason)
        } else {
            Failure::Needed(reason)
        });
    }
    let access = answer
        .text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint's answer has no access_token")?;
    let bound = match answer.text("token_type") {
        Some(kind) if kind.eq_ignore_ascii_case("dpop") && dpop => true,
        Some(kind) if !kind.eq_ignore_ascii_case("bearer") => {
            return Err(format!("token type `{kind}` is not supported").into());
        }
        _ => false,
    };
    let mut tokens = Tokens::new(issuer, access);
    if let Some(why) = tokens.unsendable() {
        return Err(Failure::Needed(format!(
            "the token endpoint issued an access token that cannot be sent: {why}"
        )));
    }
    tokens.dpop = bound;
    tokens.refresh_token = answer.text("refresh_token").map(Secret::new);
    tokens.scope = answer.text("scope").map(Into::into);
    tokens.expires_at = answer
        .body
        .as_ref()
        .and_then(|b| b.get("expires_in"))
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

    fn answer(status: u16, body: serde_json::Value) -> Answer {
        Answer {
            status,
            body: Some(body),
            content_type: Some("application/json".into()),
            dpop_nonce: None,
        }
    }

    #[test]
    fn token_answers() {
        let ok = answer(
            200,
            serde_json::json!({"access_token": "A", "token_type": "bearer", "expires_in": 60, "refresh_token": "R"}),
        );
        let t = read_tokens("iss", &ok, false).unwrap();
        assert_eq!(t.access_token.expose(), "A");
        assert!(t.expires_at.is_some());
        assert_eq!(t.refresh_token.unwrap().expose(), "R");
        let err = answer(
            400,
            serde_json::json!({"error": "invalid_grant", "error_description": "expired"}),
        );
        let refused = read_tokens("iss", &err, false).unwrap_err();
        assert!(refused.reason().contains("invalid_grant"));
        assert!(refused.ends_grant());
        // Some servers say errors with 200.
        let err200 = answer(200, serde_json::json!({"error": "invalid_client"}));
        assert!(read_tokens("iss", &err200, false).unwrap_err().ends_grant());
        let huge = answer(
            200,
            serde_json::json!({"access_token": "A", "expires_in": u64::MAX}),
        );
        assert!(read_tokens("iss", &huge, false).is_ok());
        // A DPoP-bound token only when we asked for one.
        let dpop = answer(
            200,
            serde_json::json!({"access_token": "A", "token_type": "DPoP"}),
        );
        assert!(read_tokens("iss", &dpop, true).unwrap().dpop);
        assert!(read_tokens("iss", &dpop, false).is_err());
    }

    /// Issue 22, defect 5: only an OAuth error that condemns the grant ends it; a server
    /// error, a 429, `temporarily_unavailable` or a body that is not JSON is "not now".
    #[test]
    fn what_a_failed_token_request_means() {
        let not_now = [
            answer(500, serde_json::json!({})),
            answer(503, serde_json::json!({"error": "invalid_grant"})),
            answer(429, serde_json::json!({})),
            answer(400, serde_json::json!({"error": "temporarily_unavailable"})),
            Answer {
                status: 500,
                body: None,
                content_type: None,
                dpop_nonce: None,
            },
        ];
        for a in &not_now {
            let f = read_tokens("iss", a, false).unwrap_err();
            assert!(matches!(f, Failure::NotNow(_)), "{f:?}");
        }
        for code in ["invalid_grant", "invalid_client", "unauthorized_client"] {
            let f = read_tokens(
                "iss",
                &answer(400, serde_json::json!({"error": code})),
                false,
            )
            .unwrap_err();
            assert!(f.ends_grant(), "{code}");
        }
        let f = read_tokens(
            "iss",
            &answer(400, serde_json::json!({"error": "invalid_scope"})),
            false,
        )
        .unwrap_err();
        assert!(
            matches!(
                f,
                Failure::Refused {
                    grant_over: false,
                    ..
                }
            ),
            "{f:?}"
        );
    }

    /// Issue 22, defect 6: an HTML page says so, not "no access_token"; a token that cannot
    /// be sent is refused when it is issued, naming why.
    #[test]
    fn an_html_page_or_an_unsendable_token_says_what_it_is() {
        let html = Answer {
            status: 200,
            body: None,
            content_type: Some("text/html; charset=utf-8".into()),
            dpop_nonce: None,
        };
        let f = read_tokens("iss", &html, false).unwrap_err();
        assert!(matches!(f, Failure::NotNow(_)), "{f:?}");
        assert!(
            f.reason()
                .contains("answered HTTP 200 with an HTML page, not JSON"),
            "{f:?}"
        );
        for (token, why) in [
            ("a\r\nX-Injected: 1", "line break"),
            ("a\u{0}b", "control character"),
            ("a b", "space"),
            ("tök", "outside visible ASCII"),
        ] {
            let body = serde_json::json!({ "access_token": token });
            let f = read_tokens("iss", &answer(200, body), false).unwrap_err();
            assert!(f.reason().contains("cannot be sent"), "{f:?}");
            assert!(f.reason().contains(why), "{token}: {f:?}");
            assert!(!f.reason().contains("Injected"), "never the token itself");
        }
    }
}
