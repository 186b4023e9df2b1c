//! What a run prints: its figures (calls, outcomes, faults, lateness, counter executions,
//! availability, recovery, shutdown), every fault in order, and every broken promise.

use std::time::Duration;

use super::checker::{Figures, Violation};
use super::history::*;

/// The figures of a run: `seed` and `secs` as the soak ran, `slack` as the checker used it,
/// `took` from the start of the calls to the end of the recovery.
pub fn figures(
    seed: u64,
    secs: u64,
    slack: Duration,
    facts: &Facts,
    figures: &Figures,
    took: Duration,
) {
    let rate = figures.calls as f64 / secs.max(1) as f64;
    println!(
        "soak: seed {}; {} s of calls and faults; the faults over and every server Ready again at {:.1} s",
        seed,
        secs,
        took.as_secs_f64()
    );
    println!("  calls: {} ({rate:.0}/s)", figures.calls);
    let join = |m: &std::collections::BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("    by method: {}", join(&figures.by_method));
    println!(
        "    by server: {}",
        figures
            .by_server
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  outcomes: {}", join(&figures.outcomes));
    println!(
        "    requests dropped (mailbox) before Shutdown: {} (excused only for a direct call whose actor was removed or panicked)",
        figures.dropped_before_shutdown
    );
    for method in Method::ALL {
        let line: Vec<String> = figures
            .outcomes_by_method
            .iter()
            .filter(|((m, _), _)| *m == method.name())
            .map(|((_, o), n)| format!("{o} {n}"))
            .collect();
        println!("    {}: {}", method.name(), line.join(", "));
    }
    println!(
        "  faults: {} ({} skipped: no process at that moment, or already stopped/down)",
        join(&figures.faults),
        facts.faults_skipped
    );
    println!(
        "  lateness after the bound: max {:.1} ms (slack {} ms), p99 of timeouts {:.1} ms",
        figures.max_lateness_ms,
        slack.as_millis(),
        figures.p99_timeout_lateness_ms
    );
    if let Some(call) = &figures.max_lateness_call {
        println!("    latest: {call}");
    }
    println!("  counter: executions vs acknowledged (ok) vs in doubt (timeout, outcome_unknown) vs answered as not run:");
    for server in &facts.servers {
        let book = figures
            .counters
            .get(&server.name)
            .cloned()
            .unwrap_or_default();
        let file = server
            .counter_file
            .map(|f| format!(", counter file {f}"))
            .unwrap_or_default();
        println!(
            "    {}: {} executions, {} ok, {} in doubt, {} not run{file}",
            server.name, book.executions, book.acknowledged, book.in_doubt, book.not_run
        );
    }
    println!("  echo, slow and confirm: runs on the server vs ok answers vs most sends the calls' policies allow:");
    for ((server, tool), (runs, ok, most)) in &figures.runs {
        if *most == 0 && *runs == 0 {
            continue;
        }
        println!("    {server} {tool}: {runs} runs, {ok} ok, at most {most}");
    }
    println!("  servers (Ready share of the soak and of the time the server could answer, outages, supervisor's reconnects / re-sent calls / unknown responses):");
    for s in &facts.servers {
        println!(
            "    {} ({:?}, {}): {:.1} % Ready ({:.1} % while up), {} outages, {} reconnects, {} re-sent, {} unknown responses",
            s.name,
            s.kind,
            s.era,
            s.ready_fraction * 100.0,
            s.ready_while_up * 100.0,
            s.outages,
            s.reconnects,
            s.resent,
            s.unknown_responses
        );
    }
    println!(
        "  input: {} elicitations answered by the application's handler; input rounds the servers refused: {}",
        facts.inputs_answered,
        facts
            .servers
            .iter()
            .map(|s| format!("{} {}", s.name, s.refused_rounds))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  subscriptions: resources/updated that reached the application: {}",
        facts
            .servers
            .iter()
            .map(|s| format!("{} {}", s.name, s.updates))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(tokens) = facts.tokens_issued {
        println!(
            "  oauth: {tokens} access tokens issued; requests refused 401: {}",
            facts
                .servers
                .iter()
                .filter(|s| s.unauthorized > 0)
                .map(|s| format!("{} {}", s.name, s.unauthorized))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let worst = |stalls: &[Stall]| {
        stalls
            .iter()
            .map(|s| s.len)
            .max()
            .unwrap_or_default()
            .as_millis()
    };
    println!(
        "  stalls over 40 ms: actix thread {} (worst {} ms), whole process {} (worst {} ms); {} late answers excused by the latter; load {}",
        facts.loop_stalls.len(),
        worst(&facts.loop_stalls),
        facts.machine_stalls.len(),
        worst(&facts.machine_stalls),
        figures.late_excused,
        facts.load
    );
    match facts.all_ready_after {
        Some(t) => println!(
            "  all Ready {:.0} ms after the last fault (bound {:?})",
            t.as_secs_f64() * 1e3,
            facts.ready_bound
        ),
        None => println!(
            "  NOT all Ready {:?} after the last fault: {}",
            facts.ready_bound,
            facts.not_ready.join(", ")
        ),
    }
    println!(
        "  calls in flight at Shutdown: {}; made after it: {}",
        join(&figures.at_shutdown),
        join(&figures.after_shutdown)
    );
    match facts.shutdown_took {
        Some(t) => println!(
            "  Shutdown (with calls in flight, {} SIGSTOPped) answered in {:.0} ms; {} server processes seen, {} left running",
            facts.stopped_at_shutdown.as_ref().map_or("none", |(name, _)| name.as_str()),
            t.as_secs_f64() * 1e3,
            facts.pids_seen,
            facts.left_running.len()
        ),
        None => println!(
            "  Shutdown did NOT answer within {:?}",
            facts.shutdown_bound
        ),
    }
}

/// The fleet, one server a line.
pub fn fleet(targets: &[super::callers::Target]) {
    for t in targets {
        let mut traits = vec![format!("{:?}", t.kind), t.era.to_owned()];
        for (on, what) in [
            (t.trusted, "trusted"),
            (t.mrtr, "confirm"),
            (t.oauth, "oauth"),
        ] {
            if on {
                traits.push(what.to_owned());
            }
        }
        println!(
            "  {}: {}, subscribed to {}",
            t.name,
            traits.join(", "),
            t.resource
        );
    }
}

/// Every broken promise, grouped, the first ten of each in full.
pub fn violations(violations: &[Violation]) {
    if violations.is_empty() {
        println!("  no broken promise");
        return;
    }
    let mut by_promise: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for v in violations {
        by_promise.entry(v.promise).or_default().push(&v.detail);
    }
    println!("  BROKEN PROMISES: {}", violations.len());
    for (promise, details) in by_promise {
        println!("    {promise}: {} times", details.len());
        for d in details.iter().take(10) {
            println!("      {d}");
        }
        if details.len() > 10 {
            println!("      … and {} more", details.len() - 10);
        }
    }
}

/// Every fault in the order it began, to read a violation against.
pub fn faults(faults: &[FaultRecord]) {
    let mut faults: Vec<&FaultRecord> = faults.iter().collect();
    faults.sort_by_key(|f| f.at);
    println!("  faults, in order:");
    for f in faults {
        println!(
            "    {:>8.3}s .. {:>8.3}s {} {} pid {:?} pause {} ms {}",
            f.at.as_secs_f64(),
            f.end.as_secs_f64(),
            f.kind.name(),
            f.target,
            f.pid,
            f.pause.as_millis(),
            f.note
        );
    }
}
