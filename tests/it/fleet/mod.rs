//! A fleet (issue 21): replica processes, each with its own supervisor, share their tasks
//! through one `PostgresTaskStore` and one HTTP server. A replica killed with SIGKILL in the
//! middle of its tasks has them taken over by another once their leases lapse; each outcome
//! is delivered once, to whoever awaits it on whichever replica; the tool runs once; and no
//! task is ever polled by two replicas at once (the server keeps, per task, the runs of polls
//! of each replica, by their `X-Replica` header).
//!
//! A replica is this test binary again, started with only the test that starts it (`--exact`)
//! and [`CHILD`] describing it: that test then plays the replica. It takes commands on its
//! stdin and says what happened on its stdout, one line each (see [`replica`]). The parent
//! waits for those lines, never for a time.
//!
//! Needs `MCP_SUPERVISOR_TEST_POSTGRES` (`.ci/postgres` starts a server and sets it).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_supervisor::tasks::{PostgresTaskStore, TaskHandle};
use mcp_supervisor::{AwaitTask, ListTasks, ServerConfig, StartTask, Supervisor, TaskStart};
use serde_json::json;

use crate::common::http_server::{Era, TestHttpServer};
use crate::common::rerun;
use crate::common::*;

mod tls;
mod tokens;

/// In a replica's environment: what it is, as `url|schema|name|lease_ms` (the database is
/// the parent's, `MCP_SUPERVISOR_TEST_POSTGRES`, inherited).
const CHILD: &str = "MCP_TEST_FLEET_REPLICA";
/// What starts each line a replica writes (searched for anywhere in a line, as the test
/// harness may write its own text before it).
const MARK: &str = "FLEET ";
/// The longest wait for a line of a replica: only one that hangs or died reaches it.
const LINE_TIMEOUT: Duration = Duration::from_secs(120);

fn target() -> String {
    std::env::var("MCP_SUPERVISOR_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "the fleet tests need a PostgreSQL server: set MCP_SUPERVISOR_TEST_POSTGRES to its \
             connection string (`.ci/postgres` starts one)"
        )
    })
}

/// A supervisor of `web` at `url`, its tasks in the store of replica `name` (whose requests
/// say `X-Replica: <name>`) on `schema` with leases of `lease`, Ready; and its events.
async fn supervise(
    url: String,
    schema: &str,
    name: &str,
    lease: Duration,
    settings: mcp_supervisor::Settings,
) -> (actix::Addr<Supervisor>, Events) {
    let store = PostgresTaskStore::connect_in(&target(), schema)
        .expect("the fleet's database")
        .replica(name)
        .unwrap()
        .lease_time(lease);
    let (events, recipient) = Events::start();
    let sup = Supervisor::builder()
        .settings(settings)
        .server(ServerConfig::http("web", url).header("x-replica", name))
        .task_store(Arc::new(store))
        .subscriber(recipient)
        .start()
        .expect("a supervisor");
    events.ready("web", 1).await;
    (sup, events)
}

// The replica's side.

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{MARK}{line}");
    let _ = out.flush();
}

/// The parent's commands to a replica: the lines of its stdin, read on a thread of their own.
fn commands() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Plays a replica: a supervisor of `web` (the parent's server, with `X-Replica: <name>`) on
/// the shared store. Says `READY`, then takes, one line each:
///
/// - `start <n> <ms>`: starts `n` tasks of `job` running `ms` each (`StartTask`), says
///   `STARTED <task id>` for each and `STARTED-ALL` after the last;
/// - `await <task id>...`: awaits each (`AwaitTask`), saying `RESULT <task id> <text>` or
///   `ERROR <task id> <error code>` as each is answered;
/// - `elsewhere <task id>`: says `ELSEWHERE <task id> <bool>`, whether it follows the task as
///   another replica's (`TaskInfo::elsewhere`).
///
/// A closed stdin (the parent is gone) ends it.
async fn replica(spec: &str) {
    let parts: Vec<&str> = spec.split('|').collect();
    let [url, schema, name, lease_ms] = parts[..] else {
        panic!("a replica's spec: {spec}")
    };
    let lease = Duration::from_millis(lease_ms.parse().unwrap());
    {
        let mut settings = quick_settings();
        settings.call_timeout = Duration::from_secs(60);
        let (sup, _events) = supervise(url.to_owned(), schema, name, lease, settings).await;
        say("READY");
        let mut lines = commands();
        while let Some(line) = lines.recv().await {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["start", n, ms] => {
                    let (n, ms): (usize, u64) = (n.parse().unwrap(), ms.parse().unwrap());
                    for _ in 0..n {
                        let start =
                            StartTask::new("web", "job", json!({"ms": ms, "text": "built"}))
                                .timeout(Duration::from_secs(30));
                        match sup.send(start).await.unwrap() {
                            Ok(TaskStart::Running(handle)) => {
                                say(&format!("STARTED {}", handle.task_id));
                            }
                            other => panic!("a task: {other:?}"),
                        }
                    }
                    say("STARTED-ALL");
                }
                ["await", ids @ ..] => {
                    for id in ids {
                        let handle =
                            TaskHandle::new("web", id.to_string(), "job", SystemTime::now());
                        let wait =
                            sup.send(AwaitTask::new(handle).timeout(Duration::from_secs(60)));
                        let id = id.to_string();
                        actix::spawn(async move {
                            match wait.await.unwrap() {
                                Ok(result) => say(&format!("RESULT {id} {}", text_of(&result))),
                                Err(e) => say(&format!("ERROR {id} {}", e.code())),
                            }
                        });
                    }
                }
                ["elsewhere", id] => {
                    let tasks = sup.send(ListTasks::new("web")).await.unwrap().unwrap();
                    let elsewhere = tasks.iter().any(|t| t.handle.task_id == *id && t.elsewhere);
                    say(&format!("ELSEWHERE {id} {elsewhere}"));
                }
                _ => panic!("a replica's command: {line}"),
            }
        }
        std::process::exit(0);
    }
}

// The parent's side.

/// A replica process, and its lines.
struct Replica {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Replica {
    /// Starts replica `name` of `test` on `server` and the store in `schema`, and waits for it
    /// to be ready.
    async fn start(
        test: &str,
        name: &str,
        server: &TestHttpServer,
        schema: &str,
        lease: Duration,
    ) -> Replica {
        let spec = format!("{}|{schema}|{name}|{}", server.url(), lease.as_millis());
        let mut replica = Replica::spawn(module_path!(), test, name, CHILD, &spec);
        assert_eq!(replica.next().await, "READY");
        replica
    }

    /// Starts replica `name`: test `test` of `module` (its `module_path!()`), with
    /// `key`=`spec` in its environment. Its lines are read as it writes them; nothing is
    /// waited for.
    fn spawn(module: &str, test: &str, name: &str, key: &str, spec: &str) -> Replica {
        let mut child = rerun::start(module, test, key, spec);
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((_, said)) = line.split_once(MARK) {
                    if tx.send(said.to_owned()).is_err() {
                        break;
                    }
                }
            }
        });
        Replica {
            name: name.to_owned(),
            child,
            stdin,
            lines,
        }
    }

    fn tell(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("the replica reads its stdin");
        self.stdin.flush().unwrap();
    }

    /// The replica's next line.
    async fn next(&mut self) -> String {
        match tokio::time::timeout(LINE_TIMEOUT, self.lines.recv()).await {
            Ok(Some(line)) => line,
            other => {
                let status = self.child.try_wait();
                panic!(
                    "no line from replica {} ({other:?}); its status: {status:?}",
                    self.name
                )
            }
        }
    }

    /// Starts `n` tasks of `ms` on this replica: their ids.
    async fn start_tasks(&mut self, n: usize, ms: u64) -> Vec<String> {
        self.tell(&format!("start {n} {ms}"));
        let mut ids = Vec::new();
        loop {
            let line = self.next().await;
            if line == "STARTED-ALL" {
                return ids;
            }
            let id = line
                .strip_prefix("STARTED ")
                .unwrap_or_else(|| panic!("{line}"));
            ids.push(id.to_owned());
        }
    }

    /// Has this replica await `ids`; [`answers`](Self::answers) collects what they get.
    fn await_tasks(&mut self, ids: &[String]) {
        for chunk in ids.chunks(100) {
            self.tell(&format!("await {}", chunk.join(" ")));
        }
    }

    /// The next `count` answers to awaited tasks, by task id (`RESULT <text>`,
    /// `ERROR <code>`); a task answered twice fails the test.
    async fn answers(&mut self, count: usize) -> BTreeMap<String, String> {
        let mut answers = BTreeMap::new();
        while answers.len() < count {
            let line = self.next().await;
            let mut words = line.splitn(3, ' ');
            let (kind, id, what) = (words.next(), words.next(), words.next());
            let (Some(kind), Some(id), Some(what)) = (kind, id, what) else {
                panic!("an answer: {line}")
            };
            let earlier = answers.insert(id.to_owned(), format!("{kind} {what}"));
            assert!(earlier.is_none(), "{id} answered twice on {}", self.name);
        }
        answers
    }

    /// Waits until it follows task `id` as another replica's (its status is no event: asked
    /// every 20 ms, 60 s at most).
    async fn until_elsewhere(&mut self, id: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            self.tell(&format!("elsewhere {id}"));
            match self.next().await.strip_prefix(&format!("ELSEWHERE {id} ")) {
                Some("true") => return,
                Some(_) => {}
                None => panic!("not an answer to elsewhere"),
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} never followed {id} as another's",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills it with SIGKILL, and reaps it.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn schema(test: &str) -> String {
    format!("fleet_{}_{test}", std::process::id())
}

/// The test server (polls asked every `poll_ms`) and replicas r0, r1 and r2 of `test`, on a
/// schema of their own (`tag`), with leases of a second.
async fn fleet(test: &str, tag: &str, poll_ms: u64) -> (TestHttpServer, Vec<Replica>) {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(poll_ms);
    let schema = schema(tag);
    let mut replicas = Vec::new();
    for name in ["r0", "r1", "r2"] {
        replicas.push(Replica::start(test, name, &server, &schema, Duration::from_secs(1)).await);
    }
    (server, replicas)
}

/// Waits until `done` holds of the server's stats (what the server saw is not an event
/// anyone can await), for `within` at most.
async fn until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The replicas that polled `id` took it in turns: none polled it again after another did.
fn polled_in_turns(server: &TestHttpServer, id: &str) -> Vec<String> {
    let pollers = server.stats().task_pollers(id);
    let distinct: BTreeSet<&String> = pollers.iter().collect();
    assert_eq!(
        distinct.len(),
        pollers.len(),
        "{id} was polled by two replicas at once: {pollers:?}"
    );
    pollers
}

#[actix::test]
async fn a_task_of_a_killed_replica_is_taken_over_and_its_outcome_delivered_once() {
    const TEST: &str = "a_task_of_a_killed_replica_is_taken_over_and_its_outcome_delivered_once";
    if let Ok(spec) = std::env::var(CHILD) {
        return replica(&spec).await;
    }
    let (server, mut replicas) = fleet(TEST, "kill", 50).await;
    let mut r0 = replicas.remove(0);
    let ids = r0.start_tasks(1, 3000).await;
    let id = ids[0].clone();
    until("r0 polls its task", Duration::from_secs(10), || {
        server.stats().task_pollers(&id) == ["r0"]
    })
    .await;
    r0.kill();
    // Both others wait for it: one takes it over once r0's lease lapses, and it is delivered
    // to one of them only.
    let mut answers = Vec::new();
    for replica in &mut replicas {
        replica.await_tasks(std::slice::from_ref(&id));
    }
    for replica in &mut replicas {
        answers.push(replica.answers(1).await[&id].clone());
    }
    answers.sort();
    assert_eq!(
        answers,
        ["ERROR outcome_unknown", "RESULT built"],
        "delivered once, the other told it went elsewhere"
    );
    let pollers = polled_in_turns(&server, &id);
    assert_eq!(pollers.len(), 2, "r0, then one taker: {pollers:?}");
    assert_eq!(pollers[0], "r0");
    assert_eq!(server.stats().task_ids(), [id], "the tool ran once");
}

/// A replica that awaits a task another polls hears of its end from the database
/// (`LISTEN`/`NOTIFY`) and delivers it then. With leases of an hour its own looks are twenty
/// minutes apart: only the news can bring the outcome within the replica's 60 s wait. The
/// server holds the task until r1 waits for it as r0's.
#[actix::test]
async fn a_task_that_ends_on_one_replica_is_delivered_at_once_to_its_caller_on_another() {
    const TEST: &str =
        "a_task_that_ends_on_one_replica_is_delivered_at_once_to_its_caller_on_another";
    if let Ok(spec) = std::env::var(CHILD) {
        return replica(&spec).await;
    }
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(50);
    let schema = schema("news");
    let hour = Duration::from_secs(3600);
    let mut r0 = Replica::start(TEST, "r0", &server, &schema, hour).await;
    let mut r1 = Replica::start(TEST, "r1", &server, &schema, hour).await;
    server.faults().hold_tasks(true);
    let ids = r0.start_tasks(1, 0).await;
    r1.await_tasks(&ids);
    r1.until_elsewhere(&ids[0]).await;
    server.faults().hold_tasks(false);
    let answers = r1.answers(1).await;
    assert_eq!(answers[&ids[0]], "RESULT built", "{answers:?}");
    assert_eq!(
        polled_in_turns(&server, &ids[0]),
        ["r0"],
        "polled by r0 alone"
    );
}

/// A replica asked to await a task that already ended on another (its news gone by before
/// it came) looks it up once when its claim is refused, and delivers it then, not at its next
/// look twenty minutes on. Found by review.
#[actix::test]
async fn a_task_that_ended_elsewhere_before_it_was_awaited_is_delivered_at_once() {
    const TEST: &str = "a_task_that_ended_elsewhere_before_it_was_awaited_is_delivered_at_once";
    if let Ok(spec) = std::env::var(CHILD) {
        return replica(&spec).await;
    }
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(50);
    let schema = schema("ended");
    let hour = Duration::from_secs(3600);
    let mut r0 = Replica::start(TEST, "r0", &server, &schema, hour).await;
    let mut r1 = Replica::start(TEST, "r1", &server, &schema, hour).await;
    let ids = r0.start_tasks(1, 0).await;
    let query = format!("SELECT status FROM \"{schema}\".tasks");
    until("r0 records the task's end", Duration::from_secs(30), || {
        let query = query.clone();
        let status: Vec<String> = std::thread::spawn(move || {
            let mut admin = ::postgres::Client::connect(&target(), ::postgres::NoTls).unwrap();
            let rows = admin.query(&query, &[]).unwrap();
            rows.iter().map(|row| row.get(0)).collect()
        })
        .join()
        .unwrap();
        status == ["completed"]
    })
    .await;
    r1.await_tasks(&ids);
    let answers = r1.answers(1).await;
    assert_eq!(answers[&ids[0]], "RESULT built", "{answers:?}");
}

#[actix::test]
async fn a_thousand_tasks_over_three_replicas_one_killed_are_each_polled_by_one_at_a_time() {
    const TEST: &str =
        "a_thousand_tasks_over_three_replicas_one_killed_are_each_polled_by_one_at_a_time";
    if let Ok(spec) = std::env::var(CHILD) {
        return replica(&spec).await;
    }
    let (server, mut replicas) = fleet(TEST, "thousand", 500).await;
    // r0's last, so that they are all running when it dies (the others' end meanwhile).
    let mut started = Vec::new();
    for (replica, n) in replicas.iter_mut().skip(1).zip([333, 333]) {
        started.push(replica.start_tasks(n, 3000).await);
    }
    // Long enough to be running still when r0 dies, however slow the 334 starts.
    let orphans = replicas[0].start_tasks(334, 8000).await;
    assert_eq!(server.stats().task_ids().len(), 1000);
    // r0 dies with its 334 tasks running; each other awaits its own and half of r0's.
    let r0 = replicas.remove(0);
    r0.kill();
    let (first, second) = orphans.split_at(orphans.len() / 2);
    let mut answers = BTreeMap::new();
    let mut awaited = Vec::new();
    for ((replica, own), adopted) in replicas.iter_mut().zip(&started).zip([first, second]) {
        let ids: Vec<String> = own.iter().chain(adopted).cloned().collect();
        replica.await_tasks(&ids);
        awaited.push(ids.len());
    }
    for (replica, count) in replicas.iter_mut().zip(awaited) {
        answers.extend(replica.answers(count).await);
    }
    assert_eq!(answers.len(), 1000);
    let failed: Vec<_> = answers
        .iter()
        .filter(|(_, a)| *a != "RESULT built")
        .collect();
    assert!(failed.is_empty(), "every task delivered: {failed:?}");
    for (own, name) in started.iter().zip(["r1", "r2"]) {
        // (A replica stalled past its leases may see its own tasks taken over: in turns.)
        for id in own {
            let pollers = polled_in_turns(&server, id);
            assert_eq!(
                pollers.first().map(String::as_str),
                Some(name),
                "{id}: {pollers:?}"
            );
        }
    }
    let mut taken = 0;
    for id in &orphans {
        let pollers = polled_in_turns(&server, id);
        assert!(
            pollers.len() <= 2 && pollers.iter().skip(1).all(|p| p != "r0"),
            "{id}: r0, then one taker: {pollers:?}"
        );
        taken += usize::from(pollers.last().is_some_and(|p| p != "r0"));
    }
    assert_eq!(taken, orphans.len(), "every task of r0 was taken over");
    assert_eq!(server.stats().task_ids().len(), 1000, "each tool ran once");
}

/// A store shared by replicas that cannot record a new task fails the task's call at once,
/// with a typed error, rather than at its deadline; calls that need no store go on.
#[actix::test]
async fn with_the_database_failing_a_task_fails_at_once_and_other_calls_go_on() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    let schema = schema("failing");
    let lease = Duration::from_secs(1);
    let (sup, _events) = supervise(server.url(), &schema, "a", lease, quick_settings()).await;
    // Every statement of the store fails from now on, as with a database that is gone. (On a
    // thread: the client runs a runtime of its own.)
    let drop = format!("DROP SCHEMA \"{schema}\" CASCADE");
    std::thread::spawn(move || {
        let mut admin = ::postgres::Client::connect(&target(), ::postgres::NoTls).unwrap();
        admin.batch_execute(&drop).unwrap();
    })
    .join()
    .unwrap();
    let start = StartTask::new("web", "job", json!({"ms": 100})).timeout(Duration::from_secs(60));
    let error = sup.send(start).await.unwrap().expect_err("not recorded");
    assert_eq!(
        error.kind(),
        mcp_supervisor::ErrorKind::OutcomeUnknown,
        "{error}"
    );
    assert!(error.to_string().contains("could not record"), "{error}");
    let listed = sup
        .send(mcp_supervisor::Call::new("web", "tools/list", None))
        .await
        .unwrap()
        .expect("no store needed");
    assert!(listed["tools"].is_array(), "{listed}");
}

/// The lease owner of each task in `schema`, by the database.
fn lease_owners(schema: &str) -> Vec<Option<String>> {
    let query = format!("SELECT lease_owner FROM \"{schema}\".tasks ORDER BY task_id");
    std::thread::spawn(move || {
        let mut admin = ::postgres::Client::connect(&target(), ::postgres::NoTls).unwrap();
        let rows = admin.query(&query, &[]).unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    })
    .join()
    .unwrap()
}

/// A replica shut down gives its leases up: another takes its tasks over at its next look,
/// not a lease later.
#[actix::test]
async fn a_replica_shut_down_gives_its_leases_up_for_another_to_take() {
    let server = TestHttpServer::start_with(Era::Modern).await;
    server.faults().task_poll_ms(50);
    let schema = schema("release");
    let lease = Duration::from_secs(3);
    let (a, _a_events) = supervise(server.url(), &schema, "a", lease, quick_settings()).await;
    let start = StartTask::new("web", "job", json!({"ms": 1500, "text": "built"}));
    let TaskStart::Running(handle) = a.send(start).await.unwrap().unwrap() else {
        panic!("a task")
    };
    assert_eq!(lease_owners(&schema), [Some("a".to_owned())]);
    a.send(mcp_supervisor::Shutdown).await.unwrap();
    assert_eq!(lease_owners(&schema), [None], "given up");
    let (b, _b_events) = supervise(server.url(), &schema, "b", lease, quick_settings()).await;
    let result = b
        .send(AwaitTask::new(handle.clone()).timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("taken over and delivered");
    assert_eq!(text_of(&result), "built");
    let pollers = polled_in_turns(&server, &handle.task_id);
    assert_eq!(pollers.last().map(String::as_str), Some("b"), "{pollers:?}");
}
