//! The tests of `code_mode`, each script's interpreter in a process of its own
//! (`CodeTool::in_worker`, the `code-worker` program): the same answers, and a script that no
//! interrupt reaches is killed at its time limit.

/// Each script's interpreter runs in a process of the `code-worker` program.
const IN_A_WORKER: bool = true;

#[path = "code_mode/cases.rs"]
mod cases;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::code::{CodeTool, Limits, WorkerCommand};
use tool_runtime::{CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolSpec, spec::FnTool};

/// A worker that does not keep to its script's limits (an interpreter a script subverted) is
/// stopped by the host, and what it asked for beyond them is not done: a worker that says
/// `said` once it read its script, then waits `wait` seconds and ends.
async fn broken_worker(said: &str, limits: Limits, wait: u32) -> (String, usize) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let count = FnTool::new(ToolSpec::new("count", "Count.", json!({"type": "object"})), move |_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::text("counted")) }
    });
    let tools = Registry::builder().tool(count).build().unwrap();
    let worker = WorkerCommand::new("/bin/sh")
        .arg("-c")
        .arg(format!("read start; printf '%s\\n' '{said}'; sleep {wait}"));
    let dispatcher =
        Dispatcher::new(CodeTool::new(tools).with_limits(limits).in_worker(worker).alone().unwrap());
    let started = Instant::now();
    let call = ToolCall::new("call-1", "code", json!({ "script": "await tools.count({})" }));
    let result = dispatcher.run(call, CancellationToken::new()).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    (result.output.text_content(), calls.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_worker_that_breaks_its_scripts_limits_is_stopped_and_what_it_asked_is_not_done() {
    let limits = Limits::default().with_yield_time(None).with_nested_calls(2).with_output_bytes(16);
    let broken = "The script failed: The script interpreter stopped unexpectedly.";
    // Its first call numbered 2, a call past the call limit, a print past the output limit, an
    // end longer than the output limit, arguments past the memory limit, and no message at all.
    let big = "x".repeat(100);
    for said in [
        r#"{"call":2,"tool":"count","arguments":"{}"}"#.to_owned(),
        r#"{"call":3,"tool":"count","arguments":"{}"}"#.to_owned(),
        r#"{"print":"seventeen bytes!!\n"}"#.to_owned(),
        r#"{"done":{"output":"seventeen bytes!!","error":null,"calls":0},"stop":null}"#.to_owned(),
        format!(r#"{{"call":1,"tool":"count","arguments":"{{\"a\":\"{big}\"}}"}}"#),
        "not a message".to_owned(),
    ] {
        let limits = match said.contains(&big) {
            true => limits.with_memory_bytes(64),
            false => limits,
        };
        let (text, calls) = broken_worker(&said, limits, 30).await;
        assert_eq!((text.as_str(), calls), (broken, 0), "{said}");
    }
    // The same worker keeping to them: its call is made (then it ends without a word).
    let (text, calls) = broken_worker(r#"{"call":1,"tool":"count","arguments":"{}"}"#, limits, 1).await;
    assert_eq!((text.as_str(), calls), (broken, 1));
}
