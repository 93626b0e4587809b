//! Generated code must not depend on what the user's module calls `Result`, `Option`, ...
#![deny(warnings, missing_docs)]

/// A module that shadows every prelude name generated code might use.
pub mod shadowed {
    #![allow(dead_code, non_camel_case_types, unused_imports)]

    use tool_runtime::{ToolContext, ToolError, tool};

    /// Not the prelude's.
    pub struct Result;
    /// Not the prelude's.
    pub struct Option;
    /// Not the prelude's.
    pub struct Some;
    /// Not the prelude's.
    pub struct None;
    /// Not the prelude's.
    pub struct Ok;
    /// Not the prelude's.
    pub struct Err;
    /// Not the prelude's.
    pub struct String;
    /// Not the prelude's.
    pub struct Vec;
    /// Not the prelude's.
    pub struct Box;
    /// Not the prelude's.
    pub struct Default;
    /// Not the prelude's.
    pub struct Clone;
    /// Not the prelude's.
    pub trait Into {}
    /// Not the prelude's.
    pub trait From {}

    /// Greet someone.
    #[tool(undocumented, parallel, timeout = "1s", truncate(max_lines = 3))]
    pub async fn greet(
        ctx: &ToolContext,
        /// Who to greet.
        name: ::std::string::String,
        /// How many times.
        #[arg(default = 1)]
        times: u32,
        /// Optional punctuation.
        punctuation: ::core::option::Option<::std::string::String>,
        /// Extra words.
        #[arg(default = "hi")]
        word: ::std::string::String,
    ) -> ::core::result::Result<::std::string::String, ToolError> {
        let _ = ctx;
        ::core::result::Result::Ok(::std::format!("{word} {name} x{times}{}", punctuation.unwrap_or_default()))
    }

    /// A tool without arguments returning a bare value.
    #[tool(undocumented)]
    pub async fn ping() -> &'static str {
        "pong"
    }

    /// A tool failing with an io error.
    #[tool(undocumented)]
    async fn fails() -> ::core::result::Result<(), ::std::io::Error> {
        ::core::result::Result::Err(::std::io::Error::other("nope"))
    }
}

fn main() {
    let tool = shadowed::GreetTool;
    let _ = tool;
    let _ = shadowed::PingTool;
}
