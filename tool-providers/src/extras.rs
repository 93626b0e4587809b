//! What a definition carries besides its schema: examples for providers without a field for them,
//! each provider's tool-name rule, and Anthropic's prompt-cache breakpoint.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::{LoweringError, Provider};
use tool_core::ToolSpec;

/// The description with the tool's examples appended as a short block of compact JSON, one
/// example a line, for providers that have no field for examples (OpenAI, Gemini, MCP):
///
/// ```text
/// Search file contents with a regular expression.
///
/// Examples:
/// {"pattern":"TODO","path":"src"}
/// ```
///
/// `render` writes one example (a freeform tool shows its text rather than an object).
pub(crate) fn description_with_examples<'s>(
    spec: &'s ToolSpec,
    render: impl Fn(&Value) -> String,
) -> Cow<'s, str> {
    if spec.examples.is_empty() {
        return Cow::Borrowed(&spec.description);
    }
    let mut text = spec.description.trim_end().to_owned();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str("Examples:");
    for example in &spec.examples {
        text.push('\n');
        text.push_str(&render(example));
    }
    Cow::Owned(text)
}

/// One example as compact JSON.
pub(crate) fn compact(example: &Value) -> String {
    example.to_string()
}

/// A provider's rule for tool names, as its API documents it.
struct NameRule {
    max: usize,
    /// The characters allowed besides ASCII letters and digits.
    punctuation: &'static [u8],
    /// Whether the first character must be a letter or `_`.
    letter_first: bool,
    /// The rule in words, for messages.
    text: &'static str,
}

impl NameRule {
    fn of(provider: Provider) -> NameRule {
        match provider {
            // "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length
            // of 64" (Chat Completions and Responses alike).
            Provider::OpenAiChat | Provider::OpenAiResponses => NameRule {
                max: 64,
                punctuation: b"_-",
                letter_first: false,
                text: "1 to 64 characters of letters, digits, `_` and `-` (`^[a-zA-Z0-9_-]{1,64}$`)",
            },
            // The API's own check of a client tool's `name`: "String should match pattern
            // '^[a-zA-Z0-9_-]{1,128}$'" (it was `{1,64}` until mid-2025).
            Provider::Anthropic => NameRule {
                max: 128,
                punctuation: b"_-",
                letter_first: false,
                text: "1 to 128 characters of letters, digits, `_` and `-` (`^[a-zA-Z0-9_-]{1,128}$`)",
            },
            // `FunctionDeclaration.name`: the Gemini API allows letters, digits, `_`, `.`, `:`
            // and `-` up to 64 characters; Vertex AI also wants a letter or `_` first. The
            // intersection holds on both.
            Provider::Gemini => NameRule {
                max: 64,
                punctuation: b"_.:-",
                letter_first: true,
                text: "a letter or `_` followed by letters, digits, `_`, `.`, `:` and `-`, 64 characters at most",
            },
            // The MCP specification (2025-11-25): 1 to 128 characters of `[A-Za-z0-9_.-]`.
            Provider::Mcp => NameRule {
                max: 128,
                punctuation: b"_.-",
                letter_first: false,
                text: "1 to 128 characters of letters, digits, `_`, `.` and `-`",
            },
        }
    }

    fn accepts(&self, name: &str) -> bool {
        let bytes = name.as_bytes();
        (1..=self.max).contains(&bytes.len())
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || self.punctuation.contains(b))
            && (!self.letter_first || bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
    }
}

/// Checks `spec`'s name against `provider`'s rule; the error names the tool and the rule.
///
/// The registry already holds every name to 1 to 64 characters of `[A-Za-z0-9_-]`; this is the
/// check for specs described without a registry (a mounted server's tools, a spec built by hand),
/// and for the rules stricter than the registry's (Gemini's first character).
pub(crate) fn check_name(provider: Provider, spec: &ToolSpec) -> Result<(), LoweringError> {
    let rule = NameRule::of(provider);
    if rule.accepts(&spec.name) {
        return Ok(());
    }
    Err(LoweringError {
        provider,
        strict: false,
        tool: spec.name.clone(),
        location: String::new(),
        reason: format!(
            "the name `{}` breaks its rule for tool names: {}; rename the tool (`#[tool(name = \"...\")]`)",
            spec.name, rule.text
        ),
    })
}

/// Marks the last definition as the end of the cached prompt prefix
/// (`"cache_control": {"type": "ephemeral"}`): the tools come first in Anthropic's prompt, so
/// one breakpoint there caches every definition.
pub(crate) fn anthropic_cache_breakpoint(definitions: &mut [Value]) {
    if let Some(Value::Object(last)) = definitions.last_mut() {
        last.insert("cache_control".to_owned(), json!({ "type": "ephemeral" }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rules() {
        let ok = |provider, name: &str| NameRule::of(provider).accepts(name);
        assert!(ok(Provider::OpenAiChat, "read_file-2"));
        assert!(!ok(Provider::OpenAiChat, "read.file"));
        assert!(!ok(Provider::OpenAiResponses, &"a".repeat(65)));
        assert!(ok(Provider::Anthropic, &"a".repeat(128)));
        assert!(!ok(Provider::Anthropic, &"a".repeat(129)));
        assert!(!ok(Provider::Anthropic, "fs:read"));
        assert!(ok(Provider::Gemini, "fs.read:v2"));
        assert!(!ok(Provider::Gemini, "2fa"));
        assert!(!ok(Provider::Gemini, "-x"));
        assert!(ok(Provider::Gemini, "_x"));
        assert!(!ok(Provider::Gemini, &"a".repeat(65)));
        assert!(ok(Provider::Mcp, &format!("fs.{}", "a".repeat(125))));
        assert!(!ok(Provider::Mcp, &"a".repeat(129)));
        assert!(!ok(Provider::Mcp, "fs:read"));
        assert!(!ok(Provider::Mcp, ""));
        assert!(!ok(Provider::Mcp, "café"));
    }

    #[test]
    fn examples_end_the_description() {
        let spec = ToolSpec::new("grep", "Search files.\n", json!({"type": "object"}))
            .with_examples([json!({"pattern": "TODO"}), json!({"pattern": "fn main", "path": "src"})]);
        assert_eq!(
            description_with_examples(&spec, compact),
            "Search files.\n\nExamples:\n{\"pattern\":\"TODO\"}\n{\"pattern\":\"fn main\",\"path\":\"src\"}"
        );
        let bare = ToolSpec::new("grep", "", json!({"type": "object"})).with_examples([json!({})]);
        assert_eq!(description_with_examples(&bare, compact), "Examples:\n{}");
        let none = ToolSpec::new("grep", "Search files.", json!({"type": "object"}));
        assert!(matches!(description_with_examples(&none, compact), Cow::Borrowed("Search files.")));
    }
}
