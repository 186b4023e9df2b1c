//! The fleet under test: the demo servers over stdio (each with its own event log and count
//! file in a temporary directory) and the in-tree HTTP test servers, their configurations
//! (varied, so that more paths are taken), and what each server counted once the soak is over.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_supervisor::{ServerConfig, ServerStatus};

use super::callers::Target;
use super::common;
use super::faults::{self, HttpSlot};
use super::history::*;
use super::timeline::Availability;

pub struct Fleet {
    pub dir: tempfile::TempDir,
    /// The stdio servers' names.
    pub stdio: Vec<String>,
    pub http: Vec<Rc<RefCell<HttpSlot>>>,
    pub configs: Vec<ServerConfig>,
    pub targets: Vec<Target>,
}

/// Servers differ, so that more paths are taken: the first of each transport is `trusted` (its
/// read-only tools, echo and slow, are re-sent after a broken connection), the third has room
/// for only 8 calls (`overloaded` beyond), the others are as configured by default.
fn vary(config: ServerConfig, index: usize) -> ServerConfig {
    match index % 3 {
        0 => config.trusted(true),
        2 => config.max_in_flight(8),
        _ => config,
    }
}

/// Whether [`vary`] makes the `index`-th server of its transport `trusted`.
fn trusted(index: usize) -> bool {
    index.is_multiple_of(3)
}

impl Fleet {
    /// `stdio` demo servers `stdio0`.. and `http` HTTP test servers `http0`.., the latter
    /// listening already.
    pub async fn start(stdio: usize, http: usize) -> Fleet {
        let dir = common::tempdir();
        let stdio: Vec<String> = (0..stdio).map(|i| format!("stdio{i}")).collect();
        let mut slots = Vec::new();
        for i in 0..http {
            slots.push(Rc::new(RefCell::new(
                HttpSlot::start(format!("http{i}")).await,
            )));
        }
        let mut configs = Vec::new();
        let mut targets = Vec::new();
        for (i, name) in stdio.iter().enumerate() {
            configs.push(vary(common::demo(name, dir.path()), i));
            targets.push(Target {
                name: name.clone(),
                kind: Kind::Stdio,
                trusted: trusted(i),
            });
        }
        for (i, slot) in slots.iter().enumerate() {
            let slot = slot.borrow();
            let url = format!("http://127.0.0.1:{}/mcp", slot.port);
            configs.push(vary(ServerConfig::http(&slot.name, url), i));
            targets.push(Target {
                name: slot.name.clone(),
                kind: Kind::Http,
                trusted: trusted(i),
            });
        }
        Fleet {
            dir,
            stdio,
            http: slots,
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

    /// What `target` counted (its executions of `counter`, `echo` and `slow`), with the
    /// supervisor's last `status` of it and its `availability`.
    pub fn counted(
        &self,
        target: &Target,
        status: Option<&ServerStatus>,
        availability: Availability,
    ) -> ServerFacts {
        let ([executions, echo_runs, slow_runs], counter_file) = match target.kind {
            Kind::Stdio => {
                let log = common::event_log(self.dir.path(), &target.name);
                let count =
                    |prefix: &str| log.iter().filter(|l| l.starts_with(prefix)).count() as u64;
                (
                    [count("counter "), count("call echo"), count("call slow")],
                    Some(common::counter_file(self.dir.path(), &target.name)),
                )
            }
            Kind::Http => {
                let slot = self.http.iter().find(|s| s.borrow().name == target.name);
                let runs = |tool| slot.map_or(0, |s| s.borrow().runs(tool));
                ([runs("counter"), runs("echo"), runs("slow")], None)
            }
        };
        ServerFacts {
            name: target.name.clone(),
            kind: target.kind,
            executions,
            counter_file,
            echo_runs,
            slow_runs,
            ready_fraction: availability.ready,
            ready_while_up: availability.ready_while_up,
            outages: availability.outages,
            reconnects: status.map_or(0, |s| s.counters.reconnects),
            resent: status.map_or(0, |s| s.counters.calls_resent),
            unknown_responses: status.map_or(0, |s| s.counters.unknown_responses),
        }
    }
}

/// When `server` itself could not answer: SIGSTOPped, not listening (HTTP), or removed.
pub fn down_windows(faults: &[FaultRecord], server: &str) -> Vec<(Duration, Duration)> {
    faults
        .iter()
        .filter(|f| f.target == server)
        .filter(|f| {
            matches!(
                f.kind,
                FaultKind::Stop | FaultKind::HttpRestart | FaultKind::RemoveAdd
            )
        })
        .map(|f| (f.at, f.end))
        .collect()
}
