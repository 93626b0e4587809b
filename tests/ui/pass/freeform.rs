use tool_runtime::{ToolContext, tool};

/// Text in, text out.
#[tool(undocumented, freeform)]
async fn plain(ctx: &ToolContext, text: String) -> String {
    let _ = ctx;
    text
}

/// A Lark grammar given inline, the argument renamed.
#[tool(undocumented, freeform(grammar = "start: /[a-z]+/", syntax = "lark"))]
async fn lark(#[arg(rename = "input")] text: String) -> String {
    text
}

/// A regular expression.
#[tool(undocumented, freeform(grammar = "^[0-9]+$", syntax = "regex"))]
async fn digits(number: ::std::string::String) -> String {
    number
}

fn main() {
    use tool_runtime::Tool;
    let spec = LarkTool.spec();
    assert_eq!(spec.freeform.as_ref().unwrap().parameter, "input");
    assert!(PlainTool.spec().freeform.as_ref().unwrap().grammar.is_none());
    assert!(DigitsTool.spec().freeform.is_some());
}
