use std::borrow::Cow;

use serde_json::json;

use super::cut::{Source, cut};
use super::*;
use crate::output::{Content, ToolOutput};
use crate::output_store::{OutputRef, OutputStore};
use crate::spec::{TruncationDirection, TruncationPolicy};
use crate::testing::TempDir;

const REF: &str = "out_20261121T163000_ab12cd34";
const NOT_SAVED: &str = "The full output was not saved, so the rest is not available; narrow the request (for \
                         example a smaller range or a more specific pattern) to see it.";

fn limits(max_lines: usize, max_bytes: usize, direction: TruncationDirection) -> TruncationLimits {
    TruncationLimits::new(max_lines, max_bytes, direction)
}

use TruncationDirection::{Head, Middle, Tail};

/// 10 lines, 71 bytes.
const TEN_LINES: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n";

fn ten_lines() -> String {
    TEN_LINES.to_owned()
}

/// The hint of an application whose model reads stored outputs with a `read_output` tool.
const HINT: &str = "Full output saved as {ref}; {read} with read_output(ref=\"{ref}\", offset={offset}).";

fn hint() -> ReadHint {
    ReadHint::new(HINT).expect("a valid hint")
}

fn saved(reference: &str, read: &str, offset: usize) -> String {
    format!(
        "Full output saved as {reference}; {read} with read_output(ref=\"{reference}\", offset={offset})."
    )
}

fn store_in(tmp: &TempDir) -> OutputStore {
    OutputStore::builder().dir(tmp.path()).read_hint(hint()).open().expect("store")
}

/// What the dispatcher does: cut, save the full text in `store` (when given), add the notice.
fn truncate_saving(
    output: &mut ToolOutput,
    policy: &TruncationPolicy,
    defaults: &TruncationLimits,
    store: Option<&OutputStore>,
) -> Option<TruncationInfo> {
    let cut = cut_output(output, policy, defaults)?;
    Some(match store {
        Some(store) => store.save_cut(cut, output),
        None => cut.apply(output, ReadHint::neutral()),
    })
}

/// The outputs stored in `dir` (not the store's stamp of its last cleanup).
fn files_in(dir: &std::path::Path) -> usize {
    let is_output = |entry: &std::fs::DirEntry| entry.file_name().to_str().is_some_and(OutputRef::is_valid);
    std::fs::read_dir(dir).map(|entries| entries.flatten().filter(is_output).count()).unwrap_or(0)
}

#[test]
fn the_notice_reads_as_specified() {
    // 2000 lines of exactly 51200 bytes, then 46213 more lines: 48213 lines, 2371642 bytes.
    let mut text = String::new();
    text.push_str(&format!("{}\n", "a".repeat(25)).repeat(1600));
    text.push_str(&format!("{}\n", "b".repeat(23)).repeat(400));
    text.push_str(&format!("{}\n", "c".repeat(49)).repeat(46212));
    text.push_str(&format!("{}\n", "d".repeat(9841)));
    let limits = TruncationLimits::new(2000, 51200, TruncationDirection::Head);
    let mut truncated = truncate_text(&text, &limits);
    assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Lines));
    truncated.info.output_ref = Some(REF.into());
    assert_eq!(
        truncated.info.notice_with(&hint()).expect("truncated"),
        "[Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output \
         saved as out_20261121T163000_ab12cd34; read more with \
         read_output(ref=\"out_20261121T163000_ab12cd34\", offset=2001).]"
    );
    // The default hint names no tool.
    assert_eq!(
        truncated.info.notice().expect("truncated"),
        "[Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output \
         saved as out_20261121T163000_ab12cd34.]"
    );
    assert_eq!(truncated.text.len(), 51200);
    assert!(matches!(truncated.text, Cow::Borrowed(_)));
}

#[test]
fn within_limits_is_untouched_and_writes_nothing() {
    let tmp = TempDir::new("identity");
    let store = store_in(&tmp);
    let text = ten_lines();
    let truncated = truncate_text(&text, &limits(10, 71, Head));
    assert!(matches!(truncated.text, Cow::Borrowed(t) if std::ptr::eq(t, text.as_str())));
    assert_eq!(
        truncated.info,
        TruncationInfo {
            truncated: false,
            truncated_by: None,
            direction: Head,
            max_lines: 10,
            max_bytes: 71,
            total_lines: 10,
            total_bytes: 71,
            kept_lines: 10,
            kept_bytes: 71,
            kept_ranges: vec![KeptRange { first_line: 1, last_line: 10, bytes: 71, partial: None }],
            omitted_items: 0,
            output_ref: None,
            stored_bytes: None,
            store_limit: None,
            save_error: None,
        }
    );
    assert_eq!(truncated.info.notice(), None);
    assert_eq!(truncated.clone().into_text_with_notice(), text);

    for direction in [Head, Tail, Middle] {
        let original = ToolOutput::text(text.clone())
            .with_content(Content::image("image/png", "AAAA".repeat(100_000)))
            .with_content(Content::text("x"));
        let mut output = original.clone();
        let policy = TruncationPolicy { direction: Some(direction), ..TruncationPolicy::default() };
        // 71 + 1 separator + 1 bytes, 11 lines.
        assert_eq!(truncate_saving(&mut output, &policy, &limits(11, 73, Head), Some(&store)), None);
        assert_eq!(output, original);
    }
    assert_eq!(files_in(tmp.path()), 0);
}

#[test]
fn one_over_either_limit_truncates() {
    let text = ten_lines();
    assert!(!truncate_text(&text, &limits(10, 71, Head)).is_truncated());
    let by_bytes = truncate_text(&text, &limits(10, 70, Head));
    assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
    assert_eq!(by_bytes.text, (1..=9).map(|i| format!("line {i}\n")).collect::<String>());
    let by_lines = truncate_text(&text, &limits(9, 71, Head));
    assert_eq!(by_lines.info.truncated_by, Some(TruncatedBy::Lines));
    assert_eq!(by_lines.text, by_bytes.text);
}

#[test]
fn head_by_lines() {
    let text = ten_lines();
    let truncated = truncate_text(&text, &limits(3, 1000, Head));
    assert_eq!(truncated.text, "line 1\nline 2\nline 3\n");
    assert_eq!(
        truncated.info,
        TruncationInfo {
            truncated: true,
            truncated_by: Some(TruncatedBy::Lines),
            direction: Head,
            max_lines: 3,
            max_bytes: 1000,
            total_lines: 10,
            total_bytes: 71,
            kept_lines: 3,
            kept_bytes: 21,
            kept_ranges: vec![KeptRange { first_line: 1, last_line: 3, bytes: 21, partial: None }],
            omitted_items: 0,
            output_ref: None,
            stored_bytes: None,
            store_limit: None,
            save_error: None,
        }
    );
    assert_eq!(
        truncated.into_text_with_notice(),
        format!(
            "line 1\nline 2\nline 3\n\n[Output truncated: showing the first 3 of 10 lines (21 of 71 bytes). \
             {NOT_SAVED}]"
        )
    );
}

#[test]
fn head_by_bytes_keeps_whole_lines() {
    let truncated = truncate_text(TEN_LINES, &limits(100, 20, Head));
    assert_eq!(truncated.text, "line 1\nline 2\n");
    assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Bytes));
    assert_eq!((truncated.info.kept_lines, truncated.info.kept_bytes), (2, 14));
    assert_eq!(
        truncated.info.notice_with(&hint()).expect("notice"),
        format!("[Output truncated: showing the first 2 of 10 lines (14 of 71 bytes). {NOT_SAVED}]")
    );
}

#[test]
fn tail_keeps_the_last_lines() {
    let text = ten_lines();
    let mut truncated = truncate_text(&text, &limits(3, 1000, Tail));
    assert_eq!(truncated.text, "line 8\nline 9\nline 10\n");
    assert_eq!(
        truncated.info.kept_ranges,
        vec![KeptRange { first_line: 8, last_line: 10, bytes: 22, partial: None }]
    );
    assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Lines));
    truncated.info.output_ref = Some(REF.into());
    assert_eq!(
        truncated.info.notice_with(&hint()).expect("notice"),
        format!(
            "[Output truncated: showing the last 3 of 10 lines (22 of 71 bytes). {}]",
            saved(REF, "read the earlier lines", 1)
        )
    );

    let by_bytes = truncate_text(&text, &limits(100, 20, Tail));
    assert_eq!(by_bytes.text, "line 9\nline 10\n");
    assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
}

#[test]
fn middle_keeps_both_ends_and_marks_the_cut() {
    let mut truncated = truncate_text(TEN_LINES, &limits(4, 1000, Middle));
    assert_eq!(truncated.text, "line 1\nline 2\n[... 6 lines (42 bytes) cut ...]\nline 9\nline 10\n");
    assert_eq!(
        truncated.info.kept_ranges,
        vec![
            KeptRange { first_line: 1, last_line: 2, bytes: 14, partial: None },
            KeptRange { first_line: 9, last_line: 10, bytes: 15, partial: None },
        ]
    );
    assert_eq!((truncated.info.kept_lines, truncated.info.kept_bytes), (4, 29));
    truncated.info.output_ref = Some(REF.into());
    assert_eq!(
        truncated.info.notice_with(&hint()).expect("notice"),
        format!(
            "[Output truncated: showing lines 1-2 and lines 9-10 of 10 (29 of 71 bytes). {}]",
            saved(REF, "read more", 3)
        )
    );

    // An odd line budget gives the extra line to the head; a single kept line is named alone.
    let odd = truncate_text(TEN_LINES, &limits(3, 1000, Middle));
    assert_eq!(odd.text, "line 1\nline 2\n[... 7 lines (49 bytes) cut ...]\nline 10\n");
    assert_eq!(
        odd.info.notice_with(&hint()).expect("notice"),
        format!("[Output truncated: showing lines 1-2 and line 10 of 10 (22 of 71 bytes). {NOT_SAVED}]")
    );

    // Byte budgets are halved too: 10 bytes a side.
    let by_bytes = truncate_text(TEN_LINES, &limits(100, 20, Middle));
    assert_eq!(by_bytes.text, "line 1\n[... 8 lines (56 bytes) cut ...]\nline 10\n");
    assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
}

#[test]
fn a_single_line_over_the_budget_is_cut_deliberately() {
    let text = format!("{}\nshort\n", "x".repeat(100));
    let head = truncate_text(&text, &limits(10, 40, Head));
    assert_eq!(head.text, "x".repeat(40));
    assert_eq!(
        head.info.kept_ranges,
        vec![KeptRange { first_line: 1, last_line: 1, bytes: 40, partial: Some(LinePart::Beginning) }]
    );
    assert_eq!(head.info.truncated_by, Some(TruncatedBy::Bytes));
    let mut info = head.info.clone();
    info.output_ref = Some(REF.into());
    assert_eq!(
        info.notice_with(&hint()).expect("notice"),
        format!(
            "[Output truncated: showing the beginning of line 1 of 2 (40 of 107 bytes). {}]",
            saved(REF, "read more", 1)
        )
    );
    assert_eq!(
        head.into_text_with_notice(),
        format!(
            "{}\n\n[Output truncated: showing the beginning of line 1 of 2 (40 of 107 bytes). {NOT_SAVED}]",
            "x".repeat(40)
        )
    );

    let text = format!("short\n{}\n", "y".repeat(100));
    let tail = truncate_text(&text, &limits(10, 40, Tail));
    assert_eq!(tail.text, format!("{}\n", "y".repeat(39)));
    assert_eq!(
        tail.info.kept_ranges,
        vec![KeptRange { first_line: 2, last_line: 2, bytes: 40, partial: Some(LinePart::End) }]
    );
    assert_eq!(
        tail.info.notice_with(&hint()).expect("notice"),
        format!("[Output truncated: showing the end of line 2 of 2 (40 of 107 bytes). {NOT_SAVED}]")
    );
}

#[test]
fn multibyte_characters_are_never_split() {
    let text = "\u{e9}".repeat(50); // 100 bytes, one line, no newline
    let head = truncate_text(&text, &limits(10, 41, Head));
    assert_eq!(head.text, "\u{e9}".repeat(20));
    let tail = truncate_text(&text, &limits(10, 41, Tail));
    assert_eq!(tail.text, "\u{e9}".repeat(20));
    let middle = truncate_text(&text, &limits(10, 41, Middle));
    assert_eq!(middle.text, format!("{0}\n[... 60 bytes cut ...]\n{0}", "\u{e9}".repeat(10)));
    assert_eq!(middle.info.kept_lines, 1);
    assert_eq!(
        middle.info.notice_with(&hint()).expect("notice"),
        format!(
            "[Output truncated: showing the beginning and the end of line 1 of 1 (40 of 100 bytes). {NOT_SAVED}]"
        )
    );

    let emoji = "\u{1F600}".repeat(10); // 4 bytes each
    for max_bytes in 0..=40 {
        for direction in [Head, Tail, Middle] {
            let truncated = truncate_text(&emoji, &limits(5, max_bytes, direction));
            assert!(truncated.info.kept_bytes <= max_bytes);
            assert_eq!(truncated.info.kept_bytes % 4, 0, "{direction:?} {max_bytes}");
            assert!(!truncated.text.contains('\u{FFFD}'));
        }
    }
    // Not even one character fits.
    let none = truncate_text(&emoji, &limits(5, 3, Head));
    assert_eq!(none.text, "");
    assert_eq!(none.info.kept_ranges, vec![]);
    assert_eq!(
        none.info.notice_with(&hint()).expect("notice"),
        format!("[Output truncated: showing the first 0 of 1 line (0 of 40 bytes). {NOT_SAVED}]")
    );
}

#[test]
fn crlf_lines_stay_whole() {
    let text = "a\r\nb\r\nc\r\n";
    assert_eq!(truncate_text(text, &limits(2, 100, Head)).text, "a\r\nb\r\n");
    assert_eq!(truncate_text(text, &limits(2, 100, Tail)).text, "b\r\nc\r\n");
    assert_eq!(truncate_text(text, &limits(100, 7, Head)).text, "a\r\nb\r\n");
    assert_eq!(truncate_text(text, &limits(100, 7, Tail)).text, "b\r\nc\r\n");
    assert_eq!(truncate_text(text, &limits(3, 9, Head)).info.total_lines, 3);
    // A cut inside an over-long line never leaves a lone `\r` before its `\n`.
    assert_eq!(truncate_text("abcdefgh\r\nx", &limits(5, 9, Head)).text, "abcdefgh");
}

#[test]
fn text_without_a_trailing_newline() {
    let text = "a\nb\nc";
    assert!(!truncate_text(text, &limits(3, 5, Head)).is_truncated());
    let head = truncate_text(text, &limits(2, 100, Head));
    assert_eq!((head.text.as_ref(), head.info.total_lines, head.info.total_bytes), ("a\nb\n", 3, 5));
    assert_eq!(
        head.into_text_with_notice(),
        format!("a\nb\n\n[Output truncated: showing the first 2 of 3 lines (4 of 5 bytes). {NOT_SAVED}]")
    );
    let tail = truncate_text(text, &limits(2, 100, Tail));
    assert_eq!(
        tail.into_text_with_notice(),
        format!("b\nc\n\n[Output truncated: showing the last 2 of 3 lines (3 of 5 bytes). {NOT_SAVED}]")
    );
}

#[test]
fn empty_text_and_zero_limits() {
    let empty = truncate_text("", &limits(0, 0, Head));
    assert_eq!(empty.text, "");
    assert!(!empty.is_truncated());
    assert_eq!((empty.info.total_lines, empty.info.kept_ranges.len()), (0, 0));

    let mut output = ToolOutput::text("a\nb\nc");
    let policy = TruncationPolicy { max_lines: Some(0), ..TruncationPolicy::default() };
    let info = truncate_saving(&mut output, &policy, &TruncationLimits::default(), None).expect("truncated");
    assert_eq!(info.truncated_by, Some(TruncatedBy::Lines));
    assert_eq!(
        output.content,
        vec![Content::text(format!(
            "[Output truncated: showing the first 0 of 3 lines (0 of 5 bytes). {NOT_SAVED}]"
        ))]
    );
    for direction in [Tail, Middle] {
        let truncated = truncate_text("a\nb\nc", &limits(0, 100, direction));
        assert_eq!(truncated.text, "");
    }
    assert_eq!(
        truncate_text("a\nb\nc", &limits(0, 100, Middle)).info.notice_with(&hint()).expect("notice"),
        format!("[Output truncated: showing none of the 3 lines (0 of 5 bytes). {NOT_SAVED}]")
    );
}

#[test]
fn output_is_saved_noticed_and_recorded() {
    let tmp = TempDir::new("output");
    let store = store_in(&tmp);
    let text = ten_lines();
    let mut output = ToolOutput::text(text.clone());
    let policy = TruncationPolicy { max_lines: Some(3), ..TruncationPolicy::default() };
    let info =
        truncate_saving(&mut output, &policy, &TruncationLimits::default(), Some(&store)).expect("cut");
    let reference = info.output_ref.clone().expect("saved");
    assert_eq!(store.read_to_string(&reference).expect("stored"), text);
    assert_eq!(files_in(tmp.path()), 1);
    assert!(output.truncated);
    assert_eq!(
        output.text_content(),
        format!(
            "line 1\nline 2\nline 3\n\n[Output truncated: showing the first 3 of 10 lines (21 of 71 bytes). {}]",
            saved(&reference, "read more", 4)
        )
    );
    assert_eq!(
        output.metadata[METADATA_KEY],
        json!({
            "truncated": true,
            "truncated_by": "lines",
            "direction": "head",
            "max_lines": 3,
            "max_bytes": 47232,
            "total_lines": 10,
            "total_bytes": 71,
            "kept_lines": 3,
            "kept_bytes": 21,
            "kept_ranges": [{"first_line": 1, "last_line": 3, "bytes": 21, "partial": null}],
            "omitted_items": 0,
            "output_ref": reference,
        })
    );
    // Reading on from the notice's offset gives exactly the first line not shown.
    let next = store.read_lines(&reference, info.read_offset(), 1).expect("read");
    assert_eq!(next.text, "line 4\n");
}

#[test]
fn never_truncated_twice() {
    let tmp = TempDir::new("twice");
    let store = store_in(&tmp);
    let small = limits(2, 1000, Head);
    let mut output = ToolOutput::text(ten_lines());
    assert!(truncate_saving(&mut output, &TruncationPolicy::default(), &small, Some(&store)).is_some());
    let once = output.clone();
    let tighter = limits(1, 5, Tail);
    assert_eq!(truncate_saving(&mut output, &TruncationPolicy::default(), &tighter, Some(&store)), None);
    assert_eq!(output, once);
    assert_eq!(output.text_content().matches("[Output truncated:").count(), 1);
    assert_eq!(files_in(tmp.path()), 1);

    // A tool that truncated its own output is left alone too.
    let mut own = ToolOutput::text(ten_lines());
    let truncated = truncate_text(TEN_LINES, &small);
    let info = truncated.info.clone();
    own.content = vec![Content::text(truncated.into_text_with_notice())];
    mark_truncated(&mut own, &info);
    let before = own.clone();
    assert_eq!(truncate_saving(&mut own, &TruncationPolicy::default(), &tighter, Some(&store)), None);
    assert_eq!(own, before);
    assert_eq!(own.metadata[METADATA_KEY]["kept_lines"], json!(2));

    // And so is a tool that opted out.
    let mut opted_out = ToolOutput::text(ten_lines());
    assert_eq!(truncate_saving(&mut opted_out, &TruncationPolicy::DISABLED, &tighter, Some(&store)), None);
    assert_eq!(opted_out, ToolOutput::text(ten_lines()));
    assert_eq!(files_in(tmp.path()), 1);
}

fn items() -> ToolOutput {
    ToolOutput {
        content: vec![
            Content::text("a\nb\n"),
            Content::image("image/png", "AAAA"),
            Content::text("c\nd"),
            Content::text(""),
            Content::text("e\nf\ng"),
            Content::image("image/jpeg", "BBBB"),
        ],
        ..ToolOutput::default()
    }
}

#[test]
fn text_items_share_the_budget_and_images_stay() {
    let tmp = TempDir::new("items");
    let store = store_in(&tmp);
    let policy = TruncationPolicy::default();

    let mut head = items();
    let info = truncate_saving(&mut head, &policy, &limits(3, 1000, Head), None).expect("cut");
    assert_eq!((info.total_lines, info.total_bytes, info.omitted_items), (7, 13, 1));
    assert_eq!(
        head.content,
        vec![
            Content::text("a\nb\n"),
            Content::image("image/png", "AAAA"),
            Content::text(format!(
                "c\n\n[Output truncated: showing the first 3 of 7 lines (6 of 13 bytes). 1 text item was left \
                 out entirely. {NOT_SAVED}]"
            )),
            Content::text(""),
            Content::image("image/jpeg", "BBBB"),
        ]
    );

    let mut tail = items();
    let info = truncate_saving(&mut tail, &policy, &limits(3, 1000, Tail), Some(&store)).expect("cut");
    let reference = info.output_ref.clone().expect("saved");
    // The stored document joins the items so that line numbers match the notice.
    assert_eq!(store.read_to_string(&reference).expect("stored"), "a\nb\nc\nd\ne\nf\ng");
    assert_eq!(
        tail.content,
        vec![
            Content::image("image/png", "AAAA"),
            Content::text(""),
            Content::text(format!(
                "e\nf\ng\n\n[Output truncated: showing the last 3 of 7 lines (5 of 13 bytes). 2 text items were \
                 left out entirely. {}]",
                saved(&reference, "read the earlier lines", 1)
            )),
            Content::image("image/jpeg", "BBBB"),
        ]
    );

    let mut middle = items();
    truncate_saving(&mut middle, &policy, &limits(4, 1000, Middle), None).expect("cut");
    assert_eq!(
        middle.content,
        vec![
            Content::text("a\nb\n[... 3 lines (6 bytes) cut ...]"),
            Content::image("image/png", "AAAA"),
            Content::text(""),
            Content::text(format!(
                "f\ng\n\n[Output truncated: showing lines 1-2 and lines 6-7 of 7 (7 of 13 bytes). 1 text item \
                 was left out entirely. {NOT_SAVED}]"
            )),
            Content::image("image/jpeg", "BBBB"),
        ]
    );
}

#[test]
fn images_alone_are_never_truncated() {
    let mut output = ToolOutput::default()
        .with_content(Content::image("image/png", "A".repeat(200_000)))
        .with_content(Content::image("image/png", "B".repeat(200_000)));
    let before = output.clone();
    assert_eq!(truncate_saving(&mut output, &TruncationPolicy::default(), &limits(1, 10, Head), None), None);
    assert_eq!(output, before);
}

#[test]
fn a_failed_save_is_reported_not_hidden() {
    let tmp = TempDir::new("savefail");
    let dir = tmp.path().join("store");
    let store = OutputStore::builder().dir(&dir).read_hint(hint()).open().expect("store");
    // The store's directory replaced by a regular file: nothing can be saved.
    std::fs::remove_dir_all(&dir).expect("remove store dir");
    std::fs::write(&dir, "not a directory").expect("write");
    let mut output = ToolOutput::text(ten_lines());
    let info =
        truncate_saving(&mut output, &TruncationPolicy::default(), &limits(3, 1000, Head), Some(&store))
            .expect("cut");
    assert_eq!(info.output_ref, None);
    assert!(info.save_error.is_some());
    assert!(output.metadata[METADATA_KEY]["save_error"].is_string());
    assert!(output.text_content().ends_with(&format!("(21 of 71 bytes). {NOT_SAVED}]")));
}

#[test]
fn the_notice_overhead_is_bounded() {
    let big = usize::MAX;
    let reference = "r".repeat(REFERENCE_MAX_BYTES);
    // A hint as long as allowed once filled in with the longest values.
    let filler = "x".repeat(ReadHint::MAX_BYTES - REFERENCE_MAX_BYTES - 20 - "read the earlier lines".len());
    let longest = ReadHint::new(&format!("{filler}{{ref}}{{offset}}{{read}}")).expect("as long as allowed");
    assert!(ReadHint::new(&format!("x{filler}{{ref}}{{offset}}{{read}}")).is_err(), "one byte too long");
    let range = KeptRange { first_line: big, last_line: big, bytes: big, partial: None };
    let mut worst = 0;
    for direction in [Head, Tail, Middle] {
        for partial in [None, Some(LinePart::Beginning)] {
            let info = TruncationInfo {
                truncated: true,
                truncated_by: Some(TruncatedBy::Bytes),
                direction,
                max_lines: big,
                max_bytes: big,
                total_lines: big,
                total_bytes: big,
                kept_lines: big,
                kept_bytes: big,
                kept_ranges: vec![
                    KeptRange { partial, ..range },
                    KeptRange { first_line: big - 1, partial: partial.map(|_| LinePart::End), ..range },
                ],
                omitted_items: big,
                output_ref: Some(reference.clone()),
                stored_bytes: Some(big),
                store_limit: Some(big),
                save_error: None,
            };
            for hint in [&longest, &hint(), ReadHint::neutral()] {
                worst = worst.max(info.notice_with(hint).expect("notice").len());
            }
        }
    }
    let marker = format!("[... {big} lines ({big} bytes) cut ...]");
    // Separator before the notice, the marker and its line ends.
    assert!(2 + worst + 2 + marker.len() <= NOTICE_OVERHEAD_MAX_BYTES, "{worst} + {}", marker.len());
}

#[test]
fn read_hints_are_checked_when_made() {
    let hint = ReadHint::new("see {{stored}} {ref} at {offset}: {read}}}").expect("valid");
    let mut info = truncate_text(TEN_LINES, &limits(3, 1000, Tail)).info;
    info.output_ref = Some(REF.into());
    assert!(
        info.notice_with(&hint)
            .expect("notice")
            .ends_with(&format!("(22 of 71 bytes). see {{stored}} {REF} at 1: read the earlier lines}}]"))
    );
    assert_eq!(hint.template(), "see {{stored}} {ref} at {offset}: {read}}}");
    for (bad, says) in [
        ("saved as {reference}", "unknown placeholder `{reference}`"),
        ("saved as {ref", "a `{` without its `}`"),
        ("saved as ref}", "a `}` without its `{`"),
    ] {
        let error = ReadHint::new(bad).expect_err(bad).to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
    assert_eq!(ReadHint::default(), *ReadHint::neutral());
    assert_eq!(ReadHint::new("Full output saved as {ref}.").expect("valid"), ReadHint::default());
}

// ---- property-style checks against a straightforward reference ----

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_text(rng: &mut Rng) -> String {
    const PIECES: [&str; 10] =
        ["a", "bc", "\n", "\n", "\r\n", "\u{e9}", "\u{20ac}", "\u{1F600}", "line\n", "  "];
    let len = rng.below(60);
    (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect()
}

fn reference_head(text: &str, max_lines: usize, max_bytes: usize) -> usize {
    let (mut end, mut lines) = (0, 0);
    for line in text.split_inclusive('\n') {
        if lines == max_lines || end + line.len() > max_bytes {
            break;
        }
        end += line.len();
        lines += 1;
    }
    if lines == 0 && max_lines > 0 && !text.is_empty() {
        end = max_bytes.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if text[..end].ends_with('\r') && text[end..].starts_with('\n') {
            end -= 1;
        }
    }
    end
}

fn reference_tail(text: &str, from: usize, max_lines: usize, max_bytes: usize) -> usize {
    let rest = &text[from..];
    let (mut start, mut lines) = (rest.len(), 0);
    for line in rest.split_inclusive('\n').rev() {
        if lines == max_lines || rest.len() - start + line.len() > max_bytes {
            break;
        }
        start -= line.len();
        lines += 1;
    }
    if lines == 0 && max_lines > 0 && !rest.is_empty() {
        start = rest.len() - max_bytes.min(rest.len());
        while !rest.is_char_boundary(start) {
            start += 1;
        }
    }
    from + start
}

#[test]
fn random_texts_match_the_reference_and_keep_every_rule() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..20_000 {
        let text = random_text(&mut rng);
        let direction = [Head, Tail, Middle][rng.below(3)];
        let limits = limits(rng.below(12), rng.below(90), direction);
        let truncated = truncate_text(&text, &limits);
        let info = &truncated.info;
        let context = format!("case {case}: {text:?} {limits:?}");

        assert_eq!(info.total_lines, text.lines().count(), "{context}");
        assert_eq!(info.total_bytes, text.len(), "{context}");
        let within = text.len() <= limits.max_bytes && info.total_lines <= limits.max_lines;
        assert_eq!(info.truncated, !within, "{context}");
        if within {
            assert_eq!(truncated.text, text, "{context}");
            continue;
        }
        assert!(info.kept_bytes <= limits.max_bytes, "{context}");
        assert!(info.kept_lines <= limits.max_lines, "{context}");
        assert!(info.kept_lines <= info.total_lines, "{context}");
        assert!(!truncated.text.contains('\u{FFFD}'), "{context}");

        let cut = cut(&Source::whole(&text), &limits);
        let (head_end, tail_start) = match direction {
            Head => (reference_head(&text, limits.max_lines, limits.max_bytes), text.len()),
            Tail => (0, reference_tail(&text, 0, limits.max_lines, limits.max_bytes)),
            Middle => {
                let (lines, bytes) = (limits.max_lines, limits.max_bytes);
                let head_end = reference_head(&text, lines - lines / 2, bytes - bytes / 2);
                (head_end, reference_tail(&text, head_end, lines / 2, bytes / 2))
            }
        };
        assert_eq!((cut.head.range.end, cut.tail.range.start), (head_end, tail_start), "{context}");
        assert!(head_end < tail_start, "nothing was cut: {context}");
        assert_eq!(info.kept_bytes, head_end + text.len() - tail_start, "{context}");
        let (head, tail) = (&text[..head_end], &text[tail_start..]);
        assert!(truncated.text.starts_with(head) && truncated.text.ends_with(tail), "{context}");
        assert_eq!(info.kept_ranges.iter().map(|r| r.bytes).sum::<usize>(), info.kept_bytes, "{context}");

        // The framework path gives the same text, plus exactly one notice within the overhead bound.
        let mut output = ToolOutput::text(text.clone());
        let policy = TruncationPolicy::default();
        let via_output = truncate_saving(&mut output, &policy, &limits, None).expect("truncated");
        assert_eq!(&via_output, info, "{context}");
        assert_eq!(output.text_content(), truncated.clone().into_text_with_notice(), "{context}");
        assert_eq!(output.text_content().matches("[Output truncated:").count(), 1, "{context}");
        assert!(output.text_content().len() <= limits.max_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{context}");
    }
}

#[test]
fn random_item_splits_keep_images_and_account_for_every_item() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for case in 0..5_000 {
        let mut content = Vec::new();
        for i in 0..1 + rng.below(5) {
            if rng.below(4) == 0 {
                content.push(Content::image("image/png", format!("IMG{i}")));
            } else {
                content.push(Content::text(random_text(&mut rng)));
            }
        }
        let direction = [Head, Tail, Middle][rng.below(3)];
        let limits = limits(1 + rng.below(12), rng.below(90), direction);
        let original = ToolOutput { content, ..ToolOutput::default() };
        let mut output = original.clone();
        let context = format!("case {case}: {original:?} {limits:?}");
        let Some(info) = truncate_saving(&mut output, &TruncationPolicy::default(), &limits, None) else {
            assert_eq!(output, original, "{context}");
            continue;
        };
        let images = |o: &ToolOutput| -> Vec<Content> {
            o.content.iter().filter(|c| c.as_text().is_none()).cloned().collect()
        };
        assert_eq!(images(&output), images(&original), "{context}");
        let text = output.text_content();
        assert_eq!(text.matches("[Output truncated:").count(), 1, "{context}");
        assert!(text.len() <= limits.max_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{context}");
        assert!(info.kept_bytes <= limits.max_bytes && info.kept_lines <= limits.max_lines, "{context}");
        let texts_before =
            original.content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty()).count();
        let texts_after =
            output.content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty()).count();
        if texts_before > 1 {
            // Every non-empty item is kept (in part) or counted as left out; the notice may add one.
            assert!(
                texts_after == texts_before - info.omitted_items
                    || texts_after == texts_before - info.omitted_items + 1,
                "{context}: {texts_after} after, {} omitted",
                info.omitted_items
            );
        }
        // What is kept of an item comes from that item, in head and tail directions.
        if direction != Middle {
            let originals: Vec<&str> = original.content.iter().filter_map(Content::as_text).collect();
            for kept in output.content.iter().filter_map(Content::as_text) {
                let body = kept.split("[Output truncated:").next().unwrap_or_default().trim_end_matches('\n');
                assert!(originals.iter().any(|o| o.contains(body)), "{context}: {kept:?}");
            }
        }
    }
}

// ---- the streaming form against the whole-text form ----

/// Random bytes that are mostly UTF-8 text: the pieces of [`random_text`], long runs, and now
/// and then an invalid byte or a character missing its end.
fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    const PIECES: [&[u8]; 8] =
        [b"\xff", b"\xe2\x82", b"\xf0\x9f\x98", b"\r", b"\r\n", b"\n", b"\xc3", b"\xa9"];
    let mut bytes = Vec::new();
    for _ in 0..1 + rng.below(6) {
        match rng.below(10) {
            0 => bytes.extend_from_slice(PIECES[rng.below(PIECES.len())]),
            1 => bytes.extend(std::iter::repeat_n(b'x', rng.below(200))),
            _ => bytes.extend_from_slice(random_text(rng).as_bytes()),
        }
    }
    bytes
}

/// Feeds `bytes` to a stream in chunks of 1 to `max_chunk` bytes, so chunks end inside
/// characters and between `\r` and `\n`; checks that it echoes the text it was given.
fn stream_in_chunks(
    rng: &mut Rng,
    bytes: &[u8],
    limits: TruncationLimits,
    max_chunk: usize,
) -> Truncated<'static> {
    let mut stream = TruncationStream::new(limits);
    let mut echoed = String::new();
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + 1 + rng.below(max_chunk)).min(bytes.len());
        echoed.push_str(&stream.push_bytes(&bytes[at..end]));
        at = end;
    }
    echoed.push_str(&stream.flush());
    assert_eq!(echoed, String::from_utf8_lossy(bytes));
    assert_eq!(stream.total_bytes(), echoed.len());
    assert_eq!(stream.total_lines(), count_lines(echoed.as_bytes()));
    assert_eq!(stream.is_truncated(), !limits.fits(stream.total_lines(), stream.total_bytes()));
    stream.finish()
}

#[test]
fn the_stream_cuts_exactly_as_the_whole_text() {
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    for case in 0..30_000 {
        let bytes = random_bytes(&mut rng);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let direction = [Head, Tail, Middle][rng.below(3)];
        let limits = if rng.below(8) == 0 {
            limits(rng.below(4), usize::MAX - rng.below(2), direction)
        } else {
            limits(rng.below(12), rng.below(120), direction)
        };
        let max_chunk = [1, 3, 8, 64, 4096][rng.below(5)];
        let streamed = stream_in_chunks(&mut rng, &bytes, limits, max_chunk);
        let whole = truncate_text(&text, &limits);
        let context = format!("case {case}: {text:?} {limits:?} chunks of up to {max_chunk}");
        assert_eq!(streamed.text, whole.text, "{context}");
        assert_eq!(streamed.info, whole.info, "{context}");
    }
}

#[test]
fn chunks_split_inside_characters_and_line_ends() {
    // The head's last byte falls inside `é`, and between `\r` and `\n`.
    let cases: [(&[&[u8]], TruncationLimits, &str); 5] = [
        (&[b"abc\xc3", b"\xa9def"], limits(5, 4, Head), "abc"),
        (&[b"abcdefgh\r", b"\nx"], limits(5, 9, Head), "abcdefgh"),
        (&[b"x\nabc\r", b"\n"], limits(1, 6, Tail), "abc\r\n"),
        (&[b"\xf0\x9f", b"\x98\x80\xf0", b"\x9f\x98\x80"], limits(5, 6, Tail), "\u{1F600}"),
        (
            &[b"a\r", b"\nb\r", b"\nc\r", b"\n"],
            limits(2, 100, Middle),
            "a\r\n[... 1 line (3 bytes) cut ...]\nc\r\n",
        ),
    ];
    for (chunks, limits, kept) in cases {
        let mut stream = TruncationStream::new(limits);
        for chunk in chunks {
            stream.push_bytes(chunk);
        }
        let whole = String::from_utf8(chunks.concat()).expect("valid once joined");
        let streamed = stream.finish();
        assert_eq!(streamed.text, kept, "{chunks:?}");
        assert_eq!(streamed, truncate_text(&whole, &limits), "{chunks:?}");
    }
}
