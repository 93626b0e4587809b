//! Writing one stored output as it comes, up to the store's size limit.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::OutputRef;
use crate::truncate::TruncationInfo;

/// A stored output being written, made by [`OutputStore::create`](super::OutputStore::create).
///
/// It takes text, so the stored copy is always valid UTF-8; once the store's size limit is
/// reached the copy stops growing (at a character boundary) and the rest is only counted.
/// [`finish`](Self::finish) says how much was stored. Dropped unfinished, the file keeps what
/// was written and expires like any other.
#[derive(Debug)]
pub struct OutputWriter {
    reference: OutputRef,
    file: BufWriter<File>,
    limit: usize,
    stored: usize,
    total: usize,
    full: bool,
    /// The store's count of bytes stored since its last sweep.
    written: Arc<AtomicU64>,
}

/// A stored output, as [`OutputWriter::finish`] and [`OutputStore::save`](super::OutputStore::save)
/// leave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOutput {
    /// Its reference.
    pub reference: OutputRef,
    /// Bytes stored: all of the text, or its beginning up to the limit.
    pub stored_bytes: usize,
    /// Bytes of text given.
    pub total_bytes: usize,
    /// The store's size limit for one output.
    pub limit: usize,
}

impl StoredOutput {
    /// Whether the size limit cut the stored copy.
    pub fn is_cut(&self) -> bool {
        self.stored_bytes < self.total_bytes
    }

    /// Records in `info` that the full text was stored here (and how much of it), so the notice
    /// points at it.
    pub fn record_in(&self, info: &mut TruncationInfo) {
        info.record_saved(self.reference.as_str(), self.stored_bytes, self.limit);
    }
}

impl OutputWriter {
    pub(super) fn new(reference: OutputRef, file: File, limit: usize, written: Arc<AtomicU64>) -> Self {
        OutputWriter {
            reference,
            file: BufWriter::with_capacity(64 * 1024, file),
            limit,
            stored: 0,
            total: 0,
            full: false,
            written,
        }
    }

    /// The reference of the output being written.
    pub fn reference(&self) -> &OutputRef {
        &self.reference
    }

    /// Appends `text`, or what still fits of it.
    pub fn write_str(&mut self, text: &str) -> io::Result<()> {
        self.total = self.total.saturating_add(text.len());
        if self.full {
            return Ok(());
        }
        let room = self.limit - self.stored;
        let part = if text.len() <= room {
            text
        } else {
            // Nothing more is stored after a cut, or a later short character could fill the gap.
            self.full = true;
            &text[..text.floor_char_boundary(room)]
        };
        self.file.write_all(part.as_bytes())?;
        self.stored += part.len();
        self.written.fetch_add(part.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Appends `bytes`, which should be UTF-8 (invalid sequences are stored as U+FFFD), or what
    /// still fits of them.
    pub fn write_utf8(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.full {
            // Past the limit the text is only counted: it need not be checked.
            self.total = self.total.saturating_add(bytes.len());
            return Ok(());
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => self.write_str(text),
            Err(_) => self.write_str(&String::from_utf8_lossy(bytes)),
        }
    }

    /// Counts `bytes` more bytes of text without being given them: the stored copy ends where it
    /// is, as it does at the limit. (A producer that knows the copy is full need not send the
    /// rest.)
    pub fn skip(&mut self, bytes: usize) {
        self.total = self.total.saturating_add(bytes);
        self.full = true;
    }

    /// Writes what is buffered to the file, so that readers of the stored output see everything
    /// written so far while the output is still growing.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// Flushes the file and says what was stored.
    pub fn finish(mut self) -> io::Result<StoredOutput> {
        self.file.flush()?;
        Ok(StoredOutput {
            reference: self.reference,
            stored_bytes: self.stored,
            total_bytes: self.total,
            limit: self.limit,
        })
    }
}
