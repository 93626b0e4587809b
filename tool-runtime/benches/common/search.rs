//! The `search` tool both the dispatch and the call path benches validate: a rich schema
//! (7 arguments) as a `#[tool]`, and the same arguments as a plain serde struct.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::{ToolError, tool};

/// How `search` reports matches.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// Matching lines.
    Content,
    /// Only the names of matching files.
    FilesWithMatches,
    /// A count per file.
    Count,
}

/// A range of lines.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
pub(crate) struct LineRange {
    /// First line, 1-based.
    #[schemars(range(min = 1))]
    start: u32,
    /// Last line, inclusive.
    end: Option<u32>,
}

/// Search file contents (a tool with a rich schema: constraints, an enum, an array, a nested
/// optional object and optional fields; 7 arguments).
#[tool(parallel)]
#[allow(clippy::too_many_arguments)]
pub(crate) async fn search(
    /// Regular expression to search for.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search.
    path: Option<String>,
    /// Glob patterns of files to include.
    globs: Vec<String>,
    /// What to report.
    mode: Mode,
    /// Maximum number of matches.
    #[arg(default = 100)]
    #[schemars(range(min = 1, max = 1000))]
    limit: u32,
    /// Ignore case.
    case_insensitive: Option<bool>,
    /// Only search these lines of each file.
    lines: Option<LineRange>,
) -> Result<String, ToolError> {
    let _ = (path, globs, mode, limit, case_insensitive, lines);
    Ok(pattern)
}

/// The same arguments for serde alone.
#[derive(Deserialize)]
#[allow(dead_code)]
pub(crate) struct SearchArgs {
    pattern: String,
    path: Option<String>,
    globs: Vec<String>,
    mode: Mode,
    #[serde(default)]
    limit: Option<u32>,
    case_insensitive: Option<bool>,
    lines: Option<LineRange>,
}
