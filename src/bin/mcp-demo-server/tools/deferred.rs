//! Tools whose answer comes later, from a worker thread: `slow`, `counter` with a delay,
//! `ask_client` and (in the 2025 era) `confirm`; with the two things that end such a wait from
//! outside: a cancellation (`notifications/cancelled`) and the client's response to our own
//! request. (In the 2026-07-28 era `ask_client` and `confirm` answer at once: see `mrtr`.)
//!
//! Kept together because they share one rule: the reader thread never blocks, so `ping` and
//! friends keep being answered while these run, and a call whose entry in `State::running`
//! is gone is never answered.

use std::io;
use std::process;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use super::super::jsonrpc::{optional, required_str, Args, Reply, RpcError, INTERNAL_ERROR};
use super::super::persist::bump_count_file;
use super::super::server::Server;
use super::super::{lock, stderr_line};
use super::mrtr::{confirm_request, confirm_rounds, confirmed};
use super::{structured_result, text_result, Outcome};

/// How often a worker waiting for the client looks for a cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Waits `duration` unless a cancellation arrives first; returns true if cancelled.
pub(super) fn wait_or_cancel(cancel: &Receiver<()>, duration: Duration) -> bool {
    match cancel.recv_timeout(duration) {
        Ok(()) => true,
        Err(RecvTimeoutError::Timeout) => false,
        // Only the cancellation path drops the sender, so treat that as a cancellation too.
        Err(RecvTimeoutError::Disconnected) => true,
    }
}

/// Whether a cancellation has arrived (the cancellation path also drops the sender).
fn is_cancelled(cancel: &Receiver<()>) -> bool {
    matches!(cancel.try_recv(), Ok(()) | Err(TryRecvError::Disconnected))
}

/// Waits for the client's response unless a cancellation arrives first (`None`).
pub(super) fn recv_or_cancel(reply: &Receiver<Value>, cancel: &Receiver<()>) -> Option<Value> {
    loop {
        match reply.recv_timeout(CANCEL_POLL) {
            Ok(response) => return Some(response),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) if is_cancelled(cancel) => return None,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

fn client_response_result(response: &Value) -> Value {
    match response.get("error") {
        Some(error) => json!({ "content": [{ "type": "text", "text": error.to_string() }],
                               "isError": true }),
        None => text_result(response.get("result").unwrap_or(&Value::Null).to_string()),
    }
}

impl Server {
    /// Runs `work` on its own thread; it gets a cancellation receiver and returns `None` when it
    /// saw a cancellation. The answer is only sent if the call was not cancelled meanwhile.
    pub(super) fn spawn_call<F>(&self, id: &Value, work: F) -> Result<Outcome, RpcError>
    where
        F: FnOnce(&Server, &Receiver<()>) -> Option<Reply> + Send + 'static,
    {
        let key = id.to_string();
        let (cancel_tx, cancel_rx) = mpsc::channel();
        lock(&self.state).running.insert(key.clone(), cancel_tx);
        let (server, id, thread_key) = (self.clone(), id.clone(), key.clone());
        let spawned = thread::Builder::new().spawn(move || {
            let reply = work(&server, &cancel_rx);
            let still_wanted = lock(&server.state).running.remove(&thread_key).is_some();
            if let (Some(reply), true) = (reply, still_wanted) {
                server.respond_call(&id, reply);
            }
        });
        match spawned {
            Ok(_) => Ok(Outcome::Deferred),
            Err(e) => {
                lock(&self.state).running.remove(&key);
                Err(RpcError::new(
                    INTERNAL_ERROR,
                    format!("cannot start thread: {e}"),
                ))
            }
        }
    }

    pub(crate) fn on_cancelled(&self, params: &Args) {
        let request_id = params.get("requestId").cloned().unwrap_or(Value::Null);
        self.log_event(&format!("cancelled {request_id}"));
        let running = lock(&self.state).running.remove(&request_id.to_string());
        if let Some(cancel) = running {
            let _ = cancel.send(());
        }
        self.forget_task_waiter(&request_id);
    }

    /// Hands a client response to the call waiting for it (`ask_client`, `confirm`, a
    /// `long_job` without a task), or to the task whose input request it answers; others are
    /// ignored.
    pub(crate) fn route_client_reply(&self, message: Value) {
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            return;
        };
        let waiter = lock(&self.state).pending_client_replies.remove(id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(message);
            }
            None => {
                self.answer_task_elicitation(id, &message);
            }
        }
    }

    pub(super) fn tool_slow(
        &self,
        id: &Value,
        args: &Args,
        progress_token: Option<Value>,
    ) -> Result<Outcome, RpcError> {
        let seconds = optional(args, "seconds", 1.0, Value::as_f64, "a number")?;
        let steps = optional(args, "steps", 5, Value::as_u64, "a non-negative integer")?;
        let total = Duration::try_from_secs_f64(seconds).map_err(|_| {
            RpcError::invalid_params("`seconds` must be a non-negative, finite number")
        })?;
        let divisor = u32::try_from(steps.max(1))
            .map_err(|_| RpcError::invalid_params("`steps` is too large"))?;
        let per_step = total / divisor;
        // Echo `seconds` the way the client wrote it ("1", "0.5"), not as a reformatted float.
        let shown = match args.get("seconds") {
            Some(Value::Number(n)) => n.to_string(),
            _ => "1".to_owned(),
        };
        self.spawn_call(id, move |server, cancel| {
            if steps == 0 && wait_or_cancel(cancel, total) {
                return None;
            }
            for step in 1..=steps {
                if wait_or_cancel(cancel, per_step) {
                    return None;
                }
                if let Some(token) = &progress_token {
                    let progress = json!({
                        "progressToken": token,
                        "progress": step,
                        "total": steps,
                        "message": format!("step {step}/{steps}"),
                    });
                    server.notify("notifications/progress", Some(progress));
                }
            }
            Some(Ok(text_result(format!("done after {shown}s"))))
        })
    }

    /// The count is made durable before anything else happens, so a crash or a lost answer
    /// still leaves evidence that the (non-idempotent) call ran.
    pub(super) fn tool_counter(&self, id: &Value, args: &Args) -> Result<Outcome, RpcError> {
        let delay_ms = optional(args, "delay_ms", 0, Value::as_u64, "a non-negative integer")?;
        let crash = optional(args, "crash", false, Value::as_bool, "a boolean")?;
        let count = self
            .bump_counter()
            .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("counter file: {e}")))?;
        self.log_event(&format!("counter {count}"));
        if crash {
            stderr_line("demo: counter crashing as asked");
            process::exit(3);
        }
        let reply = Ok(structured_result(
            count.to_string(),
            json!({ "count": count }),
        ));
        if delay_ms == 0 {
            return Ok(Outcome::Reply(reply));
        }
        self.spawn_call(id, move |_, cancel| {
            let cancelled = wait_or_cancel(cancel, Duration::from_millis(delay_ms));
            (!cancelled).then_some(reply)
        })
    }

    fn bump_counter(&self) -> io::Result<u64> {
        // Holding the state lock serialises concurrent increments of the file.
        let mut state = lock(&self.state);
        match &self.config.counter_file {
            Some(path) => bump_count_file(path),
            None => {
                state.memory_counter = state.memory_counter.saturating_add(1);
                Ok(state.memory_counter)
            }
        }
    }

    pub(super) fn tool_ask_client(&self, id: &Value, args: &Args) -> Result<Outcome, RpcError> {
        let method = required_str(args, "method")?;
        let params = match args.get("params") {
            None | Some(Value::Null) => None,
            Some(params @ Value::Object(_)) => Some(params.clone()),
            Some(_) => return Err(RpcError::invalid_params("`params` must be an object")),
        };
        let (request_id, reply_rx) = self.expect_client_reply();
        let mut request = json!({ "jsonrpc": "2.0", "id": request_id, "method": method });
        if let Some(params) = params {
            request["params"] = params;
        }
        self.out.send(&request);
        self.spawn_call(id, move |_, _| {
            let response = reply_rx.recv().ok()?;
            Some(Ok(client_response_result(&response)))
        })
    }
}

impl Server {
    /// A new id for a request of ours to the client, registered before it is sent; the reader
    /// thread routes the response to the receiver later.
    pub(super) fn expect_client_reply(&self) -> (String, Receiver<Value>) {
        let (reply_tx, reply_rx) = mpsc::channel();
        let mut state = lock(&self.state);
        state.next_server_request += 1;
        let request_id = format!("srv-{}", state.next_server_request);
        state
            .pending_client_replies
            .insert(request_id.clone(), reply_tx);
        (request_id, reply_rx)
    }

    /// `confirm` in the 2025 era: the elicitation is a real request to the client, sent
    /// `rounds` times in turn; the answer is the last round's `ok`. A client error answers the
    /// call as `ask_client` does; a cancellation ends the wait. The first request is sent from
    /// the reader thread, as `ask_client`'s is, so its id and place in the output are fixed.
    pub(super) fn tool_confirm(&self, id: &Value, args: &Args) -> Result<Outcome, RpcError> {
        let rounds = confirm_rounds(args)?;
        optional(args, "state_only", false, Value::as_bool, "a boolean")?;
        let call_id = id.clone();
        let mut asked = self.ask_to_confirm(&call_id, 1, rounds);
        self.spawn_call(id, move |server, cancel| {
            let mut round = 1;
            loop {
                let (request_id, reply_rx) = asked;
                let Some(response) = recv_or_cancel(&reply_rx, cancel) else {
                    lock(&server.state)
                        .pending_client_replies
                        .remove(&request_id);
                    return None;
                };
                if response.get("error").is_some() {
                    return Some(Ok(client_response_result(&response)));
                }
                if round == rounds {
                    let result = response.get("result").cloned().unwrap_or_default();
                    return Some(Ok(confirmed(&result)));
                }
                if is_cancelled(cancel) {
                    return None;
                }
                round += 1;
                asked = server.ask_to_confirm(&call_id, round, rounds);
            }
        })
    }

    /// Sends round `round` of `confirm`'s elicitation, registered for its response first.
    fn ask_to_confirm(
        &self,
        call_id: &Value,
        round: u64,
        rounds: u64,
    ) -> (String, Receiver<Value>) {
        let (request_id, reply_rx) = self.expect_client_reply();
        self.log_event(&format!(
            "mrtr confirm id={call_id} ask {round}/{rounds} {request_id}"
        ));
        let mut request = confirm_request();
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(request_id);
        self.out.send(&request);
        (request_id, reply_rx)
    }
}
