//! Goldens of what definitions carry besides the schema: tool-use examples (checked at registry
//! build, emitted per provider), Anthropic strict tool use and cache breakpoint, Gemini's
//! `parametersJsonSchema`, and each provider's tool-name rule.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::providers::{DefinitionOptions, Provider, anthropic, gemini};
use tool_runtime::schema::{args_schema, empty_args_schema};
use tool_runtime::{
    Registry, RegistryError, ToolOutput, ToolSpec,
    spec::{FnTool, Freeform},
};

/// Lines of context around each match.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Context {
    /// Lines before.
    #[schemars(range(max = 20))]
    before: u8,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct GrepArgs {
    /// Regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search.
    path: Option<String>,
    /// Maximum number of matches.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: u32,
    /// Globs of files to search.
    #[serde(default)]
    #[schemars(length(min = 2))]
    globs: Vec<String>,
    /// Context around matches.
    context: Option<Context>,
}

fn default_limit() -> u32 {
    100
}

/// A section of a document outline.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Section {
    /// Heading text.
    title: String,
    /// Nested sections.
    #[serde(default)]
    children: Vec<Section>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OutlineArgs {
    /// The new outline.
    sections: Vec<Section>,
}

fn grep() -> ToolSpec {
    ToolSpec::new("grep", "Search file contents.", args_schema::<GrepArgs>())
        .with_examples([json!({"pattern": "TODO"}), json!({"pattern": "fn main", "path": "src", "limit": 5})])
}

fn registry(specs: Vec<ToolSpec>) -> Result<Registry, RegistryError> {
    let mut builder = Registry::builder();
    for spec in specs {
        builder = builder.tool(FnTool::new(spec, |_ctx, _args| async { Ok(ToolOutput::text("")) }));
    }
    builder.build()
}

fn definitions(provider: Provider, specs: Vec<ToolSpec>, options: DefinitionOptions) -> Vec<Value> {
    provider.definitions(&registry(specs).unwrap(), &options).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

#[test]
fn an_example_that_does_not_match_the_schema_fails_the_build_naming_tool_index_and_problem() {
    let bad = ToolSpec::new("grep", "Search.", args_schema::<GrepArgs>())
        .with_examples([json!({"pattern": "TODO"}), json!({"pattern": "x", "limit": "5", "colour": true})]);
    let error = registry(vec![bad]).unwrap_err();
    let RegistryError::InvalidExample { tool, index, problems } = &error else {
        panic!("expected InvalidExample, got {error:?}");
    };
    assert_eq!((tool.as_str(), *index), ("grep", 1));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "example 2 of the tool `grep` (counting from 1) does not match its argument schema: {}; fix or remove the example",
            problems.join("; ")
        )
    );
    // The validator's own wording: the model reads the same text for the same mistake.
    assert_eq!(
        problems,
        &[
            "/limit: expected an integer, received \"5\" (a string)",
            "/colour: unknown property; valid properties are `pattern`, `path`, `limit`, `globs`, `context`",
        ]
    );

    // No leniency: a string where a number belongs is coerced in a call, never in an example.
    let coerced =
        ToolSpec::new("grep", "Search.", args_schema::<GrepArgs>()).with_examples([json!({"pattern": 5})]);
    assert!(matches!(registry(vec![coerced]), Err(RegistryError::InvalidExample { index: 0, .. })));
    let not_object =
        ToolSpec::new("grep", "Search.", args_schema::<GrepArgs>()).with_examples([json!(["TODO"])]);
    let error = registry(vec![not_object]).unwrap_err();
    assert!(error.to_string().contains("must be a JSON object"), "{error}");
}

#[test]
fn valid_examples_build_and_are_kept_in_order() {
    let registry = registry(vec![grep()]).unwrap();
    let spec = registry.get("grep").unwrap().spec();
    assert_eq!(
        spec.examples(),
        [json!({"pattern": "TODO"}), json!({"pattern": "fn main", "path": "src", "limit": 5})]
    );
}

const FOLDED: &str = "Search file contents.\n\nExamples:\n{\"pattern\":\"TODO\"}\n{\"pattern\":\"fn main\",\"path\":\"src\",\"limit\":5}";

#[test]
fn examples_are_input_examples_for_anthropic_and_end_the_description_elsewhere() {
    let plain = DefinitionOptions::default();
    let anthropic = definitions(Provider::Anthropic, vec![grep()], plain);
    assert_eq!(anthropic[0]["description"], "Search file contents.");
    assert_eq!(
        anthropic[0]["input_examples"],
        json!([{"pattern": "TODO"}, {"pattern": "fn main", "path": "src", "limit": 5}])
    );
    let chat = definitions(Provider::OpenAiChat, vec![grep()], plain);
    assert_eq!(chat[0]["function"]["description"], FOLDED);
    for provider in [Provider::OpenAiResponses, Provider::Gemini, Provider::Mcp] {
        let definition = &definitions(provider, vec![grep()], plain)[0];
        assert_eq!(definition["description"], FOLDED, "{provider}");
        assert!(definition.get("input_examples").is_none(), "{provider}");
    }
    // Without examples nothing changes.
    let bare = ToolSpec::new("grep", "Search file contents.", args_schema::<GrepArgs>());
    for provider in Provider::ALL {
        let definition = definitions(provider, vec![bare.clone()], plain).remove(0);
        let text = definition.to_string();
        assert!(!text.contains("Examples:") && !text.contains("input_examples"), "{provider}: {text}");
    }
}

#[test]
fn a_custom_tool_shows_its_examples_as_the_text_the_model_writes() {
    let schema = json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"]
    });
    let spec = ToolSpec::new("apply_patch", "Apply a patch.", schema)
        .with_freeform(Freeform::new("patch"))
        .with_examples([json!({"patch": "*** Begin Patch\n*** End Patch"})]);
    let responses = definitions(Provider::OpenAiResponses, vec![spec.clone()], DefinitionOptions::default());
    assert_eq!(responses[0]["type"], "custom");
    assert_eq!(responses[0]["description"], "Apply a patch.\n\nExamples:\n*** Begin Patch\n*** End Patch");
    // Elsewhere it is a function with one string argument, and the example an object.
    let chat = definitions(Provider::OpenAiChat, vec![spec], DefinitionOptions::default());
    assert_eq!(
        chat[0]["function"]["description"],
        "Apply a patch.\n\nExamples:\n{\"patch\":\"*** Begin Patch\\n*** End Patch\"}"
    );
}

// ---------------------------------------------------------------------------------------------
// Anthropic strict tool use and cache breakpoint
// ---------------------------------------------------------------------------------------------

#[test]
fn anthropic_strict_closes_objects_keeps_optional_properties_and_words_unsupported_bounds() {
    let strict = definitions(Provider::Anthropic, vec![grep()], DefinitionOptions::strict());
    assert_eq!(
        strict[0],
        json!({
          "name": "grep",
          "description": "Search file contents.",
          "input_schema": {
            "type": "object",
            "properties": {
              "pattern": {
                "type": "string",
                "description": "Regular expression to search for. (at least 1 character)"
              },
              "path": {
                "type": ["string", "null"],
                "description": "Directory to search."
              },
              "limit": {
                "type": "integer",
                "default": 100,
                "description": "Maximum number of matches. (at least 1, at most 500)"
              },
              "globs": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Globs of files to search. (at least 2 items)"
              },
              "context": {
                "anyOf": [{"$ref": "#/$defs/Context"}, {"type": "null"}],
                "description": "Context around matches."
              }
            },
            "required": ["pattern"],
            "additionalProperties": false,
            "$defs": {
              "Context": {
                "type": "object",
                "properties": {
                  "before": {
                    "type": "integer",
                    "description": "Lines before. (at least 0, at most 20)"
                  }
                },
                "required": ["before"],
                "additionalProperties": false,
                "description": "Lines of context around each match."
              }
            }
          },
          "strict": true,
          "input_examples": [{"pattern": "TODO"}, {"pattern": "fn main", "path": "src", "limit": 5}]
        })
    );
}

#[test]
fn anthropic_strict_refuses_recursive_types_and_maps_naming_the_tool() {
    let outline = ToolSpec::new("outline", "Replace the outline.", args_schema::<OutlineArgs>());
    let error = Provider::Anthropic.definition(&outline, &DefinitionOptions::strict()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool `outline` cannot be described to Anthropic Messages strict mode: the argument schema has the recursive type `Section` (it contains itself), which Anthropic strict tool use does not support; turn strict mode off for this tool or bound the nesting with separate types"
    );
    // Without strict mode the recursive schema is fine.
    assert!(Provider::Anthropic.definition(&outline, &DefinitionOptions::default()).is_ok());

    let map = json!({
        "type": "object",
        "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}
    });
    let error = Provider::Anthropic
        .definition(&ToolSpec::new("run", "Run.", map), &DefinitionOptions::strict())
        .unwrap_err();
    assert_eq!((error.tool.as_str(), error.location.as_str(), error.strict), ("run", "env", true));
    assert!(error.reason.contains("additionalProperties: false"), "{}", error.reason);
}

#[test]
fn anthropic_cache_control_marks_only_the_last_definition() {
    let list = ToolSpec::new("list_todos", "List the to-do items.", empty_args_schema());
    let options = DefinitionOptions::default().with_anthropic_cache_control(true);
    let tools = anthropic::definitions(&registry(vec![grep(), list.clone()]).unwrap(), &options).unwrap();
    assert!(tools[0].get("cache_control").is_none());
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(tools[1]["name"], "list_todos");
    // Other providers do not take the option.
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Gemini, Provider::Mcp] {
        let tools = definitions(provider, vec![grep(), list.clone()], options);
        assert!(!Value::Array(tools).to_string().contains("cache_control"), "{provider}");
    }
    // An empty list has nothing to mark.
    assert!(anthropic::definitions(&registry(vec![]).unwrap(), &options).unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Gemini parametersJsonSchema
// ---------------------------------------------------------------------------------------------

#[test]
fn gemini_json_schema_keeps_the_canonical_schema_and_parameters_stays_the_default() {
    let outline = ToolSpec::new("outline", "Replace the outline.", args_schema::<OutlineArgs>());
    // The OpenAPI subset cannot say a recursive type ...
    assert!(gemini::definition(&outline, &DefinitionOptions::default()).is_err());
    // ... the JSON Schema form can.
    let options = DefinitionOptions::default().with_gemini_json_schema(true);
    let declaration = gemini::definition(&outline, &options).unwrap();
    let mut expected = outline.input_schema.clone();
    expected.as_object_mut().unwrap().shift_remove("$schema");
    assert_eq!(
        declaration,
        json!({"name": "outline", "description": "Replace the outline.", "parametersJsonSchema": expected})
    );
    assert!(expected["$defs"]["Section"].is_object());

    let plain = gemini::definition(&grep(), &DefinitionOptions::default()).unwrap();
    assert_eq!(plain["parameters"]["type"], "OBJECT");
    assert!(plain.get("parametersJsonSchema").is_none());
    let full = gemini::definition(&grep(), &options).unwrap();
    assert!(full.get("parameters").is_none());
    assert_eq!(full["parametersJsonSchema"]["properties"]["limit"]["maximum"], 500);
    assert_eq!(full["description"], FOLDED);
}

// ---------------------------------------------------------------------------------------------
// Name rules
// ---------------------------------------------------------------------------------------------

#[test]
fn each_provider_checks_its_own_name_rule_and_names_the_tool() {
    let named = |name: &str| ToolSpec::new(name, "A tool.", empty_args_schema());
    let accepted = |provider: Provider, name: &str| {
        provider
            .definition(&named(name), &DefinitionOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    // A dotted name (as some MCP servers use) suits MCP and Gemini only.
    assert!(accepted(Provider::Mcp, "fs.read").is_ok());
    assert!(accepted(Provider::Gemini, "fs.read").is_ok());
    assert_eq!(
        accepted(Provider::OpenAiChat, "fs.read").unwrap_err(),
        "the tool `fs.read` cannot be described to OpenAI Chat Completions: the name `fs.read` breaks its rule for tool names: 1 to 64 characters of letters, digits, `_` and `-` (`^[a-zA-Z0-9_-]{1,64}$`); rename the tool (`#[tool(name = \"...\")]`)"
    );
    assert!(accepted(Provider::OpenAiResponses, "fs.read").is_err());
    assert!(accepted(Provider::Anthropic, "fs.read").unwrap_err().contains("`^[a-zA-Z0-9_-]{1,128}$`"));
    // Gemini wants a letter or `_` first.
    assert_eq!(
        accepted(Provider::Gemini, "2fa_check").unwrap_err(),
        "the tool `2fa_check` cannot be described to Gemini: the name `2fa_check` breaks its rule for tool names: a letter or `_` followed by letters, digits, `_`, `.`, `:` and `-`, 64 characters at most; rename the tool (`#[tool(name = \"...\")]`)"
    );
    assert!(accepted(Provider::OpenAiChat, "2fa_check").is_ok());
    // Lengths: OpenAI and Gemini 64, Anthropic and MCP 128.
    let long = "a".repeat(100);
    assert!(accepted(Provider::OpenAiChat, &long).is_err());
    assert!(accepted(Provider::Gemini, &long).is_err());
    assert!(accepted(Provider::Anthropic, &long).is_ok());
    assert!(accepted(Provider::Mcp, &long).is_ok());
    assert!(accepted(Provider::Mcp, &"a".repeat(129)).is_err());
    // Every registry name suits every provider but Gemini's first-character rule.
    let registry = registry(vec![named("read_file"), named("-x")]).unwrap();
    assert!(Provider::OpenAiChat.definitions(&registry, &DefinitionOptions::default()).is_ok());
    let error = Provider::Gemini.definitions(&registry, &DefinitionOptions::default()).unwrap_err();
    assert_eq!(error.tool, "-x");
}
