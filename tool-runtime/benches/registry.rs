//! A registry of 1,000 generated tools: building it, compiling every argument validator, and
//! producing all definitions in each provider format, each next to a hand-written baseline.
//!
//! The 1,000 tools are `FnTool`s made at run time from the schemas that `#[tool]` emits for five
//! template tools (two integers; a rich search with an enum, an array and a nested optional
//! object; a list of nested edits; no arguments; optional scalars and an optional enum), so every
//! schema is exactly what the macro produces, `$defs` included.
//!
//! Run with `cargo bench -p tool-runtime --bench registry`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tool_runtime::providers::{DefinitionOptions, Provider};
use tool_runtime::{Registry, Tool, ToolError, ToolOutput, ToolSpec, spec::FnTool, tool};

const TOOLS: usize = 1000;

/// Add two numbers.
#[tool(parallel, read_only)]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

/// How `search` reports matches.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Mode {
    /// Matching lines.
    Content,
    /// Only the names of matching files.
    FilesWithMatches,
    /// A count per file.
    Count,
}

/// A range of lines.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct LineRange {
    /// First line, 1-based.
    #[schemars(range(min = 1))]
    start: u32,
    /// Last line, inclusive.
    end: Option<u32>,
}

/// Search file contents with a regular expression.
///
/// Returns matching lines grouped by file, newest files first.
#[tool(parallel, read_only)]
async fn search(
    /// Regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search, relative to the workspace root.
    path: Option<String>,
    /// Glob patterns of files to include.
    globs: Vec<String>,
    /// What to report.
    mode: Mode,
    /// Maximum number of matches.
    #[arg(default = 100)]
    #[schemars(range(min = 1, max = 1000))]
    limit: u32,
    /// Only search these lines of each file.
    lines: Option<LineRange>,
) -> Result<String, ToolError> {
    let _ = (path, globs, mode, limit, lines);
    Ok(pattern)
}

/// One replacement.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Edit {
    /// The exact text to replace.
    old: String,
    /// The text to put in its place.
    new: String,
    /// Replace every occurrence.
    #[serde(default)]
    all: bool,
}

/// Apply edits to a file, in order.
#[tool(destructive)]
async fn apply_edits(
    /// The file to edit.
    file: String,
    /// The edits to apply.
    edits: Vec<Edit>,
) -> Result<String, ToolError> {
    Ok(format!("{file}: {}", edits.len()))
}

/// List the open tasks.
#[tool(parallel, read_only)]
async fn tasks() -> Result<String, ToolError> {
    Ok(String::new())
}

/// Output format.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Format {
    Json,
    Text,
}

/// Run a shell command.
#[tool(timeout = "2m")]
async fn run(
    /// The command line.
    command: String,
    /// Working directory.
    cwd: Option<String>,
    /// Time limit in seconds.
    #[schemars(range(min = 1, max = 600))]
    timeout_secs: Option<u32>,
    /// How to format the output.
    format: Option<Format>,
    /// Run in the background.
    #[arg(default = false)]
    background: bool,
) -> Result<String, ToolError> {
    let _ = (cwd, timeout_secs, format, background);
    Ok(command)
}

fn templates() -> Vec<ToolSpec> {
    let tools: [Arc<dyn Tool>; 5] = [
        Arc::new(AddTool),
        Arc::new(SearchTool),
        Arc::new(ApplyEditsTool),
        Arc::new(TasksTool),
        Arc::new(RunTool),
    ];
    tools.iter().map(|t| t.spec().clone()).collect()
}

/// `TOOLS` tools, each a copy of a template's spec under its own name and description.
fn generated_tools() -> Vec<Arc<dyn Tool>> {
    let templates = templates();
    (0..TOOLS)
        .map(|i| {
            let mut spec = templates[i % templates.len()].clone();
            spec.name = format!("{}_{i}", spec.name);
            spec.description = format!("{} (generated tool number {i})", spec.description);
            spec.source = None;
            Arc::new(FnTool::new(spec, |_ctx, _args| async { Ok(ToolOutput::text("ok")) })) as Arc<dyn Tool>
        })
        .collect()
}

/// What a registry without the framework does: a name-to-tool map.
fn baseline_map(tools: Vec<Arc<dyn Tool>>) -> HashMap<String, Arc<dyn Tool>> {
    let mut map = HashMap::with_capacity(tools.len());
    for tool in tools {
        map.insert(tool.spec().name.clone(), tool);
    }
    map
}

/// What a loop without the framework sends: name, description and the schema copied as is.
fn baseline_definitions(registry: &Registry) -> Vec<Value> {
    registry
        .specs()
        .map(|spec| {
            let mut function = Map::new();
            function.insert("name".to_owned(), Value::String(spec.name.clone()));
            function.insert("description".to_owned(), Value::String(spec.description.clone()));
            function.insert("parameters".to_owned(), spec.input_schema.clone());
            let mut definition = Map::new();
            definition.insert("type".to_owned(), Value::String("function".to_owned()));
            definition.insert("function".to_owned(), Value::Object(function));
            Value::Object(definition)
        })
        .collect()
}

/// A valid call for the tool `name`, by its template.
fn valid_arguments(name: &str) -> &'static str {
    match name.rsplit_once('_').map_or(name, |(template, _)| template) {
        "add" => r#"{"a": 1, "b": 2}"#,
        "search" => r#"{"pattern": "x", "globs": [], "mode": "count"}"#,
        "apply_edits" => r#"{"file": "a", "edits": [{"old": "x", "new": "y"}]}"#,
        "tasks" => "{}",
        "run" => r#"{"command": "ls"}"#,
        other => panic!("no arguments for {other}"),
    }
}

fn build(c: &mut Criterion) {
    let tools = generated_tools();
    let registry = Registry::builder().tools(tools.clone()).build().expect("1,000 distinct names");
    assert_eq!(registry.len(), TOOLS);

    let mut group = c.benchmark_group("registry_build_1000");
    group.throughput(Throughput::Elements(TOOLS as u64));
    group.bench_function("baseline_hashmap", |b| {
        b.iter_batched(|| tools.clone(), |tools| black_box(baseline_map(tools)), BatchSize::SmallInput)
    });
    group.bench_function("registry_build", |b| {
        b.iter_batched(
            || tools.clone(),
            |tools| black_box(Registry::builder().tools(tools).build().expect("registry")),
            BatchSize::SmallInput,
        )
    });
    // Validators are compiled on a tool's first call; this is the cost of every tool's first call
    // (a fresh registry each time, so nothing is cached).
    group.sample_size(10);
    group.bench_function("registry_build_and_first_validation_of_each", |b| {
        b.iter_batched(
            || tools.clone(),
            |tools| {
                let registry = Registry::builder().tools(tools).build().expect("registry");
                for name in registry.names() {
                    registry.validate(name, valid_arguments(name)).expect("valid arguments");
                }
                black_box(registry)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // What a `#[tool]` pays once per process, on its first `spec()`: schemars generation.
    let mut group = c.benchmark_group("schema_generation");
    group.bench_function("search_args", |b| {
        b.iter(|| black_box(tool_runtime::schema::args_schema::<SearchArgs>()))
    });
    group.finish();
}

/// The arguments of `search` as one struct, for the schema generation row.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SearchArgs {
    /// Regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search, relative to the workspace root.
    path: Option<String>,
    /// Glob patterns of files to include.
    globs: Vec<String>,
    /// What to report.
    mode: Mode,
    /// Maximum number of matches.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<u32>,
    /// Only search these lines of each file.
    lines: Option<LineRange>,
}

fn definitions(c: &mut Criterion) {
    let registry = Registry::builder().tools(generated_tools()).build().expect("registry");
    let mut group = c.benchmark_group("definitions_1000");
    group.throughput(Throughput::Elements(TOOLS as u64));
    group.bench_function("baseline_schema_as_is", |b| {
        b.iter_with_large_drop(|| baseline_definitions(&registry))
    });
    let mut cases: Vec<(String, Provider, DefinitionOptions)> =
        Provider::ALL.iter().map(|&p| (p.as_str().to_owned(), p, DefinitionOptions::default())).collect();
    cases.insert(1, ("openai-chat-strict".to_owned(), Provider::OpenAiChat, DefinitionOptions::strict()));
    cases.insert(
        3,
        ("openai-responses-strict".to_owned(), Provider::OpenAiResponses, DefinitionOptions::strict()),
    );
    for (label, provider, options) in cases {
        let all = provider.definitions(&registry, &options).expect("every template lowers");
        assert_eq!(all.len(), TOOLS);
        let bytes = serde_json::to_vec(&all).expect("serializable").len();
        eprintln!("{label}: {TOOLS} definitions, {} KiB as JSON", bytes / 1024);
        group.bench_function(label, |b| b.iter_with_large_drop(|| provider.definitions(&registry, &options)));
    }
    group.finish();
}

criterion_group!(benches, build, definitions);
criterion_main!(benches);
