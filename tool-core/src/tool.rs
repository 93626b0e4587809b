//! The object-safe `Tool` trait, implemented by `#[tool]`, by hand, or from a closure.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::call::Arguments;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::future::BoxFuture;
use crate::output::ToolOutput;
use crate::spec::ToolSpec;
use crate::validate::Coercion;

/// A tool the model can call.
///
/// `call` receives arguments that were already validated against `spec().input_schema`, so an
/// implementation only has to decode them.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, description, schemas and policy. Cheap after the first call.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool.
    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Decodes the arguments straight into the tool's parameters, when that decoding accepts
    /// exactly the objects `spec().input_schema` accepts and gives what validating and
    /// [`call`](Tool::call) would: the call, waiting for its context. Otherwise (the default)
    /// `None`, and the caller validates the arguments and calls [`call`](Tool::call).
    ///
    /// `#[tool]` implements it for functions whose every parameter is a plain type (numbers,
    /// strings, booleans, and options and vectors of them), for arguments as text (OpenAI's)
    /// and as a parsed object (MCP's, Anthropic's, Gemini's): such a call runs no schema
    /// validator, and from text builds no `serde_json::Value`. An implementation must refuse
    /// (return `None`) whatever it is not sure of, including every invalid call: the
    /// validating path is the one that explains errors to the model. The registry relies on
    /// the same promise: an example this decodes is valid, and a process whose calls all
    /// decode never compiles the schema's validator.
    fn decode(&self, arguments: &Arguments) -> Option<DecodedCall> {
        let _ = arguments;
        None
    }

    /// Rewrites arguments sent in the shape another agent's tool of the same kind takes (a
    /// timeout in milliseconds, a command line as an array) into this tool's own, recording each
    /// change in `coercions` (it ends up in the result's `metadata.coercions`). Called only when
    /// validation is lenient and the arguments as sent are invalid, before the other lenient
    /// fixes; what it leaves is validated as usual, so it only has to rewrite what it is sure of.
    /// The schema the tool publishes keeps its own names. The default changes nothing.
    fn adapt_arguments(&self, arguments: &mut Map<String, Value>, coercions: &mut Vec<Coercion>) {
        let _ = (arguments, coercions);
    }
}

/// A call whose arguments its tool decoded itself (see [`Tool::decode`]):
/// given the call's context, it runs.
pub type DecodedCall =
    Box<dyn FnOnce(ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send>;

type DynToolFn =
    dyn Fn(ToolContext, Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool made at run time from a spec and an async closure (for example a tool imported from
/// an MCP server).
pub struct FnTool {
    spec: ToolSpec,
    f: Arc<DynToolFn>,
}

impl FnTool {
    /// Wraps `f` as a tool described by `spec`.
    pub fn new<F, Fut>(spec: ToolSpec, f: F) -> Self
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        FnTool { spec, f: Arc::new(move |ctx, args| Box::pin(f(ctx, args))) }
    }
}

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool").field("name", &self.spec.name).finish_non_exhaustive()
    }
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (self.f)(ctx, args)
    }
}
