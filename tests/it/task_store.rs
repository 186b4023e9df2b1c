//! Crash safety of the SQLite task store (`mcp_supervisor::tasks`): a child process writes the
//! life of a task into a store and is killed with SIGKILL after each step, while a step is
//! under way, and at a random point of a long run of updates. The store, reopened, always
//! holds the last step whole: never a torn record, never a corrupt file, never an outcome
//! delivered twice.
//!
//! The child is this test binary again, started with only the test that starts it
//! (`--exact`) and [`CHILD`] naming the store's path: that test then plays the child. It
//! prints a line after each step and, in the step-by-step test, waits for a line on its stdin
//! before the next one, so that the parent kills it exactly between two steps. The parent
//! waits for those lines, never for a time.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use mcp_supervisor::tasks::{
    arguments_digest, SqliteTaskStore, TaskKey, TaskRecord, TaskStatus, TaskStore, TaskUpdate,
};

/// In the child's environment: the path of its store.
const CHILD: &str = "MCP_TEST_TASK_STORE_CHILD";
/// What starts each line the child writes after a step: `TASKSTEP <n>`. Searched for anywhere
/// in a line, as the test harness may write its own text before it.
const MARK: &str = "TASKSTEP ";
/// What starts the line the step-by-step child writes as it begins a step: `TASKBEGIN <n>`.
const BEGIN: &str = "TASKBEGIN ";
/// The longest wait for a line of the child: only a child that hangs or died reaches it.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);

const OUTCOME: &str = r#"{"content":[{"type":"text","text":"done"}],"isError":false}"#;
const INPUT: &str = "elicit-1";
const STEPS: usize = 6;

fn key() -> TaskKey {
    TaskKey::new("fs", "task-1")
}

// The child's side.

fn say(mark: &str, step: usize) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{mark}{step}").unwrap();
    out.flush().unwrap();
}

/// Waits for the parent's go-ahead; a closed stdin (the parent is gone) ends the child.
fn wait_go(stdin: &mut impl std::io::BufRead) {
    let mut line = String::new();
    if stdin.read_line(&mut line).unwrap_or(0) == 0 {
        std::process::exit(0);
    }
}

/// The life of a task, one step at a time: step `n` is done when `TASKSTEP n` is written.
fn child_steps(path: &Path) {
    let mut stdin = std::io::stdin().lock();
    let store = SqliteTaskStore::open(path).unwrap();
    let k = key();
    let steps: [&dyn Fn(); STEPS] = [
        &|| {
            let record = TaskRecord::new(
                "fs",
                "npx -y @modelcontextprotocol/server-filesystem /srv",
                "task-1",
                "read_text_file",
                arguments_digest(&serde_json::json!({"path": "/srv/a.txt"})),
                SystemTime::now(),
            )
            .ttl(Duration::from_secs(3600));
            assert!(store.insert(&record).unwrap());
        },
        &|| {
            let change = TaskUpdate::new()
                .status(TaskStatus::InputRequired)
                .status_message("needs a confirmation");
            assert!(store.update(&k, &change).unwrap());
        },
        &|| assert!(store.mark_input_answered(&k, INPUT).unwrap()),
        &|| {
            let change = TaskUpdate::new()
                .status(TaskStatus::Working)
                .no_status_message()
                .poll_interval(Duration::from_millis(500));
            assert!(store.update(&k, &change).unwrap());
        },
        &|| {
            assert!(store
                .finish(&k, TaskStatus::Completed, Some(OUTCOME))
                .unwrap())
        },
        &|| {
            let taken = store.take_outcome(&k).unwrap().unwrap();
            assert_eq!(taken.outcome.as_deref(), Some(OUTCOME));
        },
    ];
    say(MARK, 0);
    for (i, step) in steps.iter().enumerate() {
        wait_go(&mut stdin);
        say(BEGIN, i + 1);
        step();
        say(MARK, i + 1);
    }
    wait_go(&mut stdin);
}

/// Updates in a loop, each one changing two columns together, and every tenth an answered
/// input besides; `TASKSTEP n` after update `n`.
fn child_loop(path: &Path) {
    let store = SqliteTaskStore::open(path).unwrap();
    let record = TaskRecord::new("fs", "cmd", "task-1", "t", "d", SystemTime::now());
    store.insert(&record).unwrap();
    let k = key();
    for n in 1..=LOOP_UPDATES {
        let change = TaskUpdate::new()
            .status_message(format!("n={n}"))
            .poll_interval(Duration::from_millis(n));
        store.update(&k, &change).unwrap();
        if n % 10 == 0 {
            store.mark_input_answered(&k, &format!("in-{n}")).unwrap();
        }
        say(MARK, n as usize);
    }
    wait_go(&mut std::io::stdin().lock());
}

const LOOP_UPDATES: u64 = 100_000;

// The parent's side.

/// A child started on the store at `path`, and its lines.
struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

fn start(test: &str, path: &Path) -> Running {
    let mut child = crate::common::rerun::start(module_path!(), test, CHILD, path);
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Running {
        child,
        stdin,
        lines,
    }
}

impl Running {
    /// Waits for the child's next `TASKSTEP` line, and returns its step.
    fn next_step(&mut self) -> usize {
        self.next(MARK)
    }

    /// Waits for the child's next line marked `mark`, and returns its step.
    fn next(&mut self, mark: &str) -> usize {
        loop {
            let line = match self.lines.recv_timeout(LINE_TIMEOUT) {
                Ok(line) => line,
                Err(e) => {
                    let status = self.child.try_wait();
                    panic!("no line from the child ({e}); its status: {status:?}")
                }
            };
            if let Some((_, step)) = line.split_once(mark) {
                return step.trim().parse().unwrap();
            }
        }
    }

    fn go(&mut self) {
        self.stdin.write_all(b"go\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// SIGKILL (what `Child::kill` sends on Unix), and the proof that it, not an exit, ended it.
    fn kill(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
    }
}

/// Which step's state the store holds: the record as each step leaves it, and nothing else.
fn stage(record: Option<&TaskRecord>) -> usize {
    let Some(r) = record else { return 0 };
    let answered: Vec<&str> = r.answered_inputs.iter().map(String::as_str).collect();
    let state = (
        r.status,
        r.status_message.as_deref(),
        r.poll_interval,
        answered.as_slice(),
        r.outcome.as_deref(),
        r.delivered,
    );
    let half = Some(Duration::from_millis(500));
    let waiting = Some("needs a confirmation");
    use TaskStatus::*;
    match state {
        (Working, None, None, [], None, false) => 1,
        (InputRequired, m, None, [], None, false) if m == waiting => 2,
        (InputRequired, m, None, [INPUT], None, false) if m == waiting => 3,
        (Working, None, p, [INPUT], None, false) if p == half => 4,
        (Completed, None, p, [INPUT], Some(OUTCOME), false) if p == half => 5,
        (Completed, None, p, [INPUT], None, true) if p == half => 6,
        _ => panic!("a record no step writes (torn?): {r:?}"),
    }
}

/// Reopens the store and checks that it holds step `expected` (or, when a step was under
/// way, the next one), and that an outcome not yet taken is taken exactly once. Returns the
/// step found.
fn check(path: &Path, expected: &[usize]) -> usize {
    let store = SqliteTaskStore::open(path).expect("the store reopens after a kill");
    let record = store.get(&key()).expect("the record reads");
    let found = stage(record.as_ref());
    assert!(
        expected.contains(&found),
        "step {found}, expected one of {expected:?}"
    );
    let listed = store.list(None).unwrap();
    assert_eq!(listed.len(), usize::from(found > 0));
    match found {
        5 => {
            let taken = store.take_outcome(&key()).unwrap().unwrap();
            assert_eq!(taken.outcome.as_deref(), Some(OUTCOME));
            assert_eq!(store.take_outcome(&key()).unwrap(), None, "taken once");
            drop(store);
            let again = SqliteTaskStore::open(path).unwrap();
            assert_eq!(again.take_outcome(&key()).unwrap(), None, "and for good");
        }
        6 => assert_eq!(
            store.take_outcome(&key()).unwrap(),
            None,
            "delivered before the kill: never again"
        ),
        _ => assert_eq!(store.take_outcome(&key()).unwrap(), None, "not ended"),
    }
    found
}

/// For every step k: killed while it waits after step k, the store holds exactly step k;
/// killed as soon as it says it begins step k + 1 (inside the step's transaction, or just
/// before or after it), it holds k or k + 1, whole.
#[test]
fn a_kill_after_or_during_any_step_leaves_one_step_whole() {
    if let Some(path) = std::env::var_os(CHILD) {
        return child_steps(Path::new(&path));
    }
    let mut seen_during = Vec::new();
    for k in 0..=STEPS {
        for during in [false, true] {
            if during && k == STEPS {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("tasks.sqlite3");
            let mut child = start(
                "a_kill_after_or_during_any_step_leaves_one_step_whole",
                &path,
            );
            loop {
                let step = child.next_step();
                if step == k {
                    break;
                }
                child.go();
            }
            if during {
                child.go();
                assert_eq!(child.next(BEGIN), k + 1);
            }
            child.kill();
            let expected: &[usize] = if during { &[k, k + 1] } else { &[k] };
            let found = check(&path, expected);
            if during {
                seen_during.push((k, found));
            }
        }
    }
    println!("killed during step k+1, found (k, step): {seen_during:?}");
}

/// Killed at a random point of a run of updates, each of which changes two columns together:
/// the store holds one update whole, at least the last one the child reported.
#[test]
fn a_kill_during_many_updates_leaves_a_whole_one() {
    if let Some(path) = std::env::var_os(CHILD) {
        return child_loop(Path::new(&path));
    }
    for _ in 0..3 {
        let at: usize = rand::random_range(1..=300);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let mut child = start("a_kill_during_many_updates_leaves_a_whole_one", &path);
        while child.next_step() < at {}
        child.kill();

        let store = SqliteTaskStore::open(&path).expect("the store reopens after a kill");
        let r = store
            .get(&key())
            .unwrap()
            .expect("inserted before the first update");
        let message = r.status_message.as_deref().unwrap();
        let n: u64 = message.strip_prefix("n=").unwrap().parse().unwrap();
        assert!(n >= at as u64, "update {n} stored, {at} was reported done");
        assert_eq!(
            r.poll_interval,
            Some(Duration::from_millis(n)),
            "the two columns of one update go together"
        );
        // Every tenth update answered an input just after it: all of those before `n` are
        // there, and none after.
        for m in (10..=n).step_by(10) {
            let recorded = r.answered_inputs.contains(&format!("in-{m}"));
            assert!(recorded || m == n, "in-{m} missing with update {n} stored");
        }
        assert!(r.answered_inputs.len() as u64 <= n / 10);
        println!("killed after update {at} was reported; update {n} stored");
    }
}
