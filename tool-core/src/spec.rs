//! `ToolSpec`: a tool's name, description, schemas, annotations and execution policy.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Hints about a tool's behaviour, for clients that understand them (MCP annotations).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// A human-readable title.
    pub title: Option<String>,
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates.
    pub destructive: bool,
    /// Calling the tool repeatedly with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool may interact with an open world of external entities (network, processes).
    pub open_world: bool,
}

/// Which end of an over-long output is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncationDirection {
    /// Keep the beginning (the default: file contents, search results).
    #[default]
    Head,
    /// Keep the end (command output, logs).
    Tail,
    /// Keep both ends and cut the middle.
    Middle,
}

/// A tool's truncation settings; unset limits fall back to the dispatcher's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncationPolicy {
    /// `false` opts the tool out of framework truncation (`truncate = false`).
    pub enabled: bool,
    /// Maximum number of lines kept.
    pub max_lines: Option<usize>,
    /// Maximum number of bytes kept.
    pub max_bytes: Option<usize>,
    /// Which end is kept.
    pub direction: Option<TruncationDirection>,
}

impl Default for TruncationPolicy {
    fn default() -> Self {
        TruncationPolicy::DEFAULT
    }
}

impl TruncationPolicy {
    /// Framework truncation with the dispatcher's defaults (the `Default`, usable in a `const`).
    pub const DEFAULT: TruncationPolicy =
        TruncationPolicy { enabled: true, max_lines: None, max_bytes: None, direction: None };

    /// Framework truncation switched off for this tool.
    pub const DISABLED: TruncationPolicy =
        TruncationPolicy { enabled: false, max_lines: None, max_bytes: None, direction: None };
}

/// Where a tool was defined, for error messages about duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceLocation {
    /// `module_path!()` of the definition.
    pub module_path: String,
    /// `file!()` of the definition.
    pub file: String,
    /// `line!()` of the definition.
    pub line: u32,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{})", self.module_path, self.file, self.line)
    }
}

/// The language of a freeform tool's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrammarSyntax {
    /// A Lark context-free grammar.
    Lark,
    /// A regular expression (Rust `regex` syntax, as OpenAI documents it).
    Regex,
}

impl GrammarSyntax {
    /// The name providers use: `lark` or `regex`.
    pub fn as_str(self) -> &'static str {
        match self {
            GrammarSyntax::Lark => "lark",
            GrammarSyntax::Regex => "regex",
        }
    }
}

/// A grammar the input of a freeform tool must follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grammar {
    /// The grammar's language.
    pub syntax: GrammarSyntax,
    /// The grammar itself.
    pub definition: String,
}

impl Grammar {
    /// A Lark grammar.
    pub fn lark(definition: impl Into<String>) -> Self {
        Grammar { syntax: GrammarSyntax::Lark, definition: definition.into() }
    }

    /// A regular-expression grammar.
    pub fn regex(definition: impl Into<String>) -> Self {
        Grammar { syntax: GrammarSyntax::Regex, definition: definition.into() }
    }
}

/// A tool whose input is raw text rather than a JSON object: OpenAI Responses offers it as a
/// `custom` tool (optionally constrained by a grammar) and the model writes the text itself;
/// every other provider sees a function with one string argument, `parameter`.
///
/// The tool's input schema is that object (`{"parameter": string}`, required), so the tool runs
/// the same way whichever route the text came by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freeform {
    /// The one string property of the input schema that receives the text.
    pub parameter: String,
    /// The grammar the text follows, if any (`{"type": "text"}` in OpenAI terms otherwise).
    pub grammar: Option<Grammar>,
}

impl Freeform {
    /// A freeform tool whose text goes to the property `parameter`, without a grammar.
    pub fn new(parameter: impl Into<String>) -> Self {
        Freeform { parameter: parameter.into(), grammar: None }
    }

    /// Constrains the text with `grammar`.
    pub fn with_grammar(mut self, grammar: Grammar) -> Self {
        self.grammar = Some(grammar);
        self
    }
}

/// Everything a registry, a dispatcher and a provider need to know about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by: 1 to 64 characters of `[A-Za-z0-9_-]`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema (draft 2020-12) of the argument object.
    pub input_schema: Value,
    /// JSON Schema of the structured output, for tools that return `Json<T>`.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Whether the tool may run alongside other parallel tools (shared guard) rather than alone.
    pub parallel: bool,
    /// A per-tool time limit.
    pub timeout: Option<Duration>,
    /// Per-tool truncation settings.
    pub truncation: TruncationPolicy,
    /// Free-form tags for filtering.
    pub tags: Vec<String>,
    /// Where the tool was defined, when known.
    pub source: Option<SourceLocation>,
    /// Set for a tool whose input is raw text ([`Freeform`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeform: Option<Freeform>,
    /// Whether the tool's definition is deferred: providers are told about it only once a tool
    /// search has found it (see the catalog of `tool-providers`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer: bool,
    /// Example argument objects (`#[tool(example = ...)]`), each checked against
    /// `input_schema` when the registry is built. Anthropic receives them as `input_examples`;
    /// the other providers find them at the end of the description.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    /// Other names the model may send a parameter under (`file_path` for `path`), accepted as
    /// recorded coercions when validation is lenient; the schema shows only the parameters' own
    /// names. (A camelCase spelling of a snake_case parameter is accepted without one.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<ParameterAlias>,
    /// What the tool asks permission for beyond the call itself (`#[tool(permission = "path")]`):
    /// permission rules take it from here, so that their patterns on the tool match its paths or
    /// command lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionSubject>,
    /// The argument that holds the command line, for a tool that asks about commands
    /// (`#[tool(command_argument = "command")]`): with a permission policy installed, a call whose
    /// command only reads runs alongside other parallel calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_argument: Option<String>,
    /// Whether the tool waits for work in progress and returns what came since
    /// (`#[tool(polls)]`: `bash_output`, `code_output`): the same call made again is not a
    /// loop, so the dispatcher's repeat guard does not count it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub polls: bool,
    /// Whether the tool's calls take no turn at the dispatcher's parallel gate: they run
    /// whatever else runs, and nothing waits for them. For a tool that only reads or stops work
    /// left running in the background (`code_output`, `code_stop`), which must never wait behind
    /// the calls that this work keeps waiting.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ungated: bool,
}

/// What a tool asks permission for with [`ToolContext::ask`](crate::ToolContext::ask), beyond
/// the call itself, and so what the patterns of permission rules on the tool are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionSubject {
    /// Shell commands (`PermissionKind::Command`): patterns are command globs or `read-only`.
    Command,
    /// Files and directories (`PermissionKind::Path` and `ExternalDirectory`): patterns are
    /// gitignore-style globs on the resolved path.
    Path,
    /// Text typed into a running command (`PermissionKind::Input`): decided by the rules about
    /// commands and the tool's rules without a pattern; its `PreToolUse` hooks run when the
    /// tool asks, with the session's command in their input.
    Input,
}

/// Another name for one of a tool's top-level parameters (`#[arg(alias = "...")]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParameterAlias {
    /// The name a model may send.
    pub alias: String,
    /// The parameter it stands for.
    pub parameter: String,
}

impl ParameterAlias {
    /// `alias` stands for the parameter `parameter`.
    pub fn new(alias: impl Into<String>, parameter: impl Into<String>) -> Self {
        ParameterAlias { alias: alias.into(), parameter: parameter.into() }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ToolSpec {
    /// A spec with the given name, description and input schema, and default policy
    /// (exclusive, no timeout, default truncation).
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            parallel: false,
            timeout: None,
            truncation: TruncationPolicy::default(),
            tags: Vec::new(),
            source: None,
            freeform: None,
            defer: false,
            examples: Vec::new(),
            aliases: Vec::new(),
            permission: None,
            command_argument: None,
            polls: false,
            ungated: false,
        }
    }

    /// Declares what the tool asks permission for; see [`ToolSpec::permission`].
    pub fn with_permission(mut self, subject: PermissionSubject) -> Self {
        self.permission = Some(subject);
        self
    }

    /// Names the argument that holds the command line; see [`ToolSpec::command_argument`].
    pub fn with_command_argument(mut self, argument: impl Into<String>) -> Self {
        self.command_argument = Some(argument.into());
        self
    }

    /// Adds other names for parameters; see [`ToolSpec::aliases`].
    pub fn with_aliases(mut self, aliases: impl IntoIterator<Item = ParameterAlias>) -> Self {
        self.aliases.extend(aliases);
        self
    }

    /// Defers the tool's definition: a provider sees it only after a tool search found it.
    pub fn with_defer(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    /// Whether the tool's definition is deferred until a tool search finds it.
    pub fn is_deferred(&self) -> bool {
        self.defer
    }

    /// Adds example argument objects; [`RegistryBuilder::build`](crate::RegistryBuilder::build)
    /// fails if one does not match the input schema.
    pub fn with_examples(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.examples.extend(examples);
        self
    }

    /// The example argument objects, in the order given.
    pub fn examples(&self) -> &[Value] {
        &self.examples
    }

    /// Makes the tool freeform: its input is raw text, delivered in the string property
    /// `freeform.parameter` of its input schema.
    pub fn with_freeform(mut self, freeform: Freeform) -> Self {
        self.freeform = Some(freeform);
        self
    }

    /// Marks the tool as parallel-safe.
    pub fn with_parallel(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    /// Marks the tool as one that waits for work in progress (see [`ToolSpec::polls`]).
    pub fn with_polls(mut self, polls: bool) -> Self {
        self.polls = polls;
        self
    }

    /// Marks the tool as one whose calls take no turn at the parallel gate (see
    /// [`ToolSpec::ungated`]).
    pub fn with_ungated(mut self, ungated: bool) -> Self {
        self.ungated = ungated;
        self
    }

    /// Sets a per-tool timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets the truncation policy.
    pub fn with_truncation(mut self, truncation: TruncationPolicy) -> Self {
        self.truncation = truncation;
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Adds tags.
    pub fn with_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Records where the tool was defined.
    pub fn with_source(mut self, source: SourceLocation) -> Self {
        self.source = Some(source);
        self
    }
}

/// Whether `name` is a valid tool name: 1 to 64 characters of `[A-Za-z0-9_-]`, the set accepted
/// by OpenAI, Anthropic, Gemini and MCP alike.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert!(is_valid_tool_name("read_file-2"));
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("read.file"));
        assert!(!is_valid_tool_name("café"));
    }
}
