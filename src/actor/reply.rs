//! Where a call's one answer goes, without a task per call: the caller's own reply channel
//! (actix's, for a call message; ours, for the actor's internal calls), held by the call's entry
//! and answered from the handler that finishes the call, with the raw result turned into the
//! caller's type on the way.
//!
//! A call message's handler registers the call before actix hands it the caller's channel
//! (that comes to [`MessageResponse::handle`] after the handler returns), so the entry and the
//! message's response share a [`Slot`]: whichever comes second, the answer or the channel,
//! completes the delivery. Through the [`Supervisor`](crate::Supervisor) the channel comes with
//! the forwarded message ([`Routed`]), and is answered `Stopped` if the server's actor is gone
//! before it takes the call.

use std::cell::RefCell;
use std::rc::Rc;

use crate::protocol::response::RawResult;
use crate::protocol::tool_result::ToolResult;
use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;
use serde_json::Value;

use crate::actor::server::ServerActor;
use crate::actor::supervisor::Supervisor;
use crate::error::Error;

/// A call's result as it reaches the call table: the JSON text of the server's answer (parsed
/// only by the caller's [`Slot`], into the caller's type), or a value already parsed (a
/// result the actor had to look into, or made itself).
#[derive(Debug)]
pub(crate) enum Payload {
    Raw(RawResult),
    Parsed(Value),
}

impl From<RawResult> for Payload {
    fn from(raw: RawResult) -> Self {
        Payload::Raw(raw)
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Parsed(value)
    }
}

/// The receiving end of a call's answer, as its entry holds it.
pub(crate) trait Answer {
    /// Delivers the outcome of the call to `server` (at most once; later ones are ignored).
    fn answer(&self, server: &str, outcome: Result<Payload, Error>);

    /// Delivers `result` if it turns into the caller's type; if it does not, delivers nothing
    /// and says why (whoever offered it decides what the result was).
    fn offer(&self, server: &str, result: Payload) -> Result<(), Error>;
}

/// Turns a result into the caller's type; the error text says why it does not fit.
type Convert<T> = fn(Payload) -> Result<T, serde_json::Error>;

enum State<T> {
    /// Neither the answer nor the channel yet.
    Empty,
    /// The caller's channel, waiting for the answer.
    Waiting(OneshotSender<Result<T, Error>>),
    /// The answer, waiting for the channel (a call refused at once).
    Done(Result<T, Error>),
    /// Delivered, or nobody waits.
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
            state: RefCell::new(State::Gone),
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
            // `do_send`: nobody waits for the answer.
            _ => {}
        }
    }
}

impl<T: 'static> Answer for Slot<T> {
    fn answer(&self, server: &str, outcome: Result<Payload, Error>) {
        let mut state = self.state.borrow_mut();
        let waiting = match std::mem::replace(&mut *state, State::Gone) {
            State::Waiting(tx) if tx.is_closed() => return, // the caller gave up
            State::Waiting(tx) => Some(tx),
            State::Empty => None,
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
            done @ (State::Done(_) | State::Gone) => *state = done,
        }
        Ok(())
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
    }
}

/// The result parsed into `T`: from its text in one pass, when it is the server's text.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    payload: Payload,
) -> Result<T, serde_json::Error> {
    match payload {
        Payload::Raw(text) => text.parse(),
        Payload::Parsed(value) => serde_json::from_value(value),
    }
}

/// A tool call's result, in one pass when it is the server's text (see
/// [`tool_result`](crate::protocol::tool_result)).
pub(crate) fn tool_result(
    payload: Payload,
) -> Result<rmcp::model::CallToolResult, serde_json::Error> {
    match payload {
        Payload::Raw(text) => text.parse::<ToolResult>().map(|parsed| parsed.0),
        Payload::Parsed(value) => serde_json::from_value(value),
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

/// What the supervisor answers a call message with: nothing of its own. The call goes to its
/// server's actor with the caller's reply channel ([`Routed`]), which the server's actor
/// answers; the supervisor neither waits nor spawns anything per call, so calls through it are
/// batched as calls sent to the server's actor directly are.
pub struct Forward<M, T> {
    msg: M,
    server: String,
    addr: Result<Addr<ServerActor>, Error>,
    _output: std::marker::PhantomData<fn() -> T>,
}

impl<M, T> Forward<M, T> {
    /// `msg` for `server`, whose actor is `addr` (or the error to answer).
    pub(crate) fn new(msg: M, server: String, addr: Result<Addr<ServerActor>, Error>) -> Self {
        Forward {
            msg,
            server,
            addr,
            _output: std::marker::PhantomData,
        }
    }
}

impl<M, T> MessageResponse<Supervisor, M> for Forward<M, T>
where
    M: Message<Result = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
    ServerActor: Handler<Routed<M, T>>,
{
    fn handle(self, _: &mut Context<Supervisor>, tx: Option<OneshotSender<M::Result>>) {
        match self.addr {
            // A dead actor drops the message, whose reply channel then answers `Stopped`.
            Ok(addr) => addr.do_send(Routed::new(self.msg, self.server, tx)),
            Err(e) => {
                if let Some(tx) = tx {
                    let _ = tx.send(Err(e));
                }
            }
        }
    }
}

/// A call message forwarded by the [`Supervisor`](crate::Supervisor) to the server's actor,
/// with its caller's channel (of the message's `Result<T, Error>`): the supervisor does not
/// wait for the answer, so it forwards the next call at once and the server's actor gets them
/// in one batch (one write for many).
pub(crate) struct Routed<M, T> {
    msg: M,
    reply: ReplyGuard<T>,
}

impl<M: 'static, T: 'static> Message for Routed<M, T> {
    type Result = ();
}

impl<M, T> Routed<M, T> {
    /// `msg` for `server`, to be answered on `reply`.
    pub fn new(msg: M, server: String, reply: Option<OneshotSender<Result<T, Error>>>) -> Self {
        Routed {
            msg,
            reply: ReplyGuard { reply, server },
        }
    }

    /// The call and its caller's channel, taken by the actor that takes the call (`None` for
    /// a `do_send`: nobody waits).
    pub fn into_parts(self) -> (M, Option<OneshotSender<Result<T, Error>>>) {
        let Routed { msg, mut reply } = self;
        (msg, reply.reply.take())
    }
}

/// A routed call's channel until the server's actor takes it.
struct ReplyGuard<T> {
    reply: Option<OneshotSender<Result<T, Error>>>,
    server: String,
}

impl<T> Drop for ReplyGuard<T> {
    /// Not taken: the server's actor was gone (or went) before it handled the call, which so
    /// never reached the server.
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let server = std::mem::take(&mut self.server);
            let _ = reply.send(Err(Error::Stopped { server }));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::sync::oneshot;

    use super::*;
    use crate::error::ErrorKind;

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
    fn a_routed_call_its_actor_never_took_is_answered_stopped() {
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();
        let routed = Routed::new(crate::Call::new("s", "ping", None), "s".into(), Some(tx));
        drop(routed); // what a dead actor's mailbox does with it
        match rx.try_recv().unwrap() {
            Err(Error::Stopped { server }) => assert_eq!(server, "s"),
            other => panic!("expected stopped, got {other:?}"),
        }
        // Taken by the actor: the guard says nothing more.
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();
        let routed = Routed::new(crate::Call::new("s", "ping", None), "s".into(), Some(tx));
        let (_call, reply) = routed.into_parts();
        assert!(reply.is_some());
        assert!(rx.try_recv().is_err());
    }
}
