use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Barrier;
use tool_runtime::code::{CodeTool, Limits, WorkerCommand};
use tool_runtime::events::{EventFn, ToolEvent};
use tool_runtime::permissions::{Policy, PolicyExt, Rules, Settings};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolResult, ToolSpec, spec::FnTool,
};
use tool_tests::{TempDir, runs};
use tools_std::Workspace;

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every event of a dispatcher, in the order they came.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<ToolEvent>>>);

impl Events {
    fn sink(&self) -> EventFn<impl Fn(ToolEvent) + Send + Sync + 'static> {
        let events = self.0.clone();
        EventFn(move |event| events.lock().unwrap().push(event))
    }

    fn all(&self) -> Vec<ToolEvent> {
        self.0.lock().unwrap().clone()
    }

    /// `started`/`finished` of the calls of `tool`, as (kind, call id), in order.
    fn lifecycle(&self, tool: &str) -> Vec<(&'static str, String)> {
        self.all()
            .into_iter()
            .filter(|event| event.tool() == tool)
            .filter_map(|event| match event {
                ToolEvent::Started { call_id, .. } => Some(("started", call_id)),
                ToolEvent::Finished { call_id, .. } => Some(("finished", call_id)),
                _ => None,
            })
            .collect()
    }
}

/// The standard tools over a workspace at `root`, the script tool beside them.
fn std_registry(limits: Limits) -> Registry {
    let tools = Registry::builder().tools(tools_std::all()).build().unwrap();
    code_tool(tools).with_limits(limits).beside_its_tools().unwrap()
}

async fn script(dispatcher: &Dispatcher, source: &str) -> ToolResult {
    run_script(dispatcher, source, CancellationToken::new()).await
}

async fn run_script(dispatcher: &Dispatcher, source: &str, cancel: CancellationToken) -> ToolResult {
    let call = ToolCall::new("call-1", "code", json!({ "script": source }));
    dispatcher.run(call, cancel).await
}

fn text(result: &ToolResult) -> String {
    result.output.text_content()
}

/// The script tool over `tools`, its interpreters on threads of this process or, for the tests
/// of `code_mode_in_a_worker`, each in a process of the `code-worker` program.
fn code_tool(tools: impl Into<Arc<Registry>>) -> CodeTool {
    let tool = CodeTool::new(tools);
    match crate::IN_A_WORKER {
        true => tool.in_worker(WorkerCommand::new(env!("CARGO_BIN_EXE_code-worker"))),
        false => tool,
    }
}

#[tokio::test]
async fn a_script_greps_then_reads_each_match_and_reports_only_the_counts() {
    let dir = TempDir::new("code-grep-read");
    let root = dir.path();
    write(root.join("src/a.rs"), "fn needle() {}\nfn other() { needle() }\n");
    write(root.join("src/b.rs"), "// needle here\n");
    write(root.join("notes.txt"), "nothing to see\n");
    let events = Events::default();
    let dispatcher = Dispatcher::builder(std_registry(Limits::default()))
        .dependency(Workspace::new(root).unwrap())
        .events(events.sink())
        .build();
    let result = script(
        &dispatcher,
        r#"
        const found = await tools.grep({ pattern: "needle", output_mode: "files_with_matches" });
        const files = found.text.split("\n").map((line) => line.trim()).filter((line) => line.endsWith(".rs")).sort();
        for (const path of files) {
            const read = await tools.read({ path });
            const count = read.text.split("\n").filter((line) => line.includes("needle")).length;
            console.log(`${path}: ${count}`);
        }
        `${files.length} files`
        "#,
    )
    .await;
    assert!(!result.output.is_error, "{}", text(&result));
    assert_eq!(text(&result), "src/a.rs: 2\nsrc/b.rs: 1\n2 files");
    assert_eq!(result.output.metadata["nested_calls"], json!(3));
    // Each nested call is an ordinary call of the dispatcher, under the script call's id.
    let queued: Vec<(String, String)> = events
        .all()
        .into_iter()
        .filter_map(|event| match event {
            ToolEvent::Queued { call_id, tool, .. } => Some((call_id, tool)),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> =
        [("call-1", "code"), ("call-1.1", "grep"), ("call-1.2", "read"), ("call-1.3", "read")]
            .iter()
            .map(|(id, tool)| (id.to_string(), tool.to_string()))
            .collect();
    assert_eq!(queued, expected);
}

#[tokio::test]
async fn a_call_refused_by_a_permission_rule_is_a_tool_error_the_script_catches() {
    let dir = TempDir::new("code-rule");
    let root = dir.path();
    write(root.join("secrets/key"), "hunter2");
    write(root.join("open.txt"), "hello");
    let rules = Rules::builder(root).catalog(tools_std::permission_catalog()).deny("Read(./secrets/**)");
    let dispatcher = Dispatcher::builder(std_registry(Limits::default()))
        .dependency(Workspace::new(root).unwrap())
        .policy(Policy::new(rules.build().unwrap()))
        .build();
    let result = script(
        &dispatcher,
        r#"
        for (const path of ["secrets/key", "open.txt"]) {
            try {
                const read = await tools.read({ path });
                console.log("read", path, read.text.includes("hello"));
            } catch (e) {
                console.log(e.name, e.tool, e.kind, e instanceof ToolError, e.message);
            }
        }
        "#,
    )
    .await;
    let out = text(&result);
    assert!(!result.output.is_error, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ToolError read permission_denied true "), "{out}");
    assert!(lines[0].contains("refused by the rule `deny Read(./secrets/**)`"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert_eq!(lines[1], "read open.txt true");
}

#[tokio::test]
async fn a_call_refused_by_a_pre_tool_use_hook_is_a_tool_error_the_script_catches() {
    let dir = TempDir::new("code-hook");
    let root = dir.path();
    write(root.join("file.txt"), "content");
    let hook = root.join("hook.sh");
    std::fs::write(&hook, "#!/bin/bash\necho 'no reading today' >&2; exit 2\n").unwrap();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "read", "hooks": [
        {"type": "command", "command": format!("bash {}", hook.display()), "timeout": 10}
    ]}]}})
    .to_string();
    let loaded = Settings::parse(&settings, "settings.json", Rules::builder(root)).unwrap();
    let dispatcher = Dispatcher::builder(std_registry(Limits::default()))
        .dependency(Workspace::new(root).unwrap())
        .policy(Policy::from_settings(loaded))
        .build();
    let result = script(
        &dispatcher,
        r#"
        let message = "not refused";
        try { await tools.read({ path: "file.txt" }); } catch (e) { message = `${e.kind}: ${e.message}`; }
        const listed = await tools.ls({});
        console.log(message);
        console.log(listed.text.includes("file.txt"));
        "#,
    )
    .await;
    let out = text(&result);
    assert!(!result.output.is_error, "{out}");
    assert_eq!(
        out,
        format!(
            "permission_denied: The call to `read` was denied: the PreToolUse hook `bash {}` refused it: no reading today\ntrue\n",
            hook.display()
        )
    );
}

/// A built-in function that never looks at the interrupt handler (QuickJS's generic array
/// methods over a long array-like) keeps its interpreter past the script's time limit: on a
/// thread, the host stops waiting for it soon after, says so, and counts it until its thread
/// ends; in a worker, the host kills the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interpreter_that_does_not_stop_is_given_up_on() {
    // A memory limit that allows an array of 2^30 elements: the length is not refused, and
    // reversing it takes about 20 s here, of which the test waits 5.
    let limits = Limits::default()
        .with_memory_bytes(8 << 30)
        .with_wall_time(Duration::from_millis(300))
        .with_yield_time(None);
    // A tool whose call never ends by itself (as a long command would not), and says when it is
    // dropped: nothing but the host can end it once the interpreter no longer polls it.
    struct Dropped(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = dropped.clone();
    let wait = FnTool::new(ToolSpec::new("wait", "Wait.", json!({"type": "object"})), move |_, _| {
        let guard = Dropped(seen.clone());
        async move {
            std::future::pending::<()>().await;
            drop(guard);
            Ok(ToolOutput::text("never"))
        }
    });
    let tools = Registry::builder().tool(wait).build().unwrap();
    let registry = code_tool(tools).with_limits(limits).alone().unwrap();
    let dispatcher = Dispatcher::new(registry);
    let started = std::time::Instant::now();
    let result = script(
        &dispatcher,
        "console.log('before'); tools.wait({}); Array.prototype.reverse.call({ length: 2 ** 30 })",
    )
    .await;
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "the call left running: {}", text(&result));
    assert!(result.output.is_error, "{}", text(&result));
    const STOPPED: &str = "The script was stopped after 300 ms, its time limit. Do less per script (fewer or narrower tool calls, run independent calls together with Promise.all) and continue in another script.";
    if crate::IN_A_WORKER {
        // Killed soon after it was told to stop (a thread would be waited for 5 s first), and
        // nothing of it runs on.
        assert!(started.elapsed() < Duration::from_secs(3), "killed after {:?}", started.elapsed());
        assert_eq!(text(&result), format!("before\n{STOPPED}"));
        return;
    }
    assert!(started.elapsed() < Duration::from_secs(15), "given up on after {:?}", started.elapsed());
    assert!(
        text(&result)
            .starts_with("before\n[The script's interpreter did not stop: it is inside a built-in function"),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("its tool calls were stopped"), "{}", text(&result));
    assert!(text(&result).contains("(1 interpreter of this process is in that state"), "{}", text(&result));
    assert!(text(&result).ends_with(STOPPED), "{}", text(&result));
}

/// What a PostToolUse hook or a check after an edit says to the model about a nested call
/// reaches the model with the script's result, whatever the script does with the call's result.
#[tokio::test]
async fn what_hooks_and_checks_say_about_a_scripts_calls_reaches_the_model() {
    let dir = TempDir::new("code-notices");
    let root = dir.path();
    let hook = root.join("hook.sh");
    std::fs::write(
        &hook,
        "#!/bin/bash\ninput=$(cat)\ncase \"$input\" in\n\
         *blocked.txt*) echo 'lint: blocked.txt has a tab' >&2; exit 2;;\n\
         *) echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"lint: 3 warnings\"}}';;\n\
         esac\n",
    )
    .unwrap();
    let settings = json!({"hooks": {"PostToolUse": [{"matcher": "write", "hooks": [
        {"type": "command", "command": format!("bash {}", hook.display()), "timeout": 10}
    ]}]}})
    .to_string();
    let loaded = Settings::parse(&settings, "settings.json", Rules::builder(root)).unwrap();
    let check = tools_std::verify::Verify::new(["md"], ["grep", "-q", "GOOD", "{file}"]);
    let dispatcher = Dispatcher::builder(std_registry(Limits::default()))
        .dependency(Workspace::new(root).unwrap().with_verifiers(vec![check]))
        .policy(Policy::from_settings(loaded))
        .build();
    let result = script(
        &dispatcher,
        r#"
        await tools.write({ path: "a.txt", content: "x\n" });
        try { await tools.write({ path: "blocked.txt", content: "x\n" }); } catch (e) {}
        await tools.write({ path: "good.md", content: "GOOD\n" });
        await tools.write({ path: "bad.md", content: "bad\n" });
        "wrote 4 files"
        "#,
    )
    .await;
    let out = text(&result);
    assert!(!result.output.is_error, "{out}");
    let hook = format!("bash {}", hook.display());
    let expected = format!(
        "wrote 4 files\n[What hooks and checks said about the script's calls, which the script did not print:]\n\
         - `write` (call-1.1): lint: 3 warnings\n\
         - `write` (call-1.2): PostToolUse hook `{hook}`: lint: blocked.txt has a tab\n\
         - `write` (call-1.3): lint: 3 warnings\n\
         - `write` (call-1.4): Check `grep -q GOOD ./bad.md` failed with exit code 1 (the edit of bad.md is applied).\n\
         - `write` (call-1.4): lint: 3 warnings\n"
    );
    assert_eq!(out, expected);
}

/// A cheap tool (`echo`, exclusive) and two that wait at a barrier of `n` (`meet`, parallel;
/// `queue`, exclusive), so that a call of `meet` can only end once `n` of them run at once.
fn gate_registry(n: usize) -> Registry {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}, "text": {"type": "string"}}});
    let echo =
        FnTool::new(ToolSpec::new("echo", "Echo the text.", schema.clone()), |_, args: Value| async move {
            Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default().to_owned()))
        });
    let barrier = Arc::new(Barrier::new(n));
    let meet_barrier = barrier.clone();
    let meet = FnTool::new(
        ToolSpec::new("meet", "Wait for the others.", schema.clone()).with_parallel(true),
        move |_, _| {
            let barrier = meet_barrier.clone();
            async move {
                barrier.wait().await;
                Ok(ToolOutput::text("met"))
            }
        },
    );
    let queue = FnTool::new(ToolSpec::new("queue", "Take a turn.", schema), |_, _| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(ToolOutput::text("done"))
    });
    Registry::builder().tool(echo).tool(meet).tool(queue).build().unwrap()
}

#[tokio::test]
async fn promise_all_overlaps_parallel_tools_and_serializes_the_others() {
    let events = Events::default();
    let registry = code_tool(gate_registry(3)).beside_its_tools().unwrap();
    let dispatcher = Dispatcher::builder(registry).events(events.sink()).build();
    // `meet` returns only once three of its calls wait together: the script ends only if they
    // overlap.
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        script(
            &dispatcher,
            "(await Promise.all([0, 1, 2].map((n) => tools.meet({ n })))).map((r) => r.text).join()",
        ),
    )
    .await
    .expect("parallel calls of one script run at the same time");
    assert_eq!(text(&result), "met,met,met");
    let meet = events.lifecycle("meet");
    assert_eq!(meet.iter().take(3).filter(|(kind, _)| *kind == "started").count(), 3, "{meet:?}");

    let result =
        script(&dispatcher, "(await Promise.all([0, 1, 2].map((n) => tools.queue({ n })))).length").await;
    assert_eq!(text(&result), "3");
    let queue = events.lifecycle("queue");
    assert_eq!(queue.len(), 6, "{queue:?}");
    // One at a time, in the order the script made them.
    for (pair, id) in queue.chunks(2).zip(["call-1.1", "call-1.2", "call-1.3"]) {
        assert_eq!((pair[0].0, pair[1].0), ("started", "finished"), "{queue:?}");
        assert_eq!((pair[0].1.as_str(), pair[1].1.as_str()), (id, id), "{queue:?}");
    }
}

/// What a caller's sink heard about its call: progress messages and log data, as the call id
/// and tool they came under.
#[derive(Default)]
struct Heard(Mutex<Vec<(String, String, String)>>);

impl tool_runtime::context::ContextSink for Heard {
    fn progress(&self, call_id: &str, tool: &str, update: tool_runtime::Progress) {
        let said = update.message.unwrap_or_default();
        self.0.lock().unwrap().push((call_id.to_owned(), tool.to_owned(), format!("progress {said}")));
    }

    fn metadata(&self, _: &str, _: &str, _: Option<String>, _: Value) {}

    fn log(
        &self,
        call_id: &str,
        tool: &str,
        _: tool_runtime::context::LogLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        let said = format!("log {} {data}", logger.unwrap_or("-"));
        self.0.lock().unwrap().push((call_id.to_owned(), tool.to_owned(), said));
    }
}

/// A nested call's `queued` event names its parent, and what it reports reaches whoever follows
/// the script call (an MCP client's progress token) as the script call's own.
#[tokio::test]
async fn nested_calls_name_their_parent_and_their_progress_reaches_the_scripts_caller() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let steps = FnTool::new(ToolSpec::new("steps", "Count steps.", schema), |ctx, args: Value| async move {
        let n = args["n"].as_u64().unwrap_or(0);
        for i in 1..=n {
            ctx.progress(tool_runtime::Progress {
                message: None,
                progress: Some(i as f64),
                total: Some(n as f64),
            });
        }
        ctx.log(tool_runtime::context::LogLevel::Info, None, json!("counted"));
        ctx.progress(tool_runtime::Progress::message("done"));
        Ok(ToolOutput::text(n.to_string()))
    });
    let events = Events::default();
    let registry = code_tool(Registry::builder().tool(steps).build().unwrap()).beside_its_tools().unwrap();
    let dispatcher = Dispatcher::builder(registry).events(events.sink()).build();
    let heard = Arc::new(Heard::default());
    let options =
        tool_runtime::CallOptions { sink: Some(heard.clone()), ..tool_runtime::CallOptions::default() };
    let call = ToolCall::new("call-1", "code", json!({"script": "(await tools.steps({n: 2})).text"}));
    let result = dispatcher.run_with(call, options, CancellationToken::new()).await;
    assert_eq!(text(&result), "2");
    let parents: Vec<(String, Option<String>)> = events
        .all()
        .into_iter()
        .filter_map(|event| match event {
            ToolEvent::Queued { call_id, parent, .. } => Some((call_id, parent)),
            _ => None,
        })
        .collect();
    assert_eq!(parents, [("call-1".to_owned(), None), ("call-1.1".to_owned(), Some("call-1".to_owned()))]);
    let heard: Vec<(String, String, String)> = heard.0.lock().unwrap().clone();
    let expected =
        ["progress steps: 1 of 2", "progress steps: 2 of 2", "log steps \"counted\"", "progress steps: done"];
    assert_eq!(heard.iter().map(|(_, _, said)| said.as_str()).collect::<Vec<_>>(), expected);
    assert!(heard.iter().all(|(id, tool, _)| id == "call-1" && tool == "code"), "{heard:?}");
}

fn limited(limits: Limits) -> Dispatcher {
    Dispatcher::new(code_tool(gate_registry(1)).with_limits(limits).beside_its_tools().unwrap())
}

#[tokio::test]
async fn an_endless_loop_is_stopped_at_the_time_limit_and_the_host_goes_on() {
    let dispatcher = limited(Limits::default().with_wall_time(Duration::from_millis(300)));
    let result = script(&dispatcher, "console.log('before'); while (true) {}").await;
    assert!(result.output.is_error);
    assert_eq!(result.output.metadata["error_kind"], json!("timeout"));
    assert_eq!(
        text(&result),
        "before\nThe script was stopped after 300 ms, its time limit. Do less per script (fewer or narrower \
         tool calls, run independent calls together with Promise.all) and continue in another script."
    );
    // Jobs that queue jobs for ever are stopped too: at the time limit, or at the memory limit
    // when their chain of promises fills it first (on a fast run).
    let result = script(
        &dispatcher,
        "const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});",
    )
    .await;
    let stopped = text(&result);
    assert!(
        result.output.metadata["error_kind"] == json!("timeout")
            || stopped.starts_with("The script was stopped: it used more than 64 MiB, its memory limit."),
        "{stopped}"
    );
    // A `try` does not catch the stop, and the next script runs.
    let result = script(&dispatcher, "try { for (;;) {} } catch (e) { console.log('caught') }").await;
    assert!(!text(&result).contains("caught"), "{}", text(&result));
    assert_eq!(text(&script(&dispatcher, "1 + 1").await), "2");
}

/// A call's own time limit, shorter than the script's, stops the script as a time limit, not as
/// a cancellation, and the model is told what to change.
#[tokio::test]
async fn the_calls_time_limit_stops_the_script_and_says_so() {
    let dispatcher = limited(Limits::default());
    let call = ToolCall::new("call-1", "code", json!({ "script": "console.log('before'); while (true) {}" }));
    let options =
        tool_runtime::CallOptions { timeout: Some(Duration::from_millis(300)), ..Default::default() };
    let result = dispatcher.run_with(call, options, CancellationToken::new()).await;
    assert!(result.output.is_error);
    assert_eq!(result.output.metadata["error_kind"], json!("timeout"));
    assert_eq!(
        text(&result),
        "before\nThe script was stopped: its call reached its time limit before the script ended (a script \
         alone may run 60 s). Do less in one script (fewer or narrower calls, independent calls together with \
         Promise.all), or split the work into several scripts."
    );
    // Cancelled by its caller before its time limit, it says so.
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        later.cancel();
    });
    let result = run_script(&dispatcher, "while (true) {}", cancel).await;
    assert_eq!(result.output.metadata["error_kind"], json!("cancelled"), "{}", text(&result));
}

/// Half of a character (a lone UTF-16 surrogate, as `"😀".slice(1)` leaves) cannot reach the host
/// as UTF-8: in what a script prints and returns it becomes U+FFFD (the value was lost, or the
/// script failed on its own `console.log`); in a call's arguments it is refused, saying how to
/// cut strings, since a replaced character would change what a tool writes or looks for.
#[tokio::test]
async fn half_characters_are_replaced_in_output_and_refused_in_arguments() {
    let dispatcher = limited(Limits::default());
    let result = script(&dispatcher, r#"console.log("a" + "😀".slice(1)); "b" + "😀".slice(0, 1)"#).await;
    assert!(!result.output.is_error, "{}", text(&result));
    assert_eq!(text(&result), "a\u{fffd}\nb\u{fffd}");
    let result = script(
        &dispatcher,
        r#"String.prototype.toWellFormed = () => 5; Reflect.apply = null; console.log("c\uD800"); "d\uDC00""#,
    )
    .await;
    assert_eq!(text(&result), "c\u{fffd}\nd\u{fffd}");
    for arguments in [r#"{ text: "\uD800" }"#, r#"{ ["\uDC00"]: 1 }"#, r#"{ nested: [{ text: "x\uD800" }] }"#]
    {
        let result = script(&dispatcher, &format!("await tools.echo({arguments})")).await;
        assert!(result.output.is_error);
        assert!(
            text(&result).starts_with(
                "The script failed: TypeError: the arguments of tools.echo hold half of a character (a lone \
                 UTF-16 surrogate, as slicing a string in the middle of an emoji leaves); cut strings with \
                 Array.from(text).slice(...), or call .toWellFormed() on them"
            ),
            "{arguments}: {}",
            text(&result)
        );
    }
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_the_memory_limit_and_the_host_goes_on() {
    let dispatcher = limited(Limits::default().with_memory_bytes(16 << 20));
    let result =
        script(&dispatcher, "const kept = []; for (;;) kept.push('x'.repeat(1 << 20) + kept.length);").await;
    assert!(result.output.is_error);
    assert!(
        text(&result).starts_with("The script was stopped: it used more than 16 MiB, its memory limit."),
        "{}",
        text(&result)
    );
    assert_eq!(text(&script(&dispatcher, "[1, 2, 3].length").await), "3");
}

/// The arguments of calls not ended yet are held outside the interpreter (its memory limit does
/// not see them): they count against it, so a script cannot queue calls of large arguments
/// until the host runs out of memory. It can await them one at a time.
#[tokio::test]
async fn arguments_of_calls_not_ended_count_against_the_memory_limit() {
    let dispatcher = limited(Limits::default().with_memory_bytes(16 << 20));
    let queued = "const big = 'x'.repeat(3 << 20); const calls = []; \
                  for (let i = 0; i < 20; i++) calls.push(tools.queue({ text: big + i })); await Promise.all(calls)";
    let result = script(&dispatcher, queued).await;
    assert!(result.output.is_error);
    assert!(
        text(&result).contains("RangeError: tools.queue: the calls started and not ended yet hold"),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("await some of them before starting more"), "{}", text(&result));
    let awaited = "const big = 'x'.repeat(3 << 20); \
                   for (let i = 0; i < 20; i++) await tools.queue({ text: big + i }); 'done'";
    assert_eq!(text(&script(&dispatcher, awaited).await), "done");
}

/// Arguments are counted at what the host would take to hold them parsed, before it parses
/// them: an array of one small object repeated costs the script nothing, the host each copy.
#[tokio::test]
async fn arguments_that_would_take_the_host_far_more_than_their_text_are_refused_before_parsing() {
    let dispatcher = limited(Limits::default());
    let shared = r#"const o = { "": 0 }; const row = new Array(1000).fill(o); const rows = new Array(3000).fill(row);
        let said; try { await tools.echo({ text: "x", rows }); } catch (e) { said = `${e.name}: ${e.message}`; }
        said"#;
    let result = script(&dispatcher, shared).await;
    assert!(!result.output.is_error, "{}", text(&result));
    assert!(
        text(&result).starts_with(
            "RangeError: tools.echo: the calls started and not ended yet hold 0 bytes of arguments, and this one"
        ),
        "{}",
        text(&result)
    );
    // Ordinary arguments, a long text among them, pass.
    let long = "(await tools.echo({ text: 'y'.repeat(8 << 20) })).text.startsWith('yyyy')";
    assert_eq!(text(&script(&dispatcher, long).await), "true");
}

/// QuickJS's generic array methods never look at the time limit while they run over an
/// array-like's length: each refuses one no array of the script's memory could have, or one it
/// cannot read as the method would; scripts get no `Proxy`.
#[tokio::test]
async fn array_methods_refuse_lengths_that_would_never_end() {
    let dispatcher = limited(Limits::default().with_wall_time(Duration::from_secs(20)));
    let caught = |call: &str| {
        format!(
            "let said = 'ran'; try {{ {call}; }} catch (e) {{ said = `${{e.name}}: ${{e.message}}`; }} said"
        )
    };
    for (call, expected) in [
        (
            "Array.prototype.reverse.call({ length: 2 ** 53 - 1 })",
            "RangeError: Array.prototype.reverse: a length of 9007199254740991 is more than an array of the script's memory can have (16777216)",
        ),
        (
            "[].concat({ length: 2 ** 40, [Symbol.isConcatSpreadable]: true })",
            "RangeError: Array.prototype.concat: a length of 1099511627776",
        ),
        (
            "const a = []; a.length = 2 ** 32 - 1; a.sort()",
            "RangeError: Array.prototype.sort: a length of 4294967295",
        ),
        (
            "let n = 0; Array.prototype.join.call({ get length() { return n++ ? 2 ** 40 : 0; } })",
            "TypeError: Array.prototype.join does not run on an object whose length is a getter",
        ),
        (
            "let n = 0; Array.prototype.fill.call({ length: { valueOf() { return n++ ? 2 ** 40 : 0; } } }, 1)",
            "TypeError: Array.prototype.fill does not run on an object whose length is not a number",
        ),
        ("new Proxy({}, {})", "ReferenceError: Proxy is not defined"),
        (
            "await tools.echo({ toJSON() { return undefined; } })",
            "TypeError: tools.echo: its arguments have no JSON form",
        ),
    ] {
        let result = script(&dispatcher, &caught(call)).await;
        assert!(text(&result).starts_with(expected), "{call}: {}", text(&result));
    }
    // Arrays and array-likes of any length a script can hold work as they do anywhere.
    let ordinary = "const a = Array.from({ length: 100000 }, (_, i) => i); \
                    [a.reverse()[0], Array.prototype.slice.call({ length: 2, 0: 'x', 1: 'y' }).join(''), [1].concat([2], [3]).length, \
                     Array.prototype.map.call('abc', (c) => c.toUpperCase()).join(''), \
                     Array.prototype.slice.call(new Uint8Array([1, 2, 3])).join('-')].join(' ')";
    assert_eq!(text(&script(&dispatcher, ordinary).await), "99999 xy 3 ABC 1-2-3");
    // What the guards do, the built-ins' answers: as node gives them.
    let answers = r#"class Kind extends Array {}
        [
            String([1, 2]), `${[3, 4]}`, [5] + "", [1, [2, 3]].toString(), [1, 2].toLocaleString(),
            [3, 1, undefined, 10, 2, , "b", "a"].sort().join(), [5, 1, 4].sort((a, b) => a - b).join(),
            [NaN].includes(NaN), [NaN].indexOf(NaN), [1, 2, 3, 2].lastIndexOf(2), [1, 2, 3, 2].lastIndexOf(2, -2),
            [1, 2, 3].indexOf(3, -1), [, 1].includes(undefined), [, 1].indexOf(undefined),
            [1].concat({ name: "x", length: 5e9 }).length, Array.prototype.indexOf.call(new Uint8Array(12 << 20), 7),
            Array.prototype.every.call("x".repeat(9 << 20), (c) => c === "x"),
            "abc".split({ [Symbol.split]: () => "own split" }), "abc".replace({ [Symbol.replace]: () => "own replace" }, "x"),
            Kind.from([1, [2]]).flat() instanceof Kind, [[1, [2, [3]]], , 4].flat(Infinity).join("-"),
            [].map.length, [].push.length, [].flat.length, "".indexOf.length,
            [() => Array.prototype.indexOf.call(null, 1), () => Array.prototype.flat.call(undefined),
             () => [Symbol("a"), Symbol("b")].sort(), () => "aSb".split(Symbol()), () => [1].indexOf(1, 1n)]
                .map((f) => { try { return String(f()); } catch (e) { return e.name; } }).join(),
        ].join(" | ")"#;
    assert_eq!(
        text(&script(&dispatcher, answers).await),
        "1,2 | 3,4 | 5 | 1,2,3 | 1,2 | 1,10,2,3,a,b,, | 1,4,5 | true | -1 | 3 | 1 | 2 | true | -1 | 2 | -1 | true | \
         own split | own replace | true | 1-2-3-4 | 1 | 1 | 0 | 1 | TypeError,TypeError,TypeError,TypeError,TypeError"
    );
}

/// What would run long inside a built-in function, where the time limit is not seen, is refused
/// or runs where it is: lengths read twice, lengths of primitives' prototypes, the sum of what
/// `concat` joins, `flat` over many long arrays, a long text searched in a long text.
#[tokio::test]
async fn work_a_built_in_would_do_without_seeing_the_time_limit_is_refused_or_stopped() {
    let dispatcher = limited(Limits::default().with_wall_time(Duration::from_millis(500)));
    for (source, expected) in [
        (
            "let n = 0; [].concat({ length: 2 ** 53 - 1, get [Symbol.isConcatSpreadable]() { return n++ > 0; } })",
            "The script failed: TypeError: Array.prototype.concat does not run on an object whose \
             Symbol.isConcatSpreadable is a getter",
        ),
        (
            "Number.prototype.length = 2 ** 53 - 1; Array.prototype.reverse.call(5)",
            "The script failed: RangeError: Array.prototype.reverse: a length of 9007199254740991",
        ),
        (
            "const a = []; a.length = 8e6; [].concat(...Array(60000).fill(a))",
            "The script failed: RangeError: Array.prototype.concat: a length of 480000000000",
        ),
        (
            "const a = []; a.length = 8e6; Array(100000).fill(a).flat()",
            "The script was stopped after 500 ms, its time limit.",
        ),
        (
            "const s = 'a'.repeat(2 ** 24), t = 'a'.repeat(2 ** 22) + 'b'; s.indexOf(t)",
            "The script was stopped after 500 ms, its time limit.",
        ),
        (
            "const s = 'a'.repeat(2 ** 24), t = 'a'.repeat(2 ** 22) + 'b'; s.split(t)",
            "The script was stopped after 500 ms, its time limit.",
        ),
        // Few elements, each costly to compare.
        (
            "const s = 'a'.repeat(8e6); new Array(1e6).fill(s).indexOf(s.slice(0, -1) + 'b')",
            "The script was stopped after 500 ms, its time limit.",
        ),
        (
            "new Array(1e5).fill('a'.repeat(8e6)).sort()",
            "The script was stopped after 500 ms, its time limit.",
        ),
        (
            "new Array(1e5).fill('a'.repeat(8e6)).toSorted()",
            "The script was stopped after 500 ms, its time limit.",
        ),
        (
            "const view = new DataView(new ArrayBuffer(1)); view.length = 2 ** 53 - 1; Array.prototype.reverse.call(view)",
            "The script failed: RangeError: Array.prototype.reverse: a length of 9007199254740991",
        ),
        // A length changed by the species constructor `concat` runs first.
        (
            "const v = { length: 0, [Symbol.isConcatSpreadable]: true }; const a = []; \
             a.constructor = { get [Symbol.species]() { v.length = 2 ** 53 - 2; return undefined; } }; a.concat(v)",
            "The script failed: RangeError: Array.prototype.concat: a length of 9007199254740990",
        ),
        // A prototype chain each missing element is looked for along.
        (
            "let o = {}; for (let i = 0; i < 1000; i++) o = Object.create(o); o.length = 2 ** 20; \
             Array.prototype.reverse.call(o)",
            "The script failed: RangeError: Array.prototype.reverse does not run on an object with a prototype chain deeper than 16",
        ),
        // The tools' object, which answers any name (`length` too) with a function.
        (
            "Function.prototype.valueOf = () => 2 ** 53 - 1; \
             Array.prototype.reverse.call(Object.create(Object.getPrototypeOf(tools)))",
            "The script failed: TypeError: Array.prototype.reverse does not run on the tools object",
        ),
        // The length measured by index, not through an array iterator the script replaced.
        (
            "Array.prototype[Symbol.iterator] = function* () { yield 0; yield 0; }; \
             Array.prototype.sort.call({ length: 2 ** 53 - 1 })",
            "The script failed: RangeError: Array.prototype.sort: a length of 9007199254740991",
        ),
        // The built-in taken from a stack frame, through V8's stack trace API, is not handed out.
        (
            "let found = []; try { Error.prepareStackTrace = (e, frames) => { for (const f of frames) \
             found.push(f.getFunction()); return ''; }; } catch (e) { found.push(String(e)); } \
             try { Array.prototype.reverse.call({ length: 2, get 0() { throw new Error('x'); } }); } catch (e) {} \
             const native = found.filter(f => typeof f === 'function' && String(f).includes('[native code]')); \
             if (native.length) native[0].call({ length: 2 ** 53 - 1 }); \
             Array.prototype.reverse.call({ length: 2 ** 53 - 1 })",
            "The script failed: RangeError: Array.prototype.reverse: a length of 9007199254740991",
        ),
    ] {
        let started = std::time::Instant::now();
        let result = script(&dispatcher, source).await;
        assert!(text(&result).starts_with(expected), "{source}: {}", text(&result));
        assert!(started.elapsed() < Duration::from_secs(4), "{source}: {:?}", started.elapsed());
    }
}

/// `concat`, which runs as script code, gives what the built-in gives, whatever the script did to
/// the array iterator.
#[tokio::test]
async fn concat_gives_the_built_in_answer() {
    let dispatcher = limited(Limits::default());
    let source = "Array.prototype[Symbol.iterator] = function* () { yield 'hijacked'; }; \
                  const r = [1, [2]].concat([3, , 4], 5, { length: 1, 0: 'x', [Symbol.isConcatSpreadable]: true }); \
                  JSON.stringify([r.length, 3 in r, r])";
    let result = script(&dispatcher, source).await;
    assert_eq!(text(&result), "[7,false,[1,[2],3,null,4,5,\"x\"]]");
}

/// Searches of long texts in long texts give what the built-in search gives, window by window.
#[tokio::test]
async fn long_searches_give_the_built_in_answers() {
    let dispatcher = limited(Limits::default().with_wall_time(Duration::from_secs(30)));
    let source = r#"
        const s = 'x'.repeat(3e6) + 'needle' + 'y'.repeat(3e6);
        const t = 'needle' + 'y'.repeat(100);
        const ys = 'y'.repeat(100);
        const replaced = s.replace(t, "[$&|$`|$'|$$]");
        [
            s.indexOf(t), s.indexOf(t, 3e6 + 1), s.includes(t), s.lastIndexOf(ys), s.lastIndexOf(t, 2e6),
            s.split(t).length, s.split(ys).length, s.split(ys, 3).length,
            replaced.length, replaced.slice(3e6, 3e6 + 8), replaced.slice(9000009, 9000012),
            s.replace(t, (m, at) => `<${m.length}@${at}>`).slice(3e6, 3e6 + 10),
            s.replaceAll(ys, '').length, s.replaceAll(ys, (m, at) => at % 2).slice(-3),
        ].join(' ')
    "#;
    let expected = [
        "3000000",
        "-1",
        "true",
        "5999906",
        "-1",
        "2",
        "30001",
        "3",
        &(3_000_000 + 1 + 106 + 1 + 3_000_000 + 1 + 2_999_900 + 3 + 2_999_900).to_string(),
        "[needley",
        "|$]",
        "<106@30000",
        "3000006",
        "000",
    ]
    .join(" ");
    assert_eq!(text(&script(&dispatcher, source).await), expected);
}

/// What a script throws is kept to its start and end: the host does not copy and store all of
/// a string of megabytes.
#[tokio::test]
async fn a_huge_thrown_value_is_cut_in_its_middle() {
    let dispatcher = limited(Limits::default());
    let result = script(&dispatcher, "throw 'a'.repeat(5e6) + 'z'").await;
    let out = text(&result);
    assert!(out.len() < 20_000, "{}", out.len());
    assert!(out.starts_with("The script failed: aaa") && out.ends_with("aaz"), "{}", &out[..100]);
    assert!(out.contains(" bytes cut ...]"), "{}", &out[..100]);
}

#[tokio::test]
async fn ten_thousand_calls_are_stopped_at_the_call_limit_even_when_the_script_catches() {
    let dispatcher = limited(Limits::default().with_nested_calls(100));
    for source in [
        "for (let i = 0; i < 10000; i++) await tools.echo({ text: String(i) });",
        "for (let i = 0; i < 10000; i++) { try { await tools.echo({ text: String(i) }); } catch (e) {} }",
        "await Promise.all(Array.from({ length: 10000 }, (_, i) => tools.echo({ text: String(i) })));",
    ] {
        let result = script(&dispatcher, source).await;
        assert!(result.output.is_error, "{source}");
        assert!(
            text(&result).starts_with(
                "The script was stopped: it made more than 100 tool calls, the limit per script."
            ),
            "{source}: {}",
            text(&result)
        );
        assert_eq!(result.output.metadata["nested_calls"], json!(100), "{source}");
    }
    assert_eq!(
        text(&script(&dispatcher, "(await tools.echo({ text: 'still here' })).text").await),
        "still here"
    );
}

#[tokio::test]
async fn output_past_its_limit_stops_the_script() {
    let dispatcher = limited(Limits::default().with_output_bytes(1000));
    let result = script(&dispatcher, "for (let i = 0; ; i++) console.log('line', i);").await;
    assert!(result.output.is_error);
    let out = text(&result);
    let (printed, message) = out.split_at(1000);
    assert!(printed.starts_with("line 0\nline 1\n"), "{out}");
    assert_eq!(
        message,
        "\nThe script was stopped: its output passed 1000 bytes, the limit per script. Print less (counts, the lines that matter, a summary) and run it again."
    );
    // A script that catches the error saying so makes no call after it, nor prints more.
    let result = script(
        &dispatcher,
        "try { print('x'.repeat(2000)); } catch (e) {}\n\
         try { await tools.echo({ text: 'after' }); } catch (e) {}\n\
         try { print('more'); } catch (e) {}",
    )
    .await;
    assert!(result.output.is_error);
    assert_eq!(result.output.metadata["nested_calls"], json!(0), "{}", text(&result));
    assert!(!text(&result).contains("more"), "{}", text(&result));
}

#[tokio::test]
async fn mistakes_are_errors_the_model_can_read() {
    let dispatcher = limited(Limits::default());
    let syntax = script(&dispatcher, "let x = ;").await;
    assert!(syntax.output.is_error);
    assert!(text(&syntax).starts_with("The script failed: SyntaxError: "), "{}", text(&syntax));

    let thrown = script(&dispatcher, "function check() {\n  throw new Error('boom');\n}\ncheck();").await;
    assert_eq!(
        text(&thrown),
        "The script failed: Error: boom\n    at check (script.js:2:13)\n    at <eval> (script.js:4:1)"
    );
    // A tool's error is made by the prelude: its frames are not the script's and are left out.
    let uncaught = script(&dispatcher, "await tools.echo({ text: 5 })").await;
    assert!(
        text(&uncaught).starts_with("The script failed: ToolError from `echo` (invalid_arguments): "),
        "{}",
        text(&uncaught)
    );
    assert!(!text(&uncaught).contains("    at "), "{}", text(&uncaught));

    let result = script(
        &dispatcher,
        r#"
        for (const attempt of [() => tools.ech({ text: "x" }), () => tools.echo({ text: 5 }), () => tools.echo("x")]) {
            try { await attempt(); } catch (e) { console.log(e.name + " " + (e.kind ?? "-") + ": " + e.message.replaceAll("\n", " | ")); }
        }
        "#,
    )
    .await;
    let out = text(&result);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ToolError not_found: "), "{out}");
    assert!(lines[0].contains("echo"), "the unknown name's message names the close one: {out}");
    assert!(lines[1].starts_with("ToolError invalid_arguments: "), "{out}");
    assert_eq!(
        lines[2],
        "TypeError -: tools.echo takes one object of arguments, such as tools.echo({ ... }); it was given string"
    );

    let stuck = script(&dispatcher, "await new Promise(() => {})").await;
    assert!(text(&stuck).contains("waiting for a promise that nothing will settle"), "{}", text(&stuck));
    let missing = dispatcher.run(ToolCall::new("c", "code", json!({})), CancellationToken::new()).await;
    assert!(missing.output.is_error);
}

#[tokio::test]
async fn a_final_value_that_is_a_promise_is_waited_for() {
    let dispatcher = limited(Limits::default());
    // A tool call as the last line, without `await`: its result, not the promise's empty object.
    let call = script(&dispatcher, r#"console.log("first"); tools.echo({ text: "last" })"#).await;
    assert!(!call.output.is_error, "{}", text(&call));
    assert_eq!(
        text(&call),
        "first\n{\n  \"text\": \"last\",\n  \"structured\": null,\n  \"is_error\": false\n}"
    );
    let called = script(
        &dispatcher,
        "async function f() { const r = await tools.echo({ text: 'x' }); return r.text + '!'; }\nf()",
    )
    .await;
    assert_eq!(text(&called), "x!");
    // Rejected, it is the script's error; an object with a `value` key is printed whole.
    let rejected = script(&dispatcher, "Promise.reject(new RangeError('late'))").await;
    assert!(rejected.output.is_error);
    assert!(text(&rejected).starts_with("The script failed: RangeError: late"), "{}", text(&rejected));
    let object = script(&dispatcher, "({ value: 1, other: 2 })").await;
    assert_eq!(text(&object), "{\n  \"value\": 1,\n  \"other\": 2\n}");
    let stuck = script(&dispatcher, "new Promise(() => {})").await;
    assert!(text(&stuck).contains("waiting for a promise that nothing will settle"), "{}", text(&stuck));
}

#[tokio::test]
async fn a_script_has_no_file_system_network_process_or_clock_of_its_own() {
    let dispatcher = limited(Limits::default());
    let result = script(
        &dispatcher,
        r#"
        const names = ["require", "process", "fetch", "XMLHttpRequest", "std", "os", "Deno", "Bun",
                       "Date", "performance", "setTimeout", "WebAssembly", "module", "scriptArgs"];
        console.log(names.filter((name) => typeof globalThis[name] !== "undefined").join(",") || "none");
        let imported;
        try { await import("fs"); imported = "imported"; } catch (e) { imported = "refused"; }
        console.log(imported);
        // The prelude is a module the interpreter has loaded: it can be imported, not run again.
        const prelude = await import("prelude.js");
        try { prelude.default(); console.log("ran again"); } catch (e) { console.log(e.message); }
        "#,
    )
    .await;
    assert_eq!(text(&result), "none\nrefused\nthe prelude has run already\n", "{}", text(&result));
}

async fn pid_in(path: &Path) -> i32 {
    for _ in 0..3000 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} was never written", path.display());
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_script_call_stops_its_nested_bash_commands() {
    let dir = TempDir::new("code-cancel");
    let root = dir.path().to_path_buf();
    let events = Events::default();
    let dispatcher = Dispatcher::builder(std_registry(Limits::default()))
        .dependency(Workspace::new(&root).unwrap())
        .events(events.sink())
        .build();
    let cancel = CancellationToken::new();
    let source = r#"
        await Promise.all([
            tools.bash({ command: "echo $$ > one.pid; exec sleep 300", timeout_secs: 600 }),
            tools.bash({ command: "echo $$ > two.pid; exec sleep 300", timeout_secs: 600 }),
        ]);
    "#;
    let mut running = tokio::spawn({
        let dispatcher = dispatcher.clone();
        let cancel = cancel.clone();
        async move { run_script(&dispatcher, source, cancel).await }
    });
    let pid_file = root.join("one.pid");
    let one = tokio::select! {
        pid = pid_in(&pid_file) => pid,
        result = &mut running => panic!("the script ended: {}", text(&result.unwrap())),
    };
    assert!(runs(one));
    cancel.cancel();
    let result = running.await.unwrap();
    assert!(result.output.is_error, "{}", text(&result));
    assert_eq!(result.output.metadata["error_kind"], json!("cancelled"), "{}", text(&result));
    for pid in [one] {
        let mut stopped = false;
        for _ in 0..500 {
            if !runs(pid) {
                stopped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(stopped, "the command {pid} of the cancelled script still runs");
    }
    // `bash` is exclusive: the second command waited for the first, and never started.
    assert!(!root.join("two.pid").exists());
    let mut bash = events.lifecycle("bash");
    bash.sort();
    assert_eq!(
        bash,
        [
            ("finished", "call-1.1".to_owned()),
            ("finished", "call-1.2".to_owned()),
            ("started", "call-1.1".to_owned())
        ]
    );
}

#[tokio::test]
async fn the_description_declares_each_tool_and_leaves_deferred_ones_to_the_search() {
    let schema = json!({"type": "object", "properties": {"customer": {"type": "string", "description": "Who pays."}}, "required": ["customer"]});
    let invoice = FnTool::new(
        ToolSpec::new("create_invoice", "Create an invoice for a customer.", schema).with_defer(true),
        |_, args: Value| async move {
            Ok(ToolOutput::text(format!("invoice for {}", args["customer"].as_str().unwrap_or("?"))))
        },
    );
    let tools = Registry::builder().tools(gate_registry(1).tools().cloned()).tool(invoice).build().unwrap();
    let registry = code_tool(tools).beside_its_tools().unwrap();
    let description = &registry.get("code").unwrap().spec().description;
    assert!(description.contains("  /** Echo the text. */\n  echo(args: {\n"), "{description}");
    assert!(!description.contains("create_invoice"), "{description}");
    assert!(description.contains("1 more tools are not listed here"), "{description}");
    let dispatcher = Dispatcher::new(registry);
    let result = script(
        &dispatcher,
        r#"
        const found = await tools.tool_search({ query: "bill a customer" + "😀".slice(1) });
        console.log(found.tools.join());
        console.log(found.text.includes("customer: string;"));
        (await tools[found.tools[0]]({ customer: "ada" })).text
        "#,
    )
    .await;
    assert_eq!(text(&result), "create_invoice\ntrue\ninvoice for ada", "{}", text(&result));
}

/// A registry with `tick`, a tool that takes `ms` milliseconds, and the script tool beside it.
fn ticking(limits: Limits) -> (Registry, Arc<std::sync::atomic::AtomicUsize>) {
    let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = ticks.clone();
    let schema = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    let tick = FnTool::new(ToolSpec::new("tick", "Wait, then answer.", schema), move |_, args: Value| {
        let counted = counted.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(ToolOutput::text("tock"))
        }
    });
    let tools = Registry::builder().tool(tick).build().unwrap();
    (code_tool(tools).with_limits(limits).beside_its_tools().unwrap(), ticks)
}

async fn call(dispatcher: &Dispatcher, tool: &str, args: Value) -> ToolResult {
    dispatcher.run(ToolCall::new(format!("{tool}-call"), tool, args), CancellationToken::new()).await
}

#[tokio::test]
async fn a_script_past_its_yield_time_runs_on_and_code_output_reads_the_rest_once() {
    let limits = Limits::default().with_yield_time(Some(Duration::from_millis(300)));
    let (registry, _) = ticking(limits);
    let dispatcher = Dispatcher::builder(registry).session_id("one").build();
    let source = "console.log('first'); await tools.tick({ms: 600}); console.log('second'); \
                  await tools.tick({ms: 600}); 'the end'";
    let first = script(&dispatcher, source).await;
    assert!(!first.output.is_error, "{}", text(&first));
    let id = first.output.metadata["script_id"].as_str().unwrap().to_owned();
    assert!(
        text(&first).starts_with(&format!("first\n[The script is still running as `{id}`")),
        "{}",
        text(&first)
    );
    assert!(id.starts_with("script-1-") && id.len() == "script-1-".len() + 16, "{id}");
    assert!(
        text(&first).contains(&format!("Call code_output with {{\"id\": \"{id}\"}}")),
        "{}",
        text(&first)
    );

    // What it prints next, each line once; then its end with its final value.
    let mut seen = String::new();
    let end = loop {
        // The same call each time: code_output polls, which the repeat guard lets through.
        let read = call(&dispatcher, "code_output", json!({"id": id, "yield_ms": 200})).await;
        assert!(!read.output.is_error, "{}", text(&read));
        if read.output.metadata.get("script_id").is_none() {
            break read;
        }
        seen.push_str(
            text(&read)
                .lines()
                .filter(|l| !l.starts_with("[The script"))
                .collect::<Vec<_>>()
                .join("\n")
                .as_str(),
        );
    };
    assert_eq!(format!("{seen}{}", text(&end)).matches("second").count(), 1, "{seen} / {}", text(&end));
    assert!(text(&end).ends_with("the end"), "{}", text(&end));
    assert_eq!(end.output.metadata["nested_calls"], json!(2));

    // Its end is returned once.
    let again = call(&dispatcher, "code_output", json!({"id": id})).await;
    assert!(again.output.is_error);
    assert!(
        text(&again).starts_with(&format!("No script `{id}` is held in this session (none is running now).")),
        "{}",
        text(&again)
    );
}

/// Once a script runs in the background, each call it starts takes turns with the model's
/// exclusive calls (seen in the events: a call's `started` comes once it holds its guards, its
/// `finished` before it lets go); the one running when it went there goes on.
#[tokio::test]
async fn a_held_scripts_calls_take_turns_with_the_models_calls() {
    let limits = Limits::default().with_yield_time(Some(Duration::from_millis(200)));
    let (registry, _) = ticking(limits);
    let events = Events::default();
    let dispatcher = Dispatcher::builder(registry).session_id("one").events(events.sink()).build();
    let source =
        "await tools.tick({ms: 400}); for (let i = 0; i < 4; i++) await tools.tick({ms: 50, i}); 'done'";
    let first = script(&dispatcher, source).await;
    let id = first.output.metadata["script_id"].as_str().expect("held").to_owned();
    // The model's exclusive call, while the script's first call still runs.
    let model = call(&dispatcher, "tick", json!({"ms": 400})).await;
    assert_eq!(text(&model), "tock");
    let end = call(&dispatcher, "code_output", json!({"id": id, "yield_ms": 10_000})).await;
    assert_eq!(text(&end), "done");
    let ticks = events.lifecycle("tick");
    let at = |kind: &str, id: &str| ticks.iter().position(|(k, i)| *k == kind && i == id).unwrap();
    let (model_started, model_finished) = (at("started", "tick-call"), at("finished", "tick-call"));
    // The first call was running when the script went to the background: it goes on.
    assert!(at("started", "call-1.1") < model_started, "{ticks:?}");
    // The ones after it wait for the model's call to end.
    for n in 2..=5 {
        assert!(at("started", &format!("call-1.{n}")) > model_finished, "{ticks:?}");
    }
}

/// `code_output` and `code_stop` take no turn at the gate: a model's exclusive call waiting
/// behind a `code_output` that waits for the script does not keep the script waiting (which
/// would hold all three until `yield_ms`), and `code_stop` stops a script whose call a model's
/// exclusive call waits for, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_or_stopping_a_held_script_never_waits_behind_the_calls_it_keeps_waiting() {
    let limits = Limits::default().with_yield_time(Some(Duration::from_millis(100)));
    let (registry, _) = ticking(limits);
    let dispatcher = Dispatcher::builder(registry).session_id("one").build();
    let first =
        script(&dispatcher, "await tools.tick({ms: 300}); await tools.tick({ms: 300, n: 2}); 'done'").await;
    let id = first.output.metadata["script_id"].as_str().expect("held").to_owned();
    let started = std::time::Instant::now();
    let reading = tokio::spawn({
        let (dispatcher, id) = (dispatcher.clone(), id.clone());
        async move { call(&dispatcher, "code_output", json!({"id": id, "yield_ms": 20_000})).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let model = call(&dispatcher, "tick", json!({"ms": 10})).await;
    assert_eq!(text(&model), "tock");
    let end = reading.await.unwrap();
    assert_eq!(text(&end), "done");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    let held =
        script(&dispatcher, "await tools.tick({ms: 200}); await tools.tick({ms: 5000, n: 2}); 'never'").await;
    let id = held.output.metadata["script_id"].as_str().expect("held").to_owned();
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The model's exclusive call waits for the script's long one.
    let waiting = tokio::spawn({
        let dispatcher = dispatcher.clone();
        async move { call(&dispatcher, "tick", json!({"ms": 10, "n": 3})).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let stopped = call(&dispatcher, "code_stop", json!({"id": id})).await;
    assert!(started.elapsed() < Duration::from_secs(2), "code_stop waited {:?}", started.elapsed());
    assert!(
        text(&stopped).ends_with("was stopped, with the tool calls it was making."),
        "{}",
        text(&stopped)
    );
    assert_eq!(text(&waiting.await.unwrap()), "tock");
}

#[tokio::test]
async fn code_stop_stops_a_held_script_and_its_calls_and_another_session_cannot_reach_it() {
    let limits = Limits::default().with_yield_time(Some(Duration::from_millis(200)));
    let (registry, ticks) = ticking(limits);
    let registry = Arc::new(registry);
    let dispatcher = Dispatcher::builder(registry.clone()).session_id("one").build();
    // Each call's arguments differ: the repeat guard refuses a third identical call in a row.
    let first = script(&dispatcher, "for (let i = 0; ; i++) { await tools.tick({ms: 50, i}); }").await;
    let id = first.output.metadata["script_id"].as_str().unwrap().to_owned();

    // Another session sees no such script.
    let other = Dispatcher::builder(registry).session_id("two").build();
    let theirs = call(&other, "code_stop", json!({"id": id})).await;
    assert!(
        theirs.output.is_error
            && text(&theirs).starts_with(&format!("No script `{id}` is held in this session"))
    );
    let running = ticks.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(ticks.load(std::sync::atomic::Ordering::SeqCst) > running, "the script runs on");

    let stopped = call(&dispatcher, "code_stop", json!({"id": id})).await;
    assert!(!stopped.output.is_error, "{}", text(&stopped));
    assert!(
        text(&stopped)
            .ends_with(&format!("The script `{id}` was stopped, with the tool calls it was making."))
    );
    let after = ticks.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ticks.load(std::sync::atomic::Ordering::SeqCst), after, "no call after the stop");
    let gone = call(&dispatcher, "code_output", json!({"id": id})).await;
    assert!(gone.output.is_error);
}

#[tokio::test]
async fn a_held_script_still_ends_at_its_time_limit_and_a_session_holds_at_most_four() {
    let limits = Limits::default()
        .with_yield_time(Some(Duration::from_millis(100)))
        .with_wall_time(Duration::from_millis(1500));
    let (registry, _) = ticking(limits);
    let dispatcher = Dispatcher::builder(registry).session_id("one").build();
    let endless = "for (let i = 0; ; i++) { await tools.tick({ms: 20, i}); }";
    let mut ids = Vec::new();
    for n in 0..4 {
        // Each script differs: the repeat guard refuses a third identical call in a row.
        let held = script(&dispatcher, &format!("{endless} // {n}")).await;
        ids.push(held.output.metadata["script_id"].as_str().unwrap().to_owned());
    }
    // The fifth is refused before it starts (held, its call would keep the session's calls to
    // read or stop the others waiting), with the ids to read or stop.
    let fifth = script(&dispatcher, endless).await;
    assert!(fifth.output.is_error && fifth.output.metadata.get("script_id").is_none());
    assert!(text(&fifth).starts_with("This session already has 4 scripts left running"), "{}", text(&fifth));
    assert!(ids.iter().all(|id| text(&fifth).contains(id.as_str())), "{}", text(&fifth));
    assert!(text(&fifth).contains("code_stop"), "{}", text(&fifth));
    // Another session has room of its own; one stopped here makes room here.
    let other = Dispatcher::builder(dispatcher.registry().clone()).session_id("two").build();
    let theirs = script(&other, &format!("{endless} // theirs")).await;
    assert!(theirs.output.metadata["script_id"].is_string(), "{}", text(&theirs));
    call(&dispatcher, "code_stop", json!({"id": ids.remove(3)})).await;
    let fifth = script(&dispatcher, &format!("{endless} // again")).await;
    ids.push(fifth.output.metadata["script_id"].as_str().expect("held now").to_owned());
    // The held ones end at their time limit: their end says so.
    let end = call(&dispatcher, "code_output", json!({"id": ids[0], "yield_ms": 5000})).await;
    assert!(end.output.is_error);
    assert!(text(&end).contains("The script was stopped after 1500 ms, its time limit."), "{}", text(&end));
}

#[tokio::test]
async fn without_a_yield_time_a_call_waits_for_its_script_and_no_companion_is_offered() {
    let (registry, _) = ticking(Limits::default().with_yield_time(None));
    assert!(!registry.contains("code_output") && !registry.contains("code_stop"));
    let dispatcher = Dispatcher::new(registry);
    let result = script(&dispatcher, "await tools.tick({ms: 300}); 'done'").await;
    assert_eq!(text(&result), "done");
}

/// A call starts when the script makes it, as a model's call starts when the model sends it, not
/// when the script next waits: a call made before a long computation is under way during it.
#[tokio::test]
async fn a_call_starts_when_the_script_makes_it() {
    let marks: Arc<Mutex<Vec<(&'static str, std::time::Instant)>>> = Arc::default();
    let tool = |name: &'static str| {
        let marks = marks.clone();
        FnTool::new(ToolSpec::new(name, "Mark the time.", json!({"type": "object"})), move |_, _| {
            marks.lock().unwrap().push((name, std::time::Instant::now()));
            async move { Ok(ToolOutput::text(name)) }
        })
    };
    let tools = Registry::builder().tool(tool("first")).tool(tool("last")).build().unwrap();
    let dispatcher = Dispatcher::new(code_tool(tools).beside_its_tools().unwrap());
    let started = std::time::Instant::now();
    let result = script(
        &dispatcher,
        "const first = tools.first({}); let x = 0; for (let i = 0; i < 3e6; i++) x += i; \
         await tools.last({}); (await first).text",
    )
    .await;
    assert_eq!(text(&result), "first");
    let marks = marks.lock().unwrap().clone();
    let at = |name| marks.iter().find(|(n, _)| *n == name).map(|(_, at)| at.duration_since(started)).unwrap();
    // The loop is most of the script's time: the first call ran before it, not after it.
    assert!(at("first") < at("last") / 2, "first at {:?}, last at {:?}", at("first"), at("last"));
}

#[tokio::test]
async fn calls_the_script_did_not_wait_for_still_finish_before_it_ends() {
    let dispatcher = limited(Limits::default());
    // A model's usual slip: `forEach` of an async function, nothing awaited.
    let result = script(
        &dispatcher,
        r#"
        ["a", "b", "c"].forEach(async (text) => {
          const echoed = await tools.echo({ text });
          console.log("echoed " + echoed.text);
        });
        "started"
        "#,
    )
    .await;
    assert!(!result.output.is_error, "{}", text(&result));
    assert_eq!(text(&result), "echoed a\nechoed b\necho c\nstarted".replace("echo c", "echoed c"));
    assert_eq!(result.output.metadata["nested_calls"], json!(3));
    // A call left running when the script fails is stopped with it.
    let failed = script(&dispatcher, "tools.queue({}); throw new Error('early')").await;
    assert!(text(&failed).starts_with("The script failed: Error: early"), "{}", text(&failed));
}

#[tokio::test]
async fn an_error_that_mentions_memory_is_not_the_memory_limit() {
    let dispatcher = limited(Limits::default());
    let echoed = script(&dispatcher, r#"(await tools.echo({ text: "out of memory" })).text"#).await;
    assert_eq!((echoed.output.is_error, text(&echoed).as_str()), (false, "out of memory"));
    let thrown = script(&dispatcher, r#"throw new Error("cc1: out of memory allocating 4096 bytes")"#).await;
    assert_eq!(
        text(&thrown),
        "The script failed: Error: cc1: out of memory allocating 4096 bytes\n    at <eval> (script.js:1:11)"
    );
    let null = script(&dispatcher, "throw null").await;
    // Which cannot be told from the interpreter running out of memory while making an error.
    assert_eq!(
        text(&null),
        "The script failed: null was thrown: the script threw it, or it ran out of memory (its memory limit) \
         while an error was made; if it keeps more than it needs, keep less"
    );
    let rejected = script(&dispatcher, "Promise.reject(null); 'done'").await;
    assert_eq!((rejected.output.is_error, text(&rejected).as_str()), (false, "done"));
}

#[tokio::test]
async fn values_json_cannot_write_are_printed_as_what_they_are() {
    let dispatcher = limited(Limits::default());
    for (source, printed) in [
        ("const a = {}; a.self = a; a", "(a value JSON cannot write: TypeError: circular reference)"),
        ("10n", "10n"),
        ("Symbol('x')", "Symbol(x)"),
        ("new Map([['k', 1]])", "{\n  \"Map\": [\n    [\n      \"k\",\n      1\n    ]\n  ]\n}"),
    ] {
        let result = script(&dispatcher, source).await;
        assert!(!result.output.is_error, "{source}: {}", text(&result));
        assert_eq!(text(&result), printed, "{source}");
    }
    let logged =
        script(&dispatcher, "console.log(new Error('boom')); console.log({ n: 2n, s: new Set([1]) })").await;
    assert_eq!(
        text(&logged),
        "{\n  \"error\": \"Error: boom\"\n}\n{\n  \"n\": \"2n\",\n  \"s\": {\n    \"Set\": [\n      1\n    ]\n  }\n}\n"
    );
    let caught = script(&dispatcher, "try { await tools.echo({ text: 5 }) } catch (e) { e }").await;
    assert!(text(&caught).starts_with("{\n  \"error\": \"ToolError: "), "{}", text(&caught));
    assert!(
        text(&caught).contains("\"tool\": \"echo\",\n  \"kind\": \"invalid_arguments\""),
        "{}",
        text(&caught)
    );
    // Probing `tools` makes no call, and a replaced JSON.stringify does not reach the host.
    let probed = script(
        &dispatcher,
        "try { String(tools) } catch (e) { console.log(e.name) }; JSON.stringify = () => undefined; \
         (await tools.echo({ text: 'still' })).text",
    )
    .await;
    assert_eq!(text(&probed), "TypeError\nstill");
    assert_eq!(probed.output.metadata["nested_calls"], json!(1));
}

#[tokio::test]
async fn a_long_result_keeps_its_end_where_the_script_says_why_it_failed() {
    let registry = code_tool(gate_registry(1)).beside_its_tools().unwrap();
    let dispatcher = Dispatcher::new(registry);
    let failed = script(
        &dispatcher,
        "for (let i = 0; i < 5000; i++) console.log('line ' + i); throw new Error('the cause')",
    )
    .await;
    assert!(failed.output.is_error);
    assert!(text(&failed).starts_with("line 0\n"), "{}", &text(&failed)[..100]);
    assert!(text(&failed).contains("The script failed: Error: the cause"), "the end is kept");
    assert!(failed.output.metadata.get("truncation").is_some(), "it was cut");
}

#[tokio::test]
async fn a_session_that_ends_stops_the_scripts_it_left_running() {
    let limits = Limits::default().with_yield_time(Some(Duration::from_millis(100)));
    let (registry, ticks) = ticking(limits);
    let dispatcher = Dispatcher::builder(registry).session_id("one").build();
    let held = script(&dispatcher, "for (let i = 0; ; i++) { await tools.tick({ms: 10, i}); }").await;
    let id = held.output.metadata["script_id"].as_str().expect("held").to_owned();
    // The host clears the state of a session that ended (an HTTP client deleted it).
    dispatcher.session().clear();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = ticks.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ticks.load(std::sync::atomic::Ordering::SeqCst), after, "no call after the session ended");
    let gone = call(&dispatcher, "code_output", json!({"id": id})).await;
    assert!(gone.output.is_error, "{}", text(&gone));
}
