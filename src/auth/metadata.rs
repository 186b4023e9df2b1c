//! The documents discovery reads and where it looks for them: Protected Resource Metadata
//! (RFC 9728) and authorization server metadata (RFC 8414, OpenID Connect Discovery), with
//! the checks MCP requires before either is used.
//!
//! Pure: URL candidates in the order the MCP specification gives (2025-11-25 and 2026-07-28,
//! "Authorization Server Discovery"), the RFC 9728 §3.3 binding of a metadata's `resource` to
//! the server, the RFC 8414 §3.3 `issuer` echo with every endpoint checked by the `trust`
//! rules, and the PKCE gate. Issuers and resources stay the raw strings they were published
//! as: `url::Url` would turn `http://host:1` into `http://host:1/`, which is another string.

use serde::Deserialize;
use url::Url;

use super::trust::Trust;

/// RFC 9728 Protected Resource Metadata, the parts MCP uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Issuers of the authorization servers that protect it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization server metadata (or an OpenID provider configuration), the parts
/// MCP uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier; must equal the one the document was looked up for.
    pub issuer: String,
    /// Where authorization requests go.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where token requests go.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// RFC 7591 Dynamic Client Registration.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes it knows (`offline_access` is requested only when listed here).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; absent means no PKCE, and then we do not go on.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449: the DPoP proof algorithms it accepts.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Where the Protected Resource Metadata of the MCP server at `server` may be, in order:
/// path-aware, then at the root (RFC 9728 §3.1). The query is not carried over.
pub fn resource_metadata_urls(server: &Url) -> Vec<String> {
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::with_capacity(2);
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// Where the metadata of the authorization server with identifier `issuer` may be, in the
/// specification's order: RFC 8414 path insertion, OIDC path insertion, OIDC path appending
/// (for an issuer with a path), or the two root documents. Nothing else: a root document for
/// an issuer with a path belongs to another issuer.
pub fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let url = Url::parse(issuer).map_err(|e| format!("the issuer is not a URL: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("the issuer has a query or fragment (RFC 8414 §2)".into());
    }
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// RFC 9728 §3.3: the metadata's `resource` names the server we asked for. Same origin, and
/// its path equal to the server URL's or a parent of it at a segment boundary (metadata at the
/// origin names the origin; `/api` covers `/api/mcp` but not `/api2`); no fragment.
pub fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.fragment().is_some() || resource.origin() != server.origin() {
        return false;
    }
    let want = resource.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    want.is_empty()
        || have == want
        || (have.starts_with(want) && have.as_bytes().get(want.len()) == Some(&b'/'))
}

/// Checks a resource metadata document: its `resource` is this server, and it names at least
/// one authorization server.
pub fn check_resource(server: &Url, metadata: &ResourceMetadata) -> Result<(), String> {
    if !resource_matches(server, &metadata.resource) {
        return Err(format!(
            "the protected resource metadata is for `{}`, not for this server (RFC 9728 §3.3)",
            metadata.resource
        ));
    }
    if metadata.authorization_servers.is_empty() {
        return Err("the protected resource metadata names no authorization server".into());
    }
    Ok(())
}

/// Checks an authorization server's metadata: its `issuer` is exactly the one we looked it up
/// for (RFC 8414 §3.3: no normalisation), and every endpoint it names is one `trust` accepts.
pub fn check_server(issuer: &str, metadata: &ServerMetadata, trust: &Trust) -> Result<(), String> {
    if metadata.issuer != issuer {
        return Err(format!(
            "the authorization server metadata names issuer `{}`, not `{issuer}` (RFC 8414 §3.3)",
            metadata.issuer
        ));
    }
    for (what, url) in [
        (
            "the authorization_endpoint",
            &metadata.authorization_endpoint,
        ),
        ("the token_endpoint", &metadata.token_endpoint),
        ("the registration_endpoint", &metadata.registration_endpoint),
    ] {
        if let Some(url) = url {
            trust.check(what, url)?;
        }
    }
    Ok(())
}

/// PKCE S256 must be advertised; we do not start an authorization code flow otherwise.
pub fn check_pkce(metadata: &ServerMetadata) -> Result<(), String> {
    match &metadata.code_challenge_methods_supported {
        Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
        Some(_) => Err("the authorization server does not support PKCE with S256".into()),
        None => Err(
            "the authorization server metadata has no code_challenge_methods_supported: PKCE \
             support cannot be verified, so authorization does not go on"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn resource_metadata_is_looked_for_path_aware_then_at_the_root() {
        assert_eq!(
            resource_metadata_urls(&url("https://h.example/public/mcp/?k=v")),
            [
                "https://h.example/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls(&url("http://localhost:8080/")),
            ["http://localhost:8080/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_in_the_specs_order() {
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1/").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("http://localhost:9").unwrap(),
            [
                "http://localhost:9/.well-known/oauth-authorization-server",
                "http://localhost:9/.well-known/openid-configuration"
            ]
        );
        assert!(server_metadata_urls("not a url").is_err());
        assert!(server_metadata_urls("https://a.example/?x=1").is_err());
    }

    #[test]
    fn resource_binding_by_origin_and_path_prefix() {
        let server = url("http://localhost:3000/api/mcp");
        for ok in [
            "http://localhost:3000/api/mcp",
            "http://localhost:3000/api/mcp/",
            "http://localhost:3000/api",
            "http://localhost:3000",
            "http://localhost:3000/",
            "HTTP://LOCALHOST:3000/api",
        ] {
            assert!(resource_matches(&server, ok), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/api/mcp",
            "https://localhost:3000/api/mcp",
            "http://localhost:3000/ap",
            "http://localhost:3000/api/mcp/more",
            "http://localhost:3000/api/mcp#frag",
            "localhost:3000/api",
        ] {
            assert!(!resource_matches(&server, bad), "{bad}");
        }
    }

    #[test]
    fn issuer_must_be_echoed_exactly_and_endpoints_secure() {
        let md = |issuer: &str, token: &str| ServerMetadata {
            issuer: issuer.into(),
            authorization_endpoint: None,
            token_endpoint: Some(token.into()),
            registration_endpoint: None,
            scopes_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: None,
            authorization_response_iss_parameter_supported: None,
            dpop_signing_alg_values_supported: None,
        };
        let local = Trust::for_server(&url("http://localhost:3000/mcp"));
        let remote = Trust::for_server(&url("https://mcp.example.com/mcp"));
        assert!(check_server(
            "http://localhost:1",
            &md("http://localhost:1", "http://localhost:1/t"),
            &local
        )
        .is_ok());
        assert!(check_server(
            "http://localhost:1",
            &md("http://localhost:1/", "http://localhost:1/t"),
            &local
        )
        .is_err());
        assert!(check_server(
            "https://a.example",
            &md("https://attacker.example", "https://a.example/t"),
            &remote
        )
        .is_err());
        assert!(check_server(
            "https://a.example",
            &md("https://a.example", "http://a.example/t"),
            &remote
        )
        .is_err());
        assert!(check_server(
            "http://127.0.0.1:5",
            &md("http://127.0.0.1:5", "http://127.0.0.1:5/t"),
            &local
        )
        .is_ok());
        // A loopback endpoint is nearer than a remote server's own address.
        assert!(check_server(
            "https://a.example",
            &md("https://a.example", "https://127.0.0.1/t"),
            &remote
        )
        .is_err());
        let mut m = md("x", "https://x/t");
        assert!(check_pkce(&m).is_err());
        m.code_challenge_methods_supported = Some(vec!["plain".into()]);
        assert!(check_pkce(&m).is_err());
        m.code_challenge_methods_supported = Some(vec!["plain".into(), "S256".into()]);
        assert!(check_pkce(&m).is_ok());
    }
}
