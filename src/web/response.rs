//! [`Error`] as an actix-web [`ResponseError`]: a handler can `?` a call's error and the
//! client gets the status of [`Error::http_status`], `Retry-After` where waiting helps
//! ([`Error::http_retry_after`]) and the [`ErrorView`] as its JSON body.
//!
//! The body leaves out the server's stderr tail: those lines are for operators (the status
//! page shows them), and a service's clients need not see what a server printed about its
//! environment.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::error::http::retry_after_seconds;
use crate::error::Error;
use crate::serialize::ErrorView;

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.http_status()).unwrap_or(StatusCode::BAD_GATEWAY)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        if let Some(wait) = self.http_retry_after() {
            response.insert_header((
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(wait)),
            ));
        }
        let mut body = ErrorView::from(self);
        body.stderr_tail.clear();
        response
            .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
            .json(body)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use actix_web::body::to_bytes;

    use super::*;

    #[actix_rt::test]
    async fn an_error_answers_its_status_retry_after_and_json_without_stderr() {
        let down = Error::Unavailable {
            server: "fs".into(),
            reason: "gave up".into(),
            attempts: 4,
            stderr_tail: vec!["TOKEN=hunter2 not accepted".into()],
        };
        let response = down.error_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
        let body = to_bytes(response.into_body()).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["code"], "unavailable");
        assert_eq!(body["server"], "fs");
        assert!(body.get("stderr_tail").is_none(), "{body}");

        let busy = Error::Overloaded {
            server: "web".into(),
            limit: 0,
            reason: "HTTP 429".into(),
            retry_after: Some(Duration::from_millis(4200)),
        };
        assert_eq!(
            busy.error_response()
                .headers()
                .get(header::RETRY_AFTER)
                .unwrap(),
            "5"
        );
        let late = Error::Timeout {
            server: "fs".into(),
            method: "tools/call".into(),
            timeout: Duration::from_secs(1),
            elapsed: Duration::from_secs(1),
        };
        let response = late.error_response();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }
}
