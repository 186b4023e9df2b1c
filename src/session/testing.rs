//! What the session's unit tests share: a [`Recorder`] link that keeps what is written to it,
//! in order, for a test to read back (the session's side of the in-memory transport, without
//! any runtime).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use serde_json::Value;

use crate::transport::{Link, Outgoing};

/// A link that records every message written to it.
#[derive(Default)]
pub(crate) struct Recorder {
    sent: RefCell<VecDeque<Outgoing>>,
    /// Once set, writes fail as on a connection that is gone.
    pub closed: Cell<bool>,
}

/// Nothing was written (yet).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Empty;

impl Recorder {
    /// The oldest message not read yet.
    pub fn try_recv(&self) -> Result<Outgoing, Empty> {
        self.sent.borrow_mut().pop_front().ok_or(Empty)
    }

    /// Every message not read yet, as JSON (an abandon as `{"abandon": id}`).
    pub fn drain(&self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(item) = self.try_recv() {
            out.push(match item {
                Outgoing::Line(line) | Outgoing::Modern { line, .. } => {
                    serde_json::from_slice(&line).expect("the session writes JSON")
                }
                Outgoing::Abandon(id) => serde_json::json!({ "abandon": id }),
            });
        }
        out
    }
}

impl Link for Recorder {
    fn send_with(&self, write: &mut dyn FnMut(&mut Vec<u8>)) -> bool {
        if self.closed.get() {
            return false;
        }
        let mut line = Vec::new();
        write(&mut line);
        self.sent.borrow_mut().push_back(Outgoing::Line(line));
        true
    }

    fn send_modern(&self, line: Vec<u8>, headers: Vec<(String, String)>) -> bool {
        if self.closed.get() {
            return false;
        }
        self.sent
            .borrow_mut()
            .push_back(Outgoing::Modern { line, headers });
        true
    }

    fn abandon(&self, id: u64) {
        self.sent.borrow_mut().push_back(Outgoing::Abandon(id));
    }
}

/// A caller's end of a call, as a test holds it: what it was answered, and whether it left.
#[derive(Default)]
pub(crate) struct Answer {
    got: RefCell<Option<Result<Value, crate::error::Error>>>,
    left: Cell<bool>,
}

impl Answer {
    /// The answer, if one came (taken: a second look finds none).
    pub fn take(&self) -> Option<Result<Value, crate::error::Error>> {
        self.got.borrow_mut().take()
    }

    /// The caller stops waiting (drops its future).
    pub fn leave(&self) {
        self.left.set(true);
    }
}

impl crate::session::entry::Reply for Answer {
    fn answer(
        &self,
        _server: &str,
        outcome: Result<crate::session::entry::Payload, crate::error::Error>,
    ) {
        let mut got = self.got.borrow_mut();
        assert!(got.is_none(), "a call is answered once");
        *got = Some(outcome.map(payload_value));
    }

    fn offer(
        &self,
        server: &str,
        result: crate::session::entry::Payload,
    ) -> Result<(), crate::error::Error> {
        self.answer(server, Ok(result));
        Ok(())
    }

    fn is_abandoned(&self) -> bool {
        self.left.get()
    }
}

fn payload_value(payload: crate::session::entry::Payload) -> Value {
    match payload {
        crate::session::entry::Payload::Raw(raw) => raw.to_value().unwrap_or(Value::Null),
        crate::session::entry::Payload::Parsed(value) => value,
        // What a test sees of a task it was answered with: its id and tool.
        crate::session::entry::Payload::Task(handle) => {
            serde_json::json!({"task": handle.task_id, "tool": handle.tool})
        }
    }
}

/// The options of a test's request, set as the public call builders set them.
pub(crate) trait Options: Sized {
    fn options(&mut self) -> &mut crate::session::request::RequestOptions;

    fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.options().timeout = Some(timeout);
        self
    }

    fn retry(mut self, retry: crate::policy::retry::RetryPolicy) -> Self {
        self.options().retry = retry;
        self
    }

    fn reset_timeout_on_progress(mut self, max_total: std::time::Duration) -> Self {
        self.options().reset_timeout_on_progress = Some(max_total);
        self
    }
}

impl Options for crate::session::request::CallRequest {
    fn options(&mut self) -> &mut crate::session::request::RequestOptions {
        &mut self.options
    }
}
