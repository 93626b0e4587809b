//! A stdio server's process as rmcp's transport, with its answers bounded: a line longer than
//! the limit is dropped as it arrives and answered at once with an error for its request.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};

/// The longest message a mounted stdio server may send (as rmcp's own limit).
pub(crate) const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the answer that stands for one that was too long.
pub(crate) const ANSWER_TOO_LARGE: i32 = -32099;

/// The JSON-RPC error code of the answer that stands for one nested too deep to be read.
pub(crate) const ANSWER_TOO_DEEP: i32 = -32098;

/// The nesting of arrays and objects at which the JSON parser stops (`serde_json`'s recursion
/// limit): a line nested this deep would not be read at all, and its request left unanswered.
pub(crate) const MAX_ANSWER_DEPTH: usize = 128;

/// How many first bytes of each line are kept to read its `id` from.
const HEAD: usize = 512;

/// How long a server whose input was closed may take to exit before it is stopped.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The child process and the transport on its standard input and output.
pub(crate) struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, LimitedLines<ChildStdout>, ChildStdin>,
    /// The placeholders of the absent protected names a sandboxed server must not create, held
    /// until it is stopped.
    placeholders: Option<tool_sandbox::Placeholders>,
}

impl ChildTransport {
    pub(crate) fn new(
        child: Box<dyn ChildWrapper>,
        stdout: ChildStdout,
        stdin: ChildStdin,
        limit: usize,
        placeholders: Option<tool_sandbox::Placeholders>,
    ) -> Self {
        let transport = AsyncRwTransport::new(LimitedLines::new(stdout, limit), stdin)
            // Lines are cut at `limit` (plus the newline that ends a cut line) before rmcp reads them.
            .with_max_line_length(limit.saturating_add(2));
        ChildTransport { child: Some(child), transport, placeholders }
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        let placeholders = self.placeholders.take();
        if let Some(mut child) = self.child.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = Box::into_pin(child.kill()).await;
                drop(placeholders);
            });
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes the server's input and lets it exit; stops its process group if it does not.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else { return Ok(()) };
        if let Ok(Ok(_)) = tokio::time::timeout(EXIT_WAIT, child.wait()).await {
            self.child = None;
            self.placeholders = None;
            return Ok(());
        }
        let stopped = Box::into_pin(child.kill()).await;
        self.child = None;
        self.placeholders = None;
        stopped
    }
}

/// A reader of JSON-RPC lines that lets no line grow past `limit` bytes, nor nest arrays and
/// objects [`MAX_ANSWER_DEPTH`] deep: what was passed of such a line is ended by a newline (the
/// cut line does not parse, and rmcp skips it), then comes an error response for the line's
/// request `id` (read from its first bytes), and the rest of the line is read and dropped.
pub(crate) struct LimitedLines<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line passed on.
    line: usize,
    /// The current line's nesting so far: its depth, and whether it is in a string, just after
    /// a backslash there.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The first bytes of the current line.
    head: Vec<u8>,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
    /// Bytes to hand out before reading more.
    ready: Vec<u8>,
    handed: usize,
    buffer: Box<[u8]>,
}

impl<R> LimitedLines<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        LimitedLines {
            inner,
            limit,
            line: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            head: Vec::with_capacity(HEAD),
            discarding: false,
            ready: Vec::new(),
            handed: 0,
            buffer: vec![0; 64 * 1024].into_boxed_slice(),
        }
    }

    /// Appends to `self.ready` what of `input` is passed on.
    fn process(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            let newline = memchr::memchr(b'\n', input);
            let end = newline.map_or(input.len(), |at| at + 1);
            let (segment, rest) = input.split_at(end);
            input = rest;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            let content = newline.map_or(segment.len(), |at| at);
            let keep = HEAD.saturating_sub(self.head.len()).min(segment.len());
            self.head.extend_from_slice(&segment[..keep]);
            let refused = if self.line + content > self.limit {
                Some((ANSWER_TOO_LARGE, format!("the answer is longer than {} bytes", self.limit)))
            } else if self.nests_too_deep(&segment[..content]) {
                Some((
                    ANSWER_TOO_DEEP,
                    format!("the answer nests arrays and objects {MAX_ANSWER_DEPTH} deep"),
                ))
            } else {
                None
            };
            if let Some((code, message)) = refused {
                self.ready.push(b'\n');
                if let Some(id) = crate::jsonrpc::read_id(&self.head) {
                    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": code,
                        "message": message,
                    }});
                    self.ready.extend_from_slice(error.to_string().as_bytes());
                    self.ready.push(b'\n');
                }
                self.discarding = newline.is_none();
                self.end_line();
                continue;
            }
            self.ready.extend_from_slice(segment);
            if newline.is_some() {
                self.end_line();
            } else {
                self.line += segment.len();
            }
        }
    }
}

impl<R> LimitedLines<R> {
    /// Follows the nesting of the current line through `bytes`: whether it reaches
    /// [`MAX_ANSWER_DEPTH`].
    fn nests_too_deep(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth >= MAX_ANSWER_DEPTH {
                        return true;
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        false
    }

    fn end_line(&mut self) {
        self.line = 0;
        self.head.clear();
        (self.depth, self.in_string, self.escaped) = (0, false, false);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LimitedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.handed < this.ready.len() {
                let n = out.remaining().min(this.ready.len() - this.handed);
                out.put_slice(&this.ready[this.handed..this.handed + n]);
                this.handed += n;
                if this.handed == this.ready.len() {
                    this.ready.clear();
                    this.handed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut buffer = std::mem::take(&mut this.buffer);
            let mut read = ReadBuf::new(&mut buffer);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            let result = match polled {
                Poll::Ready(Ok(())) if filled == 0 => Some(Poll::Ready(Ok(()))),
                Poll::Ready(Ok(())) => {
                    this.process(&buffer[..filled]);
                    None
                }
                other => Some(other),
            };
            this.buffer = buffer;
            if let Some(result) = result {
                return result;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(limit: usize, chunks: &[&[u8]]) -> String {
        let mut lines = LimitedLines::new(tokio::io::empty(), limit);
        for chunk in chunks {
            lines.process(chunk);
        }
        String::from_utf8(lines.ready).unwrap()
    }

    #[test]
    fn lines_within_the_limit_pass_as_they_are() {
        assert_eq!(passed(10, &[b"{\"a\":1}\n{\"b\"", b":2}\n"]), "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(passed(7, &[b"{\"a\":1}\n"]), "{\"a\":1}\n");
    }

    #[test]
    fn a_long_line_is_cut_and_answered_with_an_error_for_its_id() {
        let long = format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"t\":\"{}\"}}}}\n", "x".repeat(100));
        let (first, second) = long.as_bytes().split_at(30);
        let out = passed(50, &[first, second, b"{\"next\":1}\n"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], &long[..30], "what was passed before the limit ends the cut line");
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 7);
        assert_eq!(error["error"]["code"], ANSWER_TOO_LARGE);
        assert_eq!(lines[2], "{\"next\":1}", "the line after the long one is read as usual");
        assert_eq!(lines.len(), 3);
        // In one piece, with no id to read: cut and dropped, nothing answered.
        let out = passed(5, &[b"[1,2,3,4,5,6]\n[1]\n"]);
        assert_eq!(out, "\n[1]\n");
    }

    /// A line `depth` arrays deep (strings with brackets and escaped quotes beside them).
    fn nested(id: u32, depth: usize) -> String {
        let inner = format!("{}\"[{{\\\"]\"{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{inner}}}\n")
    }

    #[test]
    fn a_line_nested_past_the_parsers_depth_is_answered_with_an_error_for_its_id() {
        // As deep as the parser reads: passed as it is, and it parses.
        let deepest = nested(1, MAX_ANSWER_DEPTH - 1);
        assert!(serde_json::from_str::<serde_json::Value>(deepest.trim_end()).is_ok());
        assert_eq!(passed(MAX_ANSWER_BYTES, &[deepest.as_bytes()]), deepest);
        // One level more, which the parser refuses: in two pieces, cut, answered, and the next
        // line read as usual.
        let deeper = nested(2, MAX_ANSWER_DEPTH);
        assert!(serde_json::from_str::<serde_json::Value>(deeper.trim_end()).is_err());
        let (first, second) = deeper.as_bytes().split_at(60);
        let out = passed(MAX_ANSWER_BYTES, &[first, second, b"{\"next\":[1]}\n"]);
        let lines: Vec<&str> = out.lines().collect();
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 2);
        assert_eq!(error["error"]["code"], ANSWER_TOO_DEEP);
        assert_eq!(lines[2], "{\"next\":[1]}");
        assert_eq!(lines.len(), 3);
    }
}
