//! The session core's unit tests: every rule of a call's life, driven event by event with a
//! fake clock over a recording link, in both eras. The harness plays the driver (it carries out
//! the session's commands and fires its one timer) and the server (it reads what was written
//! and answers).

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;
use crate::config::{ServerConfig, Settings};
use crate::error::{Error, ErrorKind};
use crate::protocol::jsonrpc::parse_frame;
use crate::protocol::meta::RequestMeta;
use crate::session::testing::{Answer, Options, Recorder};
use crate::transport::Link;

mod calls;
mod eras;
mod handover;
mod leases;
mod listen;
mod liveness;
mod task_findings;
mod task_notifications;
mod tasks;
mod tools;

/// The driver and the server of one session, on a fake clock.
struct Harness {
    session: Session,
    now: Instant,
    /// The current connection's link, and its sequence number.
    link: Rc<Recorder>,
    seq: u64,
    /// The attempt the session asked for and nobody answered yet.
    pending: Option<(u64, AttemptPlan)>,
    /// Events the session emitted, and other commands it gave, in order.
    emitted: Vec<ServerEvent>,
    /// What the session asked the task store to record, in order.
    persisted: Vec<TaskWrite>,
    /// The store refuses every input key and every delivery (another follower of the task
    /// recorded them first).
    refusing: bool,
    /// The store says another replica holds the lease of every task followed again.
    elsewhere: bool,
    /// The store (shared by replicas) cannot record new tasks: the database is unreachable.
    unrecorded: bool,
    other: Vec<Command>,
}

fn settings() -> Settings {
    Settings {
        call_timeout: Duration::from_secs(10),
        ping_timeout: Duration::from_secs(2),
        ..Settings::default()
    }
}

fn legacy_stdio() -> ServerConfig {
    ServerConfig::stdio("demo", "unused")
}

fn modern_http() -> ServerConfig {
    ServerConfig::http("demo", "http://127.0.0.1:1/mcp")
}

/// `(call, seconds)`: a request with a timeout, as a caller makes it.
fn call(method: &str, params: Option<Value>) -> CallRequest {
    CallRequest::of_value("demo", method.to_owned(), params.as_ref())
}

fn tool(name: &str) -> CallRequest {
    call("tools/call", Some(json!({"name": name, "arguments": {}})))
}

fn kind(answer: &Answer) -> Option<ErrorKind> {
    match answer.take() {
        Some(Err(e)) => Some(e.kind()),
        Some(Ok(v)) => panic!("expected an error, got the result {v}"),
        None => None,
    }
}

impl Harness {
    /// A session for `config`, started: its first attempt is pending.
    fn new(config: &ServerConfig, settings: Settings) -> Self {
        Self::with_ids(config, settings, RequestIds::default())
    }

    /// [`Harness::new`], taking request ids from `ids` (a server's next generation).
    fn with_ids(config: &ServerConfig, settings: Settings, ids: RequestIds) -> Self {
        let now = Instant::now();
        let session = Session::new(
            Arc::from(config.name()),
            settings,
            config.transport(),
            ids,
            Arc::default(),
            now,
            7,
        );
        let mut h = Harness {
            session,
            now,
            link: Rc::new(Recorder::default()),
            seq: 0,
            pending: None,
            emitted: Vec::new(),
            persisted: Vec::new(),
            refusing: false,
            elsewhere: false,
            unrecorded: false,
            other: Vec::new(),
        };
        h.session.start(now);
        h.drive();
        h
    }

    /// Carries out the session's commands as the actor would.
    fn drive(&mut self) {
        while let Some(command) = self.session.poll_command() {
            match command {
                Command::Connect { seq, plan } => self.pending = Some((seq, *plan)),
                Command::Disconnect { .. } => self.link.closed.set(true),
                Command::Emit(event) => self.emitted.push(event),
                Command::Persist(write) => {
                    if self.refusing
                        && matches!(
                            write,
                            TaskWrite::InputAnswered { .. } | TaskWrite::Delivered { .. }
                        )
                    {
                        self.session.store_refused(write.clone(), self.now);
                    }
                    if self.elsewhere && matches!(write, TaskWrite::Created { .. }) {
                        self.session.store_refused(write.clone(), self.now);
                    }
                    if let (true, TaskWrite::Created { handle, .. }) = (self.unrecorded, &write) {
                        let error = crate::tasks::TaskStoreError::Database {
                            path: "postgresql://db/x".into(),
                            message: "the connection to the database is closed".into(),
                        };
                        self.session
                            .task_unrecorded(&handle.task_id, &error, self.now);
                    }
                    self.persisted.push(write);
                }
                Command::Resume(resumption) => self.session.resume(resumption, self.now),
                other => self.other.push(other),
            }
        }
    }

    fn plan(&self) -> &AttemptPlan {
        &self.pending.as_ref().expect("an attempt is pending").1
    }

    /// The pending attempt's plan, waiting for the attempt if it is not asked for yet.
    fn plan_or_next(&mut self) -> &AttemptPlan {
        self.await_attempt();
        self.plan()
    }

    /// The pending attempt opens a connection speaking `era` (`reused`: with the plan's fresh
    /// discovery), `tools` listed.
    fn open(&mut self, negotiated: Negotiated, reused: bool, tools: Vec<ListedTool>) {
        let listed = Listed {
            items: tools,
            cut: None,
        };
        self.open_listed(negotiated, reused, listed);
    }

    /// [`Harness::open`], with a tool list that may have been cut short.
    fn open_listed(&mut self, negotiated: Negotiated, reused: bool, listed: Listed<ListedTool>) {
        let (seq, plan) = self.pending.take().expect("an attempt is pending");
        let link = Rc::new(Recorder::default());
        let wire = match negotiated.era {
            Era::Legacy => Wire::legacy(link.clone() as Rc<dyn Link>),
            Era::Modern => Wire::modern(
                link.clone() as Rc<dyn Link>,
                RequestMeta::new(&negotiated.version, &plan.modern_capabilities, None),
                self.session.http,
            ),
        };
        self.link = link;
        self.seq = seq;
        let opened = Opened {
            transport: None,
            wire,
            negotiated: negotiated.clone(),
            era_note: None,
            reused,
            answered: !reused,
            tools: listed.items,
            tools_cut: listed.cut,
            notifications: Vec::new(),
            subscribed: plan.subscriptions.clone(),
        };
        self.session
            .attempt_done(seq, Ok(opened), Some(negotiated.era), self.now);
        self.drive();
    }

    /// Lets time pass until the session asks for a connection attempt (an HTTP server's first
    /// reconnect is spread over a second; retries wait their backoff).
    fn await_attempt(&mut self) {
        for _ in 0..1000 {
            if self.pending.is_some() {
                return;
            }
            self.advance(Duration::from_millis(50));
        }
        panic!("no connection attempt within 50 s");
    }

    /// Reconnects after a loss, in `era`.
    fn reconnect(&mut self, era: Era) {
        self.await_attempt();
        match era {
            Era::Legacy => self.connect_legacy(),
            Era::Modern => self.connect_modern(Duration::from_secs(3600)),
        }
    }

    fn connect_legacy(&mut self) {
        self.open(legacy(), false, Vec::new());
        assert!(self.session.state().is_ready());
    }

    fn connect_modern(&mut self, ttl: Duration) {
        self.open(modern(ttl), false, Vec::new());
        assert!(self.session.state().is_ready());
    }

    /// The pending attempt fails with `error`, having learned `learned`.
    fn fail_attempt(&mut self, error: Error, learned: Option<Era>) {
        let (seq, _) = self.pending.take().expect("an attempt is pending");
        self.session
            .attempt_done(seq, Err(error), learned, self.now);
        self.drive();
    }

    /// Starts a caller's call; its answer lands in the returned [`Answer`].
    fn call(&mut self, request: CallRequest) -> Rc<Answer> {
        let answer = Rc::new(Answer::default());
        self.session.call(request, answer.clone(), self.now);
        self.drive();
        answer
    }

    /// Lets `d` pass, firing the session's timer at each instant it asks for, as the driver
    /// does.
    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while let Some(at) = self.session.poll_timeout().filter(|at| *at <= end) {
            self.now = self.now.max(at);
            self.session.handle_timeout(self.now);
            self.drive();
        }
        self.now = end;
    }

    /// What the server got since the last look.
    fn written(&self) -> Vec<Value> {
        self.link.drain()
    }

    /// The server sends one message.
    fn send(&mut self, message: Value) {
        let line = serde_json::to_vec(&message).unwrap();
        for inbound in parse_frame(&line).unwrap() {
            self.session
                .transport_event(self.seq, TransportEvent::Message(inbound), self.now);
            self.drive();
        }
    }

    fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    fn event(&mut self, event: TransportEvent) {
        self.session.transport_event(self.seq, event, self.now);
        self.drive();
    }

    /// The connection breaks.
    fn lose(&mut self, why: &str) {
        self.event(TransportEvent::Closed(Error::connection("demo", why)));
    }

    fn state(&self) -> &'static str {
        self.session.state().name()
    }

    fn counters(&self) -> crate::session::status::Counters {
        self.session.status(self.now).counters
    }
}

fn legacy() -> Negotiated {
    Negotiated {
        era: Era::Legacy,
        version: "2025-11-25".into(),
        server_info: None,
        capabilities: Default::default(),
        instructions: None,
        fresh_for: None,
    }
}

fn modern(ttl: Duration) -> Negotiated {
    Negotiated {
        era: Era::Modern,
        version: "2026-07-28".into(),
        server_info: None,
        capabilities: Default::default(),
        instructions: None,
        fresh_for: Some(ttl),
    }
}

/// Runs `test` in both eras: a session-era stdio server and a 2026-07-28 HTTP one.
fn both_eras(test: impl Fn(&mut Harness, Era)) {
    for era in [Era::Legacy, Era::Modern] {
        let mut h = match era {
            Era::Legacy => {
                let mut h = Harness::new(&legacy_stdio(), settings());
                h.connect_legacy();
                h
            }
            Era::Modern => {
                let mut h = Harness::new(&modern_http(), settings());
                h.connect_modern(Duration::from_secs(3600));
                h
            }
        };
        test(&mut h, era);
    }
}

/// The core does no IO and knows no runtime: none of its files (its tests included) names
/// actix, tokio, awc, nix, futures or `std::process`.
#[test]
fn the_session_core_imports_no_runtime_and_no_io() {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session");
    let mut all = Vec::new();
    files(&root, &mut all);
    assert!(all.len() >= 10, "{all:?}");
    // Spelled so that this test's own file does not name them.
    let forbidden: Vec<String> = [
        "act ix",
        "tok io",
        "a wc::",
        "n ix::",
        "fut ures",
        "std::pro cess",
    ]
    .iter()
    .map(|name| name.replace(' ', ""))
    .collect();
    for file in all {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in &forbidden {
                assert!(
                    !code.contains(name.as_str()),
                    "{}:{}: the session core names `{name}`: {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}
