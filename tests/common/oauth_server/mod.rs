//! An in-tree OAuth authorization server and the MCP server it protects, on one actix-web
//! listener (`127.0.0.1`, one worker), for the authorization tests.
//!
//! The authorization server publishes RFC 8414 metadata at the root (issuer = the origin),
//! auto-approves `/authorize` (a `302` to the redirect URI with `code`, `state` and `iss`),
//! registers clients (`/register`), and issues tokens (`/token`) for the authorization code
//! (PKCE S256 checked), refresh token and client credentials (Basic) grants. Every secret it
//! hands out contains [`MARK`], so that tests can look for leaks.
//!
//! The MCP server (`/mcp`, the session era, JSON answers) wants a live bearer token on every
//! request (`401` with `resource_metadata` and `scope="mcp:basic"` otherwise); `tools/call`
//! of `admin` needs the scope `mcp:admin` (`403 insufficient_scope` otherwise) and of `never`
//! a scope the authorization server never grants. Sessions are forgotten on a restart
//! ([`OAuthServer::restart`]); tokens are not (they live in the authorization server).
//! With [`OAuthServer::dpop`] on, DPoP-bound tokens need a proof for them and the server's
//! nonce. The authorization server's endpoints are in `endpoints`.
//!
//! Switches for the hostile and the unlucky: the issuer the metadata publishes
//! ([`OAuthServer::publish_issuer`], e.g. a plain-HTTP one, or another server's), the
//! challenge's `resource_metadata` ([`OAuthServer::challenge_metadata`]), a token endpoint
//! that fails ([`OAuthServer::token_fault`]) or is slow ([`OAuthServer::token_delay`]) and access tokens no header can carry
//! ([`OAuthServer::access_token_suffix`]).
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

mod endpoints;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Digest as _;

/// Contained in every secret this server issues or is configured with.
pub const MARK: &str = "SECRET";
pub const CLIENT_ID: &str = "svc";
pub const CLIENT_SECRET: &str = "cc-SECRET-7";
/// The workload assertion the JWT-bearer grant accepts.
pub const WORKLOAD_JWT: &str = "wif-SECRET-assertion";
/// The ID token the identity provider (`/idp/token`) exchanges for an ID-JAG.
pub const ID_TOKEN: &str = "idtoken-SECRET-user";

/// What the server saw, for tests to count.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub authorize: usize,
    pub register: usize,
    pub token_code: usize,
    pub token_refresh: usize,
    pub token_client_credentials: usize,
    pub token_jwt_bearer: usize,
    pub idp_exchanges: usize,
    /// MCP requests that presented a DPoP-bound token with a proof for it.
    pub dpop_proofs: usize,
    /// Token requests that carried a DPoP proof.
    pub dpop_token_proofs: usize,
    pub mcp_posts: usize,
    pub mcp_401: usize,
    /// GET streams opened (with a valid token), and GETs refused `401`.
    pub gets: usize,
    pub get_401: usize,
    pub mcp_403: usize,
    pub initialize: usize,
    pub prm: usize,
    /// Authorization server metadata documents served.
    pub as_metadata: usize,
    /// Token requests of any kind, refused or not.
    pub token_requests: usize,
    /// Token requests answered with a fault ([`OAuthServer::token_fault`]).
    pub token_faults: usize,
    /// The `scope` of each authorization request.
    pub authorize_scopes: Vec<String>,
}

#[derive(Default)]
struct State {
    counts: Counts,
    next: u64,
    /// access token -> granted scopes
    access: HashMap<String, HashSet<String>>,
    /// refresh token -> granted scopes
    refresh: HashMap<String, HashSet<String>>,
    /// code -> (code_challenge, scopes)
    codes: HashMap<String, (String, HashSet<String>)>,
    sessions: HashSet<String>,
    fail_refresh: bool,
    expires_in: Option<u64>,
    refuse_all: bool,
    /// Serve `GET /mcp`: one log notification per stream, which then ends.
    get_stream: bool,
    id_jags: HashSet<String>,
    /// DPoP: advertised, tokens bound when the token request has a proof, and the MCP
    /// server's nonce.
    dpop: bool,
    dpop_bound: HashSet<String>,
    /// The issuer published instead of the origin.
    issuer: Option<String>,
    /// The challenge's `resource_metadata` instead of this server's own.
    challenge_metadata: Option<String>,
    /// Token requests of this grant type answered with this fault.
    token_fault: Option<(String, TokenFault)>,
    /// How long the token endpoint takes to answer.
    token_delay: Option<std::time::Duration>,
    /// Appended to every access token issued.
    access_token_suffix: String,
    /// The resources of other origins tokens are issued for ([`OAuthServer::protect`]).
    other_resources: HashSet<String>,
}

/// How the token endpoint fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFault {
    /// HTTP 500 with an empty body.
    ServerError,
    /// HTTP 200 with a login page.
    Html,
}

#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    origin: Arc<Mutex<String>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn origin(&self) -> String {
        self.origin.lock().unwrap().clone()
    }
    /// The issuer the metadata names: the origin, unless another is published.
    fn issuer(&self) -> String {
        self.lock().issuer.clone().unwrap_or_else(|| self.origin())
    }
}

pub struct OAuthServer {
    port: u16,
    handle: ServerHandle,
    shared: Shared,
}

impl OAuthServer {
    pub async fn start() -> OAuthServer {
        let shared = Shared {
            state: Arc::default(),
            origin: Arc::default(),
        };
        Self::listen(0, shared).await
    }

    async fn listen(port: u16, shared: Shared) -> OAuthServer {
        let data = web::Data::new(shared.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route(
                    "/.well-known/oauth-protected-resource/mcp",
                    web::get().to(prm),
                )
                .route(
                    "/.well-known/oauth-authorization-server",
                    web::get().to(as_metadata),
                )
                .route("/authorize", web::get().to(endpoints::authorize))
                .route("/token", web::post().to(endpoints::token))
                .route("/register", web::post().to(endpoints::register))
                .route("/idp/token", web::post().to(endpoints::idp_token))
                .route("/mcp", web::post().to(mcp))
                .route("/mcp", web::get().to(mcp_get))
                // No DELETE (and no GET stream unless switched on): 405, as the spec allows.
                .route("/mcp", web::route().to(HttpResponse::MethodNotAllowed))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0)
        .bind(("127.0.0.1", port))
        .expect("bind 127.0.0.1");
        let port = server.addrs()[0].port();
        *shared.origin.lock().unwrap() = format!("http://127.0.0.1:{port}");
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        OAuthServer {
            port,
            handle,
            shared,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn issuer(&self) -> String {
        self.shared.origin()
    }

    pub fn counts(&self) -> Counts {
        self.shared.lock().counts.clone()
    }

    /// Every access token issued so far stops working (as if it expired).
    /// Serves GET streams: each delivers one notification and ends, so the client keeps
    /// re-opening it, with its token.
    pub fn get_stream(&self, on: bool) {
        self.shared.lock().get_stream = on;
    }

    pub fn expire_access_tokens(&self) {
        self.shared.lock().access.clear();
    }

    /// Issues tokens for `resource` too (an MCP server of another origin, RFC 8707), and gives
    /// that server the check of a token: whether it is one of this server's live access tokens
    /// (`http_server::Bearer`). DPoP-bound tokens count as live too; checking their proofs is
    /// this server's own `/mcp`'s business.
    pub fn protect(&self, resource: &str) -> std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync> {
        self.shared
            .lock()
            .other_resources
            .insert(resource.to_owned());
        let shared = self.shared.clone();
        std::sync::Arc::new(move |token: &str| shared.lock().access.contains_key(token))
    }

    /// Refresh requests fail with `invalid_grant`.
    pub fn fail_refresh(&self, on: bool) {
        self.shared.lock().fail_refresh = on;
    }

    /// The MCP server refuses every token (a misconfigured resource server).
    pub fn refuse_all_tokens(&self, on: bool) {
        self.shared.lock().refuse_all = on;
    }

    /// Advertises DPoP and binds tokens to the proof's key; the MCP server asks for a nonce
    /// once and then wants it in every proof.
    pub fn dpop(&self, on: bool) {
        self.shared.lock().dpop = on;
    }

    /// `expires_in` of the tokens issued from now on.
    pub fn expires_in(&self, seconds: Option<u64>) {
        self.shared.lock().expires_in = seconds;
    }

    /// The protected resource metadata names `issuer` as its authorization server, and this
    /// server's authorization server metadata claims to be it (its endpoints stay here).
    pub fn publish_issuer(&self, issuer: &str) {
        self.shared.lock().issuer = Some(issuer.to_owned());
    }

    /// The `401` challenges point at `url` for the protected resource metadata.
    pub fn challenge_metadata(&self, url: &str) {
        self.shared.lock().challenge_metadata = Some(url.to_owned());
    }

    /// The token endpoint answers `delay` late (a slow authorization server; requests that
    /// come meanwhile overlap).
    pub fn token_delay(&self, delay: Option<std::time::Duration>) {
        self.shared.lock().token_delay = delay;
    }

    /// Token requests of `grant_type` are answered with `fault` (none: as usual).
    pub fn token_fault(&self, grant_type: &str, fault: Option<TokenFault>) {
        self.shared.lock().token_fault = fault.map(|f| (grant_type.to_owned(), f));
    }

    /// Every access token issued from now on ends with `suffix`.
    pub fn access_token_suffix(&self, suffix: &str) {
        self.shared.lock().access_token_suffix = suffix.to_owned();
    }

    /// Stops and starts again on the same port: sessions are gone, tokens stay valid.
    pub async fn restart(self) -> OAuthServer {
        self.handle.stop(false).await;
        self.shared.lock().sessions.clear();
        Self::listen(self.port, self.shared.clone()).await
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

async fn prm(shared: web::Data<Shared>) -> HttpResponse {
    shared.lock().counts.prm += 1;
    let origin = shared.origin();
    HttpResponse::Ok().json(json!({
        "resource": format!("{origin}/mcp"),
        "authorization_servers": [shared.issuer()],
        "scopes_supported": ["mcp:basic"],
    }))
}

async fn as_metadata(shared: web::Data<Shared>) -> HttpResponse {
    let (o, issuer) = (shared.origin(), shared.issuer());
    shared.lock().counts.as_metadata += 1;
    let dpop = shared.lock().dpop;
    let mut metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{o}/authorize"),
        "token_endpoint": format!("{o}/token"),
        "registration_endpoint": format!("{o}/register"),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "scopes_supported": ["mcp:basic", "mcp:admin", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    });
    if dpop {
        metadata["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    HttpResponse::Ok().json(metadata)
}

/// The claims of a DPoP proof (unverified: the tests check what the client put in it).
fn proof_claims(req: &HttpRequest) -> Option<Value> {
    let proof = req.headers().get("dpop")?.to_str().ok()?;
    let claims = proof.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

const RS_NONCE: &str = "rs-nonce-1";

fn challenge(metadata: &str, status: u16, error: &str, scope: &str) -> HttpResponse {
    let value =
        format!(r#"Bearer error="{error}", scope="{scope}", resource_metadata="{metadata}""#);
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .insert_header(("www-authenticate", value))
        .finish()
}

/// `GET /mcp` (when switched on): a live bearer token, then a stream of one notification.
/// Where the challenges say the protected resource metadata is.
fn metadata_url(shared: &Shared) -> String {
    let origin = shared.origin();
    shared
        .lock()
        .challenge_metadata
        .clone()
        .unwrap_or_else(|| format!("{origin}/.well-known/oauth-protected-resource/mcp"))
}

async fn mcp_get(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    let origin = metadata_url(&shared);
    let mut st = shared.lock();
    if !st.get_stream {
        return HttpResponse::MethodNotAllowed().finish();
    }
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if token.is_none_or(|t| !st.access.contains_key(t)) {
        st.counts.get_401 += 1;
        return challenge(&origin, 401, "invalid_token", "mcp:basic");
    }
    st.counts.gets += 1;
    let event = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "stream"}});
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .body(format!("event: message\ndata: {event}\n\n"))
}

async fn mcp(shared: web::Data<Shared>, req: HttpRequest, body: web::Json<Value>) -> HttpResponse {
    let origin = metadata_url(&shared);
    let mut st = shared.lock();
    st.counts.mcp_posts += 1;
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let scheme = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(' ').next())
        .unwrap_or("");
    let token = token.or_else(|| {
        req.headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("DPoP "))
    });
    if let Some(t) = token.filter(|t| st.dpop_bound.contains(*t)) {
        let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(t.as_bytes()).as_slice());
        let claims = proof_claims(&req);
        let proof_ok = scheme == "DPoP"
            && claims
                .as_ref()
                .is_some_and(|c| c["ath"] == ath.as_str() && c["htm"] == "POST");
        if !proof_ok {
            st.counts.mcp_401 += 1;
            return challenge(&origin, 401, "invalid_token", "mcp:basic");
        }
        if claims.as_ref().is_some_and(|c| c["nonce"] != RS_NONCE) {
            st.counts.mcp_401 += 1;
            return HttpResponse::Unauthorized()
                .insert_header(("www-authenticate", r#"DPoP error="use_dpop_nonce""#))
                .insert_header(("dpop-nonce", RS_NONCE))
                .finish();
        }
        st.counts.dpop_proofs += 1;
    }
    let valid = token.and_then(|t| st.access.get(t)).cloned();
    let Some(granted) = valid.filter(|_| !st.refuse_all) else {
        st.counts.mcp_401 += 1;
        return challenge(&origin, 401, "invalid_token", "mcp:basic");
    };
    let method = body["method"].as_str().unwrap_or("").to_owned();
    let id = body.get("id").cloned();
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if method == "initialize" {
        st.counts.initialize += 1;
        st.next += 1;
        let session = format!("s{}", st.next);
        st.sessions.insert(session.clone());
        return HttpResponse::Ok()
            .insert_header(("mcp-session-id", session))
            .json(json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oauth-test", "version": "1"},
                }
            }));
    }
    if !session.is_some_and(|s| st.sessions.contains(&s)) {
        return HttpResponse::NotFound().finish();
    }
    let Some(id) = id else {
        return HttpResponse::Accepted().finish();
    };
    let result = match method.as_str() {
        "tools/list" => {
            let tools: Vec<Value> = ["echo", "admin", "never"]
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
            json!({ "tools": tools })
        }
        "tools/call" => {
            let needs = match body["params"]["name"].as_str() {
                Some("admin") => Some("mcp:admin"),
                Some("never") => Some("mcp:never"),
                _ => None,
            };
            if let Some(needs) = needs {
                if !granted.contains(needs) {
                    st.counts.mcp_403 += 1;
                    return challenge(&origin, 403, "insufficient_scope", needs);
                }
            }
            json!({"content": [{"type": "text", "text": "ok"}]})
        }
        "ping" => json!({}),
        _ => return HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})),
    };
    HttpResponse::Ok().json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
