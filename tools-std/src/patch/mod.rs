//! The `apply_patch` format: its grammar, the parser, and one file's update applied to its text.

pub(crate) mod parse;
pub(crate) mod seek;
