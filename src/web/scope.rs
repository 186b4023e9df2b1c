//! [`status_scope`] and [`status_scope_with`]: the routes under `/status`, and what they
//! share (the supervisor's address, and who sees what).

use actix::Addr;
use actix_web::http::header::{self, HeaderValue};
use actix_web::web::{self, Data};
use actix_web::{HttpRequest, HttpResponse, ResponseError, Scope};

use super::visibility::{View, Visibility};
use super::{events, page, redacted};
use crate::actor::messages::GetStatus;
use crate::actor::supervisor::Supervisor;
use crate::error::{Error, ErrorKind};
use crate::serialize::ErrorView;

/// What the routes of one scope share.
pub(super) struct Shared {
    pub supervisor: Addr<Supervisor>,
    pub visibility: Visibility,
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
///
/// Requests from this machine get everything; any other request gets the redacted view (see
/// [`Visibility::FullOnLoopback`]): states, counters, eras and error codes, without process
/// ids, tool lists or anything a server wrote. [`status_scope_with`] chooses otherwise.
pub fn status_scope(supervisor: Addr<Supervisor>) -> Scope {
    status_scope_with(supervisor, Visibility::default())
}

/// [`status_scope`], showing the full view to the requests `visibility` says: to every
/// request ([`Visibility::Full`], for a scope the application guards with its own middleware),
/// to none ([`Visibility::Redacted`]), or only to this machine's (the default).
pub fn status_scope_with(supervisor: Addr<Supervisor>, visibility: Visibility) -> Scope {
    web::scope("/status")
        .app_data(Data::new(Shared {
            supervisor,
            visibility,
        }))
        .route("", web::get().to(status))
        .route("/events", web::get().to(events::stream))
        .route("/page", web::get().to(page::html))
        .route("/page.js", web::get().to(page::script))
}

async fn status(shared: Data<Shared>, req: HttpRequest) -> Result<HttpResponse, Error> {
    let all = match shared.supervisor.send(GetStatus::all()).await {
        Ok(all) => all,
        Err(_) => return Ok(supervisor_gone()),
    };
    let mut answer = HttpResponse::Ok();
    answer.insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
    Ok(match shared.visibility.view_for(&req) {
        View::Full => answer.json(all?),
        // An error is its code only, as in the rest of the redacted view.
        View::Redacted => match all {
            Ok(all) => answer.json(redacted::statuses(&all)),
            Err(e) => HttpResponse::build(e.status_code()).json(redacted::Code::from(&e)),
        },
    })
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
        task_id: None,
    })
}
