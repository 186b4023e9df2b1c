//! The fleet's HTTP servers: each slot is one in-tree HTTP test server as the supervisor sees
//! it (one URL), with its profile (the era it speaks, whether OAuth protects it, whether its
//! restarts may change its era), the instance running now, and the statistics of every instance
//! it has had, to count what ran on it.

use std::time::Duration;

use futures_util::FutureExt;

use super::common::http_server::{Bearer, Era, Stats, TestHttpServer};

/// What a slot's server is, whichever instance is running.
#[derive(Clone)]
pub struct Profile {
    /// The era its first instance speaks.
    pub era: Era,
    /// OAuth protects it: tokens of the in-tree authorization server only.
    pub bearer: Option<Bearer>,
    /// Its restarts may come back speaking another era (the `era` fault): a dual-era server
    /// upgraded or downgraded under the client.
    pub era_changes: bool,
}

/// One HTTP test server: the instance running now (none while it is down), and the statistics
/// of every instance it has had.
pub struct HttpSlot {
    pub name: String,
    pub port: u16,
    pub profile: Profile,
    /// The era the running (or last) instance speaks.
    pub era: Era,
    pub running: Option<TestHttpServer>,
    pub instances: Vec<Stats>,
}

impl HttpSlot {
    pub async fn start(name: String, profile: Profile) -> HttpSlot {
        let server = TestHttpServer::start_with(profile.era).await;
        set_up(&server, &profile);
        HttpSlot {
            name,
            port: server.port(),
            era: profile.era,
            profile,
            instances: vec![server.stats()],
            running: Some(server),
        }
    }

    /// Makes OAuth protect the server, from the running instance on.
    pub fn protect(&mut self, bearer: Bearer) {
        if let Some(server) = &self.running {
            server.faults().require_bearer(Some(bearer.clone()));
        }
        self.profile.bearer = Some(bearer);
    }

    /// Executions of `tool` over every instance (`confirm`: its completed flows).
    pub fn runs(&self, tool: &str) -> u64 {
        self.instances
            .iter()
            .map(|s| s.tool_calls(tool) as u64)
            .sum()
    }

    /// Requests refused `401` over every instance.
    pub fn unauthorized(&self) -> u64 {
        self.instances.iter().map(|s| s.unauthorized() as u64).sum()
    }

    /// Rounds of `confirm` flows refused (an unknown or malformed state) over every instance.
    pub fn refused_rounds(&self) -> u64 {
        use super::common::http_server::RoundAnswer;
        self.instances
            .iter()
            .flat_map(|s| s.rounds())
            .filter(|r| r.answer == RoundAnswer::Rejected)
            .count() as u64
    }
}

/// The switches every instance of a slot gets before its first request: the modern era's extra
/// tools listed (so that `confirm`'s read-only hint is known), two input rounds per `confirm`
/// after a state-only answer, and the OAuth gate.
fn set_up(server: &TestHttpServer, profile: &Profile) {
    let faults = server.faults();
    faults.modern_tools(true);
    faults.confirm_rounds(2);
    faults.confirm_state_only(1);
    faults.require_bearer(profile.bearer.clone());
}

/// Starts a test server on `port` again, speaking `era`, set up as `profile` says. The bind can
/// fail for a moment (an outgoing connection may hold the port); it is retried for up to 5 s.
pub async fn restart_on(port: u16, era: Era, profile: &Profile) -> TestHttpServer {
    for _ in 0..50 {
        match std::panic::AssertUnwindSafe(TestHttpServer::start_on_with(port, era))
            .catch_unwind()
            .await
        {
            Ok(server) => {
                set_up(&server, profile);
                return server;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("soak: cannot bind 127.0.0.1:{port} again within 5 s");
}
