//! `edit` and `multi_edit` on large inputs: working memory stays a small multiple of the file,
//! the diff kept in the metadata is capped (and says so), and an edit whose result would pass the
//! 64 MiB cap is refused after counting, before anything is built.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::{Registry, ToolContext, ToolOutput, context::Dependencies};
use tool_tests::{TempDir, status_bytes};
use tools_std::Workspace;

const MIB: u64 = 1024 * 1024;

async fn call(registry: &Registry, deps: &Arc<Dependencies>, tool: &str, args: Value) -> (ToolOutput, u64) {
    // Reset the peak to the current size (Linux 4.0+), so the peak measured is this call's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:");
    let ctx = ToolContext::builder(tool).dependencies(deps.clone()).build();
    let out = match registry.call(tool, &args.to_string(), ctx).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(e.message().to_owned()),
    };
    (out, status_bytes("VmHWM:").saturating_sub(before))
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn large_edits_run_in_memory_bounded_by_the_file() {
    let dir = TempDir::new("edit-memory");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(&root).unwrap());
    let deps = Arc::new(deps);
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();

    // 8 MB of `a`: 8 million one-byte matches, every line changed.
    let size = 8_000_000u64;
    std::fs::write(root.join("big.txt"), format!("{}\n", "a".repeat(79)).repeat((size / 80) as usize))
        .unwrap();
    let args = json!({"path": "big.txt", "old_string": "a", "new_string": "b", "replace_all": true});
    let (out, extra) = call(&registry, &deps, "edit", args).await;
    eprintln!("edit replace_all over {} MB: peak {} MiB above before", size / 1_000_000, extra / MIB);
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(
        out.text_content(),
        "Edited big.txt: replaced 7900000 occurrences (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...)."
    );
    assert_eq!(
        std::fs::read(root.join("big.txt")).unwrap()[..80],
        *format!("{}\n", "b".repeat(79)).as_bytes()
    );
    let diff = out.metadata["diff"].as_str().unwrap();
    assert!(diff.len() <= 256 * 1024, "the diff is capped: {} bytes", diff.len());
    assert!(diff.starts_with("--- a/big.txt\n+++ b/big.txt\n@@ -1,"), "{}", &diff[..100]);
    assert_eq!(out.metadata["diff_truncated"], json!(true));
    // The file, the result and a little more: not one record per match.
    assert!(extra < 5 * size, "peak {extra} bytes above before, for a file of {size}");

    // Edit 1 makes 8000 bytes, edit 2 64 MB, edit 3 would make 128 MB: refused once counted,
    // before a byte of it (or a record per match) is built.
    std::fs::write(root.join("m.txt"), "a").unwrap();
    let wide = "a".repeat(8000);
    let args = json!({"path": "m.txt", "edits": [
        {"old_string": "a", "new_string": wide},
        {"old_string": "a", "new_string": wide, "replace_all": true},
        {"old_string": "a", "new_string": "bb", "replace_all": true},
    ]});
    let (out, extra) = call(&registry, &deps, "multi_edit", args).await;
    eprintln!("multi_edit refused at 128 MB: peak {} MiB above before", extra / MIB);
    assert!(out.is_error);
    assert_eq!(
        out.text_content(),
        "Edit 3 of 3 failed: Replacing 64000000 occurrences in m.txt would make it 128000000 bytes, more than the \
         64 MiB edit writes; nothing was written. Replace fewer occurrences (a longer old_string, or replace_all \
         set to false), or use bash. No edit was applied: the file is unchanged."
    );
    assert_eq!(std::fs::read(root.join("m.txt")).unwrap(), b"a");
    // The 64 MB text of edit 2 and the one before it; never the 128 MB, nor 64 million records.
    assert!(extra < 200 * MIB, "peak {} MiB above before", extra / MIB);
}
