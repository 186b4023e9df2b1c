//! `server/discover`, the 2026-07-28 revision's answer to "what do you speak": the versions, the
//! capabilities, and (in `_meta`) who we are, with a freshness hint for caching it.
//!
//! Its own room beside `lifecycle` (the 2025 handshake) because what a client caches from here
//! (`DEMO_DISCOVER_TTL_MS`, `DEMO_MODERN_VERSIONS`) is what discovery tests exercise. Answering
//! it pins nothing: that rule is in `era`.

use serde_json::{json, Value};

use super::era::SERVER_INFO_KEY;
use super::lifecycle::{server_info, INSTRUCTIONS};
use super::server::Server;

impl Server {
    pub(crate) fn discover(&self) -> Value {
        let era = &self.config.era;
        json!({
            "resultType": "complete",
            "supportedVersions": era.versions,
            "capabilities": capabilities(),
            "instructions": INSTRUCTIONS,
            "ttlMs": era.discover_ttl_ms,
            "cacheScope": "private",
            "_meta": { SERVER_INFO_KEY: server_info() },
        })
    }
}

/// What a listen may ask for follows from these: tool-list changes and resource updates, never
/// resource- or prompt-list changes (neither list ever changes).
fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": false },
        "prompts": { "listChanged": false },
        "logging": {},
        "extensions": {
            super::skills::EXTENSION: {},
            super::tools::TASKS_EXTENSION: {},
        },
    })
}
