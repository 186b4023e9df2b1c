//! Every check of a configuration that can be made before anything runs, in one place, so that
//! the `mcpServers` loader, the supervisor (at start and on `AddServer`) and a `ServerActor`
//! started on its own reject the same things with the same words: [`ServerConfig::validate`]
//! and [`ServerConfig::validate_with`] (a server's own configuration and the settings in force
//! for it), and [`Settings::validate`] (settings on their own).
//!
//! A setting is checked where its value would leave a server unusable or make us hammer it:
//! zero limits, zero timeouts, a backoff without a pause or with its cap below its start, a
//! first-reconnect spread longer than any later wait. The error names the field and whether
//! the value is the server's own (an override) or a global setting.

use std::time::Duration;

#[cfg(feature = "http")]
use super::transport::redact_url;
use super::transport::{HttpConfig, Transport};
use super::{ServerConfig, Settings};
use crate::error::Error;
use crate::policy::backoff::Backoff;

impl ServerConfig {
    /// Checks the server's own configuration, and its settings as they would be under the
    /// built-in defaults. A supervisor checks with its global settings instead
    /// ([`validate_with`](Self::validate_with)).
    pub fn validate(&self) -> Result<(), Error> {
        self.validate_with(&Settings::default())
    }

    /// Checks everything that can be wrong before anything runs: the server's own configuration,
    /// and the settings in force for it (its overrides on `global`).
    pub fn validate_with(&self, global: &Settings) -> Result<(), Error> {
        let name = Some(self.name.as_str());
        if self.name.trim().is_empty() {
            return Err(Error::config(
                None,
                "name",
                "a server name must not be empty",
            ));
        }
        if let Some(field) = self.misuse {
            let kind = self.transport.kind();
            return Err(Error::config(
                name,
                field,
                format!("does not apply to a server over {kind}"),
            ));
        }
        match &self.transport {
            Transport::Stdio(stdio) => {
                if stdio.command.trim().is_empty() {
                    return Err(Error::config(name, "command", "must not be empty"));
                }
            }
            Transport::Http(http) => validate_http(name, http)?,
        }
        // After the transport's own checks (which, for HTTP, need the `http` feature's crates:
        // a build without it judges the URL and headers only once the feature is on); then
        // whether this build can run it at all.
        if !self.transport.is_compiled_in() {
            return Err(super::missing_transport(&self.name, &self.transport));
        }
        check_settings(&self.settings(global), &|field, message| {
            let origin = if self.overrides.is_set(field) {
                "this server's own setting"
            } else {
                "global setting"
            };
            Error::config(name, field, format!("{message} ({origin})"))
        })
    }
}

impl Settings {
    /// Checks settings on their own, e.g. global settings before any server is added. The
    /// error names the field.
    pub fn validate(&self) -> Result<(), Error> {
        check_settings(self, &|field, message| Error::config(None, field, message))
    }
}

/// Every check of a server's settings; `error` words the problem with `field`.
fn check_settings(s: &Settings, error: &dyn Fn(&str, &str) -> Error) -> Result<(), Error> {
    let above_zero = [
        (
            "connect_timeout",
            s.connect_timeout,
            "must be above zero: every connection attempt would time out at once",
        ),
        (
            "call_timeout",
            s.call_timeout,
            "must be above zero: every call without a timeout of its own would time out at once",
        ),
        (
            "ping_timeout",
            s.ping_timeout,
            "must be above zero: every liveness ping would fail and restart a healthy server",
        ),
        (
            "stability_window",
            s.stability_window,
            "must be above zero: a server that crashes right after it connects would be \
             restarted in a tight loop",
        ),
        (
            "task_poll_floor",
            s.task_poll_floor,
            "must be above zero: a server that asks for no pause between polls of a task \
             would be polled in a tight loop",
        ),
    ];
    for (field, value, message) in above_zero {
        if value.is_zero() {
            return Err(error(field, message));
        }
    }
    if s.task_poll_ceiling < s.task_poll_floor {
        return Err(error(
            "task_poll_ceiling",
            &format!(
                "{} is shorter than task_poll_floor ({}): no wait between two polls of a task \
                 could keep both",
                show(s.task_poll_ceiling),
                show(s.task_poll_floor)
            ),
        ));
    }
    if s.max_in_flight == 0 {
        return Err(error(
            "max_in_flight",
            "must be at least 1: every call would be refused as overloaded",
        ));
    }
    if s.max_message_bytes < 1024 {
        return Err(error(
            "max_message_bytes",
            "must be at least 1024: the server's answers to the handshake would be dropped",
        ));
    }
    check_backoff("startup_backoff", &s.startup_backoff, error)?;
    check_backoff("reconnect_backoff", &s.reconnect_backoff, error)?;
    if s.reconnect_backoff.initial().is_zero() {
        return Err(error(
            "reconnect_backoff",
            "the first delay must be above zero: reconnect attempts would follow each other \
             without a pause",
        ));
    }
    let cap = s.reconnect_backoff.max();
    if let Some(spread) = s.first_reconnect_spread.filter(|spread| *spread > cap) {
        return Err(error(
            "first_reconnect_spread",
            &format!(
                "{} is longer than reconnect_backoff's cap ({}): the first reconnect would wait \
                 longer than any later one",
                show(spread),
                show(cap)
            ),
        ));
    }
    Ok(())
}

fn check_backoff(
    field: &str,
    backoff: &Backoff,
    error: &dyn Fn(&str, &str) -> Error,
) -> Result<(), Error> {
    match backoff.cap_below_initial() {
        Some(cap) => Err(error(
            field,
            &format!(
                "the cap ({}) is below the first delay ({}): are the two swapped?",
                show(cap),
                show(backoff.initial())
            ),
        )),
        None => Ok(()),
    }
}

fn show(d: Duration) -> String {
    format!("{d:?}")
}

/// An HTTP server's URL, headers and OAuth. The URL and the header names and values are checked
/// with crates, not by hand (`url`, which the OAuth code parses URLs with, awc's URI, and
/// `http`'s header types), so that what is accepted here is what connects. A
/// build without the `http` feature has neither crate, and cannot connect to the server
/// anyway: it refuses it for the missing transport, unchecked.
#[cfg(feature = "http")]
fn validate_http(server: Option<&str>, http: &HttpConfig) -> Result<(), Error> {
    let url = check_url(server, &http.url)?;
    check_headers(server, &http.headers)?;
    if let Some(oauth) = &http.oauth {
        if http
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
        {
            return Err(Error::config(
                server,
                "oauth",
                "an Authorization header is configured too: keep one of them",
            ));
        }
        // Bearer and DPoP tokens go with every request: never in cleartext over a network.
        if url.scheme() == "http" && !crate::auth::is_loopback(&url) {
            return Err(Error::config(
                server,
                "url",
                format!(
                    "`{}` is plain HTTP to a host that is not loopback: OAuth tokens would \
                     travel in cleartext; use https:// (plain http:// is allowed with OAuth \
                     only for localhost, 127.0.0.0/8 and ::1)",
                    redact_url(&http.url)
                ),
            ));
        }
        oauth.validate(server)?;
    }
    Ok(())
}

#[cfg(not(feature = "http"))]
fn validate_http(_: Option<&str>, _: &HttpConfig) -> Result<(), Error> {
    Ok(())
}

/// An `http://` or `https://` URL (the scheme in any case, as RFC 3986 says) that both the
/// WHATWG parser (`url`) and the URI type awc connects with accept; no whitespace, which
/// `url` would quietly drop or encode. The error shows the URL without its userinfo and
/// query, where credentials live.
#[cfg(feature = "http")]
fn check_url(server: Option<&str>, url: &str) -> Result<url::Url, Error> {
    let refuse = |why: String| {
        Error::config(
            server,
            "url",
            format!(
                "`{}` is not a valid http:// or https:// URL: {why}",
                redact_url(url)
            ),
        )
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(refuse(
            "it contains whitespace or a control character (a space in a path is written %20)"
                .into(),
        ));
    }
    let parsed = url::Url::parse(url).map_err(|e| refuse(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refuse(format!("its scheme is `{}`", parsed.scheme())));
    }
    // What awc will parse it as; stricter than WHATWG about, e.g., `http:/host`.
    match awc::http::Uri::try_from(url) {
        Ok(uri) if uri.host().is_some_and(|h| !h.is_empty()) => Ok(parsed),
        Ok(_) => Err(refuse("it has no host".into())),
        Err(e) => Err(refuse(e.to_string())),
    }
}

/// Header names as the `http` crate takes them (RFC 9110's tokens; its 1.x, stricter than
/// awc's 0.2 only in refusing `"`, which servers refuse), and values without the control
/// characters it refuses (line breaks, NUL, ...). `HeaderValue::from_str` is the check awc's
/// `insert_header` makes (in both versions, the same as `from_bytes` on the UTF-8 bytes): it
/// takes tab, visible ASCII and every byte from 0x80 (RFC 9110's obs-text), so a UTF-8 value
/// passes and is sent as its bytes; only controls and DEL are refused. A value is never shown:
/// it may be a credential.
#[cfg(feature = "http")]
fn check_headers(
    server: Option<&str>,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<(), Error> {
    use http::header::{HeaderName, HeaderValue};
    for (name, value) in headers {
        let field = || format!("headers.{name}");
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(Error::config(
                server,
                field(),
                format!(
                    "`{name}` is not a valid header name (letters, digits and \
                     !#$%&'*+-.^_`|~ only)"
                ),
            ));
        }
        if HeaderValue::from_str(value).is_err() {
            return Err(Error::config(
                server,
                field(),
                "the value contains a line break or another control character",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_options_on_http_servers_are_rejected() {
        let e = ServerConfig::http("h", "http://x/mcp")
            .args(["a"])
            .validate()
            .unwrap_err();
        assert!(
            matches!(e, Error::Config { ref field, .. } if field == "args"),
            "{e}"
        );
        let e = ServerConfig::stdio("s", "x")
            .bearer_token("t")
            .validate()
            .unwrap_err();
        assert!(
            matches!(e, Error::Config { ref field, .. } if field == "header"),
            "{e}"
        );
        let e = ServerConfig::http("h", "http://x/mcp")
            .header("X", "a\nb")
            .validate()
            .unwrap_err();
        assert!(!e.to_string().contains("a\nb"));
    }

    /// Issue 20, item 3: URLs and header names are checked by the crates that will use them,
    /// at load, naming the field: the scheme in any case, no whitespace (`url` would drop or
    /// encode it), nothing `url` or awc's URI refuses; header names as `http` takes them.
    #[cfg(feature = "http")] // a build without it refuses HTTP servers unchecked
    #[test]
    fn urls_and_headers_are_checked_by_the_crates_that_use_them() {
        let check = |url: &str| ServerConfig::http("h", url).validate();
        for ok in [
            "https://mcp.example.com/mcp",
            "HTTPS://mcp.example.com/mcp",
            "Http://127.0.0.1:8080/mcp?k=v",
            "http://[::1]:3000/mcp",
            "https://u:p@mcp.example.com",
        ] {
            assert!(check(ok).is_ok(), "{ok}: {:?}", check(ok));
        }
        for (bad, why) in [
            ("https://mcp example.com/mcp", "whitespace"),
            ("https://mcp.example.com/my mcp", "whitespace"),
            (" https://mcp.example.com/mcp", "whitespace"),
            ("https://mcp.example.com/\tmcp", "whitespace"),
            ("https://mcp.example.com:99999/mcp", "port"),
            ("https://exa mple.com", "whitespace"),
            ("https://[::1/mcp", "IPv6"),
            ("mcp.example.com/mcp", "relative URL"),
            ("ftp://mcp.example.com/mcp", "scheme is `ftp`"),
            ("http:/mcp.example.com/mcp", ""),
            ("http://", "host"),
            ("", ""),
        ] {
            let e = check(bad).unwrap_err();
            let Error::Config { field, message, .. } = &e else {
                panic!("{bad}: {e}");
            };
            assert_eq!(field, "url", "{bad}: {e}");
            assert!(message.contains(why), "{bad}: {e}");
        }
        // A URL that is refused is shown without its userinfo and query.
        let e = check("ftp://u:s3cret@h.example/x?key=s3cret").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(e.to_string().contains("ftp://***@h.example/x?***"), "{e}");

        let header = |name: &str, value: &str| {
            ServerConfig::http("h", "https://h.example/mcp")
                .header(name, value)
                .validate()
        };
        // UTF-8 is obs-text to HTTP: sent as its bytes, not refused as a control character.
        for value in ["v a\tl:ü", "日本語", "\u{a0}\u{ff}", "😀"] {
            assert!(header("X-Api-Key", value).is_ok(), "{value:?}");
        }
        for name in ["X(Bad)", "X Bad", "X:Bad", "", "Ä", "X\"Bad\""] {
            let Err(e) = header(name, "v") else {
                panic!("accepted: {name:?}");
            };
            let Error::Config { field, message, .. } = &e else {
                panic!("{name}: {e}");
            };
            assert_eq!(field, &format!("headers.{name}"), "{e}");
            assert!(message.contains("not a valid header name"), "{e}");
        }
        for value in ["a\r\nX-Injected: 1", "a\0b", "a\u{1}b", "a\u{7f}"] {
            let e = header("X-Key", value).unwrap_err();
            assert!(e.to_string().contains("control character"), "{e}");
            assert!(!e.to_string().contains(value), "{e}");
        }
    }

    /// Issue 22, defect 3: OAuth tokens never travel in cleartext off this machine.
    #[cfg(feature = "http")]
    #[test]
    fn oauth_over_plain_http_is_refused_off_loopback() {
        use crate::config::OAuthConfig;
        let with_oauth = |url: &str| {
            ServerConfig::http("h", url).oauth(OAuthConfig::client_credentials("c", "s"))
        };
        for bad in [
            "http://mcp.example.com/mcp",
            "http://10.0.0.1:8080/mcp",
            "http://[fd00::1]/mcp",
        ] {
            let e = with_oauth(bad).validate().unwrap_err();
            assert!(
                matches!(e, Error::Config { ref field, .. } if field == "url"),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains("cleartext"), "{e}");
        }
        for ok in [
            "https://mcp.example.com/mcp",
            "http://localhost:3000/mcp",
            "http://127.0.0.1:3000/mcp",
            "http://[::1]:3000/mcp",
        ] {
            assert!(with_oauth(ok).validate().is_ok(), "{ok}");
        }
        // Without OAuth, plain HTTP stays the application's choice.
        assert!(ServerConfig::http("h", "http://mcp.example.com/mcp")
            .validate()
            .is_ok());
    }

    #[test]
    fn a_transport_this_build_lacks_is_a_config_error_naming_its_feature() {
        // `cargo test --no-default-features --features stdio --lib` (in CI) takes the other
        // branch for HTTP.
        for config in [
            ServerConfig::stdio("s", "x"),
            ServerConfig::http("h", "http://127.0.0.1/mcp"),
        ] {
            let result = config.validate();
            if config.transport().is_compiled_in() {
                assert!(result.is_ok(), "{result:?}");
                continue;
            }
            let e = result.unwrap_err();
            let kind = config.transport().kind();
            assert!(
                matches!(e, Error::Config { ref field, .. } if field == "transport"),
                "{e}"
            );
            assert!(
                e.to_string().contains(&format!("`{kind}` cargo feature")),
                "{e}"
            );
        }
    }

    #[test]
    fn validate_rejects_empty_command_and_zero_limits() {
        assert!(ServerConfig::stdio("a", " ").validate().is_err());
        assert!(ServerConfig::stdio("", "x").validate().is_err());
        assert!(ServerConfig::stdio("a", "x")
            .max_in_flight(0)
            .validate()
            .is_err());
        assert!(ServerConfig::stdio("a", "x").validate().is_ok());
    }

    fn field_of(e: Error) -> String {
        match e {
            Error::Config { field, .. } => field,
            other => panic!("not a config error: {other}"),
        }
    }

    /// Defect 12: the global settings are checked too, as the settings in force for each
    /// server, and the error names the field and where its value came from.
    #[test]
    fn global_settings_that_leave_a_server_unusable_are_rejected() {
        fn ms(n: u64) -> Duration {
            Duration::from_millis(n)
        }
        type Breaker = Box<dyn Fn(&mut Settings)>;
        let cases: Vec<(&str, Breaker)> = vec![
            ("max_in_flight", Box::new(|s| s.max_in_flight = 0)),
            ("max_message_bytes", Box::new(|s| s.max_message_bytes = 0)),
            ("connect_timeout", Box::new(|s| s.connect_timeout = ms(0))),
            ("call_timeout", Box::new(|s| s.call_timeout = ms(0))),
            ("ping_timeout", Box::new(|s| s.ping_timeout = ms(0))),
            ("stability_window", Box::new(|s| s.stability_window = ms(0))),
            ("task_poll_floor", Box::new(|s| s.task_poll_floor = ms(0))),
            (
                "task_poll_ceiling",
                Box::new(|s| s.task_poll_ceiling = ms(50)),
            ),
            (
                "startup_backoff",
                Box::new(|s| s.startup_backoff = Backoff::new(ms(5000), ms(10))),
            ),
            (
                "reconnect_backoff",
                Box::new(|s| s.reconnect_backoff = Backoff::new(ms(0), ms(100))),
            ),
            (
                "reconnect_backoff",
                Box::new(|s| s.reconnect_backoff = Backoff::new(ms(30_000), ms(100))),
            ),
            (
                "first_reconnect_spread",
                Box::new(|s| s.first_reconnect_spread = Some(Duration::MAX)),
            ),
        ];
        let server = ServerConfig::stdio("a", "x");
        for (field, break_it) in cases {
            let mut global = Settings::default();
            break_it(&mut global);
            let e = server.validate_with(&global).unwrap_err();
            let shown = e.to_string();
            assert!(shown.contains("server `a`"), "{shown}");
            assert!(shown.ends_with("(global setting)"), "{shown}");
            assert_eq!(field_of(e), field);
            assert_eq!(field_of(global.validate().unwrap_err()), field);
        }
        assert!(server.validate_with(&Settings::default()).is_ok());
        assert!(Settings::default().validate().is_ok());
    }

    #[test]
    fn an_override_can_mend_or_break_what_the_global_settings_say() {
        let global = Settings {
            max_in_flight: 0,
            ..Settings::default()
        };
        let mended = ServerConfig::stdio("a", "x").max_in_flight(8);
        assert!(mended.validate_with(&global).is_ok());
        let broken = ServerConfig::stdio("b", "x").call_timeout(Duration::ZERO);
        let e = broken.validate_with(&Settings::default()).unwrap_err();
        assert!(
            e.to_string().ends_with("(this server's own setting)"),
            "{e}"
        );
        assert_eq!(field_of(e), "call_timeout");
        // The largest values are not mistakes: deadlines saturate.
        let patient = ServerConfig::stdio("c", "x")
            .call_timeout(Duration::MAX)
            .connect_timeout(Duration::MAX);
        assert!(patient.validate().is_ok());
    }
}
