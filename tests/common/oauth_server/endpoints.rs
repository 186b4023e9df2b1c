//! The authorization server's endpoints: `/authorize` (auto-approving), `/register`, `/token`
//! (authorization code with PKCE, refresh, client credentials, JWT bearer; DPoP-bound tokens
//! when the request has a proof) and the enterprise identity provider's `/idp/token`.

use super::*;
fn scopes(s: Option<&str>) -> HashSet<String> {
    s.unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty() && *s != "mcp:never")
        .map(Into::into)
        .collect()
}

pub(super) async fn authorize(
    shared: web::Data<Shared>,
    q: web::Query<HashMap<String, String>>,
) -> HttpResponse {
    let issuer = shared.issuer();
    let mut st = shared.lock();
    st.counts.authorize += 1;
    st.counts
        .authorize_scopes
        .push(q.get("scope").cloned().unwrap_or_default());
    if q.get("code_challenge_method").map(String::as_str) != Some("S256")
        || q.get("resource").is_none()
    {
        return HttpResponse::BadRequest().finish();
    }
    st.next += 1;
    let code = format!("code-{MARK}-{}", st.next);
    let challenge = q.get("code_challenge").cloned().unwrap_or_default();
    st.codes.insert(
        code.clone(),
        (challenge, scopes(q.get("scope").map(String::as_str))),
    );
    let mut to = url::Url::parse(&q["redirect_uri"]).expect("a redirect uri");
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", q.get("state").map_or("", String::as_str))
        .append_pair("iss", &issuer);
    HttpResponse::Found()
        .insert_header(("location", to.as_str()))
        .finish()
}

pub(super) async fn register(shared: web::Data<Shared>, body: web::Json<Value>) -> HttpResponse {
    shared.lock().counts.register += 1;
    assert_eq!(body["application_type"], "native");
    HttpResponse::Created()
        .json(json!({"client_id": "dyn-client", "token_endpoint_auth_method": "none"}))
}

fn issue(st: &mut State, granted: HashSet<String>, with_refresh: bool) -> Value {
    st.next += 1;
    let access = format!("access-{MARK}-{}{}", st.next, st.access_token_suffix);
    st.access.insert(access.clone(), granted.clone());
    let bound = st.dpop && st.counts.dpop_token_proofs > 0;
    if bound {
        st.dpop_bound.insert(access.clone());
    }
    let mut answer = json!({
        "access_token": access,
        "token_type": if bound { "DPoP" } else { "Bearer" },
        "scope": granted.iter().cloned().collect::<Vec<_>>().join(" "),
    });
    if let Some(s) = st.expires_in {
        answer["expires_in"] = json!(s);
    }
    if with_refresh {
        let refresh = format!("refresh-{MARK}-{}", st.next);
        st.refresh.insert(refresh.clone(), granted);
        answer["refresh_token"] = json!(refresh);
    }
    answer
}

fn oauth_error(code: &str) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({"error": code, "error_description": "refused"}))
}

pub(super) async fn token(
    shared: web::Data<Shared>,
    req: HttpRequest,
    form: web::Form<HashMap<String, String>>,
) -> HttpResponse {
    let delay = shared.lock().token_delay;
    if let Some(delay) = delay {
        actix_web::rt::time::sleep(delay).await;
    }
    let mut st = shared.lock();
    st.counts.token_requests += 1;
    if st.dpop {
        let proof = proof_claims(&req);
        let origin = shared.origin();
        let ok = proof.as_ref().is_some_and(|c| {
            c["htm"] == "POST" && c["htu"] == format!("{origin}/token") && c.get("ath").is_none()
        });
        if ok {
            st.counts.dpop_token_proofs += 1;
        }
    }
    let resource = form.get("resource").map(String::as_str);
    let own = format!("{}/mcp", shared.origin());
    if resource.is_none_or(|r| r != own && !st.other_resources.contains(r)) {
        return oauth_error("invalid_target");
    }
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    if let Some((_, fault)) = st.token_fault.clone().filter(|(g, _)| *g == grant) {
        if grant == "refresh_token" {
            st.counts.token_refresh += 1;
        }
        st.counts.token_faults += 1;
        return match fault {
            TokenFault::ServerError => HttpResponse::InternalServerError().finish(),
            TokenFault::Html => HttpResponse::Ok()
                .content_type("text/html; charset=utf-8")
                .body("<html><body>Please sign in to the proxy</body></html>"),
        };
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            st.counts.token_code += 1;
            let code = form.get("code").cloned().unwrap_or_default();
            let Some((challenge, granted)) = st.codes.remove(&code) else {
                return oauth_error("invalid_grant");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()).as_slice());
            if computed != challenge {
                return oauth_error("invalid_grant");
            }
            HttpResponse::Ok().json(issue(&mut st, granted, true))
        }
        Some("refresh_token") => {
            st.counts.token_refresh += 1;
            let old = form.get("refresh_token").cloned().unwrap_or_default();
            if st.fail_refresh {
                return oauth_error("invalid_grant");
            }
            let Some(granted) = st.refresh.remove(&old) else {
                return oauth_error("invalid_grant");
            };
            HttpResponse::Ok().json(issue(&mut st, granted, true))
        }
        Some("client_credentials") => {
            st.counts.token_client_credentials += 1;
            let expected = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD
                    .encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
            );
            let basic = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok());
            if basic != Some(expected.as_str()) {
                return HttpResponse::Unauthorized().json(json!({"error": "invalid_client"}));
            }
            HttpResponse::Ok().json(issue(
                &mut st,
                scopes(form.get("scope").map(String::as_str)),
                false,
            ))
        }
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            st.counts.token_jwt_bearer += 1;
            let assertion = form.get("assertion").map(String::as_str);
            if assertion != Some(WORKLOAD_JWT) && assertion.is_none_or(|a| !st.id_jags.contains(a))
            {
                return oauth_error("invalid_grant");
            }
            HttpResponse::Ok().json(issue(
                &mut st,
                scopes(form.get("scope").map(String::as_str)),
                false,
            ))
        }
        _ => oauth_error("unsupported_grant_type"),
    }
}

/// The enterprise identity provider's token exchange (RFC 8693): an ID token for an ID-JAG
/// whose audience is the authorization server and whose resource is the MCP server.
pub(super) async fn idp_token(
    shared: web::Data<Shared>,
    form: web::Form<HashMap<String, String>>,
) -> HttpResponse {
    let origin = shared.origin();
    let mut st = shared.lock();
    st.counts.idp_exchanges += 1;
    let f = |k: &str| form.get(k).map(String::as_str);
    let ok = f("grant_type") == Some("urn:ietf:params:oauth:grant-type:token-exchange")
        && f("requested_token_type") == Some("urn:ietf:params:oauth:token-type:id-jag")
        && f("subject_token_type") == Some("urn:ietf:params:oauth:token-type:id_token")
        && f("subject_token") == Some(ID_TOKEN)
        && f("audience") == Some(origin.as_str())
        && f("resource") == Some(format!("{origin}/mcp").as_str());
    if !ok {
        return oauth_error("invalid_grant");
    }
    st.next += 1;
    let id_jag = format!("idjag-{MARK}-{}", st.next);
    st.id_jags.insert(id_jag.clone());
    HttpResponse::Ok().json(json!({
        "access_token": id_jag,
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
    }))
}
