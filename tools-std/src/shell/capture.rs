//! A command's output as it arrives: decoded, cut by the truncation engine's streaming form, and
//! kept whole in the output store, in memory bounded by the limits whatever its size.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, mpsc as recycle};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tool_runtime::output_store::{OutputStore, StoredOutput};
use tool_runtime::truncate::{ReadHint, TruncationInfo, TruncationLimits, TruncationStream};

use crate::shell::terminal_text::{TerminalFilter, Utf8Decoder};
use crate::text::plural;

/// Output up to this size is kept whole in memory for the output store; once it is longer and
/// known to be cut, it is written to the store as it comes. The cut itself only ever keeps what
/// the limits show.
pub const SPILL_AT: usize = 1024 * 1024;
/// Batches of output on their way to the store's file, at most.
const SPILL_QUEUE: usize = 2;
/// Output is sent to the store's writer in batches of at least this many bytes: a command
/// writing in small pieces is read once per piece, and waking the writer's thread for each
/// would cost more than writing it.
const SPILL_BATCH: usize = 256 * 1024;
/// The room each read of the output is given, at least.
const READ_BYTES: usize = SPILL_BATCH;
/// A new input buffer's size: a batch not sent yet, and a read after it. (The buffers are reused
/// once the store's writer is done with them.)
const INPUT_BYTES: usize = SPILL_BATCH + READ_BYTES;

/// The output of one command: the part not yet shown (a *window*, cut to the limits as it
/// comes), and the whole of it on its way to the output store.
///
/// `bash` shows one window, the whole output. A background session shows one window per read:
/// each read takes what arrived since the previous one.
///
/// Output is read straight into the buffer that becomes the store's next batch, and checked as
/// UTF-8 where it lies: on its way from the pipe to the store's file it is copied by the kernel
/// only. (The window keeps copies of its two ends, no more.) Past the store's limit for one
/// output the text is only counted, and the same buffer is read into again.
pub(crate) struct Capture {
    window: TruncationStream,
    limits: TruncationLimits,
    store: Option<Arc<OutputStore>>,
    spill: Spill,
    /// Output read and not yet passed on: text up to `valid`, then the first bytes of a
    /// character still to come, then (from `unchecked` on) bytes not looked at yet.
    input: Vec<u8>,
    valid: usize,
    /// Where the bytes not yet filtered or checked start.
    unchecked: usize,
    /// Decodes output that is not valid UTF-8 (its invalid sequences become U+FFFD); it holds
    /// what remains of a character cut at the end of such output.
    decoder: Utf8Decoder,
    /// For a terminal: escape sequences and CR LF removed before anything else sees the text.
    filter: Option<TerminalFilter>,
    /// Line feeds before the current window: the line numbers of the stored copy. (The
    /// window counts its own; with whether its text ends with one, that gives its line feeds.)
    newlines_before_window: usize,
    window_ends_with_newline: bool,
    /// Bytes of text before the current window.
    bytes_before_window: usize,
}

/// Where the full output goes.
enum Spill {
    /// No output store: only the cut is kept.
    Off,
    /// Everything so far, until it is longer than [`SPILL_AT`] and known to be cut.
    Memory(String),
    /// On its way to the store: the capture's input is the next batch.
    Writing(Writing),
    /// All of it is in the store (once the output ended), under this reference.
    Stored(String),
}

/// Output being written to the store by a blocking task, fed through a bounded channel.
struct Writing {
    /// The stored copy's reference, once the task has created it (or why it could not).
    reference: Option<Result<String, String>>,
    created: Option<oneshot::Receiver<Result<String, String>>>,
    chunks: mpsc::Sender<Chunk>,
    /// Batches the task has written, emptied, to be filled again: their memory stays mapped.
    written: recycle::Receiver<Vec<u8>>,
    /// Bytes of text sent, and the most the store keeps of one output: once more was sent, the
    /// rest is only counted (`skipped`), and told at the end.
    sent: usize,
    limit: usize,
    skipped: usize,
    task: JoinHandle<io::Result<StoredOutput>>,
}

enum Chunk {
    /// UTF-8 text.
    Text(Vec<u8>),
    /// Write out what is buffered, then answer.
    Flush(oneshot::Sender<()>),
    /// Bytes of text past the store's limit, not sent.
    Skipped(usize),
}

/// One window of output, ready for the model.
#[derive(Debug)]
pub(crate) struct Window {
    /// The text, cut in the middle when too long, with a notice saying where the rest is.
    pub(crate) text: String,
    /// What was cut, when something was.
    pub(crate) info: Option<TruncationInfo>,
    /// Bytes of output in this window.
    pub(crate) bytes: usize,
}

impl Capture {
    pub(crate) fn new(store: Option<Arc<OutputStore>>, limits: TruncationLimits, terminal: bool) -> Self {
        let spill = if store.is_some() { Spill::Memory(String::new()) } else { Spill::Off };
        Capture {
            window: TruncationStream::new(limits),
            limits,
            store,
            spill,
            input: Vec::new(),
            valid: 0,
            unchecked: 0,
            decoder: Utf8Decoder::default(),
            filter: terminal.then(TerminalFilter::default),
            newlines_before_window: 0,
            window_ends_with_newline: true,
            bytes_before_window: 0,
        }
    }

    /// Reads once from `output` into the capture: the bytes read, 0 at its end. Cancel-safe:
    /// dropped before it is ready, it has read nothing. [`added`](Self::added) takes in what it
    /// read.
    pub(crate) async fn read_from<R: AsyncRead + Unpin + ?Sized>(
        &mut self,
        output: &mut R,
    ) -> io::Result<usize> {
        self.input.reserve(READ_BYTES);
        output.read_buf(&mut self.input).await
    }

    /// Reads once from the non-blocking `pipe` into the capture: the bytes read (0 at its end)
    /// and the room they were given. [`added`](Self::added) takes in what it read.
    pub(crate) fn read_fd(&mut self, pipe: BorrowedFd<'_>) -> io::Result<(usize, usize)> {
        self.input.reserve(READ_BYTES);
        let room = self.input.capacity() - self.input.len();
        let read = rustix::io::read(pipe, rustix::buffer::spare_capacity(&mut self.input))?;
        Ok((read, room))
    }

    /// Adds raw output: decoded, cut, kept for the store. `seen` is shown the text it adds.
    pub(crate) async fn push(&mut self, bytes: &[u8], seen: impl FnOnce(&str)) {
        self.input.extend_from_slice(bytes);
        self.added(seen).await;
    }

    /// Takes in the output read since the last call: decoded, cut, kept for the store. `seen`
    /// is shown the text it adds.
    pub(crate) async fn added(&mut self, seen: impl FnOnce(&str)) {
        if let Some(filter) = &mut self.filter {
            let raw = self.input.split_off(self.unchecked);
            self.input.extend_from_slice(&filter.filter(&raw));
        }
        let start = self.valid;
        // Valid UTF-8 is checked where it lies; anything else goes through the decoder, as does
        // what follows a character the decoder holds the start of.
        let checked = if self.decoder.is_empty() {
            simdutf8::compat::from_utf8(&self.input[start..]).map_err(Some)
        } else {
            Err(None)
        };
        let decoded;
        let text = match checked {
            Ok(text) => text,
            Err(Some(error)) if error.error_len().is_none() => {
                // A character cut at the end: the rest of it comes with the next read.
                simdutf8::compat::from_utf8(&self.input[start..start + error.valid_up_to()])
                    .unwrap_or_default()
            }
            Err(_) => {
                let raw = self.input.split_off(start);
                decoded = self.decoder.decode(&raw);
                self.input.extend_from_slice(decoded.as_bytes());
                &decoded
            }
        };
        let len = text.len();
        if len > 0 {
            seen(text);
            self.window.push_str(text);
            self.window_ends_with_newline = text.ends_with('\n');
        }
        let spill_now = match &mut self.spill {
            Spill::Memory(kept) => {
                kept.push_str(text);
                kept.len() > SPILL_AT && self.window.is_truncated()
            }
            _ => false,
        };
        self.valid = start + len;
        self.unchecked = self.input.len();
        if spill_now {
            self.start_writing();
        }
        self.pass_on(SPILL_BATCH).await;
    }

    /// Passes the text read so far on: to the store's writer, in batches of at least `batch`
    /// bytes, while the output is being written there; otherwise it is done with (kept in
    /// memory, or not kept).
    async fn pass_on(&mut self, batch: usize) {
        match &mut self.spill {
            Spill::Writing(writing) if writing.sent > writing.limit => {
                // The stored copy is full: the text is only counted, and its buffer read into again.
                writing.skipped += self.valid;
            }
            Spill::Writing(writing) if self.valid >= batch.max(1) => {
                let mut next = writing.written.try_recv().unwrap_or_else(|_| Vec::with_capacity(INPUT_BYTES));
                next.extend_from_slice(&self.input[self.valid..]);
                let mut text = std::mem::replace(&mut self.input, next);
                text.truncate(self.valid);
                (self.valid, self.unchecked) = (0, self.input.len());
                writing.send(text).await;
                return;
            }
            Spill::Writing(_) => return,
            Spill::Off | Spill::Memory(_) | Spill::Stored(_) => {}
        }
        self.drop_text();
    }

    /// The text read so far is done with: the input keeps only what comes after it.
    fn drop_text(&mut self) {
        self.input.drain(..self.valid);
        (self.valid, self.unchecked) = (0, self.input.len());
    }

    /// Bytes of output in the current window.
    pub(crate) fn window_bytes(&self) -> usize {
        self.window.total_bytes()
    }

    /// The output so far, including what a previous window showed.
    pub(crate) fn total_bytes(&self) -> usize {
        self.bytes_before_window + self.window.total_bytes()
    }

    /// The stored copy's reference, once the output is being written to the store.
    pub(crate) async fn reference(&mut self) -> Option<String> {
        match &mut self.spill {
            Spill::Writing(writing) => writing.reference().await,
            Spill::Stored(reference) => Some(reference.clone()),
            _ => None,
        }
    }

    /// Sends what is kept in memory to the store, and everything after it as it comes.
    pub(crate) fn start_writing(&mut self) {
        let (Spill::Memory(kept), Some(store)) = (&mut self.spill, &self.store) else { return };
        let writing = Writing::start(store.clone(), std::mem::take(kept));
        self.spill = Spill::Writing(writing);
        // The text read so far is in `kept`: the input's next batch starts after it.
        self.drop_text();
    }

    /// Ends the input: a character cut short at its end becomes U+FFFD, a carriage return held
    /// back is added.
    pub(crate) async fn flush_input(&mut self) {
        let held = self.filter.as_mut().map(TerminalFilter::flush).unwrap_or_default();
        let cut = self.input.split_off(self.valid);
        if !cut.is_empty() || !self.decoder.is_empty() || !held.is_empty() {
            let mut text = self.decoder.decode(&cut);
            text.push_str(&self.decoder.flush());
            text.push_str(&String::from_utf8_lossy(&held));
            self.input.extend_from_slice(text.as_bytes());
            self.unchecked = self.input.len();
            self.added(|_| {}).await;
        }
        self.pass_on(0).await;
    }

    /// The whole output, for `bash`'s result: the text for the model (cut with a notice when
    /// too long) and what was cut.
    pub(crate) async fn finish(mut self) -> (String, Option<TruncationInfo>) {
        self.flush_input().await;
        let Capture { window, store, spill, .. } = self;
        let mut cut = window.finish();
        if !cut.is_truncated() {
            return (cut.text.into_owned(), None);
        }
        let stored = match (spill, &store) {
            (Spill::Memory(kept), Some(store)) => Some(Writing::start(store.clone(), kept).finish().await),
            (Spill::Writing(writing), _) => Some(writing.finish().await),
            (Spill::Stored(_), _) | (Spill::Off, _) | (Spill::Memory(_), None) => None,
        };
        match stored {
            Some(Ok(stored)) => stored.record_in(&mut cut.info),
            Some(Err(error)) => cut.info.record_save_error(error),
            None => {}
        }
        let info = cut.info.clone();
        let hint = store.as_deref().map_or(ReadHint::neutral(), OutputStore::read_hint);
        (cut.into_text_with_hint(hint), Some(info))
    }

    /// What arrived since the last window, for a background session's read; the next window
    /// starts empty. When the window is cut, the stored copy is flushed first, so the notice's
    /// line numbers can be read back at once.
    pub(crate) async fn take_window(&mut self) -> Window {
        let newlines = self.window.total_lines() - usize::from(!self.window_ends_with_newline);
        self.window_ends_with_newline = true;
        let window = std::mem::replace(&mut self.window, TruncationStream::new(self.limits));
        let first_line = self.newlines_before_window + 1;
        self.newlines_before_window += newlines;
        let bytes = window.total_bytes();
        let start = self.bytes_before_window;
        self.bytes_before_window += bytes;
        let cut = window.finish();
        if !cut.is_truncated() {
            return Window { text: cut.text.into_owned(), info: None, bytes };
        }
        let mut info = cut.info.clone();
        let mut text = cut.text.into_owned();
        self.pass_on(0).await;
        let reference = match &mut self.spill {
            Spill::Writing(writing) => writing.flush().await,
            Spill::Stored(reference) => Some(reference.clone()),
            _ => None,
        };
        let saving = matches!(self.spill, Spill::Writing(_) | Spill::Stored(_));
        let limit = self.store.as_deref().map_or(usize::MAX, OutputStore::max_output_bytes);
        let kept = Kept { start, end: start + bytes, limit };
        let notice = window_notice(&info, first_line, reference.as_deref(), saving, kept);
        if reference.is_some() && kept.end > limit {
            // The stored copy is the output's beginning; the window may lie past it.
            (info.stored_bytes, info.store_limit) = (Some(limit), Some(limit));
        }
        info.output_ref = reference;
        tool_runtime::truncate::append_notice(&mut text, &notice);
        Window { text, info: Some(info), bytes }
    }

    /// Ends the stored copy (when there is one) once the command's output ended; later reads
    /// still name it.
    pub(crate) async fn close(&mut self) -> Option<io::Result<StoredOutput>> {
        self.pass_on(0).await;
        match std::mem::replace(&mut self.spill, Spill::Off) {
            Spill::Writing(mut writing) => {
                let reference = writing.reference().await;
                let stored = writing.finish().await;
                if let Some(reference) = reference {
                    self.spill = Spill::Stored(reference);
                }
                Some(stored)
            }
            other => {
                self.spill = other;
                None
            }
        }
    }
}

/// Where a window lies in the whole output (in bytes), and how much of the output the store keeps.
#[derive(Debug, Clone, Copy)]
struct Kept {
    start: usize,
    end: usize,
    limit: usize,
}

/// The notice of a cut window: what it shows, and where the rest of it is in the stored copy.
fn window_notice(
    info: &TruncationInfo,
    first_line: usize,
    reference: Option<&str>,
    saving: bool,
    kept: Kept,
) -> String {
    let last_line = first_line + info.total_lines.saturating_sub(1);
    let shown: Vec<String> = info
        .kept_ranges
        .iter()
        .map(|r| {
            let (a, b) = (first_line + r.first_line - 1, first_line + r.last_line - 1);
            if a == b { format!("line {a}") } else { format!("lines {a}-{b}") }
        })
        .collect();
    let mut notice = format!(
        "[Output truncated: this part of the output is lines {first_line}-{last_line} ({}); showing {} ({} of {} bytes).",
        plural(info.total_lines as u64, "line"),
        if shown.is_empty() { "none of it".to_owned() } else { shown.join(" and ") },
        info.kept_bytes,
        info.total_bytes,
    );
    match (reference, saving) {
        (Some(reference), _) if kept.start >= kept.limit => notice.push_str(&format!(
            " This part is not saved: the output store keeps only the first {} bytes of an output, and this \
             part starts after them ({reference} holds the beginning of the output).]",
            kept.limit
        )),
        (Some(reference), _) => {
            let offset = info
                .kept_ranges
                .first()
                .filter(|r| r.first_line == 1 && r.partial.is_none())
                .map_or(first_line, |r| first_line + r.last_line);
            let saved = if kept.end > kept.limit {
                format!(
                    "Only the first {} bytes of the output are saved, as {reference} (the store's limit for \
                     one output): this part is saved up to its byte {}",
                    kept.limit,
                    kept.limit - kept.start
                )
            } else {
                format!("The full output is saved as {reference}")
            };
            notice.push_str(&format!(
                " {saved}; read the cut lines with tool_output_read(ref=\"{reference}\", offset={offset}) or \
                 search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\").]"
            ));
        }
        (None, true) => notice.push_str(" The full output could not be saved in the output store.]"),
        (None, false) => notice.push_str(" The full output is not saved: no output store is configured.]"),
    }
    notice
}

impl Writing {
    /// Starts writing `first` and every chunk sent after it to a new output in `store`. The
    /// store's file is created by the blocking task too: creating one may first clean up
    /// expired outputs.
    fn start(store: Arc<OutputStore>, first: String) -> Self {
        let (sent, limit) = (first.len(), store.max_output_bytes());
        let (chunks, mut received) = mpsc::channel::<Chunk>(SPILL_QUEUE);
        let (announce, created) = oneshot::channel();
        let (give_back, written) = recycle::channel();
        let task = tokio::task::spawn_blocking(move || {
            let mut writer = match store.create() {
                Ok(writer) => writer,
                Err(error) => {
                    let _ = announce.send(Err(error.to_string()));
                    return Err(error);
                }
            };
            let _ = announce.send(Ok(writer.reference().as_str().to_owned()));
            writer.write_str(&first)?;
            drop(first);
            while let Some(chunk) = received.blocking_recv() {
                match chunk {
                    Chunk::Text(mut text) => {
                        writer.write_utf8(&text)?;
                        // One grown past its size (by decoded output, longer than its bytes) is let go.
                        if text.capacity() <= INPUT_BYTES {
                            text.clear();
                            let _ = give_back.send(text);
                        }
                    }
                    Chunk::Flush(done) => {
                        writer.flush()?;
                        let _ = done.send(());
                    }
                    Chunk::Skipped(bytes) => writer.skip(bytes),
                }
            }
            writer.finish()
        });
        Writing { reference: None, created: Some(created), chunks, written, sent, limit, skipped: 0, task }
    }

    /// Sends a batch of text to be written.
    async fn send(&mut self, text: Vec<u8>) {
        self.sent += text.len();
        // A send fails only when the task stopped on an error, which `finish` reports.
        let _ = self.chunks.send(Chunk::Text(text)).await;
    }

    /// The stored copy's reference, `None` when it could not be created.
    async fn reference(&mut self) -> Option<String> {
        if let Some(created) = self.created.take() {
            self.reference = Some(created.await.unwrap_or_else(|_| Err("the writer stopped".to_owned())));
        }
        self.reference.as_ref().and_then(|r| r.as_ref().ok()).cloned()
    }

    /// Waits until everything sent so far is in the file; returns the stored copy's reference.
    async fn flush(&mut self) -> Option<String> {
        let reference = self.reference().await?;
        let (done, flushed) = oneshot::channel();
        if self.chunks.send(Chunk::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
        Some(reference)
    }

    /// Waits until everything sent is written.
    async fn finish(self) -> io::Result<StoredOutput> {
        if self.skipped > 0 {
            let _ = self.chunks.send(Chunk::Skipped(self.skipped)).await;
        }
        drop(self.chunks);
        self.task.await.map_err(io::Error::other)?
    }
}

#[cfg(test)]
mod tests {
    use tool_runtime::output_store::OutputStore;
    use tool_runtime::spec::TruncationDirection;
    use tool_runtime::truncate::TruncationLimits;

    use super::*;

    /// Output with multi-byte characters, invalid bytes and a character cut at its very end;
    /// longer than what is kept in memory before it is written to the store.
    fn awkward_output() -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..100_000 {
            bytes.extend_from_slice(format!("{i} héllo ✓ 🦀").as_bytes());
            if i % 997 == 0 {
                bytes.extend_from_slice(b"\xff\xe2\x9c");
            }
            bytes.push(b'\n');
        }
        bytes.extend_from_slice("🦀".as_bytes().split_at(2).0);
        bytes
    }

    #[tokio::test]
    async fn text_checked_in_place_is_what_a_lossy_decoding_of_the_whole_gives() {
        let bytes = awkward_output();
        let expected = format!("{}\u{FFFD}", String::from_utf8_lossy(&bytes[..bytes.len() - 2]));
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(OutputStore::builder().dir(dir.path()).open().unwrap());
        const LIMIT: usize = SPILL_AT + 3 * SPILL_BATCH + 1;
        let small_store =
            Arc::new(OutputStore::builder().dir(dir.path()).max_output_bytes(LIMIT).open().unwrap());
        // Every piece size splits characters, invalid sequences and batches somewhere.
        for piece in [1, 2, 3, 5, 4096, 65_537, bytes.len()] {
            let limits = TruncationLimits::new(usize::MAX, usize::MAX, TruncationDirection::Head);
            let mut whole = Capture::new(None, limits, false);
            let mut seen = String::new();
            for chunk in bytes.chunks(piece) {
                whole.push(chunk, |text| seen.push_str(text)).await;
            }
            let (text, info) = whole.finish().await;
            assert!(info.is_none());
            assert_eq!(text, expected, "pieces of {piece}");
            assert_eq!(seen, expected[..expected.len() - 3], "pieces of {piece}");

            // Cut, and spilled to the store in batches.
            let limits = TruncationLimits::new(10, 1000, TruncationDirection::Middle);
            let mut cut = Capture::new(Some(store.clone()), limits, false);
            for chunk in bytes.chunks(piece) {
                cut.push(chunk, |_| {}).await;
            }
            let (text, info) = cut.finish().await;
            let info = info.expect("cut");
            assert_eq!(info.total_bytes, expected.len(), "pieces of {piece}");
            let same_cut = tool_runtime::truncate::truncate_text(&expected, &limits);
            assert!(text.starts_with(&*same_cut.text), "pieces of {piece}: {text}");
            let reference = info.output_ref.expect("stored");
            assert_eq!(store.read_to_string(&reference).unwrap(), expected, "pieces of {piece}");

            // Past the store's limit for one output, the rest is counted and not sent.
            let mut cut = Capture::new(Some(small_store.clone()), limits, false);
            for chunk in bytes.chunks(piece) {
                cut.push(chunk, |_| {}).await;
            }
            let info = cut.finish().await.1.expect("cut");
            let kept = &expected[..expected.floor_char_boundary(LIMIT)];
            assert_eq!(
                (info.stored_bytes, info.store_limit),
                (Some(kept.len()), Some(LIMIT)),
                "pieces of {piece}"
            );
            assert_eq!(small_store.read_to_string(&info.output_ref.expect("stored")).unwrap(), kept);
        }
    }

    #[tokio::test]
    async fn a_terminal_s_output_is_filtered_before_it_is_checked() {
        let limits = TruncationLimits::new(usize::MAX, usize::MAX, TruncationDirection::Head);
        let mut capture = Capture::new(None, limits, true);
        let text = "\x1b[1mcaf\u{e9}\x1b[0m\r\nna\u{ef}ve\r";
        for chunk in text.as_bytes().chunks(1) {
            capture.push(chunk, |_| {}).await;
        }
        assert_eq!(capture.finish().await.0, "caf\u{e9}\nna\u{ef}ve\r");
    }

    #[tokio::test]
    async fn each_window_numbers_its_lines_from_where_the_previous_one_ended() {
        let limits = TruncationLimits::new(2, 1 << 20, TruncationDirection::Head);
        let mut capture = Capture::new(None, limits, false);
        let mut seen = String::new();
        capture.push(b"1\n2\n3\n4\n5", |text| seen.push_str(text)).await;
        assert_eq!(seen, "1\n2\n3\n4\n5");
        let first = capture.take_window().await;
        assert!(first.text.contains("this part of the output is lines 1-5 (5 lines)"), "{}", first.text);
        // The fifth line goes on in the second window.
        capture.push(b"5\n6\n7\n8\n", |_| {}).await;
        let second = capture.take_window().await;
        assert!(second.text.contains("this part of the output is lines 5-8 (4 lines)"), "{}", second.text);
        capture.push(b"9\n10\n11\n", |_| {}).await;
        let third = capture.take_window().await;
        assert!(third.text.contains("this part of the output is lines 9-11 (3 lines)"), "{}", third.text);
    }
}
