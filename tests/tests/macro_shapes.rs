//! Every supported shape of `#[tool]`: schema, spec and behaviour through the registry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{
    CancellationToken, Content, Dep, ErrorKind, Json, Registry, SessionState, Tool, ToolContext, ToolError,
    ToolOutput,
    context::{Dependencies, FromContext},
    spec::TruncationDirection,
    tool,
};

/// Search file contents with a regular expression.
///
/// Returns matching lines grouped by file, **newest files first**.
#[tool(
    parallel,
    read_only,
    timeout = "30s",
    truncate(max_lines = 500, direction = "tail"),
    tags("search", "fs")
)]
async fn search(
    ctx: &ToolContext,
    counter: Dep<AtomicU32>,
    /// Regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search, relative to the workspace root.
    path: Option<String>,
    /// Maximum number of matches to return.
    #[arg(default = 100)]
    #[schemars(range(min = 1, max = 1000))]
    limit: u32,
    #[arg(rename = "case-insensitive", description = "Ignore case.")] ignore_case: Option<bool>,
) -> Result<String, ToolError> {
    counter.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{}:{pattern}:{path:?}:{limit}:{ignore_case:?}:{}", ctx.tool_name(), ctx.call_id()))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// File to edit.
    file: String,
    /// Edits to apply in order.
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Edit {
    old: String,
    new: String,
}

/// Apply edits to a file.
#[tool(destructive, name = "apply-edits", title = "Apply edits")]
async fn apply_edits(#[args] args: EditArgs, _cancel: CancellationToken) -> Result<String, std::io::Error> {
    if args.file == "missing" {
        return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file: missing"));
    }
    Ok(format!(
        "{} edits to {}",
        args.edits.len(),
        args.edits.iter().map(|e| e.old.len() + e.new.len()).sum::<usize>()
    ))
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    files: u32,
}

/// Count files.
#[tool]
async fn stats() -> Json<Stats> {
    Json(Stats { files: 7 })
}

#[tool(undocumented)]
async fn nothing() {}

#[tool(undocumented)]
async fn static_text() -> &'static str {
    "static"
}

#[tool(undocumented)]
async fn rich() -> ToolOutput {
    ToolOutput::text("see image").with_content(Content::image("image/png", "iVBORw0KGgo="))
}

#[derive(Debug)]
struct Oops;
impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("display-only failure")
    }
}

#[tool(undocumented)]
async fn display_error() -> Result<(), Oops> {
    Err(Oops)
}

#[tool(undocumented)]
async fn fatal_error() -> Result<String, ToolError> {
    Err(ToolError::fatal("stop the turn"))
}

struct Clock(u64);

impl FromContext<'_> for Clock {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(Clock(ctx.call_id().len() as u64))
    }
}

#[derive(Default)]
struct Visits(AtomicU32);

#[tool(undocumented)]
async fn now(#[inject] clock: Clock, session: SessionState) -> String {
    let visits = session.get_or_insert_with(Visits::default);
    let n = visits.0.fetch_add(1, Ordering::SeqCst) + 1;
    format!("t={} visit={n}", clock.0)
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Fast,
    Slow,
}

#[tool(undocumented, truncate = false, idempotent, open_world)]
pub async fn with_defaults(
    #[arg(default = "hello")] greeting: String,
    #[arg(default = Mode::Slow)] mode: Mode,
    r#type: Option<String>,
) -> Result<Json<serde_json::Map<String, Value>>, ToolError> {
    let mut map = serde_json::Map::new();
    map.insert("greeting".into(), json!(greeting));
    map.insert("mode".into(), json!(mode));
    map.insert("type".into(), json!(r#type));
    Ok(Json(map))
}

mod reexport {
    pub(crate) use tool_runtime as rt;
}

#[tool(undocumented, crate = reexport::rt)]
async fn via_reexport(x: i32) -> String {
    (x * 2).to_string()
}

fn registry() -> Registry {
    Registry::from_inventory().expect("no duplicate names")
}

fn ctx(tool: &str) -> ToolContext {
    let mut deps = Dependencies::new();
    deps.insert(AtomicU32::new(0));
    ToolContext::builder(tool).call_id("call_1").dependencies(Arc::new(deps)).build()
}

#[test]
fn per_parameter_schema_is_exact() {
    let spec = SearchTool.spec();
    assert_eq!(spec.name, "search");
    assert_eq!(
        spec.description,
        "Search file contents with a regular expression.\n\nReturns matching lines grouped by file, **newest files first**."
    );
    assert_eq!(
        spec.input_schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for.", "minLength": 1},
                "path": {"type": ["string", "null"], "description": "Directory to search, relative to the workspace root."},
                "limit": {
                    "type": "integer", "format": "uint32", "description": "Maximum number of matches to return.",
                    "default": 100, "minimum": 1, "maximum": 1000
                },
                "case-insensitive": {"type": ["boolean", "null"], "description": "Ignore case."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    );
    assert!(spec.parallel);
    assert!(spec.annotations.read_only);
    assert_eq!(spec.timeout, Some(std::time::Duration::from_secs(30)));
    assert_eq!(spec.truncation.max_lines, Some(500));
    assert_eq!(spec.truncation.max_bytes, None);
    assert_eq!(spec.truncation.direction, Some(TruncationDirection::Tail));
    assert_eq!(spec.tags, ["search", "fs"]);
    let source = spec.source.as_ref().expect("macro tools know where they are");
    assert_eq!(source.module_path, "macro_shapes");
    assert!(source.file.ends_with("macro_shapes.rs"), "{}", source.file);
}

#[test]
fn args_struct_schema_and_annotations() {
    let spec = ApplyEditsTool.spec();
    assert_eq!(spec.name, "apply-edits");
    assert_eq!(spec.annotations.title.as_deref(), Some("Apply edits"));
    assert!(spec.annotations.destructive);
    assert!(!spec.parallel, "tools are exclusive unless marked parallel");
    assert_eq!(spec.input_schema["required"], json!(["file", "edits"]));
    assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    assert_eq!(spec.input_schema["properties"]["edits"]["items"], json!({"$ref": "#/$defs/Edit"}));
    assert!(spec.input_schema.get("title").is_none());
}

#[test]
fn no_argument_tools_have_an_empty_closed_object() {
    for tool in [NothingTool.spec(), StatsTool.spec(), StaticTextTool.spec()] {
        assert_eq!(
            tool.input_schema,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object", "properties": {}, "additionalProperties": false
            })
        );
        assert_eq!(
            tool.description,
            match tool.name.as_str() {
                "stats" => "Count files.",
                _ => "",
            }
        );
    }
}

#[test]
fn json_output_has_an_output_schema() {
    let schema = StatsTool.spec().output_schema.clone().expect("Json<T> has an output schema");
    assert_eq!(schema["properties"]["files"]["type"], "integer");
    assert!(NothingTool.spec().output_schema.is_none());
}

#[test]
fn defaults_and_raw_identifiers() {
    let spec = WithDefaultsTool.spec();
    assert_eq!(spec.input_schema["properties"]["greeting"]["default"], "hello");
    assert_eq!(spec.input_schema["properties"]["mode"]["default"], "slow");
    assert!(spec.input_schema["properties"].get("type").is_some());
    assert!(!spec.truncation.enabled);
    assert!(spec.annotations.idempotent && spec.annotations.open_world);
}

#[tokio::test]
async fn calls_through_the_registry() {
    let registry = registry();
    let out = registry
        .call("search", r#"{"pattern": "fn main", "limit": "5", "case-insensitive": null}"#, ctx("search"))
        .await
        .expect("valid call");
    assert_eq!(out.text_content(), "search:fn main:None:5:None:call_1");

    let out = registry.call("with_defaults", "{}", ctx("with_defaults")).await.expect("defaults");
    assert_eq!(out.structured, Some(json!({"greeting": "hello", "mode": "slow", "type": null})));

    let out = registry.call("via_reexport", r#"{"x": 21}"#, ctx("via_reexport")).await.expect("reexport");
    assert_eq!(out.text_content(), "42");

    let out = registry.call("rich", "", ctx("rich")).await.expect("rich");
    assert_eq!(out.content.len(), 2);
    let out = registry.call("static_text", "{}", ctx("static_text")).await.expect("static");
    assert_eq!(out.text_content(), "static");
    let out = registry.call("nothing", "{}", ctx("nothing")).await.expect("unit");
    assert!(out.content.is_empty());
}

#[tokio::test]
async fn error_types_map_to_kinds() {
    let registry = registry();
    let err = registry
        .call("apply-edits", r#"{"file": "missing", "edits": []}"#, ctx("apply-edits"))
        .await
        .expect_err("io error");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.message(), "no such file: missing");

    let err = registry.call("display_error", "{}", ctx("display_error")).await.expect_err("display");
    assert_eq!(err.kind(), ErrorKind::Execution);
    assert_eq!(err.message(), "display-only failure");

    let err = registry.call("fatal_error", "{}", ctx("fatal_error")).await.expect_err("fatal");
    assert!(err.is_fatal());
}

#[tokio::test]
async fn injected_parameters() {
    let registry = registry();
    let session = SessionState::new();
    let make = || ToolContext::builder("now").call_id("abc").session(session.clone()).build();
    assert_eq!(registry.call("now", "{}", make()).await.unwrap().text_content(), "t=3 visit=1");
    assert_eq!(registry.call("now", "{}", make()).await.unwrap().text_content(), "t=3 visit=2");

    let err = registry
        .call("search", r#"{"pattern": "x"}"#, ToolContext::builder("search").build())
        .await
        .expect_err("missing dependency");
    assert_eq!(err.kind(), ErrorKind::Execution);
    assert!(err.source_chain().unwrap().contains("AtomicU32"), "{:?}", err.source_chain());
}

#[tokio::test]
async fn functions_stay_callable_directly() {
    assert_eq!(via_reexport(4).await, "8");
    assert_eq!(static_text().await, "static");
}

/// Archive a project's closed tickets.
#[tool(defer, tags("tickets"))]
async fn archive_tickets(
    /// The project whose closed tickets are archived.
    project: String,
) -> Result<String, ToolError> {
    Ok(project)
}

#[test]
fn defer_flag_marks_the_spec_deferred() {
    let spec = ArchiveTicketsTool.spec();
    assert!(spec.is_deferred());
    assert_eq!(spec.tags, ["tickets"]);
    assert!(!SearchTool.spec().is_deferred());
    // A deferred spec says so when serialized; a plain one keeps its old shape.
    assert_eq!(serde_json::to_value(spec).unwrap()["defer"], json!(true));
    assert!(serde_json::to_value(SearchTool.spec()).unwrap().get("defer").is_none());
}

#[test]
fn every_shape_has_a_schema_the_meta_schema_accepts() {
    // A registry compiles a tool's validator only for a call that needs one; the schemas `#[tool]`
    // generates are checked here, once, against the meta-schema.
    let registry = Registry::from_inventory().expect("registry");
    assert!(registry.len() >= 12, "{:?}", registry.names().collect::<Vec<_>>());
    registry.check_schemas().expect("every schema compiles");
}
