//! Stage 3: a valid `ToolDef` into the function as written plus the generated tool items.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, ReturnType};

use crate::attrs::DEBUG_ENV;
use crate::model::{ParamKind, ToolDef, TruncateSetting};

/// The macro's entry point on `proc_macro2` tokens: parse, validate, expand.
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
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
    let (def, mut errors) = crate::parse::tool_def(attr, func);
    errors.extend(crate::validate::check(&def));
    let output = if errors.is_empty() {
        expand(&def)
    } else {
        // Emit the function anyway so the rest of the crate keeps compiling.
        let func = &def.func;
        let errors = darling::Error::multiple(errors).write_errors();
        quote!(#errors #func)
    };
    if let Ok(filter) = std::env::var(DEBUG_ENV)
        && (filter == "1" || filter == def.func.sig.ident.to_string())
    {
        eprintln!("#[tool] expansion of `{}`:\n{output}", def.func.sig.ident);
    }
    output
}

/// `read_file` -> `ReadFileTool`.
fn tool_type_name(ident: &Ident) -> Ident {
    let raw = ident.to_string();
    let raw = raw.strip_prefix("r#").unwrap_or(&raw);
    let mut name = String::new();
    for part in raw.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    format_ident!("{}Tool", name, span = ident.span())
}

fn expand(def: &ToolDef) -> TokenStream {
    let func = &def.func;
    let vis = &func.vis;
    let fn_ident = &func.sig.ident;
    let krate = match &def.attr.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    };
    let p = quote!(#krate::__private);
    let tool_type = tool_type_name(fn_ident);
    let (name, _) = def.name();
    let description = def.description();
    let type_doc = format!("The `{name}` tool: [`{fn_ident}`] as a [`Tool`]({krate}::__private::Tool).")
        .replace(' ', " ");

    let ret_ty = match &func.sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => ty.to_token_stream(),
    };
    let ret_span = match &func.sig.output {
        ReturnType::Default => func.sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };

    // Argument struct fields, default functions, call arguments and type checks.
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut call_args = Vec::new();
    let mut prelude = Vec::new();
    let mut checks = Vec::new();
    let mut args_struct_ty = None;
    let serde_crate = format!("{}::__private::serde", krate.to_string().replace(' ', ""));
    let schemars_crate = format!("{}::__private::schemars", krate.to_string().replace(' ', ""));
    for (i, param) in def.params.iter().enumerate() {
        let ty = &param.ty;
        let ty_span = ty.span();
        match param.kind {
            ParamKind::Injected => {
                let local = format_ident!("__tool_injected_{}", i);
                checks.push(quote_spanned!(ty_span=> #p::assert_injectable::<#ty>();));
                prelude.push(quote! {
                    let #local: #ty = <#ty as #p::FromContext<'_>>::from_context(&__tool_ctx)?;
                });
                call_args.push(quote!(#local));
            }
            ParamKind::Args => {
                checks.push(quote_spanned!(ty_span=> #p::assert_argument::<#ty>();));
                args_struct_ty = Some(ty.to_token_stream());
                call_args.push(quote!(__tool_args));
            }
            ParamKind::Argument => {
                let ident = param.ident.as_ref().expect("validated: plain identifier");
                let field = format_ident!("__tool_arg_{}", i, span = Span::call_site());
                checks.push(quote_spanned!(ty_span=> #p::assert_argument::<#ty>();));
                let property = param.property_name().expect("validated: named");
                let mut attrs = vec![quote!(#[serde(rename = #property)])];
                if let Some(description) = &param.arg.description {
                    attrs.push(quote!(#[schemars(description = #description)]));
                } else {
                    let docs = &param.docs;
                    attrs.push(quote!(#(#docs)*));
                }
                if let Some((_, expr)) = &param.arg.default {
                    let default_fn = format_ident!("__tool_default_{}", i);
                    let default_path = default_fn.to_string();
                    let value = match expr {
                        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }) => {
                            quote_spanned!(expr.span()=> ::core::convert::From::from(#expr))
                        }
                        _ => quote_spanned!(expr.span()=> #expr),
                    };
                    defaults.push(quote! {
                        #[allow(clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
                        fn #default_fn() -> #ty { #value }
                    });
                    attrs.push(quote!(#[serde(default = #default_path)]));
                }
                let forwarded = &param.forwarded;
                fields.push(quote!(#(#attrs)* #(#forwarded)* #field: #ty,));
                let _ = ident;
                call_args.push(quote!(__tool_args.#field));
            }
        }
    }

    let has_arguments = !fields.is_empty();
    let (args_items, decode, spec_fn) = if let Some(ty) = args_struct_ty {
        (
            quote!(),
            quote!(let __tool_args: #ty = #p::decode_args(#name, __tool_value)?;),
            quote!(#p::spec_with_args::<#ty, #ret_ty>(&__TOOL_META)),
        )
    } else if has_arguments {
        (
            quote! {
                #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
                #[serde(crate = #serde_crate, deny_unknown_fields)]
                #[schemars(crate = #schemars_crate)]
                struct __ToolArgs { #(#fields)* }
                #(#defaults)*
            },
            quote!(let __tool_args: __ToolArgs = #p::decode_args(#name, __tool_value)?;),
            quote!(#p::spec_with_args::<__ToolArgs, #ret_ty>(&__TOOL_META)),
        )
    } else {
        (quote!(), quote!(let _ = __tool_value;), quote!(#p::spec_without_args::<#ret_ty>(&__TOOL_META)))
    };

    let attr = &def.attr;
    let parallel = attr.parallel.is_some();
    let read_only = attr.read_only.is_some();
    let destructive = attr.destructive.is_some();
    let idempotent = attr.idempotent.is_some();
    let open_world = attr.open_world.is_some();
    let title = match &attr.title {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    };
    let timeout = match attr.timeout.as_ref().and_then(|t| crate::validate::parse_duration_ms(&t.value())) {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let tags = &attr.tags;
    let opt_usize = |v: Option<(usize, Span)>| match v {
        Some((n, _)) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let truncation = match &attr.truncate {
        Some(TruncateSetting::Off) => quote!(#p::TruncationPolicy::DISABLED),
        None | Some(TruncateSetting::Default) => quote! {
            #p::TruncationPolicy { enabled: true, max_lines: ::core::option::Option::None, max_bytes: ::core::option::Option::None, direction: ::core::option::Option::None }
        },
        Some(TruncateSetting::Custom(options)) => {
            let max_lines = opt_usize(options.max_lines);
            let max_bytes = opt_usize(options.max_bytes);
            let direction = match options.direction.as_ref().map(|d| d.value()) {
                Some(d) => {
                    let variant = match d.as_str() {
                        "tail" => quote!(Tail),
                        "middle" => quote!(Middle),
                        _ => quote!(Head),
                    };
                    quote!(::core::option::Option::Some(#p::TruncationDirection::#variant))
                }
                None => quote!(::core::option::Option::None),
            };
            quote! {
                #p::TruncationPolicy { enabled: true, max_lines: #max_lines, max_bytes: #max_bytes, direction: #direction }
            }
        }
    };
    let fn_span = fn_ident.span();
    let line = quote_spanned!(fn_span=> ::core::line!());
    checks.push(quote_spanned!(ret_span=> #p::assert_return::<#ret_ty>();));
    let awaited = quote_spanned!(fn_span=> #fn_ident(#(#call_args),*).await);
    let finish = quote_spanned!(ret_span=> #p::finish(__tool_out));
    let into_result = quote_spanned!(ret_span=> #p::IntoToolResult::into_tool_result(__tool_ret));
    let convert_error =
        quote_spanned!(ret_span=> (&&&#p::ErrTag::of(&__tool_err)).__tool_error_converter()(__tool_err));

    quote! {
        #func

        #[doc = #type_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #tool_type;

        #[allow(non_snake_case, clippy::needless_question_mark, clippy::let_unit_value)]
        const _: () = {
            // The schemars derive names `Some` unqualified; keep the user's module from shadowing it.
            #[allow(unused_imports)]
            use ::core::option::Option::{None, Some};
            #[allow(unused_imports)]
            use ::core::result::Result::{Err, Ok};

            #args_items

            const __TOOL_META: #p::ToolMeta = #p::ToolMeta {
                name: #name,
                description: #description,
                parallel: #parallel,
                timeout_ms: #timeout,
                truncation: #truncation,
                title: #title,
                read_only: #read_only,
                destructive: #destructive,
                idempotent: #idempotent,
                open_world: #open_world,
                tags: &[#(#tags),*],
                module_path: ::core::module_path!(),
                file: ::core::file!(),
                line: #line,
            };

            #[allow(dead_code)]
            fn __tool_checks() {
                #(#checks)*
            }

            async fn __tool_invoke(
                __tool_ctx: #p::ToolContext,
                __tool_value: #p::serde_json::Value,
            ) -> ::core::result::Result<#p::ToolOutput, #p::ToolError> {
                #decode
                #(#prelude)*
                let __tool_ret = #awaited;
                match #into_result {
                    ::core::result::Result::Ok(__tool_out) => #finish,
                    ::core::result::Result::Err(__tool_err) => ::core::result::Result::Err({
                        #[allow(unused_imports)]
                        use #p::{ViaDisplay as _, ViaIoError as _, ViaStdError as _, ViaToolError as _};
                        #convert_error
                    }),
                }
            }

            impl #p::Tool for #tool_type {
                fn spec(&self) -> &#p::ToolSpec {
                    static __TOOL_SPEC: ::std::sync::OnceLock<#p::ToolSpec> = ::std::sync::OnceLock::new();
                    __TOOL_SPEC.get_or_init(|| #spec_fn)
                }

                fn call<'__tool>(
                    &'__tool self,
                    ctx: #p::ToolContext,
                    args: #p::serde_json::Value,
                ) -> #p::BoxFuture<'__tool, ::core::result::Result<#p::ToolOutput, #p::ToolError>> {
                    ::std::boxed::Box::pin(__tool_invoke(ctx, args))
                }
            }

            fn __tool_make() -> ::std::sync::Arc<dyn #p::Tool> {
                ::std::sync::Arc::new(#tool_type)
            }

            #p::inventory::submit! {
                #p::ToolRegistration::__new(#name, ::core::module_path!(), ::core::file!(), #line, __tool_make)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_type_names() {
        let name = |s: &str| tool_type_name(&Ident::new(s, Span::call_site())).to_string();
        assert_eq!(name("read_file"), "ReadFileTool");
        assert_eq!(name("grep"), "GrepTool");
        assert_eq!(name("__x__y"), "XYTool");
    }

    #[test]
    fn errors_keep_the_function() {
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
        // The function is still emitted, with the `///` on its parameter (not allowed there) removed.
        let func_start = out.find("async fn f").expect("function emitted");
        let func: syn::ItemFn = syn::parse_str(&out[func_start..]).expect("a function");
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
