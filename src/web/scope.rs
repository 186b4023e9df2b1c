//! [`status_scope`]: the routes under `/status`, and what they share (the supervisor's
//! address).

use actix::Addr;
use actix_web::http::header::{self, HeaderValue};
use actix_web::web::{self, Data};
use actix_web::{HttpResponse, Scope};

use super::{events, page};
use crate::actor::messages::GetStatus;
use crate::actor::supervisor::Supervisor;
use crate::error::{Error, ErrorKind};
use crate::serialize::ErrorView;

/// What the routes of one scope share.
pub(super) struct Shared {
    pub supervisor: Addr<Supervisor>,
}

/// The operators' routes, under `/status`:
///
/// - `GET /status`: every server's [`ServerStatus`](crate::ServerStatus) as a JSON array, in
///   the form of [`serialize`](crate::serialize), sorted by name;
/// - `GET /status/events`: the servers' events as Server-Sent Events (see
///   [`MAX_EVENT_STREAMS`](super::MAX_EVENT_STREAMS) and the module docs of `events` for the
///   bounds): first an `event: status` snapshot, then one event per change;
/// - `GET /status/page`: an HTML page for people, live through the event stream (its script
///   at `GET /status/page.js`).
///
/// A supervisor that has stopped answers 503 with an `ErrorView` of code `stopped`.
pub fn status_scope(supervisor: Addr<Supervisor>) -> Scope {
    web::scope("/status")
        .app_data(Data::new(Shared { supervisor }))
        .route("", web::get().to(status))
        .route("/events", web::get().to(events::stream))
        .route("/page", web::get().to(page::html))
        .route("/page.js", web::get().to(page::script))
}

async fn status(shared: Data<Shared>) -> Result<HttpResponse, Error> {
    match shared.supervisor.send(GetStatus::all()).await {
        Ok(all) => Ok(HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
            .json(all?)),
        Err(_) => Ok(supervisor_gone()),
    }
}

/// The answer when the supervisor's mailbox is closed: 503, code `stopped`.
pub(super) fn supervisor_gone() -> HttpResponse {
    HttpResponse::ServiceUnavailable().json(ErrorView {
        code: ErrorKind::Stopped,
        message: "the supervisor has stopped".into(),
        server: None,
        method: None,
        retry_after_ms: None,
        exit_status: None,
        stderr_tail: Vec::new(),
        status: None,
        data: None,
        field: None,
    })
}
