//! A command's output as it arrives: decoded, cut by the truncation engine's streaming form, and
//! kept whole in the output store, in memory bounded by the limits whatever its size.

use std::io;
use std::sync::Arc;

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
const SPILL_QUEUE: usize = 4;
/// Output is sent to the store's writer in batches of about this many bytes: a command writing
/// in small pieces is read once per piece, and waking the writer's thread for each would cost
/// more than writing it.
const SPILL_BATCH: usize = 256 * 1024;

/// The output of one command: the part not yet shown (a *window*, cut to the limits as it
/// comes), and the whole of it on its way to the output store.
///
/// `bash` shows one window, the whole output. A background session shows one window per read:
/// each read takes what arrived since the previous one.
pub(crate) struct Capture {
    window: TruncationStream,
    limits: TruncationLimits,
    store: Option<Arc<OutputStore>>,
    spill: Spill,
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
    /// On its way to the store.
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
    /// Text not sent yet (moved, not copied), and its length in bytes.
    batch: Vec<String>,
    batch_bytes: usize,
    task: JoinHandle<io::Result<StoredOutput>>,
}

enum Chunk {
    Text(Vec<String>),
    /// Write out what is buffered, then answer.
    Flush(oneshot::Sender<()>),
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
            decoder: Utf8Decoder::default(),
            filter: terminal.then(TerminalFilter::default),
            newlines_before_window: 0,
            window_ends_with_newline: true,
            bytes_before_window: 0,
        }
    }

    /// Adds raw output: decoded, cut, kept for the store. `seen` is shown the text it adds
    /// first, so the text is moved on to the store rather than copied.
    pub(crate) async fn push(&mut self, bytes: &[u8], seen: impl FnOnce(&str)) {
        let text = match &mut self.filter {
            Some(filter) => self.decoder.decode(&filter.filter(bytes)),
            None => self.decoder.decode(bytes),
        };
        seen(&text);
        self.add(text).await;
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

    async fn add(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        self.window.push_str(&text);
        self.window_ends_with_newline = text.ends_with('\n');
        match &mut self.spill {
            Spill::Off | Spill::Stored(_) => {}
            Spill::Memory(kept) => {
                kept.push_str(&text);
                if kept.len() > SPILL_AT && self.window.is_truncated() {
                    self.start_writing();
                }
            }
            Spill::Writing(writing) => writing.push(text).await,
        }
    }

    /// Sends what is kept in memory to the store, and everything after it as it comes.
    pub(crate) fn start_writing(&mut self) {
        let (Spill::Memory(kept), Some(store)) = (&mut self.spill, &self.store) else { return };
        let kept = std::mem::take(kept);
        self.spill = Spill::Writing(Writing::start(store.clone(), kept));
    }

    /// Ends the input: a character or carriage return held back is added.
    pub(crate) async fn flush_input(&mut self) {
        let mut rest = match &mut self.filter {
            Some(filter) => self.decoder.decode(&filter.flush()),
            None => String::new(),
        };
        rest.push_str(&self.decoder.flush());
        self.add(rest).await;
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
        let (chunks, mut received) = mpsc::channel::<Chunk>(SPILL_QUEUE);
        let (announce, created) = oneshot::channel();
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
                    Chunk::Text(texts) => {
                        for text in texts {
                            writer.write_str(&text)?;
                        }
                    }
                    Chunk::Flush(done) => {
                        writer.flush()?;
                        let _ = done.send(());
                    }
                }
            }
            writer.finish()
        });
        Writing { reference: None, created: Some(created), chunks, batch: Vec::new(), batch_bytes: 0, task }
    }

    /// Adds `text` to the batch, and sends the batch once it is [`SPILL_BATCH`] long.
    async fn push(&mut self, text: String) {
        self.batch_bytes += text.len();
        self.batch.push(text);
        if self.batch_bytes >= SPILL_BATCH {
            self.send_batch().await;
        }
    }

    /// Sends what the batch holds.
    async fn send_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.batch_bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        // A send fails only when the task stopped on an error, which `finish` reports.
        let _ = self.chunks.send(Chunk::Text(batch)).await;
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
        self.send_batch().await;
        let (done, flushed) = oneshot::channel();
        if self.chunks.send(Chunk::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
        Some(reference)
    }

    /// Sends the rest and waits until everything is written.
    async fn finish(mut self) -> io::Result<StoredOutput> {
        self.send_batch().await;
        drop(self.chunks);
        self.task.await.map_err(io::Error::other)?
    }
}

#[cfg(test)]
mod tests {
    use tool_runtime::spec::TruncationDirection;
    use tool_runtime::truncate::TruncationLimits;

    use super::*;

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
