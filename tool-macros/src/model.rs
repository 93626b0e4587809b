//! Our model of a tool definition, keeping references to the original syn nodes for spans.

use proc_macro2::Span;
use syn::{Attribute, Expr, Ident, ItemFn, LitStr, Pat, Type};

/// `truncate = false`, bare `truncate`, or `truncate(...)`.
pub enum TruncateSetting {
    Off,
    Default,
    Custom(TruncateOptions),
}

/// The contents of `truncate(...)`.
pub struct TruncateOptions {
    pub span: Span,
    pub max_lines: Option<(usize, Span)>,
    pub max_bytes: Option<(usize, Span)>,
    pub direction: Option<LitStr>,
}

/// The parsed `#[tool(...)]` arguments.
#[derive(Default)]
pub struct ToolAttr {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub parallel: Option<Span>,
    pub timeout: Option<LitStr>,
    pub truncate: Option<TruncateSetting>,
    pub read_only: Option<Span>,
    pub destructive: Option<Span>,
    pub idempotent: Option<Span>,
    pub open_world: Option<Span>,
    pub title: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub krate: Option<syn::Path>,
}

/// `#[arg(...)]` on a parameter.
#[derive(Default)]
pub struct ArgAttr {
    pub span: Option<Span>,
    pub default: Option<(Span, Expr)>,
    pub rename: Option<LitStr>,
    pub description: Option<LitStr>,
}

/// How a parameter is filled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ParamKind {
    /// One property of the generated argument object.
    Argument,
    /// The whole argument object (`#[args]`).
    Args,
    /// Provided by the runtime through `FromContext`.
    Injected,
}

/// One parameter of the tool function.
pub struct Param {
    /// The parameter's binding, when it is a plain identifier.
    pub ident: Option<Ident>,
    pub pat: Box<Pat>,
    pub ty: Box<Type>,
    pub kind: ParamKind,
    /// `///` lines on the parameter.
    pub docs: Vec<Attribute>,
    pub arg: ArgAttr,
    /// Span of `#[args]`, if present.
    pub args_marker: Option<Span>,
    /// Span of `#[inject]`, if present.
    pub inject_marker: Option<Span>,
    /// Attributes copied onto the generated argument field.
    pub forwarded: Vec<Attribute>,
}

impl Param {
    /// The property name the model uses.
    pub fn property_name(&self) -> Option<String> {
        if let Some(rename) = &self.arg.rename {
            return Some(rename.value());
        }
        self.ident.as_ref().map(|i| {
            let s = i.to_string();
            s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
        })
    }

    /// The span of the property name (the rename literal or the identifier).
    pub fn name_span(&self) -> Span {
        match (&self.arg.rename, &self.ident) {
            (Some(rename), _) => rename.span(),
            (None, Some(ident)) => ident.span(),
            (None, None) => syn::spanned::Spanned::span(&self.pat),
        }
    }
}

/// A whole tool definition.
pub struct ToolDef {
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
    pub fn name(&self) -> (String, Span) {
        match &self.attr.name {
            Some(name) => (name.value(), name.span()),
            None => {
                let ident = self.func.sig.ident.to_string();
                let ident = ident.strip_prefix("r#").map(str::to_owned).unwrap_or(ident);
                (ident, self.func.sig.ident.span())
            }
        }
    }

    /// The tool's description: `description = "..."` or the doc comment.
    pub fn description(&self) -> String {
        match &self.attr.description {
            Some(d) => d.value(),
            None => self.doc.clone().unwrap_or_default(),
        }
    }
}

/// Whether a parameter type is injected without `#[inject]`: references (`&ToolContext`) and
/// the runtime's injectable types.
pub fn is_injected_type(ty: &Type) -> bool {
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

/// Whether a type is written as `Option<...>` (the same test serde and schemars apply).
pub fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|seg| seg.ident == "Option" && !seg.arguments.is_empty())
        }
        Type::Group(inner) => is_option(&inner.elem),
        _ => false,
    }
}

/// Joins `///` lines: one leading space dropped per line, blank lines kept as paragraph breaks.
pub fn join_docs(attrs: &[Attribute]) -> Option<String> {
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
