//! Built-in coding tools for `tool-runtime`.
#![deny(missing_docs)]

use std::sync::Arc;

use tool_runtime::Tool;

/// Every built-in tool, for registries built without `inventory` (or as a link anchor: naming
/// this function, or `use tools_std as _;`, keeps the crate and its registrations linked).
pub fn all() -> Vec<Arc<dyn Tool>> {
    Vec::new()
}
