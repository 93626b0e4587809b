//! The answer to a POST whose body the checks of [`super::inbound`] have read: the message they
//! produced goes to its session, or to a server of its own when there is no session, and is not
//! parsed a second time. GET and DELETE stay with `rmcp`'s service, over the same session table.
//!
//! What a POST gets, by the Streamable HTTP transport of MCP (revisions 2025-03-26 to
//! 2025-11-25):
//! - the client must accept both `application/json` and `text/event-stream` (else `406`), and
//!   send `Content-Type: application/json` (else `415`); an `MCP-Protocol-Version` it sends must
//!   be a revision this server speaks (else `400`);
//! - with sessions: an `initialize` without `Mcp-Session-Id` opens a session, named in that
//!   header of the answer; any other message names its session (`400` without one, `404` for one
//!   that ended or never was);
//! - a request is answered with an event stream: the messages about it, then its response;
//! - a notification or a response is answered `202 Accepted`, with no body (a server without
//!   sessions refuses responses, since it asked nothing).
//!
//! Revision 2026-07-28 has no sessions: each request is served on its own, and its headers must
//! repeat what its body says (`MCP-Protocol-Version` its `_meta` revision, `Mcp-Method` its
//! method, `Mcp-Name` the tool, prompt or resource it names), else `400` with a `-32020` error;
//! a revision the server does not speak gets `400` and `-32022` with the ones it does, and a
//! method it does not serve `404` and `-32601`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RunningService, ServiceExt, serve_directly_with_ct};
use rmcp::transport::OneshotTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::http_response::{GATHER_WINDOW, HttpResponse, json, no_session, plain};
use super::http_sessionless::Sessionless;
use super::http_sessions::{self, CappedSessions, SessionsError};
use super::inbound;

/// The header naming a session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// The header naming the protocol revision a client speaks once it has negotiated one.
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// Answers POSTs from checked messages.
pub(crate) struct Poster {
    /// The open sessions; `None` when every request is served on its own.
    pub(crate) sessions: Option<Arc<CappedSessions>>,
    /// A server for a new session, or for one request served on its own.
    pub(crate) server: Arc<dyn Fn() -> McpServer + Send + Sync>,
    /// The protocol revisions the server speaks, for the `MCP-Protocol-Version` check.
    pub(crate) revisions: Vec<String>,
    /// How often an event stream that has nothing to say sends a comment, so that proxies and
    /// clients do not close it as idle.
    pub(crate) keep_alive: Option<Duration>,
    /// Cancelled at shutdown: ends the servers this module started.
    pub(crate) shutdown: CancellationToken,
    /// The one server state of the requests of revision 2026-07-28 on: that revision has no
    /// sessions, so what a call leaves for later (a background command, a task, the todo list)
    /// belongs to the server, shared by every such request, until it is idle.
    pub(crate) sessionless: Sessionless,
}

impl Poster {
    /// The answer to a POST carrying `message` (already checked), with the request's headers.
    ///
    /// `revision` is the revision the message says it speaks when that is 2026-07-28 or later
    /// (from its header or its `_meta`): such a message is served on its own, sessions or not.
    pub(crate) async fn answer(
        &self,
        headers: &HeaderMap,
        message: ClientJsonRpcMessage,
        revision: Option<String>,
    ) -> HttpResponse {
        if let Some(refused) = unacceptable(headers) {
            return refused;
        }
        if let Some(revision) = revision {
            return self.modern(headers, message, &revision).await;
        }
        if let Some(revision) = headers.get(PROTOCOL_VERSION)
            && !self.revisions.iter().any(|spoken| spoken.as_bytes() == revision.as_bytes())
        {
            return plain(
                StatusCode::BAD_REQUEST,
                format!(
                    "Bad request: this server does not speak protocol revision {:?} (the MCP-Protocol-Version \
                     header). It speaks {}.",
                    String::from_utf8_lossy(revision.as_bytes()),
                    self.revisions.join(", ")
                ),
            );
        }
        match &self.sessions {
            None => self.alone(message).await,
            Some(sessions) => self.in_session(sessions, headers, message).await,
        }
    }

    /// Serves `message` with a server of its own, which ends with the answer.
    async fn alone(&self, message: ClientJsonRpcMessage) -> HttpResponse {
        match message {
            JsonRpcMessage::Request(_) => {}
            JsonRpcMessage::Notification(_) => return accepted(),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                let reply = inbound::error_response(
                    None,
                    inbound::INVALID_REQUEST,
                    "Invalid request: this server keeps no sessions and sends no requests, so it has nothing a \
                     response could answer."
                        .to_owned(),
                );
                return json(StatusCode::BAD_REQUEST, &reply);
            }
        }
        let (messages, running) = self.serve_alone(message);
        event_stream(
            Source::Alone { first: None, messages, _running: running, _in_use: None },
            self.keep_alive,
        )
    }

    /// A server of its own serving `request`: what it sends, and the server (cancelled when
    /// dropped).
    fn serve_alone(
        &self,
        request: ClientJsonRpcMessage,
    ) -> (mpsc::Receiver<ServerJsonRpcMessage>, Box<RunningService<RoleServer, McpServer>>) {
        let (transport, messages) = OneshotTransport::<RoleServer>::new(request);
        let running = serve_directly_with_ct((self.server)(), transport, None, self.shutdown.child_token());
        (messages, Box::new(running))
    }

    /// Serves a message of revision 2026-07-28 on (`revision`, from its header or `_meta`).
    async fn modern(
        &self,
        headers: &HeaderMap,
        message: ClientJsonRpcMessage,
        revision: &str,
    ) -> HttpResponse {
        let request = match &message {
            JsonRpcMessage::Request(request) => request,
            JsonRpcMessage::Notification(_) => return accepted(),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                let reply = inbound::error_response(
                    None,
                    inbound::INVALID_REQUEST,
                    "Invalid request: from protocol revision 2026-07-28 on, a server sends no requests, so a \
                     client sends no responses."
                        .to_owned(),
                );
                return json(StatusCode::BAD_REQUEST, &reply);
            }
        };
        let id = serde_json::to_value(&request.id).ok();
        if let Some(mismatch) = header_mismatch(headers, &request.request) {
            let reply = inbound::error_response(id, HEADER_MISMATCH, format!("Header mismatch: {mismatch}"));
            return json(StatusCode::BAD_REQUEST, &reply);
        }
        if !self.revisions.iter().any(|spoken| spoken == revision) {
            let mut reply = inbound::error_response(
                id,
                UNSUPPORTED_PROTOCOL_VERSION,
                format!(
                    "Unsupported protocol version: this server does not speak {revision}. It speaks {}; send the \
                     request again with one of them.",
                    self.revisions.join(", ")
                ),
            );
            reply["error"]["data"] = serde_json::json!({"supported": self.revisions, "requested": revision});
            return json(StatusCode::BAD_REQUEST, &reply);
        }
        let (server, in_use) = self.sessionless.take_part(|| (self.server)());
        let (transport, answers) = OneshotTransport::<RoleServer>::new(message);
        let running = Box::new(serve_directly_with_ct(server, transport, None, self.shutdown.child_token()));
        let mut answers = answers;
        // A method this server does not serve is answered at once, and gets `404` as the revision
        // asks; anything else streams. A server slower than the window streams too.
        let first = tokio::time::timeout(GATHER_WINDOW, answers.recv()).await.ok().flatten();
        if let Some(ServerJsonRpcMessage::Error(error)) = &first
            && i64::from(error.error.code.0) == inbound::METHOD_NOT_FOUND
        {
            let mut error = error.clone();
            if let Some(worded) = inbound::worded_method_not_found(&error.error) {
                error.error.message = worded.into();
            }
            return json(StatusCode::NOT_FOUND, &ServerJsonRpcMessage::Error(error));
        }
        event_stream(
            Source::Alone {
                first: first.map(Box::new),
                messages: answers,
                _running: running,
                _in_use: Some(in_use),
            },
            self.keep_alive,
        )
    }

    /// Passes `message` to its session, or opens one for an `initialize`.
    async fn in_session(
        &self,
        sessions: &Arc<CappedSessions>,
        headers: &HeaderMap,
        message: ClientJsonRpcMessage,
    ) -> HttpResponse {
        let Some(named) = headers.get(SESSION_ID) else {
            if let JsonRpcMessage::Request(request) = &message
                && matches!(request.request, ClientRequest::InitializeRequest(_))
            {
                return self.open(sessions, message).await;
            }
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad request: the Mcp-Session-Id header is missing. Send `initialize` first, then every other \
                 message with the session id its answer names."
                    .to_owned(),
            );
        };
        let id: SessionId = match named.to_str() {
            Ok(id) => id.into(),
            Err(_) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "Bad request: the Mcp-Session-Id header is not visible ASCII, so it names no session."
                        .to_owned(),
                );
            }
        };
        if !sessions.has_session(&id).await.unwrap_or(false) {
            return no_session();
        }
        let outcome = match message {
            JsonRpcMessage::Request(_) => match sessions.create_stream(&id, message).await {
                Ok(stream) => return event_stream(Source::Session(Box::pin(stream)), self.keep_alive),
                Err(error) => error,
            },
            _ => match sessions.accept_message(&id, message).await {
                Ok(()) => return accepted(),
                Err(error) => error,
            },
        };
        session_failed(&outcome)
    }

    /// Opens a session with its `initialize` request, and answers it with the session's id.
    async fn open(&self, sessions: &Arc<CappedSessions>, initialize: ClientJsonRpcMessage) -> HttpResponse {
        let (id, transport) = match sessions.create_session().await {
            Ok(created) => created,
            Err(error) => return session_failed(&error),
        };
        let server = (self.server)();
        let stop = self.shutdown.child_token();
        tokio::spawn(async move {
            // The handshake reads the `initialize` that `initialize_session` hands the session.
            if let Ok(running) = server.serve_with_ct(transport, stop).await {
                let _ = running.waiting().await;
            }
        });
        let answer = match sessions.initialize_session(&id, initialize).await {
            Ok(answer) => answer,
            Err(error) => {
                let _ = sessions.close_session(&id).await;
                return session_failed(&error);
            }
        };
        let mut response = event_stream(
            Source::Ready(VecDeque::from([ServerSseMessage::from_message(answer)])),
            self.keep_alive,
        );
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_ID, value);
        }
        response
    }
}

/// JSON-RPC error codes of MCP for a request whose headers do not repeat its body, and for a
/// revision the server does not speak.
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How the headers of a request of revision 2026-07-28 on fail to repeat its body, as the end of a
/// sentence; `None` when they repeat it. Header names are case-insensitive, their values are not.
fn header_mismatch(headers: &HeaderMap, request: &ClientRequest) -> Option<String> {
    // A header sent twice could be read one way here and the other way by a proxy in front.
    for (name, shown) in
        [(PROTOCOL_VERSION, "MCP-Protocol-Version"), (MCP_METHOD, "Mcp-Method"), (MCP_NAME, "Mcp-Name")]
    {
        let count = headers.get_all(name).iter().count();
        if count > 1 {
            return Some(format!("the {shown} header is sent {count} times; send it once."));
        }
    }
    let revision = request.get_meta().protocol_version();
    match (headers.get(PROTOCOL_VERSION), &revision) {
        (None, _) => {
            return Some(
                "the MCP-Protocol-Version header is missing; send the revision this request speaks in it."
                    .to_owned(),
            );
        }
        (Some(header), Some(body)) if header.as_bytes() == body.as_str().as_bytes() => {}
        (Some(header), body) => {
            let body = body.as_ref().map_or("none".to_owned(), |body| format!("`{body}`"));
            return Some(format!(
                "the MCP-Protocol-Version header says `{}`, and the `_meta` of the request says {body} (its \
                 `io.modelcontextprotocol/protocolVersion`); send the same revision in both.",
                String::from_utf8_lossy(header.as_bytes())
            ));
        }
    }
    let method = request.method();
    match headers.get(MCP_METHOD) {
        None => {
            return Some(format!(
                "the Mcp-Method header is missing; send the request's method (`{method}`) in it."
            ));
        }
        Some(header) if header.as_bytes() != method.as_bytes() => {
            return Some(format!(
                "the Mcp-Method header says `{}`, and the request's method is `{method}`; send the same in both.",
                String::from_utf8_lossy(header.as_bytes())
            ));
        }
        Some(_) => {}
    }
    let (named, what) = match request {
        ClientRequest::CallToolRequest(call) => (call.params.name.as_ref(), "params.name"),
        ClientRequest::GetPromptRequest(get) => (get.params.name.as_str(), "params.name"),
        ClientRequest::ReadResourceRequest(read) => (read.params.uri.as_str(), "params.uri"),
        _ => return None,
    };
    let Some(header) = headers.get(MCP_NAME) else {
        return Some(format!(
            "the Mcp-Name header is missing; send the request's `{what}` (`{named}`) in it."
        ));
    };
    match decoded_name(header.as_bytes()) {
        Some(name) if name == named.as_bytes() => None,
        Some(name) => Some(format!(
            "the Mcp-Name header says `{}`, and the request's `{what}` is `{named}`; send the same in both.",
            String::from_utf8_lossy(&name)
        )),
        None => Some(
            "the Mcp-Name header starts as Base64 (`=?base64?`) but is not Base64 between `=?base64?` and `?=`."
                .to_owned(),
        ),
    }
}

/// A header value as sent, or decoded when it is in the Base64 form `=?base64?VALUE?=` that
/// MCP uses for values a header cannot carry; `None` when that form does not decode.
fn decoded_name(value: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine as _;
    match value.strip_prefix(b"=?base64?").and_then(|rest| rest.strip_suffix(b"?=")) {
        Some(encoded) => base64::engine::general_purpose::STANDARD.decode(encoded).ok(),
        None if value.starts_with(b"=?base64?") => None,
        None => Some(value.to_vec()),
    }
}

/// The header naming a request's method (revision 2026-07-28 on).
const MCP_METHOD: &str = "mcp-method";

/// The header naming the tool, prompt or resource a request is about (revision 2026-07-28 on).
const MCP_NAME: &str = "mcp-name";

/// The `406` or `415` answer when the client does not accept both answers a POST may get, or
/// does not send JSON; `None` when it does both.
fn unacceptable(headers: &HeaderMap) -> Option<HttpResponse> {
    let mut json_ok = false;
    let mut events_ok = false;
    for value in headers.get_all(header::ACCEPT) {
        for (media, weight) in media_ranges(value.as_bytes()) {
            if weight == 0 {
                continue;
            }
            json_ok |= media.eq_ignore_ascii_case("application/json");
            events_ok |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    if !(json_ok && events_ok) {
        return Some(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not acceptable: a POST to this endpoint is answered with JSON or an event stream; list both \
             `application/json` and `text/event-stream` in its Accept header."
                .to_owned(),
        ));
    }
    let content_type = headers.get(header::CONTENT_TYPE).map(|value| media_type(value.as_bytes()));
    if !content_type.is_some_and(|media| media.eq_ignore_ascii_case("application/json")) {
        return Some(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported media type: send the JSON-RPC message with `Content-Type: application/json`."
                .to_owned(),
        ));
    }
    None
}

/// The media type of a `Content-Type` value: what comes before its parameters, trimmed.
fn media_type(value: &[u8]) -> &str {
    let end = value.iter().position(|&byte| byte == b';').unwrap_or(value.len());
    std::str::from_utf8(&value[..end]).unwrap_or("").trim_matches([' ', '\t'])
}

/// The media ranges of an `Accept` value (RFC 9110, section 12.5.1), each with its weight in
/// thousandths (`q=0.5` is 500; 1000 without `q`). Read left to right by its grammar: a range,
/// then `;`-separated parameters whose values are tokens or quoted strings (which may hold `,`
/// and `;`), then `,` before the next range. The reading ends where the grammar breaks; a range
/// whose parameters break it is left out.
fn media_ranges(value: &[u8]) -> Vec<(&str, u16)> {
    let mut ranges = Vec::new();
    let mut at = 0;
    let skip_space = |at: &mut usize| {
        while value.get(*at).is_some_and(|&byte| byte == b' ' || byte == b'\t') {
            *at += 1;
        }
    };
    // A token ends at a separator of the grammar; empty when there is none.
    let token = |at: &mut usize| {
        let start = *at;
        while value.get(*at).is_some_and(|&byte| !b" \t,;=\"".contains(&byte)) {
            *at += 1;
        }
        std::str::from_utf8(&value[start..*at]).unwrap_or("")
    };
    loop {
        skip_space(&mut at);
        if at >= value.len() {
            return ranges;
        }
        if value[at] == b',' {
            at += 1;
            continue;
        }
        let media = token(&mut at);
        if media.is_empty() {
            return ranges;
        }
        let mut weight = 1000;
        loop {
            skip_space(&mut at);
            if value.get(at) != Some(&b';') {
                break;
            }
            at += 1;
            skip_space(&mut at);
            let name = token(&mut at);
            if value.get(at) != Some(&b'=') {
                return ranges;
            }
            at += 1;
            let parameter = if value.get(at) == Some(&b'"') {
                at += 1;
                while let Some(&byte) = value.get(at) {
                    at += if byte == b'\\' { 2 } else { 1 };
                    if byte == b'"' {
                        break;
                    }
                }
                ""
            } else {
                token(&mut at)
            };
            if name.eq_ignore_ascii_case("q") {
                match weight_of(parameter) {
                    Some(read) => weight = read,
                    None => return ranges,
                }
            }
        }
        ranges.push((media, weight));
        skip_space(&mut at);
        match value.get(at) {
            None | Some(b',') => {}
            Some(_) => return ranges,
        }
    }
}

/// A `q` value (`0`, `0.5`, `1.000`...) in thousandths.
fn weight_of(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Where the events of an answer come from.
enum Source {
    /// A session's stream for one request: a priming event, the messages about the request, its
    /// response; it ends after the response.
    Session(Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>),
    /// What a server serving one request alone sends; it ends after the response, when the
    /// server drops its end. The server is cancelled if the answer is dropped before that.
    Alone {
        /// A message already taken from `messages`, sent first.
        first: Option<Box<ServerJsonRpcMessage>>,
        messages: mpsc::Receiver<ServerJsonRpcMessage>,
        _running: Box<RunningService<RoleServer, McpServer>>,
        /// The mark that the shared state of sessionless requests is in use.
        _in_use: Option<Arc<()>>,
    },
    /// Events known already.
    Ready(VecDeque<ServerSseMessage>),
}

impl Source {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        match self {
            Source::Session(stream) => stream.as_mut().poll_next(cx),
            Source::Alone { first, messages, .. } => match first.take() {
                Some(first) => Poll::Ready(Some(ServerSseMessage::from_message(*first))),
                None => messages.poll_recv(cx).map(|next| next.map(ServerSseMessage::from_message)),
            },
            Source::Ready(events) => Poll::Ready(events.pop_front()),
        }
    }
}

/// An event stream's body: each event written as it comes, and a comment when it has been quiet
/// for the keep-alive period.
struct Events {
    source: Source,
    quiet: Option<tokio::time::Interval>,
}

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if let Poll::Ready(next) = self.source.poll_next(cx) {
            if let Some(quiet) = &mut self.quiet {
                quiet.reset();
            }
            return Poll::Ready(next.map(|event| Ok(http_body::Frame::data(event_text(event)))));
        }
        if let Some(quiet) = &mut self.quiet
            && quiet.poll_tick(cx).is_ready()
        {
            return Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(b": keep-alive\n\n")))));
        }
        Poll::Pending
    }
}

/// One event's text: its id and retry delay when it has them, then its message as one `data`
/// line (empty for a priming event), `-32601` errors worded (see
/// [`inbound::worded_method_not_found`]).
fn event_text(event: ServerSseMessage) -> Bytes {
    let mut text = Vec::with_capacity(256);
    if let Some(id) = &event.event_id {
        text.extend_from_slice(b"id: ");
        text.extend_from_slice(id.as_bytes());
        text.push(b'\n');
    }
    if let Some(retry) = event.retry {
        text.extend_from_slice(b"retry: ");
        text.extend_from_slice(itoa::Buffer::new().format(retry.as_millis()).as_bytes());
        text.push(b'\n');
    }
    text.extend_from_slice(b"data: ");
    if let Some(mut message) = event.message {
        if let ServerJsonRpcMessage::Error(error) = &*message
            && let Some(worded) = inbound::worded_method_not_found(&error.error)
            && let ServerJsonRpcMessage::Error(error) = Arc::make_mut(&mut message)
        {
            error.error.message = worded.into();
        }
        // A message always serializes: its maps have string keys.
        let _ = serde_json::to_writer(&mut text, &*message);
    }
    text.extend_from_slice(b"\n\n");
    Bytes::from(text)
}

/// A `200` event stream of `source`'s events.
fn event_stream(source: Source, keep_alive: Option<Duration>) -> HttpResponse {
    let quiet = keep_alive.map(|period| {
        let mut quiet = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        quiet.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        quiet
    });
    let mut response = Response::new(Events { source, quiet }.boxed());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies such as nginx pass each event on at once.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The answer to a message that needs no answer and was taken.
fn accepted() -> HttpResponse {
    let mut response = Response::new(http_body_util::Empty::new().boxed());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// The answer when the session table could not do what a POST asked.
fn session_failed(error: &SessionsError) -> HttpResponse {
    match error {
        SessionsError::Full { max } => json(
            StatusCode::SERVICE_UNAVAILABLE,
            &inbound::error_response(None, inbound::SERVER_BUSY, http_sessions::full_message(*max)),
        ),
        SessionsError::Local(rmcp::transport::streamable_http_server::session::local::LocalSessionManagerError::SessionNotFound(_)) => {
            no_session()
        }
        SessionsError::Local(error) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Internal error: the session could not take the message ({error}). Try again."),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_values_are_read_by_their_grammar() {
        fn read(text: &str) -> Vec<(&str, u16)> {
            media_ranges(text.as_bytes())
        }
        assert_eq!(
            read("application/json, text/event-stream"),
            [("application/json", 1000), ("text/event-stream", 1000)]
        );
        assert_eq!(
            read("text/event-stream;q=0.5 ,application/json ; q=0"),
            [("text/event-stream", 500), ("application/json", 0)]
        );
        // A quoted parameter may hold what separates ranges; it names no range.
        assert_eq!(
            read(r#"text/plain;x="a, application/json;q=1", text/event-stream"#),
            [("text/plain", 1000), ("text/event-stream", 1000)]
        );
        assert_eq!(read(r#"text/plain;x="a\", b", */*;q=0.25"#), [("text/plain", 1000), ("*/*", 250)]);
        // The reading ends where the grammar breaks: a range with a bad weight, or text after a range.
        assert_eq!(read("application/json;q=2, text/event-stream"), []);
        assert_eq!(read("application/json;q, text/event-stream"), []);
        assert_eq!(read("a/b c/d, text/event-stream"), [("a/b", 1000)]);
        assert_eq!(read(" , ,"), []);
    }

    #[test]
    fn weights_are_thousandths() {
        for (text, weight) in [("0", Some(0)), ("0.001", Some(1)), ("1", Some(1000)), ("1.000", Some(1000))] {
            assert_eq!(weight_of(text), weight, "{text}");
        }
        for text in ["1.001", "0.0001", "2", "-0", "0.a", ""] {
            assert_eq!(weight_of(text), None, "{text}");
        }
    }

    fn headers(accept: &str, content_type: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        if let Some(content_type) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
        }
        headers
    }

    #[test]
    fn a_post_must_accept_both_answers_and_send_json() {
        let status = |accept: &str, content_type: Option<&str>| {
            unacceptable(&headers(accept, content_type)).map(|response| response.status().as_u16())
        };
        let both = "application/json, text/event-stream";
        assert_eq!(status(both, Some("application/json")), None);
        assert_eq!(
            status("Text/Event-Stream, APPLICATION/JSON;q=0.1", Some("application/json; charset=utf-8")),
            None
        );
        for accept in
            ["application/json", "text/event-stream", "*/*", "application/json;q=0, text/event-stream", ""]
        {
            assert_eq!(status(accept, Some("application/json")), Some(406), "{accept}");
        }
        for content_type in [None, Some("text/plain"), Some("application/json-seq"), Some("")] {
            assert_eq!(status(both, content_type), Some(415), "{content_type:?}");
        }
    }

    /// A stream that never says anything.
    struct Silent;

    impl Stream for Silent {
        type Item = ServerSseMessage;

        fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
            Poll::Pending
        }
    }

    /// A quiet event stream sends a comment each keep-alive period, and none before.
    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_sends_a_comment_each_period() {
        let response = event_stream(Source::Session(Box::pin(Silent)), Some(Duration::from_secs(15)));
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
        let mut body = response.into_body();
        let early = tokio::time::timeout(Duration::from_secs(14), body.frame()).await;
        assert!(early.is_err(), "a comment before the period");
        for _ in 0..2 {
            let frame =
                tokio::time::timeout(Duration::from_secs(2), body.frame()).await.unwrap().unwrap().unwrap();
            assert_eq!(frame.into_data().unwrap(), ": keep-alive\n\n");
            assert!(tokio::time::timeout(Duration::from_secs(13), body.frame()).await.is_err());
        }
    }

    /// Events are written with their id and retry delay; a priming event has empty data; a
    /// `-32601` error that is only the method's name is worded.
    #[test]
    fn events_are_written_as_server_sent_events() {
        use rmcp::model::{ErrorCode, ErrorData, JsonRpcError, JsonRpcVersion2_0, RequestId};
        let mut priming = ServerSseMessage::from_message(ServerJsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: None,
            error: ErrorData::new(ErrorCode(-32601), "x", None),
        }));
        priming.message = None;
        priming.event_id = Some("0/3".to_owned());
        priming.retry = Some(Duration::from_secs(3));
        assert_eq!(event_text(priming), "id: 0/3\nretry: 3000\ndata: \n\n");
        let error = ServerSseMessage::from_message(ServerJsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(RequestId::Number(5)),
            error: ErrorData::new(ErrorCode(-32601), "tasks/get", None),
        }));
        let text = String::from_utf8(event_text(error).to_vec()).unwrap();
        let data: serde_json::Value =
            serde_json::from_str(text.strip_prefix("data: ").unwrap().strip_suffix("\n\n").unwrap()).unwrap();
        assert_eq!(data["id"], 5);
        assert!(
            data["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Method not found: this server does not serve `tasks/get`"),
            "{data}"
        );
    }
}
