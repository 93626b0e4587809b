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
#[tool(destructive, tags("fs", "write"))]
async fn remove_things(what: String) -> String {
    format!("removed {what}")
}

/// Fetches a page.
#[tool(open_world, tags("net"))]
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
