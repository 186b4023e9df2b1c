//! The sizes of a run: how many repetitions, calls and servers a quick and a full run use.
//! Apart from the orchestration, so that the numbers a reader tunes are in one place.

/// What to measure, and how much of it.
pub(crate) struct Plan {
    pub(crate) quick: bool,
    pub(crate) pin: bool,
    pub(crate) reps: usize,
    pub(crate) warmup: usize,
    pub(crate) serial: usize,
    pub(crate) concurrent: usize,
    pub(crate) kills: usize,
    pub(crate) http_reps: usize,
    pub(crate) http_serial: usize,
    pub(crate) scale: usize,
    /// Concurrent tasks, each completing after `task_ms` and polled every `task_poll_ms`.
    pub(crate) tasks: usize,
    pub(crate) task_ms: u64,
    pub(crate) task_poll_ms: u64,
    /// The fleet (feature `postgres`, read only then): kills of a replica holding
    /// `fleet_kill_tasks` tasks, then `fleet_tasks` started by each of three replicas, and the
    /// database's load with them in flight over `fleet_window_ms`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fleet_kills: usize,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fleet_kill_tasks: usize,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fleet_tasks: usize,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fleet_window_ms: u64,
}

impl Plan {
    pub(crate) fn new(quick: bool, pin: bool) -> Self {
        if quick {
            Plan {
                quick,
                pin,
                reps: 2,
                warmup: 500,
                serial: 2_000,
                concurrent: 10_048,
                kills: 3,
                http_reps: 1,
                http_serial: 300,
                scale: 100,
                tasks: 200,
                task_ms: 500,
                task_poll_ms: 100,
                fleet_kills: 2,
                fleet_kill_tasks: 20,
                fleet_tasks: 100,
                fleet_window_ms: 3_000,
            }
        } else {
            Plan {
                quick,
                pin,
                reps: 5,
                warmup: 2_000,
                serial: 20_000,
                concurrent: 100_032, // a multiple of 64 callers
                kills: 20,
                http_reps: 3,
                http_serial: 5_000,
                scale: 1_000,
                tasks: 1_000,
                task_ms: 2_000,
                task_poll_ms: 200,
                fleet_kills: 5,
                fleet_kill_tasks: 100,
                fleet_tasks: 1_000,
                fleet_window_ms: 10_000,
            }
        }
    }
}
