use tool_runtime::tool;

#[tool(undocumented, freeform(grammar = "start: /a/", grammar_file = "a.lark"))]
async fn both(text: String) -> String {
    text
}

#[tool(undocumented, freeform(syntax = "ebnf", grammar = "x"))]
async fn unknown_syntax(text: String) -> String {
    text
}

#[tool(undocumented, freeform(syntax = "lark"))]
async fn syntax_alone(text: String) -> String {
    text
}

#[tool(undocumented, freeform(grammer = "x"))]
async fn typo(text: String) -> String {
    text
}

fn main() {}
