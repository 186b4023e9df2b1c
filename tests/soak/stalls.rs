//! Stall monitors: two heartbeats that should tick every 10 ms, one a task on the actix thread
//! (where the supervisor, its actors and the callers run) and one a plain OS thread that shares
//! nothing with them. A late answer while the actix heartbeat stalled means that thread was
//! busy or blocked; if the OS thread stalled at the same time, the whole process was not
//! scheduled (a busy machine), which is no fault of the code under test: the checker excuses a
//! lateness that such machine stalls account for, and says so.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(10);
/// A gap longer than the tick by this much is a stall.
const STALL: Duration = Duration::from_millis(40);

/// A stall: when it began (since the soak's start) and how long past the tick it lasted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    pub at: Duration,
    pub len: Duration,
}

/// Both heartbeats; [`Monitors::stop`] ends them and hands over what they saw.
pub struct Monitors {
    running: Arc<AtomicBool>,
    actix: Rc<RefCell<Vec<Stall>>>,
    thread: Arc<Mutex<Vec<Stall>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

fn beat(t0: Instant, last: &mut Instant, stalls: &mut Vec<Stall>) {
    let now = Instant::now();
    let gap = now - *last;
    if gap > TICK + STALL {
        stalls.push(Stall {
            at: *last + TICK - t0,
            len: gap - TICK,
        });
    }
    *last = now;
}

impl Monitors {
    /// Starts both heartbeats; times are counted from `t0`.
    pub fn start(t0: Instant) -> Monitors {
        let running = Arc::new(AtomicBool::new(true));
        let actix: Rc<RefCell<Vec<Stall>>> = Rc::default();
        let thread: Arc<Mutex<Vec<Stall>>> = Arc::default();
        {
            let (running, stalls) = (running.clone(), actix.clone());
            actix::spawn(async move {
                let mut last = Instant::now();
                while running.load(Ordering::Relaxed) {
                    tokio::time::sleep(TICK).await;
                    beat(t0, &mut last, &mut stalls.borrow_mut());
                }
            });
        }
        let handle = {
            let (running, stalls) = (running.clone(), thread.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while running.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    let mut stalls = stalls.lock().unwrap_or_else(|e| e.into_inner());
                    beat(t0, &mut last, &mut stalls);
                }
            })
        };
        Monitors {
            running,
            actix,
            thread,
            handle: Some(handle),
        }
    }

    /// Stops both; the stalls of the actix thread and of the OS thread.
    pub fn stop(mut self) -> (Vec<Stall>, Vec<Stall>) {
        self.running.store(false, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let actix = self.actix.borrow().clone();
        (actix, thread)
    }
}

/// How much of `from..to` the stalls cover.
pub fn stalled_within(stalls: &[Stall], from: Duration, to: Duration) -> Duration {
    stalls
        .iter()
        .map(|s| {
            let start = s.at.max(from);
            let end = (s.at + s.len).min(to);
            end.saturating_sub(start)
        })
        .sum()
}

/// The machine's load averages, for the printout.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}
