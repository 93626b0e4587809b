//! What a definition with errors expands to, next to the errors (thiserror's `fallback.rs`): the
//! function as written and the tool type with a `Tool` impl that is never run, so that code
//! naming `ReadTool` does not fail a second time.

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::ToolDef;

pub(crate) fn expand(def: &ToolDef) -> TokenStream {
    let func = &def.func;
    if def.receiver.is_some() {
        // A method: items cannot go into its `impl` block, and there is no tool to name.
        return quote!(#func);
    }
    let vis = &func.vis;
    let tool_type = def.tool_type();
    let p = {
        let krate = def.runtime();
        quote!(#krate::__private)
    };
    quote! {
        #func

        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #tool_type;

        impl #p::Tool for #tool_type {
            fn spec(&self) -> &#p::ToolSpec {
                ::core::unreachable!("the `#[tool]` definition has errors")
            }

            fn call<'__tool>(
                &'__tool self,
                _: #p::ToolContext,
                _: #p::serde_json::Value,
            ) -> #p::BoxFuture<'__tool, ::core::result::Result<#p::ToolOutput, #p::ToolError>> {
                ::core::unreachable!("the `#[tool]` definition has errors")
            }
        }
    }
}
