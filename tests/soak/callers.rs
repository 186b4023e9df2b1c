//! The callers: each one, with its own seeded RNG, makes one call after another until the soak
//! ends, choosing a server, a method, a deadline (20 ms – 2 s, log-uniform), a retry policy and
//! a route (through the supervisor, or straight to the server's actor), and records how every
//! call ended. An `ok` result is checked to be this call's own: each echo carries a payload
//! unique to the call, a ping answers `{}`, a tool list lists tools, a counter answers a number,
//! a `confirm` answers what the application's handler said (`confirmed: true`).
//!
//! A call is planned ([`Plan`], all random choices) and then performed ([`perform`]), so the
//! shutdown phase can make calls of its own choosing the same way.

use std::time::{Duration, Instant};

use actix::{Addr, Handler, MailboxError, Message, Recipient};
use mcp_supervisor::*;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

use super::history::*;

/// How long past its bound a call may stay unanswered before the soak stops waiting and
/// records it as `hung`.
const WATCHDOG: Duration = Duration::from_secs(10);

/// A server as the callers see it.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub kind: Kind,
    /// The era it was configured to speak: `legacy`, `modern` or `dual`.
    pub era: &'static str,
    /// Configured `trusted`: its read-only tools (echo, slow, confirm) may be re-sent.
    pub trusted: bool,
    /// It has `confirm`, the tool that asks for input.
    pub mrtr: bool,
    /// The resource the application subscribes to.
    pub resource: String,
    /// OAuth protects it.
    pub oauth: bool,
}

/// What to ask.
#[derive(Clone, Debug)]
pub enum Ask {
    /// The payload is `tag` followed by `len` x's.
    Echo {
        tag: String,
        len: usize,
    },
    /// The demo's counter waits `delay_ms` after counting (the HTTP one ignores it).
    Counter {
        delay_ms: u64,
    },
    /// With `max_total`, progress restarts the timeout up to that total.
    Slow {
        seconds: f64,
        steps: u64,
        max_total: Option<Duration>,
    },
    ToolsList,
    Ping,
    /// The demo's `confirm` asks `rounds` times, after a state-only answer if `state_only`
    /// (2026-07-28); the HTTP test server's asks as it is set up (`http_slots`).
    Confirm {
        rounds: u64,
        state_only: bool,
    },
    /// The server announces a change of the resource the application subscribed to.
    Notify,
}

/// One call, every choice made.
#[derive(Clone, Debug)]
pub struct Plan {
    pub id: u64,
    pub caller: usize,
    pub target: Target,
    pub ask: Ask,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub direct: bool,
}

/// What a caller needs.
pub struct Caller {
    pub index: usize,
    pub sup: Addr<Supervisor>,
    pub targets: Vec<Target>,
    pub rng: StdRng,
    /// The soak's start (record times are relative to it) and when to stop making calls.
    pub t0: Instant,
    pub until: Instant,
    /// Where progress notifications of `slow` calls go (they are not judged).
    pub progress: Recipient<Progress>,
}

impl Caller {
    /// Makes calls until `until`; the records of all of them.
    pub async fn run(mut self) -> Vec<CallRecord> {
        let mut records = Vec::new();
        let mut seq = 0u64;
        while Instant::now() < self.until {
            seq += 1;
            let plan = self.plan((self.index as u64) << 32 | seq);
            records.push(perform(&self.sup, plan, &self.progress, self.t0).await);
            let think = Duration::from_millis(self.rng.random_range(0..25));
            tokio::time::sleep(think).await;
        }
        records
    }

    fn plan(&mut self, id: u64) -> Plan {
        let rng = &mut self.rng;
        let target = self.targets[rng.random_range(0..self.targets.len())].clone();
        // Log-uniform between 20 ms and 2 s: many short deadlines, some long ones.
        let log_timeout: f64 = rng.random_range(0.02f64.ln()..2f64.ln());
        let timeout = Duration::from_secs_f64(log_timeout.exp());
        let ask = match rng.random_range(0..100) {
            0..8 if target.mrtr => Ask::Confirm {
                rounds: rng.random_range(1..=3),
                state_only: rng.random_bool(0.3),
            },
            8..13 => Ask::Notify,
            0..35 => Ask::Echo {
                tag: format!("{}:{id:x}:{:08x}", target.name, rng.random::<u32>()),
                // Now and then a long payload, so answers span many reads.
                len: if rng.random_bool(0.1) {
                    rng.random_range(1_000..32_000)
                } else {
                    0
                },
            },
            // The demo's counter can wait after counting, so kills land mid-call.
            35..55 => Ask::Counter {
                delay_ms: rng.random_range(0..300),
            },
            55..70 => Ask::Slow {
                seconds: (rng.random_range(0..1000) as f64) / 1000.0,
                steps: rng.random_range(1..5),
                max_total: rng
                    .random_bool(0.3)
                    .then(|| timeout + Duration::from_millis(rng.random_range(0..1000))),
            },
            70..85 => Ask::ToolsList,
            _ => Ask::Ping,
        };
        // Mostly the default; sometimes nothing re-sent, and for the tools that are safe to
        // repeat (echo, slow) sometimes always re-sent.
        let retry = match rng.random_range(0..10) {
            0..2 => RetryPolicy::Never,
            2..4 if matches!(
                ask,
                Ask::Echo { .. } | Ask::Slow { .. } | Ask::Confirm { .. }
            ) =>
            {
                RetryPolicy::Always
            }
            _ => RetryPolicy::IfIdempotent,
        };
        Plan {
            id,
            caller: self.index,
            target,
            ask,
            timeout,
            retry,
            direct: rng.random_bool(0.25),
        }
    }
}

/// Makes the call `plan` describes and records how it ended.
pub async fn perform(
    sup: &Addr<Supervisor>,
    plan: Plan,
    progress: &Recipient<Progress>,
    t0: Instant,
) -> CallRecord {
    let Plan {
        id,
        caller,
        target,
        ask,
        timeout,
        retry,
        direct,
    } = plan;
    let route = if direct {
        match sup.send(GetServer(target.name.clone())).await {
            Ok(Ok(addr)) => To::Direct(addr),
            // The actor is being replaced: use the supervisor this time.
            _ => To::Supervisor(sup.clone()),
        }
    } else {
        To::Supervisor(sup.clone())
    };
    let server = target.name.as_str();
    let mut bound = timeout;
    // May the supervisor send this call a second time, after a broken connection?
    let resend_allowed = match (&ask, retry) {
        (Ask::Counter { .. }, RetryPolicy::Always) => true,
        (Ask::Counter { .. }, _) => false,
        (_, RetryPolicy::Always) => true,
        (Ask::Echo { .. } | Ask::Slow { .. } | Ask::Confirm { .. }, RetryPolicy::IfIdempotent) => {
            target.trusted
        }
        (Ask::ToolsList | Ask::Ping, RetryPolicy::IfIdempotent) => true,
        (_, _) => false,
    };
    let (method, payload, outcome, start) = match ask {
        Ask::Echo { tag, len } => {
            let text = format!("{tag}{}", "x".repeat(len));
            let call = CallTool::new(server, "echo", json!({ "text": text }))
                .timeout(timeout)
                .retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |r| {
                let got = text_of(r);
                (got == text)
                    .then_some(())
                    .ok_or_else(|| format!("echo of {tag}+{len} answered {:?}", cut(&got)))
            });
            (Method::Echo, format!("{tag}+{len}"), outcome, start)
        }
        Ask::Counter { delay_ms } => {
            let (args, payload) = match target.kind {
                Kind::Stdio => (
                    json!({ "delay_ms": delay_ms }),
                    format!("delay_ms={delay_ms}"),
                ),
                Kind::Http => (json!({}), String::new()),
            };
            let call = CallTool::new(server, "counter", args)
                .timeout(timeout)
                .retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |r| {
                let got = text_of(r);
                got.parse::<u64>()
                    .map(drop)
                    .map_err(|_| format!("counter answered {:?}", cut(&got)))
            });
            (Method::Counter, payload, outcome, start)
        }
        Ask::Slow {
            seconds,
            steps,
            max_total,
        } => {
            let mut call = CallTool::new(
                server,
                "slow",
                json!({ "seconds": seconds, "steps": steps }),
            )
            .timeout(timeout)
            .retry(retry);
            let mut payload = format!("seconds={seconds} steps={steps}");
            if let Some(max_total) = max_total {
                call = call
                    .on_progress(progress.clone())
                    .reset_timeout_on_progress(max_total);
                bound = max_total.max(timeout);
                payload += &format!(" max_total={}ms", max_total.as_millis());
            }
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |r| {
                let got = text_of(r);
                got.starts_with("done")
                    .then_some(())
                    .ok_or_else(|| format!("slow answered {:?}", cut(&got)))
            });
            (Method::Slow, payload, outcome, start)
        }
        Ask::Confirm { rounds, state_only } => {
            let (args, payload) = match target.kind {
                Kind::Stdio => (
                    json!({ "rounds": rounds, "state_only": state_only }),
                    format!("rounds={rounds} state_only={state_only}"),
                ),
                Kind::Http => (json!({}), String::new()),
            };
            let call = CallTool::new(server, "confirm", args)
                .timeout(timeout)
                .retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |r| {
                let got = text_of(r);
                (got == "confirmed: true")
                    .then_some(())
                    .ok_or_else(|| format!("confirm answered {:?}", cut(&got)))
            });
            (Method::Confirm, payload, outcome, start)
        }
        Ask::Notify => {
            let call = notify_call(&target).timeout(timeout).retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |r| {
                let got = text_of(r);
                matches!(got.as_str(), "notified" | "ok")
                    .then_some(())
                    .ok_or_else(|| format!("notify answered {:?}", cut(&got)))
            });
            (Method::Notify, String::new(), outcome, start)
        }
        Ask::ToolsList => {
            let call = Call::new(server, "tools/list", None)
                .timeout(timeout)
                .retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |v: &Value| {
                let listed = v["tools"]
                    .as_array()
                    .is_some_and(|t| !t.is_empty() && t.iter().all(|t| t["name"].is_string()));
                (listed && v.get("content").is_none())
                    .then_some(())
                    .ok_or_else(|| format!("tools/list answered {}", cut(&v.to_string())))
            });
            (Method::ToolsList, String::new(), outcome, start)
        }
        Ask::Ping => {
            let call = Call::new(server, "ping", None)
                .timeout(timeout)
                .retry(retry);
            let start = Instant::now();
            let answer = route.send(call, bound + WATCHDOG).await;
            let outcome = judge(answer, |v: &Value| {
                (*v == json!({}))
                    .then_some(())
                    .ok_or_else(|| format!("ping answered {}", cut(&v.to_string())))
            });
            (Method::Ping, String::new(), outcome, start)
        }
    };
    let end = Instant::now();
    CallRecord {
        id,
        caller,
        server: target.name,
        method,
        payload: format!("{payload} {retry:?}").trim().to_owned(),
        route: route.kind(),
        start: start - t0,
        timeout,
        bound,
        end: end - t0,
        outcome,
        phase: Phase::Soak,
        known_to_run: false,
        resend_allowed,
    }
}

/// The call that makes `target` announce a change of its subscribed resource.
pub fn notify_call(target: &Target) -> CallTool {
    match target.kind {
        Kind::Stdio => CallTool::new(
            &target.name,
            "notify",
            json!({ "kind": "resource_updated" }),
        ),
        Kind::Http => CallTool::new(
            &target.name,
            "notify_resource",
            json!({ "uri": target.resource }),
        ),
    }
}

/// Where a call goes.
enum To {
    Supervisor(Addr<Supervisor>),
    Direct(Addr<ServerActor>),
}

/// What came back: an answer, the dropped request, or nothing before the watchdog.
enum Answer<T> {
    Got(Result<T, Error>),
    Dropped(MailboxError),
    Hung,
}

impl To {
    fn kind(&self) -> Route {
        match self {
            To::Supervisor(_) => Route::Supervisor,
            To::Direct(_) => Route::Direct,
        }
    }

    async fn send<M, T>(&self, msg: M, watchdog: Duration) -> Answer<T>
    where
        M: Message<Result = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
        Supervisor: Handler<M>,
        ServerActor: Handler<M>,
    {
        let sent = async {
            match self {
                To::Supervisor(addr) => addr.send(msg).await,
                To::Direct(addr) => addr.send(msg).await,
            }
        };
        match tokio::time::timeout(watchdog, sent).await {
            Ok(Ok(answer)) => Answer::Got(answer),
            Ok(Err(e)) => Answer::Dropped(e),
            Err(_) => Answer::Hung,
        }
    }
}

/// The outcome of an answer; `right` says whether an ok result is this call's own.
fn judge<T>(answer: Answer<T>, right: impl FnOnce(&T) -> Result<(), String>) -> Outcome {
    match answer {
        Answer::Got(Ok(result)) => match right(&result) {
            Ok(()) => Outcome::Ok,
            Err(why) => Outcome::Wrong(why),
        },
        Answer::Got(Err(e)) => Outcome::Err {
            code: e.kind().code(),
            message: cut(&e.to_string()),
        },
        Answer::Dropped(e) => Outcome::Mailbox(e.to_string()),
        Answer::Hung => Outcome::Hung,
    }
}

/// The text of a tool result's first content block, or a note that it is an error.
fn text_of(result: &rmcp::model::CallToolResult) -> String {
    if result.is_error == Some(true) {
        return format!("(isError) {:?}", result.content);
    }
    serde_json::to_value(&result.content).unwrap_or_default()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// At most 200 characters of `s`, for the record.
fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}
