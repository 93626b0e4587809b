//! The `apply_patch` parser and hunk matching: arbitrary patch text, and arbitrary file content
//! for the updates it parses to.
//!
//! The patch is either raw input or assembled from the format's own pieces (section headers,
//! `@@` lines, ` `/`-`/`+` lines, `*** End of File`, CRLF, blank lines) so the fuzzer reaches deep
//! into the grammar. Checks: no panic; a parsed patch keeps the parser's promises (an update
//! has hunks or a move, every hunk changes something, `kept` points at context lines); applying
//! an update never panics, and a patch whose hunks only add lines always applies.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tools_std::apply_patch::{FileChange, parse_patch, update_text};

const PIECES: &[&str] = &[
    "*** Begin Patch\n",
    "*** End Patch\n",
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
    "*** End of File\n",
    "@@\n",
    "@@ ",
    " ",
    "-",
    "+",
    "\n",
    "\r\n",
    "a",
    "b\n",
    "é",
    "\u{201c}",
    "\t",
    "<<'EOF'\n",
    "EOF\n",
];

fn patch_text(u: &mut Unstructured<'_>) -> Result<String> {
    if u.arbitrary()? {
        return u.arbitrary();
    }
    let mut text = String::from("*** Begin Patch\n");
    for _ in 0..u.int_in_range(0..=40)? {
        if u.ratio(1, 6)? {
            text.push_str(u.arbitrary::<&str>()?);
        } else {
            text.push_str(u.choose(PIECES)?);
        }
    }
    if u.arbitrary()? {
        text.push_str("*** End Patch\n");
    }
    Ok(text)
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let text = patch_text(u)?;
    let content: Vec<u8> = u.arbitrary()?;
    let Ok(patch) = parse_patch(&text) else { return Ok(()) };
    assert!(!patch.files.is_empty());
    for change in &patch.files {
        assert!(!change.path().trim().is_empty());
        if let FileChange::Update { move_to, hunks, .. } = change {
            assert!(move_to.is_some() || !hunks.is_empty(), "an update without hunks or move: {text:?}");
            for hunk in hunks {
                assert_eq!(hunk.kept.len(), hunk.new.len());
                for (new, kept) in hunk.new.iter().zip(&hunk.kept) {
                    if let Some(o) = kept {
                        assert_eq!(&hunk.old[*o], new);
                    }
                }
            }
            let result = update_text(&content, hunks, "fuzzed.txt");
            let only_additions = hunks.iter().all(|h| h.old.is_empty() && h.header.is_none());
            if only_additions
                && std::str::from_utf8(content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&content)).is_ok()
            {
                assert!(result.is_ok(), "pure additions failed: {result:?}");
            }
        }
    }
    Ok(())
}
