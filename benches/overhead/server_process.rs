//! The HTTP test server in a process of its own, so that the scale child's RSS and CPU are the
//! client's alone: [`ServerProcess`] is the scale child's handle on it, [`child`] its side.
//! They talk in lines: the server prints `port <n>` once, then answers each command on its
//! stdin: `forget` (drop all sessions; start counting initialize POSTs) → `ok`, `herd` →
//! `herd <peak in any 100 ms window> <total>` since `forget`, and `quit`.

use std::io::{BufRead, Write as _};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::herd::InitializeCounter;
use crate::http_server;
use crate::procfs::cpu_ms;

/// The test server in a process of its own, driven through its stdin.
pub(crate) struct ServerProcess {
    pub(crate) child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl ServerProcess {
    pub(crate) async fn start() -> (ServerProcess, u16) {
        let exe = std::env::current_exe().expect("current_exe");
        let mut child = tokio::process::Command::new(exe)
            .args(["--child", "http-server"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the test server process");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut server = ServerProcess {
            child,
            stdin,
            lines: tokio::io::BufReader::new(stdout).lines(),
        };
        let first = server.read().await;
        let port = first
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .expect("the server process prints its port");
        (server, port)
    }

    async fn read(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the server process answers")
            .expect("read from the server process")
            .expect("the server process is running")
    }

    pub(crate) async fn send(&mut self, cmd: &str) {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write to the server process");
    }

    /// Sends `cmd` and returns the server's answer line.
    pub(crate) async fn command(&mut self, cmd: &str) -> String {
        self.send(cmd).await;
        self.read().await
    }

    /// CPU time the server process has used so far, in ms.
    pub(crate) fn cpu_ms(&self) -> f64 {
        self.child
            .id()
            .map_or(f64::NAN, |pid| cpu_ms(&pid.to_string()))
    }
}

/// The test server's process: `forget` (drop all sessions; start counting initialize POSTs),
/// `herd` (answer `<peak in any 100 ms window> <total>` since `forget`), `quit`.
pub(crate) async fn child() {
    let server = http_server::TestHttpServer::start().await;
    println!("port {}", server.port());
    let _ = std::io::stdout().flush();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let stats = server.stats();
    let faults = server.faults();
    let counter = InitializeCounter::default();
    while let Some(cmd) = rx.recv().await {
        match cmd.trim() {
            "forget" => {
                counter.start(&stats);
                faults.forget_sessions(http_server::SessionGone::NotFound);
                println!("ok");
            }
            "herd" => {
                let (peak, total) = counter.finish();
                println!("herd {peak} {total}");
            }
            "quit" => break,
            other => println!("unknown command {other}"),
        }
        let _ = std::io::stdout().flush();
    }
    server.stop().await;
}
