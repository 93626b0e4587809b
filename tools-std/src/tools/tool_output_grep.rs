//! The `tool_output_grep` tool: search the full text of a truncated result.

use std::fmt::Write as _;
use std::io;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use serde_json::json;
use tool_runtime::output_store::OutputStore;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::text::{clip, cut_line, excerpt, plural};
use crate::tools::grep::{MAX_LINE_BYTES, line_too_long};

/// Matching lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 500;

/// Search the full output of an earlier tool call that was truncated.
///
/// `ref` is the reference a truncation notice names (such as `out_20261121T163000_ab12cd34`);
/// `pattern` is a regular expression in ripgrep's syntax. Matching lines come back as
/// `<line number>: <text>`, with `context` lines before and after each as
/// `<line number>- <text>` and `--` between separate groups; lines longer than 500 characters
/// are cut. At most `max_matches` matching lines (default 100) are shown, with a notice giving
/// the total. To read around a line, use `tool_output_read` with an `offset`.
#[tool(parallel, read_only, timeout = "1m")]
pub async fn tool_output_grep(
    store: Dep<OutputStore>,
    ctx: &ToolContext,
    /// The reference from the truncation notice.
    r#ref: String,
    /// The regular expression to search for.
    pattern: String,
    /// Lines of context to show before and after each match.
    #[arg(default = 0)]
    #[schemars(range(max = 50))]
    context: u32,
    /// The maximum number of matching lines to show.
    #[arg(default = 100)]
    #[schemars(range(min = 1))]
    max_matches: u32,
    /// Match without regard to case.
    #[arg(default = false)]
    ignore_case: bool,
) -> Result<ToolOutput, ToolError> {
    let reference = r#ref.trim().to_owned();
    let file = store.open(&reference)?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .multi_line(true)
        .line_terminator(Some(b'\n'))
        .build(&pattern)
        .map_err(|e| {
            ToolError::invalid_arguments(format!("Invalid regular expression: {}", clip(&e.to_string())))
        })?;
    let context = context.min(50) as usize;
    let cancel = ctx.cancellation_token().clone();
    let mut collector = Collector { max: max_matches.max(1) as usize, cancel, ..Collector::default() };
    let (collector, searched) = tokio::task::spawn_blocking(move || {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .heap_limit(Some(MAX_LINE_BYTES))
            .build();
        let searched = searcher.search_file(&matcher, &file, &mut collector);
        (collector, searched)
    })
    .await
    .map_err(|e| ToolError::execution("searching the stored output failed unexpectedly").with_source(e))?;
    // The search stops at a line longer than the heap limit; what came before it stands.
    let stopped = match searched {
        Ok(()) => None,
        Err(e) if line_too_long(&e) => Some(format!(
            "\n[the search stopped at a line longer than 16 MiB; the lines after it were not searched. Read them with tool_output_read(ref=\"{reference}\", offset=N)]"
        )),
        Err(e) => {
            let message = format!("Cannot search the stored output {reference}: {e}");
            return Err(ToolError::from_io(e).with_message(message));
        }
    };
    if collector.cancelled {
        return Err(ToolError::cancelled("The search was cancelled."));
    }
    if collector.total == 0 {
        return Ok(ToolOutput::text(format!(
            "No lines of {reference} match `{}`.{}",
            excerpt(&pattern),
            stopped.unwrap_or_default()
        ))
        .with_metadata("matches", json!(0)));
    }
    let mut text = collector.lines.join("\n");
    text.push('\n');
    if collector.shown < collector.total {
        let _ = write!(
            text,
            "\n[showing the first {} of {}; use a more specific pattern, or tool_output_read(ref=\"{reference}\", offset=N) to read around a line]",
            collector.shown,
            plural(collector.total as u64, "matching line")
        );
    }
    text.push_str(&stopped.unwrap_or_default());
    Ok(ToolOutput::text(text).with_metadata("matches", json!(collector.total)))
}

/// Collects the shown matches with their context, and counts all of them.
#[derive(Default)]
struct Collector {
    max: usize,
    shown: usize,
    total: usize,
    lines: Vec<String>,
    /// Before-context (and a `--` separator) waiting for a match that is shown.
    pending: Vec<String>,
    /// Whether the last match was shown, so its after-context is too.
    showing: bool,
    cancel: tool_runtime::CancellationToken,
    cancelled: bool,
}

fn line(number: Option<u64>, separator: char, bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    format!("{}{separator} {}", number.unwrap_or(0), cut_line(&text, MAX_LINE_CHARS, 0))
}

impl Sink for Collector {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.cancel.is_cancelled() {
            self.cancelled = true;
            return Ok(false);
        }
        self.total += 1;
        self.showing = self.shown < self.max;
        if self.showing {
            self.shown += 1;
            self.lines.append(&mut self.pending);
            self.lines.push(line(found.line_number(), ':', found.bytes()));
        } else {
            self.pending.clear();
        }
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let text = line(context.line_number(), '-', context.bytes());
        match context.kind() {
            SinkContextKind::Before => self.pending.push(text),
            SinkContextKind::After if self.showing => self.lines.push(text),
            _ => {}
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if !self.lines.is_empty() {
            self.pending.push("--".to_owned());
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use super::*;
    use crate::testing::Fixture;

    fn stored(fx: &Fixture, text: &str) -> String {
        fx.deps.get::<OutputStore>().unwrap().save(text).unwrap().reference.to_string()
    }

    #[tokio::test]
    async fn matches_with_context_and_separators() {
        let fx = Fixture::new();
        let text: String =
            (1..=20).map(|n| if n % 7 == 0 { format!("error {n}\n") } else { format!("ok {n}\n") }).collect();
        let reference = stored(&fx, &text);
        assert_eq!(
            fx.text("tool_output_grep", json!({"ref": reference, "pattern": "error"})).await,
            "7: error 7\n14: error 14\n"
        );
        assert_eq!(
            fx.text(
                "tool_output_grep",
                json!({"ref": reference, "pattern": "ERROR", "ignore_case": true, "context": 1})
            )
            .await,
            "6- ok 6\n7: error 7\n8- ok 8\n--\n13- ok 13\n14: error 14\n15- ok 15\n"
        );
    }

    #[tokio::test]
    async fn max_matches_with_notice_and_no_match() {
        let fx = Fixture::new();
        let reference = stored(&fx, "a\nb\na\nc\na\n");
        assert_eq!(
            fx.text(
                "tool_output_grep",
                json!({"ref": reference, "pattern": "a", "max_matches": 2, "context": 1})
            )
            .await,
            format!(
                "1: a\n2- b\n3: a\n4- c\n\n[showing the first 2 of 3 matching lines; use a more specific pattern, or tool_output_read(ref=\"{reference}\", offset=N) to read around a line]"
            )
        );
        assert_eq!(
            fx.text("tool_output_grep", json!({"ref": reference, "pattern": "z"})).await,
            format!("No lines of {reference} match `z`.")
        );
        let err = fx.error("tool_output_grep", json!({"ref": reference, "pattern": "("})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        let err = fx.error("tool_output_grep", json!({"ref": "nope", "pattern": "a"})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    }
}
