//! Dispatcher behaviour: ordering, the parallel/exclusive gate, failures, timeouts,
//! cancellation, skipping, the repeat guard, hooks, permissions, context and events.
//!
//! Concurrency is proven with barriers, latches and the recorded event stream, never with
//! sleeps; timeouts run on tokio's paused clock.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify, Semaphore};
use tool_runtime::{
    CallOptions, CancellationToken, Dispatcher, DispatcherBuilder, ErrorKind, PermissionKind,
    PermissionRequest, Progress, Registry, ToolCall, ToolContext, ToolError, ToolOutput, ToolResult,
    ToolSpec,
    dispatch::{RepeatAction, RepeatGuard},
    events::{CallStatus, EventSink, ToolEvent},
    hooks::{AfterFn, AllowAll, BeforeDecision, BeforeFn, PermissionDecision, PermissionFn},
    spec::FnTool,
};

// ---------------------------------------------------------------------------------------------
// Helpers

fn spec(name: &str, parallel: bool) -> ToolSpec {
    ToolSpec::new(
        name,
        "A test tool.",
        json!({
            "type": "object",
            "properties": {"key": {"type": "string"}, "n": {"type": "integer"}},
            "additionalProperties": false
        }),
    )
    .with_parallel(parallel)
}

fn tool<F, Fut>(name: &str, parallel: bool, f: F) -> FnTool
where
    F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool::new(spec(name, parallel), f)
}

fn echo(name: &str, parallel: bool) -> FnTool {
    tool(name, parallel, |_ctx, args| async move { Ok(ToolOutput::text(args.to_string())) })
}

fn registry(tools: Vec<FnTool>) -> Arc<Registry> {
    let mut builder = Registry::builder();
    for t in tools {
        builder = builder.tool(t);
    }
    Arc::new(builder.build().expect("test registry"))
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn text(result: &ToolResult) -> String {
    result.output.text_content()
}

fn key(args: &Value) -> String {
    args.get("key").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// Records every event and wakes waiters on each one.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<ToolEvent>>>,
    changed: Arc<Notify>,
}

impl EventSink for Recorder {
    fn emit(&self, event: ToolEvent) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }
}

impl Recorder {
    fn snapshot(&self) -> Vec<ToolEvent> {
        self.events.lock().unwrap().clone()
    }

    async fn wait_for(&self, predicate: impl Fn(&[ToolEvent]) -> bool) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if predicate(&self.events.lock().unwrap()) {
                return;
            }
            notified.await;
        }
    }

    async fn wait_for_event(&self, call_id: &str, kind: &str) {
        self.wait_for(|events| events.iter().any(|e| e.call_id() == call_id && e.kind() == kind)).await;
    }

    fn kinds_of(&self, call_id: &str) -> Vec<&'static str> {
        self.snapshot().iter().filter(|e| e.call_id() == call_id).map(ToolEvent::kind).collect()
    }

    fn status_of(&self, call_id: &str) -> Option<CallStatus> {
        self.snapshot().iter().find(|e| e.call_id() == call_id && e.kind() == "finished")?.status()
    }

    fn finished(&self, call_id: &str) -> ToolEvent {
        self.snapshot()
            .into_iter()
            .find(|e| e.call_id() == call_id && e.kind() == "finished")
            .expect("finished event")
    }
}

/// A denial from `ToolContext::ask`: its wording belongs to the context; the dispatcher must pass
/// the request's description and the hook's reason through to the model.
fn assert_denied(text: &str, description: &str, reason: &str) {
    assert!(text.starts_with("Permission denied"), "{text}");
    assert!(text.contains(description), "{text}");
    assert!(text.contains(reason), "{text}");
}

fn with_events(builder: DispatcherBuilder) -> (Dispatcher, Recorder) {
    let recorder = Recorder::default();
    (builder.events(recorder.clone()).build(), recorder)
}

/// Checks the gate rules on the event stream alone: an exclusive call's started..finished
/// overlaps no other call's, and every call starts only after each earlier call it must wait
/// for (an exclusive one, or any earlier call if it is exclusive itself) has finished.
fn assert_gate_respected(events: &[ToolEvent], calls: &[(&str, bool)]) {
    let position = |id: &str, kind: &str| events.iter().position(|e| e.call_id() == id && e.kind() == kind);
    let parallel: HashMap<&str, bool> = calls.iter().copied().collect();
    let mut running: Vec<&str> = Vec::new();
    for event in events {
        let id = event.call_id();
        match event.kind() {
            "started" => {
                let exclusive = !parallel[id];
                assert!(
                    !exclusive || running.is_empty(),
                    "exclusive {id} started while {running:?} were running"
                );
                assert!(
                    running.iter().all(|r| parallel[r]),
                    "{id} started while exclusive {running:?} was running"
                );
                running.push(calls.iter().find(|c| c.0 == id).unwrap().0);
            }
            "finished" => running.retain(|r| *r != id),
            _ => {}
        }
    }
    for (i, (id, parallel_i)) in calls.iter().enumerate() {
        let Some(started) = position(id, "started") else { continue };
        for (earlier, parallel_j) in &calls[..i] {
            if *parallel_i && *parallel_j {
                continue;
            }
            let finished = position(earlier, "finished").expect("earlier call finished");
            assert!(finished < started, "{id} started before {earlier} finished");
        }
    }
}

/// Counts tools running at once and the maximum seen.
#[derive(Default)]
struct Concurrency {
    running: AtomicUsize,
    max: AtomicUsize,
}

impl Concurrency {
    fn enter(&self) -> usize {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        now
    }

    fn leave(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering and the parallel policy

#[tokio::test]
async fn batch_results_follow_call_order_whatever_order_calls_finish_in() {
    let latches: Arc<HashMap<String, Arc<Semaphore>>> =
        Arc::new(["a", "b", "c"].iter().map(|k| (k.to_string(), Arc::new(Semaphore::new(0)))).collect());
    let held = latches.clone();
    let hold = tool("hold", true, move |_ctx, args| {
        let latch = held[&key(&args)].clone();
        async move {
            let _permit = latch.acquire().await.map_err(ToolError::from_display)?;
            Ok(ToolOutput::text(format!("done {}", key(&args))))
        }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![hold])));
    let calls = vec![
        call("1", "hold", r#"{"key":"a"}"#),
        call("2", "hold", r#"{"key":"b"}"#),
        call("3", "hold", r#"{"key":"c"}"#),
    ];
    let batch = tokio::spawn(async move { dispatcher.run_batch(calls, CancellationToken::new()).await });

    // Release in reverse order, each only after the previous one finished.
    for (id, key) in [("3", "c"), ("2", "b"), ("1", "a")] {
        events.wait_for_event(id, "started").await;
        latches[key].add_permits(1);
        events.wait_for_event(id, "finished").await;
    }
    let results = batch.await.unwrap().unwrap();
    let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
    let texts: Vec<_> = results.iter().map(text).collect();
    assert_eq!(texts, ["done a", "done b", "done c"]);
    assert!(results.iter().all(|r| r.tool == "hold"));

    let finish_order: Vec<_> =
        events.snapshot().iter().filter(|e| e.kind() == "finished").map(|e| e.call_id().to_owned()).collect();
    assert_eq!(finish_order, ["3", "2", "1"]);
}

/// Builds tools for the gate tests: `par` meets its partner at a barrier (so two parallel calls
/// provably overlap), `excl` records how many tools run while it runs.
fn gate_tools(counter: Arc<Concurrency>, while_exclusive: Arc<AtomicUsize>) -> Vec<FnTool> {
    let barrier = Arc::new(Barrier::new(2));
    let par_counter = counter.clone();
    let par = tool("par", true, move |_ctx, args| {
        let (counter, barrier) = (par_counter.clone(), barrier.clone());
        async move {
            counter.enter();
            if args.get("n").is_some() {
                barrier.wait().await;
            }
            tokio::task::yield_now().await;
            counter.leave();
            Ok(ToolOutput::text("par"))
        }
    });
    let excl = tool("excl", false, move |_ctx, _args| {
        let (counter, seen) = (counter.clone(), while_exclusive.clone());
        async move {
            seen.fetch_max(counter.enter(), Ordering::SeqCst);
            for _ in 0..3 {
                tokio::task::yield_now().await;
                seen.fetch_max(counter.running.load(Ordering::SeqCst), Ordering::SeqCst);
            }
            counter.leave();
            Ok(ToolOutput::text("excl"))
        }
    });
    vec![par, excl]
}

#[tokio::test]
async fn exclusive_call_runs_alone_and_keeps_its_place_in_the_order() {
    let counter = Arc::new(Concurrency::default());
    let while_exclusive = Arc::new(AtomicUsize::new(0));
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(gate_tools(counter.clone(), while_exclusive.clone())))
            .repeat_guard(RepeatGuard::DISABLED),
    );
    let calls = vec![
        call("p0", "par", r#"{"n":1}"#),
        call("p1", "par", r#"{"n":2}"#),
        call("x2", "excl", "{}"),
        call("p3", "par", r#"{"n":3}"#),
        call("p4", "par", r#"{"n":4}"#),
        call("x5", "excl", r#"{"key":"again"}"#),
    ];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(results.iter().map(text).collect::<Vec<_>>(), ["par", "par", "excl", "par", "par", "excl"]);

    // The pairs met at their barrier, so parallel calls did overlap ...
    assert_eq!(counter.max.load(Ordering::SeqCst), 2);
    // ... and nothing else ran while an exclusive call ran.
    assert_eq!(while_exclusive.load(Ordering::SeqCst), 1);
    assert_gate_respected(
        &events.snapshot(),
        &[("p0", true), ("p1", true), ("x2", false), ("p3", true), ("p4", true), ("x5", false)],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_holds_on_a_multi_threaded_runtime_across_many_batches() {
    let counter = Arc::new(Concurrency::default());
    let while_exclusive = Arc::new(AtomicUsize::new(0));
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(gate_tools(counter.clone(), while_exclusive.clone())))
            .repeat_guard(RepeatGuard::DISABLED),
    );
    for round in 0..50 {
        let calls = vec![
            call(&format!("{round}a"), "par", "{}"),
            call(&format!("{round}b"), "excl", "{}"),
            call(&format!("{round}c"), "par", r#"{"n":1}"#),
            call(&format!("{round}d"), "par", r#"{"n":2}"#),
            call(&format!("{round}e"), "par", "{}"),
            call(&format!("{round}f"), "excl", r#"{"key":"x"}"#),
            call(&format!("{round}g"), "par", "{}"),
        ];
        let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
        assert!(results.iter().all(|r| !r.output.is_error), "round {round}: {results:?}");
        let flags =
            ["a", "b", "c", "d", "e", "f", "g"].map(|s| (format!("{round}{s}"), s != "b" && s != "f"));
        let flags: Vec<(&str, bool)> = flags.iter().map(|(id, p)| (id.as_str(), *p)).collect();
        let round_events: Vec<ToolEvent> =
            events.snapshot().into_iter().filter(|e| e.call_id().starts_with(&round.to_string())).collect();
        assert_gate_respected(&round_events, &flags);
    }
    assert_eq!(while_exclusive.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_share_one_gate() {
    let counter = Arc::new(Concurrency::default());
    let while_exclusive = Arc::new(AtomicUsize::new(0));
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(gate_tools(counter.clone(), while_exclusive.clone())))
            .repeat_guard(RepeatGuard::DISABLED),
    );
    let mut batches = Vec::new();
    for b in 0..4 {
        let dispatcher = dispatcher.clone();
        batches.push(tokio::spawn(async move {
            let calls = (0..6)
                .map(|i| call(&format!("b{b}-{i}"), if i % 3 == 1 { "excl" } else { "par" }, "{}"))
                .collect();
            dispatcher.run_batch(calls, CancellationToken::new()).await
        }));
    }
    for batch in batches {
        assert_eq!(batch.await.unwrap().unwrap().len(), 6);
    }
    assert_eq!(while_exclusive.load(Ordering::SeqCst), 1);
    // Across batches the exclusive intervals still overlap nothing.
    let all = events.snapshot();
    let mut running = 0usize;
    let mut exclusive_running = false;
    for event in &all {
        let exclusive = event.tool() == "excl";
        match event.kind() {
            "started" => {
                assert!(!exclusive_running, "{} started during an exclusive call", event.call_id());
                assert!(
                    !(exclusive && running > 0),
                    "exclusive {} started alongside others",
                    event.call_id()
                );
                running += 1;
                exclusive_running = exclusive;
            }
            "finished" => {
                running -= 1;
                exclusive_running = false;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn concurrency_cap_limits_parallel_calls() {
    let counter = Arc::new(Concurrency::default());
    let barrier = Arc::new(Barrier::new(2));
    let c = counter.clone();
    let par = tool("par", true, move |_ctx, _args| {
        let (counter, barrier) = (c.clone(), barrier.clone());
        async move {
            counter.enter();
            barrier.wait().await;
            counter.leave();
            Ok(ToolOutput::text("ok"))
        }
    });
    let dispatcher = Dispatcher::builder(registry(vec![par])).max_concurrency(2).build();
    let calls = (0..6).map(|i| call(&i.to_string(), "par", &format!(r#"{{"n":{i}}}"#))).collect();
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(results.len(), 6);
    // Pairs met at the barrier (so 2 ran at once), and never more than 2.
    assert_eq!(counter.max.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------------------------
// Failures stay in their call

#[tokio::test]
async fn unknown_tool_bad_json_and_invalid_arguments_fail_only_their_call() {
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![echo("echo", true)])));
    let calls = vec![
        call("1", "nope", "{}"),
        call("2", "echo", r#"{"key": "#),
        call("3", "echo", r#"{"n": "many"}"#),
        call("4", "echo", r#"{"key":"fine"}"#),
    ];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), "Unknown tool `nope`. Available tools: `echo`.");
    assert!(text(&results[1]).starts_with(
        "Invalid arguments for tool `echo`:\n- the arguments are not valid JSON: the JSON ends too early"
    ));
    assert!(text(&results[2]).starts_with("Invalid arguments for tool `echo`:\n- "), "{}", text(&results[2]));
    assert!(text(&results[2]).contains("/n"), "{}", text(&results[2]));
    assert!(results[..3].iter().all(|r| r.output.is_error));
    assert_eq!(results[0].output.metadata["error_kind"], "not_found");
    assert_eq!(results[1].output.metadata["error_kind"], "invalid_arguments");
    assert_eq!(text(&results[3]), r#"{"key":"fine"}"#);
    assert!(!results[3].output.is_error);

    for id in ["1", "2", "3"] {
        assert_eq!(events.kinds_of(id), ["queued", "finished"]);
        assert_eq!(events.status_of(id), Some(CallStatus::Failed));
    }
    assert_eq!(events.kinds_of("4"), ["queued", "started", "finished"]);
    assert_eq!(events.status_of("4"), Some(CallStatus::Completed));
}

#[tokio::test]
async fn a_panicking_tool_becomes_a_crash_result_and_the_rest_carry_on() {
    let boom = tool("boom", true, |_ctx, _args| async move {
        if std::hint::black_box(true) {
            panic!("index out of bounds: the len is 0");
        }
        Ok(ToolOutput::text("unreachable"))
    });
    let sync_boom = FnTool::new(
        spec("sync_boom", true),
        |_ctx, _args| -> std::future::Ready<Result<ToolOutput, ToolError>> {
            panic!("panicked before returning a future")
        },
    );
    let (dispatcher, events) =
        with_events(Dispatcher::builder(registry(vec![boom, sync_boom, echo("echo", true)])));
    let calls = vec![call("1", "boom", "{}"), call("2", "echo", "{}"), call("3", "sync_boom", "{}")];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(
        text(&results[0]),
        "The tool `boom` crashed while handling this call (an internal error, reported to the operator). \
         The same call will likely crash again; try different arguments or another approach."
    );
    assert!(results[0].output.is_error);
    assert_eq!(results[0].output.metadata["error_detail"], "panicked: index out of bounds: the len is 0");
    assert_eq!(text(&results[1]), "{}");
    assert!(text(&results[2]).starts_with("The tool `sync_boom` crashed"));
    let ToolEvent::Finished { status, detail, .. } = events.finished("1") else { unreachable!() };
    assert_eq!(status, CallStatus::Failed);
    assert_eq!(detail.as_deref(), Some("panicked: index out of bounds: the len is 0"));

    // The dispatcher still works.
    let again = dispatcher.run(call("4", "echo", r#"{"n":1}"#), CancellationToken::new()).await;
    assert_eq!(text(&again), r#"{"n":1}"#);
}

// ---------------------------------------------------------------------------------------------
// Timeouts (paused clock)

/// A tool that never finishes on its own and reports its token and deadline.
fn stuck(name: &str, seen: Arc<Mutex<Vec<(CancellationToken, bool)>>>) -> FnTool {
    tool(name, true, move |ctx, _args| {
        seen.lock().unwrap().push((ctx.cancellation_token().clone(), ctx.deadline().is_some()));
        async move {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn timeouts_come_from_the_call_then_the_tool_then_the_dispatcher() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let slow_tool =
        FnTool::new(spec("slow_tool", true).with_timeout(Duration::from_secs(2)), |_ctx, _args| async move {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        });
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(vec![stuck("stuck", seen.clone()), slow_tool]))
            .default_timeout(Duration::from_secs(30)),
    );

    let by_default = dispatcher.run(call("1", "stuck", "{}"), CancellationToken::new()).await;
    assert_eq!(
        text(&by_default),
        "The call to `stuck` timed out after 30s and was stopped. Try a smaller task or narrower arguments."
    );
    assert_eq!(by_default.output.metadata["error_kind"], "timeout");
    let ToolEvent::Finished { status, duration_ms, .. } = events.finished("1") else { unreachable!() };
    assert_eq!(status, CallStatus::TimedOut);
    // 30 s, plus the 200 ms grace a tool that ignores its token is given before it is dropped.
    assert!((30_200.0..30_201.0).contains(&duration_ms), "{duration_ms}");
    let (token, had_deadline) = seen.lock().unwrap()[0].clone();
    assert!(token.is_cancelled(), "a timed-out call's token is cancelled");
    assert!(had_deadline);

    let by_tool = dispatcher.run(call("2", "slow_tool", "{}"), CancellationToken::new()).await;
    assert!(text(&by_tool).starts_with("The call to `slow_tool` timed out after 2s"));

    let per_call = CallOptions::with_timeout(Duration::from_millis(1500));
    let by_call = dispatcher.run_with(call("3", "slow_tool", "{}"), per_call, CancellationToken::new()).await;
    assert!(text(&by_call).starts_with("The call to `slow_tool` timed out after 1.5s"));

    let batch = dispatcher
        .run_batch_with(
            vec![(call("4", "stuck", "{}"), CallOptions::with_timeout(Duration::from_millis(250)))],
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(text(&batch[0]).starts_with("The call to `stuck` timed out after 250ms"));
}

#[tokio::test(start_paused = true)]
async fn calls_without_a_limit_get_no_deadline() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![stuck("stuck", seen.clone())])));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (dispatcher, cancel) = (dispatcher.clone(), cancel.clone());
        async move { dispatcher.run(call("1", "stuck", "{}"), cancel).await }
    });
    events.wait_for_event("1", "started").await;
    tokio::time::advance(Duration::from_secs(3600)).await;
    cancel.cancel();
    let result = run.await.unwrap();
    assert_eq!(text(&result), "The call to `stuck` was cancelled after 1h.");
    assert!(!seen.lock().unwrap()[0].1, "no deadline without a limit");
}

// ---------------------------------------------------------------------------------------------
// Cancellation, skipping, fatal errors

#[tokio::test(start_paused = true)]
async fn cancel_gives_every_call_a_result_and_starts_nothing_new() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let excl_runs = Arc::new(AtomicUsize::new(0));
    let runs = excl_runs.clone();
    let excl = tool("excl", false, move |_ctx, _args| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text("excl")) }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![
        stuck("stuck", seen.clone()),
        echo("echo", true),
        excl,
    ])));
    let cancel = CancellationToken::new();
    let calls = vec![
        call("1", "stuck", "{}"),
        call("2", "echo", r#"{"key":"quick"}"#),
        call("3", "excl", "{}"),
        call("4", "echo", "{}"),
    ];
    let batch = tokio::spawn({
        let (dispatcher, cancel) = (dispatcher.clone(), cancel.clone());
        async move { dispatcher.run_batch(calls, cancel).await }
    });
    events.wait_for_event("1", "started").await;
    events.wait_for_event("2", "finished").await;
    tokio::time::advance(Duration::from_secs(2)).await;
    cancel.cancel();
    let results = batch.await.unwrap().unwrap();

    assert_eq!(text(&results[0]), "The call to `stuck` was cancelled after 2s.");
    assert_eq!(text(&results[1]), r#"{"key":"quick"}"#, "a finished call keeps its real result");
    assert_eq!(text(&results[2]), "The call to `excl` was cancelled after 2s, before it started.");
    assert_eq!(text(&results[3]), "The call to `echo` was cancelled after 2s, before it started.");
    assert_eq!(excl_runs.load(Ordering::SeqCst), 0, "calls not yet started are not started");
    assert!(seen.lock().unwrap()[0].0.is_cancelled(), "the tool saw the batch's token cancelled");

    assert_eq!(events.status_of("1"), Some(CallStatus::Cancelled));
    assert_eq!(events.status_of("2"), Some(CallStatus::Completed));
    assert_eq!(events.kinds_of("3"), ["queued", "finished"]);
    assert_eq!(events.status_of("3"), Some(CallStatus::Cancelled));
    assert_eq!(events.status_of("4"), Some(CallStatus::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn an_already_cancelled_token_runs_nothing() {
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![echo("echo", true)])));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let results = dispatcher
        .run_batch(vec![call("1", "echo", "{}"), call("2", "echo", "{}")], cancel.clone())
        .await
        .unwrap();
    assert!(results.iter().all(|r| text(r).ends_with("before it started.")));
    let single = dispatcher.run(call("3", "echo", "{}"), cancel).await;
    assert_eq!(text(&single), "The call to `echo` was cancelled after 0ms, before it started.");
    assert!(events.snapshot().iter().all(|e| e.kind() != "started"));
}

#[tokio::test]
async fn dropping_a_batch_cancels_its_running_calls() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![stuck("stuck", seen.clone())])));
    let batch = tokio::spawn({
        let dispatcher = dispatcher.clone();
        async move { dispatcher.run_batch(vec![call("1", "stuck", "{}")], CancellationToken::new()).await }
    });
    events.wait_for_event("1", "started").await;
    batch.abort();
    let _ = batch.await;
    events.wait_for_event("1", "finished").await;
    assert_eq!(events.status_of("1"), Some(CallStatus::Cancelled));
    assert!(seen.lock().unwrap()[0].0.is_cancelled());
}

#[tokio::test]
async fn skip_check_skips_the_rest_of_the_batch() {
    let interrupted = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (interrupted.clone(), runs.clone());
    let step = tool("step", false, move |_ctx, args| {
        count.fetch_add(1, Ordering::SeqCst);
        if key(&args) == "interrupt" {
            // The user types a new message while this call runs.
            flag.store(true, Ordering::SeqCst);
        }
        async move { Ok(ToolOutput::text(format!("ran {}", key(&args)))) }
    });
    let check = interrupted.clone();
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(vec![step])).skip_check(move || check.load(Ordering::SeqCst)),
    );
    let calls = vec![
        call("1", "step", r#"{"key":"first"}"#),
        call("2", "step", r#"{"key":"interrupt"}"#),
        call("3", "step", r#"{"key":"third"}"#),
        call("4", "step", r#"{"key":"fourth"}"#),
    ];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), "ran first");
    assert_eq!(text(&results[1]), "ran interrupt");
    let skipped =
        "The call to `step` was skipped: the turn was interrupted before it ran, so it had no effect.";
    assert_eq!(text(&results[2]), skipped);
    assert_eq!(text(&results[3]), skipped);
    assert!(results[2].output.is_error);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    for id in ["3", "4"] {
        assert_eq!(events.kinds_of(id), ["queued", "finished"]);
        assert_eq!(events.status_of(id), Some(CallStatus::Skipped));
    }
}

#[tokio::test]
async fn a_fatal_error_escapes_the_batch_and_cancels_the_rest() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fatal = tool("fatal", true, |_ctx, _args| async move {
        Err(ToolError::fatal("the workspace was deleted; stop the turn"))
    });
    let excl_runs = Arc::new(AtomicUsize::new(0));
    let runs = excl_runs.clone();
    let excl = tool("excl", false, move |_ctx, _args| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text("excl")) }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![
        stuck("stuck", seen.clone()),
        fatal,
        excl,
        echo("echo", true),
    ])));
    let calls = vec![call("1", "stuck", "{}"), call("2", "fatal", "{}"), call("3", "excl", "{}")];
    let error = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Fatal);
    assert_eq!(error.message(), "the workspace was deleted; stop the turn");
    assert!(seen.lock().unwrap()[0].0.is_cancelled());
    assert_eq!(excl_runs.load(Ordering::SeqCst), 0);
    assert_eq!(events.status_of("1"), Some(CallStatus::Cancelled));
    assert_eq!(events.status_of("2"), Some(CallStatus::Failed));
    assert_eq!(events.status_of("3"), Some(CallStatus::Cancelled));

    // A single run reports it as an error result, or as Err through try_run.
    let result = dispatcher.run(call("4", "fatal", "{}"), CancellationToken::new()).await;
    assert_eq!(text(&result), "the workspace was deleted; stop the turn");
    assert_eq!(result.output.metadata["error_kind"], "fatal");
    let error = dispatcher
        .try_run(call("5", "fatal", "{}"), CallOptions::default(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.is_fatal());
    // Ordinary errors are results, not Err.
    let fine =
        dispatcher.try_run(call("6", "nope", "{}"), CallOptions::default(), CancellationToken::new()).await;
    assert!(fine.unwrap().output.is_error);
    // The dispatcher is usable after a fatal batch.
    let results =
        dispatcher.run_batch(vec![call("7", "echo", "{}")], CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), "{}");
}

#[tokio::test]
async fn tool_errors_are_results_with_the_model_message_and_operator_detail_apart() {
    let failing = tool("failing", true, |_ctx, _args| async move {
        Err(ToolError::not_found("No file named `a.txt`. Use `ls` to see the files.")
            .with_source(std::io::Error::other("ENOENT /secret/path/a.txt")))
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![failing])));
    let result = dispatcher.run(call("1", "failing", "{}"), CancellationToken::new()).await;
    assert_eq!(text(&result), "No file named `a.txt`. Use `ls` to see the files.");
    assert!(result.output.is_error);
    assert_eq!(result.output.metadata["error_kind"], "not_found");
    assert_eq!(result.output.metadata["error_detail"], "ENOENT /secret/path/a.txt");
    let ToolEvent::Finished { status, error_kind, message, detail, .. } = events.finished("1") else {
        unreachable!()
    };
    assert_eq!(status, CallStatus::Failed);
    assert_eq!(error_kind, Some(ErrorKind::NotFound));
    assert_eq!(message.as_deref(), Some("No file named `a.txt`. Use `ls` to see the files."));
    assert_eq!(detail.as_deref(), Some("ENOENT /secret/path/a.txt"));
}

// ---------------------------------------------------------------------------------------------
// Repeat guard

#[tokio::test]
async fn third_identical_call_in_a_row_is_refused_by_the_default_permissions() {
    let runs = Arc::new(AtomicUsize::new(0));
    let count = runs.clone();
    let read = tool("read", true, move |_ctx, _args| {
        count.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text("contents")) }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![read])));
    let same = r#"{"key":"a.txt"}"#;
    // Whitespace and key order do not make a call different.
    let results = dispatcher
        .run_batch(
            vec![call("1", "read", same), call("2", "read", r#"{ "key" : "a.txt" }"#)],
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(results.iter().all(|r| text(r) == "contents"));
    let third = dispatcher.run(call("3", "read", same), CancellationToken::new()).await;
    assert_denied(
        &text(&third),
        "`read` called 3 times in a row with the same arguments",
        "this exact call (same tool, same arguments) was made 3 times in a row, which looks like a loop, so it \
         was not run; change the arguments or try a different approach",
    );
    assert!(!text(&third).contains("same result"), "the guard saw no result of the third call");
    assert_eq!(third.output.metadata["error_kind"], "permission_denied");
    assert_eq!(events.status_of("3"), Some(CallStatus::Denied));
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // A different call breaks the row.
    dispatcher.run(call("4", "read", r#"{"key":"b.txt"}"#), CancellationToken::new()).await;
    let again = dispatcher.run(call("5", "read", same), CancellationToken::new()).await;
    assert_eq!(text(&again), "contents");
}

#[tokio::test]
async fn repeat_guard_can_refuse_ask_a_hook_or_be_off() {
    let make = || registry(vec![echo("echo", true)]);
    let same = || call("x", "echo", r#"{"n":7}"#);

    let refuse = Dispatcher::builder(make()).repeat_guard(RepeatGuard::new(2, RepeatAction::Refuse)).build();
    let results = refuse.run_batch(vec![same(), same(), same()], CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), r#"{"n":7}"#);
    let refused = "The call to `echo` was not run: this exact call (same tool, same arguments) was made 2 times \
                   in a row, which looks like a loop. If you expect a different result this time, say why and \
                   change the arguments; otherwise try a different approach.";
    assert_eq!(text(&results[1]), refused);
    assert!(text(&results[2]).contains("was made 3 times in a row"));

    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let ask = Dispatcher::builder(make())
        .permissions(PermissionFn(move |request: PermissionRequest| {
            log.lock().unwrap().push(request.clone());
            async move { PermissionDecision::Allow }
        }))
        .build();
    let results =
        ask.run_batch(vec![same(), same(), same(), same()], CancellationToken::new()).await.unwrap();
    assert!(results.iter().all(|r| !r.output.is_error));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "asked at the 3rd and 4th identical call");
    assert_eq!(asked[0].kind, PermissionKind::RepeatedCall { count: 3 });
    assert_eq!(asked[0].tool, "echo");
    assert_eq!(asked[1].kind, PermissionKind::RepeatedCall { count: 4 });

    let off = Dispatcher::builder(make()).repeat_guard(RepeatGuard::DISABLED).build();
    let results = off.run_batch(vec![same(); 5], CancellationToken::new()).await.unwrap();
    assert!(results.iter().all(|r| !r.output.is_error));
}

// ---------------------------------------------------------------------------------------------
// Hooks

#[tokio::test]
async fn before_hooks_allow_deny_and_rewrite_arguments() {
    let runs = Arc::new(AtomicUsize::new(0));
    let count = runs.clone();
    let write = tool("write", false, move |_ctx, args| {
        count.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text(format!("wrote {}", key(&args)))) }
    });
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(vec![write]))
            .before_hook(BeforeFn(|call: tool_runtime::hooks::HookCall| async move {
                Ok(match key(&call.arguments).as_str() {
                    ".env" => BeforeDecision::deny("secrets files are protected"),
                    "relative.txt" => BeforeDecision::Rewrite(json!({"key": "/work/relative.txt"})),
                    "make-invalid" => BeforeDecision::Rewrite(json!({"key": 5})),
                    _ => BeforeDecision::Allow,
                })
            }))
            // A second hook sees the first one's rewrite.
            .before_hook(BeforeFn(|call: tool_runtime::hooks::HookCall| async move {
                assert_ne!(key(&call.arguments), "relative.txt");
                Ok(BeforeDecision::Allow)
            })),
    );
    let calls = vec![
        call("1", "write", r#"{"key":"notes.txt"}"#),
        call("2", "write", r#"{"key":".env"}"#),
        call("3", "write", r#"{"key":"relative.txt"}"#),
        call("4", "write", r#"{"key":"make-invalid"}"#),
    ];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), "wrote notes.txt");
    assert_eq!(text(&results[1]), "The call to `write` was denied: secrets files are protected");
    assert_eq!(results[1].output.metadata["error_kind"], "permission_denied");
    assert_eq!(events.status_of("2"), Some(CallStatus::Denied));
    assert_eq!(events.kinds_of("2"), ["queued", "finished"]);
    assert_eq!(text(&results[2]), "wrote /work/relative.txt");
    assert!(
        text(&results[3]).starts_with(
            "The call to `write` was not run: a hook rewrote its arguments and the result is invalid."
        ),
        "{}",
        text(&results[3])
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn hook_failures_and_panics_are_results() {
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(vec![echo("echo", true)]))
            .before_hook(BeforeFn(|call: tool_runtime::hooks::HookCall| async move {
                match key(&call.arguments).as_str() {
                    "err" => Err(ToolError::execution("the policy service is unreachable")),
                    "panic" => panic!("hook bug"),
                    _ => Ok(BeforeDecision::Allow),
                }
            }))
            .after_hook(AfterFn(|call: tool_runtime::hooks::HookCall, output: ToolOutput| async move {
                match key(&call.arguments).as_str() {
                    "after-err" => Err(ToolError::execution("could not scan the output")),
                    "after-panic" => panic!("after hook bug"),
                    _ => Ok(output),
                }
            })),
    );
    let calls = ["err", "panic", "after-err", "after-panic", "fine"]
        .iter()
        .enumerate()
        .map(|(i, k)| call(&i.to_string(), "echo", &format!(r#"{{"key":"{k}"}}"#)))
        .collect();
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), "the policy service is unreachable");
    assert_eq!(
        text(&results[1]),
        "The call to `echo` failed: a before-call hook crashed (an internal error, reported to the operator)."
    );
    assert_eq!(results[1].output.metadata["error_detail"], "panicked: hook bug");
    assert_eq!(text(&results[2]), "could not scan the output");
    assert_eq!(
        text(&results[3]),
        "The call to `echo` failed: an after-call hook crashed (an internal error, reported to the operator)."
    );
    assert_eq!(text(&results[4]), r#"{"key":"fine"}"#);
    assert!(results[..4].iter().all(|r| r.output.is_error));
    assert_eq!(events.status_of("2"), Some(CallStatus::Failed));
}

#[tokio::test]
async fn after_hooks_inspect_and_replace_results_including_errors() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let failing = tool("failing", true, |_ctx, _args| async move { Err(ToolError::execution("disk full")) });
    let (dispatcher, events) = with_events(
        Dispatcher::builder(registry(vec![echo("echo", true), failing]))
            .after_hook(AfterFn(move |call: tool_runtime::hooks::HookCall, output: ToolOutput| {
                log.lock().unwrap().push((call.call_id.clone(), output.is_error, call.arguments.clone()));
                async move { Ok(output) }
            }))
            .after_hook(AfterFn(|_call: tool_runtime::hooks::HookCall, output: ToolOutput| async move {
                let redacted = output.text_content().replace("hunter2", "[redacted]");
                Ok(ToolOutput { content: vec![tool_runtime::Content::text(redacted)], ..output })
            })),
    );
    let calls = vec![call("1", "echo", r#"{"key":"hunter2"}"#), call("2", "failing", "{}")];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    assert_eq!(text(&results[0]), r#"{"key":"[redacted]"}"#);
    assert_eq!(text(&results[1]), "disk full");
    assert_eq!(events.status_of("2"), Some(CallStatus::Failed));
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        seen,
        vec![("1".to_owned(), false, json!({"key": "hunter2"})), ("2".to_owned(), true, json!({}))]
    );
}

// ---------------------------------------------------------------------------------------------
// ToolContext: permissions, progress, dependencies, session state

#[tokio::test]
async fn ask_uses_the_permission_hook_and_a_denial_is_a_result() {
    let touch = tool("touch", true, |ctx, args| async move {
        let kind = if key(&args) == "outside" {
            PermissionKind::ExternalDirectory { path: "/etc/passwd".into(), named: None }
        } else {
            PermissionKind::Other { name: "touch".into() }
        };
        ctx.ask(PermissionRequest::new(kind, "touch a file")).await?;
        Ok(ToolOutput::text("touched"))
    });
    let reg = registry(vec![touch]);
    let (default, events) = with_events(Dispatcher::builder(reg.clone()));
    let outside = default.run(call("1", "touch", r#"{"key":"outside"}"#), CancellationToken::new()).await;
    assert_denied(&text(&outside), "touch a file", "/etc/passwd is outside the workspace root");
    assert_eq!(events.status_of("1"), Some(CallStatus::Denied));
    let ordinary = default.run(call("2", "touch", r#"{"key":"inside"}"#), CancellationToken::new()).await;
    assert_eq!(text(&ordinary), "touched");

    // A hook that waits for a person's answer.
    let (ask_tx, mut ask_rx) = tokio::sync::mpsc::unbounded_channel();
    let ui =
        Dispatcher::builder(reg.clone())
            .permissions(PermissionFn(move |request: PermissionRequest| {
                let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
                let _ = ask_tx.send((request, answer_tx));
                async move {
                    answer_rx.await.unwrap_or(PermissionDecision::Deny { reason: "nobody answered".into() })
                }
            }))
            .build();
    let pending = tokio::spawn(async move {
        ui.run(call("3", "touch", r#"{"key":"outside"}"#), CancellationToken::new()).await
    });
    let (request, answer) = ask_rx.recv().await.unwrap();
    assert_eq!(request.tool, "touch");
    assert_eq!(request.call_id, "3");
    answer.send(PermissionDecision::Deny { reason: "the user said no".into() }).unwrap();
    assert_denied(&text(&pending.await.unwrap()), "touch a file", "the user said no");

    let allow_all = Dispatcher::builder(reg).permissions(AllowAll).build();
    let allowed = allow_all.run(call("4", "touch", r#"{"key":"outside"}"#), CancellationToken::new()).await;
    assert_eq!(text(&allowed), "touched");
}

#[tokio::test]
async fn progress_and_metadata_stream_while_the_tool_runs_and_never_after_finished() {
    let resume = Arc::new(Notify::new());
    let leaked: Arc<Mutex<Option<ToolContext>>> = Arc::default();
    let (go, keep) = (resume.clone(), leaked.clone());
    let work = tool("work", true, move |ctx, _args| {
        let (go, keep) = (go.clone(), keep.clone());
        async move {
            ctx.progress(Progress {
                message: Some("indexing".into()),
                progress: Some(1.0),
                total: Some(4.0),
            });
            ctx.metadata(Some("Indexing 4 files".into()), json!({"files": 4}));
            go.notified().await;
            *keep.lock().unwrap() = Some(ctx.clone());
            Ok(ToolOutput::text("indexed"))
        }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![work])).session_id("s-1"));
    let run = tokio::spawn({
        let dispatcher = dispatcher.clone();
        async move { dispatcher.run(call("1", "work", "{}"), CancellationToken::new()).await }
    });
    // Both updates arrive while the tool is still waiting.
    events.wait_for_event("1", "metadata").await;
    assert_eq!(events.kinds_of("1"), ["queued", "started", "progress", "metadata"]);
    resume.notify_one();
    assert_eq!(text(&run.await.unwrap()), "indexed");

    let ctx = leaked.lock().unwrap().take().unwrap();
    assert_eq!((ctx.call_id(), ctx.tool_name(), ctx.session_id()), ("1", "work", "s-1"));
    ctx.progress(Progress::message("too late"));
    ctx.metadata(None, json!({}));
    assert_eq!(events.kinds_of("1"), ["queued", "started", "progress", "metadata", "finished"]);

    let all = events.snapshot();
    let ToolEvent::Progress { update, .. } = &all[2] else { unreachable!() };
    assert_eq!(update.message.as_deref(), Some("indexing"));
    let ToolEvent::Metadata { title, metadata, .. } = &all[3] else { unreachable!() };
    assert_eq!(title.as_deref(), Some("Indexing 4 files"));
    assert_eq!(metadata, &json!({"files": 4}));
}

struct Clock(u64);

#[tokio::test]
async fn dependencies_are_fetched_by_type_and_overridden_per_dispatcher() {
    let now = tool("now", true, |ctx, _args| async move {
        let clock = ctx.dep::<Clock>()?;
        let dep = <tool_runtime::Dep<Clock> as tool_runtime::context::FromContext<'_>>::from_context(&ctx)?;
        Ok(ToolOutput::text(format!("{} {}", clock.0, dep.0.0)))
    });
    let reg = registry(vec![now]);
    let real = Dispatcher::builder(reg.clone()).dependency(Clock(1_700_000_000)).build();
    let fake = Dispatcher::builder(reg.clone()).dependency(Clock(1)).dependency(Clock(42)).build();
    let missing = Dispatcher::new(reg);
    assert_eq!(
        text(&real.run(call("1", "now", "{}"), CancellationToken::new()).await),
        "1700000000 1700000000"
    );
    assert_eq!(text(&fake.run(call("2", "now", "{}"), CancellationToken::new()).await), "42 42");
    let error = missing.run(call("3", "now", "{}"), CancellationToken::new()).await;
    assert!(error.output.is_error);
    assert!(text(&error).contains("a dependency is missing"));
    assert!(real.dependencies().contains::<Clock>());
}

#[tokio::test]
async fn session_state_is_shared_across_calls() {
    #[derive(Default)]
    struct Todos(Mutex<Vec<String>>);
    let add = tool("todo_add", false, |ctx, args| async move {
        let todos = ctx.session().get_or_insert_with(Todos::default);
        let mut list = todos.0.lock().unwrap();
        list.push(key(&args));
        Ok(ToolOutput::text(list.join(", ")))
    });
    let dispatcher = Dispatcher::builder(registry(vec![add])).repeat_guard(RepeatGuard::DISABLED).build();
    dispatcher.run(call("1", "todo_add", r#"{"key":"write tests"}"#), CancellationToken::new()).await;
    let results = dispatcher
        .run_batch(vec![call("2", "todo_add", r#"{"key":"run them"}"#)], CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(text(&results[0]), "write tests, run them");
    assert_eq!(dispatcher.session().get::<Todos>().unwrap().0.lock().unwrap().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Events

#[tokio::test]
async fn every_call_has_queued_started_exactly_one_finished_and_serializes_to_json_lines() {
    let (tx, mut rx) = tool_runtime::events::channel();
    let dispatcher = Dispatcher::builder(registry(vec![echo("echo", true)])).events(tx).build();
    let calls = vec![call("a", "echo", "{}"), call("b", "echo", r#"{"n":1}"#), call("c", "missing", "{}")];
    dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();
    drop(dispatcher);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    for id in ["a", "b"] {
        let kinds: Vec<_> = events.iter().filter(|e| e.call_id() == id).map(ToolEvent::kind).collect();
        assert_eq!(kinds, ["queued", "started", "finished"]);
    }
    assert_eq!(events.iter().filter(|e| e.kind() == "finished").count(), 3);
    // Queued events come first, in call order.
    let queued: Vec<_> = events.iter().take(3).map(|e| (e.kind(), e.call_id())).collect();
    assert_eq!(queued, [("queued", "a"), ("queued", "b"), ("queued", "c")]);
    let mut last = 0;
    for event in events.iter().filter(|e| e.call_id() == "a") {
        assert!(event.timestamp_ms() >= last && event.timestamp_ms() > 1_600_000_000_000);
        last = event.timestamp_ms();
    }

    let line =
        serde_json::to_value(events.iter().find(|e| e.kind() == "finished" && e.call_id() == "a").unwrap())
            .unwrap();
    assert_eq!(line["type"], "finished");
    assert_eq!(line["status"], "completed");
    for field in ["call_id", "tool", "timestamp_ms", "duration_ms", "waited_ms"] {
        assert!(line.get(field).is_some(), "{field} in {line}");
    }
    let queued = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(
        queued,
        json!({
            "type": "queued", "call_id": "b", "tool": "echo", "timestamp_ms": queued["timestamp_ms"],
            "index": 1, "arguments": "{\"n\":1}"
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Truncation

#[tokio::test]
async fn long_outputs_are_truncated_once_with_the_full_text_in_the_store() {
    use tool_runtime::output_store::OutputStore;
    use tool_runtime::spec::{TruncationDirection, TruncationPolicy};
    use tool_runtime::truncate::TruncationLimits;

    let lines = |n: usize| (1..=n).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
    let long = tool("long", true, move |_ctx, _args| {
        let text = lines(50);
        async move { Ok(ToolOutput::text(text)) }
    });
    let raw =
        FnTool::new(spec("raw", true).with_truncation(TruncationPolicy::DISABLED), move |_ctx, _args| {
            let text = lines(50);
            async move { Ok(ToolOutput::text(text)) }
        });
    let tail = FnTool::new(
        spec("tail", true).with_truncation(TruncationPolicy {
            enabled: true,
            max_lines: Some(3),
            max_bytes: None,
            direction: Some(TruncationDirection::Tail),
        }),
        move |_ctx, _args| {
            let text = lines(50);
            async move { Ok(ToolOutput::text(text)) }
        },
    );
    let dir = std::env::temp_dir().join(format!("tool-runtime-dispatch-test-{}", std::process::id()));
    let store = Arc::new(OutputStore::open_dir(&dir).unwrap());
    let dispatcher = Dispatcher::builder(registry(vec![long, raw, tail, echo("short", true)]))
        .truncation_defaults(TruncationLimits::new(10, 51_200, TruncationDirection::Head))
        .output_store(store.clone())
        .build();
    let calls = vec![
        call("1", "long", "{}"),
        call("2", "raw", "{}"),
        call("3", "tail", "{}"),
        call("4", "short", "{}"),
    ];
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await.unwrap();

    let head = text(&results[0]);
    assert!(head.starts_with("line 1\nline 2\n"), "{head}");
    assert!(head.contains("line 10\n") && !head.contains("line 11\n"), "{head}");
    assert!(results[0].output.truncated);
    let info = &results[0].output.metadata["truncation"];
    assert_eq!((info["total_lines"].as_u64(), info["kept_lines"].as_u64()), (Some(50), Some(10)));
    let reference = info["output_ref"].as_str().expect("saved to the store");
    assert!(head.contains(reference), "the notice names the saved output: {head}");
    assert_eq!(store.read_to_string(reference).unwrap(), lines(50));

    assert_eq!(text(&results[1]), lines(50), "a tool that opted out is not truncated");
    assert!(!results[1].output.truncated);

    let tail = text(&results[2]);
    assert!(tail.contains("line 48\nline 49\nline 50") && !tail.contains("line 47\n"), "{tail}");

    assert_eq!(text(&results[3]), "{}");
    assert!(results[3].output.metadata.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

async fn report_limits(ctx: ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
    let limits = ctx.truncation();
    Ok(ToolOutput::text(format!("{} {} {:?}", limits.max_lines, limits.max_bytes, limits.direction)))
}

#[tokio::test]
async fn the_limits_in_force_reach_the_tool_through_its_context() {
    use tool_runtime::spec::{TruncationDirection, TruncationPolicy};
    use tool_runtime::truncate::TruncationLimits;

    let own_policy = TruncationPolicy {
        enabled: true,
        max_lines: Some(3),
        max_bytes: None,
        direction: Some(TruncationDirection::Middle),
    };
    let tools = || {
        vec![
            FnTool::new(spec("plain", true), report_limits),
            FnTool::new(spec("own", true).with_truncation(own_policy), report_limits),
        ]
    };
    let dispatcher = Dispatcher::builder(registry(tools()))
        .truncation_defaults(TruncationLimits::new(10, 500, TruncationDirection::Head))
        .build();
    let results = dispatcher
        .run_batch(vec![call("1", "plain", "{}"), call("2", "own", "{}")], CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(text(&results[0]), "10 500 Head");
    assert_eq!(text(&results[1]), "3 500 Middle");

    // Without a dispatcher, the tool's own settings still apply over the context's limits.
    let registry = registry(tools());
    let out = registry.call("own", "{}", ToolContext::builder("own").build()).await.unwrap();
    assert_eq!(out.text_content(), "3 47232 Middle");
    let ctx =
        ToolContext::builder("plain").truncation(TruncationLimits::new(7, 70, TruncationDirection::Tail));
    let out = registry.call("plain", "{}", ctx.build()).await.unwrap();
    assert_eq!(out.text_content(), "7 70 Tail");
}

#[tokio::test]
async fn the_notice_reads_back_as_the_store_installer_says() {
    use tool_runtime::output_store::OutputStore;
    use tool_runtime::spec::TruncationDirection;
    use tool_runtime::truncate::{ReadHint, TruncationLimits};

    let long = || tool("long", true, |_ctx, _args| async { Ok(ToolOutput::text("a\nb\nc\n")) });
    let limits = TruncationLimits::new(1, 100, TruncationDirection::Head);
    let dir = std::env::temp_dir().join(format!("tool-runtime-dispatch-hint-{}", std::process::id()));
    let hint = ReadHint::new("Saved as {ref}: show_output(\"{ref}\", from={offset}).").unwrap();
    let store = OutputStore::builder().dir(&dir).read_hint(hint).open().unwrap();
    let with_hint =
        Dispatcher::builder(registry(vec![long()])).truncation_defaults(limits).output_store(store).build();
    let results = with_hint.run_batch(vec![call("1", "long", "{}")], CancellationToken::new()).await.unwrap();
    let reference = results[0].output.metadata["truncation"]["output_ref"].as_str().unwrap().to_owned();
    assert_eq!(
        text(&results[0]),
        format!(
            "a\n\n[Output truncated: showing the first 1 of 3 lines (2 of 6 bytes). Saved as {reference}: \
             show_output(\"{reference}\", from=2).]"
        )
    );
    // A store installed without a hint: the notice names no tool.
    let plain = Dispatcher::builder(registry(vec![long()]))
        .truncation_defaults(limits)
        .output_store(OutputStore::open_dir(&dir).unwrap())
        .build();
    let results = plain.run_batch(vec![call("1", "long", "{}")], CancellationToken::new()).await.unwrap();
    let reference = results[0].output.metadata["truncation"]["output_ref"].as_str().unwrap().to_owned();
    assert_eq!(
        text(&results[0]),
        format!(
            "a\n\n[Output truncated: showing the first 1 of 3 lines (2 of 6 bytes). Full output saved as {reference}.]"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(start_paused = true)]
async fn a_hook_waiting_for_a_person_is_cut_short_by_cancel() {
    let asked = Arc::new(Notify::new());
    let signal = asked.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let count = runs.clone();
    let write = tool("write", false, move |_ctx, _args| {
        count.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text("wrote")) }
    });
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![write])).before_hook(BeforeFn(
        move |_call: tool_runtime::hooks::HookCall| {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                std::future::pending::<()>().await;
                Ok(BeforeDecision::Allow)
            }
        },
    )));
    let cancel = CancellationToken::new();
    let batch = tokio::spawn({
        let (dispatcher, cancel) = (dispatcher.clone(), cancel.clone());
        async move { dispatcher.run_batch(vec![call("1", "write", "{}")], cancel).await }
    });
    asked.notified().await;
    tokio::time::advance(Duration::from_secs(90)).await;
    cancel.cancel();
    let results = batch.await.unwrap().unwrap();
    assert_eq!(text(&results[0]), "The call to `write` was cancelled after 1m30s, before it started.");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(events.kinds_of("1"), ["queued", "finished"]);
    assert_eq!(events.status_of("1"), Some(CallStatus::Cancelled));
}

// ---------------------------------------------------------------------------------------------
// Grace after a stop: a tool that watches its token hands back what it has.

/// Reports "partial work" as soon as its token is cancelled, or runs forever.
fn cooperative(name: &str, started: Arc<Notify>) -> FnTool {
    tool(name, false, move |ctx, _args| {
        let started = started.clone();
        async move {
            started.notify_one();
            ctx.cancellation_token().cancelled().await;
            Ok(ToolOutput::text("partial work"))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_cooperative_tool_keeps_its_partial_output() {
    let started = Arc::new(Notify::new());
    let (dispatcher, recorder) =
        with_events(Dispatcher::builder(registry(vec![cooperative("work", started.clone())])));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { dispatcher.run(call("c1", "work", "{}"), cancel).await }
    });
    started.notified().await;
    cancel.cancel();
    let result = run.await.unwrap();
    assert!(result.output.is_error);
    let text = text(&result);
    assert!(text.starts_with("partial work\n[The call to `work` was cancelled after "), "{text}");
    let statuses: Vec<_> = recorder.snapshot().iter().filter_map(ToolEvent::status).collect();
    assert_eq!(statuses, [CallStatus::Cancelled]);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_cooperative_tool_keeps_its_partial_output() {
    let started = Arc::new(Notify::new());
    let (dispatcher, recorder) = with_events(
        Dispatcher::builder(registry(vec![cooperative("work", started)]))
            .default_timeout(Duration::from_secs(5)),
    );
    let result = dispatcher.run(call("c1", "work", "{}"), CancellationToken::new()).await;
    assert_eq!(
        text(&result),
        "partial work\n[The call to `work` timed out after 5s and was stopped. Try a smaller task or narrower arguments.]"
    );
    let statuses: Vec<_> = recorder.snapshot().iter().filter_map(ToolEvent::status).collect();
    assert_eq!(statuses, [CallStatus::TimedOut]);
}

#[tokio::test(start_paused = true)]
async fn a_tool_ignoring_its_token_is_dropped_after_the_grace() {
    let never = tool("never", false, |_ctx, _args| async move {
        std::future::pending::<()>().await;
        Ok(ToolOutput::text("unreachable"))
    });
    let dispatcher = Dispatcher::builder(registry(vec![never]))
        .default_timeout(Duration::from_secs(1))
        .cancel_grace(Duration::from_millis(100))
        .build();
    let result = dispatcher.run(call("c1", "never", "{}"), CancellationToken::new()).await;
    assert_eq!(
        text(&result),
        "The call to `never` timed out after 1s and was stopped. Try a smaller task or narrower arguments."
    );
}

/// The call's own token, whenever the tool takes it: stopped with the call (its time limit, a
/// dropped caller), never the caller's token, and left alone once the call ended.
#[tokio::test(start_paused = true)]
async fn a_calls_token_is_stopped_with_the_call_whenever_the_tool_takes_it() {
    // Taken only after the time limit fired, during the grace: already cancelled.
    let late = tool("late", false, |ctx, _args| async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let taken_late = ctx.cancellation_token().is_cancelled();
        Ok(ToolOutput::text(format!("taken late, cancelled: {taken_late}")))
    });
    // Hands its token to work of its own that outlives the call.
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let seen = tokens.clone();
    let spawner = tool("spawner", false, move |ctx, args| {
        seen.lock().unwrap().push(ctx.cancellation_token().clone());
        async move {
            if key(&args) == "wait" {
                std::future::pending::<()>().await;
            }
            Ok(ToolOutput::text("done"))
        }
    });
    let dispatcher = Dispatcher::builder(registry(vec![late, spawner]))
        .default_timeout(Duration::from_secs(1))
        .cancel_grace(Duration::from_secs(5))
        .build();
    let caller = CancellationToken::new();

    let result = dispatcher.run(call("1", "late", "{}"), caller.clone()).await;
    assert!(
        text(&result).starts_with("taken late, cancelled: true\n[The call to `late` timed out"),
        "{}",
        text(&result)
    );
    assert!(!caller.is_cancelled(), "a call's time limit stopped its caller's token");

    let result = dispatcher.run(call("2", "spawner", r#"{"key":"now"}"#), caller.clone()).await;
    assert_eq!(text(&result), "done");
    let finished = tokens.lock().unwrap().pop().unwrap();
    assert!(!finished.is_cancelled(), "a call that ended cancelled the token it gave away");

    let running = dispatcher.run(call("3", "spawner", r#"{"key":"wait"}"#), caller.clone());
    let dropped = tokio::time::timeout(Duration::from_millis(10), running).await;
    assert!(dropped.is_err(), "the waiting call finished");
    let stopped = tokens.lock().unwrap().pop().unwrap();
    assert!(stopped.is_cancelled(), "dropping a running call left its token running");
    assert!(!caller.is_cancelled());

    // The call's token stays under the caller's.
    caller.cancel();
    assert!(finished.is_cancelled());
}

/// Sleeps 10 s whatever happens to its token.
fn deaf(name: &str) -> FnTool {
    tool(name, false, |_ctx, _args| async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(ToolOutput::text("finished after 10 s"))
    })
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_returns_within_the_short_default_grace() {
    let (dispatcher, events) = with_events(Dispatcher::builder(registry(vec![deaf("deaf")])));
    let cancel = CancellationToken::new();
    let start = tokio::time::Instant::now();
    let batch = tokio::spawn({
        let (dispatcher, cancel) = (dispatcher.clone(), cancel.clone());
        async move { dispatcher.run_batch(vec![call("1", "deaf", "{}")], cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    let results = batch.await.unwrap().unwrap();
    // Cancelled at 0.5 s, dropped 200 ms later: not at 2.5 s, not at 10 s.
    assert_eq!(start.elapsed(), Duration::from_millis(700));
    assert_eq!(text(&results[0]), "The call to `deaf` was cancelled after 500ms.");
    assert_eq!(events.status_of("1"), Some(CallStatus::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call_returns_within_the_grace_and_names_its_limit() {
    let limited =
        FnTool::new(spec("limited", false).with_timeout(Duration::from_millis(500)), |_ctx, _args| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(ToolOutput::text("finished after 10 s"))
        });
    let dispatcher = Dispatcher::builder(registry(vec![limited])).build();
    let start = tokio::time::Instant::now();
    let result = dispatcher.run(call("1", "limited", "{}"), CancellationToken::new()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(700));
    assert_eq!(
        text(&result),
        "The call to `limited` timed out after 500ms and was stopped. Try a smaller task or narrower arguments."
    );

    let quick =
        Dispatcher::builder(registry(vec![deaf("deaf")])).cancel_grace(Duration::from_millis(50)).build();
    let start = tokio::time::Instant::now();
    let options = CallOptions::with_timeout(Duration::from_millis(500));
    let result = quick.run_with(call("2", "deaf", "{}"), options, CancellationToken::new()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(550), "the grace is configurable");
    assert!(text(&result).starts_with("The call to `deaf` timed out after 500ms"));
}

#[tokio::test(start_paused = true)]
async fn a_cooperative_tool_hands_back_its_output_at_once() {
    let started = Arc::new(Notify::new());
    let dispatcher = Dispatcher::builder(registry(vec![cooperative("work", started)])).build();
    let start = tokio::time::Instant::now();
    let options = CallOptions::with_timeout(Duration::from_millis(500));
    let result = dispatcher.run_with(call("1", "work", "{}"), options, CancellationToken::new()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(500), "no wait past the tool's answer");
    assert!(text(&result).starts_with("partial work\n[The call to `work` timed out after 500ms"));
}

#[tokio::test(start_paused = true)]
async fn the_context_carries_the_time_limit_the_deadline_comes_from() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let probe = tool("probe", true, move |ctx, _args| {
        log.lock().unwrap().push((ctx.time_limit(), ctx.deadline().is_some()));
        async { Ok(ToolOutput::text("ok")) }
    });
    let dispatcher = Dispatcher::builder(registry(vec![probe])).build();
    dispatcher.run(call("1", "probe", "{}"), CancellationToken::new()).await;
    let options = CallOptions::with_timeout(Duration::from_millis(1500));
    dispatcher.run_with(call("2", "probe", "{}"), options, CancellationToken::new()).await;
    assert_eq!(*seen.lock().unwrap(), [(None, false), (Some(Duration::from_millis(1500)), true)]);
}
