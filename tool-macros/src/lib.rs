//! The `#[tool]` attribute macro. Use it through `tool_runtime::tool`, which documents it.

mod attrs;
mod expand;
mod model;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool: schema, validation, registration. See `tool_runtime::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}
