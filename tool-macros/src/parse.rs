//! Stage 1: tokens into a `ToolDef`, every attribute value typed here, once; what cannot be
//! read is reported to the context and left out of the model.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, ItemFn, Lit, LitStr, Meta, Pat, Token};

use crate::attrs::{
    self, ARG, ARGS, ArgKey, Direction, FORWARDED, FreeformKey, INJECT, PermissionSubject, Syntax, ToolKey,
    TruncateKey,
};
use crate::ctxt::Ctxt;
use crate::model::{
    ArgAttr, ExampleAttr, FreeformAttr, GrammarSource, Param, ParamKind, Spanned as Sp, ToolAttr, ToolDef,
    TruncateOptions, TruncateSetting,
};

/// Parses the attribute arguments and the function. Always returns a definition (leaving out
/// what was malformed) so validation can report everything at once.
pub(crate) fn tool_def(cx: &Ctxt, attr: TokenStream, mut func: ItemFn) -> ToolDef {
    let attr = match items.parse2(attr) {
        Ok(items) => tool_attr(cx, &items),
        Err(e) => {
            cx.syn_error(e);
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
                    if !param_attr(cx, &attr, &mut param) {
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
    ToolDef { func, attr, doc, params, receiver }
}

/// One comma-separated item of an attribute: `key`, `key = value`, `key(...)`, or a stray
/// literal (reported by the caller).
enum Item {
    Meta(Box<Meta>),
    Lit(Lit),
}

fn items(input: ParseStream<'_>) -> syn::Result<Vec<Item>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(if input.peek(Lit) {
            Item::Lit(input.parse()?)
        } else {
            Item::Meta(Box::new(input.parse()?))
        });
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(items)
}

fn key_of(meta: &Meta) -> String {
    match meta.path().get_ident() {
        Some(ident) => ident.to_string(),
        None => quote::ToTokens::to_token_stream(meta.path()).to_string().replace(' ', ""),
    }
}

fn tool_attr(cx: &Ctxt, items: &[Item]) -> ToolAttr {
    let mut attr = ToolAttr::default();
    let mut seen: Vec<ToolKey> = Vec::new();
    for item in items {
        let meta = match item {
            Item::Meta(meta) => meta,
            Item::Lit(lit) => {
                cx.error(
                    lit.span(),
                    format!(
                        "expected `key` or `key = value` in `#[tool]`, found a literal; e.g. `#[tool(name = \"grep\")]`; keys: {}",
                        attrs::list(ToolKey::NAMES)
                    ),
                );
                continue;
            }
        };
        let name = key_of(meta);
        let Some(key) = ToolKey::parse(&name) else {
            cx.error_spanned_by(meta.path(), attrs::unknown_key_message(&name, "#[tool]", ToolKey::NAMES));
            continue;
        };
        // `example` is the one key written once per example.
        if key != ToolKey::Example && seen.contains(&key) {
            let message = if key == ToolKey::Truncate {
                "`truncate` is given twice; `truncate = false` and `truncate(...)` contradict each other, so keep one".to_owned()
            } else {
                format!("`{name}` is given twice in `#[tool]`; keep one")
            };
            cx.error_spanned_by(meta.path(), message);
            continue;
        }
        seen.push(key);
        let flag = || flag(cx, meta, key);
        match key {
            ToolKey::Name => attr.name = string(cx, meta, key, "\"grep\""),
            ToolKey::Description => attr.description = string(cx, meta, key, "\"Search files.\""),
            ToolKey::Title => attr.title = string(cx, meta, key, "\"Search files\""),
            ToolKey::Timeout => attr.timeout = string(cx, meta, key, "\"30s\"").and_then(|t| timeout(cx, &t)),
            ToolKey::Parallel => attr.parallel = flag(),
            ToolKey::ReadOnly => attr.read_only = flag(),
            ToolKey::Destructive => attr.destructive = flag(),
            ToolKey::Idempotent => attr.idempotent = flag(),
            ToolKey::OpenWorld => attr.open_world = flag(),
            ToolKey::Crate => attr.krate = krate(cx, meta),
            ToolKey::Tags => attr.tags = tags(cx, meta),
            ToolKey::Truncate => attr.truncate = truncate(cx, meta),
            ToolKey::Freeform => attr.freeform = freeform(cx, meta),
            ToolKey::Defer => attr.defer = flag(),
            ToolKey::Example => attr.examples.extend(example(cx, meta)),
            ToolKey::Permission => attr.permission = permission(cx, meta),
            ToolKey::CommandArgument => {
                attr.command_argument = string(cx, meta, key, "\"command\"");
            }
            ToolKey::Polls => attr.polls = flag(),
            ToolKey::Undocumented => attr.undocumented = flag(),
        }
    }
    attr
}

/// The value of `key = "..."`.
fn string(cx: &Ctxt, meta: &Meta, key: ToolKey, example: &str) -> Option<LitStr> {
    if let Meta::NameValue(nv) = meta
        && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
    {
        return Some(s.clone());
    }
    let key = key.as_str();
    cx.error_spanned_by(meta, format!("`{key}` takes a string: write `{key} = {example}`"));
    None
}

/// `example = r#"{...}"#`: a string literal holding JSON, parsed here once so that a typo is
/// reported on the literal rather than when the registry is built.
fn example(cx: &Ctxt, meta: &Meta) -> Option<ExampleAttr> {
    let lit = match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => s.clone(),
            other => {
                cx.error_spanned_by(
                    other,
                    "`example` takes the example's arguments as a JSON object in a string literal: write `example = r#\"{\"pattern\": \"TODO\"}\"#`",
                );
                return None;
            }
        },
        _ => {
            cx.error_spanned_by(
                meta,
                "`example` takes the example's arguments as a JSON object in a string literal: write `example = r#\"{\"pattern\": \"TODO\"}\"#`",
            );
            return None;
        }
    };
    match serde_json::from_str(&lit.value()) {
        Ok(json) => Some(ExampleAttr { lit, json }),
        Err(error) => {
            let mut message = error.to_string();
            if let Some(at) = message.find(" at line ") {
                message.truncate(at);
            }
            cx.error(
                lit.span(),
                format!(
                    "this example is not valid JSON: {message} at line {} column {} of the string; write the arguments as a JSON object, e.g. r#\"{{\"pattern\": \"TODO\"}}\"#",
                    error.line(),
                    error.column()
                ),
            );
            None
        }
    }
}

fn flag(cx: &Ctxt, meta: &Meta, key: ToolKey) -> Option<Span> {
    match meta {
        Meta::Path(path) => Some(path.span()),
        _ => {
            let key = key.as_str();
            cx.error_spanned_by(meta, format!("`{key}` is a flag and takes no value: write `{key}`"));
            None
        }
    }
}

fn timeout(cx: &Ctxt, lit: &LitStr) -> Option<Sp<Duration>> {
    match parse_duration(&lit.value()) {
        Some(value) => Some(Sp { value, span: lit.span() }),
        None => {
            cx.error(
                lit.span(),
                format!(
                    "invalid timeout `{}`: write whole numbers with a unit `ms`, `s`, `m` or `h`, e.g. \"500ms\", \"30s\", \"1m30s\"",
                    lit.value()
                ),
            );
            None
        }
    }
}

/// `crate = path` or `crate = "path"`.
fn krate(cx: &Ctxt, meta: &Meta) -> Option<syn::Path> {
    if let Meta::NameValue(nv) = meta {
        match &nv.value {
            Expr::Path(path) if path.qself.is_none() => return Some(path.path.clone()),
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => match s.parse() {
                Ok(path) => return Some(path),
                Err(_) => {
                    cx.error(
                        s.span(),
                        format!("`{}` is not a path; write e.g. `crate = my_crate::rt`", s.value()),
                    );
                    return None;
                }
            },
            _ => {}
        }
    }
    cx.error_spanned_by(
        meta,
        "`crate` takes the path `tool_runtime` is reachable at, e.g. `crate = my_crate::rt`",
    );
    None
}

fn tags(cx: &Ctxt, meta: &Meta) -> Vec<LitStr> {
    let Meta::List(list) = meta else {
        cx.error_spanned_by(meta, "write tags as a list of strings: `tags(\"fs\", \"read\")`");
        return Vec::new();
    };
    let items = match items.parse2(list.tokens.clone()) {
        Ok(items) => items,
        Err(e) => {
            cx.syn_error(e);
            return Vec::new();
        }
    };
    let mut tags = Vec::new();
    for item in items {
        match item {
            Item::Lit(Lit::Str(s)) => tags.push(s),
            Item::Lit(other) => cx.error(other.span(), "tags are string literals: `tags(\"fs\", \"read\")`"),
            Item::Meta(other) => {
                cx.error_spanned_by(other, "tags are string literals: `tags(\"fs\", \"read\")`")
            }
        }
    }
    tags
}

/// Items of a nested list, each with its key, the key's name and the item itself.
type Keyed<K> = Vec<(K, String, Meta)>;

/// The `key = value` items of a nested list such as `truncate(...)` (`what`), each with its key
/// and name. A literal, an unknown key or a key given twice is reported on its own token and left
/// out; the flag is `false` then, so that the caller leaves the setting out rather than also
/// calling it incomplete. `None` when the list does not parse.
fn keyed_items<K: Copy + PartialEq>(
    cx: &Ctxt,
    list: &syn::MetaList,
    what: &str,
    names: &[&str],
    parse: fn(&str) -> Option<K>,
) -> Option<(Keyed<K>, bool)> {
    let items = match items.parse2(list.tokens.clone()) {
        Ok(items) => items,
        Err(e) => {
            cx.syn_error(e);
            return None;
        }
    };
    let mut keyed: Keyed<K> = Vec::new();
    let mut complete = true;
    for item in items {
        let inner = match item {
            Item::Meta(inner) => *inner,
            Item::Lit(lit) => {
                cx.error(
                    lit.span(),
                    format!("expected `key = value` in `{what}`; keys: {}", attrs::list(names)),
                );
                complete = false;
                continue;
            }
        };
        let name = key_of(&inner);
        let Some(key) = parse(&name) else {
            cx.error_spanned_by(inner.path(), attrs::unknown_key_message(&name, what, names));
            complete = false;
            continue;
        };
        if keyed.iter().any(|(seen, _, _)| *seen == key) {
            cx.error_spanned_by(inner.path(), format!("`{name}` is given twice in `{what}`; keep one"));
            complete = false;
            continue;
        }
        keyed.push((key, name, inner));
    }
    Some((keyed, complete))
}

fn truncate(cx: &Ctxt, meta: &Meta) -> Option<TruncateSetting> {
    let list = match meta {
        Meta::Path(_) => return Some(TruncateSetting::Default),
        Meta::NameValue(nv) => {
            return match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) if !b.value => Some(TruncateSetting::Off),
                Expr::Lit(ExprLit { lit: Lit::Bool(_), .. }) => Some(TruncateSetting::Default),
                _ => {
                    cx.error_spanned_by(
                        meta,
                        "write `truncate = false` to opt out, or `truncate(max_lines = N, max_bytes = N, direction = \"head\" | \"tail\" | \"middle\")`",
                    );
                    None
                }
            };
        }
        Meta::List(list) => list,
    };
    let (items, mut complete) =
        keyed_items(cx, list, "truncate(...)", TruncateKey::NAMES, TruncateKey::parse)?;
    let mut options =
        TruncateOptions { span: list.span(), max_lines: None, max_bytes: None, direction: None };
    for (key, _, inner) in &items {
        let read = match key {
            TruncateKey::MaxLines => limit(cx, inner, "max_lines = 200").map(|v| options.max_lines = Some(v)),
            TruncateKey::MaxBytes => {
                limit(cx, inner, "max_bytes = 51200").map(|v| options.max_bytes = Some(v))
            }
            TruncateKey::Direction => direction(cx, inner).map(|v| options.direction = Some(v)),
        };
        complete &= read.is_some();
    }
    complete.then_some(TruncateSetting::Custom(options))
}

/// `freeform` or `freeform(grammar = "..." | grammar_file = "...", syntax = "lark" | "regex")`.
fn freeform(cx: &Ctxt, meta: &Meta) -> Option<FreeformAttr> {
    let list = match meta {
        Meta::Path(path) => {
            return Some(FreeformAttr {
                span: path.span(),
                grammar: None,
                second_grammar: None,
                syntax: None,
            });
        }
        Meta::NameValue(_) => {
            cx.error_spanned_by(
                meta,
                "write `freeform`, or `freeform(grammar = \"...\")`, `freeform(grammar_file = \"tool.lark\")`, with `syntax = \"lark\" | \"regex\"` (default `lark`)",
            );
            return None;
        }
        Meta::List(list) => list,
    };
    let (items, mut complete) =
        keyed_items(cx, list, "freeform(...)", FreeformKey::NAMES, FreeformKey::parse)?;
    let mut attr = FreeformAttr { span: list.path.span(), grammar: None, second_grammar: None, syntax: None };
    for (key, name, inner) in &items {
        let key = *key;
        let value = if let Meta::NameValue(nv) = inner
            && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
        {
            s.clone()
        } else {
            cx.error_spanned_by(inner, format!("`{name}` takes a string: write `{name} = \"...\"`"));
            complete = false;
            continue;
        };
        match key {
            FreeformKey::Grammar | FreeformKey::GrammarFile => {
                let source = if key == FreeformKey::Grammar {
                    GrammarSource::Inline(value)
                } else {
                    GrammarSource::File(value)
                };
                if attr.grammar.is_some() {
                    attr.second_grammar = Some(inner.path().span());
                } else {
                    attr.grammar = Some(source);
                }
            }
            FreeformKey::Syntax => match Syntax::parse(&value.value()) {
                Some(syntax) => attr.syntax = Some(Sp { value: syntax, span: value.span() }),
                None => {
                    cx.error(
                        value.span(),
                        format!(
                            "unknown grammar syntax `{}`; expected one of {}",
                            value.value(),
                            attrs::list(Syntax::NAMES)
                        ),
                    );
                    complete = false;
                }
            },
        }
    }
    complete.then_some(attr)
}

/// `max_lines = 200` (or `"200"`).
fn limit(cx: &Ctxt, meta: &Meta, example: &str) -> Option<Sp<usize>> {
    if let Meta::NameValue(nv) = meta
        && let Expr::Lit(ExprLit { lit, .. }) = &nv.value
    {
        let parsed = match lit {
            Lit::Int(int) => int.base10_parse().ok(),
            Lit::Str(s) => s.value().parse().ok(),
            _ => None,
        };
        if let Some(value) = parsed {
            return Some(Sp { value, span: lit.span() });
        }
    }
    cx.error_spanned_by(meta, format!("a truncation limit is a whole number: write e.g. `{example}`"));
    None
}

/// `permission = "path"`: what the tool asks permission for.
fn permission(cx: &Ctxt, meta: &Meta) -> Option<Sp<PermissionSubject>> {
    let choices = Choices {
        parse: PermissionSubject::parse,
        names: PermissionSubject::NAMES,
        unknown: "permission subject",
        the: "the permission subject",
        example: "permission = \"path\"",
    };
    choice(cx, meta, &choices)
}

fn direction(cx: &Ctxt, meta: &Meta) -> Option<Sp<Direction>> {
    let choices = Choices {
        parse: Direction::parse,
        names: Direction::NAMES,
        unknown: "truncation direction",
        the: "the direction",
        example: "direction = \"tail\"",
    };
    choice(cx, meta, &choices)
}

/// A value that is one of a set of words, and how messages name it.
struct Choices<T> {
    parse: fn(&str) -> Option<T>,
    names: &'static [&'static str],
    /// "unknown {unknown} `x`".
    unknown: &'static str,
    /// "{the} is a string".
    the: &'static str,
    /// The key written with a valid value.
    example: &'static str,
}

/// `key = "word"`, one of `choices`.
fn choice<T>(cx: &Ctxt, meta: &Meta, choices: &Choices<T>) -> Option<Sp<T>> {
    if let Meta::NameValue(nv) = meta
        && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
    {
        return match (choices.parse)(&s.value()) {
            Some(value) => Some(Sp { value, span: s.span() }),
            None => {
                cx.error(
                    s.span(),
                    format!(
                        "unknown {} `{}`; expected one of {}",
                        choices.unknown,
                        s.value(),
                        attrs::list(choices.names)
                    ),
                );
                None
            }
        };
    }
    cx.error_spanned_by(
        meta,
        format!(
            "{} is a string: write `{}` (one of {})",
            choices.the,
            choices.example,
            attrs::list(choices.names)
        ),
    );
    None
}

/// Takes one of our parameter attributes into `param`; returns false for foreign attributes,
/// which stay on the emitted function.
fn param_attr(cx: &Ctxt, attr: &Attribute, param: &mut Param) -> bool {
    let path = attr.path();
    if path.is_ident("doc") {
        param.docs.push(attr.clone());
    } else if FORWARDED.iter().any(|f| path.is_ident(f)) {
        param.forwarded.push(attr.clone());
    } else if path.is_ident(ARGS) {
        if !matches!(attr.meta, Meta::Path(_)) {
            cx.error_spanned_by(&attr.meta, "`#[args]` takes no settings; write `#[args]`");
        } else if param.args_marker.is_some() {
            cx.error_spanned_by(attr, "`#[args]` is repeated on this parameter");
        }
        param.args_marker = Some(attr.clone());
    } else if path.is_ident(INJECT) {
        if !matches!(attr.meta, Meta::Path(_)) {
            cx.error_spanned_by(&attr.meta, "`#[inject]` takes no settings; write `#[inject]`");
        }
        param.inject_marker = Some(attr.clone());
    } else if path.is_ident(ARG) {
        arg_attr(cx, attr, param);
    } else {
        return false;
    }
    true
}

fn arg_attr(cx: &Ctxt, attr: &Attribute, param: &mut Param) {
    if param.arg.attr.is_some() {
        cx.error_spanned_by(
            attr,
            "`#[arg]` is repeated on this parameter; put all settings in one `#[arg(...)]`",
        );
        return;
    }
    param.arg.attr = Some(attr.clone());
    if let Meta::Path(_) = attr.meta {
        cx.error_spanned_by(
            attr,
            format!(
                "`#[arg]` needs settings, e.g. `#[arg(default = 10)]`; expected one of {}",
                attrs::list(ArgKey::NAMES)
            ),
        );
        return;
    }
    let mut seen: Vec<ArgKey> = Vec::new();
    let result = attr.parse_nested_meta(|meta| {
        let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        let key = match ArgKey::parse(&name) {
            // `alias` is the one repeatable key: a parameter may have several other names.
            Some(key) if key == ArgKey::Alias || !seen.contains(&key) => key,
            parsed => {
                let message = match parsed {
                    Some(_) => format!("`{name}` is set twice in `#[arg]`; keep one"),
                    None => attrs::unknown_key_message(&name, "#[arg]", ArgKey::NAMES),
                };
                cx.error_spanned_by(&meta.path, message);
                // Skip the value so that the keys after this one are still read.
                if meta.input.peek(Token![=]) {
                    meta.value()?.parse::<Expr>()?;
                }
                return Ok(());
            }
        };
        seen.push(key);
        match key {
            ArgKey::Default => {
                let expr: Expr = meta.value()?.parse()?;
                param.arg.default = Some((meta.path.span(), expr));
            }
            ArgKey::Rename => param.arg.rename = Some(meta.value()?.parse()?),
            ArgKey::Description => param.arg.description = Some(meta.value()?.parse()?),
            ArgKey::Alias => param.arg.aliases.push(meta.value()?.parse()?),
            ArgKey::Undocumented => {
                if meta.input.peek(Token![=]) {
                    return Err(meta.error("`undocumented` takes no value; write `#[arg(undocumented)]`"));
                }
                param.arg.undocumented = true;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

/// `500ms`, `30s`, `2m`, `1h`, `1m30s`: whole numbers with a unit, summed.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total_ms: u64 = 0;
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
        total_ms = total_ms.checked_add(value.checked_mul(factor)?)?;
        rest = &rest[digits + unit..];
    }
    Some(Duration::from_millis(total_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
        assert_eq!(parse_duration("30"), None);
        assert_eq!(parse_duration("30 s"), None);
        assert_eq!(parse_duration("1d"), None);
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("99999999999999999999h"), None);
    }
}
