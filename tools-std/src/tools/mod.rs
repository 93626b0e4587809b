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
