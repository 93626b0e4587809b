//! Registry building: inventory, explicit tools, filters, lookups, and tools-std linkage.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::{
    Registry, RegistryError, Tool, ToolContext, ToolOutput, ToolSpec,
    spec::{FnTool, registered_tools},
    tool,
};

/// Lists things.
#[tool(parallel, read_only, tags("fs", "read"))]
async fn list_things() -> &'static str {
    "things"
}

/// Removes things.
#[tool(undocumented, destructive, tags("fs", "write"))]
async fn remove_things(what: String) -> String {
    format!("removed {what}")
}

/// Fetches a page.
#[tool(undocumented, open_world, tags("net"))]
async fn fetch(url: String) -> String {
    url
}

fn dynamic(name: &str) -> FnTool {
    let spec = ToolSpec::new(
        name,
        "A tool made at run time.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}),
    );
    FnTool::new(spec, |_ctx, args| async move { Ok(ToolOutput::text(format!("n={}", args["n"]))) })
}

fn names(registry: &Registry) -> Vec<&str> {
    let mut names: Vec<&str> = registry.names().collect();
    names.sort();
    names
}

#[test]
fn inventory_collects_every_linked_tool() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(names(&registry), ["fetch", "list_things", "remove_things"]);
    assert_eq!(registered_tools().count(), 3);
    assert!(registry.get("fetch").is_some());
    assert!(registry.get("nope").is_none());
}

#[test]
fn allow_deny_tags_and_predicates() {
    let only = |b: tool_runtime::RegistryBuilder| {
        names(&b.build().unwrap()).into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    assert_eq!(only(Registry::builder().with_inventory().allow(["fetch", "unknown"])), ["fetch"]);
    assert_eq!(only(Registry::builder().with_inventory().deny(["fetch"])), ["list_things", "remove_things"]);
    assert_eq!(
        only(Registry::builder().with_inventory().with_tags(["fs"])),
        ["list_things", "remove_things"]
    );
    assert_eq!(
        only(Registry::builder().with_inventory().with_tags(["write", "net"])),
        ["fetch", "remove_things"]
    );
    assert_eq!(
        only(
            Registry::builder()
                .with_inventory()
                .filter(|s| s.annotations.read_only || s.annotations.open_world)
        ),
        ["fetch", "list_things"]
    );
}

#[tokio::test]
async fn explicit_and_dynamic_tools() {
    let registry = Registry::builder().with_inventory().tool(dynamic("count")).build().unwrap();
    assert_eq!(names(&registry), ["count", "fetch", "list_things", "remove_things"]);
    let out = registry.call("count", r#"{"n": "3"}"#, ToolContext::builder("count").build()).await.unwrap();
    assert_eq!(out.text_content(), "n=3");
    let err = registry.call("count", r#"{}"#, ToolContext::builder("count").build()).await.unwrap_err();
    assert!(err.message().contains("- /n: missing required property"), "{}", err.message());
}

#[test]
fn a_run_time_tool_clashing_with_a_macro_tool_is_an_error() {
    let err = Registry::builder().with_inventory().tool(dynamic("fetch")).build().unwrap_err();
    let RegistryError::DuplicateName { name, first, second } = &err else { panic!("{err}") };
    assert_eq!(name, "fetch");
    assert_eq!(first.as_ref().unwrap().module_path, "registry");
    assert!(second.is_none());
    assert!(err.to_string().contains("and one at a tool added at run time"), "{err}");
}

#[test]
fn the_same_definition_twice_is_kept_once() {
    let all: Vec<Arc<dyn Tool>> = registered_tools().collect();
    let registry = Registry::builder().with_inventory().tools(all).build().unwrap();
    assert_eq!(registry.len(), 3);
}

#[test]
fn invalid_run_time_names_are_rejected() {
    let err = Registry::builder().tool(dynamic("has space")).build().unwrap_err();
    assert_eq!(err, RegistryError::InvalidName { name: "has space".into() });
    assert_eq!(
        err.to_string(),
        "invalid tool name `has space`: use 1 to 64 characters of letters, digits, `_` and `-`"
    );
}

#[test]
fn specs_are_built_once() {
    let registry = Registry::from_inventory().unwrap();
    let a = registry.get("fetch").unwrap().spec() as *const ToolSpec;
    let b = FetchTool.spec() as *const ToolSpec;
    assert_eq!(a, b, "a macro tool's spec is generated once and shared");
}

/// A tool whose schema is broken (`minimum` must be a number) but which decodes `{}` by itself,
/// as `#[tool]` tools do: what a registry does with each path of its calls shows whether it
/// compiled a validator.
struct BrokenSchema(ToolSpec);

impl BrokenSchema {
    fn new() -> Self {
        BrokenSchema(ToolSpec::new(
            "broken",
            "A tool with a broken schema.",
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}),
        ))
    }
}

impl Tool for BrokenSchema {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call<'a>(
        &'a self,
        _ctx: ToolContext,
        _args: serde_json::Value,
    ) -> tool_runtime::BoxFuture<'a, Result<ToolOutput, tool_runtime::ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("validated")) })
    }

    fn decode(&self, arguments: &tool_runtime::Arguments) -> Option<tool_runtime::spec::DecodedCall> {
        let empty = match arguments {
            tool_runtime::Arguments::Text(text) => text.trim() == "{}",
            tool_runtime::Arguments::Json(value) => value == &json!({}),
            tool_runtime::Arguments::Freeform { .. } => false,
        };
        empty.then(|| -> tool_runtime::spec::DecodedCall {
            Box::new(|_ctx| Box::pin(async { Ok(ToolOutput::text("decoded")) }))
        })
    }
}

fn text(output: &ToolOutput) -> String {
    output.text_content()
}

#[tokio::test]
async fn a_call_its_tool_decodes_compiles_no_validator_and_a_validated_one_reports_the_broken_schema() {
    let registry =
        Registry::builder().tool(BrokenSchema::new()).build().expect("a broken schema is found later");
    let ctx = || ToolContext::builder("broken").build();
    // Decoded by the tool: no validator is needed, so the broken schema is never compiled.
    let decoded = registry.call("broken", "{}", ctx()).await.expect("decoded call");
    assert_eq!(text(&decoded), "decoded");
    // Validated: every such call fails, whatever its arguments, and says it is not their fault.
    for arguments in [r#"{"n": 1}"#, r#"{"n": "x"}"#] {
        let error = registry.call("broken", arguments, ctx()).await.expect_err("broken schema");
        assert_eq!(
            error.message(),
            "the tool `broken` cannot be called because its argument schema is broken; this is not caused by the arguments"
        );
    }
    // A test over the registry finds it without a call.
    let error = registry.check_schemas().expect_err("broken schema");
    assert!(matches!(&error, RegistryError::InvalidSchema { tool, .. } if tool == "broken"), "{error:?}");
    assert!(
        error.to_string().starts_with("the input schema of tool `broken` is invalid: ")
            && error.to_string().ends_with("; fix the schema"),
        "{error}"
    );
}

#[test]
fn an_example_its_tool_decodes_needs_no_validator_and_any_other_is_checked_by_one() {
    let decoded = BrokenSchema(BrokenSchema::new().0.with_examples([json!({})]));
    Registry::builder().tool(decoded).build().expect("the example decodes");
    let validated = BrokenSchema(BrokenSchema::new().0.with_examples([json!({}), json!({"n": 1})]));
    let error = Registry::builder().tool(validated).build().expect_err("the schema does not compile");
    assert!(
        matches!(&error, RegistryError::InvalidExample { tool, problems, .. }
            if tool == "broken" && problems[0].starts_with("the input schema of tool `broken` is invalid: ")),
        "{error:?}"
    );
}
