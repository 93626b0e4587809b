//! Dispatch overhead of a trivial `#[tool]`: one call (raw JSON in, validated, run, result out)
//! and a batch of 64 parallel calls, each next to a hand-written baseline (serde + direct call).

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

fn dispatcher() -> Dispatcher {
    let registry = Registry::builder().tool(AddTool).build().expect("registry");
    Dispatcher::new(registry)
}

fn call(i: usize) -> ToolCall {
    ToolCall {
        id: format!("call_{i}"),
        name: "add".to_owned(),
        arguments: format!(r#"{{"a": {i}, "b": 2}}"#),
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
                    black_box(baseline(black_box(&call.arguments)).await);
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
                let _ = black_box(registry.validate(&call.name, black_box(&call.arguments)));
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
                        results.push(baseline(&call.arguments).await);
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

criterion_group!(benches, single_call, batch_64);
criterion_main!(benches);
