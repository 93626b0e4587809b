//! Stage 3: a valid `ToolDef` into the function as written plus the few generated items: the
//! tool's unit struct, a `static` of its facts, a `ToolFn` impl (on a private type, so that
//! private argument types stay private) naming the argument types and calling the function, and
//! the struct's `Tool` impl forwarding to the runtime's generic spec and call.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, ReturnType, Type};

use crate::attrs::{DEBUG_ENV, Direction};
use crate::ctxt::Ctxt;
use crate::model::{Param, ParamKind, ToolDef, TruncateSetting};

/// The largest argument tuple the runtime decodes generically (its `tuple_arguments!` impls);
/// a tool with more model-facing parameters gets a derived struct instead.
const MAX_TUPLE_FIELDS: usize = 16;

/// The macro's entry point on `proc_macro2` tokens: parse, validate, expand.
pub(crate) fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "`#[tool]` goes on an `async fn`, e.g. `#[tool] async fn read(path: String) -> Result<String, ToolError>`",
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
    let cx = Ctxt::new();
    let def = crate::parse::tool_def(&cx, attr, func);
    crate::validate::check(&cx, &def);
    let output = match cx.check() {
        None => expand(&def),
        Some(errors) => {
            let fallback = crate::fallback::expand(&def);
            quote!(#errors #fallback)
        }
    };
    if let Ok(filter) = std::env::var(DEBUG_ENV)
        && (filter == "1" || def.func.sig.ident == filter)
    {
        eprintln!("#[tool] expansion of `{}`:\n{output}", def.func.sig.ident);
    }
    output
}

/// How the model-facing parameters become the tool's `Args`.
enum ArgsShape<'a> {
    /// No model-facing parameter.
    None,
    /// One `#[args]` parameter: its type is the argument object.
    Whole(usize, &'a Param),
    /// Each parameter one property, decoded and described by the runtime's tuple impls.
    Tuple(Vec<(usize, &'a Param)>),
    /// Each parameter one field of a derived struct: for serde or schemars attributes on a
    /// parameter, docs written as macros, or more parameters than the tuple impls take.
    Derived(Vec<(usize, &'a Param)>),
}

fn shape(def: &ToolDef) -> ArgsShape<'_> {
    if let Some((index, whole)) = def.params.iter().enumerate().find(|(_, p)| p.kind == ParamKind::Args) {
        return ArgsShape::Whole(index, whole);
    }
    let arguments: Vec<_> =
        def.params.iter().enumerate().filter(|(_, p)| p.kind == ParamKind::Argument).collect();
    let needs_derive = arguments.len() > MAX_TUPLE_FIELDS
        || arguments.iter().any(|(_, p)| !p.forwarded.is_empty() || p.schemars_doc().is_none());
    if arguments.is_empty() {
        ArgsShape::None
    } else if needs_derive {
        ArgsShape::Derived(arguments)
    } else {
        ArgsShape::Tuple(arguments)
    }
}

/// `tokens` with every span set to `span`: `quote_spanned!` spans only the tokens it writes, not
/// those it interpolates, and an error on a path to the runtime should land on the user's token.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut respanned = proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                respanned.set_span(span);
                token = respanned.into();
            }
            token.set_span(span);
            token
        })
        .collect()
}

fn binding(index: usize) -> Ident {
    format_ident!("__tool_arg_{}", index)
}

fn expand(def: &ToolDef) -> TokenStream {
    let func = &def.func;
    let vis = &func.vis;
    let fn_ident = &func.sig.ident;
    let krate = def.runtime();
    let p = quote!(#krate::__private);
    let tool_type = def.tool_type();
    let (name, _) = def.name();
    // Written without the spaces a token stream prints (`:: tool_runtime`), so that it is a link.
    let runtime_path = krate.to_string().replace(' ', "");
    let type_doc =
        format!("The `{name}` tool: [`{fn_ident}`] as a [`Tool`]({runtime_path}::__private::Tool).");
    let (ret_ty, ret_span) = match &func.sig.output {
        ReturnType::Default => (quote!(()), fn_ident.span()),
        ReturnType::Type(_, ty) => (ty.to_token_stream(), ty.span()),
    };

    let mut items = Vec::new();
    let (args_ty, fields, destructure) = match shape(def) {
        ArgsShape::None => (quote!(()), quote!(()), quote!(())),
        ArgsShape::Whole(index, param) => {
            let ty = &param.ty;
            let local = binding(index);
            let p = respan(&p, ty.span());
            let fields = quote_spanned!(ty.span()=> #p::WholeFields::<#ty>::new());
            (quote!(#p::Whole<#ty>), fields, quote!(#p::Whole(#local)))
        }
        ArgsShape::Tuple(arguments) => {
            let types = arguments.iter().map(|(_, param)| &param.ty);
            let bindings = arguments.iter().map(|(i, _)| binding(*i));
            let fields =
                arguments.iter().map(|(i, param)| field(&p, *i, param, &mut items)).collect::<Vec<_>>();
            (quote!((#(#types,)*)), quote!((#(#fields,)*)), quote!((#(#bindings,)*)))
        }
        ArgsShape::Derived(arguments) => {
            items.push(derived_struct(&krate, &arguments));
            let bindings = arguments.iter().map(|(i, _)| binding(*i));
            let fields = quote!(#p::WholeFields::<__ToolArgs>::new());
            (quote!(#p::Whole<__ToolArgs>), fields, quote!(#p::Whole(__ToolArgs { #(#bindings),* })))
        }
    };

    let call_args = def.params.iter().enumerate().map(|(i, param)| match param.kind {
        ParamKind::Injected => {
            let ty = &param.ty;
            let p = respan(&p, ty.span());
            quote_spanned!(ty.span()=> <#ty as #p::FromContext<'_>>::from_context(__tool_ctx)?)
        }
        ParamKind::Argument | ParamKind::Args => binding(i).to_token_stream(),
    });
    let call = quote_spanned!(fn_ident.span()=> #fn_ident(#(#call_args),*));
    // Spanned on the return type, where an unfit one is reported.
    let returns = {
        let p = respan(&p, ret_span);
        quote_spanned! {ret_span=>
        #p::Returns::<#ret_ty>::new(|__tool_ret| {
            #[allow(unused_imports)]
            use #p::{ViaDisplay as _, ViaIoError as _, ViaStdError as _, ViaToolError as _};
            #p::finish(__tool_ret, |__tool_err| (&&&#p::ErrTag::of(&__tool_err)).__tool_error_converter()(__tool_err))
        })
        }
    };
    // A `Result<T, E>` whose `T` is not a tool output is also reported on `T` itself.
    let ok_check = ok_type(&func.sig.output).map(|ok| {
        let p = respan(&p, ok.span());
        quote_spanned! {ok.span()=>
            const _: fn() = || {
                fn returns_a_tool_output<T: #p::IntoToolOutput>() {}
                returns_a_tool_output::<#ok>();
            };
        }
    });
    let meta = meta(def, &p);
    let line = quote_spanned!(fn_ident.span()=> ::core::line!());

    quote! {
        // Each parameter is a property of the tool's input: a tool of many properties is normal.
        #[allow(clippy::too_many_arguments)]
        #func

        #ok_check

        #[doc = #type_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #tool_type;

        const _: () = {
            static __TOOL_META: #p::ToolMeta = #meta;

            #(#items)*

            struct __Tool;

            impl #p::ToolFn for __Tool {
                const META: &'static #p::ToolMeta = &__TOOL_META;
                type Args = #args_ty;
                const FIELDS: <Self::Args as #p::Arguments>::Fields = #fields;
                type Return = #ret_ty;
                const RETURNS: #p::Returns<Self::Return> = #returns;

                fn run<'__tool>(
                    __tool_ctx: &'__tool #p::ToolContext,
                    __tool_args: Self::Args,
                ) -> ::core::result::Result<
                    impl ::core::future::Future<Output = Self::Return> + ::core::marker::Send + '__tool,
                    #p::ToolError,
                > {
                    let #destructure = __tool_args;
                    ::core::result::Result::Ok(#call)
                }
            }

            impl #p::Tool for #tool_type {
                fn spec(&self) -> &#p::ToolSpec {
                    #p::spec::<__Tool>()
                }

                fn call<'__tool>(
                    &'__tool self,
                    ctx: #p::ToolContext,
                    args: #p::serde_json::Value,
                ) -> #p::BoxFuture<'__tool, ::core::result::Result<#p::ToolOutput, #p::ToolError>> {
                    #p::call::<__Tool>(ctx, args)
                }

                fn decode(&self, arguments: &#p::CallArguments) -> ::core::option::Option<#p::DecodedCall> {
                    #p::decode::<__Tool>(arguments)
                }
            }

            #p::inventory::submit! {
                #p::ToolRegistration::__new(#name, ::core::module_path!(), ::core::file!(), #line, #p::make::<#tool_type>)
            }
        };
    }
}

/// The `Field` of one parameter: its property name, the title and description schemars would
/// read from its doc, and its default (a function, plus the value the schema shows).
fn field(p: &TokenStream, index: usize, param: &Param, items: &mut Vec<TokenStream>) -> TokenStream {
    let name = param.property_name().unwrap_or_default();
    let doc = param.schemars_doc().unwrap_or_default();
    let (title, description) = match &param.arg.description {
        Some(description) => (String::new(), description.value()),
        None => {
            let (title, description) = crate::model::title_and_description(&doc);
            (title.to_owned(), description.to_owned())
        }
    };
    // On the parameter's type, where a type that cannot be an argument is reported.
    let ty = &param.ty;
    let span = ty.span();
    let spanned_p = respan(p, span);
    let mut field = quote_spanned!(span=> #spanned_p::Field::<#ty>::new(#name, #title, #description));
    field = quote! {
        #field.exact(|| {
            #[allow(unused_imports)]
            use #p::NotExact as _;
            #p::ExactProbe::<#ty>::new().is_exact()
        })
    };
    if let Some((_, expr)) = &param.arg.default {
        let default_fn = format_ident!("__tool_default_{}", index);
        items.push(default_fn_item(&default_fn, ty, expr));
        field = quote! {
            #field.with_default(#default_fn, || {
                #[allow(unused_imports)]
                use #p::NoSerialize as _;
                #p::MaybeSerialize(#default_fn()).maybe_to_value()
            })
        };
    }
    field
}

/// `fn __tool_default_N() -> T { EXPR }`; a string literal goes through `From`, so that
/// `#[arg(default = "head")] mode: String` works. Spanned on the user's expression, where a
/// value of the wrong type is reported.
fn default_fn_item(default_fn: &Ident, ty: &syn::Type, expr: &syn::Expr) -> TokenStream {
    let value = match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }) => {
            quote_spanned!(expr.span()=> ::core::convert::From::from(#expr))
        }
        _ => quote_spanned!(expr.span()=> #expr),
    };
    quote! {
        #[allow(clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
        fn #default_fn() -> #ty { #value }
    }
}

/// The argument struct serde and schemars derive for parameters that carry their attributes.
fn derived_struct(krate: &TokenStream, arguments: &[(usize, &Param)]) -> TokenStream {
    let p = quote!(#krate::__private);
    let serde_crate = format!("{}::__private::serde", krate.to_string().replace(' ', ""));
    let schemars_crate = format!("{}::__private::schemars", krate.to_string().replace(' ', ""));
    let mut defaults = Vec::new();
    let mut checks = Vec::new();
    let fields = arguments.iter().map(|(i, param)| {
        let ty = &param.ty;
        let p = respan(&p, ty.span());
        checks.push(quote_spanned!(ty.span()=> #p::assert_argument::<#ty>();));
        let field = binding(*i);
        let property = param.property_name().unwrap_or_default();
        let mut attrs = vec![quote!(#[serde(rename = #property)])];
        match &param.arg.description {
            Some(description) => attrs.push(quote!(#[schemars(description = #description)])),
            None => {
                let docs = &param.docs;
                attrs.push(quote!(#(#docs)*));
            }
        }
        if let Some((_, expr)) = &param.arg.default {
            let default_fn = format_ident!("__tool_default_{}", i);
            let default_path = default_fn.to_string();
            defaults.push(default_fn_item(&default_fn, ty, expr));
            attrs.push(quote!(#[serde(default = #default_path)]));
        }
        let forwarded = &param.forwarded;
        quote!(#(#attrs)* #(#forwarded)* #field: #ty,)
    });
    let fields = fields.collect::<Vec<_>>();
    quote! {
        // The derives name `Some`, `None`, `Ok` and `Err` unqualified; keep a module that
        // shadows them from breaking the expansion.
        #[allow(unused_imports)]
        use ::core::option::Option::{None, Some};
        #[allow(unused_imports)]
        use ::core::result::Result::{Err, Ok};

        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        struct __ToolArgs { #(#fields)* }
        #(#defaults)*

        #[allow(dead_code)]
        fn __tool_checks() {
            #(#checks)*
        }
    }
}

/// The `ToolMeta` literal: every attribute value as the typed model holds it.
fn meta(def: &ToolDef, p: &TokenStream) -> TokenStream {
    let attr = &def.attr;
    let (name, _) = def.name();
    let description = def.description();
    let some = |value: TokenStream| quote!(::core::option::Option::Some(#value));
    let none = quote!(::core::option::Option::None);
    let option = |value: Option<TokenStream>| value.map_or_else(|| none.clone(), some);
    let parallel = attr.parallel.is_some();
    let read_only = attr.read_only.is_some();
    let destructive = attr.destructive.is_some();
    let idempotent = attr.idempotent.is_some();
    let open_world = attr.open_world.is_some();
    let defer = attr.defer.is_some();
    let polls = attr.polls.is_some();
    let permission = option(attr.permission.map(|subject| {
        let variant = match subject.value {
            crate::attrs::PermissionSubject::Path => quote!(Path),
            crate::attrs::PermissionSubject::Command => quote!(Command),
            crate::attrs::PermissionSubject::Input => quote!(Input),
        };
        quote!(#p::PermissionSubject::#variant)
    }));
    let command_argument = option(attr.command_argument.as_ref().map(ToTokens::to_token_stream));
    let title = option(attr.title.as_ref().map(ToTokens::to_token_stream));
    let timeout = option(attr.timeout.map(|timeout| {
        // Whole milliseconds: the parse stage builds every timeout from them.
        let ms = u64::try_from(timeout.value.as_millis()).unwrap_or(u64::MAX);
        quote!(::core::time::Duration::from_millis(#ms))
    }));
    let tags = &attr.tags;
    // Compact, whatever the spacing of the literal: the text providers see is the same for the
    // same example.
    let examples = attr.examples.iter().map(|example| example.json.to_string());
    let aliases =
        def.params.iter().filter(|p| p.kind == crate::model::ParamKind::Argument).flat_map(|param| {
            let parameter = param.property_name().unwrap_or_default();
            param.arg.aliases.iter().map(move |alias| quote!((#alias, #parameter)))
        });
    let truncation = match &attr.truncate {
        Some(TruncateSetting::Off) => quote!(#p::TruncationPolicy::DISABLED),
        None | Some(TruncateSetting::Default) => quote! {
            #p::TruncationPolicy { enabled: true, max_lines: #none, max_bytes: #none, direction: #none }
        },
        Some(TruncateSetting::Custom(options)) => {
            let limit = |limit: Option<crate::model::Spanned<usize>>| {
                option(limit.map(|limit| {
                    let value = limit.value;
                    quote!(#value)
                }))
            };
            let max_lines = limit(options.max_lines);
            let max_bytes = limit(options.max_bytes);
            let direction = option(options.direction.map(|direction| {
                let variant = match direction.value {
                    Direction::Head => quote!(Head),
                    Direction::Tail => quote!(Tail),
                    Direction::Middle => quote!(Middle),
                };
                quote!(#p::TruncationDirection::#variant)
            }));
            quote! {
                #p::TruncationPolicy { enabled: true, max_lines: #max_lines, max_bytes: #max_bytes, direction: #direction }
            }
        }
    };
    let line = quote_spanned!(def.func.sig.ident.span()=> ::core::line!());
    let freeform = option(attr.freeform.as_ref().map(|freeform| {
        // Validation made sure there is exactly one argument.
        let parameter = def
            .params
            .iter()
            .find(|p| p.kind == crate::model::ParamKind::Argument)
            .and_then(crate::model::Param::property_name)
            .unwrap_or_default();
        let grammar = option(freeform.grammar.as_ref().map(|grammar| {
            let syntax = match freeform.syntax.map(|s| s.value) {
                None | Some(crate::attrs::Syntax::Lark) => quote!(#p::GrammarSyntax::Lark),
                Some(crate::attrs::Syntax::Regex) => quote!(#p::GrammarSyntax::Regex),
            };
            let definition = match grammar {
                crate::model::GrammarSource::Inline(lit) => quote!(#lit),
                crate::model::GrammarSource::File(file) => quote! {
                    ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #file))
                },
            };
            quote!((#syntax, #definition))
        }));
        quote!((#parameter, #grammar))
    }));
    quote! {
        #p::ToolMeta {
            name: #name,
            description: #description,
            parallel: #parallel,
            timeout: #timeout,
            truncation: #truncation,
            title: #title,
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
            tags: &[#(#tags),*],
            freeform: #freeform,
            defer: #defer,
            permission: #permission,
            command_argument: #command_argument,
            polls: #polls,
            examples: &[#(#examples),*],
            aliases: &[#(#aliases),*],
            module_path: ::core::module_path!(),
            file: ::core::file!(),
            line: #line,
            spec: ::std::sync::OnceLock::new(),
        }
    }
}

/// `T` of a return type written `Result<T, E>` (or `Result<T>` of an alias), when it is one.
fn ok_type(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else { return None };
    let Type::Path(path) = &**ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        syn::GenericArgument::Type(ok) => Some(ok),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(attr: TokenStream, item: TokenStream) -> ToolDef {
        let cx = Ctxt::new();
        let def = crate::parse::tool_def(&cx, attr, syn::parse2(item).expect("a function"));
        assert!(cx.into_errors().is_empty());
        def
    }

    #[test]
    fn tool_type_names() {
        let name = |s: &str| {
            let ident: Ident = syn::parse_str(s).expect("an identifier");
            def(quote!(), quote!(async fn #ident() {})).tool_type().to_string()
        };
        assert_eq!(name("read_file"), "ReadFileTool");
        assert_eq!(name("grep"), "GrepTool");
        assert_eq!(name("__x__y"), "XYTool");
        assert_eq!(name("r#type"), "TypeTool");
    }

    #[test]
    fn arguments_take_the_generic_path_unless_they_carry_attributes() {
        let plain = def(
            quote!(),
            quote!(
                async fn f(
                    ctx: &ToolContext,
                    /// A.
                    a: String,
                    #[arg(default = 1)] b: u8,
                ) {
                }
            ),
        );
        assert!(matches!(shape(&plain), ArgsShape::Tuple(fields) if fields.len() == 2));
        let constrained = def(
            quote!(),
            quote!(
                async fn f(#[schemars(length(min = 1))] a: String) {}
            ),
        );
        assert!(matches!(shape(&constrained), ArgsShape::Derived(_)));
        let macro_doc = def(
            quote!(),
            quote!(
                async fn f(#[doc = include_str!("x")] a: String) {}
            ),
        );
        assert!(matches!(shape(&macro_doc), ArgsShape::Derived(_)));
        let many = (0..=MAX_TUPLE_FIELDS).map(|i| format_ident!("a{}", i));
        let many = def(quote!(), quote!(async fn f(#(#many: u8),*) {}));
        assert!(matches!(shape(&many), ArgsShape::Derived(fields) if fields.len() == MAX_TUPLE_FIELDS + 1));
        assert!(matches!(
            shape(&def(
                quote!(),
                quote!(
                    async fn f(ctx: &ToolContext) {}
                )
            )),
            ArgsShape::None
        ));
    }

    #[test]
    fn typed_values_are_emitted_without_parsing_again() {
        let out = expand(&def(
            quote!(timeout = "1m30s", truncate(max_lines = 5, direction = "middle")),
            quote!(
                async fn f() {}
            ),
        ))
        .to_string();
        assert!(out.contains("Duration :: from_millis (90000u64)"), "{out}");
        assert!(out.contains("TruncationDirection :: Middle"), "{out}");
    }

    #[test]
    fn errors_keep_the_function_and_the_tool_type() {
        let out = tool(
            quote!(paralel),
            quote!(
                async fn f(
                    /// doc
                    x: u8,
                ) {
                }
            ),
        )
        .to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("struct FTool"), "{out}");
        assert!(!out.contains("inventory"), "a tool with errors is not registered: {out}");
        // The function is still emitted, with the `///` on its parameter (not allowed there) removed.
        let func_start = out.find("async fn f").expect("function emitted");
        let func_end = out[func_start..].find('}').expect("function body") + func_start + 1;
        let func: syn::ItemFn = syn::parse_str(&out[func_start..func_end]).expect("a function");
        let syn::FnArg::Typed(param) = &func.sig.inputs[0] else { panic!("typed parameter") };
        assert!(param.attrs.is_empty());
    }

    #[test]
    fn non_functions_are_rejected_but_kept() {
        let out = tool(
            quote!(),
            quote!(
                struct S;
            ),
        )
        .to_string();
        assert!(out.contains("goes on an `async fn`"), "{out}");
        assert!(out.contains("struct S ;"), "{out}");
    }
}
