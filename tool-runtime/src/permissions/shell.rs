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

/// Programs whose every use (apart from the options refused per program) only reads.
/// `git` counts with the subcommands of [`READ_ONLY_GIT`] only.
pub const READ_ONLY_PROGRAMS: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "cmp",
    "column",
    "cut",
    "date",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "false",
    "fgrep",
    "file",
    "find",
    "git",
    "grep",
    "head",
    "id",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "od",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "seq",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sort",
    "stat",
    "tail",
    "tr",
    "tree",
    "true",
    "uname",
    "wc",
    "which",
    "whoami",
];

/// The `git` subcommands that only read (`branch`, `tag`, `remote`, `config` and `stash` only in
/// their listing forms).
pub const READ_ONLY_GIT: &[&str] = &[
    "blame",
    "branch",
    "cat-file",
    "config",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "remote",
    "rev-parse",
    "shortlog",
    "show",
    "stash",
    "status",
    "tag",
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
        if let Err(reason) = read_only(words) {
            return CommandClass::Mutating { reason };
        }
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
        commands.push(words);
    }
    if commands.is_empty() {
        return Err(Unknown("no command at all"));
    }
    Ok(commands)
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

/// `Ok` when one simple command only reads; otherwise why not.
fn read_only(words: &[String]) -> Result<(), String> {
    let program = words[0].as_str();
    let args = &words[1..];
    if !READ_ONLY_PROGRAMS.contains(&program) {
        return Err(format!("`{program}` is not a known read-only program"));
    }
    let refused = |option: &str| Err(format!("`{program} {option}` may write or run other programs"));
    match program {
        "find" => {
            const WRITES: &[&str] =
                &["-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"];
            if let Some(option) = args.iter().find(|a| WRITES.contains(&a.as_str())) {
                return refused(option);
            }
        }
        "rg" => {
            if let Some(option) = args.iter().find(|a| a.starts_with("--pre")) {
                return refused(option);
            }
        }
        "sort" => {
            if let Some(option) = args.iter().find(|a| {
                a.starts_with("--output")
                    || a.starts_with("--compress-program")
                    || short_flags_contain(a, 'o')
            }) {
                return refused(option);
            }
        }
        "date" => {
            if let Some(option) = args
                .iter()
                .find(|a| a.starts_with("--set") || short_flags_contain(a, 's') || !a.starts_with(['-', '+']))
            {
                return refused(option);
            }
        }
        "git" => return git_read_only(args),
        _ => {}
    }
    Ok(())
}

/// Whether `arg` is a cluster of short options (`-ro`) that contains `flag`.
fn short_flags_contain(arg: &str, flag: char) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(flag)
}

fn git_read_only(args: &[String]) -> Result<(), String> {
    let mut args = args.iter().map(String::as_str).skip_while(|a| *a == "--no-pager");
    let Some(subcommand) = args.next() else { return Ok(()) };
    let rest: Vec<&str> = args.collect();
    if subcommand.starts_with('-') {
        return Err(format!("`git {subcommand}` (a global option) is not checked"));
    }
    if !READ_ONLY_GIT.contains(&subcommand) {
        return Err(format!("`git {subcommand}` is not a known read-only git command"));
    }
    let refused = |what: &str| {
        Err(format!("`git {subcommand} {what}` may change the repository or run other programs"))
    };
    match subcommand {
        "diff" | "log" | "show" => {
            if let Some(option) =
                rest.iter().find(|a| a.starts_with("--output") || a.starts_with("--ext-diff"))
            {
                return refused(option);
            }
        }
        "grep" => {
            if let Some(option) =
                rest.iter().find(|a| a.starts_with("--open-files-in-pager") || a.starts_with("-O"))
            {
                return refused(option);
            }
        }
        "branch" => {
            const LISTING: &[&str] = &[
                "-a",
                "-r",
                "-v",
                "-vv",
                "-l",
                "--list",
                "--all",
                "--remotes",
                "--show-current",
                "--verbose",
                "--no-color",
                "--merged",
                "--no-merged",
            ];
            if let Some(arg) = rest.iter().find(|a| !LISTING.contains(a)) {
                return refused(arg);
            }
        }
        "tag" => {
            if let Some(arg) = rest.iter().find(|a| !matches!(**a, "-l" | "--list" | "-n")) {
                return refused(arg);
            }
        }
        "remote" => {
            if let Some(arg) = rest.iter().find(|a| !matches!(**a, "-v" | "--verbose")) {
                return refused(arg);
            }
        }
        "config" if !matches!(rest.first(), Some(&("--get" | "--get-all" | "--list" | "-l"))) => {
            return refused(rest.first().copied().unwrap_or(""));
        }
        "stash" if !matches!(rest.first(), Some(&("list" | "show"))) => {
            return refused(rest.first().copied().unwrap_or(""));
        }
        _ => {}
    }
    Ok(())
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
