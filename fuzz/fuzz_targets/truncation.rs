//! Truncation: arbitrary text and limits, one text or several text items, and the streaming form
//! fed the raw bytes in chunks of an arbitrary size.
//!
//! Checks what the runtime promises: the identity within the limits, never more than the limits
//! kept, head a prefix, tail a suffix, middle a prefix and a suffix around its marker, never a
//! split character (the build has debug assertions, which also check every internal slice), and
//! the notice within its documented overhead; the stream gives exactly what the whole-text cut
//! gives for the bytes decoded as `String::from_utf8_lossy` does.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tool_runtime::truncate::truncate_text;
use tool_runtime::truncate::{NOTICE_OVERHEAD_MAX_BYTES, TruncationStream, truncate_output};
use tool_runtime::{
    Content, ToolOutput,
    spec::{TruncationDirection, TruncationPolicy},
    truncate::TruncationLimits,
};

// An oracle written apart from `tool_runtime::truncate::count_lines` on purpose: the engine's
// counts are checked against it, so it must not share the engine's code.
fn count_lines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The two kept ends of a middle cut: the kept text is a prefix of `text`, or a suffix, or a
/// prefix and a suffix around a marker line naming the bytes cut. The text itself may contain
/// something that looks like a marker, so every candidate is tried.
fn middle_ends<'a>(text: &str, kept: &'a str, kept_bytes: usize) -> Option<(&'a str, &'a str)> {
    if kept.len() == kept_bytes && text.starts_with(kept) {
        return Some((kept, ""));
    }
    if kept.len() == kept_bytes && text.ends_with(kept) {
        return Some(("", kept));
    }
    for (start, _) in kept.match_indices("[... ") {
        let Some(length) = kept[start..].find(" cut ...]\n") else { continue };
        let (before, marker, after) =
            (&kept[..start], &kept[start..start + length], &kept[start + length + 10..]);
        for head in [Some(before), before.strip_suffix('\n')].into_iter().flatten() {
            let gap = text.len().wrapping_sub(head.len() + after.len());
            if head.len() + after.len() == kept_bytes
                && text.starts_with(head)
                && text.ends_with(after)
                && (marker.ends_with(&format!("({gap} bytes)"))
                    || marker.ends_with(&format!(" {gap} bytes"))
                    || marker.ends_with(&format!("({gap} byte)"))
                    || marker.ends_with(&format!(" {gap} byte")))
            {
                return Some((head, after));
            }
        }
    }
    None
}

fn check_text(text: &str, limits: &TruncationLimits) {
    let cut = truncate_text(text, limits);
    let info = &cut.info;
    let kept: &str = &cut.text;
    assert_eq!(info.total_bytes, text.len());
    assert_eq!(info.total_lines, count_lines(text));
    let within = text.len() <= limits.max_bytes && count_lines(text) <= limits.max_lines;
    assert_eq!(info.truncated, !within, "{info:?}");
    if within {
        assert_eq!(kept, text);
        return;
    }
    assert!(info.kept_bytes <= limits.max_bytes, "{info:?}");
    assert!(info.kept_lines <= limits.max_lines, "{info:?}");
    let (head, tail) = match limits.direction {
        TruncationDirection::Head => (kept, ""),
        TruncationDirection::Tail => ("", kept),
        TruncationDirection::Middle => middle_ends(text, kept, info.kept_bytes)
            .unwrap_or_else(|| panic!("no prefix + marker + suffix split of {kept:?}")),
    };
    assert!(text.starts_with(head), "the kept beginning is a prefix");
    assert!(text.ends_with(tail), "the kept end is a suffix");
    assert!(text.is_char_boundary(head.len()));
    assert!(text.is_char_boundary(text.len() - tail.len()));
    assert!(head.len() + tail.len() <= text.len());
    assert_eq!(head.len() + tail.len(), info.kept_bytes);
    assert!(count_lines(head) + count_lines(tail) <= limits.max_lines, "{info:?}");
    let with_notice = cut.clone().into_text_with_notice();
    assert!(with_notice.starts_with(kept));
    assert!(with_notice.len() <= info.kept_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{}", with_notice.len());
}

fn check_stream(raw: &[u8], text: &str, limits: &TruncationLimits, chunk: usize) {
    let mut stream = TruncationStream::new(*limits);
    let mut echoed = String::new();
    for piece in raw.chunks(chunk.max(1)) {
        echoed.push_str(&stream.push_bytes(piece));
    }
    echoed.push_str(&stream.flush());
    assert_eq!(echoed, text, "the stream echoes what it was given");
    assert_eq!(stream.finish(), truncate_text(text, limits), "the stream cuts as the whole text");
}

fn check_output(items: Vec<String>, limits: &TruncationLimits) {
    let mut output = ToolOutput::default();
    for item in &items {
        output.content.push(Content::text(item.clone()));
    }
    output.content.push(Content::image("image/png", "AAAA"));
    let policy = TruncationPolicy::default();
    let info = truncate_output(&mut output, &policy, limits);
    let texts: Vec<&str> = output.content.iter().filter_map(Content::as_text).collect();
    assert_eq!(output.content.iter().filter(|c| c.as_text().is_none()).count(), 1);
    match info {
        None => assert_eq!(texts, items.iter().map(String::as_str).collect::<Vec<_>>()),
        Some(info) => {
            assert!(info.kept_bytes <= limits.max_bytes && info.kept_lines <= limits.max_lines, "{info:?}");
            let shown: usize = texts.iter().map(|t| t.len()).sum();
            assert!(
                shown <= limits.max_bytes.saturating_add(NOTICE_OVERHEAD_MAX_BYTES),
                "{shown}: {texts:?}"
            );
            assert!(truncate_output(&mut output, &policy, limits).is_none(), "truncated twice");
        }
    }
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let direction =
        *u.choose(&[TruncationDirection::Head, TruncationDirection::Tail, TruncationDirection::Middle])?;
    let max_lines = if u.ratio(1, 8)? { u.arbitrary::<usize>()? } else { u.int_in_range(0..=64)? };
    let max_bytes = if u.ratio(1, 8)? { u.arbitrary::<usize>()? } else { u.int_in_range(0..=2048)? };
    let limits = TruncationLimits::new(max_lines, max_bytes, direction);
    let several = u.ratio(1, 4)?;
    let chunk = if u.ratio(1, 2)? { u.int_in_range(1..=8)? } else { u.int_in_range(1..=4096)? };
    let raw = u.take_rest();
    let text = String::from_utf8_lossy(raw).into_owned();
    if several {
        let items: Vec<String> = text.split('\u{1}').map(str::to_owned).collect();
        check_output(items, &limits);
    } else {
        check_text(&text, &limits);
        check_stream(raw, &text, &limits, chunk);
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
