//! Argument handling: arbitrary bytes as a call's arguments, for a tool with a rich schema and
//! for every built-in tool, and as an assistant message in every provider format.
//!
//! Validation must answer every input with the validated arguments or an invalid-arguments
//! error naming the tool, never panic; what it accepts for the rich tool must run, ending in a
//! result or an invalid-arguments error. Half of the inputs are raw text; the other half are
//! JSON built from the bytes with the schema's own property names, to reach deep into it.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tool_runtime::{ErrorKind, Registry, ToolContext, providers::Provider, tool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Span {
    #[schemars(range(min = 1))]
    start: u32,
    end: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Filter {
    Glob { pattern: String },
    Size { max_bytes: u64 },
    Not { filter: Box<Filter> },
}

/// A tool whose schema has a bit of everything the validator handles.
#[tool(parallel)]
#[allow(clippy::too_many_arguments)]
async fn rich(
    /// Non-empty text.
    #[schemars(length(min = 1, max = 64))]
    pattern: String,
    /// Optional path.
    path: Option<String>,
    /// A list of strings.
    globs: Vec<String>,
    /// An enum of strings.
    mode: Mode,
    /// A bounded integer with a default.
    #[arg(default = 100)]
    #[schemars(range(min = 1, max = 1000))]
    limit: u32,
    /// A float.
    ratio: Option<f64>,
    /// A boolean.
    #[arg(default = false)]
    verbose: bool,
    /// A nested optional object.
    span: Option<Span>,
    /// Internally tagged, recursive enum values.
    filters: Option<Vec<Filter>>,
    /// A map.
    env: Option<BTreeMap<String, String>>,
    /// A regular-expression constraint.
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    label: Option<String>,
) -> String {
    format!(
        "{pattern}:{path:?}:{globs:?}:{mode:?}:{limit}:{ratio:?}:{verbose}:{span:?}:{filters:?}:{env:?}:{label:?}"
    )
}

const TOOLS: [&str; 12] = [
    "rich",
    "read",
    "write",
    "edit",
    "bash",
    "glob",
    "grep",
    "ls",
    "todo_write",
    "todo_read",
    "tool_output_read",
    "tool_output_grep",
];

const KEYS: [&str; 24] = [
    "pattern",
    "path",
    "globs",
    "mode",
    "limit",
    "ratio",
    "verbose",
    "span",
    "start",
    "end",
    "filters",
    "kind",
    "filter",
    "max_bytes",
    "env",
    "label",
    "command",
    "timeout_secs",
    "old_string",
    "new_string",
    "offset",
    "todos",
    "a/b~c",
    "",
];

const STRINGS: [&str; 14] = [
    "content",
    "count",
    "glob",
    "size",
    "not",
    "10",
    "1e3",
    "true",
    "[]",
    "{}",
    "[\"a\"]",
    "{\"start\":1}",
    "",
    "é",
];

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Registry::builder().tool(RichTool).tools(tools_std::all()).build().expect("registry"))
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("runtime"))
}

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let choice = if depth >= 5 { u.int_in_range(0..=6)? } else { u.int_in_range(0..=8)? };
    Ok(match choice {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => Value::from(u.int_in_range(-2i64..=1002)?),
        4 => Value::from(u.arbitrary::<f64>()?),
        5 => Value::from(*u.choose(&STRINGS)?),
        6 => Value::from(u.arbitrary::<String>()?),
        7 => {
            let len = u.int_in_range(0..=4)?;
            Value::Array((0..len).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ => {
            let len = u.int_in_range(0..=6)?;
            let mut map = Map::new();
            for _ in 0..len {
                let key = if u.ratio(7, 8)? { (*u.choose(&KEYS)?).to_owned() } else { u.arbitrary()? };
                map.insert(key, value(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

fn check(tool: &str, raw: &str) {
    let registry = registry();
    match registry.validate(tool, raw) {
        Ok(validated) => {
            assert!(validated.value.is_object(), "{tool} accepted a non-object: {raw}");
            if tool == "rich" {
                let ctx = ToolContext::builder("rich").build();
                if let Err(error) = runtime().block_on(registry.call("rich", raw, ctx)) {
                    assert_eq!(error.kind(), ErrorKind::InvalidArguments, "{raw}: {}", error.message());
                }
            }
        }
        Err(error) => {
            assert_eq!(error.kind(), ErrorKind::InvalidArguments, "{raw}: {}", error.message());
            assert!(error.message().contains(&format!("`{tool}`")), "{}", error.message());
        }
    }
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let tool = *u.choose(&TOOLS)?;
    if u.arbitrary()? {
        let raw = String::from_utf8_lossy(u.take_rest());
        check(tool, &raw);
        if let Ok(message) = serde_json::from_str::<Value>(&raw) {
            for provider in Provider::ALL {
                let _ = provider.parse_tool_calls(&message);
            }
        }
    } else {
        let arguments = value(&mut u, 0)?;
        check(tool, &arguments.to_string());
        check(tool, &serde_json::to_string_pretty(&arguments).expect("serializable"));
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
