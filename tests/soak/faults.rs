//! The fault injector: with its own seeded RNG it waits a random gap, then picks a fault: kill -9
//! of a stdio server's process (pid from `GetStatus`; sometimes again for the process started
//! in its place, during its handshake), SIGSTOP and a SIGCONT after a random pause, an HTTP
//! test server stopped and started again on the same port after 0–3 s (a dual-era one maybe
//! speaking another era then), a `Reconnect` or a `RemoveServer` + `AddServer` of any server
//! (subscribed again once added), one of the HTTP test server's fault switches (sessions
//! forgotten, an SSE answer cut before its response, slow answers for a while, listen streams
//! cut), the authorization server's tokens expired or its token endpoint failing for a while,
//! or a server's actor panicking. Pauses and outages run in their own tasks, so faults overlap.
//! Every pid it sees is kept, for the "no process left" check.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::Addr;
use mcp_supervisor::{
    AddServer, GetStatus, InjectPanic, Reconnect, RemoveServer, Subscribe, Supervisor,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::Rng;

use super::common::http_server::{Era, SessionGone};
use super::common::oauth_server::{OAuthServer, TokenFault};
use super::history::*;
use super::http_slots::{restart_on, HttpSlot};

/// The usual mix of faults, in % (of the kinds this fleet has: without HTTP servers, OAuth or
/// a dual-era HTTP server, the others keep their proportions).
const MIX: [(FaultKind, u32); 13] = [
    (FaultKind::Kill9, 17),
    (FaultKind::KillInHandshake, 7),
    (FaultKind::Stop, 18),
    (FaultKind::HttpRestart, 11),
    (FaultKind::Reconnect, 7),
    (FaultKind::RemoveAdd, 4),
    (FaultKind::ForgetSessions, 6),
    (FaultKind::DropSse, 6),
    (FaultKind::HttpSlow, 6),
    (FaultKind::TokenExpiry, 6),
    (FaultKind::TokenFail, 3),
    (FaultKind::EraChange, 4),
    (FaultKind::CutListens, 5),
];

/// What the injector needs.
pub struct Injector {
    pub sup: Addr<Supervisor>,
    pub stdio: Vec<String>,
    /// Every server, for `Reconnect`.
    pub all: Vec<String>,
    /// Their configurations, to add a removed server again.
    pub configs: HashMap<String, mcp_supervisor::ServerConfig>,
    /// The resource each server's subscription is to, to subscribe again after `AddServer`.
    pub resources: HashMap<String, String>,
    /// Where the demo servers' event logs are (their `start pid=` lines).
    pub dir: std::path::PathBuf,
    pub http: Vec<Rc<RefCell<HttpSlot>>>,
    pub oauth: Option<Rc<OAuthServer>>,
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
    /// API calls of the injector (`RemoveServer`, `AddServer`, `Subscribe`) that did not answer
    /// `Ok`.
    pub api_errors: Vec<String>,
}

/// A fault that was injected, to be recorded: `end` is taken when it is recorded.
struct Done {
    kind: FaultKind,
    target: String,
    pid: Option<u32>,
    at: Duration,
    pause: Duration,
    note: String,
}

impl Done {
    fn new(kind: FaultKind, target: impl Into<String>, at: Duration) -> Done {
        Done {
            kind,
            target: target.into(),
            pid: None,
            at,
            pause: Duration::ZERO,
            note: String::new(),
        }
    }

    fn pid(self, pid: Option<u32>) -> Done {
        Done { pid, ..self }
    }

    fn pause(self, pause: Duration) -> Done {
        Done { pause, ..self }
    }

    fn note(self, note: String) -> Done {
        Done { note, ..self }
    }

    fn record(self, into: &RefCell<Injected>, t0: Instant) {
        into.borrow_mut().faults.push(FaultRecord {
            kind: self.kind,
            target: self.target,
            pid: self.pid,
            at: self.at,
            pause: self.pause,
            note: self.note,
            end: Instant::now() - t0,
        });
    }
}

impl Injector {
    /// Injects faults until `until`, then waits for the pauses and outages still running.
    pub async fn run(mut self) -> Injected {
        let done = Rc::new(RefCell::new(Injected::default()));
        let stopped: Rc<RefCell<BTreeSet<String>>> = Rc::default();
        let removing: Rc<RefCell<BTreeSet<String>>> = Rc::default();
        let mut running = Vec::new();
        let t0 = self.t0;
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
            let next_era = [Era::Legacy, Era::Modern, Era::Dual][self.rng.random_range(0..3)];
            let at = Instant::now() - t0;
            let skip = || done.borrow_mut().skipped += 1;
            match kind {
                FaultKind::Kill9 | FaultKind::Stop => {
                    let pid = self.pid_of(&stdio, &done).await;
                    let busy = stopped.borrow().contains(&stdio);
                    let Some(pid) = pid.filter(|_| kind == FaultKind::Kill9 || !busy) else {
                        skip();
                        continue;
                    };
                    if kind == FaultKind::Kill9 {
                        signal(pid, Signal::SIGKILL);
                        Done::new(kind, stdio, at).pid(Some(pid)).record(&done, t0);
                        continue;
                    }
                    signal(pid, Signal::SIGSTOP);
                    stopped.borrow_mut().insert(stdio.clone());
                    let (done, stopped) = (done.clone(), stopped.clone());
                    running.push(actix::spawn(async move {
                        tokio::time::sleep(pause).await;
                        // It may have been killed meanwhile (a failed ping): then this is a
                        // no-op on a zombie or a dead pid.
                        signal(pid, Signal::SIGCONT);
                        stopped.borrow_mut().remove(&stdio);
                        let fault = Done::new(kind, stdio, at).pid(Some(pid)).pause(pause);
                        fault.record(&done, t0);
                    }));
                }
                FaultKind::HttpRestart | FaultKind::EraChange => {
                    let slot = match kind {
                        FaultKind::HttpRestart => self.http.get(http).cloned(),
                        _ => {
                            let changing: Vec<_> = self
                                .http
                                .iter()
                                .filter(|s| s.borrow().profile.era_changes)
                                .cloned()
                                .collect();
                            changing.get(http % changing.len().max(1)).cloned()
                        }
                    };
                    let server = slot.as_ref().and_then(|s| s.borrow_mut().running.take());
                    let (Some(slot), Some(server)) = (slot, server) else {
                        skip();
                        continue;
                    };
                    let era = match kind {
                        FaultKind::EraChange => next_era,
                        _ => slot.borrow().era,
                    };
                    let done = done.clone();
                    running.push(actix::spawn(async move {
                        server.stop().await;
                        tokio::time::sleep(down).await;
                        let (port, profile) = {
                            let slot = slot.borrow();
                            (slot.port, slot.profile.clone())
                        };
                        let server = restart_on(port, era, &profile).await;
                        let name = {
                            let mut slot = slot.borrow_mut();
                            slot.instances.push(server.stats());
                            slot.running = Some(server);
                            slot.era = era;
                            slot.name.clone()
                        };
                        let fault = Done::new(kind, name, at).pause(down);
                        fault.note(format!("{era:?}")).record(&done, t0);
                    }));
                }
                FaultKind::Reconnect => {
                    let _ = self
                        .sup
                        .send(Reconnect {
                            server: any.clone(),
                        })
                        .await;
                    Done::new(kind, any, at).record(&done, t0);
                }
                FaultKind::KillInHandshake => {
                    let Some(pid) = self.pid_of(&stdio, &done).await else {
                        skip();
                        continue;
                    };
                    let done = done.clone();
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
                        done.borrow_mut().pids.insert(next);
                        let fault = Done::new(kind, stdio, at).pid(Some(next));
                        fault.pause(after_start).record(&done, t0);
                    }));
                }
                FaultKind::RemoveAdd => {
                    let config = self.configs.get(&any).cloned();
                    let Some(config) = config.filter(|_| !removing.borrow().contains(&any)) else {
                        skip();
                        continue;
                    };
                    removing.borrow_mut().insert(any.clone());
                    let pid = self.pid_of(&any, &done).await;
                    let resource = self.resources.get(&any).cloned();
                    let (sup, done, removing) = (self.sup.clone(), done.clone(), removing.clone());
                    running.push(actix::spawn(async move {
                        let removed = sup.send(RemoveServer(any.clone())).await;
                        let added = sup.send(AddServer(config)).await;
                        // A server added again is a new one: the application subscribes again.
                        let subscribed = match resource {
                            Some(uri) => Some(
                                sup.send(Subscribe {
                                    server: any.clone(),
                                    uri,
                                })
                                .await,
                            ),
                            None => None,
                        };
                        removing.borrow_mut().remove(&any);
                        let fine = matches!((&removed, &added), (Ok(Ok(())), Ok(Ok(()))))
                            && subscribed.as_ref().is_none_or(|s| matches!(s, Ok(Ok(()))));
                        if !fine {
                            done.borrow_mut().api_errors.push(format!(
                                "removing {any} and adding it again: {removed:?}, then {added:?}, \
                                 then subscribing: {subscribed:?}"
                            ));
                        }
                        Done::new(kind, any, at).pid(pid).record(&done, t0);
                    }));
                }
                FaultKind::HttpSlow => {
                    let Some(slot) = self.http.get(http).cloned() else {
                        skip();
                        continue;
                    };
                    let Some(faults) = slot.borrow().running.as_ref().map(|s| s.faults()) else {
                        skip();
                        continue;
                    };
                    faults.delay_ms(delay);
                    let done = done.clone();
                    running.push(actix::spawn(async move {
                        tokio::time::sleep(pause).await;
                        // (On the instance that was slowed: a restart meanwhile has a new one.)
                        faults.delay_ms(0);
                        let target = slot.borrow().name.clone();
                        Done::new(kind, target, at).pause(pause).record(&done, t0);
                    }));
                }
                FaultKind::ActorPanic => {
                    self.sup.do_send(InjectPanic {
                        server: any.clone(),
                    });
                    Done::new(kind, any, at).record(&done, t0);
                }
                FaultKind::ForgetSessions | FaultKind::DropSse | FaultKind::CutListens => {
                    let Some(slot) = self.http.get(http) else {
                        skip();
                        continue;
                    };
                    let slot = slot.borrow();
                    let Some(server) = &slot.running else {
                        drop(slot);
                        skip();
                        continue;
                    };
                    match kind {
                        FaultKind::ForgetSessions => {
                            let answer = if not_found {
                                SessionGone::NotFound
                            } else {
                                SessionGone::BadRequest
                            };
                            server.faults().forget_sessions(answer);
                        }
                        FaultKind::DropSse => server.faults().drop_sse_after(Some(events)),
                        _ => server.faults().cut_listens(),
                    }
                    Done::new(kind, slot.name.clone(), at).record(&done, t0);
                }
                FaultKind::TokenExpiry => {
                    let Some(oauth) = &self.oauth else {
                        skip();
                        continue;
                    };
                    oauth.expire_access_tokens();
                    Done::new(kind, "oauth", at).record(&done, t0);
                }
                FaultKind::TokenFail => {
                    let Some(oauth) = self.oauth.clone() else {
                        skip();
                        continue;
                    };
                    oauth.token_fault("client_credentials", Some(TokenFault::ServerError));
                    let done = done.clone();
                    running.push(actix::spawn(async move {
                        tokio::time::sleep(pause).await;
                        // (Overlapping failures end with the first of them.)
                        oauth.token_fault("client_credentials", None);
                        Done::new(kind, "oauth", at).pause(pause).record(&done, t0);
                    }));
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

    /// The kinds this fleet can have, weighted as [`MIX`] says.
    fn mix(&self) -> Vec<(FaultKind, u32)> {
        let http = !self.http.is_empty();
        let oauth = self.oauth.is_some();
        let changing = self.http.iter().any(|s| s.borrow().profile.era_changes);
        MIX.into_iter()
            .filter(|(kind, _)| match kind {
                FaultKind::HttpRestart
                | FaultKind::ForgetSessions
                | FaultKind::DropSse
                | FaultKind::HttpSlow
                | FaultKind::CutListens => http,
                FaultKind::TokenExpiry | FaultKind::TokenFail => oauth,
                FaultKind::EraChange => changing,
                _ => true,
            })
            .collect()
    }

    /// A kind from the mix (or from `MCP_SOAK_FAULTS`), or a panic, `MCP_SOAK_PANICS` % of
    /// the time.
    fn pick_kind(&mut self) -> FaultKind {
        let roll = self.rng.random_range(0..100);
        let panic = self.rng.random_range(0..100) < self.panic_percent;
        if let Some(only) = self.only.as_ref().filter(|o| !o.is_empty()) {
            return only[roll as usize % only.len()];
        }
        if panic {
            return FaultKind::ActorPanic;
        }
        let mix = self.mix();
        let total: u32 = mix.iter().map(|(_, w)| w).sum();
        let mut at = roll * total / 100;
        for (kind, weight) in mix {
            if at < weight {
                return kind;
            }
            at -= weight;
        }
        FaultKind::Kill9
    }

    /// The server's current pid, if it has a process now.
    async fn pid_of(&self, server: &str, done: &RefCell<Injected>) -> Option<u32> {
        let status = self.sup.send(GetStatus::server(server)).await.ok()?.ok()?;
        let pid = status.first()?.pid?;
        done.borrow_mut().pids.insert(pid);
        Some(pid)
    }
}

/// Makes the panics the soak injects print one line instead of the default hook's report.
/// With `RUST_BACKTRACE` set, the default hook symbolizes a backtrace on the panicking thread
/// — the actix thread, for an actor — which takes it a few hundred milliseconds in a debug
/// build: a stall of the test's making, which the checker would see in every call it delays.
/// Every other panic still gets the default report.
pub fn quiet_injected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("InjectPanic:") {
            eprintln!("soak: {message}");
        } else {
            default(info);
        }
    }));
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
