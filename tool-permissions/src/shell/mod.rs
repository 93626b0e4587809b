//! Shell command lines as the permission rules see them: which lines only read, and what a
//! line will run.
//!
//! Rules are policy, not a boundary: they read the command's text before it runs and cannot
//! follow everything a shell and its programs do. Contain commands with a kernel sandbox.
//!
//! # Read-only (`Bash(read-only)`, and the shared guard)
//!
//! A strict parser understands words (unquoted, `'single'`, `"double"` without expansions,
//! backslash escapes) joined into simple commands by `|`, `&&`, `||`, `;` and newlines. Anything
//! else (expansions `$`, backticks, redirections, globs, here-documents, subshells, braces,
//! background jobs, comments, assignments such as `X=1` or `X+=1`, shell keywords such as `if`
//! or `time`) makes the line *unknown*, and an unknown line counts as mutating.
//!
//! A line is read-only when every simple command runs a program of [`READ_ONLY_PROGRAMS`] (a
//! `git` subcommand of [`READ_ONLY_GIT`]) with only the options listed for that program as
//! harmless. The list is an allowlist: an option not on it makes the line mutating, whatever its
//! spelling: an unknown long option, a GNU-style abbreviation of a listed one (`sort --o=FILE`,
//! `git grep --op=CMD`: only exact spellings count), a bundle with one unknown letter
//! (`git grep -iO'CMD'`), a value given to a flag. Values of listed options (`-n 5`, `-n5`,
//! `--lines=5`) are skipped, `--` ends the options. Per program: `find` takes only the tests and
//! actions that read (no `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint*`, `-fls`);
//! `date` only `+FORMAT` arguments (not a date to set); `printf` no `-v`; `sort` no `-o`, `-T`,
//! `--compress-program`; `rg` no `--pre`, `-z`, `--hostname-bin`; `tree` no `-o`, `-R`; `git`
//! takes as its own options only `--no-pager`/`-P` and a few pathspec switches (never `-c`,
//! `--config-env`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`, `-p`/`--paginate`), no
//! aliases (a subcommand not on the list), no `--output`, `--ext-diff`, `--show-signature`,
//! `-O`/`--open-files-in-pager`; `branch`, `tag`, `remote`, `config` and `stash` only in their
//! listing forms; and no `git` after a `cd` in the same line.
//!
//! Not seen: what `PATH` or a shell function outside the line points a name to; a repository's
//! own configuration (`core.fsmonitor`, `core.pager`, `diff.external`, textconv drivers), which
//! git runs even for `git status`: the workspace's git configuration is trusted.
//!
//! # What a line runs (deny and ask rules)
//!
//! A second, lenient parser reads the whole shell language loosely and lists every program the line may
//! run, each with its arguments, so deny and ask patterns match what will run:
//!
//! - inside keywords and groups (`if`/`then`/`elif`/`else`, `while`/`until`/`do`, `for`,
//!   `case`, `time`, `coproc`, `!`, `{ }`, `( )`, functions), past assignments (`X+=1 rm`),
//!   redirections and comments, in `$(...)`, backticks, `<(...)`, `${X:-$(...)}` and arithmetic;
//! - through wrappers: `command`, `builtin`, `exec`, `env` (options, assignments, `-S`),
//!   `nice`, `nohup`, `setsid`, `stdbuf`, `time`, `timeout`, `sudo`, `doas`, `xargs` (whose
//!   arguments from standard input are unknown), `find -exec`, `busybox`, and `bash`/`sh`/`zsh`/...
//!   `-c STRING`, `eval`, `trap`, `su -c`, `watch`, `ssh` (strings parsed as command lines); after
//!   programs such as `strace`, `chrt`, `flock`, `chroot`, `setarch` (`linux32`, ...), `sg`,
//!   `capsh`, `gdb`, `perf`, `ssh-agent` or the dynamic loader (`ld-linux-x86-64.so.2`), any later
//!   word may be the program, and `find -exec {}` may run any; `gdb -ex` commands and `tmux`/`screen`
//!   sessions are opaque;
//! - in the values of `git -c`/`--config-env` and of variables that name commands (`PAGER`,
//!   `EDITOR`, `GIT_SSH_COMMAND`, ...);
//! - the program by its base name (`/bin/rm`, `./rm` and `\rm` are `rm`), `$'\x72m'` decoded.
//!
//! A prefix or exact pattern (`rm -rf:*`) matches a run of the same program whose options, as a
//! set, include the pattern's (`-fr`, `-r -f`, `-rfv`, `-R`, `--recursive --force` and
//! abbreviations such as `--recur` for the programs whose long and short names are known:
//! `rm`, `cp`, `mv`, `chmod`, `chown`, `chgrp`, `rmdir`, `shred`, `sed -i`, `git -f`/`-d`), and
//! whose other words include the pattern's in order (`git -C x push` is a `git push`). Whatever
//! the parser cannot resolve may match: a program or argument from an expansion
//! (`rm${IFS}-rf`, `$CMD`, `rm $FLAGS`), brace expansion, and anything opaque (`source`, `.`,
//! `eval` or `-c` of unknown text, a shell reading a script or a standard input the line gives
//! it (a pipe, a redirection, a line of more than one command), a here-document,
//! `alias`, `hash -p`, `enable`, `PATH`/`LD_PRELOAD`/`BASH_ENV` assignments) makes every deny
//! and ask pattern apply. Allow patterns never see through: they match only lines the strict
//! parser understands, each simple command as written. A line that is only a shell (`bash`,
//! `sh -i`) reads what the call gives it: nothing in the foreground, and in a
//! background session what is typed with `bash_input`, which the rules decide line by line.
//!
//! Not seen: programs that run other programs in ways not listed (`make`, `npm run`,
//! `python -c`, `perl -e`), a program copied or linked under another name, another program with
//! the same effect (`find -delete` is not `rm`), options whose equivalence is not known
//! (`git push origin +main` is a forced push), and options of other programs spelled another
//! way.
//!
//! # Paths a line names (Read rules)
//!
//! Read path rules that deny or ask (`Read(./.env)`) also apply to a command: every argument of
//! every program the line runs (as above), and every redirection target, is taken as a path (the
//! whole word, the part after `=` or after the first `:` as in `HEAD:.env`, the value of a short
//! option as in `-f.env`), resolved against the workspace root and any directory an earlier `cd`
//! in the line moves to, `~` as the home directory, links followed, a glob in the last component
//! expanded, braces expanded as the shell does (`{.,}env` is `.env` and `env`, at most 256 words
//! per word). If a rule covers one, the command is refused (deny) or asked about (ask), whatever
//! allowed it. A recursive reader (`rg`, `grep -r`, `git grep`, `ag`, `ack`, `cp -r`, `tar`,
//! `zip`, `rsync`, `find -exec`) of a directory (named, or the current one when it names no
//! path after its pattern) also reads what is beneath it: the first 10,000 entries, nearest
//! first, are checked (not `.git`; not hidden ones for `rg` without `--hidden`, `-u` or
//! `--no-ignore`). Not seen: a path that is computed (`cat "$F"`, `cat $(echo .env)`), entries
//! beyond that bound, files a program walks that is not in that list, a link
//! the same line creates, and files a program opens by itself.

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

/// Whether `line` ends with a backslash that escapes the line's end (an odd number of them): a
/// shell joins the next line to it (`r\` then `m -rf x` runs `rm -rf x`). Not in a comment,
/// which the line's end ends (`# see \` then `rm x` runs `rm x`).
pub fn continues_line(line: &str) -> bool {
    line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1 && !ends_in_a_comment(line)
}

/// How a line of shell text ends, as bash reads its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnd {
    Plain,
    /// In a comment (a `#` where a word may start, outside quotes), which the line's end ends.
    Comment,
    /// Inside quotes (`'`, `"`, `$'`) that are still open: the next line goes on in them.
    Quoted,
}

fn line_end(line: &str) -> LineEnd {
    // Inside `'...'`, `$'...'` (where a backslash escapes) or `"..."`.
    let (mut single, mut ansi_c, mut double, mut escaped) = (false, false, false, false);
    let (mut word_start, mut dollar) = (true, false);
    for c in line.chars() {
        let after_dollar = std::mem::replace(&mut dollar, false);
        if escaped {
            escaped = false;
            word_start = false;
            continue;
        }
        match c {
            '\\' if !single || ansi_c => escaped = true,
            '\'' if single => (single, ansi_c) = (false, false),
            '\'' if !double => (single, ansi_c) = (true, after_dollar),
            '"' if !single => double = !double,
            '$' if !single => dollar = true,
            '#' if !single && !double && word_start => return LineEnd::Comment,
            _ => {}
        }
        word_start = !single && !double && (c.is_whitespace() || ";&|()<>".contains(c));
    }
    if single || double { LineEnd::Quoted } else { LineEnd::Plain }
}

fn ends_in_a_comment(line: &str) -> bool {
    line_end(line) == LineEnd::Comment
}

/// Whether `line` leaves quotes open: a shell reads the next line as part of the same command
/// (`git commit -m 'first` then `second'`).
pub(crate) fn leaves_a_quote_open(line: &str) -> bool {
    line_end(line) == LineEnd::Quoted
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
    if git_after_cd(&commands) {
        return CommandClass::Mutating { reason: GIT_AFTER_CD.to_owned() };
    }
    CommandClass::ReadOnly
}

const GIT_AFTER_CD: &str = "`git` after `cd` may run programs another repository's configuration names, so it counts as changing things";

/// Whether `git` runs after a `cd` (or `pushd`) among `commands`: another directory may hold a
/// repository whose configuration runs programs (`core.fsmonitor`, `core.pager`), so git only
/// counts as reading in the workspace's own.
fn git_after_cd(commands: &[Vec<String>]) -> bool {
    let cd = commands.iter().position(|words| words[0] == "cd" || words[0] == "pushd");
    cd.is_some_and(|cd| commands[cd..].iter().any(|words| words[0] == "git"))
}

/// The line `command` as run from `dir`: `cd 'DIR' && command`.
pub(crate) fn in_directory(dir: &std::path::Path, command: &str) -> String {
    let dir = dir.to_string_lossy().replace('\'', "'\\''");
    format!("cd '{dir}' && {command}")
}

/// Whether the line `command` runs `git` after changing directory ([`git_after_cd`]); a line
/// the strict parser does not understand is not judged here.
pub(crate) fn runs_git_after_cd(command: &str) -> bool {
    parse(command).is_ok_and(|commands| git_after_cd(&commands))
}

/// The simple commands of `command`, each as its words joined by single spaces (quotes
/// removed), or `None` when the parser does not fully understand the line.
pub(crate) fn simple_commands(command: &str) -> Option<Vec<String>> {
    parse(command).ok().map(|commands| commands.iter().map(|words| words.join(" ")).collect())
}

/// What in `command` the parser does not understand (`a comment`, `` `$` (an expansion or
/// command substitution) ``), if anything: allow rules do not reach such a line.
pub(crate) fn not_read_whole(command: &str) -> Option<&'static str> {
    parse(command).err().map(|unknown| unknown.0)
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
