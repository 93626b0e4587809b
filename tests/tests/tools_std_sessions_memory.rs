//! 20 background sessions printing 100 MiB each at once: each keeps only its unread window (cut
//! to the limits) and a bounded queue to the output store, so the memory of the whole stays
//! bounded; the figure is recorded in BENCHMARKS.md.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::{Registry, SessionState, ToolContext, context::Dependencies, output_store::OutputStore};
use tool_tests::{TempDir, status_bytes};
use tools_std::Workspace;

const MIB: u64 = 1024 * 1024;
const SESSIONS: usize = 20;
/// The bound checked: far below the 2 GiB printed, and a few MiB per session at most.
const BOUND: u64 = 96 * MIB;

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_printing_100_mib_each_stay_within_a_memory_bound() {
    let dir = TempDir::new("sessions-memory");
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(dir.path().join("ws")).unwrap());
    // The stored copies stop at 1 MiB each: the disk is not what is measured here.
    deps.insert(
        OutputStore::builder()
            .dir(dir.path().join("outputs"))
            .max_output_bytes(MIB as usize)
            .read_hint(tools_std::read_hint())
            .open()
            .unwrap(),
    );
    let deps = Arc::new(deps);
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let state = SessionState::new();
    let call = |tool: &str, args: serde_json::Value| {
        let ctx = ToolContext::builder(tool).dependencies(deps.clone()).session(state.clone()).build();
        let registry = &registry;
        let tool = tool.to_owned();
        async move { registry.call(&tool, &args.to_string(), ctx).await.expect("the call succeeds") }
    };

    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:");
    let started = std::time::Instant::now();
    let command = format!(
        "yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c {}",
        100 * MIB
    );
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        let out = call("bash", json!({"command": command, "background": true})).await;
        let first = out.metadata["new_output_bytes"].as_u64().expect("bytes shown");
        ids.push((out.metadata["session_id"].as_u64().expect("a session"), first));
    }
    for (id, first) in ids {
        let out = call("bash_output", json!({"session_id": id, "wait_ms": 300000})).await;
        assert_eq!(out.metadata["running"], json!(false), "{}", out.text_content());
        assert_eq!(out.metadata["exit_code"], json!(0));
        let rest = out.metadata["new_output_bytes"].as_u64().expect("bytes shown");
        assert_eq!(first + rest, 100 * MIB, "{}", out.text_content());
        assert!(out.metadata["truncation"]["output_ref"].is_string(), "the output was stored");
        assert!(out.text_content().len() < 64 * 1024);
    }
    let elapsed = started.elapsed();
    let peak = status_bytes("VmHWM:");
    let extra = peak.saturating_sub(before);
    eprintln!(
        "{SESSIONS} sessions x 100 MiB: peak {} MiB above the {} MiB before, {:.1} s",
        extra / MIB,
        before / MIB,
        elapsed.as_secs_f64()
    );
    assert!(extra < BOUND, "the sessions used {} MiB of extra memory", extra / MIB);
}
