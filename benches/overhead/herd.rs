//! The reconnect herd: a fleet is Ready, the test server forgets every session, every client
//! notices (its GET stream ends, the next request gets 404) and initializes a new one. We
//! count initialize POSTs per 100 ms window (on the server's side, [`InitializeCounter`]) and
//! time until all are Ready again ([`herd`], on the client's); jitter on or off is the
//! fleet's settings. Also the herd's rows and keys in the scale section of the report.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

use crate::http_server;
use crate::procfs::cpu_ms;
use crate::report::{num, Report};
use crate::server_process::ServerProcess;
use crate::watcher::{Board, Watcher};

/// What one herd did.
pub(crate) struct Herd {
    /// The most initialize POSTs in any 100 ms window.
    pub(crate) peak: f64,
    /// All initialize POSTs since the sessions were forgotten.
    pub(crate) total: f64,
    /// Sessions forgotten → all Ready again (or the 90 s limit).
    pub(crate) again_ms: f64,
    /// Whether all were Ready again within the limit.
    pub(crate) all_ready: bool,
    /// CPU used meanwhile, by this process and by the test server's.
    pub(crate) client_cpu_ms: f64,
    pub(crate) server_cpu_ms: f64,
}

impl Herd {
    /// Sessions forgotten → all Ready again; NaN if they were not.
    pub(crate) fn all_ready_again_ms(&self) -> f64 {
        if self.all_ready {
            self.again_ms
        } else {
            f64::NAN
        }
    }
}

/// Sets off the herd on the `n` Ready servers named `prefix...` and waits until every one has
/// been Ready again.
pub(crate) async fn herd(
    n: usize,
    prefix: &str,
    board: &Rc<RefCell<Board>>,
    changed: &Rc<Notify>,
    server: &mut ServerProcess,
) -> Herd {
    let before = board
        .borrow()
        .ready_events
        .get(prefix)
        .copied()
        .unwrap_or(0);
    let ack = server.command("forget").await;
    assert_eq!(ack, "ok", "the server process forgot its sessions");
    let forgot = Instant::now();
    let (client_cpu1, server_cpu1) = (cpu_ms("self"), server.cpu_ms());
    let ok = Watcher::until(board, changed, Duration::from_secs(90), |b| {
        b.ready_events.get(prefix).copied().unwrap_or(0) - before >= n && b.ready_count(prefix) >= n
    })
    .await;
    let again_ms = forgot.elapsed().as_secs_f64() * 1e3;
    let herd_client_cpu_ms = cpu_ms("self") - client_cpu1;
    let herd_server_cpu_ms = server.cpu_ms() - server_cpu1;
    if !ok {
        eprintln!("  herd ({prefix}): not all Ready again within 90 s");
    }
    // Let late attempts arrive, then read the counts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let herd = server.command("herd").await;
    let mut parts = herd
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().unwrap_or(f64::NAN));
    let (herd_peak, herd_total) = (
        parts.next().unwrap_or(f64::NAN),
        parts.next().unwrap_or(f64::NAN),
    );
    Herd {
        peak: herd_peak,
        total: herd_total,
        again_ms,
        all_ready: ok,
        client_cpu_ms: herd_client_cpu_ms,
        server_cpu_ms: herd_server_cpu_ms,
    }
}

/// On the test server's side: the count of initialize POSTs, sampled every 2 ms from
/// [`start`](Self::start) until [`finish`](Self::finish).
#[derive(Default)]
pub(crate) struct InitializeCounter {
    /// (ms since start, initialize POSTs since start).
    samples: Rc<RefCell<Vec<(f64, usize)>>>,
    sampling: Rc<Cell<bool>>,
}

impl InitializeCounter {
    pub(crate) fn start(&self, stats: &http_server::Stats) {
        let base = stats.posts("initialize");
        self.samples.borrow_mut().clear();
        self.sampling.set(true);
        let (samples, sampling, stats) =
            (self.samples.clone(), self.sampling.clone(), stats.clone());
        let t0 = Instant::now();
        tokio::task::spawn_local(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(2));
            // Bounded: at most two minutes of samples.
            while sampling.get() && t0.elapsed() < Duration::from_secs(120) {
                tick.tick().await;
                let n = stats.posts("initialize") - base;
                samples
                    .borrow_mut()
                    .push((t0.elapsed().as_secs_f64() * 1e3, n));
            }
        });
    }

    /// Stops sampling: the most POSTs in any 100 ms window, and the total.
    pub(crate) fn finish(&self) -> (usize, usize) {
        self.sampling.set(false);
        let samples = self.samples.borrow();
        let mut peak = 0;
        let mut j = 0;
        for (i, (t, c)) in samples.iter().enumerate() {
            j = j.max(i);
            while j + 1 < samples.len() && samples[j + 1].0 <= t + 100.0 {
                j += 1;
            }
            peak = peak.max(samples[j].1 - c);
        }
        let total = samples.last().map_or(0, |s| s.1);
        (peak, total)
    }
}

/// The herd's figures in the scale child's result, for the scale section of the report.
pub(crate) struct Figures {
    peak_jitter: f64,
    peak_no_jitter: f64,
    again_jitter: f64,
    again_no_jitter: f64,
}

impl Figures {
    pub(crate) fn of(scale: &Value) -> Self {
        Figures {
            peak_jitter: num(scale, "herd_peak_jitter"),
            peak_no_jitter: num(scale, "herd_peak_no_jitter"),
            again_jitter: num(scale, "herd_all_ready_ms_jitter"),
            again_no_jitter: num(scale, "herd_all_ready_ms_no_jitter"),
        }
    }

    /// The herd's rows of the scale table.
    pub(crate) fn rows(&self) -> [(String, String); 2] {
        let (peak_j, peak_n) = (self.peak_jitter, self.peak_no_jitter);
        let (again_j, again_n) = (self.again_jitter, self.again_no_jitter);
        [
            (
                "herd: most initialize POSTs in 100 ms, jitter on / off".to_owned(),
                format!("{peak_j:.0} / {peak_n:.0} ({:.2}×)", peak_j / peak_n),
            ),
            (
                "herd: sessions forgotten → all Ready again, jitter on / off".to_owned(),
                format!("{again_j:.0} ms / {again_n:.0} ms"),
            ),
        ]
    }

    /// The herd's summary keys.
    pub(crate) fn summarize(&self, report: &mut Report) {
        report.put("herd_peak_jitter", self.peak_jitter, 0);
        report.put("herd_peak_no_jitter", self.peak_no_jitter, 0);
        report.put(
            "herd_peak_ratio_jitter_vs_none",
            self.peak_jitter / self.peak_no_jitter,
            3,
        );
        report.put("herd_all_ready_ms", self.again_jitter, 1);
        report.put("herd_all_ready_ms_no_jitter", self.again_no_jitter, 1);
    }
}
