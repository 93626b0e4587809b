//! A runtime shut down under a running script, alone in its test process: it counts the
//! process's interpreter threads, which other tests' scripts would start and end meanwhile.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_runtime::code::{CodeTool, Limits};
use tool_runtime::{CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolSpec, spec::FnTool};

async fn script(dispatcher: &Dispatcher, source: &str) {
    let call = ToolCall::new("call-1", "code", json!({ "script": source }));
    dispatcher.run(call, CancellationToken::new()).await;
}

/// The threads of this process named `code-script` (scripts' interpreters).
fn interpreter_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "code-script")
                })
                .count()
        })
        .unwrap_or(0)
}

/// A runtime shut down under a script whose call is in flight (a server stopping while a held
/// script runs): the script's thread drops its calls rather than polling them on a runtime that
/// is gone, and ends without a panic.
#[test]
fn a_runtime_shut_down_under_a_running_script_leaves_its_thread_to_end_quietly() {
    let panics = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("code-script") {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        previous(info);
    }));
    let slow = FnTool::new(ToolSpec::new("slow", "Wait.", json!({"type": "object"})), |_, _| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(ToolOutput::text("late"))
    });
    let tools = Registry::builder().tool(slow).build().unwrap();
    let registry = CodeTool::new(tools).with_limits(Limits::default().with_yield_time(None)).alone().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let before = interpreter_threads();
    runtime.block_on(async {
        let dispatcher = Dispatcher::new(registry);
        tokio::spawn(async move { script(&dispatcher, "await tools.slow({})").await });
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    assert!(interpreter_threads() > before, "the script runs");
    drop(runtime);
    // Its own time: the thread notices at once; 10 s is a bound for a loaded machine.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while interpreter_threads() > before && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(interpreter_threads() <= before, "the script's thread ended");
    assert_eq!(panics.load(std::sync::atomic::Ordering::SeqCst), 0, "the script's thread panicked");
}
