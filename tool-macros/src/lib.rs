//! The `#[tool]` attribute macro. Use it through `tool_runtime::tool`, which documents it.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

mod attrs;
mod ctxt;
mod expand;
mod fallback;
mod model;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// The `#[tool]` attribute, implemented in the `tool-macros` crate and re-exported by
/// `tool_runtime`, whose generated code it reaches only through `::tool_runtime::__private`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
