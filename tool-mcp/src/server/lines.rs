//! MCP's stdio framing (one JSON-RPC message per line) as an `rmcp` transport, with every
//! incoming line checked by [`inbound`](super::inbound) and answered there when `rmcp` could not
//! handle it.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{GetExtensions, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::inbound::{self, Framing, Inbound};

/// Read in large pieces: a message can be megabytes (a file's content for `write`).
const READ_BUFFER: usize = 64 * 1024;
/// How much of an over-long line is kept, to read its `id` from.
const KEEP_OF_LONG_LINE: usize = 64 * 1024;
/// A line buffer grown past this is given back once its line is handled.
const KEEP_CAPACITY: usize = 1024 * 1024;
/// While more than this is queued and not yet written (a client that sends requests but does
/// not read the answers), no more input is read: the client's writes wait, as they would on any
/// server that answers one line at a time, instead of the answers piling up in memory.
const MAX_UNWRITTEN: usize = 16 * 1024 * 1024;
/// The same for the number of lines not yet written: each is a task of `rmcp`'s waiting.
const MAX_UNWRITTEN_LINES: u64 = 1024;
/// The same for requests read and still being handled (a client that sends requests faster
/// than they are answered): each is a task of `rmcp`'s, with its request.
const MAX_OPEN_REQUESTS: usize = 1024;

/// Reads lines from `R` and writes lines to the output, so that what `receive` answers itself
/// and what `rmcp` sends go out whole and in order, and a `receive` dropped by `rmcp`'s event
/// loop (it polls `receive` in a `select!`) loses nothing.
pub(super) struct LineTransport<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of a line longer than `max_line` is skipped.
    overflow: Option<Overflow>,
    max_line: usize,
    eof: bool,
    output: Arc<Output>,
    /// Cancelled when the input ends.
    input_closed: CancellationToken,
}

struct Overflow {
    prefix: Vec<u8>,
    length: usize,
}

/// The output side. A line is queued when it is handed over (`send` queues before its future
/// runs), so lines go out in that order; whoever holds the writer writes every line queued so
/// far, in the task that waits for it (`rmcp` runs each send in a task of its own), with no
/// task of the transport's own in between.
struct Output {
    queue: Mutex<Queue>,
    writer: tokio::sync::Mutex<Writer>,
    /// Bytes queued and not yet written.
    unwritten: AtomicUsize,
    /// Lines queued and not yet written whole.
    unwritten_lines: AtomicU64,
    /// Requests read whose handling has not ended (see [`OpenRequest`]).
    open_requests: AtomicUsize,
    /// Set once a write failed: nothing queued will drain any more.
    broken: AtomicBool,
    /// Woken as writes go out (and when the output breaks).
    drained: Notify,
}

struct Queue {
    bytes: Vec<u8>,
    /// How many lines were ever queued: line `n` is written once `Writer::written >= n`.
    lines: u64,
    closed: bool,
}

struct Writer {
    sink: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    /// Taken from the queue, not yet all written: a write whose future was dropped halfway
    /// resumes here, at `offset`, so no line is lost or cut.
    pending: Vec<u8>,
    offset: usize,
    /// The lines of `pending` and those before it.
    pending_through: u64,
    written: u64,
    /// After a failed write, every later one fails the same way.
    failed: Option<io::ErrorKind>,
}

impl Output {
    fn new(sink: Box<dyn AsyncWrite + Unpin + Send>) -> Self {
        Output {
            queue: Mutex::new(Queue { bytes: Vec::new(), lines: 0, closed: false }),
            writer: tokio::sync::Mutex::new(Writer {
                sink: Some(sink),
                pending: Vec::new(),
                offset: 0,
                pending_through: 0,
                written: 0,
                failed: None,
            }),
            unwritten: AtomicUsize::new(0),
            unwritten_lines: AtomicU64::new(0),
            open_requests: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            drained: Notify::new(),
        }
    }

    /// Waits while more than [`MAX_UNWRITTEN`] bytes or [`MAX_UNWRITTEN_LINES`] lines wait to be
    /// written, or more than [`MAX_OPEN_REQUESTS`] requests are being handled, unless the output
    /// is broken (then nothing will drain, and the input must still be read to its end).
    async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            let full = self.unwritten.load(Ordering::Acquire) > MAX_UNWRITTEN
                || self.unwritten_lines.load(Ordering::Acquire) > MAX_UNWRITTEN_LINES
                || self.open_requests.load(Ordering::Acquire) > MAX_OPEN_REQUESTS;
            if !full || self.broken.load(Ordering::Acquire) {
                return;
            }
            drained.await;
        }
    }

    /// Queues one line; its number, for [`Output::written_through`].
    fn queue(&self, bytes: &[u8]) -> io::Result<u64> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.closed {
            return Err(closed());
        }
        queue.bytes.extend_from_slice(bytes);
        queue.lines += 1;
        self.unwritten.fetch_add(bytes.len(), Ordering::AcqRel);
        self.unwritten_lines.fetch_add(1, Ordering::AcqRel);
        Ok(queue.lines)
    }

    /// Waits until line `line` is written, writing whatever is queued when nobody else is.
    async fn written_through(&self, line: u64) -> io::Result<()> {
        let mut writer = self.writer.lock().await;
        let writer = &mut *writer;
        loop {
            if writer.written >= line {
                return Ok(());
            }
            if let Some(kind) = writer.failed {
                return Err(io::Error::from(kind));
            }
            if writer.pending.is_empty() {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::swap(&mut writer.pending, &mut queue.bytes);
                writer.offset = 0;
                writer.pending_through = queue.lines;
            }
            let result = match writer.sink.as_mut() {
                None => Err(closed()),
                Some(sink) => write_pending(sink, &writer.pending, &mut writer.offset, self).await,
            };
            match result {
                Ok(()) => {
                    writer.pending.clear();
                    if writer.pending.capacity() > KEEP_CAPACITY {
                        writer.pending = Vec::new();
                    }
                    self.unwritten_lines.fetch_sub(writer.pending_through - writer.written, Ordering::AcqRel);
                    writer.written = writer.pending_through;
                    self.drained.notify_waiters();
                }
                Err(error) => {
                    writer.failed = Some(error.kind());
                    self.broken.store(true, Ordering::Release);
                    self.drained.notify_waiters();
                    return Err(error);
                }
            }
        }
    }

    /// Writes what is queued, then closes the output: later lines are refused.
    async fn close(&self) {
        let last = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.closed = true;
            queue.lines
        };
        let _ = self.written_through(last).await;
        self.writer.lock().await.sink = None;
    }
}

/// Put in a request's extensions when it is read: `rmcp` moves them into the request's context,
/// which its handler holds until it has answered, so the request counts as open until then.
#[derive(Clone)]
struct OpenRequest {
    _handling: Arc<Handling>,
}

struct Handling(Arc<Output>);

impl OpenRequest {
    fn new(output: &Arc<Output>) -> Self {
        output.open_requests.fetch_add(1, Ordering::AcqRel);
        OpenRequest { _handling: Arc::new(Handling(output.clone())) }
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.open_requests.fetch_sub(1, Ordering::AcqRel);
        self.0.drained.notify_waiters();
    }
}

/// Writes `bytes[*offset..]` and flushes, advancing `offset` as the writes return, so that a
/// future dropped halfway leaves `offset` where the next one must go on.
async fn write_pending(
    sink: &mut (dyn AsyncWrite + Unpin + Send),
    bytes: &[u8],
    offset: &mut usize,
    output: &Output,
) -> io::Result<()> {
    while *offset < bytes.len() {
        match sink.write(&bytes[*offset..]).await {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => {
                *offset += n;
                output.unwritten.fetch_sub(n, Ordering::AcqRel);
                output.drained.notify_waiters();
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    sink.flush().await
}

impl<R: AsyncRead + Unpin + Send + 'static> LineTransport<R> {
    pub(super) fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        max_line: usize,
        input_closed: CancellationToken,
    ) -> Self {
        LineTransport {
            reader: BufReader::with_capacity(READ_BUFFER, reader),
            line: Vec::new(),
            overflow: None,
            max_line,
            eof: false,
            output: Arc::new(Output::new(Box::new(writer))),
            input_closed,
        }
    }

    /// Handles the line just completed: a message for `rmcp`, or `None` once answered or ignored.
    fn finish_line(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let checked = match self.overflow.take() {
            Some(overflow) => Inbound::Reply(inbound::too_long(
                &overflow.prefix,
                self.max_line,
                Some(overflow.length as u64),
            )),
            None => {
                let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
                inbound::check(line, Framing::Lines)
            }
        };
        self.line.clear();
        if self.line.capacity() > KEEP_CAPACITY {
            self.line = Vec::new();
        }
        match checked {
            Inbound::Message(mut message) => {
                if let JsonRpcMessage::Request(request) = &mut *message {
                    request.request.extensions_mut().insert(OpenRequest::new(&self.output));
                }
                Some(*message)
            }
            Inbound::Reply(reply) => {
                // Nobody to tell when the output is gone; the next send reports it.
                if let Ok(line) = encode_value(&reply).and_then(|bytes| self.output.queue(&bytes)) {
                    let output = self.output.clone();
                    tokio::spawn(async move { output.written_through(line).await });
                }
                None
            }
            Inbound::Unanswered(_) => None,
        }
    }
}

/// Appends `bytes` to the current line, or counts them once the line is over the limit.
fn take(line: &mut Vec<u8>, overflow: &mut Option<Overflow>, max_line: usize, bytes: &[u8]) {
    if let Some(overflow) = overflow {
        let room = KEEP_OF_LONG_LINE.saturating_sub(overflow.prefix.len());
        overflow.prefix.extend_from_slice(&bytes[..room.min(bytes.len())]);
        overflow.length = overflow.length.saturating_add(bytes.len());
    } else if line.len().saturating_add(bytes.len()) > max_line {
        let length = line.len().saturating_add(bytes.len());
        let mut prefix = std::mem::take(line);
        prefix.truncate(KEEP_OF_LONG_LINE);
        let room = KEEP_OF_LONG_LINE.saturating_sub(prefix.len());
        prefix.extend_from_slice(&bytes[..room.min(bytes.len())]);
        *overflow = Some(Overflow { prefix, length });
    } else {
        line.extend_from_slice(bytes);
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let queued = encode(&item).and_then(|bytes| self.output.queue(&bytes));
        let output = self.output.clone();
        async move { output.written_through(queued?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel safety: `room` and `fill_buf` are cancel safe, and everything after them runs
        // without awaiting.
        loop {
            if self.eof {
                self.input_closed.cancel();
                return None;
            }
            self.output.room().await;
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => &[],
            };
            if available.is_empty() {
                self.eof = true;
                if self.line.is_empty() && self.overflow.is_none() {
                    continue;
                }
                // A last line without its newline is still a message.
                match self.finish_line() {
                    Some(message) => return Some(message),
                    None => continue,
                }
            }
            match memchr::memchr(b'\n', available) {
                Some(end) => {
                    take(&mut self.line, &mut self.overflow, self.max_line, &available[..end]);
                    self.reader.consume(end + 1);
                    if let Some(message) = self.finish_line() {
                        return Some(message);
                    }
                }
                None => {
                    let length = available.len();
                    take(&mut self.line, &mut self.overflow, self.max_line, available);
                    self.reader.consume(length);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.close().await;
        Ok(())
    }
}

/// One message as a line. An error response whose request `id` was unknown carries `"id": null`:
/// `rmcp` leaves the member out, which JSON-RPC 2.0 and the Python SDK's message model reject.
/// A `-32601` error that is only the method's name is worded (see
/// [`super::inbound::worded_method_not_found`]); the message is written from its type either way.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    /// An error response as written: `id` is `null` rather than absent.
    #[derive(serde::Serialize)]
    struct ErrorLine<'a> {
        jsonrpc: &'a rmcp::model::JsonRpcVersion2_0,
        id: Option<&'a rmcp::model::RequestId>,
        error: std::borrow::Cow<'a, rmcp::model::ErrorData>,
    }
    let mut bytes = match message {
        JsonRpcMessage::Error(response) => {
            let mut error = std::borrow::Cow::Borrowed(&response.error);
            if let Some(worded) = super::inbound::worded_method_not_found(&response.error) {
                error.to_mut().message = worded.into();
            }
            let line = ErrorLine { jsonrpc: &response.jsonrpc, id: response.id.as_ref(), error };
            serde_json::to_vec(&line)
        }
        other => serde_json::to_vec(other),
    }
    .map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn encode_value(value: &Value) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the MCP client's input stream is closed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Poll;
    use tokio::io::AsyncReadExt;

    /// An output into a pipe of `capacity` bytes, and the pipe's other end.
    fn piped(capacity: usize) -> (Arc<Output>, tokio::io::DuplexStream) {
        let (sink, read) = tokio::io::duplex(capacity);
        (Arc::new(Output::new(Box::new(sink))), read)
    }

    #[tokio::test]
    async fn lines_go_out_whole_and_in_order_even_when_a_write_is_dropped_halfway() {
        let (output, mut read) = piped(4);
        let first = output.queue(b"{\"id\":1}\n").unwrap();
        // The pipe takes 4 bytes, then the write waits: poll it once and drop it there.
        {
            let writing = output.written_through(first);
            tokio::pin!(writing);
            let polled = std::future::poll_fn(|cx| Poll::Ready(writing.as_mut().poll(cx))).await;
            assert!(polled.is_pending(), "the pipe is full");
        }
        let second = output.queue(b"{\"id\":2}\n").unwrap();
        assert_eq!((first, second), (1, 2));
        let expected = b"{\"id\":1}\n{\"id\":2}\n";
        let reader = tokio::spawn(async move {
            let mut text = vec![0; expected.len()];
            read.read_exact(&mut text).await.map(|_| text)
        });
        // Waiting for the second line writes the rest of the first, then the second.
        output.written_through(second).await.unwrap();
        output.written_through(first).await.unwrap();
        // A lost or cut line would leave the reader waiting: fail instead.
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), reader).await;
        assert_eq!(read.expect("every byte arrives").unwrap().unwrap(), expected);
    }

    #[tokio::test]
    async fn a_failed_write_fails_every_later_one_and_a_closed_output_takes_nothing() {
        let (output, read) = piped(64);
        drop(read);
        let line = output.queue(b"{}\n").unwrap();
        let error = output.written_through(line).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
        let later = output.queue(b"{}\n").unwrap();
        assert_eq!(output.written_through(later).await.unwrap_err().kind(), io::ErrorKind::BrokenPipe);

        let (output, mut read) = piped(64);
        output.queue(b"{\"last\":true}\n").unwrap();
        output.close().await;
        assert_eq!(output.queue(b"{}\n").unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        let mut text = String::new();
        read.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "{\"last\":true}\n", "what was queued went out, then the output ended");
    }

    /// A client that sends requests and does not read the answers: past [`MAX_UNWRITTEN`] bytes
    /// waiting to be written, no more input is read (its writes wait) until it reads again.
    #[tokio::test]
    async fn input_waits_while_the_client_leaves_answers_unread() {
        let (mut client_in, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, mut client_out) = tokio::io::duplex(64 * 1024);
        let mut transport = LineTransport::new(server_in, server_out, 1024 * 1024, CancellationToken::new());
        let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        client_in.write_all(&ping.repeat(3)).await.unwrap();
        assert!(transport.receive().await.is_some(), "a request is read while the answers go out");

        // Answers the client does not read, more than the server keeps queued.
        let answer = [b"{\"x\":\"".as_slice(), &vec![b'a'; MAX_UNWRITTEN], b"\"}\n"].concat();
        let line = transport.output.queue(&answer).unwrap();
        let output = transport.output.clone();
        let writing = tokio::spawn(async move { output.written_through(line).await });
        {
            let receiving = transport.receive();
            tokio::pin!(receiving);
            let polled = std::future::poll_fn(|cx| Poll::Ready(receiving.as_mut().poll(cx))).await;
            assert!(polled.is_pending(), "a request waiting in the input is not read");
        }

        // The client reads its answers: the input is read again.
        let reading = tokio::spawn(async move {
            let mut seen = vec![0; answer.len()];
            client_out.read_exact(&mut seen).await.map(|_| seen == answer)
        });
        assert!(transport.receive().await.is_some(), "the next request is read");
        writing.await.unwrap().unwrap();
        assert!(reading.await.unwrap().unwrap(), "the answer arrived whole");
        assert!(transport.receive().await.is_some(), "and the one after it");

        // A client gone for good (its end dropped): the input is read on, to its end.
        let line = transport.output.queue(&[b'b'; MAX_UNWRITTEN + 1]).unwrap();
        let output = transport.output.clone();
        let failed = tokio::spawn(async move { output.written_through(line).await });
        drop(client_in);
        assert!(failed.await.unwrap().is_err());
        let end = tokio::time::timeout(std::time::Duration::from_secs(10), transport.receive()).await;
        assert!(end.expect("the input is read on").is_none(), "the end of the input is seen");
    }

    /// A client that sends requests faster than they are handled: past [`MAX_OPEN_REQUESTS`]
    /// requests whose handling has not ended, no more input is read until one ends.
    #[tokio::test]
    async fn input_waits_while_too_many_requests_are_being_handled() {
        let (mut client_in, server_in) = tokio::io::duplex(1024 * 1024);
        let (server_out, _client_out) = tokio::io::duplex(64 * 1024);
        let mut transport = LineTransport::new(server_in, server_out, 1024 * 1024, CancellationToken::new());
        let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        client_in.write_all(&ping.repeat(MAX_OPEN_REQUESTS + 2)).await.unwrap();
        // Handlers holding their requests (as `rmcp`'s hold their contexts).
        let mut handling = Vec::new();
        for _ in 0..=MAX_OPEN_REQUESTS {
            handling.push(transport.receive().await.expect("a request"));
        }
        {
            let receiving = transport.receive();
            tokio::pin!(receiving);
            let polled = std::future::poll_fn(|cx| Poll::Ready(receiving.as_mut().poll(cx))).await;
            assert!(polled.is_pending(), "the last request is not read while the others are handled");
        }
        handling.pop();
        let next = transport.receive().await;
        assert!(next.is_some(), "one handled: the next is read");
        // A notification is not a request: it counts for nothing.
        drop(handling);
        client_in
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        let notification = transport.receive().await.expect("a notification");
        assert!(matches!(notification, JsonRpcMessage::Notification(_)));
        assert_eq!(transport.output.open_requests.load(Ordering::Acquire), 1, "the request still held");
        drop(next);
        assert_eq!(transport.output.open_requests.load(Ordering::Acquire), 0);
    }

    #[test]
    fn long_lines_keep_a_prefix_and_count_every_byte() {
        let (mut line, mut overflow) = (Vec::new(), None);
        take(&mut line, &mut overflow, 10, b"{\"id\":1,");
        assert!(overflow.is_none());
        take(&mut line, &mut overflow, 10, b"\"x\":\"0123456789\"");
        take(&mut line, &mut overflow, 10, b"}");
        let overflow = overflow.expect("over the limit");
        assert!(line.is_empty());
        assert_eq!(overflow.prefix, b"{\"id\":1,\"x\":\"0123456789\"}");
        assert_eq!(overflow.length, 25);
    }

    /// Error responses are written from their type: `"id": null` when the id was unknown, a
    /// `-32601` that is only a method's name worded as a sentence, every other error as it is.
    #[test]
    fn error_lines_carry_an_id_and_worded_messages() {
        use rmcp::model::{ErrorCode, ErrorData, JsonRpcError, JsonRpcVersion2_0, RequestId, ServerResult};
        let error = |id: Option<RequestId>, code: i32, message: &'static str| {
            JsonRpcMessage::Error(JsonRpcError {
                jsonrpc: JsonRpcVersion2_0,
                id,
                error: ErrorData::new(ErrorCode(code), message, None),
            })
        };
        let line = |message: TxJsonRpcMessage<RoleServer>| {
            let bytes = encode(&message).unwrap();
            assert_eq!(bytes.last(), Some(&b'\n'));
            serde_json::from_slice::<Value>(&bytes).unwrap()
        };
        let worded = line(error(Some(RequestId::Number(4)), -32601, "tasks/get"));
        assert_eq!(worded["id"], serde_json::json!(4));
        assert_eq!(
            worded["error"]["message"],
            "Method not found: this server does not serve `tasks/get` on the protocol revision this request uses \
             (2026-07-28 has no `initialize` nor `ping`, and this server declares only the tools capability). Use \
             tools/list and tools/call."
        );
        let unknown = line(error(None, -32700, "Parse error"));
        assert_eq!(
            unknown,
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
        );
        let sentence = line(error(Some(RequestId::String("a".into())), -32601, "Method not found: `x`."));
        assert_eq!(sentence["error"]["message"], "Method not found: `x`.");
        let result = line(JsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1)));
        assert_eq!(result, serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    }
}
