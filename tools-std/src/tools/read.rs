//! The `read` tool: a page of a text file with numbered lines, or an image.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::json;
use tool_runtime::{CancellationToken, Content, Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::editing::file_versions::{ContentHasher, FileVersions};
use crate::fs::ops::{FileKind, Operations, Target};
use crate::text::{SNIFF_BYTES, image_mime, looks_binary, plural, similar_names};

/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// At most this many bytes of numbered lines are returned per call.
pub const MAX_OUTPUT_BYTES: usize = tool_runtime::truncate::RESULT_BUDGET_BYTES - 256;
/// Images larger than this are refused.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes of one line kept in memory: enough for [`MAX_LINE_CHARS`] characters of any width.
const LINE_BYTES_KEPT: usize = MAX_LINE_CHARS * 4 + 4;

/// Read a file from the workspace: a text file as numbered lines, or an image.
///
/// `path` is relative to the workspace root (an absolute path works too; a path outside the
/// workspace needs the user's permission). Text comes back one line per line: the line number,
/// a tab, then the line. A call shows at most `limit` lines (default 1990) starting at line
/// `offset` (default 1), at most 47 KB in total; lines longer than 2000 characters are cut,
/// and the mark gives the `char_offset` that reads on in that line. When the file goes on, the
/// output ends with
/// `[showing lines a-b of N; use offset=c to continue]`: call `read` again with that offset to
/// see the rest. PNG, JPEG, GIF and WebP images (recognised by their content, up to 5 MiB) come
/// back as images. Binary files are refused (inspect them with `bash`), a directory is listed
/// with `ls`, and to find something in a large file `grep` is faster than paging through it.
#[tool(parallel, read_only, permission = "path", truncate = false, timeout = "1m")]
pub async fn read(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file to read, relative to the workspace root.
    #[arg(alias = "file_path", alias = "filePath")]
    path: String,
    /// The 1-based line number to start at (default 1).
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// How many lines to show at most.
    #[arg(default = 1990)]
    #[schemars(range(min = 1))]
    limit: u64,
    /// Characters of the first line shown (the line at `offset`) to skip: reads on in a line
    /// longer than 2000 characters, from where its cut mark says.
    #[arg(default = 0)]
    char_offset: u64,
) -> Result<ToolOutput, ToolError> {
    let resolved = ws.resolve(ctx, &path, "read").await?;
    let offset = offset.unwrap_or(1).max(1);
    let limit = limit.max(1);
    let cancel = ctx.cancellation_token().clone();
    let workspace = ws.0.clone();
    let display = resolved.display.clone();
    let versions = FileVersions::of(ctx);
    let lines = Lines { offset, limit, char_offset: usize::try_from(char_offset).unwrap_or(usize::MAX) };
    ws.blocking(move |ops| {
        read_blocking(ops, &workspace, &versions, &resolved.target, &display, lines, &cancel)
    })
    .await?
}

/// Which lines a call shows: `limit` lines from line `offset` (1-based), the first of them from
/// its character `char_offset` (0-based).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lines {
    pub(crate) offset: u64,
    pub(crate) limit: u64,
    pub(crate) char_offset: usize,
}

fn read_blocking(
    ops: &dyn Operations,
    ws: &Workspace,
    versions: &FileVersions,
    path: &Target,
    display: &str,
    lines: Lines,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let info = match ops.metadata(path) {
        Ok(info) => info,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found(ops, ws, path, display)),
        Err(e) => return Err(io_error(display, e)),
    };
    match info.kind {
        FileKind::File => {}
        FileKind::Dir => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is a directory, not a file; use `ls` to list its contents."
            )));
        }
        _ => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is not a regular file (a device, FIFO or socket); `read` only reads files."
            )));
        }
    }
    let mut file = ops.open(path).map_err(|e| io_error(display, e))?;
    // What the whole file held, for the stale-write guard of the editing tools.
    let hasher = Arc::new(Mutex::new(ContentHasher::new()));
    if versions.is_enabled() {
        file = Box::new(Hashing { inner: file, hasher: hasher.clone() });
    }
    let (head, mut reader) = sniff(file, SNIFF_BYTES).map_err(|e| io_error(display, e))?;
    if let Some(mime) = image_mime(&head) {
        return read_image(reader, display, mime, info.len);
    }
    if looks_binary(&head) {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is a binary file ({}), which `read` does not show. Inspect it with `bash` \
             (for example `file`, `xxd | head` or `strings`).",
            plural(info.len, "byte")
        )));
    }
    let page = read_lines(&mut reader, lines, cancel).map_err(|e| io_error(display, e))?;
    if versions.is_enabled() {
        // read_lines reads to the end: the hasher has seen every byte.
        let hashed = std::mem::take(&mut *hasher.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        versions.record(path, hashed);
    }
    page.into_output(display, lines.offset)
}

/// A reader that feeds what passes through it to a [`ContentHasher`].
struct Hashing {
    inner: Box<dyn Read + Send>,
    hasher: Arc<Mutex<ContentHasher>>,
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).update(&buf[..n]);
        Ok(n)
    }
}

type Reader = BufReader<Box<dyn Read + Send>>;

/// The first `n` bytes of `file`, and a reader that still yields every byte from the start.
fn sniff(mut file: Box<dyn Read + Send>, n: usize) -> io::Result<(Vec<u8>, Reader)> {
    let mut head = Vec::with_capacity(n);
    (&mut file).take(n as u64).read_to_end(&mut head)?;
    let all: Box<dyn Read + Send> = Box::new(io::Cursor::new(head.clone()).chain(file));
    Ok((head, BufReader::with_capacity(64 * 1024, all)))
}

fn read_image(reader: Reader, display: &str, mime: &str, len: u64) -> Result<ToolOutput, ToolError> {
    if len > MAX_IMAGE_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is an image ({mime}) of {}, more than the 5 MiB `read` returns; make a smaller \
             copy with `bash` (for example ImageMagick's `convert -resize`) and read that.",
            plural(len, "byte")
        )));
    }
    let mut bytes = Vec::new();
    reader.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io_error(display, e))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is an image ({mime}) larger than the 5 MiB `read` returns."
        )));
    }
    let (width, height) = image_size(&bytes, mime).map_err(|problem| {
        ToolError::invalid_arguments(format!(
            "{display} starts like an image ({mime}) but is not a valid one: {problem}. It was not sent as an \
             image; inspect it with `bash` (for example `file` or `xxd | head`)."
        ))
    })?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolOutput::text(format!("Image {display} ({mime}, {})", plural(bytes.len() as u64, "byte")))
        .with_content(Content::image(mime, data))
        .with_title(display.to_owned())
        .with_metadata("mime_type", json!(mime))
        .with_metadata("bytes", json!(bytes.len()))
        .with_metadata("width", json!(width))
        .with_metadata("height", json!(height)))
}

/// The width and height an image's header gives, once the header is checked as a decoder
/// would read it; otherwise what is wrong. `mime` is what [`image_mime`] found from the magic
/// bytes.
fn image_size(bytes: &[u8], mime: &str) -> Result<(u32, u32), &'static str> {
    let be16 = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let le16 = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let be32 = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let le32 = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let nonzero =
        |w: u32, h: u32| if w == 0 || h == 0 { Err("its width or height is 0") } else { Ok((w, h)) };
    match mime {
        "image/png" => {
            // The signature, then the IHDR chunk: 13 bytes of data and a CRC over type and data.
            if be32(8) != Some(13) || bytes.get(12..16) != Some(b"IHDR") {
                return Err("its first chunk is not a 13-byte IHDR header");
            }
            let crc = be32(29).ok_or("it ends inside its IHDR header")?;
            if crc32(&bytes[12..29]) != crc {
                return Err("the checksum of its IHDR header does not match");
            }
            let (width, height) = (be32(16).unwrap_or(0), be32(20).unwrap_or(0));
            if width > i32::MAX as u32 || height > i32::MAX as u32 {
                return Err("its width or height is out of range");
            }
            let (depth, color) = (bytes[24], bytes[25]);
            let depth_ok = match color {
                0 => matches!(depth, 1 | 2 | 4 | 8 | 16),
                3 => matches!(depth, 1 | 2 | 4 | 8),
                2 | 4 | 6 => matches!(depth, 8 | 16),
                _ => false,
            };
            if !depth_ok || bytes[26] != 0 || bytes[27] != 0 || bytes[28] > 1 {
                return Err("its IHDR header names a colour type, bit depth or method that does not exist");
            }
            nonzero(width, height)
        }
        "image/jpeg" => {
            // Segments after SOI, up to the frame header (SOFn) with the size.
            let mut at = 2;
            loop {
                match bytes.get(at) {
                    Some(0xFF) => {}
                    Some(_) => return Err("a segment does not start with a marker where one must be"),
                    None => return Err("it ends before its frame header"),
                }
                while bytes.get(at) == Some(&0xFF) {
                    at += 1;
                }
                let marker = *bytes.get(at).ok_or("it ends before its frame header")?;
                at += 1;
                match marker {
                    0xD0..=0xD7 | 0x01 => continue,
                    0xD9 | 0xDA => return Err("it has no frame header before its image data"),
                    0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                        let length = be16(at).ok_or("it ends inside its frame header")?;
                        let components = *bytes.get(at + 7).ok_or("it ends inside its frame header")?;
                        if length < 8 || !(1..=4).contains(&components) || length != 8 + 3 * components as u16
                        {
                            return Err("its frame header is malformed");
                        }
                        let (height, width) = (be16(at + 3).unwrap_or(0), be16(at + 5).unwrap_or(0));
                        return nonzero(width.into(), height.into());
                    }
                    _ => {
                        let length = be16(at).ok_or("it ends inside a segment")?;
                        if length < 2 {
                            return Err("a segment has an impossible length");
                        }
                        at += length as usize;
                    }
                }
            }
        }
        "image/gif" => {
            // The logical screen descriptor, the global colour table, then a block.
            let (width, height) = (le16(6).ok_or("it ends inside its header")?, le16(8).unwrap_or(0));
            let flags = *bytes.get(10).ok_or("it ends inside its header")?;
            let table = if flags & 0x80 != 0 { 3 << ((flags & 7) + 1) } else { 0 };
            match bytes.get(13 + table) {
                Some(0x2C | 0x21 | 0x3B) => nonzero(width.into(), height.into()),
                Some(_) => Err("no image or extension block follows its header"),
                None => Err("it ends before its first block"),
            }
        }
        "image/webp" => {
            let riff = le32(4).ok_or("it ends inside its header")? as usize;
            if riff.saturating_add(8) > bytes.len() || riff < 4 + 8 {
                return Err("it is shorter than its RIFF header says");
            }
            let chunk = bytes.get(12..16).ok_or("it ends inside its header")?;
            let data = 20;
            match chunk {
                b"VP8 " => {
                    if bytes.get(data + 3..data + 6) != Some(&[0x9D, 0x01, 0x2A]) {
                        return Err("its VP8 frame has no start code");
                    }
                    let width = le16(data + 6).unwrap_or(0) & 0x3FFF;
                    let height = le16(data + 8).unwrap_or(0) & 0x3FFF;
                    nonzero(width.into(), height.into())
                }
                b"VP8L" => {
                    if bytes.get(data) != Some(&0x2F) {
                        return Err("its VP8L bitstream has no signature");
                    }
                    let bits = le32(data + 1).ok_or("it ends inside its VP8L header")?;
                    if bits >> 29 != 0 {
                        return Err("its VP8L header has an unknown version");
                    }
                    Ok(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
                }
                b"VP8X" => {
                    let le24 = |at: usize| le32(at).map(|v| v & 0x00FF_FFFF);
                    let width = le24(data + 4).ok_or("it ends inside its VP8X header")? + 1;
                    let height = le24(data + 7).ok_or("it ends inside its VP8X header")? + 1;
                    Ok((width, height))
                }
                _ => Err("its first chunk is not VP8, VP8L or VP8X"),
            }
        }
        _ => Err("its format is not one `read` returns"),
    }
}

/// The CRC-32 of PNG chunks (ISO 3309), bit by bit: it runs over 17 bytes.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// The lines shown by one call, and where the file stands.
#[derive(Debug)]
pub(crate) struct Page {
    text: String,
    first: u64,
    last: u64,
    total: u64,
    hit_byte_limit: bool,
    /// The file was read to its end ([`COUNTED_PAST_PAGE`]): `total` is all its lines, not the
    /// least it has.
    counted_all: bool,
}

impl Default for Page {
    fn default() -> Page {
        Page { text: String::new(), first: 0, last: 0, total: 0, hit_byte_limit: false, counted_all: true }
    }
}

impl Page {
    pub(crate) fn into_output(self, display: &str, offset: u64) -> Result<ToolOutput, ToolError> {
        if self.total == 0 {
            if offset > 1 {
                return Err(ToolError::invalid_arguments(format!(
                    "offset {offset} is past the end of {display}, which is empty (0 lines)."
                )));
            }
            return Ok(ToolOutput::text(format!("[{display} is empty (0 lines).]"))
                .with_title(display.to_owned())
                .with_metadata("total_lines", json!(0)));
        }
        if offset > self.total {
            return Err(ToolError::invalid_arguments(format!(
                "offset {offset} is past the end of {display}, which has {}; use an offset from 1 to {}.",
                plural(self.total, "line"),
                self.total
            )));
        }
        let mut text = self.text;
        if self.last < self.total || !self.counted_all {
            let why = if self.hit_byte_limit { " (the 47 KB output limit was reached)" } else { "" };
            let of = match self.counted_all {
                true => self.total.to_string(),
                false => format!("at least {} (not counted further)", self.total),
            };
            text.push_str(&format!(
                "\n[showing lines {}-{} of {of}{why}; use offset={} to continue]",
                self.first,
                self.last,
                self.last + 1
            ));
        }
        let total = if self.counted_all { "total_lines" } else { "total_lines_at_least" };
        Ok(ToolOutput::text(text)
            .with_title(display.to_owned())
            .with_metadata("first_line", json!(self.first))
            .with_metadata("last_line", json!(self.last))
            .with_metadata(total, json!(self.total)))
    }
}

/// How far past the lines shown the rest of a file is read to count its lines: a file longer
/// than that (a log of gigabytes, a sparse file of terabytes a command made) is said to have at
/// least the lines counted, rather than read to its end.
const COUNTED_PAST_PAGE: u64 = 64 << 20;

/// Reads lines `offset..offset + limit` (1-based), the first from its character `char_offset`,
/// and counts the lines, holding at most one cut line in memory however long the lines or the
/// file are; past [`COUNTED_PAST_PAGE`] bytes beyond the lines shown, counting stops.
pub(crate) fn read_lines(
    reader: &mut impl BufRead,
    lines: Lines,
    cancel: &CancellationToken,
) -> io::Result<Page> {
    let Lines { offset, limit, char_offset } = lines;
    let end = offset.saturating_add(limit);
    let mut page = Page { first: offset, ..Page::default() };
    let mut line_no: u64 = 1;
    let mut last_byte: Option<u8> = None;
    let mut current: Vec<u8> = Vec::new();
    let mut more_chars = 0usize;
    // Characters of the first line shown still to skip, and whether skipping goes on (past the
    // last character skipped, up to the start of the next).
    let mut skip = char_offset;
    let mut skipping = char_offset > 0;
    let mut skipped = 0usize;
    let mut counted_past: u64 = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "the call was cancelled"));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let past_page = line_no >= end || page.hit_byte_limit;
        if past_page && counted_past > COUNTED_PAST_PAGE {
            page.counted_all = false;
            break;
        }
        let showing = line_no >= offset && line_no < end && !page.hit_byte_limit;
        let consumed = if showing {
            let (whole, newline) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            // A line with a NUL byte is binary data (a sparse file's hole), not read through:
            // the lines before it are shown, or, with none, it is refused.
            if memchr::memchr(0, whole).is_some() {
                if page.text.is_empty() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "line {line_no} holds binary data (a NUL byte), which `read` does not read through; \
                             inspect it with bash (for example `xxd`, `strings` or `tail -c`)"
                        ),
                    ));
                }
                page.counted_all = false;
                break;
            }
            let mut chunk = whole;
            if skipping {
                let mut from = chunk.len();
                for (i, &b) in chunk.iter().enumerate() {
                    if b & 0xC0 != 0x80 {
                        if skip == 0 {
                            from = i;
                            skipping = false;
                            break;
                        }
                        skip -= 1;
                        skipped += 1;
                    }
                }
                chunk = &chunk[from..];
            }
            let room = LINE_BYTES_KEPT.saturating_sub(current.len());
            current.extend_from_slice(&chunk[..room.min(chunk.len())]);
            if chunk.len() > room {
                more_chars += chunk[room..].iter().filter(|&&b| b & 0xC0 != 0x80).count();
            }
            let consumed = whole.len() + usize::from(newline);
            if newline {
                // A CR before the LF ends the line, whether it was kept or only counted.
                if whole.last() == Some(&b'\r') {
                    if more_chars > 0 {
                        more_chars -= 1;
                    } else if current.is_empty() && skipped > 0 {
                        skipped -= 1;
                        skip += 1;
                    }
                }
                page.push_line(line_no, &current, more_chars, skipped, skipped + skip);
                current.clear();
                more_chars = 0;
                (skip, skipping, skipped) = (0, false, 0);
                line_no += 1;
            }
            consumed
        } else {
            let skipping = line_no < offset;
            let mut consumed = buf.len();
            for i in memchr::memchr_iter(b'\n', buf) {
                line_no += 1;
                if line_no == offset {
                    consumed = i + 1;
                    break;
                }
            }
            // Lines before the offset are only counted: a stretch of NUL bytes (a sparse file's
            // hole) is binary data, not lines, and is not read through to find one.
            if skipping && memchr::memchr(0, &buf[..consumed]).is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "it holds binary data (a NUL byte) before line {offset}, and `read` does not read through \
                         binary data; inspect it with bash (for example `xxd`, `strings` or `tail -c`)"
                    ),
                ));
            }
            consumed
        };
        last_byte = buf[..consumed].last().copied().or(last_byte);
        if past_page {
            counted_past += consumed as u64;
        }
        reader.consume(consumed);
    }
    let unterminated = last_byte.is_some_and(|b| b != b'\n');
    if page.counted_all && unterminated && line_no >= offset && line_no < end && !page.hit_byte_limit {
        page.push_line(line_no, &current, more_chars, skipped, skipped + skip);
    }
    page.total = line_no - 1 + u64::from(unterminated && page.counted_all);
    Ok(page)
}

impl Page {
    /// Adds line `line_no`, of which `skipped` characters (of the `wanted` skipped) were
    /// skipped before `bytes` and `more_chars` follow them.
    fn push_line(&mut self, line_no: u64, bytes: &[u8], more_chars: usize, skipped: usize, wanted: usize) {
        let bytes = if more_chars == 0 { bytes.strip_suffix(b"\r").unwrap_or(bytes) } else { bytes };
        let text = String::from_utf8_lossy(bytes);
        let line = format!(
            "{}{}\n",
            crate::editing::line_numbers::prefix(line_no),
            part_of_line(&text, line_no, skipped, wanted, more_chars)
        );
        if self.text.len() + line.len() > MAX_OUTPUT_BYTES && !self.text.is_empty() {
            self.hit_byte_limit = true;
            return;
        }
        self.text.push_str(&line);
        self.last = line_no;
    }
}

/// A line as shown: whole, or the part from character `skipped` on, cut at [`MAX_LINE_CHARS`]
/// characters with a mark saying how to read on (`more_chars` characters follow `text`); a
/// line that ended before character `wanted` says so.
fn part_of_line<'a>(
    text: &'a str,
    line_no: u64,
    skipped: usize,
    wanted: usize,
    more_chars: usize,
) -> Cow<'a, str> {
    if skipped == 0 && more_chars == 0 && text.len() <= MAX_LINE_CHARS {
        return Cow::Borrowed(text);
    }
    let (end, shown) = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => (end, MAX_LINE_CHARS),
        None => (text.len(), text.chars().count()),
    };
    let total = skipped + text.chars().count() + more_chars;
    if skipped == 0 && shown == total {
        return Cow::Borrowed(text);
    }
    if wanted > skipped || (skipped > 0 && skipped == total) {
        return Cow::Owned(format!(
            "[char_offset={wanted} is past the end of line {line_no}, which has {}]",
            plural(total as u64, "character")
        ));
    }
    let (from, to) = (skipped + 1, skipped + shown);
    let before = if skipped > 0 { "…" } else { "" };
    Cow::Owned(if to < total {
        format!(
            "{before}{}… [line truncated: showing characters {from}-{to} of {total}; read on with offset={line_no}, char_offset={to}]",
            &text[..end]
        )
    } else {
        format!("{before}{} [showing characters {from}-{to} of {total}]", &text[..end])
    })
}

fn not_found(ops: &dyn Operations, ws: &Workspace, path: &Target, display: &str) -> ToolError {
    let mut message = format!("File not found: {display}.");
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        match ops.read_dir(&parent) {
            Ok(entries) => {
                let names: Vec<&str> = entries.iter().filter_map(|e| e.name.to_str()).collect();
                let similar = similar_names(name, names.iter().copied());
                if !similar.is_empty() {
                    let similar: Vec<String> = similar.iter().map(|n| ws.display(&parent.join(n))).collect();
                    message.push_str(&format!(" Did you mean: {}?", similar.join(", ")));
                }
            }
            Err(_) => message.push_str(&format!(
                " The directory {} does not exist either; use `glob` to find the file.",
                ws.display(&parent)
            )),
        }
    }
    ToolError::not_found(message)
}

fn io_error(display: &str, error: io::Error) -> ToolError {
    if error.kind() == io::ErrorKind::Interrupted {
        return ToolError::cancelled("The call was cancelled.");
    }
    let message = format!("Cannot read {display}: {error}");
    ToolError::from_io(error).with_message(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::{ErrorKind, Tool};

    use super::*;
    use crate::testing::Fixture;

    fn numbered(range: std::ops::RangeInclusive<u64>) -> String {
        range.map(|n| format!("{n:>6}\tline {n}\n")).collect()
    }

    fn lines(n: u64) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn the_description_says_how_to_continue() {
        assert!(ReadTool.spec().description.contains("use offset=c to continue"));
    }

    #[tokio::test]
    async fn whole_small_file_is_numbered_without_notice() {
        let fx = Fixture::new();
        fx.write("a.txt", "one\r\ntwo\n\nfour");
        assert_eq!(
            fx.text("read", json!({"path": "a.txt"})).await,
            "     1\tone\n     2\ttwo\n     3\t\n     4\tfour\n"
        );
    }

    /// A sparse file of 4 GiB (one a command can make in a moment) is not read to its end to
    /// count its lines: past 64 MB beyond the lines shown, it has at least those counted.
    #[tokio::test]
    async fn a_huge_file_is_counted_only_so_far_past_the_lines_shown() {
        let fx = Fixture::new();
        fx.write("sparse.txt", "hello\n".repeat(40_000));
        let file = std::fs::OpenOptions::new().write(true).open(fx.root().join("sparse.txt")).unwrap();
        file.set_len(4 << 30).unwrap();
        let out = fx.call("read", json!({"path": "sparse.txt", "limit": 1})).await.unwrap();
        assert_eq!(
            out.text_content(),
            "     1\thello\n\n[showing lines 1-1 of at least 40000 (not counted further); use offset=2 to continue]"
        );
        assert_eq!(out.metadata["total_lines_at_least"], json!(40_000));
        assert!(out.metadata.get("total_lines").is_none());
        // Past the text, the hole is binary data: neither read through nor shown.
        let err = fx.error("read", json!({"path": "sparse.txt", "offset": 40_001})).await;
        assert!(err.message().contains("line 40001 holds binary data (a NUL byte)"), "{}", err.message());
        let err = fx.error("read", json!({"path": "sparse.txt", "offset": 50_000})).await;
        assert!(err.message().contains("binary data (a NUL byte) before line 50000"), "{}", err.message());
        let out = fx.call("read", json!({"path": "sparse.txt", "offset": 39_999})).await.unwrap();
        assert!(
            out.text_content()
                .starts_with(" 39999\thello\n 40000\thello\n\n[showing lines 39999-40000 of at least 40000"),
            "{}",
            out.text_content()
        );
    }

    #[tokio::test]
    async fn offset_limit_and_continuation_notice() {
        let fx = Fixture::new();
        fx.write("a.txt", lines(10));
        let text = fx.text("read", json!({"path": "a.txt", "offset": 3, "limit": 4})).await;
        assert_eq!(text, format!("{}\n[showing lines 3-6 of 10; use offset=7 to continue]", numbered(3..=6)));
        let text = fx.text("read", json!({"path": "a.txt", "offset": 7})).await;
        assert_eq!(text, numbered(7..=10));
    }

    #[tokio::test]
    async fn default_limit_is_1990_lines() {
        let fx = Fixture::new();
        fx.write("big.txt", "x\n".repeat(2500));
        let out = fx.call("read", json!({"path": "big.txt"})).await.unwrap();
        let text = out.text_content();
        assert!(
            text.ends_with("  1990\tx\n\n[showing lines 1-1990 of 2500; use offset=1991 to continue]"),
            "{text}"
        );
        assert_eq!(out.metadata["total_lines"], json!(2500));
    }

    /// Clients keep the first 2000 lines and 48,000 bytes of a result (opencode; Claude Code keeps
    /// 50,000 characters): the continuation notice is within both, whatever the file's length.
    #[tokio::test]
    async fn the_continuation_is_within_2000_lines_and_the_result_budget() {
        let fx = Fixture::new();
        for (lines, width) in [(1999, 1), (2000, 1), (2001, 1), (5000, 1), (5000, 40), (3000, 1999)] {
            fx.write("big.txt", format!("{}\n", "x".repeat(width)).repeat(lines));
            let text = fx.call("read", json!({"path": "big.txt"})).await.unwrap().text_content();
            assert!(text.lines().count() <= 2000, "{lines} lines of {width}: {} lines", text.lines().count());
            let budget = tool_runtime::truncate::RESULT_BUDGET_BYTES;
            assert!(text.len() <= budget, "{lines} lines of {width}: {} bytes", text.len());
            let continues = lines > 1990 || (width + 1) * lines > budget - 256;
            assert_eq!(text.contains("to continue]"), continues, "{lines} lines of {width}");
        }
    }

    #[tokio::test]
    async fn output_stops_at_the_byte_limit_with_the_same_notice() {
        let fx = Fixture::new();
        let line = "y".repeat(1000);
        fx.write("wide.txt", format!("{line}\n").repeat(100));
        let text = fx.text("read", json!({"path": "wide.txt"})).await;
        // Each numbered line takes 1008 bytes, so 47 of them fit in 47744.
        assert!(text.len() <= MAX_OUTPUT_BYTES + 200, "{}", text.len());
        assert!(
            text.ends_with(
                "\n[showing lines 1-47 of 100 (the 47 KB output limit was reached); use offset=48 to continue]"
            ),
            "{}",
            &text[text.len() - 200..]
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut_with_a_marker() {
        let fx = Fixture::new();
        fx.write("min.js", format!("{}\nshort\n", "é".repeat(30_000)));
        let text = fx.text("read", json!({"path": "min.js"})).await;
        let expected = format!(
            "     1\t{}… [line truncated: showing characters 1-2000 of 30000; read on with offset=1, char_offset=2000]\n     2\tshort\n",
            "é".repeat(2000)
        );
        assert_eq!(text, expected);
    }

    #[tokio::test]
    async fn char_offset_reads_on_in_a_long_line() {
        let fx = Fixture::new();
        let line: String = (0..4500).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        fx.write("min.js", format!("first\n{line}\r\nlast\n"));
        let read = |args: serde_json::Value| fx.text("read", args);
        let text = read(json!({"path": "min.js", "offset": 2, "limit": 1, "char_offset": 2000})).await;
        assert_eq!(
            text,
            format!(
                "     2\t…{}… [line truncated: showing characters 2001-4000 of 4500; read on with offset=2, char_offset=4000]\n\n[showing lines 2-2 of 3; use offset=3 to continue]",
                &line[2000..4000]
            )
        );
        let text = read(json!({"path": "min.js", "offset": 2, "char_offset": 4000})).await;
        assert_eq!(
            text,
            format!("     2\t…{} [showing characters 4001-4500 of 4500]\n     3\tlast\n", &line[4000..])
        );
        let text = read(json!({"path": "min.js", "offset": 2, "limit": 1, "char_offset": 9000})).await;
        assert!(
            text.starts_with(
                "     2\t[char_offset=9000 is past the end of line 2, which has 4500 characters]\n"
            ),
            "{text}"
        );
        // Multi-byte characters are counted as characters, whatever the reader's chunks.
        fx.write("wide.txt", format!("x{}\n", "é".repeat(70_000)));
        let text = read(json!({"path": "wide.txt", "char_offset": 68_001})).await;
        assert_eq!(
            text,
            format!("     1\t…{} [showing characters 68002-70001 of 70001]\n", "é".repeat(2000))
        );
        let text = read(json!({"path": "wide.txt", "char_offset": 32_768})).await;
        assert!(
            text.ends_with("… [line truncated: showing characters 32769-34768 of 70001; read on with offset=1, char_offset=34768]\n"),
            "{}",
            &text[text.len() - 200..]
        );
        // A short line read from a character on.
        let text = read(json!({"path": "min.js", "char_offset": 2})).await;
        assert!(text.starts_with("     1\t…rst [showing characters 3-5 of 5]\n     2\tabc"), "{text}");
    }

    #[tokio::test]
    async fn offset_past_the_end_names_the_line_count() {
        let fx = Fixture::new();
        fx.write("a.txt", lines(12));
        let err = fx.error("read", json!({"path": "a.txt", "offset": 13})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert_eq!(
            err.message(),
            "offset 13 is past the end of a.txt, which has 12 lines; use an offset from 1 to 12."
        );
        fx.write("one.txt", "only");
        let err = fx.error("read", json!({"path": "one.txt", "offset": 2})).await;
        assert_eq!(
            err.message(),
            "offset 2 is past the end of one.txt, which has 1 line; use an offset from 1 to 1."
        );
    }

    #[tokio::test]
    async fn empty_file_is_fine() {
        let fx = Fixture::new();
        fx.write("empty.txt", "");
        assert_eq!(fx.text("read", json!({"path": "empty.txt"})).await, "[empty.txt is empty (0 lines).]");
        let err = fx.error("read", json!({"path": "empty.txt", "offset": 3})).await;
        assert_eq!(err.message(), "offset 3 is past the end of empty.txt, which is empty (0 lines).");
    }

    #[tokio::test]
    async fn binary_files_are_refused() {
        let fx = Fixture::new();
        fx.write("data.bin", b"abc\0def");
        let err = fx.error("read", json!({"path": "data.bin"})).await;
        assert_eq!(
            err.message(),
            "data.bin is a binary file (7 bytes), which `read` does not show. Inspect it with `bash` (for example `file`, `xxd | head` or `strings`)."
        );
        let noise: Vec<u8> = (0..4000u32).map(|i| (i % 31) as u8 + 1).collect();
        fx.write("noise.dat", noise);
        assert!(fx.error("read", json!({"path": "noise.dat"})).await.message().contains("is a binary file"));
    }

    /// Tiny images written by Pillow, 3 by 2 pixels each.
    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }
    const PNG: &str = "89504e470d0a1a0a0000000d49484452000000030000000208020000001216f14d0000001049444154789c63fccf00\
                       054c3006030013290103f0d807840000000049454e44ae426082";
    const JPEG_HEAD: &str = "ffd8ffe000104a46494600010100000100010000ffc00011080002000303012200021101031101ffda000c03010002\
                             110311003f00e2e8a28af993f713ffd9";
    const GIF: &str =
        "47494638376103000200810000ff00000000000000000000002c00000000030002000008060001081c1810003b";
    const WEBP: &str = "524946463c000000574542505650382030000000d001009d012a0300020001402625a00274ba01f80003b000fef2eb7\
                        ffcd815cd73eff7ffd2e0fd2e0fd2e0ffd2900000";
    const WEBP_LOSSLESS: &str = "524946461c000000574542505650384c0f0000002f024000000710fd8ffe0722a2ff0100";
    const WEBP_EXTENDED: &str = "524946465e00000057454250565038580a00000010000000020000010000414c504807000000008080808080\
                                 80005650382030000000d001009d012a0300020001402625a00274ba01f80003b000fef2eb7ffcd815cd7\
                                 3eff7ffd2e0fd2e0fd2e0ffd2900000";

    #[tokio::test]
    async fn images_are_detected_by_content_not_extension() {
        let fx = Fixture::new();
        let png = hex(PNG);
        fx.write("picture.txt", &png);
        let out = fx.call("read", json!({"path": "picture.txt"})).await.unwrap();
        assert_eq!(out.text_content(), "Image picture.txt (image/png, 73 bytes)");
        assert_eq!(
            out.content[1],
            Content::image("image/png", base64::engine::general_purpose::STANDARD.encode(&png))
        );
        assert_eq!((out.metadata["width"].clone(), out.metadata["height"].clone()), (json!(3), json!(2)));
        for (bytes, mime) in [
            (hex(JPEG_HEAD), "image/jpeg"),
            (hex(GIF), "image/gif"),
            (hex(WEBP), "image/webp"),
            (hex(WEBP_LOSSLESS), "image/webp"),
            (hex(WEBP_EXTENDED), "image/webp"),
        ] {
            fx.write("img.png", &bytes);
            let out = fx.call("read", json!({"path": "img.png"})).await.unwrap();
            assert!(matches!(&out.content[1], Content::Image { mime_type, .. } if mime_type == mime));
            assert_eq!(
                (out.metadata["width"].clone(), out.metadata["height"].clone()),
                (json!(3), json!(2)),
                "{mime}"
            );
        }
    }

    #[tokio::test]
    async fn an_image_whose_header_does_not_decode_is_an_error() {
        let fx = Fixture::new();
        let png = hex(PNG);
        let mut bad_crc = png.clone();
        bad_crc[17] ^= 1;
        let mut bad_depth = png.clone();
        bad_depth[24] = 3;
        let crc = super::crc32(&bad_depth[12..29]).to_be_bytes();
        bad_depth[29..33].copy_from_slice(&crc);
        let mut webp_short = hex(WEBP);
        webp_short.truncate(40);
        let cases = [
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(), "image/png", "it ends inside its IHDR header"),
            (bad_crc, "image/png", "the checksum of its IHDR header does not match"),
            (
                bad_depth,
                "image/png",
                "its IHDR header names a colour type, bit depth or method that does not exist",
            ),
            (b"\xFF\xD8\xFF\xE0\0\x10JFIF".to_vec(), "image/jpeg", "it ends before its frame header"),
            (
                b"\xFF\xD8\xFF\xDA\0\x02".to_vec(),
                "image/jpeg",
                "it has no frame header before its image data",
            ),
            (b"GIF89a\x01\0\x01\0".to_vec(), "image/gif", "it ends inside its header"),
            (
                b"GIF89a\x01\0\x01\0\0\0\0hello".to_vec(),
                "image/gif",
                "no image or extension block follows its header",
            ),
            (b"RIFF\x24\0\0\0WEBPVP8 ".to_vec(), "image/webp", "it is shorter than its RIFF header says"),
            (webp_short, "image/webp", "it is shorter than its RIFF header says"),
        ];
        for (bytes, mime, problem) in cases {
            fx.write("img.bin", &bytes);
            let err = fx.error("read", json!({"path": "img.bin"})).await;
            assert_eq!(err.kind(), ErrorKind::InvalidArguments);
            assert_eq!(
                err.message(),
                format!(
                    "img.bin starts like an image ({mime}) but is not a valid one: {problem}. It was not sent as an \
                     image; inspect it with `bash` (for example `file` or `xxd | head`)."
                )
            );
        }
    }

    #[tokio::test]
    async fn a_directory_points_to_ls() {
        let fx = Fixture::new();
        std::fs::create_dir_all(fx.root().join("src")).unwrap();
        let err = fx.error("read", json!({"path": "src"})).await;
        assert_eq!(err.message(), "src is a directory, not a file; use `ls` to list its contents.");
    }

    #[tokio::test]
    async fn a_missing_file_suggests_similar_names() {
        let fx = Fixture::new();
        for name in
            ["src/main.rs", "src/mine.rs", "src/lib.rs", "src/other.txt", "src/MIAN.RS", "src/mian.txt"]
        {
            fx.write(name, "x");
        }
        let err = fx.error("read", json!({"path": "src/mian.rs"})).await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(
            err.message(),
            "File not found: src/mian.rs. Did you mean: src/MIAN.RS, src/mian.txt, src/main.rs?"
        );
        let err = fx.error("read", json!({"path": "nope/x.rs"})).await;
        assert_eq!(
            err.message(),
            "File not found: nope/x.rs. The directory nope does not exist either; use `glob` to find the file."
        );
        let err = fx.error("read", json!({"path": "src/zzzzzzzzzz"})).await;
        assert_eq!(err.message(), "File not found: src/zzzzzzzzzz.");
    }

    #[tokio::test]
    async fn odd_names_work_or_fail_clearly() {
        let fx = Fixture::new();
        fx.write("with space/ünï cödé.txt", "hi\n");
        assert_eq!(fx.text("read", json!({"path": "with space/ünï cödé.txt"})).await, "     1\thi\n");
        fx.write("new\nline.txt", "nl\n");
        assert_eq!(fx.text("read", json!({"path": "new\nline.txt"})).await, "     1\tnl\n");
        let err = fx.error("read", json!({"path": "a\u{0}b"})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert_eq!(
            err.message(),
            "The path \"a\\0b\" contains a NUL character, which no file name can contain."
        );
        fx.write("latin1.txt", b"caf\xe9\n");
        assert_eq!(fx.text("read", json!({"path": "latin1.txt"})).await, "     1\tcaf\u{FFFD}\n");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_need_permission() {
        let fx = Fixture::new();
        let outside = fx.dir.path().join("secret.txt");
        std::fs::write(&outside, "secret\n").unwrap();
        let err = fx.error("read", json!({"path": "../secret.txt"})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        let shown = outside.display();
        let message = err.message();
        assert!(message.starts_with("Permission denied"), "{message}");
        let asked = format!("read {shown}, outside the workspace root {}", fx.root().display());
        assert!(message.contains(&asked), "{message}");
        assert!(message.contains("only paths inside the workspace may be used"), "{message}");
        let err = fx.error("read", json!({"path": outside.to_str().unwrap()})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("../secret.txt", fx.root().join("link1")).unwrap();
            std::os::unix::fs::symlink("link1", fx.root().join("link2")).unwrap();
            let err = fx.error("read", json!({"path": "link2"})).await;
            assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        }
        let out =
            fx.call_with(fx.ctx_allow_all("read"), "read", json!({"path": "../secret.txt"})).await.unwrap();
        assert_eq!(out.text_content(), "     1\tsecret\n");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_fifo_is_refused_instead_of_hanging() {
        let fx = Fixture::new();
        let status = std::process::Command::new("mkfifo").arg(fx.root().join("pipe")).status().unwrap();
        assert!(status.success());
        let err = fx.error("read", json!({"path": "pipe"})).await;
        assert_eq!(
            err.message(),
            "pipe is not a regular file (a device, FIFO or socket); `read` only reads files."
        );
    }

    #[test]
    fn sniffing_keeps_every_byte_for_the_reader() {
        struct Trickle(Vec<u8>, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = (self.0.len() - self.1).min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
                self.1 += n;
                Ok(n)
            }
        }
        let data: Vec<u8> = (0..100u8).collect();
        let (head, mut reader) = sniff(Box::new(Trickle(data.clone(), 0)), 10).unwrap();
        assert_eq!(head, data[..10]);
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        assert_eq!(all, data);
    }
}
