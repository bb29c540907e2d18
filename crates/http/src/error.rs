//! The error every route answers with: `{"error": {"code", "message"}}` and a status that
//! fits, from the service's errors, the admission gate's refusals and rejected requests.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use zhiku_service::KbError;

use crate::admission::Refused;

/// An error as the API reports it: `{"error": {"code", "message"}}` with a fitting status.
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    /// An error with this status, code (`error.code`) and message.
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
}

impl From<KbError> for ApiError {
    fn from(e: KbError) -> Self {
        let (status, code) = match &e {
            KbError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            KbError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            KbError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            KbError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            KbError::TooLarge { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "too_large"),
            KbError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            KbError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, e.public_message())
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Busy { max_concurrent } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!(
                    "the server is working on {max_concurrent} requests already; retry shortly"
                ),
            ),
            Refused::Timeout { timeout_ms } => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!("the request took longer than {timeout_ms} ms"),
            ),
            Refused::Failed(e) => {
                tracing::error!(target: "zhiku::error", error = %e, "a request's worker failed");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    zhiku_service::INTERNAL_MESSAGE,
                )
            }
            Refused::Kb(e) => e.into(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        // Malformed JSON and JSON of the wrong shape are both the client's request error.
        match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => {
                Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", r.body_text())
            }
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_request",
                r.body_text(),
            ),
            _ => Self::new(StatusCode::BAD_REQUEST, "invalid_request", r.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"zhiku\""),
            );
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE && self.code == "busy" {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // The rest of a late body may still come: the connection cannot be reused.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// What a route returns.
pub(crate) type ApiResult<T> = Result<T, ApiError>;
