//! Our own per-server settings in an `mcpServers` entry, under the key [`OWN_KEY`]
//! (`"mcp-supervisor"`), which the other hosts ignore:
//!
//! ```json
//! "fs": { "command": "npx", "args": ["-y", "pkg"],
//!         "mcp-supervisor": { "trusted": true, "callTimeoutMs": 5000, "maxConnectRetries": 5,
//!                             "reconnectBackoff": { "initialMs": 200, "maxMs": 10000 } } }
//! ```
//!
//! Its own room because the keys are not written here: every setting of
//! [`Settings`](crate::Settings) is settable, its key derived from the field's name (camelCase,
//! with `Ms` after durations, which are whole milliseconds), through [`JsonSetting`], which
//! says how each type of setting is written in JSON. A new setting is therefore settable in
//! the file with nothing added here. `inheritEnv` (stdio servers) is the one key that is not a
//! setting. Unknown keys inside ours are errors: a typo here must not pass unnoticed.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::settings::Overrides;
use crate::policy::backoff::Backoff;

/// The key of our own settings in an `mcpServers` entry.
pub(crate) const OWN_KEY: &str = "mcp-supervisor";

/// What is wrong with a setting's JSON value: `sub` is the path below the setting's key, for
/// settings that are objects (`maxMs` of a backoff).
#[derive(Debug)]
pub(crate) struct SettingError {
    pub(crate) sub: Option<&'static str>,
    pub(crate) message: String,
}

impl SettingError {
    fn new(message: impl Into<String>) -> Self {
        SettingError {
            sub: None,
            message: message.into(),
        }
    }
}

/// How a type of setting is written in JSON.
pub(crate) trait JsonSetting: Sized {
    /// Appended to the camelCase field name to form the key: `Ms` for durations.
    const SUFFIX: &'static str = "";
    /// The setting from its JSON value.
    fn from_json(value: &Value) -> Result<Self, SettingError>;
}

impl JsonSetting for bool {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        value
            .as_bool()
            .ok_or_else(|| SettingError::new("expected true or false"))
    }
}

fn whole_number(value: &Value, what: &str) -> Result<u64, SettingError> {
    value
        .as_u64()
        .ok_or_else(|| SettingError::new(format!("expected {what}")))
}

impl JsonSetting for u32 {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        let n = whole_number(value, "a whole number, 0 or more")?;
        u32::try_from(n).map_err(|_| SettingError::new(format!("at most {}", u32::MAX)))
    }
}

impl JsonSetting for usize {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        let n = whole_number(value, "a whole number, 0 or more")?;
        usize::try_from(n).map_err(|_| SettingError::new(format!("at most {}", usize::MAX)))
    }
}

impl JsonSetting for Duration {
    const SUFFIX: &'static str = "Ms";
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        whole_number(value, "a whole number of milliseconds").map(Duration::from_millis)
    }
}

/// `"auto"`, `"legacy"` or `"modern"`.
impl JsonSetting for crate::protocol::era::ProtocolChoice {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        value
            .as_str()
            .and_then(Self::parse)
            .ok_or_else(|| SettingError::new("expected \"auto\", \"legacy\" or \"modern\""))
    }
}

/// `"debug"`, `"info"`, ... `"emergency"`.
impl JsonSetting for crate::protocol::meta::LogLevel {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        value.as_str().and_then(Self::parse).ok_or_else(|| {
            SettingError::new("expected a log level: debug, info, notice, warning, error, critical, alert or emergency")
        })
    }
}

/// `null` is `None`: e.g. `"maxReconnectAttempts": null` never gives up.
impl<T: JsonSetting> JsonSetting for Option<T> {
    const SUFFIX: &'static str = T::SUFFIX;
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        match value {
            Value::Null => Ok(None),
            value => T::from_json(value).map(Some).map_err(|mut e| {
                e.message.push_str(", or null");
                e
            }),
        }
    }
}

/// `{"initialMs": 500, "maxMs": 2000, "multiplier": 2, "jitter": 0.5}`; `multiplier` and
/// `jitter` are optional (2 and 0.5). Out-of-range values are errors here, where
/// [`Backoff`]'s builders would clamp them: a file's mistake is reported, not mended.
impl JsonSetting for Backoff {
    fn from_json(value: &Value) -> Result<Self, SettingError> {
        let Value::Object(obj) = value else {
            return Err(SettingError::new(
                "expected an object: {\"initialMs\": …, \"maxMs\": …}",
            ));
        };
        let at = |sub: &'static str| {
            move |mut e: SettingError| {
                e.sub = Some(sub);
                e
            }
        };
        if let Some(unknown) = obj
            .keys()
            .find(|k| !["initialMs", "maxMs", "multiplier", "jitter"].contains(&k.as_str()))
        {
            return Err(SettingError::new(format!(
                "unknown key `{unknown}` (expected initialMs, maxMs, multiplier, jitter)"
            )));
        }
        let duration = |key: &'static str| match obj.get(key) {
            Some(v) => Duration::from_json(v).map_err(at(key)),
            None => Err(at(key)(SettingError::new("missing"))),
        };
        let mut backoff = Backoff::new(duration("initialMs")?, duration("maxMs")?);
        if let Some(v) = obj.get("multiplier") {
            match v.as_f64() {
                Some(m) if m.is_finite() && m >= 1.0 => backoff = backoff.multiplier(m),
                _ => return Err(at("multiplier")(SettingError::new("expected a number ≥ 1"))),
            }
        }
        if let Some(v) = obj.get("jitter") {
            match v.as_f64() {
                Some(j) if (0.0..=1.0).contains(&j) => backoff = backoff.jitter(j),
                _ => {
                    return Err(at("jitter")(SettingError::new(
                        "expected a fraction from 0 to 1",
                    )))
                }
            }
        }
        Ok(backoff)
    }
}

/// The JSON key of the setting `field`: `call_timeout` is `callTimeoutMs`.
pub(crate) fn json_key(field: &str, suffix: &str) -> String {
    let mut key = String::with_capacity(field.len() + suffix.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            key.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            key.push(c);
        }
    }
    key.push_str(suffix);
    key
}

/// The JSON key of the setting `field`, if it is one: for error messages.
pub(super) fn json_key_of(field: &str) -> Option<String> {
    Overrides::JSON_FIELDS
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(f, suffix)| json_key(f, suffix))
}

/// What our key of one entry says.
#[derive(Debug, Default)]
pub(super) struct OwnSettings {
    pub(super) overrides: Overrides,
    pub(super) inherit_env: Option<bool>,
}

/// Reads our key's object. The error is the key below ours (`callTimeoutMs`,
/// `startupBackoff.maxMs`) and what is wrong with it.
pub(super) fn parse(obj: &Map<String, Value>) -> Result<OwnSettings, (String, String)> {
    let mut own = OwnSettings::default();
    for (key, value) in obj {
        if key == "inheritEnv" {
            own.inherit_env = Some(bool::from_json(value).map_err(|e| (key.clone(), e.message))?);
            continue;
        }
        let Some((field, _)) = Overrides::JSON_FIELDS
            .iter()
            .find(|(field, suffix)| json_key(field, suffix) == *key)
        else {
            let known: Vec<String> = Overrides::JSON_FIELDS
                .iter()
                .map(|(f, s)| json_key(f, s))
                .chain(["inheritEnv".to_owned()])
                .collect();
            return Err((
                key.clone(),
                format!("not a setting (known: {})", known.join(", ")),
            ));
        };
        own.overrides.set_from_json(field, value).map_err(|e| {
            let path = match e.sub {
                Some(sub) => format!("{key}.{sub}"),
                None => key.clone(),
            };
            (path, e.message)
        })?;
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ServerConfig, Settings};

    #[test]
    fn keys_are_camel_case_with_units() {
        assert_eq!(json_key("call_timeout", "Ms"), "callTimeoutMs");
        assert_eq!(json_key("max_connect_retries", ""), "maxConnectRetries");
        assert_eq!(json_key("trusted", ""), "trusted");
        assert_eq!(
            json_key_of("first_reconnect_spread").as_deref(),
            Some("firstReconnectSpreadMs")
        );
        assert_eq!(json_key_of("nope"), None);
    }

    /// The table of docs/configuration.md names every key, so that it cannot drift from the settings.
    #[test]
    fn the_readme_names_every_key() {
        let readme = include_str!("../../../docs/configuration.md");
        for (field, suffix) in Overrides::JSON_FIELDS {
            let row = format!("| `{field}` | `{}` |", json_key(field, suffix));
            assert!(readme.contains(&row), "docs/configuration.md lacks {row}");
        }
    }

    /// Every setting has a key, and a value different from its default reaches the settings
    /// in force: the day a setting is added, this test covers it too.
    #[test]
    fn every_setting_is_settable() {
        let mut obj = Map::new();
        for (field, suffix) in Overrides::JSON_FIELDS {
            let key = json_key(field, suffix);
            let value = match (*field, *suffix) {
                ("startup_backoff" | "reconnect_backoff", _) => {
                    serde_json::json!({"initialMs": 7, "maxMs": 70, "multiplier": 3, "jitter": 0.25})
                }
                ("revive", _) => Value::Bool(false),
                ("trusted", _) => Value::Bool(true),
                ("tasks", _) => Value::Bool(false),
                ("protocol", _) => Value::from("modern"),
                ("log_level", _) => Value::from("warning"),
                (_, "Ms") => Value::from(1234),
                ("max_message_bytes", _) => Value::from(4096),
                _ => Value::from(9),
            };
            obj.insert(key, value);
        }
        let own = parse(&obj).unwrap();
        let config = ServerConfig {
            overrides: own.overrides,
            ..ServerConfig::stdio("a", "x")
        };
        let ours = config.settings(&Settings::default());
        let defaults = Settings::default();
        for (field, _) in Overrides::JSON_FIELDS {
            assert!(config.overrides.is_set(field), "{field}");
        }
        assert_eq!(ours.call_timeout, Duration::from_millis(1234));
        assert_eq!(
            ours.first_reconnect_spread,
            Some(Duration::from_millis(1234))
        );
        assert_eq!(ours.max_reconnect_attempts, Some(9));
        assert_eq!(ours.startup_backoff.initial(), Duration::from_millis(7));
        assert_eq!(ours.startup_backoff.max(), Duration::from_millis(70));
        assert_eq!(ours.reconnect_backoff.jitter_fraction(), 0.25);
        assert_ne!(format!("{ours:?}"), format!("{defaults:?}"));
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            (
                r#"{"callTimeoutMs": "5s"}"#,
                "callTimeoutMs",
                "milliseconds",
            ),
            (r#"{"callTimeoutMs": -1}"#, "callTimeoutMs", "milliseconds"),
            (r#"{"callTimeoutMs": 1.5}"#, "callTimeoutMs", "milliseconds"),
            (r#"{"callTimeout": 5}"#, "callTimeout", "not a setting"),
            (
                r#"{"protocol": "2026"}"#,
                "protocol",
                "\"auto\", \"legacy\" or \"modern\"",
            ),
            (r#"{"trusted": "yes"}"#, "trusted", "true or false"),
            (
                r#"{"maxConnectRetries": 5000000000}"#,
                "maxConnectRetries",
                "at most",
            ),
            (
                r#"{"maxReconnectAttempts": "x"}"#,
                "maxReconnectAttempts",
                "or null",
            ),
            (r#"{"startupBackoff": 5}"#, "startupBackoff", "an object"),
            (
                r#"{"startupBackoff": {"initialMs": 5}}"#,
                "startupBackoff.maxMs",
                "missing",
            ),
            (
                r#"{"startupBackoff": {"initialMs": 5, "maxMs": 9, "jitter": 2}}"#,
                "startupBackoff.jitter",
                "fraction",
            ),
            (
                r#"{"reconnectBackoff": {"initialMs": 5, "maxMs": 9, "multiplier": 0.5}}"#,
                "reconnectBackoff.multiplier",
                "≥ 1",
            ),
            (
                r#"{"reconnectBackoff": {"initial": 5}}"#,
                "reconnectBackoff",
                "unknown key",
            ),
            (r#"{"inheritEnv": 1}"#, "inheritEnv", "true or false"),
        ];
        for (json, want_key, want_message) in cases {
            let obj: Map<String, Value> = serde_json::from_str(json).unwrap();
            let (key, message) = parse(&obj).unwrap_err();
            assert_eq!(key, want_key, "{json}");
            assert!(message.contains(want_message), "{json}: {message}");
        }
        let obj: Map<String, Value> =
            serde_json::from_str(r#"{"maxReconnectAttempts": null, "inheritEnv": true}"#).unwrap();
        let own = parse(&obj).unwrap();
        assert_eq!(own.overrides.max_reconnect_attempts, Some(None));
        assert_eq!(own.inherit_env, Some(true));
    }
}
