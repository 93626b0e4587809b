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
    let manual = include_str!("../../tool-runtime/docs/providers.md");
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
