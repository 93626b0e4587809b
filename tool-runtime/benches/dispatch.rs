//! Dispatch overhead of a trivial `#[tool]`: one call (raw JSON in, validated, run, result out)
//! and a batch of 64 parallel calls, each next to a hand-written baseline (serde + direct call);
//! and argument validation of a valid and of an invalid call, for that tool and for one with a
//! rich schema, next to serde alone.
//!
//! Run with `cargo bench -p tool-runtime --bench dispatch`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use tool_runtime::{CancellationToken, Dispatcher, Registry, ToolCall, ToolError, ToolOutput, tool};

/// Add two numbers.
#[tool(parallel)]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// What a loop without the framework does: parse, call, wrap.
async fn baseline(raw: &str) -> ToolOutput {
    match serde_json::from_str::<AddArgs>(raw) {
        Ok(args) => match add(args.a, args.b).await {
            Ok(text) => ToolOutput::text(text),
            Err(error) => ToolOutput::error(error.message()),
        },
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

#[path = "common/search.rs"]
mod search;
use search::{SearchArgs, SearchTool};

const ADD_VALID: &str = r#"{"a": 40, "b": 2}"#;
/// Three problems: a wrong type, a missing argument, an unknown one.
const ADD_INVALID: &str = r#"{"a": "forty", "c": 2}"#;
const SEARCH_VALID: &str = r#"{"pattern": "fn main", "path": "src", "globs": ["*.rs", "*.toml"],
    "mode": "content", "limit": 50, "case_insensitive": null, "lines": {"start": 1, "end": 200}}"#;
/// Four problems: an empty pattern, a bad enum value, a limit out of range, a bad nested field.
const SEARCH_INVALID: &str = r#"{"pattern": "", "globs": ["*.rs"], "mode": "lines", "limit": 5000,
    "lines": {"start": 0}}"#;

fn dispatcher() -> Dispatcher {
    let registry = Registry::builder().tool(AddTool).tool(SearchTool).build().expect("registry");
    Dispatcher::new(registry)
}

fn call(i: usize) -> ToolCall {
    ToolCall {
        id: format!("call_{i}"),
        name: "add".to_owned(),
        arguments: format!(r#"{{"a": {i}, "b": 2}}"#).into(),
    }
}

fn single_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let dispatcher = dispatcher();
    let token = CancellationToken::new();
    let mut group = c.benchmark_group("single_call");
    group.bench_function("baseline_serde_direct", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters {
                    // Build the call as the dispatcher case does, so only dispatch differs.
                    let call = call(i as usize % 1000);
                    black_box(baseline(black_box(&call.arguments.to_text())).await);
                }
                start.elapsed()
            })
        })
    });
    // The share of the overhead spent in lookup + JSON Schema validation alone.
    let registry = dispatcher.registry().clone();
    group.bench_function("registry_validate_only", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters {
                let call = call(i as usize % 1000);
                let _ = black_box(registry.validate(&call.name, black_box(call.arguments)));
            }
            start.elapsed()
        })
    });
    group.bench_function("dispatcher_run", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters {
                    black_box(dispatcher.run(black_box(call(i as usize % 1000)), token.clone()).await);
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

fn batch_64(c: &mut Criterion) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let dispatcher = dispatcher();
    let mut group = c.benchmark_group("batch_64_parallel");
    group.throughput(Throughput::Elements(64));
    // Both loops run as a task on the runtime's workers, as an agent loop would.
    group.bench_function("baseline_serde_direct", |b| {
        b.iter_custom(|iters| {
            rt.block_on(rt.spawn(async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let calls: Vec<ToolCall> = (0..64).map(call).collect();
                    let start = Instant::now();
                    let mut results = Vec::with_capacity(64);
                    for call in &calls {
                        results.push(baseline(&call.arguments.to_text()).await);
                    }
                    black_box(results);
                    total += start.elapsed();
                }
                total
            }))
            .expect("bench task")
        })
    });
    group.bench_function("dispatcher_run_batch", |b| {
        b.iter_custom(|iters| {
            let dispatcher = dispatcher.clone();
            rt.block_on(rt.spawn(async move {
                let token = CancellationToken::new();
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let calls: Vec<ToolCall> = (0..64).map(call).collect();
                    let start = Instant::now();
                    let results = dispatcher.run_batch(calls, token.clone()).await;
                    black_box(results.expect("no fatal error"));
                    total += start.elapsed();
                }
                total
            }))
            .expect("bench task")
        })
    });
    group.finish();
}

/// `Registry::validate` (lookup, JSON parse, leniency pass, JSON Schema validation, and on failure
/// the model-facing message listing every problem) against `serde_json::from_str` into the typed
/// arguments, which stops at the first problem.
fn validation(c: &mut Criterion) {
    let registry = dispatcher().registry().clone();
    // The validator is compiled on first use; keep that out of the measurement.
    for (name, raw) in [("add", ADD_VALID), ("search", SEARCH_VALID)] {
        assert!(registry.validate(name, raw).is_ok(), "{name} accepts {raw}");
    }
    for (name, raw) in [("add", ADD_INVALID), ("search", SEARCH_INVALID)] {
        let error = registry.validate(name, raw).expect_err("invalid");
        eprintln!("{name}: {}", error.message());
    }
    assert!(serde_json::from_str::<AddArgs>(ADD_VALID).is_ok());
    assert!(serde_json::from_str::<AddArgs>(ADD_INVALID).is_err());
    assert!(serde_json::from_str::<SearchArgs>(SEARCH_VALID).is_ok());
    assert!(serde_json::from_str::<SearchArgs>(SEARCH_INVALID).is_err());

    let mut group = c.benchmark_group("validation");
    let cases = [("add", "valid", ADD_VALID), ("add", "invalid", ADD_INVALID)];
    for (name, kind, raw) in cases {
        group.bench_function(format!("{name}_{kind}/baseline_serde"), |b| {
            b.iter(|| black_box(serde_json::from_str::<AddArgs>(black_box(raw)).is_ok()))
        });
        group.bench_function(format!("{name}_{kind}/registry_validate"), |b| {
            b.iter(|| black_box(registry.validate(name, black_box(raw))))
        });
    }
    let cases = [("search", "valid", SEARCH_VALID), ("search", "invalid", SEARCH_INVALID)];
    for (name, kind, raw) in cases {
        group.bench_function(format!("{name}_{kind}/baseline_serde"), |b| {
            b.iter(|| black_box(serde_json::from_str::<SearchArgs>(black_box(raw)).is_ok()))
        });
        group.bench_function(format!("{name}_{kind}/registry_validate"), |b| {
            b.iter(|| black_box(registry.validate(name, black_box(raw))))
        });
    }
    group.finish();

    // The whole round trip of a call the model got wrong: an error result the model can read.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let dispatcher = dispatcher();
    let token = CancellationToken::new();
    let mut group = c.benchmark_group("invalid_call");
    group.bench_function("dispatcher_run", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters {
                    let call = ToolCall {
                        id: format!("call_{}", i % 1000),
                        name: "search".to_owned(),
                        arguments: SEARCH_INVALID.into(),
                    };
                    let result = dispatcher.run(black_box(call), token.clone()).await;
                    black_box(result.output.is_error);
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, single_call, batch_64, validation);
criterion_main!(benches);
