//! Shell command classification: which command lines only read, decided by a conservative parser.
//!
//! The parser understands a small part of the shell language: words (unquoted, `'single'`,
//! `"double"` without expansions, backslash escapes) joined into simple commands by `|`, `&&`,
//! `||`, `;` and newlines. Anything else (expansions `$`, backticks, redirections, globs, here
//! documents, subshells, braces, background jobs, comments, environment assignments) makes the
//! command *unknown*, and an unknown command counts as mutating. A command is read-only when it
//! parses and every simple command in it runs a program of [`READ_ONLY_PROGRAMS`] with arguments
//! that program cannot use to write or to run something else.

use std::fmt;

mod options;
mod read_only;
pub(crate) mod see_through;

pub use read_only::{READ_ONLY_GIT, READ_ONLY_PROGRAMS};

/// Shell reserved words: at the start of a simple command they make a line one this parser does
/// not model, so neither `read-only` nor an allow pattern matches it.
const KEYWORDS: &[&str] = &[
    "if", "then", "elif", "else", "fi", "while", "until", "for", "select", "do", "done", "case", "esac",
    "in", "function", "time", "coproc", "[[", "]]", "!", "{", "}",
];

/// What running a command line may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandClass {
    /// Only known read-only programs, in a form the parser fully understood.
    ReadOnly,
    /// It may change something, or the parser could not be sure it does not.
    Mutating {
        /// Why, for a person reading a permission decision.
        reason: String,
    },
}

impl CommandClass {
    /// Whether the command only reads.
    pub fn is_read_only(&self) -> bool {
        matches!(self, CommandClass::ReadOnly)
    }
}

/// Classifies a command line; anything the parser does not fully understand is mutating.
pub fn classify(command: &str) -> CommandClass {
    let commands = match parse(command) {
        Ok(commands) => commands,
        Err(unknown) => return CommandClass::Mutating { reason: unknown.to_string() },
    };
    for words in &commands {
        if let Err(reason) = read_only::read_only(words) {
            return CommandClass::Mutating { reason };
        }
    }
    // Another directory may hold a repository whose configuration runs programs
    // (`core.fsmonitor`, `core.pager`): git only counts as reading in the workspace's own.
    let cd = commands.iter().position(|words| words[0] == "cd");
    if cd.is_some_and(|cd| commands[cd..].iter().any(|words| words[0] == "git")) {
        return CommandClass::Mutating {
            reason:
                "`git` after `cd` may run programs another repository's configuration names, so it counts \
                     as changing things"
                    .to_owned(),
        };
    }
    CommandClass::ReadOnly
}

/// The simple commands of `command`, each as its words joined by single spaces (quotes
/// removed), or `None` when the parser does not fully understand the line.
pub(crate) fn simple_commands(command: &str) -> Option<Vec<String>> {
    parse(command).ok().map(|commands| commands.iter().map(|words| words.join(" ")).collect())
}

/// Why the parser gave up on a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unknown(&'static str);

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the command uses {}, which is not checked, so it counts as changing things", self.0)
    }
}

/// The simple commands (each a list of words) of a command line.
fn parse(command: &str) -> Result<Vec<Vec<String>>, Unknown> {
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    // Whether a word has started (an empty quoted word `''` is a word too).
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    // Ends the current simple command; an operator with nothing before it is unknown.
    fn end_command(
        words: &mut Vec<String>,
        commands: &mut Vec<Vec<String>>,
        after_operator: bool,
    ) -> Result<(), Unknown> {
        if words.is_empty() {
            return if after_operator {
                Err(Unknown("an operator without a command before it"))
            } else {
                Ok(())
            };
        }
        check_start(words)?;
        commands.push(std::mem::take(words));
        Ok(())
    }
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\n' | ';' | '|' | '&' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                match (c, chars.peek()) {
                    ('|', Some('|')) | ('&', Some('&')) => {
                        chars.next();
                        end_command(&mut words, &mut commands, true)?;
                    }
                    ('|', Some('&')) => return Err(Unknown("`|&`")),
                    ('&', _) => return Err(Unknown("`&` (a background job)")),
                    (';', Some(';')) => return Err(Unknown("`;;`")),
                    ('\n', _) => end_command(&mut words, &mut commands, false)?,
                    _ => end_command(&mut words, &mut commands, true)?,
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(Unknown("an unterminated quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('$') => return Err(Unknown("`$` (an expansion)")),
                        Some('`') => return Err(Unknown("backticks (command substitution)")),
                        Some('!') => return Err(Unknown("`!` (history expansion)")),
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(Unknown("an unterminated quote")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(Unknown("an unterminated quote")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => return Err(Unknown("a line continuation")),
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(Unknown("a trailing backslash")),
            },
            '$' => return Err(Unknown("`$` (an expansion or command substitution)")),
            '`' => return Err(Unknown("backticks (command substitution)")),
            '>' => return Err(Unknown("`>` (output redirection)")),
            '<' => return Err(Unknown("`<` (input redirection or a here-document)")),
            '(' | ')' => return Err(Unknown("parentheses (a subshell)")),
            '{' | '}' => return Err(Unknown("braces")),
            '*' | '?' | '[' | ']' => return Err(Unknown("a glob pattern (its expansion is not known)")),
            '#' if !in_word => return Err(Unknown("a comment")),
            '!' => return Err(Unknown("`!`")),
            '=' if !in_word || words.is_empty() && is_name(&word) => {
                return Err(Unknown("an environment assignment"));
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        if !commands.is_empty() && ends_with_operator(command) {
            return Err(Unknown("an operator without a command after it"));
        }
    } else {
        check_start(&words)?;
        commands.push(words);
    }
    if commands.is_empty() {
        return Err(Unknown("no command at all"));
    }
    Ok(commands)
}

/// Refuses a simple command that starts with a shell keyword or an assignment (`X+=1 rm`,
/// `A[0]=1 rm`), which this parser does not model.
fn check_start(words: &[String]) -> Result<(), Unknown> {
    let first = words[0].as_str();
    if KEYWORDS.contains(&first) {
        return Err(Unknown("a shell keyword (`if`, `while`, `time`, ...)"));
    }
    if see_through::is_assignment(first) {
        return Err(Unknown("an environment assignment"));
    }
    Ok(())
}

fn ends_with_operator(command: &str) -> bool {
    let trimmed = command.trim_end_matches([' ', '\t']);
    trimmed.ends_with('|') || trimmed.ends_with("&&")
}

fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_commands_come_out_with_quotes_removed() {
        assert_eq!(
            simple_commands("git commit -m 'a b' && ls \"x y\"; echo z | wc -l"),
            Some(vec![
                "git commit -m a b".to_owned(),
                "ls x y".to_owned(),
                "echo z".to_owned(),
                "wc -l".to_owned()
            ])
        );
        assert_eq!(simple_commands("echo $(date)"), None);
        assert_eq!(simple_commands("ls |"), None);
        assert_eq!(simple_commands("&& ls"), None);
        assert_eq!(simple_commands("ls\n\nls"), Some(vec!["ls".to_owned(), "ls".to_owned()]));
    }

    #[test]
    fn an_equals_sign_inside_an_argument_is_a_plain_character() {
        assert!(classify("git log --format=%H").is_read_only());
        assert!(!classify("FOO=1 ls").is_read_only());
    }
}
