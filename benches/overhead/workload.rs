//! The load every client is put under, whatever it is: warm-up, `n` calls one after the other
//! (latencies), then `total` calls by concurrent callers on this thread (throughput). A client
//! is only a `call` closure, so that all of them are measured the same way.

use std::future::Future;
use std::rc::Rc;
use std::time::Instant;

use crate::procfs::{cpu_ns_self, write_syscalls_self};

/// What one client did under a [`Load`]: latencies, throughput, and what each call cost the
/// client's process in CPU and in write syscalls, serially and with concurrent callers.
pub(crate) struct Measured {
    /// Serial latencies in µs, sorted.
    pub(crate) lat: Vec<f64>,
    /// Concurrent calls per second.
    pub(crate) tput: f64,
    pub(crate) serial: PerCall,
    pub(crate) concurrent: PerCall,
}

/// The client process's costs per call over one phase of the load.
pub(crate) struct PerCall {
    /// CPU time, all threads, in µs.
    pub(crate) cpu_us: f64,
    /// Write syscalls (over stdio: writes to the server's stdin).
    pub(crate) writes: f64,
}

/// Counters at the start of a phase.
struct Mark {
    cpu_ns: f64,
    writes: f64,
}

impl Mark {
    fn now() -> Mark {
        Mark {
            cpu_ns: cpu_ns_self(),
            writes: write_syscalls_self(),
        }
    }

    fn per_call(&self, calls: usize) -> PerCall {
        let now = Mark::now();
        let n = calls.max(1) as f64;
        PerCall {
            cpu_us: (now.cpu_ns - self.cpu_ns) / 1e3 / n,
            writes: (now.writes - self.writes) / n,
        }
    }
}

/// How much of each load a stdio client gets.
pub(crate) struct Load {
    /// Sequential calls measured.
    pub(crate) serial: usize,
    /// Calls measured in the concurrent run, shared by all callers.
    pub(crate) concurrent: usize,
    /// Concurrent callers.
    pub(crate) callers: usize,
    /// Calls made serially, and then concurrently, before anything is measured.
    pub(crate) warmup: usize,
}

impl Load {
    /// Warm-up, serial, concurrent: the same for every client.
    pub(crate) async fn run<F, Fut>(&self, call: F) -> Measured
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let call = Rc::new(call);
        serial(self.warmup, &*call).await;
        concurrent(self.warmup.max(self.callers), self.callers, call.clone()).await;
        let mark = Mark::now();
        let lat = serial(self.serial, &*call).await;
        let serial_costs = mark.per_call(self.serial);
        let mark = Mark::now();
        let tput = concurrent(self.concurrent, self.callers, call).await;
        let concurrent_costs = mark.per_call(self.concurrent / self.callers * self.callers);
        Measured {
            lat,
            tput,
            serial: serial_costs,
            concurrent: concurrent_costs,
        }
    }
}

/// `n` calls one after the other; latencies in µs, sorted.
pub(crate) async fn serial<F, Fut>(n: usize, call: &F) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call().await;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    lat.sort_by(f64::total_cmp);
    lat
}

/// `total` calls by `callers` concurrent tasks on this thread; calls per second.
async fn concurrent<F, Fut>(total: usize, callers: usize, call: Rc<F>) -> f64
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let per = total / callers;
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let call = call.clone();
            tokio::task::spawn_local(async move {
                for _ in 0..per {
                    call().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a concurrent caller panicked");
    }
    (per * callers) as f64 / start.elapsed().as_secs_f64()
}
