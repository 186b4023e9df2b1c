//! Reading switches from the environment, and the settings read once at start-up.
//!
//! Its own room so that every switch is parsed the same way (an unparseable number is reported,
//! never guessed at) and so that the fault switches, which live in `faults`, can share the
//! readers without the server knowing where a setting came from.

use std::path::PathBuf;

use super::era::EraConfig;
use super::faults::Faults;
use super::stderr_line;

const DEFAULT_PAGE_SIZE: usize = 2;

pub(crate) fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A numeric switch; a value we cannot parse is reported and ignored rather than guessed at.
pub(crate) fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    match raw.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            stderr_line(&format!("demo: ignoring {name}={raw:?}: not a number"));
            None
        }
    }
}

pub(crate) fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// `--version-label V` (an argument, the one the demo server takes) or else `DEMO_VERSION=V`:
/// the version this server says it is, in `serverInfo.version` and as a `[V] ` prefix of
/// `echo`'s answer, so that a test of a replacement sees which generation answered a call.
/// Read once; `None` when neither is given.
pub(crate) fn version_label() -> Option<&'static str> {
    static LABEL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    LABEL
        .get_or_init(|| {
            let mut args = std::env::args().skip(1);
            while let Some(arg) = args.next() {
                if arg == "--version-label" {
                    return args.next();
                }
            }
            std::env::var("DEMO_VERSION").ok().filter(|v| !v.is_empty())
        })
        .as_deref()
}

/// Switches read once at start-up.
pub(crate) struct Config {
    pub(crate) protocol_override: Option<String>,
    pub(crate) page_size: usize,
    pub(crate) counter_file: Option<PathBuf>,
    pub(crate) event_log: Option<PathBuf>,
    /// `DEMO_TASKS_DIR`: where `long_job`'s tasks are kept, one file each (else in memory).
    pub(crate) tasks_dir: Option<PathBuf>,
    /// `DEMO_LIST_TASKS`: list `long_job` (it is callable either way).
    pub(crate) list_tasks: bool,
    /// The eras served, and the settings of the 2026-07-28 side (`DEMO_ERA`, ...).
    pub(crate) era: EraConfig,
    /// The misbehaviours that act while serving (read last, as they always were, so warnings
    /// about unparseable values keep their order on stderr).
    pub(crate) faults: Faults,
}

impl Config {
    pub(crate) fn from_env() -> Self {
        let page_size = env_u64("DEMO_TOOLS_PAGE_SIZE")
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0) // a page size of 0 would paginate forever
            .unwrap_or(DEFAULT_PAGE_SIZE);
        Config {
            protocol_override: std::env::var("DEMO_PROTOCOL_VERSION").ok(),
            page_size,
            counter_file: env_path("DEMO_COUNTER_FILE"),
            event_log: env_path("DEMO_EVENT_LOG"),
            tasks_dir: env_path("DEMO_TASKS_DIR"),
            list_tasks: env_flag("DEMO_LIST_TASKS"),
            era: EraConfig::from_env(),
            faults: Faults::from_env(),
        }
    }
}
