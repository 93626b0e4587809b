//! The HTTP server's sessions: `rmcp`'s local session manager, capped in number, and with every
//! session that ended (deleted, idle too long, or its client gone) removed from its table.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_core::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::worker::WorkerTransport;

/// At most `max` sessions at once, counted from their creation until their transport is dropped
/// (the session's worker stopped: `DELETE`, the idle time limit, or a shutdown).
pub(crate) struct CappedSessions {
    local: Arc<LocalSessionManager>,
    max: usize,
    open: Arc<AtomicUsize>,
    /// The sessions whose revision predates SSE priming events (before 2025-11-25): their
    /// streams carry messages only.
    unprimed: Arc<Mutex<HashSet<SessionId>>>,
}

impl CappedSessions {
    pub(crate) fn new(local: LocalSessionManager, max: usize) -> CappedSessions {
        CappedSessions { local: Arc::new(local), max, open: Arc::default(), unprimed: Arc::default() }
    }

    /// Whether `id`'s streams leave out priming events.
    fn unprimed(&self, id: &SessionId) -> bool {
        self.unprimed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).contains(id)
    }

    /// `stream` as `id`'s client may read it: without priming events (an empty `data` with an
    /// event id and a retry delay) for a revision before 2025-11-25, which has none. Clients of
    /// 2025-06-18 that parse every `data` as JSON (Gemini CLI's) fail on them.
    fn framed<S>(&self, id: &SessionId, stream: S) -> Framed<S> {
        Framed { first: None, inner: Box::pin(stream), unprimed: self.unprimed(id) }
    }

    /// The number of sessions open now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The most sessions open at once.
    pub(crate) fn max(&self) -> usize {
        self.max
    }
}

/// Why a session could not be created or used.
#[derive(Debug)]
pub(crate) enum SessionsError {
    /// `max` sessions are open.
    Full {
        max: usize,
    },
    Local(LocalSessionManagerError),
}

impl fmt::Display for SessionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionsError::Full { max } => f.write_str(&full_message(*max)),
            SessionsError::Local(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(error: LocalSessionManagerError) -> Self {
        SessionsError::Local(error)
    }
}

/// The sentence a client reads when `max` sessions are open.
pub(crate) fn full_message(max: usize) -> String {
    format!(
        "Too many sessions: this server already has {max} sessions open, the most it keeps at once. End \
         sessions you no longer use (DELETE /mcp with their Mcp-Session-Id) or try again later; idle \
         sessions end by themselves."
    )
}

/// A session's transport, counted until it is dropped; then the session leaves the table.
pub(crate) struct CountedTransport {
    inner: WorkerTransport<LocalSessionWorker>,
    _open: OpenSession,
}

struct OpenSession {
    id: SessionId,
    local: Arc<LocalSessionManager>,
    open: Arc<AtomicUsize>,
    unprimed: Arc<Mutex<HashSet<SessionId>>>,
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.unprimed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&self.id);
        // rmcp's table keeps a session whose worker stopped on its own (idle too long) until a
        // request names it; remove it now, so that an ended session costs nothing.
        let (id, local) = (self.id.clone(), self.local.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                local.sessions.write().await.remove(&id);
            });
        }
    }
}

impl Transport<RoleServer> for CountedTransport {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn name() -> Cow<'static, str> {
        <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = CountedTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Reserved before creating, so that concurrent requests cannot pass the cap together.
        if self.open.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Err(SessionsError::Full { max: self.max });
        }
        let open = |id: &SessionId| OpenSession {
            id: id.clone(),
            local: self.local.clone(),
            open: self.open.clone(),
            unprimed: self.unprimed.clone(),
        };
        match self.local.create_session().await {
            Ok((id, inner)) => {
                let counted = CountedTransport { inner, _open: open(&id) };
                Ok((id, counted))
            }
            Err(error) => {
                self.open.fetch_sub(1, Ordering::AcqRel);
                Err(error.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.local.initialize_session(id, message).await?;
        if let JsonRpcMessage::Response(response) = &answer
            && let ServerResult::InitializeResult(result) = &response.result
            && result.protocol_version.as_str() < PRIMING_SINCE
        {
            self.unprimed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id.clone());
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.framed(id, self.local.create_stream(id, message).await?))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // rmcp's service primes the standing stream of every session when it has a retry delay:
        // it has none here (see `rmcp_config`), and the stream is primed here, by revision.
        let mut stream = self.framed(id, self.local.create_standalone_stream(id).await?);
        if !stream.unprimed {
            stream.first = Some(ServerSseMessage::priming("0", STANDING_RETRY));
        }
        Ok(stream)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.framed(id, self.local.resume(id, last_event_id).await?))
    }
}

/// The first revision whose event streams start with a priming event (revisions are dates, so
/// their text orders them).
const PRIMING_SINCE: &str = "2025-11-25";

/// How long a client waits before it opens a standing stream again, told in its priming event.
pub(crate) const STANDING_RETRY: std::time::Duration = std::time::Duration::from_secs(3);

/// A session's event stream, without priming events for a revision that has none.
pub(crate) struct Framed<S> {
    /// An event sent before the stream's own.
    first: Option<ServerSseMessage>,
    inner: Pin<Box<S>>,
    unprimed: bool,
}

impl<S: Stream<Item = ServerSseMessage>> Stream for Framed<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(first));
        }
        loop {
            match self.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(event)) if self.unprimed && event.message.is_none() => continue,
                other => return other,
            }
        }
    }
}
