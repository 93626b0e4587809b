//! What an interpreter in a process of its own (`CodeTool::in_worker`) leaves behind: nothing,
//! however its script ends. Alone in its test process, which counts its own child processes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::code::{CodeTool, Limits, WorkerCommand};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolResult, ToolSpec, spec::FnTool,
};

async fn script(dispatcher: &Dispatcher, source: &str) -> ToolResult {
    let call = ToolCall::new("call-1", "code", json!({ "script": source }));
    dispatcher.run(call, CancellationToken::new()).await
}

/// A child process of this process that has not ended.
#[derive(Debug, Clone, Copy)]
struct Child {
    pid: i32,
    /// Its state (`R` running, `S` sleeping, ...).
    state: char,
    /// When it started, in clock ticks since boot.
    started: u64,
}

/// The child processes of this process that have not ended (zombies left out), the one
/// started first first.
fn live_children() -> Vec<Child> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().filter_map(Result::ok) {
        let pids = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in pids.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()) {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let fields: Vec<&str> =
                stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
            // After the name: state is the 1st field, starttime the 20th.
            let (Some(state), Some(started)) = (fields.first(), fields.get(19)) else { continue };
            let state = state.chars().next().unwrap_or('?');
            if state != 'Z' && state != 'X' {
                children.push(Child { pid, state, started: started.parse().unwrap_or(0) });
            }
        }
    }
    children.sort_by_key(|child| (child.started, child.pid));
    children
}

/// Waits up to 10 s (a bound for a loaded machine) until what runs of this process's children
/// is at most one worker waiting, idle, for the next script (`spare`), or nothing.
fn settled(spare: bool) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let children = live_children();
        let idle = children.iter().all(|child| child.state == 'S');
        if idle && children.len() <= usize::from(spare) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tool whose call ends only when it is cancelled (then `cancelled` is set).
fn waiting_tool(cancelled: Arc<AtomicBool>) -> FnTool {
    FnTool::new(ToolSpec::new("wait", "Wait.", json!({"type": "object"})), move |ctx, _| {
        let cancelled = cancelled.clone();
        async move {
            ctx.cancellation_token().cancelled().await;
            cancelled.store(true, Ordering::SeqCst);
            Ok(ToolOutput::text("cancelled"))
        }
    })
}

fn dispatcher(tools: Registry, limits: Limits) -> Dispatcher {
    let worker = WorkerCommand::new(env!("CARGO_BIN_EXE_code-worker"));
    Dispatcher::new(CodeTool::new(tools).with_limits(limits).in_worker(worker).alone().unwrap())
}

#[test]
fn a_worker_ends_with_its_script_however_the_script_ends() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let tools = || Registry::builder().tool(waiting_tool(cancelled.clone())).build().unwrap();
    let limits = Limits::default().with_wall_time(Duration::from_secs(1)).with_yield_time(None);
    assert!(live_children().is_empty(), "children before the test: {:?}", live_children());

    // BigInt arithmetic in C, which consults no interrupt handler for half a second and more
    // per turn, in a loop that reaches the handler once per 10,000 turns: on a thread it would
    // run on for minutes.
    let dispatcher = dispatcher(tools(), limits);
    let started = Instant::now();
    let result = runtime
        .block_on(script(&dispatcher, "console.log('before'); for (;;) { (3n ** 200000n).toString(); }"));
    let took = started.elapsed();
    assert!(result.output.is_error);
    assert_eq!(
        result.output.text_content(),
        "before\nThe script was stopped after 1 s, its time limit. Do less per script (fewer or narrower tool \
         calls, run independent calls together with Promise.all) and continue in another script."
    );
    assert!(took < Duration::from_secs(4), "stopped after {took:?}");
    // What is left is the worker started ahead for the next script, waiting.
    assert!(settled(true), "the worker runs on: {:?}", live_children());
    // The next script runs as ever.
    let result = runtime.block_on(script(&dispatcher, "6 * 7"));
    assert_eq!(result.output.text_content(), "42");

    // Stopped by its call's own time limit (the caller's cancellation) in the same loop: the
    // worker is killed within the dispatcher's cancel grace, and what the script printed
    // reaches the model with the reason.
    let call = ToolCall::new(
        "call-2",
        "code",
        json!({ "script": "console.log('before'); for (;;) { (3n ** 200000n).toString(); }" }),
    );
    let options =
        tool_runtime::CallOptions { timeout: Some(Duration::from_millis(500)), ..Default::default() };
    let result = runtime.block_on(dispatcher.run_with(call, options, CancellationToken::new()));
    assert!(
        result
            .output
            .text_content()
            .starts_with("before\nThe script was stopped: its call reached its time limit"),
        "{}",
        result.output.text_content()
    );
    assert!(settled(true), "the worker runs on: {:?}", live_children());

    // A worker killed from outside while its script waits for a call: the call is stopped, and
    // the model reads what happened. Every worker is killed, the one started ahead for the next
    // script too (if it is there yet).
    let call = runtime.spawn({
        let dispatcher = dispatcher.clone();
        async move { script(&dispatcher, "console.log('waiting'); await tools.wait({})").await }
    });
    std::thread::sleep(Duration::from_millis(300));
    let workers = live_children();
    assert!(!workers.is_empty());
    for worker in workers {
        std::process::Command::new("kill").args(["-KILL", &worker.pid.to_string()]).status().unwrap();
    }
    let result = runtime.block_on(call).unwrap();
    assert!(result.output.is_error);
    assert_eq!(
        result.output.text_content(),
        "waiting\nThe script failed: The script interpreter stopped unexpectedly."
    );
    assert!(cancelled.load(Ordering::SeqCst), "the script's call was not stopped");
    assert!(settled(true), "{:?}", live_children());
    // A worker that died while it waited for its script is not given one.
    let result = runtime.block_on(script(&dispatcher, "6 * 7"));
    assert_eq!(result.output.text_content(), "42");
    assert!(settled(true), "{:?}", live_children());

    // The worker waiting for the next script goes with the tool.
    drop(dispatcher);
    assert!(settled(false), "{:?}", live_children());

    // A runtime shut down under a running script (a server stopping): the worker goes too.
    let dispatcher = self::dispatcher(tools(), limits.with_wall_time(Duration::from_secs(60)));
    runtime.block_on(async {
        tokio::spawn(async move { script(&dispatcher, "await tools.wait({})").await });
        // Its worker runs (a worker the last tool was starting ahead as it went may show for a
        // moment, then go).
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if !live_children().is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if !live_children().is_empty() {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(!live_children().is_empty());
    drop(runtime);
    assert!(settled(false), "a worker outlived the runtime: {:?}", live_children());
}
