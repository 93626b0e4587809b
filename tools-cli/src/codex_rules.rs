//! codex's rules files (`rules/*.rules` beside its `config.toml`): the `prefix_rule(...)` calls
//! of their Starlark, read as permission rules on commands. `pattern = ["git", ["push", "fetch"]]`
//! with `decision = "forbidden"` is `deny Bash(git push:*)` and `deny Bash(git fetch:*)`;
//! `"prompt"` is an ask rule, `"allow"` (the default) an allow rule (commands stay in the
//! sandbox, where codex would let an allowed one leave it). Anything else in a file is an error,
//! so that no rule written there is taken for applied when it is not.

use std::path::Path;

/// At most this many rules come of one `prefix_rule` (its alternatives multiplied).
const MAX_EXPANDED: usize = 256;

/// At most this many rules come of all the rules files together.
pub(crate) const MAX_RULES: usize = 10_000;

/// The rules of one file, as (`allow` | `ask` | `deny`, `Bash(...)` rule); `Err` names the line
/// at fault and what is wrong.
pub(crate) fn read(path: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let text = tool_runtime::settings::read_text(path).map_err(|e| e.to_string())?;
    parse(&text)
}

fn parse(text: &str) -> Result<Vec<(&'static str, String)>, String> {
    let tokens = tokens(text)?;
    let mut rules = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let (line, token) = &tokens[at];
        match token {
            Token::Name(name) if name == "prefix_rule" => {}
            other => {
                return Err(format!(
                    "line {line}: {} where a `prefix_rule(...)` call should be (only those are read)",
                    other.describe()
                ));
            }
        }
        at += 1;
        expect(&tokens, &mut at, &Token::Open, "`(` after `prefix_rule`")?;
        let (mut pattern, mut decision) = (None, None);
        loop {
            if tokens.get(at).map(|t| &t.1) == Some(&Token::Close) {
                at += 1;
                break;
            }
            let Some((key_line, Token::Name(key))) = tokens.get(at).cloned() else {
                return Err(format!(
                    "line {}: a keyword argument (`pattern = [...]`) or `)` expected",
                    line_of(&tokens, at)
                ));
            };
            at += 1;
            expect(&tokens, &mut at, &Token::Equals, "`=` after the argument's name")?;
            let value = value(&tokens, &mut at)?;
            match key.as_str() {
                "pattern" => pattern = Some((key_line, value)),
                "decision" => decision = Some((key_line, value)),
                // Documentation and examples codex checks at load time.
                "justification" | "match" | "not_match" => {}
                other => return Err(format!("line {key_line}: `prefix_rule` has no argument `{other}`")),
            }
            match tokens.get(at).map(|t| &t.1) {
                Some(Token::Comma) => at += 1,
                Some(Token::Close) => {}
                _ => return Err(format!("line {}: `,` or `)` expected", line_of(&tokens, at))),
            }
        }
        let action = match decision {
            None => "allow",
            Some((_, Value::Text(text))) if text == "allow" => "allow",
            Some((_, Value::Text(text))) if text == "prompt" => "ask",
            Some((_, Value::Text(text))) if text == "forbidden" => "deny",
            Some((line, _)) => {
                return Err(format!(
                    "line {line}: `decision` must be \"allow\", \"prompt\" or \"forbidden\""
                ));
            }
        };
        let Some((line, pattern)) = pattern else {
            return Err(format!("line {line}: `prefix_rule` without a `pattern`"));
        };
        for prefix in prefixes(&pattern).map_err(|e| format!("line {line}: {e}"))? {
            rules.push((action, format!("Bash({prefix}:*)")));
        }
    }
    Ok(rules)
}

/// Every command prefix `pattern` stands for: its words, each a string or a list of
/// alternatives, multiplied out.
fn prefixes(pattern: &Value) -> Result<Vec<String>, String> {
    let Value::List(words) = pattern else { return Err("`pattern` must be a list".into()) };
    if words.is_empty() {
        return Err("`pattern` must not be empty".into());
    }
    let mut prefixes = vec![String::new()];
    for word in words {
        let choices: Vec<&str> = match word {
            Value::Text(text) => vec![text.as_str()],
            Value::List(choices) if !choices.is_empty() => choices
                .iter()
                .map(|choice| match choice {
                    Value::Text(text) => Ok(text.as_str()),
                    Value::List(_) => Err("a list of alternatives holds strings only".to_owned()),
                })
                .collect::<Result<_, _>>()?,
            Value::List(_) => return Err("a list of alternatives must not be empty".into()),
        };
        for choice in &choices {
            let plain = !choice.is_empty()
                && !choice.chars().any(|c| c.is_whitespace() || c.is_control() || "*()\"'\\".contains(c));
            if !plain {
                return Err(format!(
                    "the word {choice:?} cannot be written as a permission rule (empty, or with a space, quote, \
                     `*` or parenthesis): write that rule in a settings file instead"
                ));
            }
        }
        if prefixes.len() * choices.len() > MAX_EXPANDED {
            return Err(format!("its alternatives make more than {MAX_EXPANDED} commands"));
        }
        prefixes = prefixes
            .iter()
            .flat_map(|prefix| {
                choices.iter().map(move |choice| match prefix.is_empty() {
                    true => (*choice).to_owned(),
                    false => format!("{prefix} {choice}"),
                })
            })
            .collect();
    }
    Ok(prefixes)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Text(String),
    Open,
    Close,
    OpenList,
    CloseList,
    Comma,
    Equals,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Name(name) => format!("`{name}`"),
            Token::Text(text) => format!("the string {text:?}"),
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
            Token::OpenList => "`[`".into(),
            Token::CloseList => "`]`".into(),
            Token::Comma => "`,`".into(),
            Token::Equals => "`=`".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text(String),
    List(Vec<Value>),
}

/// The line of the token at `at` (or of the last one, past the end).
fn line_of(tokens: &[(usize, Token)], at: usize) -> usize {
    tokens.get(at).or(tokens.last()).map_or(1, |(line, _)| *line)
}

fn expect(tokens: &[(usize, Token)], at: &mut usize, token: &Token, what: &str) -> Result<(), String> {
    if tokens.get(*at).map(|t| &t.1) != Some(token) {
        return Err(format!("line {}: {what} expected", line_of(tokens, *at)));
    }
    *at += 1;
    Ok(())
}

/// A string or a list (of strings and lists), nested at most a few levels.
fn value(tokens: &[(usize, Token)], at: &mut usize) -> Result<Value, String> {
    value_at_depth(tokens, at, 0)
}

fn value_at_depth(tokens: &[(usize, Token)], at: &mut usize, depth: usize) -> Result<Value, String> {
    let line = line_of(tokens, *at);
    match tokens.get(*at).map(|t| &t.1) {
        Some(Token::Text(text)) => {
            *at += 1;
            Ok(Value::Text(text.clone()))
        }
        Some(Token::OpenList) if depth < 4 => {
            *at += 1;
            let mut items = Vec::new();
            loop {
                if tokens.get(*at).map(|t| &t.1) == Some(&Token::CloseList) {
                    *at += 1;
                    return Ok(Value::List(items));
                }
                items.push(value_at_depth(tokens, at, depth + 1)?);
                match tokens.get(*at).map(|t| &t.1) {
                    Some(Token::Comma) => *at += 1,
                    Some(Token::CloseList) => {}
                    _ => return Err(format!("line {}: `,` or `]` expected", line_of(tokens, *at))),
                }
            }
        }
        _ => Err(format!("line {line}: a string or a list expected")),
    }
}

/// The tokens of `text`, each with its line; comments (`#` to the end of the line) left out.
fn tokens(text: &str) -> Result<Vec<(usize, Token)>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        let token = match c {
            '\n' => {
                line += 1;
                continue;
            }
            c if c.is_whitespace() => continue,
            '#' => {
                while chars.next_if(|&c| c != '\n').is_some() {}
                continue;
            }
            '(' => Token::Open,
            ')' => Token::Close,
            '[' => Token::OpenList,
            ']' => Token::CloseList,
            ',' => Token::Comma,
            '=' => Token::Equals,
            '"' | '\'' => {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        None | Some('\n') => {
                            return Err(format!("line {line}: a string is not closed on its line"));
                        }
                        Some(end) if end == c => break,
                        Some('\\') => match chars.next() {
                            Some('n') => text.push('\n'),
                            Some('t') => text.push('\t'),
                            Some(escaped @ ('\\' | '"' | '\'')) => text.push(escaped),
                            _ => return Err(format!("line {line}: an escape this reader does not know")),
                        },
                        Some(other) => text.push(other),
                    }
                }
                Token::Text(text)
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::from(c);
                while let Some(next) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    name.push(next);
                }
                Token::Name(name)
            }
            other => {
                return Err(format!(
                    "line {line}: {other:?} is not read here (only `prefix_rule(...)` calls are)"
                ));
            }
        };
        tokens.push((line, token));
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_rules_become_command_rules_with_their_alternatives() {
        let text = r#"
# Prompt before pushing or fetching.
prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "prompt",  # allow | prompt | forbidden
    match = [["git", "push", "origin", "main"], "git fetch"],
    not_match = [["git", "status"]],
    justification = 'network',
)
prefix_rule(pattern = ["rm", "-rf"], decision = "forbidden")
prefix_rule(pattern = ["gh", "pr", "view"])
"#;
        assert_eq!(
            parse(text).unwrap(),
            [
                ("ask", "Bash(git push:*)".to_owned()),
                ("ask", "Bash(git fetch:*)".to_owned()),
                ("deny", "Bash(rm -rf:*)".to_owned()),
                ("allow", "Bash(gh pr view:*)".to_owned()),
            ]
        );
        assert_eq!(parse("# nothing\n\n").unwrap(), []);
    }

    #[test]
    fn what_cannot_be_read_is_an_error_naming_its_line() {
        for (text, error) in [
            ("load('x.star', 'y')\n", "line 1: `load` where a `prefix_rule(...)` call should be"),
            ("prefix_rule(pattern = [\"rm\"], decision = \"never\")", "line 1: `decision` must be"),
            ("\nprefix_rule(decision = \"forbidden\")", "line 2: `prefix_rule` without a `pattern`"),
            ("prefix_rule(pattern = [])", "`pattern` must not be empty"),
            ("prefix_rule(pattern = [\"rm -rf\"])", "the word \"rm -rf\" cannot be written"),
            ("prefix_rule(pattern = [\"rm\", \"*\"])", "the word \"*\" cannot be written"),
            ("prefix_rule(pattern = [\"rm\"], host = \"x\")", "`prefix_rule` has no argument `host`"),
            ("prefix_rule(pattern = [\"rm\"]", "`,` or `)` expected"),
            ("prefix_rule(pattern = [\"rm], decision = \"forbidden\")\n", "not closed"),
            ("prefix_rule(pattern = r\"x\")", "a string or a list expected"),
            ("x = \"1\"", "`x` where"),
            ("x = 1", "'1' is not read here"),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.contains(error), "{text}: {got}");
        }
        let wide: Vec<String> = (0..20).map(|n| format!("\"a{n}\"")).collect();
        let text = format!("prefix_rule(pattern = [[{0}], [{0}]])", wide.join(", "));
        assert!(parse(&text).unwrap_err().contains("more than 256 commands"));
    }
}
