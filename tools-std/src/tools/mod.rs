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
