//! Edit matching: an arbitrary file, old and new strings, through the `edit` tool on a real file.
//!
//! `old_string` is often taken from the file itself and then disturbed the way models disturb it
//! (indentation, trailing spaces, typographic quotes and dashes, line endings), to reach the
//! tolerant tiers. Checks: no panic; a failed edit leaves the file as it was; for plain text
//! (UTF-8, `\n` line ends, no BOM, no control characters) an exact match behaves like
//! `str::replacen` / `str::replace`, and an ambiguous one is refused unless `replace_all`.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tool_runtime::{Registry, ToolContext, context::Dependencies};
use tools_std::Workspace;

struct Setup {
    registry: Registry,
    deps: Arc<Dependencies>,
    runtime: tokio::runtime::Runtime,
    file: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        // A RAM-backed directory when there is one: the tool writes atomically, with a sync.
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        // Directories of earlier runs whose process is gone (a fuzzer exits without cleanup).
        for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("tool-fuzz-edit-")
                && !std::path::Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let root = base.join(format!("tool-fuzz-edit-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("workspace directory");
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(&root).expect("workspace"));
        Setup {
            registry: Registry::builder().tools(tools_std::all()).allow(["edit"]).build().expect("registry"),
            deps: Arc::new(deps),
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"),
            file: root.join("file.txt"),
        }
    })
}

/// Text the way a model might misremember it.
fn disturb(u: &mut Unstructured<'_>, text: &str) -> Result<String> {
    Ok(match u.int_in_range(0..=7)? {
        0 => text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n"),
        1 => text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n"),
        2 => text.lines().map(str::trim_start).collect::<Vec<_>>().join("\n"),
        3 => text.replace('\'', "\u{2019}").replace('"', "\u{201C}").replace('-', "\u{2013}"),
        4 => text.replace('\u{2019}', "'").replace('\u{201C}', "\"").replace('\u{2013}', "-"),
        5 => text.replace('\n', "\r\n"),
        6 => text.replace('\t', "    "),
        _ => text.to_owned(),
    })
}

/// A slice of `content` on character boundaries.
fn excerpt(u: &mut Unstructured<'_>, content: &str) -> Result<String> {
    let len = content.len();
    let mut start = u.int_in_range(0..=len)?;
    let mut end = u.int_in_range(start..=len)?;
    while !content.is_char_boundary(start) {
        start -= 1;
    }
    while !content.is_char_boundary(end) {
        end += 1;
    }
    Ok(content[start..end].to_owned())
}

/// Text the checks can predict exactly.
fn plain(text: &str) -> bool {
    !text.starts_with('\u{feff}') && text.chars().all(|c| c == '\n' || c == '\t' || !c.is_control())
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let raw_content: Vec<u8> = if u.ratio(1, 8)? {
        u.arbitrary()?
    } else {
        // Mostly lines of code-like text, so excerpts span lines.
        let lines: Vec<String> = u.arbitrary()?;
        let mut text = lines.join(if u.ratio(1, 6)? { "\r\n" } else { "\n" });
        if u.ratio(1, 10)? {
            text.insert(0, '\u{feff}');
        }
        text.into_bytes()
    };
    let content_text = String::from_utf8_lossy(&raw_content).into_owned();
    let old = match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<String>()?,
        1 => excerpt(&mut u, &content_text)?,
        _ => {
            let excerpt = excerpt(&mut u, &content_text)?;
            disturb(&mut u, &excerpt)?
        }
    };
    let new: String = if u.ratio(1, 3)? { disturb(&mut u, &old)? } else { u.arbitrary()? };
    let replace_all: bool = u.arbitrary()?;

    let setup = setup();
    std::fs::write(&setup.file, &raw_content).expect("write the file");
    let arguments =
        json!({"path": "file.txt", "old_string": old, "new_string": new, "replace_all": replace_all});
    let ctx = ToolContext::builder("edit").dependencies(setup.deps.clone()).build();
    let result = setup.runtime.block_on(setup.registry.call("edit", &arguments.to_string(), ctx));
    let after = std::fs::read(&setup.file).expect("read the file back");

    let Ok(output) = result else {
        assert_eq!(after, raw_content, "a failed edit changed the file");
        return Ok(());
    };
    assert!(!output.is_error, "an error comes back as Err");

    let Ok(content) = std::str::from_utf8(&raw_content) else { return Ok(()) };
    if !(plain(content) && plain(&old) && plain(&new))
        || content.contains('\r')
        || old.contains('\r')
        || new.contains('\r')
    {
        return Ok(());
    }
    if old.is_empty() {
        // Only an empty file may be written through an empty old_string.
        assert!(content.is_empty(), "an empty old_string edited a non-empty file");
        assert_eq!(after, new.as_bytes());
        return Ok(());
    }
    let matches = content.matches(old.as_str()).count();
    match (matches, replace_all) {
        (0, _) => assert_ne!(output.metadata["match"], "exact", "an exact match that is not there"),
        (1, _) => {
            assert_eq!(after, content.replacen(old.as_str(), &new, 1).as_bytes(), "{}", output.text_content())
        }
        (_, true) => assert_eq!(after, content.replace(old.as_str(), &new).as_bytes()),
        (n, false) => panic!("old_string occurs {n} times, yet the edit was made: {}", output.text_content()),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
