//! Stage 2: every rule a tool definition must follow, each with its message, checked at once.

use darling::Error;
use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::attrs::{self, DIRECTIONS};
use crate::model::{ParamKind, ToolDef, TruncateSetting, is_option};

/// Checks every rule and returns all violations.
pub fn check(def: &ToolDef) -> Vec<Error> {
    let mut errors = Vec::new();
    signature(def, &mut errors);
    tool_attr(def, &mut errors);
    params(def, &mut errors);
    errors
}

fn err(errors: &mut Vec<Error>, span: proc_macro2::Span, message: impl std::fmt::Display) {
    errors.push(Error::custom(message).with_span(&span));
}

fn signature(def: &ToolDef, errors: &mut Vec<Error>) {
    let sig = &def.func.sig;
    if sig.asyncness.is_none() {
        err(errors, sig.fn_token.span, "`#[tool]` functions must be `async`: write `async fn`");
    }
    if let Some(unsafety) = &sig.unsafety {
        err(
            errors,
            unsafety.span,
            "`#[tool]` functions cannot be `unsafe`: the runtime calls them from safe code",
        );
    }
    if let Some(abi) = &sig.abi {
        err(errors, abi.span(), "`#[tool]` functions cannot have an `extern` ABI");
    }
    if let Some(variadic) = &sig.variadic {
        err(errors, variadic.span(), "`#[tool]` functions cannot be variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        err(
            errors,
            sig.generics.span(),
            "`#[tool]` functions cannot be generic: the argument schema must be fixed when the tool is registered; use concrete types",
        );
    }
    if let Some(span) = def.receiver {
        err(
            errors,
            span,
            "`#[tool]` cannot be used on a method: write a free `async fn`, and reach shared state through an injected `Dep<T>` parameter",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output
        && contains_impl_trait(ty)
    {
        err(
            errors,
            ty.span(),
            "`impl Trait` cannot be a tool's return type: name the type, e.g. `Result<String, ToolError>`",
        );
    }
    let (name, span) = def.name();
    if !is_valid_tool_name(&name) {
        let hint =
            if def.attr.name.is_none() { "; set a valid one with `#[tool(name = \"...\")]`" } else { "" };
        err(
            errors,
            span,
            format!(
                "invalid tool name `{name}`: a tool name is 1 to 64 characters of ASCII letters, digits, `_` and `-` (the names every LLM provider and MCP accept){hint}"
            ),
        );
    }
}

fn tool_attr(def: &ToolDef, errors: &mut Vec<Error>) {
    let attr = &def.attr;
    if let Some(timeout) = &attr.timeout {
        match parse_duration_ms(&timeout.value()) {
            Some(0) => err(errors, timeout.span(), "the timeout must be longer than zero"),
            Some(_) => {}
            None => err(
                errors,
                timeout.span(),
                format!(
                    "invalid timeout `{}`: write whole numbers with a unit `ms`, `s`, `m` or `h`, e.g. \"500ms\", \"30s\", \"1m30s\"",
                    timeout.value()
                ),
            ),
        }
    }
    if let (Some(read_only), Some(_)) = (attr.read_only, attr.destructive) {
        err(
            errors,
            read_only,
            "`read_only` and `destructive` contradict each other: a read-only tool changes nothing, so it cannot be destructive; keep one",
        );
    }
    if let Some(TruncateSetting::Custom(options)) = &attr.truncate {
        if options.max_lines.is_none() && options.max_bytes.is_none() && options.direction.is_none() {
            err(
                errors,
                options.span,
                "`truncate()` is empty: set `max_lines`, `max_bytes` or `direction`, or remove it",
            );
        }
        for (value, span) in [options.max_lines, options.max_bytes].into_iter().flatten() {
            if value == 0 {
                err(
                    errors,
                    span,
                    "a truncation limit must be at least 1; to switch truncation off, write `truncate = false`",
                );
            }
        }
        if let Some(direction) = &options.direction
            && !DIRECTIONS.contains(&direction.value().as_str())
        {
            err(
                errors,
                direction.span(),
                format!(
                    "unknown truncation direction `{}`; expected one of {}",
                    direction.value(),
                    attrs::list(DIRECTIONS)
                ),
            );
        }
    }
    for (lit, what) in [(&attr.description, "description"), (&attr.title, "title")] {
        if let Some(lit) = lit
            && lit.value().trim().is_empty()
        {
            err(errors, lit.span(), format!("the {what} is empty; remove `{what}` or write one"));
        }
    }
    for tag in &attr.tags {
        if tag.value().trim().is_empty() {
            err(errors, tag.span(), "tags cannot be empty");
        }
    }
}

fn params(def: &ToolDef, errors: &mut Vec<Error>) {
    let args_params: Vec<_> = def.params.iter().filter(|p| p.kind == ParamKind::Args).collect();
    let argument_params: Vec<_> = def.params.iter().filter(|p| p.kind == ParamKind::Argument).collect();
    for extra in args_params.iter().skip(1) {
        err(
            errors,
            extra.args_marker.unwrap_or_else(|| extra.ty.span()),
            "only one parameter can be `#[args]`: it is the whole argument object",
        );
    }
    if let Some(args) = args_params.first() {
        for other in &argument_params {
            err(
                errors,
                other.pat.span(),
                format!(
                    "this parameter would be a model-facing argument next to `#[args] {}`; the `#[args]` struct is the whole argument object, so move this field into it (or inject it)",
                    args.ident.as_ref().map(ToString::to_string).unwrap_or_default()
                ),
            );
        }
    }
    let mut names: Vec<String> = Vec::new();
    for param in &def.params {
        if param.ident.is_none() {
            err(
                errors,
                param.pat.span(),
                "tool parameters must be plain names (the name becomes the argument's name): bind the whole value, e.g. `point: Point`, and destructure it inside the function",
            );
        }
        if let Type::ImplTrait(_) = &*param.ty {
            err(
                errors,
                param.ty.span(),
                "`impl Trait` parameters make the function generic; use a concrete type",
            );
        }
        match param.kind {
            ParamKind::Injected => {
                if let Some(span) = param.arg.span {
                    err(
                        errors,
                        span,
                        "`#[arg]` has no effect on an injected parameter: the runtime provides it, the model never sees it; remove `#[arg]`",
                    );
                }
                if let Some(span) = param.args_marker {
                    err(
                        errors,
                        span,
                        "`#[args]` cannot mark an injected parameter: the `#[args]` parameter is the model's argument object",
                    );
                }
                for attr in &param.forwarded {
                    err(
                        errors,
                        attr.span(),
                        "schema attributes have no effect on an injected parameter; remove them",
                    );
                }
            }
            ParamKind::Args => {
                if let Some(span) = param.arg.span {
                    err(
                        errors,
                        span,
                        "`#[arg]` cannot be combined with `#[args]`: put field settings on the fields of the `#[args]` struct",
                    );
                }
                if let Some(doc) = param.docs.first() {
                    err(
                        errors,
                        doc.span(),
                        "`///` on an `#[args]` parameter is not used: document the struct and its fields instead",
                    );
                }
                for attr in &param.forwarded {
                    err(
                        errors,
                        attr.span(),
                        "put schema attributes on the fields of the `#[args]` struct instead",
                    );
                }
            }
            ParamKind::Argument => {
                if let Some((span, _)) = &param.arg.default
                    && is_option(&param.ty)
                {
                    err(
                        errors,
                        *span,
                        "`default` on an `Option` parameter: an `Option` is already optional (absent means `None`); remove `default`, or use the inner type with a default",
                    );
                }
                if let Some(rename) = &param.arg.rename
                    && rename.value().is_empty()
                {
                    err(errors, rename.span(), "the property name cannot be empty");
                }
                if let Some(description) = &param.arg.description
                    && description.value().trim().is_empty()
                {
                    err(errors, description.span(), "the description is empty; remove it or write one");
                }
                if let Some(name) = param.property_name() {
                    if names.contains(&name) {
                        err(
                            errors,
                            param.name_span(),
                            format!(
                                "two parameters are both called `{name}` in the schema; rename one with `#[arg(rename = \"...\")]`"
                            ),
                        );
                    }
                    names.push(name);
                }
            }
        }
    }
}

fn contains_impl_trait(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.0
}

/// 1 to 64 characters of `[A-Za-z0-9_-]`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `500ms`, `30s`, `2m`, `1h`, `1m30s` into milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let mut rest = text;
    let mut total: u64 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let unit = rest[digits..].bytes().take_while(u8::is_ascii_alphabetic).count();
        if digits == 0 || unit == 0 {
            return None;
        }
        let value: u64 = rest[..digits].parse().ok()?;
        let factor = match &rest[digits..digits + unit] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return None,
        };
        total = total.checked_add(value.checked_mul(factor)?)?;
        rest = &rest[digits + unit..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors_for(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        let func: syn::ItemFn = syn::parse2(item).expect("test input is a function");
        let (def, mut errors) = crate::parse::tool_def(attr, func);
        errors.extend(check(&def));
        errors.iter().flat_map(|e| e.clone().into_iter().map(|e| e.to_string()).collect::<Vec<_>>()).collect()
    }

    #[test]
    fn valid_definition_has_no_errors() {
        let errors = errors_for(
            quote!(
                parallel,
                read_only,
                timeout = "30s",
                truncate(max_lines = 10, direction = "tail"),
                tags("fs")
            ),
            quote! {
                /// Search.
                async fn grep(ctx: &ToolContext, ws: Dep<Workspace>, /// Pattern.
                    pattern: String, #[arg(default = 100)] limit: u32, path: Option<String>) -> Result<String, ToolError> { todo!() }
            },
        );
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let errors = errors_for(
            quote!(paralel, timeout = "soon", name = "bad name"),
            quote! { fn f<T>(self, (a, b): (u8, u8), #[arg(default = None)] c: Option<u8>) {} },
        );
        let expected = [
            "unknown key `paralel` in `#[tool]`; did you mean `parallel`?",
            "`#[tool]` functions must be `async`",
            "`#[tool]` functions cannot be generic",
            "`#[tool]` cannot be used on a method",
            "invalid tool name `bad name`",
            "invalid timeout `soon`",
            "tool parameters must be plain names",
            "`default` on an `Option` parameter",
        ];
        for prefix in expected {
            assert!(errors.iter().any(|e| e.starts_with(prefix)), "missing {prefix:?} in {errors:?}");
        }
        assert_eq!(errors.len(), expected.len(), "{errors:?}");
    }

    #[test]
    fn injected_parameters_are_recognised_by_type_or_marker() {
        let func: syn::ItemFn = syn::parse2(quote! {
            async fn f(a: &ToolContext, b: tool_runtime::Dep<X>, c: CancellationToken, #[inject] d: Clock, e: u8) {}
        })
        .expect("function");
        let (def, errors) = crate::parse::tool_def(quote!(), func);
        assert!(errors.is_empty());
        let kinds: Vec<_> = def.params.iter().map(|p| p.kind).collect();
        use ParamKind::*;
        assert_eq!(kinds, [Injected, Injected, Injected, Injected, Argument]);
    }

    #[test]
    fn arg_on_injected_and_args_with_arguments() {
        let errors = errors_for(
            quote!(),
            quote! { async fn f(#[arg(rename = "c")] ctx: &ToolContext, #[args] a: A, b: u8) {} },
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("this parameter would be a model-facing argument next to `#[args] a`"));
        assert!(errors[1].starts_with("`#[arg]` has no effect on an injected parameter"));
    }

    #[test]
    fn contradictions_and_duplicates() {
        let errors = errors_for(
            quote!(read_only, destructive, truncate = false, truncate(max_lines = 5), name = "a", name = "b"),
            quote! { async fn f() {} },
        );
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("`truncate` is given twice"));
        assert!(errors[1].starts_with("`name` is given twice"));
        assert!(errors[2].starts_with("`read_only` and `destructive` contradict each other"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("1m30s"), Some(90_000));
        assert_eq!(parse_duration_ms("30"), None);
        assert_eq!(parse_duration_ms("30 s"), None);
        assert_eq!(parse_duration_ms("1d"), None);
    }
}
