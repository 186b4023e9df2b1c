//! The fleet under test: the demo servers over stdio (each with its own event log and count
//! file in a temporary directory), the in-tree HTTP test servers (`http_slots`), the in-tree
//! OAuth authorization server that protects some of them, their configurations (varied, so
//! that more paths are taken), and what each server counted once the soak is over.
//!
//! Both protocol eras run side by side (`MCP_SOAK_ERAS`, default `mixed`):
//!
//! | server | era | configuration |
//! |---|---|---|
//! | `stdio0` | 2026-07-28 only | `trusted` |
//! | `stdio1` | session era only | as by default |
//! | `stdio2` | both (the client picks 2026-07-28) | `max_in_flight(8)` |
//! | `stdio3` | session era only | `trusted` |
//! | `http0` | session era only | `trusted` |
//! | `http1` | 2026-07-28 only | `trusted` |
//! | `http2` | both, and its restarts may change that | `max_in_flight(8)`, OAuth |
//!
//! (further servers repeat the pattern). `trusted` servers' read-only tools (echo, slow,
//! confirm) are re-sent after a broken connection; `max_in_flight(8)` answers `overloaded`
//! beyond eight calls; OAuth (`MCP_SOAK_OAUTH=0` turns it off) is the client credentials grant
//! against the in-tree authorization server, whose tokens live 35 s, so that they are renewed
//! ahead of their expiry every few seconds (`auth::provider::REFRESH_MARGIN` is 30 s) besides the
//! `expire` and `tokenfail` faults. Every server has a resource the application subscribes to
//! (`demo://clock` on the demo servers, `soak://<name>` on the HTTP ones): a listen stream in
//! the 2026-07-28 era, `resources/subscribe` and the GET stream in the session era. `confirm`
//! (input asked for, answered by the application's request handler: multi round-trip in
//! 2026-07-28, a real elicitation request in the session era) is called on every demo server
//! and on the HTTP servers whose era cannot change to the session era, which has no `confirm`.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_supervisor::config::OAuthConfig;
use mcp_supervisor::{ServerConfig, ServerStatus};

use super::callers::Target;
use super::common;
use super::common::http_server::{Bearer, Era};
use super::common::oauth_server::{OAuthServer, CLIENT_ID, CLIENT_SECRET};
use super::faults;
use super::history::*;
use super::http_slots::{HttpSlot, Profile};
use super::timeline::Availability;

/// The lifetime of the authorization server's access tokens, in seconds: just over the
/// provider's 30 s renewal margin, so tokens are renewed every few seconds.
const TOKEN_LIFETIME_SECS: u64 = 35;

/// Which eras the servers speak (`MCP_SOAK_ERAS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eras {
    /// The table in the module doc.
    Mixed,
    /// Every server speaks this one (`legacy`, `modern` or `dual`), and none changes it.
    All(&'static str),
}

impl Eras {
    pub fn parse(s: &str) -> Option<Eras> {
        match s.trim() {
            "mixed" => Some(Eras::Mixed),
            "legacy" => Some(Eras::All("legacy")),
            "modern" => Some(Eras::All("modern")),
            "dual" => Some(Eras::All("dual")),
            _ => None,
        }
    }

    fn pick(self, table: &'static str) -> &'static str {
        match self {
            Eras::Mixed => table,
            Eras::All(era) => era,
        }
    }
}

/// How a server's configuration differs from the default.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variation {
    Trusted,
    Plain,
    Narrow,
}

impl Variation {
    fn apply(self, config: ServerConfig) -> ServerConfig {
        match self {
            Variation::Trusted => config.trusted(true),
            Variation::Plain => config,
            Variation::Narrow => config.max_in_flight(8),
        }
    }
}

/// The demo servers' pattern: era and variation.
const STDIO: [(&str, Variation); 4] = [
    ("modern", Variation::Trusted),
    ("legacy", Variation::Plain),
    ("dual", Variation::Narrow),
    ("legacy", Variation::Trusted),
];

/// The HTTP servers' pattern: era, variation, OAuth, era changes.
const HTTP: [(&str, Variation, bool, bool); 3] = [
    ("legacy", Variation::Trusted, false, false),
    ("modern", Variation::Trusted, false, false),
    ("dual", Variation::Narrow, true, true),
];

fn http_era(era: &str) -> Era {
    match era {
        "legacy" => Era::Legacy,
        "modern" => Era::Modern,
        _ => Era::Dual,
    }
}

pub struct Fleet {
    pub dir: tempfile::TempDir,
    /// The stdio servers' names.
    pub stdio: Vec<String>,
    pub http: Vec<Rc<RefCell<HttpSlot>>>,
    /// The authorization server, if any HTTP server is protected.
    pub oauth: Option<Rc<OAuthServer>>,
    pub configs: Vec<ServerConfig>,
    pub targets: Vec<Target>,
}

impl Fleet {
    /// `stdio` demo servers `stdio0`.. and `http` HTTP test servers `http0`.., the latter
    /// listening already (with the authorization server, if `oauth` and any is protected).
    pub async fn start(stdio: usize, http: usize, eras: Eras, oauth: bool) -> Fleet {
        let dir = common::tempdir();
        let mut configs = Vec::new();
        let mut targets = Vec::new();
        let stdio: Vec<String> = (0..stdio).map(|i| format!("stdio{i}")).collect();
        for (i, name) in stdio.iter().enumerate() {
            let (era, variation) = STDIO[i % STDIO.len()];
            let era = eras.pick(era);
            let config = common::demo_in(era, name, dir.path()).env("DEMO_LIST_CONFIRM", "1");
            configs.push(variation.apply(config));
            targets.push(Target {
                name: name.clone(),
                kind: Kind::Stdio,
                era,
                trusted: variation == Variation::Trusted,
                mrtr: true,
                resource: "demo://clock".to_owned(),
                oauth: false,
            });
        }
        let protected = oauth && (0..http).any(|i| HTTP[i % HTTP.len()].2);
        let oauth = match protected {
            true => {
                let server = OAuthServer::start().await;
                server.expires_in(Some(TOKEN_LIFETIME_SECS));
                Some(Rc::new(server))
            }
            false => None,
        };
        let mut slots = Vec::new();
        for i in 0..http {
            let (era, variation, gated, era_changes) = HTTP[i % HTTP.len()];
            let era = eras.pick(era);
            let profile = Profile {
                era: http_era(era),
                bearer: None,
                era_changes: era_changes && eras == Eras::Mixed,
            };
            let name = format!("http{i}");
            let mut slot = HttpSlot::start(name.clone(), profile).await;
            let url = format!("http://127.0.0.1:{}/mcp", slot.port);
            let mut config = variation.apply(ServerConfig::http(&name, &url));
            if let Some(server) = oauth.as_ref().filter(|_| gated) {
                slot.protect(Bearer {
                    live: server.protect(&url),
                    issuer: server.issuer(),
                });
                config = config.oauth(OAuthConfig::client_credentials(CLIENT_ID, CLIENT_SECRET));
            }
            let profile = slot.profile.clone();
            configs.push(config);
            targets.push(Target {
                name: name.clone(),
                kind: Kind::Http,
                era,
                trusted: variation == Variation::Trusted,
                // The session era has no `confirm` on this server.
                mrtr: era != "legacy" && !profile.era_changes,
                resource: format!("soak://{name}"),
                oauth: profile.bearer.is_some(),
            });
            slots.push(Rc::new(RefCell::new(slot)));
        }
        Fleet {
            dir,
            stdio,
            http: slots,
            oauth,
            configs,
            targets,
        }
    }

    /// Every process the demo servers' event logs say was started.
    pub fn started_pids(&self) -> Vec<u32> {
        self.stdio
            .iter()
            .flat_map(|name| faults::started(&self.dir.path().join(format!("{name}.log"))))
            .collect()
    }

    /// Stops the HTTP test servers that are running.
    pub async fn stop_http(&self) {
        for slot in &self.http {
            let server = slot.borrow_mut().running.take();
            if let Some(server) = server {
                server.stop().await;
            }
        }
    }

    /// What `target` counted (its executions of `counter`, its runs of `echo`, `slow` and
    /// `confirm`, the input rounds it refused, the requests it refused for want of a token),
    /// with the supervisor's last `status` of it, its `availability` and the resource updates
    /// that reached the application.
    pub fn counted(
        &self,
        target: &Target,
        status: Option<&ServerStatus>,
        availability: Availability,
        updates: u64,
    ) -> ServerFacts {
        let mut facts = ServerFacts {
            name: target.name.clone(),
            kind: target.kind,
            era: target.era,
            executions: 0,
            counter_file: None,
            runs: Vec::new(),
            refused_rounds: 0,
            unauthorized: 0,
            updates,
            ready_fraction: availability.ready,
            ready_while_up: availability.ready_while_up,
            outages: availability.outages,
            reconnects: status.map_or(0, |s| s.counters.reconnects),
            resent: status.map_or(0, |s| s.counters.calls_resent),
            unknown_responses: status.map_or(0, |s| s.counters.unknown_responses),
        };
        match target.kind {
            Kind::Stdio => {
                let log = common::event_log(self.dir.path(), &target.name);
                let count =
                    |prefix: &str| log.iter().filter(|l| l.starts_with(prefix)).count() as u64;
                facts.executions = count("counter ");
                facts.counter_file = Some(common::counter_file(self.dir.path(), &target.name));
                let confirm = confirm_runs(&self.dir.path().join(format!("{}.log", target.name)));
                facts.runs = vec![
                    (Method::Echo, count("call echo")),
                    (Method::Slow, count("call slow")),
                    (Method::Confirm, confirm.0),
                ];
                facts.refused_rounds = confirm.1;
            }
            Kind::Http => {
                let slot = self.http.iter().find(|s| s.borrow().name == target.name);
                let runs = |tool| slot.map_or(0, |s| s.borrow().runs(tool));
                facts.executions = runs("counter");
                facts.runs = vec![
                    (Method::Echo, runs("echo")),
                    (Method::Slow, runs("slow")),
                    (Method::Confirm, runs("confirm")),
                ];
                facts.refused_rounds = slot.map_or(0, |s| s.borrow().refused_rounds());
                facts.unauthorized = slot.map_or(0, |s| s.borrow().unauthorized());
            }
        }
        facts
    }
}

/// A demo server's runs of `confirm` and the input rounds it refused, from its raw event log:
/// in the session era a run is the tool's start (`call confirm`: it then asks the client); in
/// the 2026-07-28 era a run is a flow that completed (`modern mrtr confirm ... -> complete`),
/// as every round is a `tools/call` of its own.
fn confirm_runs(log: &std::path::Path) -> (u64, u64) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut runs = 0;
    let mut refused = 0;
    for line in text.lines() {
        if line == "call confirm"
            || (line.starts_with("modern mrtr confirm ") && line.ends_with("-> complete"))
        {
            runs += 1;
        }
        if line.contains("mrtr confirm ") && line.contains("-> error") {
            refused += 1;
        }
    }
    (runs, refused)
}

/// When `server` itself could not answer: SIGSTOPped, not listening (HTTP), or removed.
pub fn down_windows(faults: &[FaultRecord], server: &str) -> Vec<(Duration, Duration)> {
    faults
        .iter()
        .filter(|f| f.target == server)
        .filter(|f| {
            matches!(
                f.kind,
                FaultKind::Stop
                    | FaultKind::HttpRestart
                    | FaultKind::EraChange
                    | FaultKind::RemoveAdd
            )
        })
        .map(|f| (f.at, f.end))
        .collect()
}
