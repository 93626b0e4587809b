//! The tools a model calls, one file each: its `#[tool]` function, its helpers and its tests.

pub mod apply_patch;
pub mod ask_user;
pub mod bash;
pub mod bash_input;
pub mod bash_list;
pub mod bash_output;
pub mod bash_stop;
pub mod checkpoints;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod ls;
pub mod multi_edit;
pub mod read;
pub mod todo_read;
pub mod todo_write;
pub mod tool_output_grep;
pub mod tool_output_read;
pub mod undo;
pub mod write;

use serde_json::{Map, Value};
use tool_runtime::validate::Coercion;
use tool_runtime::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// A built-in tool that also takes the argument shapes of other agents' tools of its kind: the
/// `#[tool]` definition, with its [`Tool::adapt_arguments`].
pub(crate) struct Adapted<T> {
    tool: T,
    adapt: fn(&mut Map<String, Value>, &mut Vec<Coercion>),
}

impl<T: Tool> Adapted<T> {
    pub(crate) fn new(tool: T, adapt: fn(&mut Map<String, Value>, &mut Vec<Coercion>)) -> Self {
        Adapted { tool, adapt }
    }
}

impl<T: Tool> Tool for Adapted<T> {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.tool.call(ctx, args)
    }

    fn decode(&self, arguments: &tool_runtime::Arguments) -> Option<tool_runtime::spec::DecodedCall> {
        self.tool.decode(arguments)
    }

    fn adapt_arguments(&self, arguments: &mut Map<String, Value>, coercions: &mut Vec<Coercion>) {
        (self.adapt)(arguments, coercions)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tool_runtime::providers::{DefinitionOptions, Provider};

    /// The `format` values JSON Schema draft 2020-12 defines. Written out here rather than taken
    /// from tool-providers' lowering, which filters with a list of its own: a wrong entry there
    /// then fails this test instead of passing it.
    const STANDARD_FORMATS: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];

    /// Every `format` string in a definition, with where it is.
    fn formats<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match value.as_str() {
                        Some(format) if key == "format" => out.push((at.clone(), format)),
                        _ => formats(value, format!("{at}/{key}"), out),
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    formats(item, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// Claude Code cuts an MCP tool's description at 2,048 characters, and Gemini CLI warns
    /// about every `format` it does not know: every served definition of every built-in tool
    /// fits the one and holds only standard values of the other, with the ranges kept.
    #[test]
    fn served_definitions_fit_claude_codes_cut_and_hold_only_standard_formats() {
        let registry = tool_runtime::Registry::builder().tools(crate::all()).build().unwrap();
        let gemini_json_schema = DefinitionOptions::default().with_gemini_json_schema(true);
        for options in [DefinitionOptions::default(), DefinitionOptions::strict(), gemini_json_schema] {
            for provider in Provider::ALL {
                for definition in provider.definitions(&registry, &options).unwrap() {
                    let text = definition.to_string();
                    let mut found = Vec::new();
                    formats(&definition, String::new(), &mut found);
                    for (at, format) in found {
                        // Gemini's `parameters` are OpenAPI's subset, where `enum` marks a string enum.
                        let openapi = at.starts_with("/parameters/") && format == "enum";
                        assert!(
                            STANDARD_FORMATS.contains(&format) || (provider == Provider::Gemini && openapi),
                            "{provider:?}: `{format}` at {at} in {text}"
                        );
                    }
                    let description = ["description", "function"]
                        .iter()
                        .find_map(|key| match &definition[key] {
                            Value::String(description) => Some(description.clone()),
                            Value::Object(function) => function["description"].as_str().map(str::to_owned),
                            _ => None,
                        })
                        .unwrap_or_default();
                    let length = description.chars().count();
                    assert!(length > 100 && length <= 2048, "{provider:?}: {length} characters in {text}");
                }
            }
        }
        let spec = tool_runtime::Tool::spec(&crate::bash::BashTool);
        let bash = Provider::Mcp.definition(spec, &DefinitionOptions::default()).unwrap();
        let yield_ms = &bash["inputSchema"]["properties"]["yield_ms"];
        assert_eq!((yield_ms["minimum"].as_u64(), yield_ms.get("format")), (Some(0), None), "{yield_ms}");
        // The canonical schema keeps the integer formats: validation checks the ranges by them.
        assert_eq!(spec.input_schema["properties"]["yield_ms"]["format"], "uint64");
    }
}
