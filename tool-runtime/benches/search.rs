//! The tool search over 10,000 generated tools: one query against the BM25 index (built once per
//! registry), next to a naive scan that lowercases every tool's name and description and counts
//! the query words it contains, as many agents do; and building the index.
//!
//! The tools are 100 services x 20 kinds of object x 5 operations, each with a description
//! naming its operation, object and service and a small argument schema.
//!
//! Run with `cargo bench -p tool-runtime --bench search`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_runtime::ToolSpec;
use tool_runtime::catalog::SearchIndex;

const SERVICES: usize = 100;

const OBJECTS: [&str; 20] = [
    "customer",
    "invoice",
    "ticket",
    "channel",
    "message",
    "event",
    "file",
    "folder",
    "table",
    "index",
    "pod",
    "deployment",
    "monitor",
    "incident",
    "order",
    "playlist",
    "bucket",
    "lead",
    "article",
    "page",
];

const OPERATIONS: [(&str, &str); 5] = [
    ("create", "Create a new {o} in {s}. Returns its id."),
    ("list", "List the {o} items of {s}, newest first, with paging."),
    ("get", "Fetch one {o} from {s} by id, with every field."),
    ("update", "Change fields of an existing {o} in {s}."),
    ("delete", "Permanently remove a {o} from {s}; this cannot be undone."),
];

fn tools() -> Vec<ToolSpec> {
    let mut specs = Vec::with_capacity(SERVICES * OBJECTS.len() * OPERATIONS.len());
    for s in 0..SERVICES {
        let service = format!("service{s}");
        for object in OBJECTS {
            for (verb, template) in OPERATIONS {
                let description = template.replace("{o}", object).replace("{s}", &format!("Service {s}"));
                let schema = json!({"type": "object", "properties": {
                    format!("{object}_id"): {"type": "string", "description": format!("The {object}'s id.")},
                    "fields": {"type": "object", "description": "Fields to set."},
                }});
                specs.push(ToolSpec::new(format!("{service}__{verb}_{object}"), description, schema));
            }
        }
    }
    specs
}

/// The baseline: every tool's name and description lowercased and searched for each query word,
/// the tools with the most words found first.
fn naive_search<'a>(specs: &'a [ToolSpec], query: &str, limit: usize) -> Vec<&'a str> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let mut scored: Vec<(usize, &str)> = specs
        .iter()
        .filter_map(|spec| {
            let text = format!("{} {}", spec.name, spec.description).to_lowercase();
            let score = words.iter().filter(|w| text.contains(w.as_str())).count();
            (score > 0).then_some((score, spec.name.as_str()))
        })
        .collect();
    scored.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
    scored.into_iter().take(limit).map(|(_, name)| name).collect()
}

const QUERIES: [(&str, &str); 2] =
    [("one word", "invoice"), ("a sentence", "permanently remove a customer from service 42")];

fn search(c: &mut Criterion) {
    let specs = tools();
    let index = SearchIndex::new(&specs);
    // Both find the same tool first: the comparison is of equal work.
    assert_eq!(naive_search(&specs, "service42__delete_customer", 1), ["service42__delete_customer"]);
    let hits = index.search("permanently remove a customer from service42", 1, |_| true);
    assert_eq!(specs[hits[0].doc].name, "service42__delete_customer");

    let mut group = c.benchmark_group("search_10000_tools");
    for (label, query) in QUERIES {
        group.bench_function(format!("bm25 index, {label}"), |b| {
            b.iter(|| black_box(index.search(black_box(query), 5, |_| true)))
        });
        group.bench_function(format!("naive scan, {label}"), |b| {
            b.iter(|| black_box(naive_search(&specs, black_box(query), 5)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("index_build");
    group.sample_size(10);
    group.bench_function("10000 tools", |b| b.iter(|| black_box(SearchIndex::new(&specs))));
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
