//! Canned answers: the hostile switch that replaces the server's answer to a GET, or to POSTs
//! of one JSON-RPC method, with any status, headers and body — a wrong content type, a
//! `Retry-After`, a redirect, an oversized header, a body that trickles, floods or never ends.
//!
//! Its own room because the normal service (sessions, streams, tools) knows nothing of it: a
//! canned answer is taken before the request reaches the normal handlers, `times` times, and
//! then the server serves normally again.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::Value;

use super::state::{lock, Shared};

/// Which requests a canned answer replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every `GET /mcp`.
    Get,
    /// POSTs of this JSON-RPC method (`"*"`: every POST).
    Post(String),
}

/// The body of a canned answer.
#[derive(Clone, Debug)]
pub enum Body {
    /// These bytes, with every `{id}` replaced by the request's JSON-RPC id (`null` if none);
    /// then the body ends.
    Fixed(Vec<u8>),
    /// `chunk` (every `{id}` replaced, as in `Fixed`), `count` times (`None`: forever) as fast
    /// as the client reads, `every` apart; then the body ends, or stays open without another
    /// byte if `hold`.
    Repeat {
        chunk: Vec<u8>,
        count: Option<usize>,
        every: Duration,
        hold: bool,
    },
}

impl Body {
    /// Headers, then not a byte, ever.
    pub fn stall() -> Body {
        Body::Repeat {
            chunk: Vec::new(),
            count: Some(0),
            every: Duration::ZERO,
            hold: true,
        }
    }

    /// `chunk` `count` times (`None`: forever), as fast as the client reads, then the end.
    pub fn repeat(chunk: impl Into<Vec<u8>>, count: Option<usize>) -> Body {
        Body::Repeat {
            chunk: chunk.into(),
            count,
            every: Duration::ZERO,
            hold: false,
        }
    }
}

/// A canned HTTP answer: [`super::Faults::canned`] installs it.
#[derive(Clone, Debug)]
pub struct Canned {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, Vec<u8>)>,
    pub(super) body: Body,
    /// Answers left (`None`: every request).
    pub(super) times: Option<usize>,
    /// How long the answer's head waits.
    pub(super) delay: Duration,
}

impl Canned {
    /// An answer with this status, no headers and an empty body, for every request.
    pub fn status(status: u16) -> Canned {
        Canned {
            status,
            headers: Vec::new(),
            body: Body::Fixed(Vec::new()),
            times: None,
            delay: Duration::ZERO,
        }
    }

    /// Adds a header (any bytes the HTTP library lets through: non-ASCII too).
    pub fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Canned {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// The body: bytes or text, `{id}` replaced by the request's id.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Canned {
        self.body = Body::Fixed(body.into());
        self
    }

    /// A body of any shape (see [`Body`]).
    pub fn stream(mut self, body: Body) -> Canned {
        self.body = body;
        self
    }

    /// Sends the answer's head only after `delay` (a server that takes its time, or never
    /// answers; at most a day).
    pub fn delay(mut self, delay: Duration) -> Canned {
        self.delay = delay.min(Duration::from_secs(86_400));
        self
    }

    /// Answers only the next `n` matching requests, then serves normally.
    pub fn times(mut self, n: usize) -> Canned {
        self.times = Some(n);
        self
    }
}

/// The canned answer for a request, if one is installed for it (and has answers left).
pub(super) async fn take(
    state: &Arc<Shared>,
    target: &Target,
    id: Option<&Value>,
) -> Option<HttpResponse> {
    let canned = {
        let mut faults = lock(&state.faults);
        let index = faults.canned.iter().position(|(t, c)| {
            c.times != Some(0)
                && (t == target
                    || (matches!(t, Target::Post(m) if m == "*") && *target != Target::Get))
        })?;
        let (_, canned) = &mut faults.canned[index];
        if let Some(left) = canned.times.as_mut() {
            *left -= 1;
        }
        canned.clone()
    };
    lock(&state.counters).canned += 1;
    if !canned.delay.is_zero() {
        tokio::time::sleep(canned.delay).await;
    }
    let status = StatusCode::from_u16(canned.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    for (name, value) in &canned.headers {
        response.append_header((name.as_str(), value.as_slice()));
    }
    let with_id = |bytes: Vec<u8>| {
        let id = id.map_or_else(|| "null".to_owned(), Value::to_string);
        let text = String::from_utf8_lossy(&bytes);
        if text.contains("{id}") {
            text.replace("{id}", &id).into_bytes()
        } else {
            bytes
        }
    };
    Some(match canned.body {
        Body::Fixed(bytes) => response.body(with_id(bytes)),
        Body::Repeat {
            chunk,
            count,
            every,
            hold,
        } => response.streaming(repeat(
            state.clone(),
            Bytes::from(with_id(chunk)),
            count,
            every,
            hold,
        )),
    })
}

/// The body of a `Body::Repeat`: chunks as the client takes them (actix-web polls the body
/// only when its write buffer has room), counted in [`super::Stats::chunks_sent`].
fn repeat(
    state: Arc<Shared>,
    chunk: Bytes,
    count: Option<usize>,
    every: Duration,
    hold: bool,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(0usize, move |sent| {
        let state = state.clone();
        let chunk = chunk.clone();
        async move {
            if count.is_some_and(|count| sent >= count) {
                if hold {
                    std::future::pending::<()>().await;
                }
                return None;
            }
            if !every.is_zero() {
                tokio::time::sleep(every).await;
            }
            lock(&state.counters).chunks_sent += 1;
            Some((Ok(chunk), sent + 1))
        }
    })
}
