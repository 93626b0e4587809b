//! The `apply_patch` format: its grammar, the parser, and one file's update applied to its text.

pub(crate) use tool_runtime::permissions::patch as parse;
pub(crate) mod seek;
