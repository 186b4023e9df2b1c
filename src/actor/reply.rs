//! Where a call's one answer goes, without a task per call: the caller's own reply channel
//! (actix's), held by the call's entry in the session as its [`Reply`] and answered from the
//! handler that finishes the call, with the raw result turned into the caller's type on the
//! way.
//!
//! A call message's handler registers the call before actix hands it the caller's channel
//! (that comes to [`MessageResponse::handle`] after the handler returns), so the entry and the
//! message's response share a [`Slot`]: whichever comes second, the answer or the channel,
//! completes the delivery. Through the [`Supervisor`](crate::Supervisor) the channel comes with
//! the forwarded message (see [`routing`](super::routing)).

use std::cell::RefCell;
use std::rc::Rc;

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;
use serde_json::Value;

use crate::error::Error;
use crate::protocol::tool_result::ToolResult;
use crate::session::entry::{Payload, Reply};

/// Turns a result into the caller's type; the error text says why it does not fit.
type Convert<T> = fn(Payload) -> Result<T, serde_json::Error>;

enum State<T> {
    /// Neither the answer nor the channel yet.
    Empty,
    /// The caller's channel, waiting for the answer.
    Waiting(OneshotSender<Result<T, Error>>),
    /// The answer, waiting for the channel (a call refused at once).
    Done(Result<T, Error>),
    /// A call nobody waits for (a `do_send`): it runs, its answer is dropped.
    Unwatched,
    /// Delivered.
    Gone,
}

/// One call's answer on its way to one caller, in the caller's type `T`.
pub(crate) struct Slot<T> {
    state: RefCell<State<T>>,
    convert: Convert<T>,
    /// The call's name in an error saying its result did not parse, e.g. `CallTool`.
    label: &'static str,
}

impl<T: 'static> Slot<T> {
    /// A slot whose channel comes later ([`CallResponse`]).
    pub fn empty(convert: Convert<T>, label: &'static str) -> Rc<Self> {
        Rc::new(Slot {
            state: RefCell::new(State::Empty),
            convert,
            label,
        })
    }

    /// A slot for a call nobody waits for (a `do_send` through the supervisor): the call runs,
    /// its answer is dropped.
    pub fn nobody(convert: Convert<T>, label: &'static str) -> Rc<Self> {
        Rc::new(Slot {
            state: RefCell::new(State::Unwatched),
            convert,
            label,
        })
    }

    /// A slot that answers `tx`, or nobody when there is none.
    pub fn to_any(
        tx: Option<OneshotSender<Result<T, Error>>>,
        convert: Convert<T>,
        label: &'static str,
    ) -> Rc<Self> {
        match tx {
            Some(tx) => Slot::to(tx, convert, label),
            None => Slot::nobody(convert, label),
        }
    }

    /// A slot that answers `tx`.
    pub fn to(
        tx: OneshotSender<Result<T, Error>>,
        convert: Convert<T>,
        label: &'static str,
    ) -> Rc<Self> {
        Rc::new(Slot {
            state: RefCell::new(State::Waiting(tx)),
            convert,
            label,
        })
    }

    /// The caller's channel arrived: the answer goes out now if it is already there.
    fn attach(&self, tx: Option<OneshotSender<Result<T, Error>>>) {
        let mut state = self.state.borrow_mut();
        match (std::mem::replace(&mut *state, State::Gone), tx) {
            (State::Done(outcome), Some(tx)) => {
                let _ = tx.send(outcome);
            }
            (State::Empty, Some(tx)) => *state = State::Waiting(tx),
            // `do_send`: nobody waits for the answer, and the call runs all the same.
            (State::Empty, None) => *state = State::Unwatched,
            _ => {}
        }
    }
}

impl<T: 'static> Reply for Slot<T> {
    fn answer(&self, server: &str, outcome: Result<Payload, Error>) {
        let mut state = self.state.borrow_mut();
        let waiting = match std::mem::replace(&mut *state, State::Gone) {
            State::Waiting(tx) if tx.is_closed() => return, // the caller gave up
            State::Waiting(tx) => Some(tx),
            State::Empty => None,
            State::Unwatched => return,
            done @ (State::Done(_) | State::Gone) => {
                *state = done;
                return;
            }
        };
        let outcome = outcome.and_then(|raw| self.convert(server, raw));
        match waiting {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => *state = State::Done(outcome),
        }
    }

    fn offer(&self, server: &str, result: Payload) -> Result<(), Error> {
        // Converted even if nobody waits any more: whether it converts says what it was.
        let converted = self.convert(server, result)?;
        let mut state = self.state.borrow_mut();
        match std::mem::replace(&mut *state, State::Gone) {
            State::Waiting(tx) => {
                let _ = tx.send(Ok(converted));
            }
            State::Empty => *state = State::Done(Ok(converted)),
            State::Unwatched => {}
            done @ (State::Done(_) | State::Gone) => *state = done,
        }
        Ok(())
    }

    fn is_abandoned(&self) -> bool {
        matches!(&*self.state.borrow(), State::Waiting(tx) if tx.is_closed())
    }
}

impl<T: 'static> Slot<T> {
    /// The result in the caller's type, or why it is not one.
    fn convert(&self, server: &str, result: Payload) -> Result<T, Error> {
        (self.convert)(result)
            .map_err(|e| Error::invalid_response(server, self.label, e.to_string()))
    }
}

/// The result as a `Value`, for an untyped [`Call`](crate::Call).
pub(crate) fn raw(payload: Payload) -> Result<Value, serde_json::Error> {
    match payload {
        Payload::Raw(text) => text.to_value(),
        Payload::Parsed(value) => Ok(value),
        Payload::Task(_) => Err(not_a_task()),
    }
}

/// Only [`StartTask`](crate::StartTask) asks to be answered with a task; any other call that
/// met one would be told this (the session never does that).
fn not_a_task() -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom("a task where a result was expected")
}

/// What [`StartTask`](crate::StartTask) is answered with: the task, or the result of a call
/// the server answered at once.
pub(crate) fn task_start(payload: Payload) -> Result<crate::TaskStart, serde_json::Error> {
    match payload {
        Payload::Task(handle) => Ok(crate::TaskStart::Running(*handle)),
        other => tool_result(other).map(crate::TaskStart::Completed),
    }
}

/// The result parsed into `T`: from its text in one pass, when it is the server's text.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    payload: Payload,
) -> Result<T, serde_json::Error> {
    match payload {
        Payload::Raw(text) => text.parse(),
        Payload::Parsed(value) => serde_json::from_value(value),
        Payload::Task(_) => Err(not_a_task()),
    }
}

/// No result but that the call succeeded (`Subscribe`, `Unsubscribe`).
pub(crate) fn unit(_: Payload) -> Result<(), serde_json::Error> {
    Ok(())
}

/// A tool call's result, in one pass when it is the server's text (see
/// [`tool_result`](crate::protocol::tool_result)).
pub(crate) fn tool_result(
    payload: Payload,
) -> Result<rmcp::model::CallToolResult, serde_json::Error> {
    match payload {
        Payload::Raw(text) => text.parse::<ToolResult>().map(|parsed| parsed.0),
        Payload::Parsed(value) => serde_json::from_value(value),
        Payload::Task(_) => Err(not_a_task()),
    }
}

/// What a call handler returns: the call is registered, and its answer reaches the caller
/// through the slot, with no future spawned to wait for it.
pub struct CallResponse<T>(pub(crate) Rc<Slot<T>>);

impl<A, M, T> MessageResponse<A, M> for CallResponse<T>
where
    A: Actor,
    M: Message<Result = Result<T, Error>>,
    T: 'static,
{
    fn handle(self, _: &mut A::Context, tx: Option<OneshotSender<M::Result>>) {
        self.0.attach(tx);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::sync::oneshot;

    use super::*;
    use crate::error::ErrorKind;
    use crate::protocol::response::RawResult;

    fn text(json: &str) -> Payload {
        let raw = serde_json::value::RawValue::from_string(json.to_owned()).unwrap();
        Payload::Raw(RawResult::of_text(raw))
    }

    #[test]
    fn an_answer_before_the_channel_is_delivered_when_the_channel_comes() {
        let slot = Slot::empty(raw, "Call");
        slot.answer("s", Ok(text(r#"{"a":1}"#)));
        let (tx, mut rx) = oneshot::channel();
        slot.attach(Some(tx));
        assert_eq!(rx.try_recv().unwrap().unwrap(), json!({"a": 1}));
        // Once only: a second answer goes nowhere.
        slot.answer("s", Ok(text("{}")));
    }

    #[test]
    fn a_channel_before_the_answer_gets_it_parsed_into_the_callers_type() {
        let slot = Slot::empty(typed::<rmcp::model::CallToolResult>, "CallTool");
        let (tx, mut rx) = oneshot::channel();
        slot.attach(Some(tx));
        assert!(rx.try_recv().is_err(), "nothing yet");
        slot.answer(
            "s",
            Ok(text(r#"{"content":[{"type":"text","text":"hi"}]}"#)),
        );
        let result = rx.try_recv().unwrap().unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, "hi");
    }

    #[test]
    fn a_result_that_does_not_fit_the_type_is_an_invalid_response() {
        let (tx, mut rx) = oneshot::channel();
        let slot = Slot::to(tx, typed::<rmcp::model::CallToolResult>, "CallTool");
        slot.answer("s", Ok(text(r#"{"content":"not a list"}"#)));
        let error = rx.try_recv().unwrap().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        assert!(error.to_string().contains("CallTool"), "{error}");
    }

    #[test]
    fn nobody_waiting_is_not_an_error() {
        let slot = Slot::empty(raw, "Call");
        slot.attach(None); // do_send
        slot.answer("s", Ok(Payload::Parsed(json!({}))));
        let (tx, rx) = oneshot::channel();
        drop(rx); // the caller gave up
        let slot = Slot::to(tx, raw, "Call");
        slot.answer("s", Ok(Payload::Parsed(json!({}))));
    }

    #[test]
    fn a_caller_that_left_is_abandoned_and_a_do_send_is_not() {
        let (tx, rx) = oneshot::channel();
        let slot = Slot::to(tx, raw, "Call");
        assert!(!slot.is_abandoned());
        drop(rx);
        assert!(slot.is_abandoned(), "the caller dropped its future");
        let slot = Slot::empty(raw, "Call");
        assert!(!slot.is_abandoned(), "no channel yet");
        slot.attach(None);
        assert!(!slot.is_abandoned(), "a do_send runs to its end");
    }
}
