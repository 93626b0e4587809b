//! `tools list --defer-all / --defer / --loaded / --hosted-search` and `tools turn` answering
//! tool searches: the built binary against the library's own catalog.

use crate::common;

use common::{Fixture, registry};
use serde_json::{Value, json};
use tool_runtime::catalog::{Catalog, LoadedTools, SearchMode};
use tool_runtime::providers::{DefinitionOptions, Provider};

fn catalog() -> Catalog {
    Catalog::new(registry()).defer_all()
}

#[test]
fn list_defer_all_prints_each_providers_deferred_form() {
    let fx = Fixture::new();
    for provider in Provider::ALL {
        let run = fx.run(&["list", "--format", provider.as_str(), "--defer-all"], None);
        assert_eq!(run.code, 0, "{provider}: {}", run.stderr);
        let expected =
            catalog().definitions(provider, &LoadedTools::new(), &DefinitionOptions::default()).unwrap();
        assert_eq!(run.json(), Value::Array(expected), "{provider}");
    }
    let anthropic = fx.run(&["list", "--format", "anthropic", "--defer-all"], None).json();
    let tools = anthropic.as_array().unwrap();
    assert_eq!(tools.len(), registry().len() + 1);
    assert!(tools[..tools.len() - 1].iter().all(|t| t["defer_loading"] == true));
    assert_eq!(tools.last().unwrap()["name"], "tool_search");
    assert!(tools.last().unwrap().get("defer_loading").is_none(), "one tool must not be deferred");
}

#[test]
fn list_defer_some_loaded_and_hosted() {
    let fx = Fixture::new();
    let chat = fx.run(&["list", "--format", "openai-chat", "--defer", "grep,glob", "--loaded", "glob"], None);
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let names: Vec<String> = chat
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.contains(&"grep".to_owned()));
    assert_eq!(names[names.len() - 2..], ["tool_search", "glob"], "found tools come last");

    let hosted =
        fx.run(&["list", "--format", "openai-responses", "--defer-all", "--hosted-search"], None).json();
    assert_eq!(hosted.as_array().unwrap().last(), Some(&json!({"type": "tool_search"})));
    let expected = catalog()
        .with_search_mode(SearchMode::Hosted)
        .definitions(Provider::OpenAiResponses, &LoadedTools::new(), &DefinitionOptions::default())
        .unwrap();
    assert_eq!(hosted, Value::Array(expected));
}

#[test]
fn list_defer_mistakes_are_usage_errors() {
    let fx = Fixture::new();
    let run = fx.run(&["list", "--defer", "grpe"], None);
    assert!(run.usage_error().starts_with("--defer: Unknown tool `grpe`"), "{}", run.stderr);
    let run = fx.run(&["list", "--format", "gemini", "--loaded", "grep"], None);
    assert_eq!(
        run.usage_error(),
        "--loaded grep: not a deferred tool (defer it with --defer or --defer-all)"
    );
}

/// What `--defer` defers, the script tool's description leaves to `tools.tool_search` too;
/// under `--code-mode=only` it applies to the script tool's description alone.
#[test]
fn list_defer_keeps_deferred_tools_out_of_the_script_tools_description() {
    let fx = Fixture::new();
    let declares = |description: &str, tool: &str| description.contains(&format!("\n  {tool}("));
    let beside =
        fx.run(&["list", "--format", "anthropic", "--code-mode", "--defer", "bash,write"], None).json();
    let tools = beside.as_array().unwrap();
    let code = tools.iter().find(|t| t["name"] == "code").unwrap()["description"].as_str().unwrap();
    assert!(!declares(code, "bash") && !declares(code, "write"), "{code}");
    assert!(declares(code, "read") && declares(code, "edit"), "{code}");
    assert!(code.contains("tools.tool_search"), "{code}");
    let deferred: Vec<&str> =
        tools.iter().filter(|t| t["defer_loading"] == true).map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(deferred, ["write", "bash"]);

    let alone =
        fx.run(&["list", "--format", "anthropic", "--code-mode=only", "--defer", "bash"], None).json();
    let names: Vec<&str> = alone.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["code", "code_output", "code_stop"]);
    let code = alone[0]["description"].as_str().unwrap();
    assert!(
        !declares(code, "bash") && declares(code, "read") && code.contains("tools.tool_search"),
        "{code}"
    );
    let run = fx.run(&["list", "--code-mode=only", "--defer", "grpe"], None);
    assert!(run.usage_error().starts_with("--defer: Unknown tool `grpe`"), "{}", run.stderr);
}

#[test]
fn turn_answers_searches_with_tool_references_next_to_ordinary_calls() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "tool_search",
         "input": {"query": "search file contents with a regular expression", "limit": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "hello.txt"}},
    ]});
    let run = fx.run(&["turn", "--format", "anthropic", "--defer-all"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let blocks = &run.json()[0]["content"];
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert_eq!(blocks[0]["content"][0], json!({"type": "tool_reference", "tool_name": "grep"}));
    assert_eq!(blocks[1]["tool_use_id"], "toolu_2");
    assert_eq!(blocks[1]["content"], "     1\thello\n     2\tworld\n");
}

#[test]
fn turn_answers_a_client_tool_search_call_with_a_tool_search_output() {
    let fx = Fixture::new();
    let message = json!({"output": [
        {"type": "tool_search_call", "id": "ts_1", "call_id": "call_1", "execution": "client",
         "status": "completed", "arguments": {"query": "run a shell command", "limit": 1}},
    ]});
    let run = fx
        .run(&["turn", "--format", "openai-responses", "--defer-all"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let output = run.json();
    assert_eq!(output[0]["type"], "tool_search_output");
    assert_eq!(output[0]["call_id"], "call_1");
    assert_eq!(output[0]["execution"], "client");
    let tools = output[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "bash");
    assert_eq!(tools[0]["defer_loading"], true);

    // Without deferred tools, `tool_search` is no tool at all.
    let chat = json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "tool_search", "arguments": "{\"query\": \"x\"}"}}]});
    let run = fx.run(&["turn", "--format", "openai-chat"], Some(chat.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.json()[0]["content"].as_str().unwrap().contains("Unknown tool `tool_search`"),
        "{}",
        run.stdout
    );
}
