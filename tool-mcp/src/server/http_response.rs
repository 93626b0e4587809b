//! What the HTTP modules share: the type of a response, its JSON and plain-text forms, and how long
//! an answer is gathered before it is sent.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

/// How long the answer to a POST is held back, at most, to be written whole in one go: an answer
/// that is ready by then is sent with its headers in one write; a call still running by then gets
/// its headers, and its events as they come.
pub(super) const GATHER_WINDOW: Duration = Duration::from_secs(1);

/// A response of this server: a boxed body of bytes that cannot fail.
pub(super) type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// A JSON answer.
pub(super) fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> HttpResponse {
    // Our error values and rmcp's messages always serialize: their maps have string keys.
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// A plain-text answer (a sentence).
pub(super) fn plain(status: StatusCode, text: String) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The answer to a request naming a session that ended or never was.
pub(super) fn no_session() -> HttpResponse {
    plain(
        StatusCode::NOT_FOUND,
        "Not found: no session of this server has that Mcp-Session-Id (it ended: deleted, idle too long, or \
         the server restarted). Send `initialize` without the header to start a new session."
            .to_owned(),
    )
}
