//! Re-executing this binary as a child (`--child <what> args...`), and the one line a child
//! answers with: `RESULT <json>`. Each measurement runs in a fresh process so that its peak
//! RSS and its CPU time are its own.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::plan::Plan;

/// Runs this binary with `--child args...` and returns the JSON it prints on a `RESULT` line.
pub(crate) fn run(plan: &Plan, args: &[&str], limit: Duration) -> Value {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = if plan.pin {
        let mut c = Command::new("taskset");
        c.arg("-c").arg("0").arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.arg("--child")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn a bench child");
    let mut stdout = child.stdout.take().expect("child stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a bench child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bench child {args:?} took longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = reader.join().expect("child stdout reader");
    assert!(status.success(), "bench child {args:?} failed: {status}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("bench child {args:?} printed no RESULT line:\n{text}"));
    serde_json::from_str(line).expect("child RESULT is JSON")
}

/// The child's answer to [`run`].
pub(crate) fn print_result(result: &Value) {
    println!("RESULT {result}");
}
