//! What the soak records: one [`CallRecord`] per call (who, what, when, how it ended), one
//! [`FaultRecord`] per injected fault, and the [`Facts`] gathered after the run (executions the
//! servers counted, recovery, processes left). The checker judges these and nothing else, so a
//! failing run can be understood from its printout alone.

use std::time::Duration;

pub use super::stalls::Stall;

/// The calls the soak makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// `tools/call echo {text}` with a payload unique to the call.
    Echo,
    /// `tools/call counter`: not idempotent, counted by the server.
    Counter,
    /// `tools/call slow {seconds, steps}`, sometimes with progress resetting the timeout.
    Slow,
    /// A raw `tools/list`.
    ToolsList,
    /// A raw `ping` (`server/discover` in the 2026-07-28 era, which has no `ping`).
    Ping,
    /// `tools/call confirm`: the server asks for input (multi round-trip in 2026-07-28, an
    /// elicitation request in the session era), the application's handler answers.
    Confirm,
    /// `tools/call notify` / `notify_resource`: the server announces a change of the resource
    /// the application subscribed to.
    Notify,
}

impl Method {
    pub const ALL: [Method; 7] = [
        Method::Echo,
        Method::Counter,
        Method::Slow,
        Method::ToolsList,
        Method::Ping,
        Method::Confirm,
        Method::Notify,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Echo => "echo",
            Method::Counter => "counter",
            Method::Slow => "slow",
            Method::ToolsList => "tools/list",
            Method::Ping => "ping",
            Method::Confirm => "confirm",
            Method::Notify => "notify",
        }
    }

    /// Safe by nature (docs/calls.md, "When a connection breaks"): never answered `outcome_unknown`.
    pub fn safe_by_nature(self) -> bool {
        matches!(self, Method::ToolsList | Method::Ping)
    }
}

/// How a call ended, as its caller saw it.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A result, and the right one for this call.
    Ok,
    /// A result that is not this call's answer (someone else's, or malformed): why.
    Wrong(String),
    /// A typed error: its stable code and its text.
    Err { code: &'static str, message: String },
    /// The actor dropped the request (actix `MailboxError`).
    Mailbox(String),
    /// No answer at all within the deadline plus the soak's watchdog.
    Hung,
}

impl Outcome {
    /// The name figures are grouped by: `ok`, the error code, `wrong`, `mailbox`, `hung`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Wrong(_) => "wrong",
            Outcome::Err { code, .. } => code,
            Outcome::Mailbox(_) => "mailbox",
            Outcome::Hung => "hung",
        }
    }

    /// Whether a `counter` call with this outcome may have run on the server: acknowledged
    /// calls must have, `timeout` and `outcome_unknown` may have, nothing else may. A dropped
    /// request or no answer says nothing either way (and is a violation of its own).
    pub fn in_doubt(&self) -> bool {
        match self {
            Outcome::Err { code, .. } => *code == "timeout" || *code == "outcome_unknown",
            Outcome::Mailbox(_) | Outcome::Hung => true,
            Outcome::Ok | Outcome::Wrong(_) => false,
        }
    }
}

/// Which address the call was sent to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Through the `Supervisor`.
    Supervisor,
    /// Straight to the `ServerActor` (the hot path of `GetServer`).
    Direct,
}

/// One call, from the moment it was sent to its answer. Times are since the soak's start.
#[derive(Clone, Debug)]
pub struct CallRecord {
    pub id: u64,
    pub caller: usize,
    pub server: String,
    pub method: Method,
    /// What was asked: the echo's tag and length, the counter's delay, the slow call's length.
    pub payload: String,
    pub route: Route,
    pub start: Duration,
    /// The call's timeout.
    pub timeout: Duration,
    /// The latest the answer may come: the timeout, or the maximum total time of a call whose
    /// progress restarts its timeout.
    pub bound: Duration,
    pub end: Duration,
    pub outcome: Outcome,
    pub phase: Phase,
    /// The soak saw this call run on the server (its `counter` line appeared in the log): it
    /// must be acknowledged or in doubt, never answered as not run.
    pub known_to_run: bool,
    /// Its retry policy (and the server's trust, for a read-only tool) lets the supervisor
    /// send it a second time after a broken connection.
    pub resend_allowed: bool,
}

/// When a call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// During the soak: no `Shutdown` was sent.
    Soak,
    /// In flight when `Shutdown` was sent.
    AtShutdown,
    /// Made after `Shutdown` was sent: it must be refused, promptly.
    AfterShutdown,
}

impl CallRecord {
    /// How much later than its bound the answer came (negative: earlier), in milliseconds.
    pub fn lateness_ms(&self) -> f64 {
        let due = self.start + self.bound;
        if self.end >= due {
            (self.end - due).as_secs_f64() * 1e3
        } else {
            -((due - self.end).as_secs_f64() * 1e3)
        }
    }
}

/// The faults the soak injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// SIGKILL to a stdio server's process.
    Kill9,
    /// SIGKILL, then SIGKILL again to the process started in its place, 0–30 ms after it
    /// started: during its handshake, most likely.
    KillInHandshake,
    /// SIGSTOP, then SIGCONT after a pause.
    Stop,
    /// The HTTP server stopped, then started again on the same port.
    HttpRestart,
    /// `Reconnect` sent to the supervisor: a Ready connection is replaced, its calls in flight
    /// settled as after a crash.
    Reconnect,
    /// `RemoveServer`, then `AddServer` with the same configuration once that has answered.
    RemoveAdd,
    /// The HTTP server forgets every session (answering 404 or 400 to the old id).
    ForgetSessions,
    /// The HTTP server's next SSE answer ends abruptly after one or two events, without the
    /// response: the client has to resume it with `Last-Event-ID`.
    DropSse,
    /// The HTTP server delays every answer by 200 ms – 1.5 s for a while (the work is done
    /// first): timeouts and failed liveness pings on a server that is alive.
    HttpSlow,
    /// A server's actor panics (`InjectPanic`, a test hook, not part of the API) and the
    /// supervisor starts a new one (`MCP_SOAK_PANICS`: the share of faults).
    ActorPanic,
    /// Every access token of the authorization server stops working: the next request of an
    /// OAuth-protected server is refused `401`, a new token is fetched, the request re-sent.
    TokenExpiry,
    /// The authorization server's token endpoint answers `500` for a while: renewals fail for
    /// now (calls answered `unavailable`, the connection kept), then succeed again.
    TokenFail,
    /// A dual-era HTTP server is stopped and started again speaking one era only, or both
    /// again: the client must notice the server changed and negotiate anew.
    EraChange,
    /// Every listen stream of an HTTP server is cut (2026-07-28; a no-op on a session-era
    /// server): a stream lost by error is a lost connection.
    CutListens,
}

impl FaultKind {
    pub const ALL: [FaultKind; 14] = [
        FaultKind::Kill9,
        FaultKind::KillInHandshake,
        FaultKind::Stop,
        FaultKind::HttpRestart,
        FaultKind::Reconnect,
        FaultKind::RemoveAdd,
        FaultKind::ForgetSessions,
        FaultKind::DropSse,
        FaultKind::ActorPanic,
        FaultKind::HttpSlow,
        FaultKind::TokenExpiry,
        FaultKind::TokenFail,
        FaultKind::EraChange,
        FaultKind::CutListens,
    ];

    /// The short name `MCP_SOAK_FAULTS` lists it by.
    pub fn key(self) -> &'static str {
        match self {
            FaultKind::Kill9 => "kill",
            FaultKind::KillInHandshake => "handshake",
            FaultKind::Stop => "stop",
            FaultKind::HttpRestart => "restart",
            FaultKind::Reconnect => "reconnect",
            FaultKind::RemoveAdd => "remove",
            FaultKind::ForgetSessions => "forget",
            FaultKind::DropSse => "dropsse",
            FaultKind::ActorPanic => "panic",
            FaultKind::HttpSlow => "slow",
            FaultKind::TokenExpiry => "expire",
            FaultKind::TokenFail => "tokenfail",
            FaultKind::EraChange => "era",
            FaultKind::CutListens => "cutlisten",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill9 => "kill -9",
            FaultKind::KillInHandshake => "kill -9 in the handshake",
            FaultKind::Stop => "SIGSTOP/SIGCONT",
            FaultKind::HttpRestart => "http restart",
            FaultKind::Reconnect => "Reconnect",
            FaultKind::RemoveAdd => "RemoveServer + AddServer",
            FaultKind::ForgetSessions => "http forget sessions",
            FaultKind::DropSse => "http drop sse",
            FaultKind::HttpSlow => "http slow answers",
            FaultKind::ActorPanic => "actor panic",
            FaultKind::TokenExpiry => "tokens expired",
            FaultKind::TokenFail => "token endpoint failing",
            FaultKind::EraChange => "http era change",
            FaultKind::CutListens => "http listens cut",
        }
    }
}

/// One injected fault. `end` is when it was over: the kill sent, the SIGCONT sent, the HTTP
/// server listening again.
#[derive(Clone, Debug)]
pub struct FaultRecord {
    pub kind: FaultKind,
    pub target: String,
    pub pid: Option<u32>,
    pub at: Duration,
    /// The SIGSTOP pause, how long the HTTP server was down or slow, or the token endpoint
    /// failing.
    pub pause: Duration,
    /// What else is worth knowing (the era an HTTP server came back speaking).
    pub note: String,
    pub end: Duration,
}

/// Which transport a server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Stdio,
    Http,
}

/// What a server counted, after everything was answered and shut down.
#[derive(Clone, Debug)]
pub struct ServerFacts {
    pub name: String,
    pub kind: Kind,
    /// The era it was configured to speak: `legacy`, `modern` or `dual`.
    pub era: &'static str,
    /// `counter` executions: `counter <n>` lines in the demo server's event log (written
    /// before the answer, so every acknowledged call has one; the checker takes the count
    /// file when it is ahead), or the HTTP test servers' executions summed over every
    /// instance.
    pub executions: u64,
    /// The demo server's count file at the end (stdio only): one ahead of `executions` for
    /// each kill between counting and logging; behind it, if the file lost counts (issue 9,
    /// defect 15, fixed by writing it atomically).
    pub counter_file: Option<u64>,
    /// How often the server ran `echo`, `slow` and `confirm` (`call <tool>` lines in the
    /// demo's log, and its completed flows of `confirm` in the 2026-07-28 era; the HTTP
    /// servers' counts over every instance).
    pub runs: Vec<(Method, u64)>,
    /// Input rounds of `confirm` the server refused (a state it did not know, or no answer to
    /// what it asked): a client that sent a round it should not have.
    pub refused_rounds: u64,
    /// Requests the server refused `401` (OAuth-protected HTTP servers).
    pub unauthorized: u64,
    /// `resources/updated` notifications of its resource that reached the application.
    pub updates: u64,
    /// Fraction of the soak the server was Ready, from the state-change events.
    pub ready_fraction: f64,
    /// Fraction of the time the server could answer (outside the SIGSTOP pauses and the HTTP
    /// outages the soak caused) that it was Ready: what the supervisor's reconnecting costs.
    pub ready_while_up: f64,
    /// Times the server left Ready.
    pub outages: usize,
    /// The supervisor's counters at the end: reconnects, re-sent calls, unknown responses.
    pub reconnects: u64,
    pub resent: u64,
    pub unknown_responses: u64,
}

/// Everything measured after the calls, for the checker.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub servers: Vec<ServerFacts>,
    pub faults: Vec<FaultRecord>,
    /// Faults chosen but not injected (no process to signal at that moment, ...).
    pub faults_skipped: usize,
    /// `RemoveServer` / `AddServer` of the injector that did not answer `Ok`.
    pub api_errors: Vec<String>,
    /// When the last fault was over.
    pub last_fault_end: Duration,
    /// How long after the last fault every server was Ready; `None`: not within the bound.
    pub all_ready_after: Option<Duration>,
    pub ready_bound: Duration,
    /// States of the servers that were not Ready when the bound passed.
    pub not_ready: Vec<String>,
    /// Servers whose echo probe after recovery did not succeed, with what they answered.
    pub probe_failures: Vec<String>,
    /// Servers whose subscription did not deliver an update after recovery, and what happened.
    pub subscription_failures: Vec<String>,
    /// Elicitations the application's request handler answered.
    pub inputs_answered: u64,
    /// Access tokens the authorization server issued (client credentials grants), if any.
    pub tokens_issued: Option<usize>,
    /// How long `Shutdown` took to answer; `None`: not within the bound.
    pub shutdown_took: Option<Duration>,
    pub shutdown_bound: Duration,
    /// The server stopped with SIGSTOP just before `Shutdown`, and its pid.
    pub stopped_at_shutdown: Option<(String, u32)>,
    /// Server processes seen during the soak.
    pub pids_seen: usize,
    /// Those still running when `Shutdown` had answered.
    pub left_running: Vec<u32>,
    /// Stalls of the actix thread's heartbeat, and of a plain OS thread's (the whole process
    /// not scheduled: a busy machine).
    pub loop_stalls: Vec<Stall>,
    pub machine_stalls: Vec<Stall>,
    /// The machine's load averages at the start and the end.
    pub load: String,
}
