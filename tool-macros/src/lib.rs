//! The `#[tool]` attribute macro. Use it through `tool_runtime::tool`, which documents it.

mod attrs;
mod ctxt;
mod expand;
mod fallback;
mod model;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool the model can call.
///
/// ```ignore
/// use tool_runtime::{tool, Dep, ToolContext, ToolError};
///
/// /// Search file contents with a regular expression.
/// ///
/// /// Returns matching lines grouped by file.
/// #[tool(parallel, read_only, timeout = "30s")]
/// async fn grep(
///     ctx: &ToolContext,            // injected: not in the schema
///     ws: Dep<Workspace>,           // injected dependency
///     /// Regular expression to search for.
///     pattern: String,              // required property
///     /// Directory to search, relative to the workspace root.
///     path: Option<String>,         // optional property (`null` = absent)
///     /// Maximum number of matches.
///     #[arg(default = 100)]
///     #[schemars(range(min = 1, max = 1000))]
///     limit: u32,                   // optional, default 100, validated range
/// ) -> Result<String, ToolError> { /* ... */ }
/// ```
///
/// From the function the macro generates, next to it (the function itself is emitted exactly
/// as written, so it stays callable in unit tests):
/// - a unit struct `GrepTool` (the function name in PascalCase + `Tool`) implementing
///   `tool_runtime::Tool`, whose spec holds the JSON Schema (draft 2020-12) of the arguments,
///   the description (the function's `///` doc, all paragraphs), annotations and policy;
/// - a link-time registration, so `Registry::from_inventory()` finds the tool.
///
/// # Tool attributes
///
/// | key | meaning |
/// |---|---|
/// | `name = "..."` | tool name (default: the function name); 1 to 64 of `[A-Za-z0-9_-]`, checked at compile time |
/// | `description = "..."` | replaces the doc comment as the description |
/// | `parallel` | may run alongside other parallel tools (shared guard); without it the tool runs alone |
/// | `timeout = "30s"` | per-tool limit: whole numbers with `ms`, `s`, `m`, `h`, e.g. `"500ms"`, `"1m30s"` |
/// | `truncate(max_lines = N, max_bytes = N, direction = "head" \| "tail" \| "middle")` | per-tool output truncation; unset keys use the dispatcher's defaults |
/// | `truncate = false` | opt out of framework truncation (the tool bounds its own output) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | behaviour annotations (MCP hints); `read_only` with `destructive` is an error, `parallel` with `destructive` is allowed |
/// | `title = "..."` | human-readable title |
/// | `tags("a", "b")` | tags for registry filters |
/// | `defer` | deferred definition: providers see the tool only once a tool search found it (large catalogs) |
/// | `permission = "path" \| "command" \| "input"` | what the tool asks permission for (`ToolContext::ask`): permission rules with a pattern on the tool match its paths or command lines; `input` is text typed into a running command |
/// | `command_argument = "..."` | with `permission = "command"`: the argument holding the command line, so a call whose command only reads may run alongside parallel calls |
/// | `crate = path` | where `tool_runtime` is, for crates that re-export it |
///
/// # Parameters
///
/// - **Arguments** (the default): each becomes a property of the argument object. `Option<T>`
///   is optional; `#[arg(default = EXPR)]` makes a property optional with a default (a string
///   literal is converted with `From`, so `#[arg(default = "head")] mode: String` works);
///   `#[arg(rename = "...")]` renames it; `#[arg(description = "...")]` replaces its `///` doc;
///   `#[arg(alias = "file_path", alias = "filePath")]` accepts other names for it (moved to its
///   own name as recorded coercions; the schema shows only its own name, and an alias must be a
///   name no parameter has). A camelCase spelling of a snake_case name needs no alias.
///   schemars attributes (`#[schemars(range(..), length(..), regex(..))]`, `#[validate(..)]`,
///   `#[garde(..)]`) and `#[serde(..)]` are copied to the generated field: constraints appear in
///   the schema and are enforced by validation. The type must implement `Deserialize` and
///   `JsonSchema`.
/// - **`#[args]`**: one parameter whose type (a struct deriving `Deserialize + JsonSchema`) is
///   the whole argument object. No other argument parameters are allowed next to it.
/// - **Injected**: provided by the runtime through `FromContext`, never in the schema.
///   Recognised by type: references (`&ToolContext`), `ToolContext`, `CancellationToken`,
///   `SessionState`, `Dep<T>`; for your own `FromContext` type, mark the parameter `#[inject]`.
///
/// # Return type
///
/// `Result<T, E>` or a bare `T`, where `T` is `String`, `&'static str`, `()`, `ToolOutput`,
/// `Content`, `Json<U>` (structured output; also publishes an output schema) or any
/// `IntoToolOutput`, and `E` is `ToolError`, `std::io::Error` (kinds mapped: not found,
/// permission denied, ...), any `std::error::Error` (kept as the operator-only source), or
/// anything `Display` (an execution error with that message).
///
/// # Errors and debugging
///
/// Misuse is a compile error on your own token, all errors at once, with the function still
/// emitted so the rest of the crate compiles. Set `TOOL_MACROS_DEBUG=1` (or to a function
/// name) while building to print the expansion.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
