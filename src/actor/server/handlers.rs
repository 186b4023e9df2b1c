//! The messages a [`ServerActor`] takes, each handed to its session: the calls, raw and typed,
//! sent to the actor or forwarded by the [`Supervisor`](crate::Supervisor) ([`Routed`]); the
//! subscriptions; and the messages that steer the actor itself (status, event subscribers, the
//! request handler, `Reconnect`, `Shutdown` — which answers only once every process the actor
//! started is gone, however many are sent — and the test hook `InjectPanic`).
//!
//! No call handler spawns a future: the caller's reply channel goes into the call's entry in
//! the session (see [`reply`](crate::actor::reply)).

use std::rc::Rc;

use actix::prelude::*;
use serde_json::Value;

use tokio::sync::oneshot;

use super::{
    AwaitListening, AwaitReady, Drain, InjectPanic, ReplacementFailed, ServerActor, TakeHandover,
};
use crate::actor::messages::tasks;
use crate::actor::messages::*;
use crate::actor::reply::{self, CallResponse, Slot};
use crate::actor::routing::Routed;
use crate::error::Error;
use crate::policy::state::ServerState;
use crate::session::entry::Reply;
use crate::session::request::CallRequest;
use crate::session::status::ServerStatus;

impl ServerActor {
    /// Hands a caller's call to the session, answered on `reply` (at once, if it is refused).
    fn begin_call(&mut self, call: CallRequest, reply: Rc<dyn Reply>, ctx: &mut Context<Self>) {
        self.session.call(call, reply, self.clock.now());
        self.drive(ctx);
    }

    fn status(&self) -> ServerStatus {
        let mut status = self.session.status(self.clock.now());
        status.pid = self.live.as_ref().and_then(|l| l.closer.pid());
        let fanout = self.events.counts();
        status.counters.events_dropped = fanout.dropped;
        status.counters.state_changes_coalesced = fanout.coalesced;
        status
    }
}

impl Handler<Call> for ServerActor {
    type Result = CallResponse<Value>;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::raw, "Call");
        self.begin_call(call.into(), slot.clone(), ctx);
        CallResponse(slot)
    }
}

impl Handler<Routed<Call, Value>> for ServerActor {
    type Result = ();

    fn handle(&mut self, routed: Routed<Call, Value>, ctx: &mut Context<Self>) {
        // A `do_send` through the supervisor has no channel: the call runs all the same.
        let (call, tx) = routed.into_parts();
        self.begin_call(call.into(), Slot::to_any(tx, reply::raw, "Call"), ctx);
    }
}

macro_rules! typed_handlers {
    ($($t:ident => $convert:path),*) => {$(
        impl Handler<$t> for ServerActor {
            type Result = CallResponse<<$t as TypedCall>::Output>;

            fn handle(&mut self, msg: $t, ctx: &mut Context<Self>) -> Self::Result {
                let slot = Slot::empty($convert, stringify!($t));
                self.begin_call(msg.into(), slot.clone(), ctx);
                CallResponse(slot)
            }
        }

        impl Handler<Routed<$t, <$t as TypedCall>::Output>> for ServerActor {
            type Result = ();

            fn handle(
                &mut self,
                routed: Routed<$t, <$t as TypedCall>::Output>,
                ctx: &mut Context<Self>,
            ) {
                let (msg, tx) = routed.into_parts();
                let slot = Slot::to_any(tx, $convert, stringify!($t));
                self.begin_call(msg.into(), slot, ctx);
            }
        }
    )*};
}

// A tool call's result, the one on every hot path, has a parser of its own (see
// `protocol::tool_result`); the others are parsed by rmcp's own `Deserialize`.
typed_handlers!(
    CallTool => reply::tool_result,
    ListTools => reply::typed,
    ListResources => reply::typed,
    ListResourceTemplates => reply::typed,
    ReadResource => reply::typed,
    ListPrompts => reply::typed,
    GetPrompt => reply::typed,
    ListSkills => reply::typed,
    GetSkill => reply::typed,
    Ping => reply::typed
);

impl Handler<Subscribe> for ServerActor {
    type Result = CallResponse<()>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::unit, "Subscribe");
        self.session
            .subscribe(msg.uri, slot.clone(), self.clock.now());
        self.drive(ctx);
        CallResponse(slot)
    }
}

impl Handler<Unsubscribe> for ServerActor {
    type Result = CallResponse<()>;

    fn handle(&mut self, msg: Unsubscribe, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::unit, "Unsubscribe");
        self.session
            .unsubscribe(msg.uri, slot.clone(), self.clock.now());
        self.drive(ctx);
        CallResponse(slot)
    }
}

impl Handler<GetStatus> for ServerActor {
    type Result = Result<Vec<ServerStatus>, Error>;

    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        match msg.server {
            Some(name) if name != **self.session.name() => {
                Err(Error::ServerNotFound { server: name })
            }
            _ => Ok(vec![self.status()]),
        }
    }
}

impl Handler<SubscribeEvents> for ServerActor {
    type Result = ();

    fn handle(&mut self, SubscribeEvents(recipient): SubscribeEvents, _: &mut Context<Self>) {
        self.events.subscribe(recipient);
    }
}

impl Handler<SetRequestHandler> for ServerActor {
    type Result = ();

    fn handle(&mut self, msg: SetRequestHandler, _: &mut Context<Self>) {
        self.server_requests = self.server_requests.with_handler(msg.handler);
        self.session.set_client_capabilities(msg.capabilities);
    }
}

impl Handler<Reconnect> for ServerActor {
    type Result = Result<(), Error>;

    fn handle(&mut self, _: Reconnect, ctx: &mut Context<Self>) -> Self::Result {
        let done = self.session.reconnect(self.clock.now());
        self.drive(ctx);
        done
    }
}

impl Handler<Shutdown> for ServerActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) -> Self::Result {
        let mut stopped = self.stopped.subscribe();
        // The first Shutdown stops the server; later ones wait for the same end.
        self.stop_server(ctx);
        // Not tied to the actor's context, so that it answers after the actor has stopped;
        // should the actor die first, the sender's drop ends the wait too.
        Box::pin(async move {
            let _ = stopped.wait_for(|done| *done).await;
        })
    }
}

impl Handler<AwaitReady> for ServerActor {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, _: AwaitReady, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.ready_waiters.push(tx);
        self.drive(ctx);
        let server = self.session.name().to_string();
        Box::pin(async move {
            // The actor died before it was Ready or had failed.
            rx.await.unwrap_or(Err(Error::Stopped { server }))
        })
    }
}

impl Handler<Drain> for ServerActor {
    type Result = ResponseFuture<()>;

    fn handle(
        &mut self,
        Drain {
            timeout,
            same_server,
            successor,
        }: Drain,
        ctx: &mut Context<Self>,
    ) -> Self::Result {
        let mut stopped = self.stopped.subscribe();
        if *self.session.state() != ServerState::Stopped && !self.draining {
            self.draining = true;
            self.successor = Some(successor);
            // Calls still pending when the drain time is up are answered as any whose server
            // was stopped: `outcome_unknown` if sent and not safe by nature.
            ctx.run_later(timeout, |act, ctx| act.stop_server(ctx));
            self.session.drain(same_server, self.clock.now());
            self.drive(ctx);
        }
        Box::pin(async move {
            let _ = stopped.wait_for(|done| *done).await;
        })
    }
}

impl Handler<AwaitListening> for ServerActor {
    type Result = CallResponse<()>;

    fn handle(&mut self, _: AwaitListening, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::unit, "AwaitListening");
        self.session.await_listening(slot.clone(), self.clock.now());
        self.drive(ctx);
        CallResponse(slot)
    }
}

impl Handler<ReplacementFailed> for ServerActor {
    type Result = ();

    fn handle(&mut self, ReplacementFailed(error): ReplacementFailed, _: &mut Context<Self>) {
        self.session.replacement_failed(error);
    }
}

impl Handler<TakeHandover> for ServerActor {
    type Result = ();

    fn handle(&mut self, TakeHandover { of }: TakeHandover, ctx: &mut Context<Self>) {
        self.take_handovers(of, ctx);
    }
}

impl Handler<InjectPanic> for ServerActor {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _: &mut Context<Self>) {
        panic!(
            "InjectPanic: a test asked ServerActor `{}` to panic",
            self.session.name()
        );
    }
}

// ----- tasks (the Tasks extension) -----

impl ServerActor {
    /// A task handle names its server: one of another server is refused, never looked for
    /// here.
    fn own_task(&self, handle: &crate::TaskHandle) -> Result<(), Error> {
        if handle.server == **self.session.name() {
            Ok(())
        } else {
            Err(Error::ServerNotFound {
                server: handle.server.clone(),
            })
        }
    }
}

impl Handler<StartTask> for ServerActor {
    type Result = CallResponse<TaskStart>;

    fn handle(&mut self, msg: StartTask, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::task_start, "StartTask");
        self.begin_call(msg.into(), slot.clone(), ctx);
        CallResponse(slot)
    }
}

impl Handler<AwaitTask> for ServerActor {
    type Result = CallResponse<rmcp::model::CallToolResult>;

    fn handle(&mut self, msg: AwaitTask, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::tool_result, "AwaitTask");
        let delivered = self
            .tasks
            .as_ref()
            .is_some_and(|tasks| tasks.delivered(&msg.handle.task_id));
        let known = self.own_task(&msg.handle).and_then(|()| {
            if delivered {
                // Asking the server again could hand the outcome out a second time.
                Err(Error::TaskLost {
                    server: msg.handle.server.clone(),
                    tool: msg.handle.tool.clone(),
                    task_id: crate::protocol::text::server_text(&msg.handle.task_id),
                    reason: "its outcome was delivered already, to an earlier AwaitTask".into(),
                })
            } else {
                Ok(())
            }
        });
        match known {
            Ok(()) => {
                self.session
                    .await_task(msg.handle, msg.timeout, slot.clone(), self.clock.now());
                self.drive(ctx);
            }
            Err(e) => slot.answer(self.session.name(), Err(e)),
        }
        CallResponse(slot)
    }
}

impl Handler<CancelTask> for ServerActor {
    type Result = CallResponse<()>;

    fn handle(&mut self, msg: CancelTask, ctx: &mut Context<Self>) -> Self::Result {
        let slot = Slot::empty(reply::unit, "CancelTask");
        match self.own_task(&msg.handle) {
            Ok(()) => {
                let request = tasks::task_request(&msg.handle, "tasks/cancel", msg.options);
                self.begin_call(request, slot.clone(), ctx);
            }
            Err(e) => slot.answer(self.session.name(), Err(e)),
        }
        CallResponse(slot)
    }
}

impl Handler<GetTask> for ServerActor {
    type Result = ResponseFuture<Result<TaskInfo, Error>>;

    /// Asks the server (`tasks/get`); its answer is read into what it says of the task.
    fn handle(&mut self, msg: GetTask, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.own_task(&msg.handle) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let (tx, rx) = oneshot::channel();
        let request = tasks::task_request(&msg.handle, "tasks/get", msg.options);
        self.begin_call(request, Slot::to(tx, reply::raw, "GetTask"), ctx);
        let handle = msg.handle;
        Box::pin(async move {
            let server = handle.server.clone();
            let answer = rx.await.unwrap_or(Err(Error::Stopped {
                server: server.clone(),
            }))?;
            tasks::task_info(handle, &answer)
                .map_err(|why| Error::invalid_response(&server, "tasks/get", why))
        })
    }
}

impl Handler<ListTasks> for ServerActor {
    type Result = Result<Vec<TaskInfo>, Error>;

    fn handle(&mut self, msg: ListTasks, _: &mut Context<Self>) -> Self::Result {
        if msg.server != **self.session.name() {
            return Err(Error::ServerNotFound { server: msg.server });
        }
        Ok(self.session.task_infos(self.clock.now()))
    }
}
