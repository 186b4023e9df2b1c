//! The limits and timings of a server ([`Settings`]) with their built-in defaults, and how a
//! [`ServerConfig`]'s overrides layer on the supervisor's global settings.
//!
//! Its own room because every setting is declared once, in the list below: the field, its
//! default, the per-server override, the builder setter and its key in an `mcpServers` file
//! all come from that one line.

use std::time::Duration;

use super::mcp_servers::{JsonSetting, SettingError};
use super::ServerConfig;
use crate::policy::backoff::Backoff;
use crate::protocol::era::ProtocolChoice;
use crate::protocol::meta::LogLevel;

/// Declares [`Settings`] (every field concrete, with its default), the per-server overrides
/// (every field optional, each settable from JSON) and a setter for each on [`ServerConfig`],
/// from one list, so that a new setting is one line here.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $field:ident : $ty:ty = $default:expr; )*) => {
        /// Limits and timings of one supervised server.
        ///
        /// `Settings::default()` holds the built-in defaults; set global ones on the supervisor
        /// builder and per-server ones on [`ServerConfig`].
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $field: $default, )* }
            }
        }

        #[derive(Debug, Clone, Default, PartialEq)]
        pub(super) struct Overrides {
            $( pub(super) $field: Option<$ty>, )*
        }

        impl Overrides {
            /// Whether this server sets `field` itself (for validation messages).
            pub(super) fn is_set(&self, field: &str) -> bool {
                match field {
                    $( stringify!($field) => self.$field.is_some(), )*
                    _ => false,
                }
            }
        }

        impl Overrides {
            /// Every setting's field name and the suffix of its key in an `mcpServers` entry's
            /// own settings (`Ms` for durations), in declaration order.
            pub(super) const JSON_FIELDS: &'static [(&'static str, &'static str)] =
                &[ $( (stringify!($field), <$ty as JsonSetting>::SUFFIX), )* ];

            /// Sets the override of `field` from its JSON value (see `mcp_servers`' own
            /// settings); an unknown field leaves everything as it is.
            pub(super) fn set_from_json(
                &mut self,
                field: &str,
                value: &serde_json::Value,
            ) -> Result<(), SettingError> {
                match field {
                    $( stringify!($field) => self.$field = Some(<$ty as JsonSetting>::from_json(value)?), )*
                    _ => {}
                }
                Ok(())
            }
        }

        impl Settings {
            fn apply(&self, o: &Overrides) -> Settings {
                Settings { $( $field: o.$field.clone().unwrap_or_else(|| self.$field.clone()), )* }
            }
        }

        impl ServerConfig {
            $(
                $(#[doc = $doc])*
                ///
                /// Overrides the supervisor's global setting for this server.
                pub fn $field(mut self, value: $ty) -> Self {
                    self.overrides.$field = Some(value);
                    self
                }
            )*
        }
    };
}

settings! {
    /// Retries after the first failed start-up attempt before the server is `Failed` (default 3).
    max_connect_retries: u32 = 3;
    /// Backoff between start-up retries (default 500 ms, 1 s, 2 s, +50 % jitter).
    startup_backoff: Backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(2));
    /// Backoff between reconnect attempts after a Ready connection broke (default 100 ms doubling
    /// to 30 s, +50 % jitter). The first reconnect attempt is immediate.
    reconnect_backoff: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
    /// Reconnect attempts after a Ready connection broke before giving up; `None` (the default)
    /// never gives up.
    max_reconnect_attempts: Option<u32> = None;
    /// Whether a `Failed` server keeps being revived in the background (default true): one
    /// attempt at a time, the first `startup_backoff`'s cap after the last start-up retry, then
    /// doubling on the reconnect backoff up to `reconnect_backoff`'s cap, each announced with
    /// its time. Never for failures that retrying cannot fix (refused credentials, no protocol
    /// version in common, a program that cannot be started, invalid settings): those wait for
    /// `Reconnect`. false: every Failed server waits for `Reconnect`.
    revive: bool = true;
    /// The first reconnect after a stable connection waits a random time below this, so that
    /// the clients of a restarted server do not all come back in the same instant (only while
    /// `reconnect_backoff` has jitter). `None` (the default): at once for stdio servers, which
    /// are ours alone, and spread over 1 s for HTTP servers, which many clients share.
    first_reconnect_spread: Option<Duration> = None;
    /// How long a connection must stay Ready before the reconnect backoff starts from the
    /// beginning again (default 10 s), so a server that crashes right after start-up cannot make
    /// us reconnect in a tight loop. A shorter Ready period pays the backoff down in
    /// proportion: Ready for half the window halves the reconnect streak.
    stability_window: Duration = Duration::from_secs(10);
    /// Time allowed to spawn the server and complete the handshake (default 30 s).
    connect_timeout: Duration = Duration::from_secs(30);
    /// Timeout of calls that do not set their own (default 60 s).
    call_timeout: Duration = Duration::from_secs(60);
    /// Timeout of the liveness ping sent after a call timed out (default 5 s). A failed ping
    /// marks the connection broken.
    ping_timeout: Duration = Duration::from_secs(5);
    /// Calls in flight plus calls waiting for a connection, per server (default 1024); beyond
    /// it calls fail at once with `Overloaded`.
    max_in_flight: usize = 1024;
    /// How long an HTTP connection left idle is kept for a later request (default 4 s): less
    /// than the idle timeouts of common servers (Node, uvicorn, actix-web: 5 s), so that a
    /// request is not sent on a connection the server is closing at that moment, which would
    /// leave a `tools/call` with an unknown outcome. Set it below the idle timeout of the
    /// server or proxy in front of it (gunicorn's is 2 s). Zero reuses none.
    http_idle_timeout: Duration = Duration::from_secs(4);
    /// Largest message accepted from the server (default 16 MiB); longer lines are dropped and
    /// counted.
    max_message_bytes: usize = 16 * 1024 * 1024;
    /// How long to wait after closing stdin, and again after SIGTERM, before escalating on
    /// shutdown (default 2 s each).
    shutdown_grace: Duration = Duration::from_secs(2);
    /// Lines of the server's stderr kept to attach to connection errors (default 20).
    stderr_tail_lines: usize = 20;
    /// Whether tool annotations from this server (`readOnlyHint`, `idempotentHint`) may be
    /// believed when deciding to re-send a `tools/call` after a reconnect (default false: the
    /// spec says to distrust annotations from untrusted servers).
    trusted: bool = false;
    /// Which protocol revisions to speak (default `Auto`): `Auto` asks the stateless 2026-07-28
    /// way first (`server/discover`) and falls back to the `initialize` handshake of
    /// 2024-11-05..2025-11-25 on any answer that is not modern, remembering what it found for
    /// the next connection; `Legacy` and `Modern` pin one era.
    protocol: ProtocolChoice = ProtocolChoice::Auto;
    /// Rounds of a multi-round-trip request (2026-07-28: a result that asks for input, answered
    /// through the request handler, then the request sent again) before the call fails
    /// (default 8). All of them live inside the call's one deadline.
    max_input_rounds: u32 = 8;
    /// The least severe log messages (`notifications/message`) the server should send; `None`
    /// (the default) leaves it to the server. Sent as `logging/setLevel` after the handshake,
    /// and in the 2026-07-28 revision on every request (without it a modern server sends none).
    log_level: Option<LogLevel> = None;
    /// Whether requests of the 2026-07-28 revision declare the Tasks extension
    /// (`io.modelcontextprotocol/tasks`, default true), which lets a server answer a
    /// `tools/call` with a task: the call then polls it and is answered with its result, as
    /// if the server had answered at once. false: servers run every call in its request.
    tasks: bool = true;
    /// The shortest wait between two polls of a task (`tasks/get`), whatever interval the
    /// server asks for (default 100 ms).
    task_poll_floor: Duration = Duration::from_millis(100);
    /// The longest wait between two polls of a task, whatever interval the server asks for
    /// (default 60 s): a task's end is only learnt by asking.
    task_poll_ceiling: Duration = Duration::from_secs(60);
}

impl ServerConfig {
    /// The settings in force for this server, given the supervisor's global ones.
    pub fn settings(&self, global: &Settings) -> Settings {
        global.apply(&self.overrides)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_layer_on_global_settings() {
        let global = Settings {
            max_connect_retries: 7,
            ..Settings::default()
        };
        let cfg = ServerConfig::stdio("a", "x").call_timeout(Duration::from_secs(1));
        let s = cfg.settings(&global);
        assert_eq!(s.max_connect_retries, 7);
        assert_eq!(s.call_timeout, Duration::from_secs(1));
        assert_eq!(s.ping_timeout, Settings::default().ping_timeout);
    }
}
