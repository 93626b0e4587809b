//! Stage 1: tokens into a `ToolDef`, recording malformed attributes as errors.

use darling::ast::NestedMeta;
use darling::util::Flag;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, ItemFn, Lit, LitStr, Meta, Pat};

use crate::attrs::{self, ARG, ARG_KEYS, ARGS, FORWARDED, INJECT, TOOL_KEYS, TRUNCATE_KEYS};
use crate::model::{ArgAttr, Param, ParamKind, ToolAttr, ToolDef, TruncateOptions, TruncateSetting};

/// Parses the attribute arguments and the function. Always returns a definition (with defaults
/// where parts were malformed) so validation can report everything at once.
pub fn tool_def(attr: TokenStream, mut func: ItemFn) -> (ToolDef, Vec<Error>) {
    let mut errors = Vec::new();
    let attr = match NestedMeta::parse_meta_list(attr) {
        Ok(items) => tool_attr(&items, &mut errors),
        Err(e) => {
            errors.push(Error::from(e));
            ToolAttr::default()
        }
    };
    let doc = crate::model::join_docs(&func.attrs);
    let mut params = Vec::new();
    let mut receiver = None;
    for input in func.sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => receiver = Some(r.self_token.span),
            FnArg::Typed(pat_type) => {
                let attrs = std::mem::take(&mut pat_type.attrs);
                let mut param = Param {
                    ident: match &*pat_type.pat {
                        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => Some(p.ident.clone()),
                        _ => None,
                    },
                    pat: pat_type.pat.clone(),
                    ty: pat_type.ty.clone(),
                    kind: ParamKind::Argument,
                    docs: Vec::new(),
                    arg: ArgAttr::default(),
                    args_marker: None,
                    inject_marker: None,
                    forwarded: Vec::new(),
                };
                for attr in attrs {
                    if !param_attr(attr.clone(), &mut param, &mut errors) {
                        pat_type.attrs.push(attr);
                    }
                }
                param.kind = if param.inject_marker.is_some() || crate::model::is_injected_type(&param.ty) {
                    ParamKind::Injected
                } else if param.args_marker.is_some() {
                    ParamKind::Args
                } else {
                    ParamKind::Argument
                };
                params.push(param);
            }
        }
    }
    (ToolDef { func, attr, doc, params, receiver }, errors)
}

/// Takes one of our parameter attributes into `param`; returns false for foreign attributes,
/// which stay on the emitted function.
fn param_attr(attr: Attribute, param: &mut Param, errors: &mut Vec<Error>) -> bool {
    let path = attr.path();
    if path.is_ident("doc") {
        param.docs.push(attr);
    } else if FORWARDED.iter().any(|f| path.is_ident(f)) {
        param.forwarded.push(attr);
    } else if path.is_ident(ARGS) {
        if !matches!(attr.meta, Meta::Path(_)) {
            errors.push(Error::custom("`#[args]` takes no settings; write `#[args]`").with_span(&attr.meta));
        } else if param.args_marker.is_some() {
            errors.push(Error::custom("`#[args]` is repeated on this parameter").with_span(&attr));
        }
        param.args_marker = Some(attr.span());
    } else if path.is_ident(INJECT) {
        if !matches!(attr.meta, Meta::Path(_)) {
            errors.push(
                Error::custom("`#[inject]` takes no settings; write `#[inject]`").with_span(&attr.meta),
            );
        }
        param.inject_marker = Some(attr.span());
    } else if path.is_ident(ARG) {
        if param.arg.span.is_some() {
            errors.push(
                Error::custom(
                    "`#[arg]` is repeated on this parameter; put all settings in one `#[arg(...)]`",
                )
                .with_span(&attr),
            );
            return true;
        }
        param.arg.span = Some(attr.span());
        if let Meta::Path(_) = attr.meta {
            errors.push(
                Error::custom(format!(
                    "`#[arg]` needs settings, e.g. `#[arg(default = 10)]`; expected one of {}",
                    attrs::list(ARG_KEYS)
                ))
                .with_span(&attr),
            );
            return true;
        }
        let mut seen: Vec<String> = Vec::new();
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            if seen.contains(&key) {
                return Err(meta.error(format!("`{key}` is set twice in `#[arg]`; keep one")));
            }
            seen.push(key.clone());
            match key.as_str() {
                "default" => {
                    let expr: Expr = meta.value()?.parse()?;
                    param.arg.default = Some((meta.path.span(), expr));
                }
                "rename" => param.arg.rename = Some(meta.value()?.parse()?),
                "description" => param.arg.description = Some(meta.value()?.parse()?),
                _ => return Err(meta.error(attrs::unknown_key_message(&key, "#[arg]", ARG_KEYS))),
            }
            Ok(())
        });
        if let Err(e) = result {
            errors.push(e.into());
        }
    } else {
        return false;
    }
    true
}

fn tool_attr(items: &[NestedMeta], errors: &mut Vec<Error>) -> ToolAttr {
    let mut attr = ToolAttr::default();
    let mut seen: Vec<(String, Span)> = Vec::new();
    for item in items {
        let meta = match item {
            NestedMeta::Meta(meta) => meta,
            NestedMeta::Lit(lit) => {
                errors.push(
                    Error::custom(format!(
                        "expected `key` or `key = value` in `#[tool]`, found a literal; e.g. `#[tool(name = \"grep\")]`; keys: {}",
                        attrs::list(TOOL_KEYS)
                    ))
                    .with_span(lit),
                );
                continue;
            }
        };
        let key =
            meta.path().get_ident().map(|i| i.to_string()).unwrap_or_else(|| {
                quote::ToTokens::to_token_stream(meta.path()).to_string().replace(' ', "")
            });
        if !TOOL_KEYS.contains(&key.as_str()) {
            errors.push(
                Error::custom(attrs::unknown_key_message(&key, "#[tool]", TOOL_KEYS)).with_span(meta.path()),
            );
            continue;
        }
        if seen.iter().any(|(k, _)| *k == key) {
            let message = if key == "truncate" {
                "`truncate` is given twice; `truncate = false` and `truncate(...)` contradict each other, so keep one".to_owned()
            } else {
                format!("`{key}` is given twice in `#[tool]`; keep one")
            };
            errors.push(Error::custom(message).with_span(meta.path()));
            continue;
        }
        seen.push((key.clone(), meta.path().span()));
        let span = meta.path().span();
        let mut take = |result: darling::Result<()>| {
            if let Err(e) = result {
                errors.push(e.with_span(meta));
            }
        };
        match key.as_str() {
            "name" => take(LitStr::from_meta(meta).map(|v| attr.name = Some(v))),
            "description" => take(LitStr::from_meta(meta).map(|v| attr.description = Some(v))),
            "timeout" => take(LitStr::from_meta(meta).map(|v| attr.timeout = Some(v))),
            "title" => take(LitStr::from_meta(meta).map(|v| attr.title = Some(v))),
            "parallel" => take(Flag::from_meta(meta).map(|_| attr.parallel = Some(span))),
            "read_only" => take(Flag::from_meta(meta).map(|_| attr.read_only = Some(span))),
            "destructive" => take(Flag::from_meta(meta).map(|_| attr.destructive = Some(span))),
            "idempotent" => take(Flag::from_meta(meta).map(|_| attr.idempotent = Some(span))),
            "open_world" => take(Flag::from_meta(meta).map(|_| attr.open_world = Some(span))),
            "crate" => take(syn::Path::from_meta(meta).map(|v| attr.krate = Some(v))),
            "tags" => take(tags(meta).map(|v| attr.tags = v)),
            "truncate" => take(truncate(meta).map(|v| attr.truncate = Some(v))),
            _ => unreachable!("every key in TOOL_KEYS is handled"),
        }
    }
    attr
}

fn tags(meta: &Meta) -> darling::Result<Vec<LitStr>> {
    let Meta::List(list) = meta else {
        return Err(Error::custom("write tags as a list of strings: `tags(\"fs\", \"read\")`"));
    };
    let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
    let mut tags = Vec::new();
    let mut errors = Error::accumulator();
    for item in items {
        match item {
            NestedMeta::Lit(Lit::Str(s)) => tags.push(s),
            other => errors
                .push(Error::custom("tags are string literals: `tags(\"fs\", \"read\")`").with_span(&other)),
        }
    }
    errors.finish_with(tags)
}

fn truncate(meta: &Meta) -> darling::Result<TruncateSetting> {
    match meta {
        Meta::Path(_) => Ok(TruncateSetting::Default),
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit { lit: Lit::Bool(b), .. }) if !b.value => Ok(TruncateSetting::Off),
            Expr::Lit(syn::ExprLit { lit: Lit::Bool(_), .. }) => Ok(TruncateSetting::Default),
            _ => Err(Error::custom(
                "write `truncate = false` to opt out, or `truncate(max_lines = N, max_bytes = N, direction = \"head\" | \"tail\" | \"middle\")`",
            )),
        },
        Meta::List(list) => {
            let mut options =
                TruncateOptions { span: list.span(), max_lines: None, max_bytes: None, direction: None };
            let mut errors = Error::accumulator();
            let mut seen = Vec::new();
            for item in NestedMeta::parse_meta_list(list.tokens.clone())? {
                let NestedMeta::Meta(inner) = &item else {
                    errors.push(
                        Error::custom(format!(
                            "expected `key = value` in `truncate(...)`; keys: {}",
                            attrs::list(TRUNCATE_KEYS)
                        ))
                        .with_span(&item),
                    );
                    continue;
                };
                let key = inner.path().get_ident().map(|i| i.to_string()).unwrap_or_default();
                if seen.contains(&key) {
                    errors.push(
                        Error::custom(format!("`{key}` is given twice in `truncate(...)`; keep one"))
                            .with_span(inner.path()),
                    );
                    continue;
                }
                seen.push(key.clone());
                let value_span = match inner {
                    Meta::NameValue(nv) => nv.value.span(),
                    other => other.span(),
                };
                match key.as_str() {
                    "max_lines" => {
                        if let Some(v) =
                            errors.handle(usize::from_meta(inner).map_err(|e| e.with_span(inner)))
                        {
                            options.max_lines = Some((v, value_span));
                        }
                    }
                    "max_bytes" => {
                        if let Some(v) =
                            errors.handle(usize::from_meta(inner).map_err(|e| e.with_span(inner)))
                        {
                            options.max_bytes = Some((v, value_span));
                        }
                    }
                    "direction" => {
                        if let Some(v) =
                            errors.handle(LitStr::from_meta(inner).map_err(|e| e.with_span(inner)))
                        {
                            options.direction = Some(v);
                        }
                    }
                    _ => errors.push(
                        Error::custom(attrs::unknown_key_message(&key, "truncate(...)", TRUNCATE_KEYS))
                            .with_span(inner.path()),
                    ),
                }
            }
            errors.finish_with(TruncateSetting::Custom(options))
        }
    }
}
