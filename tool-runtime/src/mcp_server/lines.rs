//! MCP's stdio framing (one JSON-RPC message per line) as an `rmcp` transport, with every
//! incoming line checked by [`inbound`](super::inbound) and answered there when `rmcp` could not
//! handle it.

use std::io;

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::inbound::{self, Framing, Inbound};

/// Read in large pieces: a message can be megabytes (a file's content for `write`).
const READ_BUFFER: usize = 64 * 1024;
/// How much of an over-long line is kept, to read its `id` from.
const KEEP_OF_LONG_LINE: usize = 64 * 1024;
/// A line buffer grown past this is given back once its line is handled.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Reads lines from `R`; writes lines on a task of its own, so that what `receive` answers
/// itself and what `rmcp` sends go out whole and in order, and a `receive` dropped by `rmcp`'s
/// event loop (it polls `receive` in a `select!`) loses nothing.
pub(super) struct LineTransport<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of a line longer than `max_line` is skipped.
    overflow: Option<Overflow>,
    max_line: usize,
    eof: bool,
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<JoinHandle<()>>,
    /// Cancelled when the input ends.
    input_closed: CancellationToken,
}

struct Overflow {
    prefix: Vec<u8>,
    length: usize,
}

struct Outgoing {
    bytes: Vec<u8>,
    sent: Option<oneshot::Sender<io::Result<()>>>,
}

impl<R: AsyncRead + Unpin + Send + 'static> LineTransport<R> {
    pub(super) fn new<W: AsyncWrite + Unpin + Send + 'static>(
        reader: R,
        writer: W,
        max_line: usize,
        input_closed: CancellationToken,
    ) -> Self {
        let (out, queue) = mpsc::unbounded_channel();
        LineTransport {
            reader: BufReader::with_capacity(READ_BUFFER, reader),
            line: Vec::new(),
            overflow: None,
            max_line,
            eof: false,
            out: Some(out),
            writer: Some(tokio::spawn(write_lines(writer, queue))),
            input_closed,
        }
    }

    fn queue(&self, bytes: Vec<u8>, sent: Option<oneshot::Sender<io::Result<()>>>) -> io::Result<()> {
        let out = self.out.as_ref().ok_or_else(closed)?;
        out.send(Outgoing { bytes, sent }).map_err(|_| closed())
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
            Inbound::Message(message) => Some(*message),
            Inbound::Reply(reply) => {
                // Nobody to tell when the output is gone; the next send reports it.
                let _ = encode_value(&reply).and_then(|bytes| self.queue(bytes, None));
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
        let (sent, done) = oneshot::channel();
        let queued = encode(&item).and_then(|bytes| self.queue(bytes, Some(sent)));
        async move {
            queued?;
            done.await.unwrap_or_else(|_| Err(closed()))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel safety: `fill_buf` is cancel safe, and everything after it runs without awaiting.
        loop {
            if self.eof {
                self.input_closed.cancel();
                return None;
            }
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
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

/// Writes queued lines in order; after a failed write, every later one fails the same way.
async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, mut queue: mpsc::UnboundedReceiver<Outgoing>) {
    let mut failed: Option<io::ErrorKind> = None;
    while let Some(Outgoing { bytes, sent }) = queue.recv().await {
        let result = match failed {
            Some(kind) => Err(io::Error::from(kind)),
            None => {
                let result = match writer.write_all(&bytes).await {
                    Ok(()) => writer.flush().await,
                    Err(error) => Err(error),
                };
                if let Err(error) = &result {
                    failed = Some(error.kind());
                }
                result
            }
        };
        if let Some(sent) = sent {
            let _ = sent.send(result);
        }
    }
}

/// One message as a line. An error response whose request `id` was unknown carries `"id": null`:
/// `rmcp` leaves the member out, which JSON-RPC 2.0 and the Python SDK's message model reject.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    if !matches!(message, JsonRpcMessage::Error(_)) {
        let mut bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
        bytes.push(b'\n');
        return Ok(bytes);
    }
    let mut value = serde_json::to_value(message).map_err(io::Error::other)?;
    if let Value::Object(object) = &mut value
        && object.contains_key("error")
    {
        object.entry("id").or_insert(Value::Null);
    }
    encode_value(&value)
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
}
