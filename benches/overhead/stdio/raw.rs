//! The reference: a hand-written tokio JSON-lines client, the practical limit of JSON-RPC over
//! a pipe that every other client's figures are divided by.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::process::Stdio;
use std::rc::Rc;

use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

use crate::echo::{check_raw_result, EchoParams, RawRequest, RawResponse, ECHO_BIN};
use crate::workload::{Load, Measured};

/// Latencies and throughput of the raw client under `load`.
pub(super) async fn run(load: &Load) -> Measured {
    let raw = Rc::new(RawClient::start().await);
    let call = move || {
        let raw = raw.clone();
        async move { raw.echo().await }
    };
    load.run(call).await
}

/// The practical limit of JSON-RPC over a pipe: serialize each request with serde_json into
/// one buffer, one writer task that writes whatever is buffered in one syscall, one reader
/// task that parses each line and hands it to its caller through a oneshot channel.
pub(super) struct RawClient {
    out: Rc<RefCell<Vec<u8>>>,
    wake: Rc<Notify>,
    pending: Rc<RefCell<HashMap<u64, oneshot::Sender<RawResponse>>>>,
    next_id: Cell<u64>,
    _child: tokio::process::Child,
}

impl RawClient {
    pub(super) async fn start() -> RawClient {
        let mut child = tokio::process::Command::new(ECHO_BIN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the echo server");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let out = Rc::new(RefCell::new(Vec::with_capacity(64 * 1024)));
        let wake = Rc::new(Notify::new());
        let pending: Rc<RefCell<HashMap<u64, oneshot::Sender<RawResponse>>>> = Rc::default();
        {
            let (out, wake) = (out.clone(), wake.clone());
            tokio::task::spawn_local(async move {
                let mut batch = Vec::with_capacity(64 * 1024);
                loop {
                    wake.notified().await;
                    std::mem::swap(&mut batch, &mut *out.borrow_mut());
                    if batch.is_empty() {
                        continue;
                    }
                    if stdin.write_all(&batch).await.is_err() {
                        return;
                    }
                    batch.clear();
                }
            });
        }
        {
            let pending = pending.clone();
            tokio::task::spawn_local(async move {
                let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
                let mut line = Vec::with_capacity(4096);
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let response: RawResponse =
                        serde_json::from_slice(&line).expect("the echo server answers JSON-RPC");
                    let waiter = response.id.and_then(|id| pending.borrow_mut().remove(&id));
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(response);
                    }
                }
            });
        }
        let client = RawClient {
            out,
            wake,
            pending,
            next_id: Cell::new(0),
            _child: child,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-bench", "version": "0"},
                }),
            )
            .await;
        assert!(init.result.is_some(), "initialize failed");
        client.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn write(&self, message: &impl Serialize) {
        let mut out = self.out.borrow_mut();
        serde_json::to_writer(&mut *out, message).expect("serialize a request");
        out.push(b'\n');
        drop(out);
        self.wake.notify_one();
    }

    async fn request<P: Serialize>(&self, method: &str, params: P) -> RawResponse {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        self.write(&RawRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        });
        rx.await.expect("the echo server went away")
    }

    /// One echo call, its answer unchecked.
    pub(super) async fn echo_call(&self) -> RawResponse {
        self.request("tools/call", EchoParams::echo()).await
    }

    async fn echo(&self) {
        check_echo(&self.echo_call().await);
    }
}

/// Checks a raw client's answer to an echo call.
pub(super) fn check_echo(response: &RawResponse) {
    assert!(response.error.is_none(), "echo failed");
    check_raw_result(response.result.as_ref());
}
