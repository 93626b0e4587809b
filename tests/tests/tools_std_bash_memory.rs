//! `bash` on a command printing 1 GiB: the output is spilled to the output store, which keeps its
//! size limit (64 MiB by default), and the tool stays within about 64 MiB of extra memory.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::output_store::DEFAULT_MAX_OUTPUT_BYTES;
use tool_runtime::{Registry, ToolContext, context::Dependencies, output_store::OutputStore};
use tool_tests::{TempDir, status_bytes};
use tools_std::Workspace;

const GIB: u64 = 1024 * 1024 * 1024;

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_gigabyte_of_output_runs_in_bounded_memory() {
    let dir = TempDir::new("bash-memory");
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(dir.path().join("ws")).unwrap());
    deps.insert(
        OutputStore::builder()
            .dir(dir.path().join("outputs"))
            .read_hint(tools_std::read_hint())
            .open()
            .unwrap(),
    );
    let deps = Arc::new(deps);
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();

    // Reset the peak to the current size (Linux 4.0+), so the peak measured is this call's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:");
    let command =
        format!("yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c {GIB}");
    let ctx = ToolContext::builder("bash").dependencies(deps.clone()).build();
    let out = registry
        .call("bash", &json!({"command": command, "timeout_secs": 600}).to_string(), ctx)
        .await
        .expect("bash returns a result");
    let peak = status_bytes("VmHWM:");
    let extra = peak.saturating_sub(before);
    eprintln!("bash on 1 GiB of output: peak {} MiB above the {} MiB before", extra >> 20, before >> 20);

    assert!(!out.is_error, "{}", out.text_content());
    let info = &out.metadata["truncation"];
    assert_eq!(info["total_bytes"], json!(GIB));
    assert_eq!(info["total_lines"], json!(GIB / 64));
    let reference = info["output_ref"].as_str().expect("the full output was stored");
    let store = deps.get::<OutputStore>().unwrap();
    let stored = store.open(reference).unwrap().metadata().unwrap().len();
    assert_eq!(stored, DEFAULT_MAX_OUTPUT_BYTES as u64, "the store keeps the output up to its size limit");
    assert_eq!(info["stored_bytes"], json!(DEFAULT_MAX_OUTPUT_BYTES));
    let text = out.text_content();
    assert!(
        text.contains(&format!(
            "or search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\"). The saved copy stops at \
             the store's limit of 67108864 bytes.]"
        )),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    assert!(text.len() < 64 * 1024, "the model sees both ends only");
    assert!(extra < 64 * 1024 * 1024, "the call used {} MiB of extra memory", extra / (1024 * 1024));
}
