//! Built-in coding tools for `tool-runtime`: `read`, `write`, `edit`, `bash`, `glob`, `grep`,
//! `ls`, `tool_output_read`, `tool_output_grep`, `todo_write` and `todo_read`.
//!
//! The file tools work inside a [`Workspace`]: register one as a dependency and every path
//! argument is resolved against its root; a path that leaves the root (`..`, an absolute path,
//! a symbolic link) needs the context's permission. File-system and process access go through
//! the [`Operations`] trait ([`LocalOperations`] by default), so the same tools can run against
//! a remote sandbox.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use tool_runtime::{Registry, ToolContext};
//!
//! let registry = Registry::builder().tools(tools_std::all()).build()?;
//! let deps = Arc::new(tools_std::dependencies(".")?);
//! let ctx = ToolContext::builder("read").dependencies(deps).build();
//! let out = registry.call("read", r#"{"path": "Cargo.toml"}"#, ctx).await?;
//! println!("{}", out.text_content());
//! # Ok(()) }
//! ```
//!
//! # Linking
//!
//! The tools also register themselves with `inventory`, for `Registry::from_inventory()`. A
//! crate that nothing in a binary names is not linked, and its registrations vanish with it, so
//! a binary that relies on the inventory calls [`init`] once (or uses [`all`]):
//!
//! ```
//! tools_std::init();
//! let registry = tool_runtime::Registry::from_inventory().unwrap();
//! assert!(registry.contains("read"));
//! ```
#![deny(missing_docs)]

use std::sync::Arc;

use tool_runtime::Tool;

pub mod ops;
mod process;
mod text;
pub mod workspace;

pub mod bash;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod ls;
pub mod read;
pub mod todo_read;
pub mod todo_write;
pub mod write;

#[cfg(test)]
mod testing;

pub use ops::{LocalOperations, Operations};
pub use workspace::{ResolvedPath, Workspace};

/// Every built-in tool, for registries built without `inventory`:
/// `Registry::builder().tools(tools_std::all())`.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(write::WriteTool),
        Arc::new(edit::EditTool),
        Arc::new(bash::BashTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(ls::LsTool),
        Arc::new(todo_write::TodoWriteTool),
        Arc::new(todo_read::TodoReadTool),
    ]
}

/// Keeps this crate, and with it every tool's `inventory` registration, linked into the binary.
///
/// Call it once before `Registry::from_inventory()`. A `use tools_std as _;` alone does not do
/// it: the linker drops the object files of a library that no code refers to.
#[inline(never)]
pub fn init() {
    std::hint::black_box(all as fn() -> Vec<Arc<dyn Tool>>);
}

/// The dependencies the tools need, for a workspace rooted at `root`: the [`Workspace`].
pub fn dependencies(root: impl AsRef<std::path::Path>) -> std::io::Result<tool_runtime::Dependencies> {
    let mut deps = tool_runtime::Dependencies::new();
    deps.insert(Workspace::new(root)?);
    Ok(deps)
}
