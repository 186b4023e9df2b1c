//! [`ServerConfig::validate`]: every check of a configuration that can be made before anything
//! runs, in one place, so that the `mcpServers` loader and the supervisor reject the same things
//! with the same words.

use super::transport::{HttpConfig, Transport};
use super::ServerConfig;
use crate::error::Error;

impl ServerConfig {
    /// Checks the parts of the configuration that can be wrong before anything runs.
    pub fn validate(&self) -> Result<(), Error> {
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
        if self.overrides.max_in_flight == Some(0) {
            return Err(Error::config(name, "max_in_flight", "must be at least 1"));
        }
        if self.overrides.max_message_bytes.is_some_and(|n| n < 1024) {
            return Err(Error::config(
                name,
                "max_message_bytes",
                "must be at least 1024",
            ));
        }
        Ok(())
    }
}

fn validate_http(server: Option<&str>, http: &HttpConfig) -> Result<(), Error> {
    let url = http.url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => {}
        _ => {
            return Err(Error::config(
                server,
                "url",
                format!("`{url}` is not an http:// or https:// URL"),
            ))
        }
    }
    for (k, v) in &http.headers {
        let name_ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !name_ok {
            return Err(Error::config(
                server,
                format!("headers.{k}"),
                "not a valid header name",
            ));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            // The value is not shown: it may be a credential.
            return Err(Error::config(
                server,
                format!("headers.{k}"),
                "the value contains a line break",
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
}
