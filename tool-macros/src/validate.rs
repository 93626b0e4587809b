//! Stage 2: every rule a tool definition must follow, each with its message, checked at once.

use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::model::{ParamKind, ToolDef, TruncateSetting, is_option};

/// Checks every rule, reporting each violation to `cx`.
pub(crate) fn check(cx: &Ctxt, def: &ToolDef) {
    signature(cx, def);
    tool_attr(cx, def);
    params(cx, def);
}

fn signature(cx: &Ctxt, def: &ToolDef) {
    let sig = &def.func.sig;
    if sig.asyncness.is_none() {
        cx.error(sig.fn_token.span, "`#[tool]` functions must be `async`: write `async fn`");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error(
            unsafety.span,
            "`#[tool]` functions cannot be `unsafe`: the runtime calls them from safe code",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error(abi.span(), "`#[tool]` functions cannot have an `extern` ABI");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error(variadic.span(), "`#[tool]` functions cannot be variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error(
            sig.generics.span(),
            "`#[tool]` functions cannot be generic: the argument schema must be fixed when the tool is registered; use concrete types",
        );
    }
    if let Some(span) = def.receiver {
        cx.error(
            span,
            "`#[tool]` cannot be used on a method: write a free `async fn`, and reach shared state through an injected `Dep<T>` parameter",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output
        && contains_impl_trait(ty)
    {
        cx.error(
            ty.span(),
            "`impl Trait` cannot be a tool's return type: name the type, e.g. `Result<String, ToolError>`",
        );
    }
    let (name, span) = def.name();
    if !is_valid_tool_name(&name) {
        let hint =
            if def.attr.name.is_none() { "; set a valid one with `#[tool(name = \"...\")]`" } else { "" };
        cx.error(
            span,
            format!(
                "invalid tool name `{name}`: a tool name is 1 to 64 characters of ASCII letters, digits, `_` and `-` (the names every LLM provider and MCP accept){hint}"
            ),
        );
    }
}

fn tool_attr(cx: &Ctxt, def: &ToolDef) {
    let attr = &def.attr;
    if let Some(timeout) = &attr.timeout
        && timeout.value.is_zero()
    {
        cx.error(timeout.span, "the timeout must be longer than zero");
    }
    if let (Some(read_only), Some(_)) = (attr.read_only, attr.destructive) {
        cx.error(
            read_only,
            "`read_only` and `destructive` contradict each other: a read-only tool changes nothing, so it cannot be destructive; keep one",
        );
    }
    if let Some(TruncateSetting::Custom(options)) = &attr.truncate {
        if options.max_lines.is_none() && options.max_bytes.is_none() && options.direction.is_none() {
            cx.error(
                options.span,
                "`truncate()` is empty: set `max_lines`, `max_bytes` or `direction`, or remove it",
            );
        }
        for limit in [options.max_lines, options.max_bytes].into_iter().flatten() {
            if limit.value == 0 {
                cx.error(
                    limit.span,
                    "a truncation limit must be at least 1; to switch truncation off, write `truncate = false`",
                );
            }
        }
    }
    if attr.description.is_none()
        && def.doc.as_deref().is_none_or(|doc| doc.trim().is_empty())
        && attr.undocumented.is_none()
    {
        cx.error(
            def.func.sig.ident.span(),
            format!(
                "the tool `{}` has no description, and the model chooses tools by their descriptions: write a `///` doc comment on the function (or `#[tool(description = \"...\")]`); `#[tool(undocumented)]` leaves the tool and its parameters without one on purpose",
                def.func.sig.ident
            ),
        );
    }
    for (lit, what) in [(&attr.description, "description"), (&attr.title, "title")] {
        if let Some(lit) = lit
            && lit.value().trim().is_empty()
        {
            cx.error(lit.span(), format!("the {what} is empty; remove `{what}` or write one"));
        }
    }
    for tag in &attr.tags {
        if tag.value().trim().is_empty() {
            cx.error(tag.span(), "tags cannot be empty");
        }
    }
    if let Some(freeform) = &attr.freeform {
        freeform_tool(cx, def, freeform);
    }
    if let Some(argument) = &attr.command_argument {
        command_argument(cx, def, argument);
    }
    for example in &attr.examples {
        if !example.json.is_object() {
            cx.error(
                example.lit.span(),
                "an example is the whole argument object the model would send, so it must be a JSON object: write e.g. r#\"{\"pattern\": \"TODO\"}\"# (`{}` for a tool without arguments)",
            );
        }
    }
}

/// `command_argument` names one of the tool's arguments, of a tool that asks about commands.
fn command_argument(cx: &Ctxt, def: &ToolDef, argument: &syn::LitStr) {
    let is_command = def.attr.permission.is_some_and(|p| p.value == crate::attrs::PermissionSubject::Command);
    if !is_command {
        cx.error(
            argument.span(),
            "`command_argument` names the argument that holds a command line, so the tool asks about commands: add `permission = \"command\"`",
        );
    }
    // The properties of a whole argument object (`#[args]`) are not known here.
    if def.params.iter().any(|p| p.kind == ParamKind::Args) {
        return;
    }
    let names: Vec<String> = def
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Argument)
        .filter_map(|p| p.property_name())
        .collect();
    let wanted = argument.value();
    if !names.contains(&wanted) {
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        let choices = if known.is_empty() {
            "the tool has no arguments".to_owned()
        } else {
            format!("expected one of {}", crate::attrs::list(&known))
        };
        cx.error(
            argument.span(),
            format!("`command_argument` names no argument of the tool: `{wanted}`; {choices}"),
        );
    }
}

/// A freeform tool takes its text as one `String` argument, and has at most one grammar.
fn freeform_tool(cx: &Ctxt, def: &ToolDef, freeform: &crate::model::FreeformAttr) {
    if let Some(span) = freeform.second_grammar {
        cx.error(span, "`grammar` and `grammar_file` are both given in `freeform(...)`; keep one");
    }
    if let (Some(syntax), None) = (&freeform.syntax, &freeform.grammar) {
        cx.error(syntax.span, "`syntax` needs a grammar: add `grammar = \"...\"` or `grammar_file = \"...\"`, or remove `syntax`");
    }
    if let Some(crate::model::GrammarSource::Inline(lit) | crate::model::GrammarSource::File(lit)) =
        &freeform.grammar
        && lit.value().trim().is_empty()
    {
        cx.error(lit.span(), "the grammar is empty; write one or remove it");
    }
    let arguments: Vec<_> = def.params.iter().filter(|p| p.kind != ParamKind::Injected).collect();
    let is_string = |ty: &syn::Type| {
        matches!(ty, syn::Type::Path(path) if path.qself.is_none()
            && path.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
    };
    match arguments.as_slice() {
        [one] if one.kind == ParamKind::Argument && is_string(&one.ty) => {}
        [one] => cx.error(
            one.ty.span(),
            "a `freeform` tool receives its text as one `String` argument; make this parameter a `String`",
        ),
        _ => cx.error(
            freeform.span,
            format!(
                "a `freeform` tool has exactly one argument, a `String` that receives the text; this one has {}",
                arguments.len()
            ),
        ),
    }
}

const ONE_ARGS: &str = "only one parameter can be `#[args]`: it is the whole argument object";

fn params(cx: &Ctxt, def: &ToolDef) {
    let args_params: Vec<_> = def.params.iter().filter(|p| p.kind == ParamKind::Args).collect();
    let argument_params: Vec<_> = def.params.iter().filter(|p| p.kind == ParamKind::Argument).collect();
    for extra in args_params.iter().skip(1) {
        match &extra.args_marker {
            Some(marker) => cx.error_spanned_by(marker, ONE_ARGS),
            None => cx.error(extra.ty.span(), ONE_ARGS),
        }
    }
    if let Some(args) = args_params.first() {
        for other in &argument_params {
            cx.error(
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
            cx.error(
                param.pat.span(),
                "tool parameters must be plain names (the name becomes the argument's name): bind the whole value, e.g. `point: Point`, and destructure it inside the function",
            );
        }
        if let Type::ImplTrait(_) = &*param.ty {
            cx.error(
                param.ty.span(),
                "`impl Trait` parameters make the function generic; use a concrete type",
            );
        }
        if let Some(owned) = borrowed_argument(&param.ty) {
            cx.error(
                param.ty.span(),
                format!(
                    "a tool's arguments are owned values, deserialized from the model's JSON: write `{owned}` instead of a reference (only what the runtime provides, such as `&ToolContext`, is taken by reference)"
                ),
            );
            continue;
        }
        match param.kind {
            ParamKind::Injected => {
                if let Some(attr) = &param.arg.attr {
                    cx.error_spanned_by(
                        attr,
                        "`#[arg]` has no effect on an injected parameter: the runtime provides it, the model never sees it; remove `#[arg]`",
                    );
                }
                if let Some(marker) = &param.args_marker {
                    cx.error_spanned_by(
                        marker,
                        "`#[args]` cannot mark an injected parameter: the `#[args]` parameter is the model's argument object",
                    );
                }
                for attr in &param.forwarded {
                    cx.error_spanned_by(
                        attr,
                        "schema attributes have no effect on an injected parameter; remove them",
                    );
                }
            }
            ParamKind::Args => {
                if let Some(attr) = &param.arg.attr {
                    cx.error_spanned_by(
                        attr,
                        "`#[arg]` cannot be combined with `#[args]`: put field settings on the fields of the `#[args]` struct",
                    );
                }
                if let Some(doc) = param.docs.first() {
                    cx.error(
                        doc.span(),
                        "`///` on an `#[args]` parameter is not used: document the struct and its fields instead",
                    );
                }
                for attr in &param.forwarded {
                    cx.error_spanned_by(
                        attr,
                        "put schema attributes on the fields of the `#[args]` struct instead",
                    );
                }
            }
            ParamKind::Argument => {
                let described = !param.docs.is_empty() || param.arg.description.is_some();
                if !described && !param.arg.undocumented && def.attr.undocumented.is_none() {
                    let name = param.property_name().unwrap_or_else(|| "this parameter".to_owned());
                    cx.error(
                        param.name_span(),
                        format!(
                            "the parameter `{name}` has no description, and the model would see only its name and type: write a `///` line above it (or `#[arg(description = \"...\")]`); `#[arg(undocumented)]` leaves it without one on purpose"
                        ),
                    );
                }
                if let Some((span, _)) = &param.arg.default
                    && is_option(&param.ty)
                {
                    cx.error(
                        *span,
                        "`default` on an `Option` parameter: an `Option` is already optional (absent means `None`); remove `default`, or use the inner type with a default",
                    );
                }
                if let Some(rename) = &param.arg.rename
                    && rename.value().is_empty()
                {
                    cx.error(rename.span(), "the property name cannot be empty");
                }
                if let Some(description) = &param.arg.description
                    && description.value().trim().is_empty()
                {
                    cx.error(description.span(), "the description is empty; remove it or write one");
                }
                if let Some(name) = param.property_name() {
                    if names.contains(&name) {
                        cx.error(
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
    aliases(cx, &argument_params);
}

/// Each alias is a name no parameter has, declared once.
fn aliases(cx: &Ctxt, argument_params: &[&crate::model::Param]) {
    let names: Vec<String> = argument_params.iter().filter_map(|p| p.property_name()).collect();
    let mut declared: Vec<(String, String)> = Vec::new();
    for param in argument_params {
        let own = param.property_name().unwrap_or_default();
        for alias in &param.arg.aliases {
            let value = alias.value();
            if value.is_empty() {
                cx.error(alias.span(), "the alias is empty; write the other name the model may send");
            } else if names.contains(&value) {
                let whose = if value == own {
                    "this parameter's own name".to_owned()
                } else {
                    format!("the name of the parameter `{value}`")
                };
                cx.error(
                    alias.span(),
                    format!("the alias `{value}` is {whose}; an alias must be a name no parameter has"),
                );
            } else if let Some((_, first)) = declared.iter().find(|(a, _)| *a == value) {
                cx.error(
                    alias.span(),
                    format!(
                        "the alias `{value}` is declared twice (first for `{first}`); an alias stands for one parameter, so keep one"
                    ),
                );
            } else {
                declared.push((value, own.clone()));
            }
        }
    }
}

/// The owned type to write instead of a reference that is an argument's, not the runtime's:
/// `&str` (or `&'a str`, `&mut str`) is `String`, `&[T]` is `Vec<T>`, `&Path` is `PathBuf`.
fn borrowed_argument(ty: &Type) -> Option<String> {
    let Type::Reference(reference) = ty else { return None };
    match &*reference.elem {
        Type::Slice(slice) => Some(format!("Vec<{}>", quote::ToTokens::to_token_stream(&slice.elem))),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?.ident.to_string();
            match last.as_str() {
                "str" => Some("String".to_owned()),
                "String" => Some("String".to_owned()),
                "Path" => Some("PathBuf".to_owned()),
                "PathBuf" => Some("PathBuf".to_owned()),
                "Value" => Some("serde_json::Value".to_owned()),
                _ => None,
            }
        }
        _ => None,
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
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    /// The errors of `#[tool(attr)]` on `item`, the description rule aside (these tests are
    /// about the others): `undocumented` is added to `attr`.
    fn errors_for(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        let attr = if attr.is_empty() { quote!(undocumented) } else { quote!(undocumented, #attr) };
        documented_errors_for(attr, item)
    }

    /// The errors of `#[tool(attr)]` on `item`.
    fn documented_errors_for(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        let func: syn::ItemFn = syn::parse2(item).expect("test input is a function");
        let cx = Ctxt::new();
        let def = crate::parse::tool_def(&cx, attr, func);
        check(&cx, &def);
        cx.into_errors().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_tool_and_its_arguments_need_descriptions_unless_undocumented() {
        let errors =
            documented_errors_for(quote!(), quote! { async fn f(a: u8, #[arg(undocumented)] b: u8) {} });
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("the tool `f` has no description"), "{errors:?}");
        assert!(errors[1].starts_with("the parameter `a` has no description"), "{errors:?}");
        let described = documented_errors_for(
            quote!(description = "Adds."),
            quote! { async fn f(#[doc = " The first."] a: u8, #[arg(description = "The second.")] b: u8) {} },
        );
        assert!(described.is_empty(), "{described:?}");
        let borrowed =
            documented_errors_for(quote!(undocumented), quote! { async fn f(a: &str, b: &[u8]) {} });
        assert_eq!(borrowed.len(), 2, "{borrowed:?}");
        assert!(borrowed[0].contains("write `String` instead of a reference"), "{borrowed:?}");
        assert!(borrowed[1].contains("write `Vec<u8>` instead of a reference"), "{borrowed:?}");
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
    fn the_permission_subject_and_command_argument_are_checked() {
        let item = quote! { async fn run(command: String, #[arg(rename = "dir")] cwd: Option<String>) -> String { todo!() } };
        let ok = errors_for(quote!(permission = "command", command_argument = "command"), item.clone());
        assert!(ok.is_empty(), "{ok:?}");
        assert!(errors_for(quote!(permission = "path"), item.clone()).is_empty());
        assert_eq!(
            errors_for(quote!(permission = "file"), item.clone()),
            ["unknown permission subject `file`; expected one of `path`, `command`, `input`"]
        );
        assert_eq!(
            errors_for(quote!(permission = "command", command_argument = "cwd"), item.clone()),
            ["`command_argument` names no argument of the tool: `cwd`; expected one of `command`, `dir`"]
        );
        assert_eq!(
            errors_for(quote!(permission = "path", command_argument = "command"), item.clone()),
            [
                "`command_argument` names the argument that holds a command line, so the tool asks about commands: add `permission = \"command\"`"
            ]
        );
        assert_eq!(
            errors_for(quote!(command_argument = "line"), quote! { async fn run() -> String { todo!() } }),
            [
                "`command_argument` names the argument that holds a command line, so the tool asks about commands: add `permission = \"command\"`",
                "`command_argument` names no argument of the tool: `line`; the tool has no arguments"
            ]
        );
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
        let cx = Ctxt::new();
        let def = crate::parse::tool_def(&cx, quote!(), func);
        assert!(cx.into_errors().is_empty());
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
    fn aliases_are_names_no_parameter_has_declared_once() {
        let errors = errors_for(
            quote!(),
            quote! { async fn f(
                #[arg(alias = "file_path", alias = "filePath", alias = "file_path")] path: String,
                #[arg(alias = "path", alias = "filePath", alias = "")] old_string: String,
                #[arg(alias = "new_string")] new_string: String,
            ) {} },
        );
        assert_eq!(
            errors,
            [
                "the alias `file_path` is declared twice (first for `path`); an alias stands for one parameter, so keep one",
                "the alias `path` is the name of the parameter `path`; an alias must be a name no parameter has",
                "the alias `filePath` is declared twice (first for `path`); an alias stands for one parameter, so keep one",
                "the alias is empty; write the other name the model may send",
                "the alias `new_string` is this parameter's own name; an alias must be a name no parameter has",
            ]
        );
        assert!(
            errors_for(quote!(), quote! { async fn f(#[arg(alias = "p", alias = "q")] path: String) {} })
                .is_empty()
        );
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
}
