//! `#[tool(example = ...)]`: examples travel from the attribute to the spec, are checked against
//! the tool's schema when the registry is built, and reach each provider in its own form.

use serde_json::json;
use tool_runtime::providers::{DefinitionOptions, Provider};
use tool_runtime::{Registry, RegistryError, Tool, tool};

/// Search file contents with a regular expression.
#[tool(
    parallel,
    example = r#"{ "pattern": "TODO" }"#,
    example = r#"{
        "pattern": "fn main",
        "path": "src",
        "limit": 5
    }"#
)]
async fn grep(
    /// Regular expression to search for.
    pattern: String,
    /// Directory to search.
    path: Option<String>,
    /// Maximum number of matches.
    #[arg(default = 100)]
    limit: u32,
) -> String {
    format!("{pattern}:{path:?}:{limit}")
}

/// Count lines; its example names an argument the tool does not have.
#[tool(example = r#"{"file": "README.md"}"#)]
async fn count_lines(
    /// File to count.
    path: String,
) -> String {
    path
}

#[test]
fn examples_reach_the_spec_in_order_as_written() {
    assert_eq!(
        GrepTool.spec().examples(),
        [json!({"pattern": "TODO"}), json!({"pattern": "fn main", "path": "src", "limit": 5})]
    );
}

#[test]
fn the_registry_refuses_an_example_that_the_schema_refuses() {
    let error = Registry::builder().tool(CountLinesTool).build().unwrap_err();
    assert!(matches!(&error, RegistryError::InvalidExample { tool, index: 0, .. } if tool == "count_lines"));
    assert_eq!(
        error.to_string(),
        "example 1 of the tool `count_lines` (counting from 1) does not match its argument schema: /file: unknown property; valid properties are `path`; /path: missing required property; fix or remove the example"
    );
}

#[test]
fn providers_receive_the_examples_compactly() {
    let registry = Registry::builder().tool(GrepTool).build().unwrap();
    let anthropic = Provider::Anthropic.definitions(&registry, &DefinitionOptions::default()).unwrap();
    assert_eq!(
        anthropic[0]["input_examples"],
        json!([{"pattern": "TODO"}, {"pattern": "fn main", "path": "src", "limit": 5}])
    );
    let chat = Provider::OpenAiChat.definitions(&registry, &DefinitionOptions::default()).unwrap();
    assert_eq!(
        chat[0]["function"]["description"],
        "Search file contents with a regular expression.\n\nExamples:\n{\"pattern\":\"TODO\"}\n{\"pattern\":\"fn main\",\"path\":\"src\",\"limit\":5}"
    );
}

/// Find TODO comments.
#[tool(read_only, example = r#"{"path": "src", "limit": 5}"#)]
async fn find_todos(
    /// Directory to search.
    path: String,
    /// Maximum number of results.
    #[arg(default = 20)]
    limit: u32,
) -> String {
    format!("{path}:{limit}")
}

#[test]
fn the_manual_shows_the_real_folded_description() {
    let manual = include_str!("../../../tool-runtime/docs/providers.md");
    let section = &manual[manual.find("# Examples and provider extras").expect("the manual's section")..];
    let from = section.find("```text\n").expect("the text block") + "```text\n".len();
    let to = from + section[from..].find("```").expect("closing fence");
    let registry = Registry::builder().tool(FindTodosTool).build().unwrap();
    for provider in [Provider::OpenAiResponses, Provider::Gemini, Provider::Mcp] {
        let definitions = provider.definitions(&registry, &DefinitionOptions::default()).unwrap();
        assert_eq!(
            definitions[0]["description"].as_str().unwrap(),
            section[from..to].trim_end(),
            "{provider}"
        );
    }
    let anthropic = Provider::Anthropic.definitions(&registry, &DefinitionOptions::default()).unwrap();
    assert_eq!(anthropic[0]["input_examples"], json!([{"path": "src", "limit": 5}]));
}

#[test]
fn a_registry_that_leaves_examples_to_tests_still_checks_run_time_tools_and_check_schemas_finds_the_rest() {
    use tool_runtime::ToolSpec;
    use tool_runtime::spec::FnTool;
    // A tool defined in code: left to the test below.
    let registry =
        Registry::builder().examples_checked_by_tests().tool(CountLinesTool).build().expect("unchecked");
    let error = registry.check_schemas().expect_err("the example is wrong");
    assert_eq!(
        error.to_string(),
        "example 1 of the tool `count_lines` (counting from 1) does not match its argument schema: /file: unknown property; valid properties are `path`; /path: missing required property; fix or remove the example"
    );
    // A tool added at run time has no test of its own: still checked while building.
    let spec = ToolSpec::new("count", "Counts.", CountLinesTool.spec().input_schema.clone())
        .with_examples([json!({"file": "README.md"})]);
    let run_time = FnTool::new(spec, |_ctx, _args| async { Ok(tool_runtime::ToolOutput::text("")) });
    let error = Registry::builder().examples_checked_by_tests().tool(run_time).build().unwrap_err();
    assert!(
        matches!(&error, RegistryError::InvalidExample { tool, index: 0, .. } if tool == "count"),
        "{error:?}"
    );
}
