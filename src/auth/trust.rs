//! Which URLs authorization trusts. Every URL discovery follows was chosen by someone else —
//! the challenge's `resource_metadata` by the MCP server, the issuer by its protected resource
//! metadata, the endpoints by the issuer's metadata — and each is checked here before anything
//! is fetched from it or sent to it:
//!
//! - **HTTPS**. Plain `http://` only to a loopback host (`localhost`, `127.0.0.0/8`, `::1`),
//!   and only when the MCP server is on loopback too: local development. Anywhere else a
//!   document fetched in cleartext can be rewritten on its way — to name a token endpoint of
//!   the attacker's, which the client secret is then posted to — so RFC 8414 §2, OAuth 2.1
//!   §1.5 and MCP's "Communication Security" want HTTPS.
//! - **No address nearer than the MCP server's own** (RFC 9728 §7.7, MCP's "Server-Side
//!   Request Forgery"): a server on a public address or name cannot point us at a private
//!   network (`10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7`) or at this machine;
//!   a server on a private address may name private addresses; one on loopback, anything.
//!   Link-local and unspecified addresses (cloud metadata services answer at
//!   `169.254.169.254`), broadcast and multicast: never.
//! - **The challenge's `resource_metadata`**, which describes the MCP server itself, over plain
//!   HTTP only at the server's own (loopback) origin.
//!
//! Addresses are judged as the URL writes them: the `url` crate reads every IPv4 notation
//! (octal, hexadecimal, short forms) into the address it means, and an IPv4-mapped IPv6
//! address is judged as the IPv4 one. A host *name* is not resolved here, so a public name
//! that resolves to a private address is not caught; an egress proxy is what stops that.
//!
//! Pure, and the one place these rules live: [`require_secure`] (the redirect URI, which the
//! user's browser follows) and [`is_loopback`] (the configuration's check that tokens never
//! travel in cleartext) are here too.

use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::config::redact_url;

/// How far from this machine an address is. Ordered: a server may name addresses at its own
/// distance or farther, never nearer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    /// This machine.
    Loopback,
    /// A private network: RFC 1918, the shared address space of RFC 6598, unique local IPv6.
    Private,
    /// Anything else: a public address, or any host name but `localhost`.
    Public,
}

/// The URLs one MCP server's authorization may use.
#[derive(Debug, Clone)]
pub(crate) struct Trust {
    server: Url,
    /// The MCP server's own distance; a server at an address never trusted (which validation
    /// refuses before this runs) is taken as public, the strictest.
    reach: Reach,
}

impl Trust {
    /// The rules for the MCP server at `server`.
    pub fn for_server(server: &Url) -> Trust {
        Trust {
            server: server.clone(),
            reach: reach(server).unwrap_or(Reach::Public),
        }
    }

    /// Checks `url` (`what` says what it is, for the error) before anything is fetched from it
    /// or sent to it; the error says why it is not trusted.
    pub fn check(&self, what: &str, url: &str) -> Result<(), String> {
        self.judge(url, false)
            .map_err(|why| format!("{what} `{}` is not trusted: {why}", redact_url(url)))
    }

    /// Checks the challenge's `resource_metadata` URL: as [`check`](Self::check), and over
    /// plain HTTP only at the MCP server's own origin.
    pub fn check_resource_metadata(&self, url: &str) -> Result<(), String> {
        self.judge(url, true).map_err(|why| {
            format!(
                "the challenge's resource_metadata `{}` is not trusted: {why}",
                redact_url(url)
            )
        })
    }

    fn judge(&self, raw: &str, own_origin_only: bool) -> Result<(), String> {
        let url = Url::parse(raw).map_err(|e| format!("it is not a URL ({e})"))?;
        let reach = reach(&url);
        match url.scheme() {
            "https" => {}
            "http" if reach != Ok(Reach::Loopback) => {
                return Err(
                    "plain HTTP is trusted on loopback only: a document or a credential \
                            sent in cleartext can be read and rewritten on its way (RFC 8414 \
                            §2, OAuth 2.1 §1.5)"
                        .into(),
                )
            }
            "http" if self.reach != Reach::Loopback => {
                return Err(
                    "plain HTTP to a loopback address is trusted only for an MCP server \
                            on loopback itself"
                        .into(),
                )
            }
            "http" if own_origin_only && url.origin() != self.server.origin() => {
                return Err("over plain HTTP, only the MCP server's own origin is trusted".into())
            }
            "http" => {}
            other => return Err(format!("the scheme `{other}` is not https")),
        }
        let reach = reach?;
        if reach < self.reach {
            let kind = match reach {
                Reach::Loopback => "a loopback address",
                _ => "a private network's address",
            };
            return Err(format!(
                "it is {kind}, nearer than the MCP server's own: a server may not point this \
                 client into a network it is not in (RFC 9728 §7.7)"
            ));
        }
        Ok(())
    }
}

/// How far `url`'s host is, or why it is never trusted.
fn reach(url: &Url) -> Result<Reach, String> {
    match url.host() {
        Some(Host::Domain(name)) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            Ok(if name.eq_ignore_ascii_case("localhost") {
                Reach::Loopback
            } else {
                Reach::Public
            })
        }
        Some(Host::Ipv4(ip)) => reach_v4(ip),
        Some(Host::Ipv6(ip)) => match ip.to_ipv4_mapped() {
            Some(ip) => reach_v4(ip),
            None => reach_v6(ip),
        },
        None => Err("it names no host".into()),
    }
}

fn reach_v4(ip: Ipv4Addr) -> Result<Reach, String> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || ip.is_link_local() || ip.is_broadcast() || ip.is_multicast() {
        return Err(never(&ip.to_string()));
    }
    Ok(if ip.is_loopback() {
        Reach::Loopback
    } else if ip.is_private() || (a == 100 && (b & 0xc0) == 64) {
        // 100.64.0.0/10: RFC 6598's shared address space (`Ipv4Addr::is_shared` is unstable).
        Reach::Private
    } else {
        Reach::Public
    })
}

fn reach_v6(ip: Ipv6Addr) -> Result<Reach, String> {
    if ip.is_unspecified() || ip.is_unicast_link_local() || ip.is_multicast() {
        return Err(never(&ip.to_string()));
    }
    Ok(if ip.is_loopback() {
        Reach::Loopback
    } else if ip.is_unique_local() {
        Reach::Private
    } else {
        Reach::Public
    })
}

fn never(ip: &str) -> String {
    format!(
        "{ip} is an unspecified, link-local (where cloud metadata services answer), broadcast \
         or multicast address"
    )
}

/// HTTPS, or plain HTTP to a loopback host: a redirect URI (where the user's browser goes;
/// OAuth 2.1 §1.5 allows loopback ones) and the token store's checks.
pub fn require_secure(url: &str) -> Result<(), String> {
    let parsed = Url::parse(url).map_err(|e| format!("`{}` is not a URL: {e}", redact_url(url)))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        _ => Err(format!(
            "`{}` is not HTTPS (plain HTTP only on loopback)",
            redact_url(url)
        )),
    }
}

/// Whether `url`'s host is this machine: `localhost`, `127.0.0.0/8`, `::1` (or an
/// IPv4-mapped loopback address).
pub(crate) fn is_loopback(url: &Url) -> bool {
    reach(url) == Ok(Reach::Loopback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(server: &str) -> Trust {
        Trust::for_server(&Url::parse(server).unwrap())
    }

    #[test]
    fn plain_http_only_on_loopback_and_only_for_a_loopback_server() {
        let local = trust("http://127.0.0.1:3000/mcp");
        for ok in [
            "http://127.0.0.1:4000",
            "http://localhost:4000/tenant",
            "http://[::1]:9/x",
            "http://127.1.2.3",
            "https://auth.example.com",
        ] {
            assert!(local.check("issuer", ok).is_ok(), "{ok}");
        }
        let e = local
            .check("issuer", "http://auth.example.com")
            .unwrap_err();
        assert!(e.contains("plain HTTP is trusted on loopback only"), "{e}");
        assert!(local.check("issuer", "http://10.0.0.1").is_err());
        assert!(local.check("issuer", "ftp://localhost/x").is_err());
        assert!(local.check("issuer", "not a url").is_err());

        let remote = trust("https://mcp.example.com/mcp");
        assert!(remote.check("issuer", "https://auth.example.com").is_ok());
        let e = remote.check("issuer", "http://localhost:4000").unwrap_err();
        assert!(e.contains("on loopback itself"), "{e}");
        assert!(remote.check("issuer", "http://auth.example.com").is_err());
    }

    #[test]
    fn no_address_nearer_than_the_servers_own() {
        let public = trust("https://mcp.example.com/mcp");
        for bad in [
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://[fd00::1]/",
            "https://127.0.0.1/",
            "https://localhost/",
            "https://[::1]/",
            // Other spellings of the same addresses.
            "https://0x7f.1/",
            "https://0177.0.0.1/",
            "https://2130706433/",
            "https://[::ffff:10.0.0.1]/",
            "https://[::ffff:127.0.0.1]/",
        ] {
            let e = public.check("issuer", bad).unwrap_err();
            assert!(e.contains("RFC 9728 §7.7"), "{bad}: {e}");
        }
        for never in [
            "https://169.254.169.254/latest/meta-data/",
            "http://169.254.169.254/",
            "https://0.0.0.0/",
            "https://[fe80::1]/",
            "https://255.255.255.255/",
            "https://[::]/",
        ] {
            assert!(public.check("issuer", never).is_err(), "{never}");
            assert!(
                trust("http://127.0.0.1/mcp").check("x", never).is_err(),
                "{never}"
            );
        }
        let private = trust("https://10.0.0.5/mcp");
        assert!(private.check("issuer", "https://10.0.0.6/").is_ok());
        assert!(private.check("issuer", "https://auth.example.com/").is_ok());
        assert!(private.check("issuer", "https://127.0.0.1/").is_err());
        let local = trust("http://localhost:3000/mcp");
        assert!(local.check("issuer", "https://192.168.1.1/").is_ok());
    }

    #[test]
    fn resource_metadata_over_http_only_at_the_servers_own_origin() {
        let local = trust("http://127.0.0.1:3000/mcp");
        assert!(local
            .check_resource_metadata("http://127.0.0.1:3000/.well-known/oauth-protected-resource")
            .is_ok());
        for bad in [
            "http://127.0.0.1:6379/",
            "http://localhost:3000/.well-known/oauth-protected-resource",
        ] {
            let e = local.check_resource_metadata(bad).unwrap_err();
            assert!(e.contains("own origin"), "{bad}: {e}");
        }
        assert!(local
            .check_resource_metadata("https://prm.example.com/x")
            .is_ok());
        let remote = trust("https://mcp.example.com/mcp");
        assert!(remote
            .check_resource_metadata("https://mcp.example.com/.well-known/x")
            .is_ok());
        assert!(remote
            .check_resource_metadata("http://mcp.example.com/.well-known/x")
            .is_err());
        assert!(remote
            .check_resource_metadata("https://169.254.169.254/latest/meta-data/")
            .is_err());
    }

    #[test]
    fn refusals_show_no_credentials_of_the_url() {
        let e = trust("https://mcp.example.com/mcp")
            .check("issuer", "http://user:s3cret@auth.example.com/?key=s3cret")
            .unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn secure_means_https_or_loopback() {
        assert!(require_secure("https://app.example.com/cb").is_ok());
        assert!(require_secure("http://localhost:3000/cb").is_ok());
        assert!(require_secure("http://127.0.0.1:9/cb").is_ok());
        assert!(require_secure("http://app.example.com/cb").is_err());
        assert!(is_loopback(
            &Url::parse("http://[::ffff:127.0.0.1]/").unwrap()
        ));
        assert!(!is_loopback(&Url::parse("http://0.0.0.0/").unwrap()));
    }
}
