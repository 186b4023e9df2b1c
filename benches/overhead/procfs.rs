//! What `/proc` says about a process and the machine: RSS, peak RSS, CPU time, and the line
//! that names the machine in the report. Linux only, like the benchmark.

/// A `Key: <number> kB` field of a `/proc` file such as `/proc/self/status`.
pub(crate) fn status_kb(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time (user + system, all threads) of a process so far, in ms (10 ms resolution).
pub(crate) fn cpu_ms(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the parenthesised command: state is #3, utime #14, stime #15.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(u), Some(s)) => (u + s) * 10.0, // USER_HZ is 100 on Linux
        _ => f64::NAN,
    }
}

/// CPU time of process `pid` (or `self`) so far, all threads, in ns
/// (`/proc/<pid>/task/*/schedstat`, whose first field is the thread's time on a CPU): fine
/// enough to divide by a few thousand calls, which the 10 ms ticks of [`cpu_ms`] are not. NaN
/// if unknown.
pub(crate) fn cpu_ns(pid: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return f64::NAN;
    };
    let mut total = 0.0;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        if let Some(ns) = stat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<f64>().ok())
        {
            total += ns;
        }
    }
    total
}

/// CPU time of this process so far, all threads, in ns (see [`cpu_ns`]).
pub(crate) fn cpu_ns_self() -> f64 {
    cpu_ns("self")
}

/// Write-like syscalls this process made so far (`syscw` of `/proc/self/io`): over stdio, the
/// client's writes to its server's stdin. NaN if unknown.
pub(crate) fn write_syscalls_self() -> f64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("syscw:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(f64::NAN)
}

/// This process's resident set now, in KiB.
pub(crate) fn rss_kb() -> u64 {
    status_kb("/proc/self/status", "VmRSS:").expect("VmRSS in /proc/self/status")
}

/// This process's peak resident set (`VmHWM`) so far, in KiB; 0 if unknown.
pub(crate) fn peak_rss_kb() -> u64 {
    status_kb("/proc/self/status", "VmHWM:").unwrap_or(0)
}

/// Cores, CPU model, memory and kernel, for the report's first and last lines.
pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let mem_gib = status_kb("/proc/meminfo", "MemTotal:").unwrap_or(0) as f64 / 1024.0 / 1024.0;
    format!("{cores} × {cpu}, {mem_gib:.0} GiB, Linux {kernel}")
}
