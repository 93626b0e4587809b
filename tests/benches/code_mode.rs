//! Code mode against single calls, on a real source tree (this repository by default).
//!
//! Three multi-step tasks, each done once as the sequence of single calls a model would make
//! (every result goes back to the model; each dependent step is a round trip) and once as one
//! script of the `code` tool (only what it prints comes back). Prints bytes returned to the
//! model, round trips and wall time per task, checks that both ways give the same answer, then
//! the engine's own cost: a script's start, and a nested call against `Registry::call` and
//! `Dispatcher::run` of the same tool, in interleaved rounds.
//!
//! `cargo bench -p tool-tests --bench code_mode -- [--root DIR] [--rounds N] [--calls N]`
//!
//! With `CODE_MODE_ROW` and `CODE_MODE_COUNT` set it runs one row of the engine's cost that many
//! times and nothing else, for `tests/benches/code_mode_instructions.sh` to count instructions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_runtime::code::{CodeTool, Limits, WorkerCommand};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolContext, ToolOutput, ToolSpec, spec::FnTool,
};
use tools_std::Workspace;

struct Settings {
    root: PathBuf,
    rounds: usize,
    calls: usize,
}

fn settings() -> Settings {
    let mut settings = Settings {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf(),
        rounds: 5,
        calls: 2000,
    };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        let number = || pair[1].parse::<usize>().unwrap_or_else(|_| panic!("{} needs a number", pair[0]));
        match pair[0].as_str() {
            "--root" => settings.root = PathBuf::from(&pair[1]),
            "--rounds" => settings.rounds = number().max(1),
            "--calls" => settings.calls = number().max(1),
            _ => {}
        }
    }
    settings
}

/// One way of doing a task: what came back to the model, in how many round trips, how long the
/// tools took, and the answer.
struct Run {
    bytes: usize,
    round_trips: usize,
    wall: Duration,
    answer: String,
}

struct Fx {
    dispatcher: Dispatcher,
    next: std::cell::Cell<u64>,
}

impl Fx {
    async fn call(&self, tool: &str, args: Value) -> String {
        let id = self.next.get() + 1;
        self.next.set(id);
        let result = self
            .dispatcher
            .run(ToolCall::new(format!("call-{id}"), tool, args), CancellationToken::new())
            .await;
        let text = result.output.text_content();
        assert!(!result.output.is_error, "{tool}: {text}");
        text
    }

    async fn script(&self, source: &str) -> String {
        self.call("code", json!({ "script": source })).await
    }
}

/// The next offset a paged `grep` result offers (`use offset=N`), if any.
fn next_offset(text: &str) -> Option<u64> {
    let at = text.rfind("use offset=")? + "use offset=".len();
    text[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `(file, line)` of each match of a content-mode `grep` result.
fn matches(text: &str, out: &mut BTreeSet<(String, u64)>) {
    let mut file = String::new();
    for line in text.lines() {
        if line.starts_with('[') || line.is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            file = line.to_owned();
            continue;
        }
        if let Some((number, _)) = line.trim_start().split_once(": ")
            && let Ok(number) = number.parse()
        {
            out.insert((file.clone(), number));
        }
    }
}

const CALLER: &str = "text_content";

fn callers_answer(found: &BTreeSet<(String, u64)>) -> String {
    let mut by_file: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (file, line) in found {
        by_file.entry(file).or_default().push(*line);
    }
    by_file
        .iter()
        .map(|(file, lines)| {
            format!("{file}:{}", lines.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every call of `text_content(` but its definitions, as `file:line,line,...`.
async fn callers_single(fx: &Fx) -> Run {
    let started = Instant::now();
    let (mut bytes, mut round_trips, mut offset) = (0, 0, 0);
    let mut found = BTreeSet::new();
    loop {
        let args = json!({"pattern": format!(r"\b{CALLER}\("), "glob": "*.rs", "offset": offset});
        let text = fx.call("grep", args).await;
        bytes += text.len();
        round_trips += 1;
        matches(&text, &mut found);
        match next_offset(&text) {
            Some(next) => offset = next,
            None => break,
        }
    }
    // The definitions are read off the lines themselves.
    let definitions = fx.call("grep", json!({"pattern": format!(r"fn {CALLER}\("), "glob": "*.rs"})).await;
    bytes += definitions.len();
    round_trips += 1;
    let mut defined = BTreeSet::new();
    matches(&definitions, &mut defined);
    found.retain(|m| !defined.contains(m));
    Run { bytes, round_trips, wall: started.elapsed(), answer: callers_answer(&found) }
}

const CALLERS_SCRIPT: &str = r#"
const matches = (text, into) => {
  let file = "";
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("[")) continue;
    if (!line.startsWith(" ")) { file = line; continue; }
    const m = line.match(/^\s+(\d+): /);
    if (m) into.add(`${file}\u0000${m[1]}`);
  }
};
const grepAll = async (pattern) => {
  const found = new Set();
  for (let offset = 0; ; ) {
    const { text } = await tools.grep({ pattern, glob: "*.rs", offset });
    matches(text, found);
    const next = text.match(/use offset=(\d+)/);
    if (!next) return found;
    offset = Number(next[1]);
  }
};
const [calls, definitions] = await Promise.all([grepAll("\\bNAME\\("), grepAll("fn NAME\\(")]);
const byFile = new Map();
for (const key of [...calls].filter((k) => !definitions.has(k))) {
  const [file, line] = key.split("\u0000");
  if (!byFile.has(file)) byFile.set(file, []);
  byFile.get(file).push(Number(line));
}
[...byFile.keys()].sort().map((f) => `${f}:${byFile.get(f).sort((a, b) => a - b).join(",")}`).join("\n")
"#;

/// Files with a TODO per top-level directory, from `grep`'s count mode.
fn todo_counts(text: &str, into: &mut BTreeMap<String, u64>) {
    for line in text.lines().filter(|l| !l.starts_with('[') && !l.is_empty()) {
        if let Some((file, count)) = line.rsplit_once(": ")
            && let Ok(count) = count.parse::<u64>()
        {
            let dir = file.split_once('/').map_or(".", |(dir, _)| dir);
            *into.entry(dir.to_owned()).or_default() += count;
        }
    }
}

fn todo_answer(counts: &BTreeMap<String, u64>) -> String {
    counts.iter().map(|(dir, n)| format!("{dir}: {n}")).collect::<Vec<_>>().join("\n")
}

async fn todos_single(fx: &Fx) -> Run {
    let started = Instant::now();
    let (mut bytes, mut round_trips, mut offset) = (0, 0, 0);
    let mut counts = BTreeMap::new();
    loop {
        let text =
            fx.call("grep", json!({"pattern": "TODO", "output_mode": "count", "offset": offset})).await;
        bytes += text.len();
        round_trips += 1;
        todo_counts(&text, &mut counts);
        match next_offset(&text) {
            Some(next) => offset = next,
            None => break,
        }
    }
    Run { bytes, round_trips, wall: started.elapsed(), answer: todo_answer(&counts) }
}

const TODOS_SCRIPT: &str = r#"
const counts = {};
for (let offset = 0; ; ) {
  const { text } = await tools.grep({ pattern: "TODO", output_mode: "count", offset });
  for (const line of text.split("\n")) {
    const m = line.match(/^(.*): (\d+)$/);
    if (!m || line.startsWith("[")) continue;
    const slash = m[1].indexOf("/");
    const dir = slash < 0 ? "." : m[1].slice(0, slash);
    counts[dir] = (counts[dir] ?? 0) + Number(m[2]);
  }
  const next = text.match(/use offset=(\d+)/);
  if (!next) break;
  offset = Number(next[1]);
}
Object.keys(counts).sort().map((dir) => `${dir}: ${counts[dir]}`).join("\n")
"#;

const LARGEST: &str = "find . -path ./target -prune -o -path ./.git -prune -o -type f -printf '%s %P\\n' \
                       | sort -k1,1nr -k2 | head -5";

/// The first line of a `read` result (its numbered text, without the number).
fn first_line(text: &str) -> String {
    text.lines().next().and_then(|l| l.split_once('\t')).map_or("", |(_, t)| t).to_owned()
}

async fn largest_single(fx: &Fx) -> Run {
    let started = Instant::now();
    let listed = fx.call("bash", json!({"command": LARGEST})).await;
    let mut bytes = listed.len();
    let files: Vec<String> =
        listed.lines().filter_map(|l| l.split_once(' ')).map(|(_, path)| path.to_owned()).collect();
    // The five reads go in one turn (a model's parallel calls).
    let mut answer = Vec::new();
    for path in &files {
        let text = fx.call("read", json!({"path": path, "limit": 1})).await;
        bytes += text.len();
        answer.push(format!("{path}: {}", first_line(&text)));
    }
    Run { bytes, round_trips: 2, wall: started.elapsed(), answer: answer.join("\n") }
}

fn largest_script() -> String {
    format!(
        r#"
const listed = await tools.bash({{ command: {command} }});
const files = listed.text.split("\n").filter((l) => l.includes(" ")).map((l) => l.slice(l.indexOf(" ") + 1));
const reads = await Promise.all(files.map((path) => tools.read({{ path, limit: 1 }})));
files.map((path, i) => {{
  const line = reads[i].text.split("\n")[0];
  return `${{path}}: ${{line.slice(line.indexOf("\t") + 1)}}`;
}}).join("\n")
"#,
        command = Value::from(LARGEST)
    )
}

async fn scripted(fx: &Fx, source: &str) -> Run {
    let started = Instant::now();
    let answer = fx.script(source).await;
    Run { bytes: answer.len(), round_trips: 1, wall: started.elapsed(), answer }
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn echo_tool() -> FnTool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    FnTool::new(
        ToolSpec::new("echo", "Echo the text.", schema).with_parallel(true),
        |_, args: Value| async move { Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default().to_owned())) },
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    if let (Ok(row), Ok(count)) = (std::env::var("CODE_MODE_ROW"), std::env::var("CODE_MODE_COUNT")) {
        let count = count.parse().expect("CODE_MODE_COUNT is a number");
        runtime.block_on(one_row(&row, count));
        return;
    }
    let settings = settings();
    runtime.block_on(tasks(&settings));
    runtime.block_on(overhead(&settings));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("\nload average at the end: {}", load.trim());
}

async fn tasks(settings: &Settings) {
    let tools = Arc::new(Registry::builder().tools(tools_std::all()).build().expect("the standard tools"));
    let registry = CodeTool::new(tools).beside_its_tools().expect("the registry");
    let dispatcher = Dispatcher::builder(registry)
        .dependency(Workspace::new(&settings.root).expect("the workspace"))
        .dependency(tools_std::checkpoint::SessionCheckpoints::Off)
        .build();
    let fx = Fx { dispatcher, next: std::cell::Cell::new(0) };
    println!("tree: {}\n", settings.root.display());
    println!("| task | way | bytes to the model | round trips | wall time | same answer |");
    println!("| --- | --- | ---: | ---: | ---: | --- |");
    let callers = CALLERS_SCRIPT.replace("NAME", CALLER);
    let largest = largest_script();
    let jobs: [(&str, &str); 3] = [
        ("callers of `text_content`", callers.as_str()),
        ("TODOs per directory", TODOS_SCRIPT),
        ("first lines of the 5 largest files", largest.as_str()),
    ];
    for (i, (task, script)) in jobs.iter().enumerate() {
        // Warm the file cache and the first-call paths on both sides, then measure.
        let _ = single(&fx, i).await;
        let _ = scripted(&fx, script).await;
        let one = single(&fx, i).await;
        let two = scripted(&fx, script).await;
        let same = one.answer == two.answer;
        if !same {
            eprintln!(
                "answers differ for {task}:\n--- single calls\n{}\n--- script\n{}",
                one.answer, two.answer
            );
        }
        let fewer = 100.0 * (1.0 - two.bytes as f64 / one.bytes as f64);
        println!("| {task} | single calls | {} | {} | {} | |", one.bytes, one.round_trips, ms(one.wall));
        println!(
            "| | one script | {} ({fewer:.0}% fewer; script {} bytes) | {} | {} | {} |",
            two.bytes,
            script.len(),
            two.round_trips,
            ms(two.wall),
            if same { "yes" } else { "NO" }
        );
        assert!(same, "both ways give the same answer");
    }
}

async fn single(fx: &Fx, task: usize) -> Run {
    match task {
        0 => callers_single(fx).await,
        1 => todos_single(fx).await,
        _ => largest_single(fx).await,
    }
}

/// The `echo` tool alone, and a dispatcher of it with the script tool beside it, allowed `n`
/// nested calls per script (and the 15 more a last batch of 16 may make), each script's
/// interpreter on a thread or, `in_a_worker`, in a process of the `code-worker` program.
fn engine_fixture(n: usize, in_a_worker: bool) -> (Arc<Registry>, Dispatcher) {
    let tools = Arc::new(Registry::builder().tool(echo_tool()).build().expect("echo"));
    let limits = Limits::default().with_nested_calls(u32::try_from(n + 15).unwrap_or(u32::MAX));
    let mut tool = CodeTool::new(tools.clone()).with_limits(limits);
    if in_a_worker {
        tool = tool.in_worker(WorkerCommand::new(env!("CARGO_BIN_EXE_code-worker")));
    }
    let registry = tool.beside_its_tools().expect("the registry");
    let dispatcher =
        Dispatcher::builder(registry).repeat_guard(tool_runtime::dispatch::RepeatGuard::DISABLED).build();
    (tools, dispatcher)
}

/// A script of `n` calls of `echo`, one at a time.
fn sequential(n: usize) -> String {
    format!("for (let i = 0; i < {n}; i++) await tools.echo({{ text: String(i) }});")
}

/// A script of `n` calls of `echo`, 16 at a time with `Promise.all`.
fn batched(n: usize) -> String {
    format!(
        "for (let i = 0; i < {n}; i += 16) await Promise.all(Array.from({{ length: 16 }}, (_, j) => tools.echo({{ text: String(i + j) }})));"
    )
}

async fn run_script(dispatcher: &Dispatcher, source: String) {
    let result = dispatcher
        .run(ToolCall::new("s", "code", json!({ "script": source })), CancellationToken::new())
        .await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
}

/// One row of the engine's cost, `n` times, for counting its instructions
/// (`tests/benches/code_mode_instructions.sh`): `registry_call`, `dispatcher_run`,
/// `nested_await` (one script of `n` calls), `nested_all` (16 at a time) or `script_start`
/// (`n` scripts of no call); with `CODE_MODE_WORKER=1`, each script's interpreter in a worker.
async fn one_row(row: &str, n: usize) {
    let in_a_worker = std::env::var("CODE_MODE_WORKER").is_ok_and(|v| v == "1");
    let (tools, dispatcher) = engine_fixture(n.max(1), in_a_worker);
    match row {
        "registry_call" => {
            for i in 0..n {
                let args = json!({"text": i.to_string()}).to_string();
                tools.call("echo", &args, ToolContext::builder("echo").build()).await.expect("echo");
            }
        }
        "dispatcher_run" => {
            for i in 0..n {
                let call = ToolCall::new(format!("d{i}"), "echo", json!({"text": i.to_string()}));
                dispatcher.run(call, CancellationToken::new()).await;
            }
        }
        "nested_await" => run_script(&dispatcher, sequential(n)).await,
        "nested_all" => run_script(&dispatcher, batched(n)).await,
        "script_start" => {
            for _ in 0..n {
                run_script(&dispatcher, "1".to_owned()).await;
            }
        }
        other => panic!(
            "CODE_MODE_ROW={other}: one of registry_call, dispatcher_run, nested_await, nested_all, script_start"
        ),
    }
}

async fn overhead(settings: &Settings) {
    let n = settings.calls;
    let (tools, dispatcher) = engine_fixture(n, false);
    let (_, in_a_worker_dispatcher) = engine_fixture(n, true);
    let run = |source: String, in_a_worker: bool| {
        let dispatcher = if in_a_worker { in_a_worker_dispatcher.clone() } else { dispatcher.clone() };
        async move {
            let started = Instant::now();
            let result = dispatcher
                .run(ToolCall::new("s", "code", json!({ "script": source })), CancellationToken::new())
                .await;
            assert!(!result.output.is_error, "{}", result.output.text_content());
            started.elapsed()
        }
    };
    let (sequential, batched) = (sequential(n), batched(n));
    let (mut start, mut direct, mut dispatched, mut nested, mut nested_batched) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut worker_start, mut worker_ready, mut worker_nested, mut worker_batched) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..settings.rounds {
        // A script that makes no call: the interpreter's start and end, through the dispatcher.
        let runs = 200;
        for (in_a_worker, start) in [(false, &mut start), (true, &mut worker_start)] {
            let mut total = Duration::ZERO;
            for _ in 0..runs {
                total += run("1".to_owned(), in_a_worker).await;
            }
            start.push(total.as_secs_f64() * 1e6 / runs as f64);
        }
        // One script at a time, the worker started ahead for it ready and idle.
        let mut total = Duration::ZERO;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            total += run("1".to_owned(), true).await;
        }
        worker_ready.push(total.as_secs_f64() * 1e6 / 50.0);

        let started = Instant::now();
        for i in 0..n {
            let ctx = ToolContext::builder("echo").build();
            let args = json!({"text": i.to_string()}).to_string();
            tools.call("echo", &args, ctx).await.expect("echo");
        }
        direct.push(started.elapsed().as_secs_f64() * 1e6 / n as f64);

        let started = Instant::now();
        for i in 0..n {
            let call = ToolCall::new(format!("d{i}"), "echo", json!({"text": i.to_string()}));
            dispatcher.run(call, CancellationToken::new()).await;
        }
        dispatched.push(started.elapsed().as_secs_f64() * 1e6 / n as f64);

        let empty = start.last().copied().unwrap_or_default();
        nested.push((run(sequential.clone(), false).await.as_secs_f64() * 1e6 - empty) / n as f64);
        nested_batched.push((run(batched.clone(), false).await.as_secs_f64() * 1e6 - empty) / n as f64);
        let empty = worker_start.last().copied().unwrap_or_default();
        worker_nested.push((run(sequential.clone(), true).await.as_secs_f64() * 1e6 - empty) / n as f64);
        worker_batched.push((run(batched.clone(), true).await.as_secs_f64() * 1e6 - empty) / n as f64);
    }
    println!("\n{} rounds, {n} calls per path per round (median, fastest-slowest round):\n", settings.rounds);
    println!("| what | per call or script |");
    println!("| --- | ---: |");
    for (what, values) in [
        ("script start and end (`1`, through `Dispatcher::run`)", start),
        ("`Registry::call` of `echo`", direct),
        ("`Dispatcher::run` of `echo`", dispatched),
        ("nested call, `await` one at a time", nested),
        ("nested call, `Promise.all` of 16", nested_batched),
        ("in a worker: script start and end, back to back", worker_start),
        ("in a worker: script start and end, one at a time (30 ms apart)", worker_ready),
        ("in a worker: nested call, `await` one at a time", worker_nested),
        ("in a worker: nested call, `Promise.all` of 16", worker_batched),
    ] {
        let (median, low, high) = median(values);
        println!("| {what} | {median:.1} µs ({low:.1}-{high:.1}) |");
    }
}
