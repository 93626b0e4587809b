//! Soak: 10,000 calls dispatched in batches, with random panics, timeouts, cancellations (some
//! tools hand back partial output when stopped, others never answer), errors, invalid
//! arguments, unknown tools, `bash` commands that start a grandchild, and `bash` commands that
//! go on in the background as sessions (stopped with `bash_stop` after their batch, and some
//! left running, those of the last fifth of the calls, until the dispatcher, with its session state, is dropped at the end).
//!
//! Checks, batch after batch: every call gets exactly one result (in order, with its own id) and
//! exactly one `finished` event, last among its events, whose status agrees with the result; no
//! tool future is alive once its batch has returned; every task the dispatcher spawned is gone;
//! no process of a timed-out or cancelled command survives. Prints resident memory along the
//! way, and fails if it grows by more than 32 MiB after the warm-up.
//!
//! Ignored by default (about a minute):
//!
//! ```text
//! cargo test --release -p tool-tests --test soak -- --ignored --nocapture
//! ```
//!
//! `SOAK_CALLS` (default 10000) and `SOAK_SEED` change the run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use tool_runtime::{
    CallOptions, CancellationToken, Dispatcher, ErrorKind, Progress, Registry, ToolCall, ToolContext,
    ToolError, ToolResult,
    events::{CallStatus, ToolEvent},
    tool,
};
use tool_tests::TempDir;
use tools_std::Workspace;
use tools_std::session::Sessions;

/// Tool futures alive right now: incremented when a tool starts, decremented when its future is
/// dropped, whether it returned, panicked, timed out or was cancelled.
static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Live;

impl Live {
    fn new() -> Self {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Live
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a `work` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Behaviour {
    Succeed,
    Fail,
    Panic,
    Hang,
    /// Waits until its call is stopped, then hands back partial output.
    Partial,
}

async fn behave(ctx: &ToolContext, n: u64, behaviour: Behaviour, delay_us: u64) -> Result<String, ToolError> {
    let _live = Live::new();
    if n.is_multiple_of(4) {
        ctx.progress(Progress::message(format!("call {n} working")));
    }
    if delay_us == 0 {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
    }
    match behaviour {
        Behaviour::Succeed => Ok(format!("ok {n}")),
        Behaviour::Fail => Err(ToolError::execution(format!("call {n} failed on purpose"))),
        Behaviour::Panic => panic!("call {n} panicked on purpose"),
        Behaviour::Hang => std::future::pending().await,
        Behaviour::Partial => {
            ctx.cancellation_token().cancelled().await;
            Ok(format!("partial {n}"))
        }
    }
}

/// Does what it is told, alongside other calls.
#[tool(undocumented, parallel)]
async fn work(ctx: &ToolContext, n: u64, behaviour: Behaviour, delay_us: u64) -> Result<String, ToolError> {
    behave(ctx, n, behaviour, delay_us).await
}

/// Does what it is told, alone.
#[tool(undocumented)]
async fn work_alone(
    ctx: &ToolContext,
    n: u64,
    behaviour: Behaviour,
    delay_us: u64,
) -> Result<String, ToolError> {
    behave(ctx, n, behaviour, delay_us).await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Succeed,
    SucceedAlone,
    Fail,
    Panic,
    /// Hangs, with a per-call time limit.
    TimeOut,
    /// Hangs until the batch is cancelled (only in cancelled batches).
    Hang,
    /// Hands back partial output when its per-call time limit stops it.
    TimeOutPartial,
    /// Hands back partial output when the batch is cancelled (only in cancelled batches).
    HangPartial,
    InvalidArguments,
    UnknownTool,
    BashEcho,
    /// `bash` starting a grandchild and sleeping, with a per-call time limit.
    BashTimeOut,
    /// `bash` starting a grandchild and sleeping, until the batch is cancelled.
    BashHang,
    /// `bash` starting a grandchild in the background, as a session.
    BashBackground,
}

/// xorshift64*, so a failing run can be repeated with its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn kind(&mut self, cancelled_batch: bool) -> Kind {
        let table: [(u64, Kind); 14] = [
            (30, Kind::Succeed),
            (8, Kind::SucceedAlone),
            (10, Kind::Fail),
            (8, Kind::Panic),
            (6, Kind::TimeOut),
            (4, Kind::Hang),
            (3, Kind::TimeOutPartial),
            (2, Kind::HangPartial),
            (6, Kind::InvalidArguments),
            (3, Kind::UnknownTool),
            (3, Kind::BashEcho),
            (1, Kind::BashTimeOut),
            (1, Kind::BashHang),
            (1, Kind::BashBackground),
        ];
        let total: u64 = table.iter().map(|(w, _)| w).sum();
        let mut pick = self.below(total);
        for (weight, kind) in table {
            if pick < weight {
                return match kind {
                    Kind::Hang if !cancelled_batch => Kind::TimeOut,
                    Kind::HangPartial if !cancelled_batch => Kind::TimeOutPartial,
                    Kind::BashHang if !cancelled_batch => Kind::BashTimeOut,
                    kind => kind,
                };
            }
            pick -= weight;
        }
        unreachable!()
    }
}

fn marker() -> String {
    format!("soak-child-{}", std::process::id())
}

/// One call of `kind`, its options, and the statuses its finished event may have.
fn make_call(n: u64, kind: Kind, rng: &mut Rng) -> (ToolCall, CallOptions) {
    let id = format!("call_{n}");
    let delay_us = if rng.below(3) == 0 { 0 } else { rng.below(2000) };
    let work = |tool: &str, behaviour: &str| ToolCall {
        id: id.clone(),
        name: tool.to_owned(),
        arguments: json!({"n": n, "behaviour": behaviour, "delay_us": delay_us}).to_string().into(),
    };
    let marker = marker();
    let bash = |command: String| ToolCall {
        id: id.clone(),
        name: "bash".to_owned(),
        arguments: json!({"command": command}).to_string().into(),
    };
    let sleeper = format!("exec -a {marker} sleep 30 & exec -a {marker} sleep 30 # {n}");
    let none = CallOptions::default();
    match kind {
        Kind::Succeed => (work("work", "succeed"), none),
        Kind::SucceedAlone => (work("work_alone", "succeed"), none),
        Kind::Fail => (work(if n.is_multiple_of(2) { "work" } else { "work_alone" }, "fail"), none),
        Kind::Panic => (work(if n.is_multiple_of(2) { "work" } else { "work_alone" }, "panic"), none),
        Kind::TimeOut => (
            work(if n.is_multiple_of(3) { "work_alone" } else { "work" }, "hang"),
            CallOptions::with_timeout(Duration::from_micros(500 + rng.below(10_000))),
        ),
        Kind::Hang => (work("work", "hang"), none),
        Kind::TimeOutPartial => (
            work(if n.is_multiple_of(3) { "work_alone" } else { "work" }, "partial"),
            CallOptions::with_timeout(Duration::from_micros(500 + rng.below(10_000))),
        ),
        Kind::HangPartial => (work("work", "partial"), none),
        Kind::InvalidArguments => (
            ToolCall {
                id,
                name: "work".to_owned(),
                arguments: json!({"n": -1, "behaviour": "dance", "extra": n}).to_string().into(),
            },
            none,
        ),
        Kind::UnknownTool => {
            (ToolCall { id, name: "no_such_tool".to_owned(), arguments: json!({"n": n}).into() }, none)
        }
        Kind::BashEcho => (bash(format!("echo ok {n}")), none),
        // bash and the dispatcher both stop it at the 300 ms limit; either may report it.
        Kind::BashTimeOut => (bash(sleeper), CallOptions::with_timeout(Duration::from_millis(300))),
        Kind::BashHang => (bash(sleeper), none),
        Kind::BashBackground => (
            ToolCall {
                id: id.clone(),
                name: "bash".to_owned(),
                arguments: json!({"command": format!("echo bg {n}; exec -a {marker} sleep 30 & wait"), "background": true})
                    .to_string()
                    .into(),
            },
            none,
        ),
    }
}

fn allowed(kind: Kind, cancelled_batch: bool) -> &'static [CallStatus] {
    use CallStatus::*;
    match (kind, cancelled_batch) {
        (Kind::Succeed | Kind::SucceedAlone | Kind::BashEcho | Kind::BashBackground, false) => &[Completed],
        (Kind::Fail | Kind::Panic | Kind::InvalidArguments | Kind::UnknownTool, false) => &[Failed],
        (Kind::TimeOut | Kind::TimeOutPartial, false) => &[TimedOut],
        // bash reports its own stop as an error result, unless the dispatcher's limit comes first.
        (Kind::BashTimeOut, false) => &[Failed, TimedOut],
        (Kind::Hang | Kind::HangPartial | Kind::BashHang, false) => unreachable!("only in cancelled batches"),
        (Kind::Succeed | Kind::SucceedAlone, true) => &[Completed, Cancelled],
        (Kind::Fail | Kind::Panic | Kind::InvalidArguments | Kind::UnknownTool, true) => &[Failed, Cancelled],
        (Kind::TimeOut | Kind::TimeOutPartial, true) => &[TimedOut, Cancelled],
        (Kind::Hang | Kind::HangPartial, true) => &[Cancelled],
        (Kind::BashEcho | Kind::BashTimeOut | Kind::BashHang | Kind::BashBackground, true) => {
            &[Completed, Failed, TimedOut, Cancelled]
        }
    }
}

/// Checks one call's result against its kind and its events.
fn check_call(kind: Kind, cancelled_batch: bool, call: &ToolCall, result: &ToolResult, events: &[ToolEvent]) {
    let context = || format!("{} ({kind:?}, cancelled batch: {cancelled_batch}): {events:?}", call.id);
    assert_eq!(result.call_id, call.id, "results come back in the order of the calls");
    assert_eq!(result.tool, call.name);
    let finished: Vec<&ToolEvent> = events.iter().filter(|e| e.kind() == "finished").collect();
    assert_eq!(finished.len(), 1, "exactly one finished event: {}", context());
    assert_eq!(events.last().map(ToolEvent::kind), Some("finished"), "finished comes last: {}", context());
    assert_eq!(events.iter().filter(|e| e.kind() == "queued").count(), 1, "{}", context());
    assert_eq!(events.first().map(ToolEvent::kind), Some("queued"), "{}", context());
    assert!(events.iter().filter(|e| e.kind() == "started").count() <= 1, "{}", context());
    let status = finished[0].status().expect("a finished event has a status");
    assert_eq!(status == CallStatus::Completed, !result.output.is_error, "{}", context());
    assert!(allowed(kind, cancelled_batch).contains(&status), "status {status:?}: {}", context());
    let text = result.output.text_content();
    match (kind, status) {
        (Kind::Succeed | Kind::SucceedAlone, CallStatus::Completed) => {
            assert_eq!(text, format!("ok {}", &call.id["call_".len()..]))
        }
        (Kind::Panic, CallStatus::Failed) => assert!(text.contains("crashed"), "{text}"),
        (Kind::InvalidArguments, CallStatus::Failed) => {
            assert_eq!(result.output.metadata["error_kind"], ErrorKind::InvalidArguments.as_str())
        }
        (Kind::UnknownTool, CallStatus::Failed) => {
            assert_eq!(result.output.metadata["error_kind"], ErrorKind::NotFound.as_str())
        }
        (Kind::TimeOutPartial | Kind::HangPartial, CallStatus::TimedOut | CallStatus::Cancelled)
            if events.iter().any(|e| e.kind() == "started") =>
        {
            let number = &call.id["call_".len()..];
            assert!(
                text.starts_with(&format!("partial {number}")),
                "the partial output is the result: {text}"
            );
            let said = if status == CallStatus::TimedOut { "timed out" } else { "was cancelled" };
            assert!(text.contains(said), "the model is told the call was stopped: {text}");
        }
        (Kind::BashTimeOut, CallStatus::Failed) => assert!(text.contains("[timed out after"), "{text}"),
        (Kind::BashBackground, CallStatus::Completed) => {
            assert!(text.contains(" is still running ("), "{text}");
            assert_eq!(result.output.metadata["running"], json!(true), "{text}");
        }
        (Kind::BashEcho, CallStatus::Completed) => {
            assert_eq!(text.trim_end(), format!("ok {}", &call.id["call_".len()..]))
        }
        _ => {}
    }
}

/// Stops every background session of the dispatcher's session state; returns how many.
async fn stop_sessions(dispatcher: &Dispatcher) -> usize {
    let call = |name: &str, arguments: serde_json::Value| ToolCall {
        id: format!("{name}_{}", arguments),
        name: name.to_owned(),
        arguments: arguments.to_string().into(),
    };
    let listed = dispatcher
        .run_with(call("bash_list", json!({})), CallOptions::default(), CancellationToken::new())
        .await;
    let ids: Vec<u64> = listed.output.metadata["sessions"]
        .as_array()
        .expect("bash_list lists the sessions")
        .iter()
        .filter_map(|s| s["session_id"].as_u64())
        .collect();
    for id in &ids {
        let stopped = dispatcher
            .run_with(
                call("bash_stop", json!({"session_id": id, "grace_ms": 0})),
                CallOptions::default(),
                CancellationToken::new(),
            )
            .await;
        assert!(
            stopped.output.text_content().contains("[stopped with bash_stop"),
            "{}",
            stopped.output.text_content()
        );
    }
    ids.len()
}

/// Pids of live processes whose command line carries `marker` (zombies have none).
fn marked_processes(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && cmdline.windows(marker.len()).any(|w| w == marker.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the field is there")
}

/// Polls `probe` until it returns 0, for at most `limit`; returns the first and the last value
/// and how long it took.
async fn settle(limit: Duration, mut probe: impl FnMut() -> usize) -> (usize, usize, Duration) {
    let first = probe();
    let start = Instant::now();
    let mut last = first;
    while last != 0 && start.elapsed() < limit {
        tokio::task::yield_now().await;
        last = probe();
    }
    (first, last, start.elapsed())
}

#[derive(Default)]
struct Tally {
    statuses: HashMap<CallStatus, usize>,
    batches: usize,
    cancelled_batches: usize,
    bash_calls: usize,
    sessions_started: usize,
    sessions_stopped: usize,
    partial_results: usize,
    tasks_seen_after_batch: usize,
    max_task_release_wait: Duration,
    max_child_exit_wait: Duration,
    children_seen_after_batch: usize,
    max_children_after_batch: usize,
    events: usize,
}

#[test]
#[ignore = "soak test, about a minute: cargo test --release -p tool-tests --test soak -- --ignored --nocapture"]
fn soak() {
    let calls: u64 = std::env::var("SOAK_CALLS").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed: u64 = std::env::var("SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_50A4);
    eprintln!("soak: {calls} calls, seed {seed}");

    let dir = TempDir::new("soak");
    let registry = Registry::builder()
        .tool(WorkTool)
        .tool(WorkAloneTool)
        .tools(tools_std::all())
        .build()
        .expect("registry");
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<ToolEvent>();
    let dispatcher = Dispatcher::builder(registry)
        .dependency(Workspace::new(dir.path()).expect("workspace"))
        .events(events_tx)
        // Long enough for a tool that watches its token to answer, short enough for hanging
        // tools not to dominate the run.
        .cancel_grace(Duration::from_millis(20))
        .build();

    // The panics are on purpose: keep them out of the output.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if !message.ends_with("panicked on purpose") {
            default_hook(info);
        }
    }));

    // The process check must be able to see a command's processes.
    let marker = marker();
    let mut probe = std::process::Command::new("bash")
        .args(["-c", &format!("exec -a {marker} sleep 30")])
        .spawn()
        .expect("bash");
    let deadline = Instant::now() + Duration::from_secs(5);
    // While bash execs, the process's command line is briefly empty: wait for the exec'd one.
    while marked_processes(&marker) != [probe.id()] && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(marked_processes(&marker), vec![probe.id()], "the process check finds a marked process");
    probe.kill().unwrap();
    probe.wait().unwrap();
    assert!(marked_processes(&marker).is_empty());

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let metrics = runtime.metrics();
    let started = Instant::now();
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    let mut rss_samples: Vec<(u64, u64)> = Vec::new();
    let mut rss_after_warmup = None;
    let mut n = 0u64;
    let mut next_sample = 0u64;

    runtime.block_on(async {
        assert_eq!(metrics.num_alive_tasks(), 0);
        while n < calls {
            let size = (1 + rng.below(32)).min(calls - n);
            let cancel_after = (rng.below(5) == 0).then(|| Duration::from_micros(rng.below(30_000)));
            let cancelled_batch = cancel_after.is_some();
            let mut batch = Vec::with_capacity(size as usize);
            for _ in 0..size {
                let kind = rng.kind(cancelled_batch);
                let (call, options) = make_call(n, kind, &mut rng);
                tally.bash_calls += usize::from(call.name == "bash");
                batch.push((kind, call, options));
                n += 1;
            }
            let has_bash = batch.iter().any(|(_, call, _)| call.name == "bash");
            let late = n >= calls.saturating_sub(calls / 5);
            let single = rng.below(4) == 0;

            let token = CancellationToken::new();
            // Cancels the batch after a while, without a task of its own, so that every task
            // alive after the batch is one the dispatcher spawned.
            let canceller = async {
                if let Some(after) = cancel_after {
                    tokio::time::sleep(after).await;
                    token.cancel();
                }
                std::future::pending::<()>().await
            };
            let run = async {
                if size == 1 && !cancelled_batch && single {
                    let (_, call, options) = &batch[0];
                    vec![dispatcher.run_with(call.clone(), options.clone(), token.clone()).await]
                } else {
                    let calls = batch.iter().map(|(_, call, options)| (call.clone(), options.clone()));
                    dispatcher.run_batch_with(calls, token.clone()).await.expect("no fatal error")
                }
            };
            let results = tokio::select! {
                results = run => results,
                () = canceller => unreachable!("the canceller never ends"),
            };

            assert_eq!(LIVE.load(Ordering::SeqCst), 0, "a tool future outlived its batch");
            assert_eq!(results.len(), batch.len(), "one result per call");
            let mut by_call: HashMap<String, Vec<ToolEvent>> = HashMap::new();
            while let Ok(event) = events_rx.try_recv() {
                tally.events += 1;
                by_call.entry(event.call_id().to_owned()).or_default().push(event);
            }
            assert_eq!(by_call.len(), batch.len(), "events name only this batch's calls");
            for ((kind, call, _), result) in batch.iter().zip(&results) {
                let events = by_call.remove(&call.id).unwrap_or_default();
                check_call(*kind, cancelled_batch, call, result, &events);
                let status = events.last().and_then(ToolEvent::status).expect("checked");
                *tally.statuses.entry(status).or_default() += 1;
                tally.partial_results += usize::from(result.output.text_content().starts_with("partial "));
                tally.sessions_started +=
                    usize::from(result.output.metadata.get("running") == Some(&json!(true)));
            }
            // Sessions go on past their batch and are stopped here; the process and task checks
            // below then prove that stopping one leaves nothing behind. The last batches' are
            // left running for the dispatcher's drop.
            if n < calls.saturating_sub(calls / 5) {
                tally.sessions_stopped += stop_sessions(&dispatcher).await;
                while events_rx.try_recv().is_ok() {}
            }

            // A session left running keeps the task that reads its output.
            let sessions = || dispatcher.session().get::<Sessions>().map_or(0, |s| s.running());
            let (tasks_first, tasks_last, waited) =
                settle(Duration::from_secs(5), || metrics.num_alive_tasks().saturating_sub(sessions())).await;
            assert_eq!(tasks_last, 0, "a task spawned for a call is still alive");
            tally.tasks_seen_after_batch += usize::from(tasks_first > 0);
            tally.max_task_release_wait = tally.max_task_release_wait.max(waited);
            if has_bash && !late {
                let (first, last, waited) =
                    settle(Duration::from_secs(5), || marked_processes(&marker).len()).await;
                tally.max_child_exit_wait = tally.max_child_exit_wait.max(waited);
                assert_eq!(
                    last,
                    0,
                    "processes of a stopped command survive: {:?}",
                    marked_processes(&marker)
                );
                tally.children_seen_after_batch += usize::from(first > 0);
                tally.max_children_after_batch = tally.max_children_after_batch.max(first);
            }

            tally.batches += 1;
            tally.cancelled_batches += usize::from(cancelled_batch);
            if n >= next_sample {
                let rss = status_kib("VmRSS:");
                rss_samples.push((n, rss));
                if rss_after_warmup.is_none() && n >= calls / 5 {
                    rss_after_warmup = Some(rss);
                }
                next_sample += calls / 10;
            }
        }
    });
    let rss_end = status_kib("VmRSS:");
    rss_samples.push((n, rss_end));

    // The sessions of the last batches are still running: dropping the dispatcher (and its
    // session state) kills them, with every process they started.
    let left_running = dispatcher.session().get::<Sessions>().map_or(0, |s| s.running());
    drop(dispatcher);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marked_processes(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(marked_processes(&marker), Vec::<u32>::new(), "a session outlived its dispatcher");
    drop(runtime);
    eprintln!(
        "soak: {} background sessions started, {} stopped with bash_stop after their batch, {left_running} left running and killed with the dispatcher",
        tally.sessions_started, tally.sessions_stopped
    );

    eprintln!(
        "soak: {n} calls in {} batches ({} cancelled) in {:.1} s",
        tally.batches,
        tally.cancelled_batches,
        started.elapsed().as_secs_f64()
    );
    let mut statuses: Vec<_> = tally.statuses.iter().collect();
    statuses.sort_by_key(|(status, _)| status.as_str());
    eprintln!(
        "soak: finished statuses {statuses:?}; {} events; {} bash calls; {} stopped calls handed back partial output",
        tally.events, tally.bash_calls, tally.partial_results
    );
    eprintln!(
        "soak: batches after which a task the dispatcher spawned was still being released: {} (all gone after at most {:?})",
        tally.tasks_seen_after_batch, tally.max_task_release_wait
    );
    eprintln!(
        "soak: batches with a command's process still exiting when the batch returned: {} (at most {} processes; all gone after at most {:?})",
        tally.children_seen_after_batch, tally.max_children_after_batch, tally.max_child_exit_wait
    );
    let samples: Vec<String> =
        rss_samples.iter().map(|(n, kib)| format!("{n}: {:.1}", *kib as f64 / 1024.0)).collect();
    eprintln!("soak: resident memory (MiB) after N calls: {}", samples.join(", "));
    eprintln!("soak: peak resident memory {:.1} MiB", status_kib("VmHWM:") as f64 / 1024.0);

    let total: usize = tally.statuses.values().sum();
    assert_eq!(total as u64, calls, "every call was counted once");
    assert!(tally.partial_results > 0, "no stopped call handed back partial output");
    for status in [CallStatus::Completed, CallStatus::Failed, CallStatus::TimedOut, CallStatus::Cancelled] {
        assert!(tally.statuses.get(&status).is_some_and(|&k| k > 0), "no call ended {status:?}");
    }
    if let Some(warm) = rss_after_warmup {
        let growth = rss_end.saturating_sub(warm);
        assert!(growth < 32 * 1024, "resident memory grew by {} KiB after the warm-up", growth);
    }
}
