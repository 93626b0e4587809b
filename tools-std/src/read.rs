//! The `read` tool: a page of a text file with numbered lines, or an image.

use std::io::{self, BufRead, BufReader, Read};

use base64::Engine as _;
use serde_json::json;
use tool_runtime::{CancellationToken, Content, Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::ops::{FileKind, Operations, Target};
use crate::text::{SNIFF_BYTES, cut_line, image_mime, looks_binary, plural, similar_names};

/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// At most this many bytes of numbered lines are returned per call.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Images larger than this are refused.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes of one line kept in memory: enough for [`MAX_LINE_CHARS`] characters of any width.
const LINE_BYTES_KEPT: usize = MAX_LINE_CHARS * 4 + 4;

/// Read a file from the workspace: a text file as numbered lines, or an image.
///
/// `path` is relative to the workspace root (an absolute path works too; a path outside the
/// workspace needs the user's permission). Text comes back one line per line: the line number,
/// a tab, then the line. A call shows at most `limit` lines (default 2000) starting at line
/// `offset` (default 1), at most 50 KiB in total; lines longer than 2000 characters are cut and
/// marked. When the file goes on, the output ends with
/// `[showing lines a-b of N; use offset=c to continue]`: call `read` again with that offset to
/// see the rest. PNG, JPEG, GIF and WebP images (recognised by their content, up to 5 MiB) come
/// back as images. Binary files are refused (inspect them with `bash`), a directory is listed
/// with `ls`, and to find something in a large file `grep` is faster than paging through it.
#[tool(parallel, read_only, truncate = false, timeout = "1m")]
pub async fn read(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file to read, relative to the workspace root.
    path: String,
    /// The 1-based line number to start at (default 1).
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// How many lines to show at most.
    #[arg(default = 2000)]
    #[schemars(range(min = 1))]
    limit: u64,
) -> Result<ToolOutput, ToolError> {
    let resolved = ws.resolve(ctx, &path, "read").await?;
    let offset = offset.unwrap_or(1).max(1);
    let limit = limit.max(1);
    let cancel = ctx.cancellation_token().clone();
    let workspace = ws.0.clone();
    let display = resolved.display.clone();
    ws.blocking(move |ops| read_blocking(ops, &workspace, &resolved.target, &display, offset, limit, &cancel))
        .await?
}

fn read_blocking(
    ops: &dyn Operations,
    ws: &Workspace,
    path: &Target,
    display: &str,
    offset: u64,
    limit: u64,
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
    let file = ops.open(path).map_err(|e| io_error(display, e))?;
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
    let page = read_lines(&mut reader, offset, limit, cancel).map_err(|e| io_error(display, e))?;
    page.into_output(display, offset)
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
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolOutput::text(format!("Image {display} ({mime}, {})", plural(bytes.len() as u64, "byte")))
        .with_content(Content::image(mime, data))
        .with_title(display.to_owned())
        .with_metadata("mime_type", json!(mime))
        .with_metadata("bytes", json!(bytes.len())))
}

/// The lines shown by one call, and where the file stands.
#[derive(Debug, Default)]
pub(crate) struct Page {
    text: String,
    first: u64,
    last: u64,
    total: u64,
    hit_byte_limit: bool,
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
        if self.last < self.total {
            let why = if self.hit_byte_limit { " (the 50 KiB output limit was reached)" } else { "" };
            text.push_str(&format!(
                "\n[showing lines {}-{} of {}{why}; use offset={} to continue]",
                self.first,
                self.last,
                self.total,
                self.last + 1
            ));
        }
        Ok(ToolOutput::text(text)
            .with_title(display.to_owned())
            .with_metadata("first_line", json!(self.first))
            .with_metadata("last_line", json!(self.last))
            .with_metadata("total_lines", json!(self.total)))
    }
}

/// Reads lines `offset..offset + limit` (1-based) and counts every line, holding at most one
/// cut line in memory however long the lines or the file are.
pub(crate) fn read_lines(
    reader: &mut impl BufRead,
    offset: u64,
    limit: u64,
    cancel: &CancellationToken,
) -> io::Result<Page> {
    let end = offset.saturating_add(limit);
    let mut page = Page { first: offset, ..Page::default() };
    let mut line_no: u64 = 1;
    let mut last_byte: Option<u8> = None;
    let mut current: Vec<u8> = Vec::new();
    let mut more_chars = 0usize;
    loop {
        if cancel.is_cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "the call was cancelled"));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let showing = line_no >= offset && line_no < end && !page.hit_byte_limit;
        let consumed = if showing {
            let (chunk, newline) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            let room = LINE_BYTES_KEPT.saturating_sub(current.len());
            current.extend_from_slice(&chunk[..room.min(chunk.len())]);
            if chunk.len() > room {
                more_chars += chunk[room..].iter().filter(|&&b| b & 0xC0 != 0x80).count();
            }
            let consumed = chunk.len() + usize::from(newline);
            if newline {
                page.push_line(line_no, &current, more_chars);
                current.clear();
                more_chars = 0;
                line_no += 1;
            }
            consumed
        } else {
            let mut consumed = buf.len();
            for i in memchr::memchr_iter(b'\n', buf) {
                line_no += 1;
                if line_no == offset {
                    consumed = i + 1;
                    break;
                }
            }
            consumed
        };
        last_byte = buf[..consumed].last().copied().or(last_byte);
        reader.consume(consumed);
    }
    let unterminated = last_byte.is_some_and(|b| b != b'\n');
    if unterminated && line_no >= offset && line_no < end && !page.hit_byte_limit {
        page.push_line(line_no, &current, more_chars);
    }
    page.total = line_no - 1 + u64::from(unterminated);
    Ok(page)
}

impl Page {
    fn push_line(&mut self, line_no: u64, bytes: &[u8], more_chars: usize) {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let line = format!("{line_no:>6}\t{}\n", cut_line(&text, MAX_LINE_CHARS, more_chars));
        if self.text.len() + line.len() > MAX_OUTPUT_BYTES && !self.text.is_empty() {
            self.hit_byte_limit = true;
            return;
        }
        self.text.push_str(&line);
        self.last = line_no;
    }
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
    async fn default_limit_is_2000_lines() {
        let fx = Fixture::new();
        fx.write("big.txt", "x\n".repeat(2500));
        let out = fx.call("read", json!({"path": "big.txt"})).await.unwrap();
        let text = out.text_content();
        assert!(
            text.ends_with("  2000\tx\n\n[showing lines 1-2000 of 2500; use offset=2001 to continue]"),
            "{text}"
        );
        assert_eq!(out.metadata["total_lines"], json!(2500));
    }

    #[tokio::test]
    async fn output_stops_at_50_kib_with_the_same_notice() {
        let fx = Fixture::new();
        let line = "y".repeat(1000);
        fx.write("wide.txt", format!("{line}\n").repeat(100));
        let text = fx.text("read", json!({"path": "wide.txt"})).await;
        // Each numbered line takes 1008 bytes, so 50 of them fit in 51200.
        assert!(text.len() <= MAX_OUTPUT_BYTES + 200, "{}", text.len());
        assert!(
            text.ends_with(
                "\n[showing lines 1-50 of 100 (the 50 KiB output limit was reached); use offset=51 to continue]"
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
            "     1\t{}… [line truncated: showing 2000 of 30000 characters]\n     2\tshort\n",
            "é".repeat(2000)
        );
        assert_eq!(text, expected);
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

    #[tokio::test]
    async fn images_are_detected_by_content_not_extension() {
        let fx = Fixture::new();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        fx.write("picture.txt", &png);
        let out = fx.call("read", json!({"path": "picture.txt"})).await.unwrap();
        assert_eq!(out.text_content(), "Image picture.txt (image/png, 16 bytes)");
        assert_eq!(
            out.content[1],
            Content::image("image/png", base64::engine::general_purpose::STANDARD.encode(&png))
        );
        for (bytes, mime) in [
            (b"\xFF\xD8\xFF\xE0\0\x10JFIF".to_vec(), "image/jpeg"),
            (b"GIF89a\x01\0\x01\0".to_vec(), "image/gif"),
            (b"RIFF\x24\0\0\0WEBPVP8 ".to_vec(), "image/webp"),
        ] {
            fx.write("img.png", &bytes);
            let out = fx.call("read", json!({"path": "img.png"})).await.unwrap();
            assert!(matches!(&out.content[1], Content::Image { mime_type, .. } if mime_type == mime));
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
