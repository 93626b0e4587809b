//! Our model of a tool definition: attribute values already typed (a `Duration`, a `Direction`),
//! with the spans of the user's tokens kept for messages.

use std::time::Duration;

use proc_macro2::Span;
use syn::{Attribute, Expr, Ident, ItemFn, LitStr, Pat, Type};

use crate::attrs::{Direction, PermissionSubject, Syntax};

/// A value and the span of the token it was written as.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

/// `truncate = false`, bare `truncate` (or `truncate = true`), or `truncate(...)`.
pub(crate) enum TruncateSetting {
    Off,
    Default,
    Custom(TruncateOptions),
}

/// The contents of `truncate(...)`.
pub(crate) struct TruncateOptions {
    pub span: Span,
    pub max_lines: Option<Spanned<usize>>,
    pub max_bytes: Option<Spanned<usize>>,
    pub direction: Option<Spanned<Direction>>,
}

/// Where a freeform tool's grammar comes from.
pub(crate) enum GrammarSource {
    /// `grammar = "..."`.
    Inline(LitStr),
    /// `grammar_file = "..."`, relative to the crate's `CARGO_MANIFEST_DIR`.
    File(LitStr),
}

/// `freeform` or `freeform(grammar = "..." | grammar_file = "...", syntax = "lark" | "regex")`.
pub(crate) struct FreeformAttr {
    pub span: Span,
    pub grammar: Option<GrammarSource>,
    /// The span of a second grammar source, which validation reports.
    pub second_grammar: Option<Span>,
    pub syntax: Option<Spanned<Syntax>>,
}

/// One `example = r#"{...}"#`: the literal as written and the JSON it holds.
pub(crate) struct ExampleAttr {
    pub lit: LitStr,
    pub json: serde_json::Value,
}

/// The parsed `#[tool(...)]` arguments.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub parallel: Option<Span>,
    pub timeout: Option<Spanned<Duration>>,
    pub truncate: Option<TruncateSetting>,
    pub read_only: Option<Span>,
    pub destructive: Option<Span>,
    pub idempotent: Option<Span>,
    pub open_world: Option<Span>,
    pub title: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub krate: Option<syn::Path>,
    pub freeform: Option<FreeformAttr>,
    pub defer: Option<Span>,
    /// `example = "..."`, repeatable, in the order written.
    pub examples: Vec<ExampleAttr>,
    /// `permission = "path" | "command" | "input"`.
    pub permission: Option<Spanned<PermissionSubject>>,
    /// `command_argument = "..."`: the argument that holds the command line.
    pub command_argument: Option<LitStr>,
    /// `polls`: the tool waits for work in progress; the same call again is no loop.
    pub polls: Option<Span>,
    /// `undocumented`: the tool and its parameters may go without a description.
    pub undocumented: Option<Span>,
}

/// `#[arg(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ArgAttr {
    /// The whole attribute, for messages about it.
    pub attr: Option<Attribute>,
    pub default: Option<(Span, Expr)>,
    pub rename: Option<LitStr>,
    pub description: Option<LitStr>,
    /// `alias = "..."`, repeatable: other names the model may send the argument under.
    pub aliases: Vec<LitStr>,
    /// `undocumented`: the parameter may go without a description.
    pub undocumented: bool,
}

/// How a parameter is filled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ParamKind {
    /// One property of the argument object.
    Argument,
    /// The whole argument object (`#[args]`).
    Args,
    /// Provided by the runtime through `FromContext`.
    Injected,
}

/// One parameter of the tool function.
pub(crate) struct Param {
    /// The parameter's binding, when it is a plain identifier.
    pub ident: Option<Ident>,
    pub pat: Box<Pat>,
    pub ty: Box<Type>,
    pub kind: ParamKind,
    /// `///` lines on the parameter.
    pub docs: Vec<Attribute>,
    pub arg: ArgAttr,
    /// `#[args]`, if present.
    pub args_marker: Option<Attribute>,
    /// `#[inject]`, if present.
    pub inject_marker: Option<Attribute>,
    /// Attributes copied onto the generated argument field.
    pub forwarded: Vec<Attribute>,
}

impl Param {
    /// The property name the model uses.
    pub(crate) fn property_name(&self) -> Option<String> {
        if let Some(rename) = &self.arg.rename {
            return Some(rename.value());
        }
        self.ident.as_ref().map(|i| unraw(&i.to_string()))
    }

    /// The span of the property name (the rename literal or the identifier).
    pub(crate) fn name_span(&self) -> Span {
        match (&self.arg.rename, &self.ident) {
            (Some(rename), _) => rename.span(),
            (None, Some(ident)) => ident.span(),
            (None, None) => syn::spanned::Spanned::span(&self.pat),
        }
    }

    /// The `///` doc as schemars' derive reads it: the lines joined with `\n`, one leading space
    /// dropped from each; `None` when a doc attribute is not a plain string (a macro call).
    pub(crate) fn schemars_doc(&self) -> Option<String> {
        let mut lines = Vec::new();
        for attr in &self.docs {
            let syn::Meta::NameValue(nv) = &attr.meta else { return None };
            let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value else { return None };
            let line = s.value();
            lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
        }
        Some(lines.join("\n"))
    }
}

/// A whole tool definition.
pub(crate) struct ToolDef {
    /// The user's function with our parameter attributes removed; emitted as written otherwise.
    pub func: ItemFn,
    pub attr: ToolAttr,
    /// The function's `///` doc, paragraphs and markdown intact.
    pub doc: Option<String>,
    pub params: Vec<Param>,
    /// A `self` receiver, if the function has one.
    pub receiver: Option<Span>,
}

impl ToolDef {
    /// The tool's name: `name = "..."` or the function's name.
    pub(crate) fn name(&self) -> (String, Span) {
        match &self.attr.name {
            Some(name) => (name.value(), name.span()),
            None => (unraw(&self.func.sig.ident.to_string()), self.func.sig.ident.span()),
        }
    }

    /// The generated type: `read_file` -> `ReadFileTool`, at the function name's span.
    pub(crate) fn tool_type(&self) -> Ident {
        let ident = &self.func.sig.ident;
        let mut name = String::new();
        for part in unraw(&ident.to_string()).split('_').filter(|p| !p.is_empty()) {
            let mut chars = part.chars();
            if let Some(first) = chars.next() {
                name.extend(first.to_uppercase());
                name.push_str(chars.as_str());
            }
        }
        quote::format_ident!("{}Tool", name, span = ident.span())
    }

    /// Where `tool_runtime` is: `crate = path`, or `::tool_runtime`.
    pub(crate) fn runtime(&self) -> proc_macro2::TokenStream {
        match &self.attr.krate {
            Some(path) => quote::ToTokens::to_token_stream(path),
            None => quote::quote!(::tool_runtime),
        }
    }

    /// The tool's description: `description = "..."` or the doc comment.
    pub(crate) fn description(&self) -> String {
        match &self.attr.description {
            Some(d) => d.value(),
            None => self.doc.clone().unwrap_or_default(),
        }
    }
}

fn unraw(ident: &str) -> String {
    ident.strip_prefix("r#").unwrap_or(ident).to_owned()
}

/// Whether a parameter type is injected without `#[inject]`: references (`&ToolContext`) and
/// the runtime's injectable types.
pub(crate) fn is_injected_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Paren(inner) => is_injected_type(&inner.elem),
        Type::Group(inner) => is_injected_type(&inner.elem),
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|seg| crate::attrs::INJECTED_TYPES.iter().any(|name| seg.ident == name)),
        _ => false,
    }
}

/// Whether a type is written as `Option<...>`.
pub(crate) fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|seg| seg.ident == "Option" && !seg.arguments.is_empty())
        }
        Type::Group(inner) => is_option(&inner.elem),
        _ => false,
    }
}

/// Joins `///` lines: one leading space dropped per line, blank lines kept as paragraph breaks.
pub(crate) fn join_docs(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            for line in s.value().split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    while lines.first().is_some_and(|l| l.is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// schemars' split of a doc into title and description (its `get_title_and_description`): a
/// doc that starts with `#` has its first line as the title; both parts are trimmed.
pub(crate) fn title_and_description(doc: &str) -> (&str, &str) {
    let doc = doc.trim_matches(|c: char| c.is_ascii_whitespace());
    if let Some(rest) = doc.strip_prefix('#') {
        let (title, description) = rest.split_once('\n').unwrap_or((rest, ""));
        (
            title.trim_start_matches('#').trim_matches(|c: char| c.is_ascii_whitespace()),
            description.trim_matches(|c: char| c.is_ascii_whitespace()),
        )
    } else {
        ("", doc)
    }
}
