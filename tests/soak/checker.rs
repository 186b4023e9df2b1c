//! The checker: the promises of docs/calls.md, "Call semantics", judged over a recorded history.
//! It reports every violation (not only the first), so one run shows every broken promise, and
//! computes the figures the soak prints.
//!
//! The promises:
//! - every call is answered exactly once (the future resolves once by construction; what can go
//!   wrong is no answer, or a dropped request), no later than its bound plus the slack;
//! - a `timeout` is not answered before the timeout;
//! - every `ok` result is this call's own (an echo carries its own payload, a ping is `{}`, a
//!   tool list is a tool list, ...);
//! - no error a caller should never see (`stopped` without a shutdown, `invalid_connection`,
//!   `invalid_response` from our well-behaved servers, `rpc`, ...), and no `outcome_unknown`
//!   for a method that is safe by nature;
//! - no `counter` call ran twice, and none that was answered "not run": per server, the
//!   executions the server counted lie between the acknowledged calls and the acknowledged plus
//!   the in-doubt ones (`timeout`, `outcome_unknown`);
//! - `echo`, `slow` and `confirm` ran at most as often as their calls' policies allow sends,
//!   and at least as often as they were answered `ok`;
//! - after the faults stop, every server is Ready within the bound and answers, and its
//!   subscription still delivers;
//! - `Shutdown` answers within its bound and leaves no server process running.

use std::collections::BTreeMap;
use std::time::Duration;

use super::history::*;
use super::stalls::{stalled_within, Stall};

/// How long after an `InjectPanic` was sent the actor may take to panic.
const PANIC_LAG: Duration = Duration::from_secs(1);

/// One broken promise.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub promise: &'static str,
    pub detail: String,
}

/// `counter` bookkeeping for one server.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CounterBook {
    pub executions: u64,
    pub acknowledged: u64,
    pub in_doubt: u64,
    /// Counter calls answered otherwise (`unavailable`, `overloaded`, ...): must not have run.
    pub not_run: u64,
}

/// The figures of a run.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub calls: usize,
    pub by_method: BTreeMap<&'static str, usize>,
    pub by_server: BTreeMap<String, usize>,
    pub outcomes: BTreeMap<&'static str, usize>,
    pub outcomes_by_method: BTreeMap<(&'static str, &'static str), usize>,
    /// Outcomes of the calls in flight at `Shutdown` and made after it.
    pub at_shutdown: BTreeMap<&'static str, usize>,
    pub after_shutdown: BTreeMap<&'static str, usize>,
    pub faults: BTreeMap<&'static str, usize>,
    /// The largest lateness (answer after its bound), in ms, and the call it was.
    pub max_lateness_ms: f64,
    pub max_lateness_call: Option<String>,
    /// 99th percentile of the lateness of the calls that ended at their bound (timeouts).
    pub p99_timeout_lateness_ms: f64,
    pub counters: BTreeMap<String, CounterBook>,
    /// Per server and tool (echo, slow): (runs, ok answers, most runs the calls allow).
    pub runs: BTreeMap<(String, &'static str), (u64, u64, u64)>,
    /// Answers later than their bound plus the slack, excused because the whole process was
    /// not scheduled meanwhile (see [`super::stalls`]).
    pub late_excused: usize,
    /// Requests dropped (`MailboxError`) before `Shutdown`: excused only for a call sent
    /// straight to an actor that was removed or panicked meanwhile.
    pub dropped_before_shutdown: usize,
}

/// Judges `calls` and `facts`; `slack` is how late an answer may come after its bound.
pub fn check(calls: &[CallRecord], facts: &Facts, slack: Duration) -> (Vec<Violation>, Figures) {
    let mut violations = Vec::new();
    let mut figures = Figures {
        calls: calls.len(),
        max_lateness_ms: f64::NEG_INFINITY,
        ..Figures::default()
    };
    let mut timeout_lateness = Vec::new();
    for call in calls {
        *figures.by_method.entry(call.method.name()).or_default() += 1;
        *figures.by_server.entry(call.server.clone()).or_default() += 1;
        *figures.outcomes.entry(call.outcome.label()).or_default() += 1;
        *figures
            .outcomes_by_method
            .entry((call.method.name(), call.outcome.label()))
            .or_default() += 1;
        match call.phase {
            Phase::Soak => {}
            Phase::AtShutdown => *figures.at_shutdown.entry(call.outcome.label()).or_default() += 1,
            Phase::AfterShutdown => {
                *figures
                    .after_shutdown
                    .entry(call.outcome.label())
                    .or_default() += 1
            }
        }
        if matches!(call.outcome, Outcome::Mailbox(_)) && call.phase == Phase::Soak {
            figures.dropped_before_shutdown += 1;
        }
        let lateness = call.lateness_ms();
        if call.outcome != Outcome::Hung && lateness > figures.max_lateness_ms {
            figures.max_lateness_ms = lateness;
            figures.max_lateness_call = Some(describe(call));
        }
        if call.outcome.label() == "timeout" {
            timeout_lateness.push(lateness);
        }
        if !check_call(call, slack, facts, &mut violations) {
            figures.late_excused += 1;
        }
    }
    timeout_lateness.sort_by(f64::total_cmp);
    figures.p99_timeout_lateness_ms = percentile(&timeout_lateness, 0.99);
    if figures.max_lateness_ms == f64::NEG_INFINITY {
        figures.max_lateness_ms = 0.0;
    }
    for fault in &facts.faults {
        *figures.faults.entry(fault.kind.name()).or_default() += 1;
    }
    check_counters(calls, facts, &mut figures, &mut violations);
    check_sends(calls, facts, &mut figures, &mut violations);
    check_recovery(facts, &mut violations);
    (violations, figures)
}

fn describe(call: &CallRecord) -> String {
    format!(
        "#{:x} (caller {}) {} {} [{}] via {:?}: start {:.3}s timeout {}ms bound {}ms end {:.3}s -> {:?}",
        call.id,
        call.caller,
        call.server,
        call.method.name(),
        call.payload,
        call.route,
        call.start.as_secs_f64(),
        call.timeout.as_millis(),
        call.bound.as_millis(),
        call.end.as_secs_f64(),
        call.outcome
    )
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The promises about one call on its own. False if the call was late but the machine's
/// stalls account for it (then that is not reported as a violation).
fn check_call(
    call: &CallRecord,
    slack: Duration,
    facts: &Facts,
    violations: &mut Vec<Violation>,
) -> bool {
    let mut broken = |promise: &'static str| {
        violations.push(Violation {
            promise,
            detail: describe(call),
        })
    };
    let after = call.phase == Phase::AfterShutdown;
    // The call met a `RemoveServer` of its server: it may find the server stopped or gone.
    let met = |kind: FaultKind, lag: Duration| {
        facts.faults.iter().any(|f| {
            f.kind == kind
                && f.target == call.server
                && call.start <= f.end + lag
                && call.end >= f.at
        })
    };
    let removed = met(FaultKind::RemoveAdd, Duration::ZERO);
    // Its server's actor was told to panic: it does so when it takes the message, shortly
    // after it was sent.
    let panicked = met(FaultKind::ActorPanic, PANIC_LAG);
    match &call.outcome {
        Outcome::Hung => broken("answered: no answer by the bound plus the watchdog"),
        // A call sent straight to an actor that stops (removed) or dies (panics) before it
        // takes the call is dropped by actix with its mailbox: nothing is left to answer it
        // (`GetServer`'s doc says so). Through the supervisor, it is answered.
        Outcome::Mailbox(_) if after || ((removed || panicked) && call.route == Route::Direct) => {}
        Outcome::Mailbox(_) => broken("answered: the request was dropped (MailboxError)"),
        Outcome::Wrong(_) => broken("the right answer: an ok result that is not this call's"),
        Outcome::Err { code, .. } if after => {
            if !matches!(*code, "stopped" | "server_not_found" | "unavailable") {
                broken("after Shutdown, a call is refused at once")
            }
        }
        Outcome::Err { code, .. } => match *code {
            "timeout" if call.end < call.start + call.timeout.saturating_sub(ms(5)) => {
                broken("timeout only at the deadline: answered `timeout` early")
            }
            "outcome_unknown" if call.method.safe_by_nature() => {
                broken("safe-by-nature calls are re-sent or `unavailable`, never `outcome_unknown`")
            }
            "timeout" | "outcome_unknown" | "unavailable" | "overloaded" => {}
            "stopped" if call.phase == Phase::AtShutdown || removed => {}
            "server_not_found" if removed => {}
            "stopped" => broken("`stopped` only after a shutdown: none was sent"),
            _ => broken("only errors a caller can act on: this one should not reach a caller"),
        },
        Outcome::Ok if after => broken("after Shutdown, a call is refused at once"),
        Outcome::Ok => {}
    }
    if call.known_to_run && !(call.outcome == Outcome::Ok || call.outcome.in_doubt()) {
        broken("a call that ran is acknowledged or in doubt, never answered as not run");
    }
    let due = call.start + call.bound;
    if call.outcome != Outcome::Hung && call.end > due + slack {
        let starved = stalled_within(&facts.machine_stalls, call.start, call.end);
        if call.end - due <= slack + starved {
            return false;
        }
        let blocked = stalled_within(&facts.loop_stalls, call.start, call.end);
        violations.push(Violation {
            promise: "by the deadline: answered later than its bound plus the slack",
            detail: format!(
                "{} (meanwhile the actix thread stalled {} ms, the whole process {} ms)",
                describe(call),
                blocked.as_millis(),
                starved.as_millis()
            ),
        });
    }
    true
}

/// No acknowledged or in-doubt `counter` call executed twice, and none answered "not run"
/// executed at all (in aggregate: executions are not tied to calls).
fn check_counters(
    calls: &[CallRecord],
    facts: &Facts,
    figures: &mut Figures,
    violations: &mut Vec<Violation>,
) {
    for server in &facts.servers {
        // The demo's count file is replaced atomically, after the count and before the
        // `counter <n>` line: a kill between the two leaves it one ahead of the log, never
        // behind it. The larger of the two is the number of executions.
        if let Some(file) = server.counter_file.filter(|f| *f < server.executions) {
            violations.push(Violation {
                promise: "the demo server's count survives kill -9 (issue 9, defect 15)",
                detail: format!(
                    "{}: count file {file} < {} `counter` lines in its log",
                    server.name, server.executions
                ),
            });
        }
        let mut book = CounterBook {
            executions: server.executions.max(server.counter_file.unwrap_or(0)),
            ..CounterBook::default()
        };
        for call in calls
            .iter()
            .filter(|c| c.method == Method::Counter && c.server == server.name)
        {
            match &call.outcome {
                Outcome::Ok => book.acknowledged += 1,
                o if o.in_doubt() => book.in_doubt += 1,
                _ => book.not_run += 1,
            }
        }
        if book.executions < book.acknowledged {
            violations.push(Violation {
                promise: "an acknowledged counter call ran",
                detail: format!(
                    "{}: {} executions < {} acknowledged",
                    server.name, book.executions, book.acknowledged
                ),
            });
        }
        if book.executions > book.acknowledged + book.in_doubt {
            violations.push(Violation {
                promise: "no counter call ran twice, nor one answered as not run",
                detail: format!(
                    "{}: {} executions > {} acknowledged + {} in doubt ({} answered as not run)",
                    server.name, book.executions, book.acknowledged, book.in_doubt, book.not_run
                ),
            });
        }
        figures.counters.insert(server.name.clone(), book);
    }
}

/// A call is sent at most twice, and twice only if its policy allows a re-send; every `ok`
/// answer came from a run. (In aggregate, per server and tool: runs are not tied to calls.)
fn check_sends(
    calls: &[CallRecord],
    facts: &Facts,
    figures: &mut Figures,
    violations: &mut Vec<Violation>,
) {
    for server in &facts.servers {
        for &(method, runs) in &server.runs {
            let mine = calls
                .iter()
                .filter(|c| c.method == method && c.server == server.name);
            let (mut ok, mut most) = (0, 0);
            for call in mine {
                ok += u64::from(call.outcome == Outcome::Ok);
                most += 1 + u64::from(call.resend_allowed);
            }
            figures
                .runs
                .insert((server.name.clone(), method.name()), (runs, ok, most));
            if runs > most {
                violations.push(Violation {
                    promise: "a call is re-sent at most once, and only if its policy allows",
                    detail: format!(
                        "{}: {} ran {runs} times, more than the {most} sends its calls allow",
                        server.name,
                        method.name()
                    ),
                });
            }
            if runs < ok {
                violations.push(Violation {
                    promise: "an ok answer comes from a run of the call",
                    detail: format!(
                        "{}: {} ran {runs} times but {ok} calls were answered ok",
                        server.name,
                        method.name()
                    ),
                });
            }
        }
    }
}

fn check_recovery(facts: &Facts, violations: &mut Vec<Violation>) {
    for error in &facts.api_errors {
        violations.push(Violation {
            promise: "RemoveServer and AddServer answer Ok",
            detail: error.clone(),
        });
    }
    if facts.all_ready_after.is_none() {
        violations.push(Violation {
            promise: "every server Ready again after the faults stop",
            detail: format!(
                "not all Ready {:?} after the last fault: {}",
                facts.ready_bound,
                facts.not_ready.join(", ")
            ),
        });
    }
    for failure in &facts.probe_failures {
        violations.push(Violation {
            promise: "a Ready server answers",
            detail: failure.clone(),
        });
    }
    for failure in &facts.subscription_failures {
        violations.push(Violation {
            promise: "a subscription outlives every fault: an update reaches the application",
            detail: failure.clone(),
        });
    }
    if facts.shutdown_took.is_none() {
        violations.push(Violation {
            promise: "Shutdown answers",
            detail: format!("no answer within {:?}", facts.shutdown_bound),
        });
    }
    if !facts.left_running.is_empty() {
        violations.push(Violation {
            promise: "no server process left after Shutdown",
            detail: format!(
                "still running: {:?} (of {} seen)",
                facts.left_running, facts.pids_seen
            ),
        });
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[cfg(test)]
mod tests {
    //! The checker must be able to fail: each broken promise, fed to it in a small synthetic
    //! history, is reported (and a clean history is not).
    use super::*;

    fn call(method: Method, start: u64, timeout: u64, end: u64, outcome: Outcome) -> CallRecord {
        CallRecord {
            id: start,
            caller: 0,
            server: "s".into(),
            method,
            payload: String::new(),
            route: Route::Supervisor,
            start: ms(start),
            timeout: ms(timeout),
            bound: ms(timeout),
            end: ms(end),
            outcome,
            phase: Phase::Soak,
            known_to_run: false,
            resend_allowed: false,
        }
    }

    fn err(code: &'static str) -> Outcome {
        Outcome::Err {
            code,
            message: String::new(),
        }
    }

    fn facts(executions: u64) -> Facts {
        Facts {
            servers: vec![ServerFacts {
                name: "s".into(),
                kind: Kind::Stdio,
                era: "legacy",
                executions,
                counter_file: Some(executions),
                runs: vec![(Method::Echo, 0), (Method::Slow, 0)],
                refused_rounds: 0,
                unauthorized: 0,
                updates: 0,
                ready_fraction: 1.0,
                ready_while_up: 1.0,
                outages: 0,
                reconnects: 0,
                resent: 0,
                unknown_responses: 0,
            }],
            all_ready_after: Some(ms(10)),
            shutdown_took: Some(ms(10)),
            ..Facts::default()
        }
    }

    fn promises(calls: &[CallRecord], facts: &Facts) -> Vec<&'static str> {
        check(calls, facts, ms(250))
            .0
            .into_iter()
            .map(|v| v.promise)
            .collect()
    }

    #[test]
    fn a_clean_history_passes() {
        let calls = [
            call(Method::Echo, 0, 100, 5, Outcome::Ok),
            call(Method::Counter, 0, 100, 5, Outcome::Ok),
            call(Method::Counter, 0, 100, 150, err("timeout")),
            call(Method::Counter, 0, 100, 20, err("outcome_unknown")),
            call(Method::Counter, 0, 100, 20, err("unavailable")),
            call(Method::Ping, 0, 100, 20, err("unavailable")),
        ];
        for executions in 1..=3 {
            let mut f = facts(executions);
            f.servers[0].runs[0].1 = 1;
            assert_eq!(promises(&calls, &f), Vec::<&str>::new());
        }
        let (_, figures) = check(&calls, &facts(2), ms(250));
        assert_eq!(figures.calls, 6);
        assert_eq!(figures.max_lateness_ms, 50.0);
        assert_eq!(
            figures.counters["s"],
            CounterBook {
                executions: 2,
                acknowledged: 1,
                in_doubt: 2,
                not_run: 1
            }
        );
    }

    #[test]
    fn every_broken_call_promise_is_reported_not_only_the_first() {
        let calls = [
            call(Method::Echo, 0, 100, 10_000, Outcome::Hung),
            call(Method::Echo, 0, 100, 5, Outcome::Mailbox("gone".into())),
            call(
                Method::Echo,
                0,
                100,
                5,
                Outcome::Wrong("someone else's".into()),
            ),
            call(Method::Echo, 0, 100, 351, err("timeout")),
            call(Method::Echo, 0, 100, 50, err("timeout")),
            call(Method::Ping, 0, 100, 50, err("outcome_unknown")),
            call(Method::Echo, 0, 100, 50, err("stopped")),
            call(Method::Echo, 0, 100, 50, err("invalid_response")),
        ];
        let found = promises(&calls, &facts(0));
        assert_eq!(found.len(), 8, "{found:#?}");
        assert!(found[0].starts_with("answered: no answer"));
        assert!(found[1].starts_with("answered: the request was dropped"));
        assert!(found[2].starts_with("the right answer"));
        assert!(found[3].starts_with("by the deadline"));
        assert!(found[4].starts_with("timeout only at the deadline"));
        assert!(found[5].starts_with("safe-by-nature"));
        assert!(found[6].starts_with("`stopped`"));
        assert!(found[7].starts_with("only errors a caller can act on"));
    }

    #[test]
    fn calls_around_shutdown_are_judged_by_their_phase() {
        let at = |outcome, known_to_run| CallRecord {
            phase: Phase::AtShutdown,
            known_to_run,
            ..call(Method::Counter, 0, 1000, 50, outcome)
        };
        let after = |outcome| CallRecord {
            phase: Phase::AfterShutdown,
            ..call(Method::Echo, 0, 1000, 50, outcome)
        };
        let fine = [
            at(err("stopped"), false),
            at(err("outcome_unknown"), true),
            at(Outcome::Ok, true),
            after(err("stopped")),
            after(Outcome::Mailbox("closed".into())),
        ];
        assert_eq!(promises(&fine, &facts(2)), Vec::<&str>::new());
        let broken = [
            at(err("stopped"), true),
            at(err("unavailable"), true),
            after(Outcome::Ok),
            after(err("timeout")),
        ];
        let mut f = facts(0);
        f.servers[0].runs[0].1 = 1;
        assert_eq!(
            promises(&broken, &f),
            [
                "a call that ran is acknowledged or in doubt, never answered as not run",
                "a call that ran is acknowledged or in doubt, never answered as not run",
                "after Shutdown, a call is refused at once",
                "after Shutdown, a call is refused at once",
            ]
        );
    }

    #[test]
    fn a_dropped_request_is_excused_only_for_a_direct_call_whose_actor_went() {
        let direct = |outcome| CallRecord {
            route: Route::Direct,
            ..call(Method::Echo, 1000, 100, 1000, outcome)
        };
        let mut f = facts(0);
        let dropped = [direct(Outcome::Mailbox("closed".into()))];
        assert_eq!(
            promises(&dropped, &f),
            ["answered: the request was dropped (MailboxError)"]
        );
        f.faults.push(FaultRecord {
            kind: FaultKind::ActorPanic,
            target: "s".into(),
            pid: None,
            at: ms(999),
            pause: Duration::ZERO,
            note: String::new(),
            end: ms(999),
        });
        assert_eq!(promises(&dropped, &f), Vec::<&str>::new());
        let through_the_supervisor = [CallRecord {
            route: Route::Supervisor,
            ..dropped[0].clone()
        }];
        assert_eq!(
            promises(&through_the_supervisor, &f),
            ["answered: the request was dropped (MailboxError)"]
        );
        f.faults[0].at = ms(3000);
        f.faults[0].end = ms(3000);
        assert_eq!(
            promises(&dropped, &f),
            ["answered: the request was dropped (MailboxError)"],
            "a panic after the call does not excuse it"
        );
    }

    #[test]
    fn lateness_is_excused_only_as_far_as_the_whole_process_stalled() {
        let late = [call(Method::Echo, 0, 100, 600, err("timeout"))];
        let mut f = facts(0);
        f.machine_stalls = vec![Stall {
            at: ms(200),
            len: ms(300),
        }];
        let (violations, figures) = check(&late, &f, ms(250));
        assert_eq!(violations, []);
        assert_eq!(figures.late_excused, 1);
        f.machine_stalls[0].len = ms(100);
        assert_eq!(
            promises(&late, &f),
            ["by the deadline: answered later than its bound plus the slack"]
        );
    }

    #[test]
    fn a_call_sent_more_often_than_its_policy_allows_is_reported() {
        let resendable = CallRecord {
            resend_allowed: true,
            ..call(Method::Echo, 0, 100, 150, err("timeout"))
        };
        let calls = [
            call(Method::Echo, 0, 100, 5, Outcome::Ok),
            resendable,
            call(Method::Slow, 0, 100, 5, err("outcome_unknown")),
        ];
        let runs = |echo, slow| {
            let mut f = facts(0);
            f.servers[0].runs = vec![(Method::Echo, echo), (Method::Slow, slow)];
            promises(&calls, &f)
        };
        assert_eq!(runs(3, 1), Vec::<&str>::new());
        assert_eq!(
            runs(4, 2),
            [
                "a call is re-sent at most once, and only if its policy allows",
                "a call is re-sent at most once, and only if its policy allows"
            ]
        );
        assert_eq!(runs(0, 0), ["an ok answer comes from a run of the call"]);
    }

    #[test]
    fn a_count_file_behind_the_log_is_reported_and_one_ahead_counts() {
        let calls = [
            call(Method::Counter, 0, 100, 5, Outcome::Ok),
            call(Method::Counter, 0, 100, 150, err("timeout")),
        ];
        let mut f = facts(1);
        f.servers[0].counter_file = Some(2);
        assert_eq!(promises(&calls, &f), Vec::<&str>::new());
        f.servers[0].counter_file = Some(3);
        assert_eq!(
            promises(&calls, &f),
            ["no counter call ran twice, nor one answered as not run"]
        );
        f.servers[0].counter_file = Some(0);
        assert_eq!(
            promises(&calls, &f),
            ["the demo server's count survives kill -9 (issue 9, defect 15)"]
        );
    }

    #[test]
    fn a_counter_run_twice_or_not_at_all_is_reported() {
        let calls = [
            call(Method::Counter, 0, 100, 5, Outcome::Ok),
            call(Method::Counter, 0, 100, 150, err("timeout")),
            call(Method::Counter, 0, 100, 5, err("unavailable")),
        ];
        assert_eq!(
            promises(&calls, &facts(0)),
            ["an acknowledged counter call ran"]
        );
        assert_eq!(
            promises(&calls, &facts(3)),
            ["no counter call ran twice, nor one answered as not run"]
        );
    }

    #[test]
    fn recovery_and_shutdown_failures_are_reported() {
        let mut f = facts(0);
        f.all_ready_after = None;
        f.not_ready = vec!["s: reconnecting".into()];
        f.probe_failures = vec!["s: unavailable".into()];
        f.subscription_failures = vec!["s: announced, no update within 1 s".into()];
        f.shutdown_took = None;
        f.left_running = vec![42];
        assert_eq!(
            promises(&[], &f),
            [
                "every server Ready again after the faults stop",
                "a Ready server answers",
                "a subscription outlives every fault: an update reaches the application",
                "Shutdown answers",
                "no server process left after Shutdown"
            ]
        );
    }
}
