//! The fault injector: with its own seeded RNG it waits a random gap, then picks a fault: kill -9
//! of a stdio server's process (pid from `GetStatus`; sometimes again for the process started
//! in its place, during its handshake), SIGSTOP and a SIGCONT after a random
//! pause, the HTTP test server stopped and started again on the same port after 0–3 s, a
//! `Reconnect` or a `RemoveServer` + `AddServer` of any server, or one of the HTTP test
//! server's fault switches (sessions forgotten, an SSE answer cut before its response, slow
//! answers for a while). Pauses and outages run in their own
//! tasks, so faults overlap. Every pid it sees is kept, for
//! the "no process left" check.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::Addr;
use futures_util::FutureExt;
use mcp_supervisor::{AddServer, GetStatus, InjectPanic, Reconnect, RemoveServer, Supervisor};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::Rng;

use super::common::http_server::{SessionGone, Stats, TestHttpServer};
use super::history::*;

/// One HTTP test server: the instance running now (none while it is down), and the statistics
/// of every instance it has had, to count the executions of its `counter`.
pub struct HttpSlot {
    pub name: String,
    pub port: u16,
    pub running: Option<TestHttpServer>,
    pub instances: Vec<Stats>,
}

impl HttpSlot {
    pub async fn start(name: String) -> HttpSlot {
        let server = TestHttpServer::start().await;
        HttpSlot {
            name,
            port: server.port(),
            instances: vec![server.stats()],
            running: Some(server),
        }
    }

    /// Executions of `tool` over every instance.
    pub fn runs(&self, tool: &str) -> u64 {
        self.instances
            .iter()
            .map(|s| s.tool_calls(tool) as u64)
            .sum()
    }
}

/// Starts a test server on `port` again. The bind can fail for a moment (an outgoing connection
/// may hold the port); it is retried for up to 5 s.
async fn restart_on(port: u16) -> TestHttpServer {
    for _ in 0..50 {
        match std::panic::AssertUnwindSafe(TestHttpServer::start_on(port))
            .catch_unwind()
            .await
        {
            Ok(server) => return server,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("soak: cannot bind 127.0.0.1:{port} again within 5 s");
}

/// What the injector needs.
pub struct Injector {
    pub sup: Addr<Supervisor>,
    pub stdio: Vec<String>,
    /// Every server, for `Reconnect`.
    pub all: Vec<String>,
    /// Their configurations, to add a removed server again.
    pub configs: std::collections::HashMap<String, mcp_supervisor::ServerConfig>,
    /// Where the demo servers' event logs are (their `start pid=` lines).
    pub dir: std::path::PathBuf,
    pub http: Vec<Rc<RefCell<HttpSlot>>>,
    pub rng: StdRng,
    pub t0: Instant,
    pub until: Instant,
    /// Gaps between faults are drawn from this range.
    pub gap: std::ops::Range<Duration>,
    /// The share of faults (in %) that are actor panics instead.
    pub panic_percent: u32,
    /// Only these kinds, equally often (`MCP_SOAK_FAULTS`), instead of the usual mix.
    pub only: Option<Vec<FaultKind>>,
}

/// What the injector did.
#[derive(Default)]
pub struct Injected {
    pub faults: Vec<FaultRecord>,
    pub skipped: usize,
    pub pids: BTreeSet<u32>,
    /// API calls of the injector (`RemoveServer`, `AddServer`) that did not answer `Ok`.
    pub api_errors: Vec<String>,
}

impl Injector {
    /// Injects faults until `until`, then waits for the pauses and outages still running.
    pub async fn run(mut self) -> Injected {
        let done = Rc::new(RefCell::new(Injected::default()));
        let stopped: Rc<RefCell<BTreeSet<String>>> = Rc::default();
        let removing: Rc<RefCell<BTreeSet<String>>> = Rc::default();
        let mut running = Vec::new();
        loop {
            let gap = self.rng.random_range(self.gap.clone());
            let next = Instant::now() + gap;
            if next >= self.until {
                break;
            }
            tokio::time::sleep_until(next.into()).await;
            let kind = self.pick_kind();
            // Drawn now, whatever happens, so the sequence of choices depends on the seed only.
            let stdio = self.stdio[self.rng.random_range(0..self.stdio.len())].clone();
            let any = self.all[self.rng.random_range(0..self.all.len())].clone();
            let http = self.rng.random_range(0..self.http.len().max(1));
            let pause = Duration::from_millis(self.rng.random_range(20..2500));
            let down = Duration::from_millis(self.rng.random_range(0..3000));
            let not_found = self.rng.random_bool(0.5);
            let events = self.rng.random_range(1..=2);
            let after_start = Duration::from_millis(self.rng.random_range(0..30));
            let delay = self.rng.random_range(200..1500);
            let at = Instant::now() - self.t0;
            match kind {
                FaultKind::Kill9 | FaultKind::Stop => {
                    let pid = self.pid_of(&stdio, &done).await;
                    let busy = stopped.borrow().contains(&stdio);
                    let Some(pid) = pid.filter(|_| kind == FaultKind::Kill9 || !busy) else {
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    if kind == FaultKind::Kill9 {
                        signal(pid, Signal::SIGKILL);
                        done.borrow_mut().faults.push(FaultRecord {
                            kind,
                            target: stdio,
                            pid: Some(pid),
                            at,
                            pause: Duration::ZERO,
                            end: Instant::now() - self.t0,
                        });
                        continue;
                    }
                    signal(pid, Signal::SIGSTOP);
                    stopped.borrow_mut().insert(stdio.clone());
                    let (done, stopped, t0) = (done.clone(), stopped.clone(), self.t0);
                    running.push(actix::spawn(async move {
                        tokio::time::sleep(pause).await;
                        // It may have been killed meanwhile (a failed ping): then this is a
                        // no-op on a zombie or a dead pid.
                        signal(pid, Signal::SIGCONT);
                        stopped.borrow_mut().remove(&stdio);
                        done.borrow_mut().faults.push(FaultRecord {
                            kind,
                            target: stdio,
                            pid: Some(pid),
                            at,
                            pause,
                            end: Instant::now() - t0,
                        });
                    }));
                }
                FaultKind::HttpRestart => {
                    let slot = self.http[http].clone();
                    let Some(server) = slot.borrow_mut().running.take() else {
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    let (done, t0) = (done.clone(), self.t0);
                    running.push(actix::spawn(async move {
                        server.stop().await;
                        tokio::time::sleep(down).await;
                        let port = slot.borrow().port;
                        let server = restart_on(port).await;
                        let name = {
                            let mut slot = slot.borrow_mut();
                            slot.instances.push(server.stats());
                            slot.running = Some(server);
                            slot.name.clone()
                        };
                        done.borrow_mut().faults.push(FaultRecord {
                            kind,
                            target: name,
                            pid: None,
                            at,
                            pause: down,
                            end: Instant::now() - t0,
                        });
                    }));
                }
                FaultKind::Reconnect => {
                    let _ = self
                        .sup
                        .send(Reconnect {
                            server: any.clone(),
                        })
                        .await;
                    done.borrow_mut().faults.push(FaultRecord {
                        kind,
                        target: any,
                        pid: None,
                        at,
                        pause: Duration::ZERO,
                        end: Instant::now() - self.t0,
                    });
                }
                FaultKind::KillInHandshake => {
                    let Some(pid) = self.pid_of(&stdio, &done).await else {
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    let (done, t0) = (done.clone(), self.t0);
                    let log = self.dir.join(format!("{stdio}.log"));
                    let before = started(&log).len();
                    signal(pid, Signal::SIGKILL);
                    running.push(actix::spawn(async move {
                        // The process started in its place (bounded: it may not come soon).
                        let deadline = Instant::now() + Duration::from_secs(3);
                        let mut next = None;
                        while next.is_none() && Instant::now() < deadline {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            next = started(&log).get(before).copied();
                        }
                        let Some(next) = next else {
                            done.borrow_mut().skipped += 1;
                            return;
                        };
                        tokio::time::sleep(after_start).await;
                        signal(next, Signal::SIGKILL);
                        let mut done = done.borrow_mut();
                        done.pids.insert(next);
                        done.faults.push(FaultRecord {
                            kind,
                            target: stdio,
                            pid: Some(next),
                            at,
                            pause: after_start,
                            end: Instant::now() - t0,
                        });
                    }));
                }
                FaultKind::RemoveAdd => {
                    let config = self.configs.get(&any).cloned();
                    let Some(config) = config.filter(|_| !removing.borrow().contains(&any)) else {
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    removing.borrow_mut().insert(any.clone());
                    let pid = self.pid_of(&any, &done).await;
                    let (sup, done, removing, t0) =
                        (self.sup.clone(), done.clone(), removing.clone(), self.t0);
                    running.push(actix::spawn(async move {
                        let removed = sup.send(RemoveServer(any.clone())).await;
                        let added = sup.send(AddServer(config)).await;
                        removing.borrow_mut().remove(&any);
                        let mut done = done.borrow_mut();
                        if !matches!((&removed, &added), (Ok(Ok(())), Ok(Ok(())))) {
                            done.api_errors.push(format!(
                                "removing {any} and adding it again: {removed:?}, then {added:?}"
                            ));
                        }
                        done.faults.push(FaultRecord {
                            kind,
                            target: any,
                            pid,
                            at,
                            pause: Duration::ZERO,
                            end: Instant::now() - t0,
                        });
                    }));
                }
                FaultKind::HttpSlow => {
                    let slot = self.http[http].clone();
                    let Some(faults) = slot.borrow().running.as_ref().map(|s| s.faults()) else {
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    faults.delay_ms(delay);
                    let (done, t0) = (done.clone(), self.t0);
                    running.push(actix::spawn(async move {
                        tokio::time::sleep(pause).await;
                        // (On the instance that was slowed: a restart meanwhile has a new one.)
                        faults.delay_ms(0);
                        let target = slot.borrow().name.clone();
                        done.borrow_mut().faults.push(FaultRecord {
                            kind,
                            target,
                            pid: None,
                            at,
                            pause,
                            end: Instant::now() - t0,
                        });
                    }));
                }
                FaultKind::ActorPanic => {
                    self.sup.do_send(InjectPanic {
                        server: any.clone(),
                    });
                    done.borrow_mut().faults.push(FaultRecord {
                        kind,
                        target: any,
                        pid: None,
                        at,
                        pause: Duration::ZERO,
                        end: Instant::now() - self.t0,
                    });
                }
                FaultKind::ForgetSessions | FaultKind::DropSse => {
                    let slot = self.http[http].borrow();
                    let Some(server) = &slot.running else {
                        drop(slot);
                        done.borrow_mut().skipped += 1;
                        continue;
                    };
                    if kind == FaultKind::ForgetSessions {
                        let answer = if not_found {
                            SessionGone::NotFound
                        } else {
                            SessionGone::BadRequest
                        };
                        server.faults().forget_sessions(answer);
                    } else {
                        server.faults().drop_sse_after(Some(events));
                    }
                    done.borrow_mut().faults.push(FaultRecord {
                        kind,
                        target: slot.name.clone(),
                        pid: None,
                        at,
                        pause: Duration::ZERO,
                        end: Instant::now() - self.t0,
                    });
                }
            }
        }
        for task in running {
            let _ = task.await;
        }
        Rc::try_unwrap(done)
            .map(RefCell::into_inner)
            .unwrap_or_else(|_| panic!("every fault task has ended"))
    }

    /// kill -9 28 % (8 of them twice, the second in the handshake), SIGSTOP 22 %, HTTP restart
    /// 16 %, `Reconnect` 8 %, `RemoveServer` + `AddServer` 5 %, HTTP sessions forgotten 7 %, an
    /// HTTP SSE answer cut 7 %, slow HTTP answers 7 % (without HTTP servers, only the stdio
    /// faults and the API ones, in the same proportions).
    fn pick_kind(&mut self) -> FaultKind {
        let roll = self.rng.random_range(0..100);
        let panic = self.rng.random_range(0..100) < self.panic_percent;
        if let Some(only) = self.only.as_ref().filter(|o| !o.is_empty()) {
            return only[roll as usize % only.len()];
        }
        if panic {
            return FaultKind::ActorPanic;
        }
        if self.http.is_empty() {
            return match roll * 68 / 100 {
                0..22 => FaultKind::Kill9,
                22..30 => FaultKind::KillInHandshake,
                30..55 => FaultKind::Stop,
                55..63 => FaultKind::Reconnect,
                _ => FaultKind::RemoveAdd,
            };
        }
        match roll {
            0..20 => FaultKind::Kill9,
            20..28 => FaultKind::KillInHandshake,
            28..50 => FaultKind::Stop,
            50..66 => FaultKind::HttpRestart,
            66..74 => FaultKind::Reconnect,
            74..79 => FaultKind::RemoveAdd,
            79..86 => FaultKind::ForgetSessions,
            86..93 => FaultKind::DropSse,
            _ => FaultKind::HttpSlow,
        }
    }

    /// The server's current pid, if it has a process now.
    async fn pid_of(&self, server: &str, done: &RefCell<Injected>) -> Option<u32> {
        let status = self.sup.send(GetStatus::server(server)).await.ok()?.ok()?;
        let pid = status.first()?.pid?;
        done.borrow_mut().pids.insert(pid);
        Some(pid)
    }
}

/// The pids a demo server's event log says were started, in order.
pub fn started(log: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("start pid=")?.trim().parse().ok())
        .collect()
}

/// Sends `signal`; a process that is already gone is not an error here.
fn signal(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}
