//! `ToolFn`, what `#[tool]` implements, and the generic spec and call every such tool runs on.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::SchemaGenerator;
use serde_json::Value;

use super::arguments::Arguments;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::future::BoxFuture;
use crate::output::{IntoToolOutput, IntoToolResult, ToolOutput};
use crate::spec::{
    Freeform, Grammar, GrammarSyntax, ParameterAlias, PermissionSubject, SourceLocation, ToolAnnotations,
    ToolSpec, TruncationPolicy,
};
use crate::tool::{DecodedCall, Tool};

/// What the macro knows about a tool at compile time; one `static` per tool, which also caches
/// the tool's [`ToolSpec`] once it is first asked for.
pub struct ToolMeta {
    pub name: &'static str,
    pub description: &'static str,
    pub parallel: bool,
    pub timeout: Option<Duration>,
    pub truncation: TruncationPolicy,
    pub title: Option<&'static str>,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
    pub tags: &'static [&'static str],
    pub module_path: &'static str,
    pub file: &'static str,
    pub line: u32,
    /// `freeform`: the property that receives the text, and the grammar (syntax, definition).
    pub freeform: Option<(&'static str, Option<(GrammarSyntax, &'static str)>)>,
    pub defer: bool,
    /// `example = "..."`: JSON text the macro has parsed and written back compactly.
    pub examples: &'static [&'static str],
    /// `#[arg(alias = "...")]`: (alias, parameter) pairs.
    pub aliases: &'static [(&'static str, &'static str)],
    /// `permission = "..."`: what the tool asks permission for.
    pub permission: Option<PermissionSubject>,
    /// `command_argument = "..."`: the argument that holds the command line.
    pub command_argument: Option<&'static str>,
    /// `polls`: the tool waits for work in progress.
    pub polls: bool,
    pub spec: OnceLock<ToolSpec>,
}

/// A `#[tool]` function. Only the parts that depend on the user's types are generated: the
/// argument types, what becomes of the return value, and the call of the function with
/// injected values.
///
/// The macro implements it on a private type next to the tool's public unit struct, whose `Tool`
/// impl forwards to [`spec`] and [`call`]: on the public type, the associated types would make
/// every argument type part of its public interface, and a private argument type an error.
///
/// The associated types carry no bound of their own but `Send` on the arguments (which every
/// tool meets already: the function's future holds them, and it must be `Send`): the bounds
/// are on the constructors of [`FIELDS`] and [`RETURNS`], which the expansion writes on the
/// user's own types, so that a type that does not fit is reported there, and never on
/// `#[tool]` alone.
///
/// [`FIELDS`]: ToolFn::FIELDS
/// [`RETURNS`]: ToolFn::RETURNS
pub trait ToolFn: 'static {
    /// The tool's compile-time facts.
    const META: &'static ToolMeta;
    /// The model-facing arguments: `()`, a tuple of parameter types, or [`Whole`](super::Whole).
    type Args: Arguments + Send + 'static;
    /// Names, docs and defaults of the arguments, with the functions that decode them.
    const FIELDS: <Self::Args as Arguments>::Fields;
    /// The function's return type.
    type Return;
    /// What becomes of the return value.
    const RETURNS: Returns<Self::Return>;

    /// Injects the runtime-provided parameters and calls the function.
    fn run<'c>(
        ctx: &'c ToolContext,
        args: Self::Args,
    ) -> Result<impl Future<Output = Self::Return> + Send + 'c, ToolError>;
}

/// How a tool function's return value becomes the call's result, and its output schema.
pub struct Returns<R> {
    finish: fn(R) -> Result<ToolOutput, ToolError>,
    output_schema: fn(&mut SchemaGenerator) -> Option<Value>,
}

impl<R> Returns<R> {
    /// `finish` is written where the error type is known, to pick its conversion (see
    /// [`ErrTag`](super::ErrTag)): `|ret| finish(ret, |error| /* conversion */)`.
    pub const fn new(finish: fn(R) -> Result<ToolOutput, ToolError>) -> Self
    where
        R: IntoToolResult,
    {
        Returns { finish, output_schema: output_schema::<R> }
    }
}

fn output_schema<R: IntoToolResult>(generator: &mut SchemaGenerator) -> Option<Value> {
    <R::Output as IntoToolOutput>::output_schema(generator)
}

/// A tool function's return value as the call's result, its error converted by `convert`.
pub fn finish<R: IntoToolResult>(
    returned: R,
    convert: impl FnOnce(R::Error) -> ToolError,
) -> Result<ToolOutput, ToolError> {
    match returned.into_tool_result() {
        Ok(output) => output.into_tool_output(),
        Err(error) => Err(convert(error)),
    }
}

/// The spec of the tool `T`, built on first use and cached in its [`ToolMeta`].
pub fn spec<T: ToolFn>() -> &'static ToolSpec {
    T::META.spec.get_or_init(|| {
        let input_schema = <T::Args as Arguments>::schema(&T::FIELDS);
        let output_schema = (T::RETURNS.output_schema)(&mut crate::schema::generator());
        spec_from_meta(T::META, input_schema, output_schema)
    })
}

/// A call of the tool `T`: decode, inject and run, then convert the result.
pub fn call<T: ToolFn>(ctx: ToolContext, args: Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
    Box::pin(run::<T>(ctx, args))
}

/// A call of the tool `T`, when its arguments decode straight from the model's text or parsed
/// object (see [`Arguments::decode_text`] and [`Arguments::decode_value`]).
pub fn decode<T: ToolFn>(arguments: &crate::Arguments) -> Option<DecodedCall> {
    let args = match arguments {
        crate::Arguments::Text(text) => <T::Args as Arguments>::decode_text(&T::FIELDS, text)?,
        crate::Arguments::Json(value) => <T::Args as Arguments>::decode_value(&T::FIELDS, value)?,
        crate::Arguments::Freeform { .. } => return None,
    };
    Some(Box::new(move |ctx| Box::pin(run_decoded::<T>(ctx, args))))
}

async fn run<T: ToolFn>(ctx: ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args = <T::Args as Arguments>::decode(&T::FIELDS, args)
        .map_err(|error| invalid_arguments(T::META.name, error))?;
    run_decoded::<T>(ctx, args).await
}

async fn run_decoded<T: ToolFn>(ctx: ToolContext, args: T::Args) -> Result<ToolOutput, ToolError> {
    let returned = T::run(&ctx, args)?.await;
    (T::RETURNS.finish)(returned)
}

/// The registration's constructor of a tool.
pub fn make<T: Tool + Default>() -> Arc<dyn Tool> {
    Arc::new(T::default())
}

fn invalid_arguments(tool: &str, error: serde_json::Error) -> ToolError {
    ToolError::invalid_arguments(format!(
        "Invalid arguments for tool `{tool}`: {error}. Fix the arguments and call `{tool}` again."
    ))
    .with_source(error)
}

fn spec_from_meta(meta: &ToolMeta, input_schema: Value, output_schema: Option<Value>) -> ToolSpec {
    ToolSpec {
        name: meta.name.to_owned(),
        description: meta.description.to_owned(),
        input_schema,
        output_schema,
        annotations: ToolAnnotations {
            title: meta.title.map(str::to_owned),
            read_only: meta.read_only,
            destructive: meta.destructive,
            idempotent: meta.idempotent,
            open_world: meta.open_world,
        },
        parallel: meta.parallel,
        timeout: meta.timeout,
        truncation: meta.truncation,
        tags: meta.tags.iter().map(|t| (*t).to_owned()).collect(),
        source: Some(SourceLocation {
            module_path: meta.module_path.to_owned(),
            file: meta.file.to_owned(),
            line: meta.line,
        }),
        freeform: meta.freeform.map(|(parameter, grammar)| Freeform {
            parameter: parameter.to_owned(),
            grammar: grammar
                .map(|(syntax, definition)| Grammar { syntax, definition: definition.to_owned() }),
        }),
        defer: meta.defer,
        // The macro parsed each example already; were one to fail here anyway, it stays as a
        // string, which the registry then reports as not an argument object.
        examples: meta
            .examples
            .iter()
            .map(|text| serde_json::from_str(text).unwrap_or_else(|_| Value::String((*text).to_owned())))
            .collect(),
        aliases: meta
            .aliases
            .iter()
            .map(|(alias, parameter)| ParameterAlias::new(*alias, *parameter))
            .collect(),
        permission: meta.permission,
        command_argument: meta.command_argument.map(str::to_owned),
        polls: meta.polls,
        ungated: false,
    }
}
