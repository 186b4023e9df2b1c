//! The last phase: `Shutdown` under load. Every server has calls in flight (a `counter` that
//! the demo server has counted but not yet answered, a `slow`), one stdio server is stopped
//! with SIGSTOP so it cannot react to its stdin closing, and more calls are made once
//! `Shutdown` is on its way. The promises: `Shutdown` answers within its bound (and, checked by
//! the caller, with no process left); every call is answered by its deadline; a call that ran
//! is never answered as if it had not (`stopped`); a call made after `Shutdown` is refused.

use std::path::Path;
use std::time::{Duration, Instant};

use actix::{Addr, Recipient};
use mcp_supervisor::{Progress, RetryPolicy, Shutdown, Supervisor};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::Rng;

use super::callers::{perform, Ask, Plan, Target};
use super::common;
use super::history::*;

/// The caller index of the phase's calls, in the records.
const CALLER: usize = 999;

/// What the phase saw.
pub struct Ending {
    pub calls: Vec<CallRecord>,
    pub shutdown_took: Option<Duration>,
    /// The server stopped with SIGSTOP before `Shutdown`, and its pid.
    pub stopped: Option<(String, u32)>,
}

pub struct ShutdownPhase<'a> {
    pub sup: Addr<Supervisor>,
    pub targets: &'a [Target],
    pub dir: &'a Path,
    pub rng: StdRng,
    pub t0: Instant,
    pub progress: Recipient<Progress>,
    pub bound: Duration,
}

impl ShutdownPhase<'_> {
    pub async fn run(mut self) -> Ending {
        let counted = |name: &str| {
            common::event_log(self.dir, name)
                .iter()
                .filter(|l| l.starts_with("counter "))
                .count()
        };
        let mut seq = 0;
        let mut plan = |rng: &mut StdRng, target: &Target, ask: Ask| {
            seq += 1;
            Plan {
                id: (CALLER as u64) << 32 | seq,
                caller: CALLER,
                target: target.clone(),
                ask,
                timeout: Duration::from_secs(5),
                retry: RetryPolicy::IfIdempotent,
                direct: rng.random_bool(0.5),
            }
        };

        // Calls in flight: a counter that waits 3 s after counting, and a slow call.
        let mut at_shutdown = Vec::new();
        let mut marks = Vec::new();
        for target in self.targets {
            if target.kind == Kind::Stdio {
                marks.push((
                    target.name.clone(),
                    counted(&target.name),
                    at_shutdown.len(),
                ));
            }
            for ask in [
                Ask::Counter { delay_ms: 3000 },
                Ask::Slow {
                    seconds: 3.0,
                    steps: 3,
                    max_total: None,
                },
            ] {
                let p = plan(&mut self.rng, target, ask);
                let (sup, progress, t0) = (self.sup.clone(), self.progress.clone(), self.t0);
                at_shutdown.push(actix::spawn(async move {
                    perform(&sup, p, &progress, t0).await
                }));
            }
        }
        // Wait (bounded) until each demo server has counted its call: then it is known to run.
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline
            && marks.iter().any(|(name, mark, _)| counted(name) <= *mark)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let known: Vec<usize> = marks
            .iter()
            .filter(|(name, mark, _)| counted(name) > *mark)
            .map(|(_, _, index)| *index)
            .collect();

        // One stdio server cannot react: SIGSTOP.
        let stdio: Vec<&Target> = self
            .targets
            .iter()
            .filter(|t| t.kind == Kind::Stdio)
            .collect();
        let victim = stdio[self.rng.random_range(0..stdio.len())].name.clone();
        let mut stopped = None;
        if let Some(pid) = common::status(&self.sup, &victim).await.pid {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGSTOP);
            stopped = Some((victim, pid));
        }

        let shutdown_from = Instant::now();
        let shutdown = actix::spawn(self.sup.send(Shutdown));
        // Calls made once `Shutdown` is on its way.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut after = Vec::new();
        for target in self.targets {
            let p = plan(&mut self.rng, target, Ask::Ping);
            let (sup, progress, t0) = (self.sup.clone(), self.progress.clone(), self.t0);
            after.push(actix::spawn(async move {
                perform(&sup, p, &progress, t0).await
            }));
        }
        let shutdown_took = match tokio::time::timeout(self.bound, shutdown).await {
            Ok(_) => Some(shutdown_from.elapsed()),
            Err(_) => None,
        };

        let mut calls = Vec::new();
        for (index, task) in at_shutdown.into_iter().enumerate() {
            if let Ok(mut record) = task.await {
                record.phase = Phase::AtShutdown;
                record.known_to_run = known.contains(&index);
                calls.push(record);
            }
        }
        for task in after {
            if let Ok(mut record) = task.await {
                record.phase = Phase::AfterShutdown;
                calls.push(record);
            }
        }
        Ending {
            calls,
            shutdown_took,
            stopped,
        }
    }
}
