//! What a command line will run, as far as a lenient parser can tell: every simple command in
//! it (inside keywords, groups, substitutions and `bash -c` strings), seen through wrappers
//! (`env`, `sudo`, `xargs`, ...), with the parts it cannot resolve marked. Deny and ask rules
//! match against this; allow rules never do.

use super::options::{Spec, scan};

/// Stands in a word's text for a part whose value is not known (an expansion, a substitution).
pub(crate) const UNKNOWN: char = '\0';

/// After a program that runs others (`strace`), at most this many words are each taken as the
/// possible program; more make the line opaque.
const MAX_RUNNER_WORDS: usize = 256;

/// How deep `bash -c`, `eval` and substitutions may nest before the line counts as opaque.
const MAX_DEPTH: usize = 8;

/// One word, quotes removed, unknown parts replaced by [`UNKNOWN`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) text: String,
    /// It has an unquoted glob character (`*`, `?`, `[`).
    pub(crate) glob: bool,
    /// It starts with an unquoted `~`.
    pub(crate) tilde: bool,
}

impl Word {
    fn literal(text: &str) -> Word {
        Word { text: text.to_owned(), ..Word::default() }
    }

    /// Whether every part of the word is known.
    pub(crate) fn resolved(&self) -> bool {
        !self.text.contains(UNKNOWN)
    }
}

/// A program run with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// The program's base name (`/bin/rm` is `rm`), or `None` when it is not known (`$CMD`).
    pub(crate) program: Option<String>,
    pub(crate) args: Vec<Word>,
}

impl Run {
    /// Whether an argument is not known (it may be any option or word).
    pub(crate) fn has_unknown_args(&self) -> bool {
        self.args.iter().any(|word| !word.resolved())
    }
}

/// Everything a command line may run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// Each program the line runs, in order.
    pub(crate) runs: Vec<Run>,
    /// Set when some part may run anything at all (`source`, a here-document, a shell reading a
    /// script), with what that part is.
    pub(crate) opaque: Option<&'static str>,
    /// The files redirections name (`< .env`, `> out`).
    pub(crate) redirections: Vec<Word>,
    /// The line is one command without redirections, so its standard input is the one the
    /// command is given (nothing in a foreground call; what is typed into a session, which is
    /// decided on its own).
    given_stdin: bool,
}

/// What `command` may run.
pub(crate) fn see(command: &str) -> Seen {
    let mut seen = Seen::default();
    line(command, 0, &mut seen);
    seen
}

/// `NAME=`, `NAME+=`, `NAME[...]=` at the start of a word.
pub(crate) fn is_assignment(text: &str) -> bool {
    let Some(eq) = text.find('=') else { return false };
    let mut name = &text[..eq];
    name = name.strip_suffix('+').unwrap_or(name);
    if let Some(open) = name.find('[') {
        if !name.ends_with(']') {
            return false;
        }
        name = &name[..open];
    }
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The base name of a program path.
pub(crate) fn base_name(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or(text)
}

/// Parses a command line into `seen`; nested command lines (substitutions, `-c` strings) go in
/// at `depth + 1`.
fn line(text: &str, depth: usize, seen: &mut Seen) {
    if depth > MAX_DEPTH {
        seen.opaque.get_or_insert("commands nested too deeply to follow");
        return;
    }
    let commands = Lexer { chars: text.chars().collect(), pos: 0, depth, seen }.commands();
    if depth == 0 {
        seen.given_stdin = commands.len() == 1 && seen.redirections.is_empty() && seen.opaque.is_none();
    }
    for words in commands {
        command(&words, depth, seen);
    }
}

struct Lexer<'s> {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    seen: &'s mut Seen,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn opaque(&mut self, why: &'static str) {
        self.seen.opaque.get_or_insert(why);
    }

    /// A nested command line (`$(...)`, backticks, `<(...)`).
    fn nested(&mut self, text: &str) {
        line(text, self.depth + 1, self.seen);
    }

    /// Text that is not a command line but may hold substitutions (`${X:-$(cmd)}`,
    /// `$(( a[$(cmd)] ))`): only those are parsed.
    fn substitutions_in(&mut self, text: &str) {
        let mut inner = Lexer { chars: text.chars().collect(), pos: 0, depth: self.depth, seen: self.seen };
        let mut scratch = Word::default();
        while let Some(c) = inner.peek() {
            inner.pos += 1;
            match c {
                '\\' => inner.pos += 1,
                '$' => inner.dollar(&mut scratch),
                '`' => inner.backtick(&mut scratch),
                _ => {}
            }
        }
    }

    /// The text up to the `close` that balances an `open` already read, skipping quoted
    /// parts; `None` when it is not closed.
    fn balanced(&mut self, open: char, close: char) -> Option<String> {
        let start = self.pos;
        let mut level = 1;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        match c {
                            '\\' => self.pos += 1,
                            '"' => break,
                            _ => {}
                        }
                    }
                }
                c if c == open => level += 1,
                c if c == close => {
                    level -= 1;
                    if level == 0 {
                        let end = (self.pos - 1).min(self.chars.len());
                        return Some(self.chars[start.min(end)..end].iter().collect());
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// After a `$` (already read): the expansion's value, `None` for a plain `$`.
    fn dollar(&mut self, word: &mut Word) {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                match self.balanced('(', ')') {
                    // Arithmetic can hold substitutions (`$(( a[$(cmd)] ))`).
                    Some(inner) => {
                        self.substitutions_in(&inner);
                        self.pos += 1;
                    }
                    None => self.opaque("an unterminated `$((`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('(') => {
                self.pos += 1;
                match self.balanced('(', ')') {
                    Some(inner) => self.nested(&inner),
                    None => self.opaque("an unterminated `$(`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('{') => {
                self.pos += 1;
                match self.balanced('{', '}') {
                    Some(inner) => self.substitutions_in(&inner),
                    None => self.opaque("an unterminated `${`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('\'') => {
                self.pos += 1;
                self.ansi_c(word);
            }
            Some('"') => {}
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?-$!".contains(c) => {
                self.pos += 1;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                        self.pos += 1;
                    }
                }
                word.text.push(UNKNOWN);
            }
            _ => word.text.push('$'),
        }
    }

    /// `$'...'` with its backslash escapes decoded; an escape it does not know is unknown.
    fn ansi_c(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek() else { break };
                    self.pos += 1;
                    let simple = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(e),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        word.text.push(c);
                        continue;
                    }
                    let (radix, max) = match e {
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        '0'..='7' => {
                            self.pos -= 1;
                            (8, 3)
                        }
                        _ => {
                            word.text.push(UNKNOWN);
                            continue;
                        }
                    };
                    let mut digits = String::new();
                    while digits.len() < max && self.peek().is_some_and(|c| c.is_digit(radix)) {
                        digits.extend(self.peek());
                        self.pos += 1;
                    }
                    match u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32) {
                        Some(c) if c != '\0' => word.text.push(c),
                        _ => word.text.push(UNKNOWN),
                    }
                }
                c => word.text.push(c),
            }
        }
        self.opaque("an unterminated quote");
    }

    /// After a backtick (already read).
    fn backtick(&mut self, word: &mut Word) {
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => {
                    self.opaque("an unterminated backtick");
                    break;
                }
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.peek_at(1), Some('`' | '\\' | '$')) => {
                    inner.extend(self.peek_at(1));
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        self.nested(&inner);
        word.text.push(UNKNOWN);
    }

    /// The simple commands of the line, each as its words (redirections left out).
    fn commands(mut self) -> Vec<Vec<Word>> {
        let mut commands = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        let mut word: Option<Word> = None;
        // The next word is a redirection's target, not an argument.
        let mut target = false;
        let mut targets: Vec<Word> = Vec::new();
        let finish =
            |word: &mut Option<Word>, words: &mut Vec<Word>, target: &mut bool, targets: &mut Vec<Word>| {
                if let Some(mut done) = word.take() {
                    if done.text.contains('{')
                        && done.text != "{"
                        && done.text != "{}"
                        && !done.text.starts_with("${")
                    {
                        // Brace expansion (`-{r,f}`) makes other words.
                        done.text.push(UNKNOWN);
                    }
                    if std::mem::take(target) {
                        targets.push(done);
                        return;
                    }
                    words.push(done);
                }
            };
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                ' ' | '\t' => finish(&mut word, &mut words, &mut target, &mut targets),
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(c) => {
                        self.pos += 1;
                        word.get_or_insert_default().text.push(c);
                    }
                    None => {}
                },
                '\'' => {
                    let w = word.get_or_insert_default();
                    loop {
                        match self.chars.get(self.pos).copied() {
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                            None => {
                                self.seen.opaque.get_or_insert("an unterminated quote");
                                break;
                            }
                        }
                    }
                }
                '"' => {
                    let mut w = word.take().unwrap_or_default();
                    loop {
                        match self.peek() {
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('\\') => {
                                self.pos += 1;
                                match self.peek() {
                                    Some(e @ ('"' | '\\' | '$' | '`')) => w.text.push(e),
                                    Some('\n') => {}
                                    Some(e) => {
                                        w.text.push('\\');
                                        w.text.push(e);
                                    }
                                    None => {}
                                }
                                self.pos += 1;
                            }
                            Some('$') => {
                                self.pos += 1;
                                self.dollar(&mut w);
                            }
                            Some('`') => {
                                self.pos += 1;
                                self.backtick(&mut w);
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                            None => {
                                self.opaque("an unterminated quote");
                                break;
                            }
                        }
                    }
                    word = Some(w);
                }
                '$' => {
                    let mut w = word.take().unwrap_or_default();
                    if self.peek() == Some('"') {
                        // `$"..."`: a translated string, otherwise a double-quoted one.
                    } else {
                        self.dollar(&mut w);
                    }
                    word = Some(w);
                }
                '`' => {
                    let mut w = word.take().unwrap_or_default();
                    self.backtick(&mut w);
                    word = Some(w);
                }
                '<' | '>' => {
                    // A file descriptor number before it belongs to the redirection.
                    if word
                        .as_ref()
                        .is_some_and(|w| !w.text.is_empty() && w.text.bytes().all(|b| b.is_ascii_digit()))
                    {
                        word = None;
                    }
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    if self.peek() == Some('(') {
                        // Process substitution.
                        self.pos += 1;
                        match self.balanced('(', ')') {
                            Some(inner) => self.nested(&inner),
                            None => self.opaque("an unterminated process substitution"),
                        }
                        word = Some(Word { text: UNKNOWN.to_string(), ..Word::default() });
                        continue;
                    }
                    if c == '<' && self.peek() == Some('<') {
                        if self.peek_at(1) == Some('<') {
                            self.pos += 2;
                            target = true;
                            continue;
                        }
                        self.opaque("a here-document");
                        self.pos += 1;
                        continue;
                    }
                    while matches!(self.peek(), Some('>' | '&' | '|')) {
                        self.pos += 1;
                    }
                    target = true;
                }
                '&' if self.peek() == Some('>') => {
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    while matches!(self.peek(), Some('>')) {
                        self.pos += 1;
                    }
                    target = true;
                }
                '(' if word.as_ref().is_some_and(|w| w.text.ends_with('=')) => {
                    // An array assignment `A=(...)`.
                    match self.balanced('(', ')') {
                        Some(inner) => self.substitutions_in(&inner),
                        None => self.opaque("an unterminated array"),
                    }
                    word.get_or_insert_default().text.push(UNKNOWN);
                }
                '(' if word.as_ref().is_some_and(|w| w.text.ends_with(['@', '!', '+', '*', '?'])) => {
                    // An extended glob `!(x)`.
                    if self.balanced('(', ')').is_none() {
                        self.opaque("an unterminated pattern");
                    }
                    let w = word.get_or_insert_default();
                    w.text.push(UNKNOWN);
                    w.glob = true;
                }
                '\n' | ';' | '&' | '|' | '(' | ')' => {
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    target = false;
                    if !words.is_empty() {
                        commands.push(std::mem::take(&mut words));
                    }
                }
                '#' if word.is_none() => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '*' | '?' | '[' => {
                    let w = word.get_or_insert_default();
                    w.text.push(c);
                    w.glob = true;
                }
                '~' if word.is_none() => {
                    word = Some(Word { text: "~".to_owned(), tilde: true, glob: false });
                }
                c => word.get_or_insert_default().text.push(c),
            }
        }
        finish(&mut word, &mut words, &mut target, &mut targets);
        if !words.is_empty() {
            commands.push(words);
        }
        self.seen.redirections.extend(targets);
        commands
    }
}

/// Keywords that only introduce or end a command.
const LEADING: &[&str] =
    &["if", "then", "elif", "else", "fi", "while", "until", "do", "done", "esac", "!", "{", "}", "]]"];

/// A simple command's runs: past keywords and assignments, to the program and through wrappers.
fn command(words: &[Word], depth: usize, seen: &mut Seen) {
    let mut at = 0;
    while let Some(word) = words.get(at) {
        let text = word.text.as_str();
        if LEADING.contains(&text) {
            at += 1;
        } else if text == "time" {
            at += 1;
            if words.get(at).is_some_and(|w| w.text == "-p") {
                at += 1;
            }
        } else if text == "coproc" {
            at += 1;
            if words.get(at + 1).is_some_and(|w| w.text == "{" || LEADING.contains(&w.text.as_str())) {
                at += 1;
            }
        } else if text == "function" {
            at += 2;
        } else if matches!(text, "for" | "select" | "case" | "[[") {
            // Words, not a program (their substitutions were parsed already).
            return;
        } else if is_assignment(text) {
            assignment(word, depth, seen);
            at += 1;
        } else {
            break;
        }
    }
    if at < words.len() {
        run(&words[at..], depth, seen);
    }
}

/// Variables whose value is a command some program runs (`PAGER='rm -rf x' git log`).
const COMMAND_VARIABLES: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "BROWSER",
    "PROMPT_COMMAND",
    "LESSOPEN",
    "LESSCLOSE",
    "GIT_PROXY_COMMAND",
    "FCEDIT",
];

/// Variables that make a program load code the rules cannot see.
const CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
    "GIT_DIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "PATH",
];

/// An assignment before a command: its value is parsed when the variable names a command, and
/// a variable that loads code makes the line opaque.
fn assignment(word: &Word, depth: usize, seen: &mut Seen) {
    let Some((name, value)) = word.text.split_once('=') else { return };
    let name = name.trim_end_matches('+');
    if CODE_VARIABLES.contains(&name) {
        seen.opaque.get_or_insert(
            "a variable that makes programs load other code (`PATH`, `LD_PRELOAD`, `BASH_ENV`, ...)",
        );
    } else if COMMAND_VARIABLES.contains(&name) || name.starts_with("GIT_CONFIG_VALUE_") {
        if word.resolved() {
            line(value.trim_start_matches('!'), depth + 1, seen);
        } else {
            seen.opaque.get_or_insert("a command in a variable that is not known");
        }
    }
}

/// Programs that run the rest of their arguments as a command, with their own options.
fn wrapper(program: &str) -> Option<(&'static str, bool)> {
    // (options, whether a `NAME=value` may come before the command)
    Some(match program {
        "command" => ("-p -v -V", false),
        "builtin" | "nohup" | "unbuffer" | "busybox" => ("", false),
        "exec" => ("-c -l -a=", false),
        "nice" => ("-n= --adjustment=", false),
        "setsid" => ("-c -f -w --ctty --fork --wait", false),
        "stdbuf" => ("-i= -o= -e= --input= --output= --error=", false),
        "time" => ("-p -v -a -q -o= -f= --portability --verbose --append --quiet --output= --format=", false),
        "timeout" => {
            ("-s= --signal= -k= --kill-after= -v --verbose -f --foreground -p --preserve-status", false)
        }
        "env" => (
            "-i -0 -v --debug --ignore-environment --null -u= --unset= -C= --chdir= -S= --split-string= \
             --default-signal=? --ignore-signal=? --block-signal=? --list-signal-handling -a= --argv0=",
            true,
        ),
        "sudo" => (
            "-A -b -E -H -K -k -n -P -S -B -N -e -u= -g= -h= -p= -C= -D= -r= -t= -T= -U= -R= -l -s -i \
             --askpass --background --preserve-env=? --set-home --non-interactive --stdin --user= --group= \
             --host= --prompt= --close-from= --chdir= --role= --type= --command-timeout= --other-user= \
             --chroot= --shell --login --bell --preserve-groups --edit --list --reset-timestamp \
             --remove-timestamp",
            true,
        ),
        "doas" => ("-n -s -L -u= -C=", false),
        "xargs" => (
            "-0 -r -t -p -x -o -a= -d= -E= -e=? -I= -i=? -L= -l=? -n= -P= -s= --null --no-run-if-empty \
             --verbose --interactive --exit --open-tty --arg-file= --delimiter= --eof=? --replace=? \
             --max-lines=? --max-args= --max-procs= --max-chars= --process-slot-var=",
            false,
        ),
        _ => return None,
    })
}

/// Programs that run a command somewhere in their arguments, with options not modelled here:
/// any later word may be the program.
const RUNNERS: &[&str] = &[
    "strace",
    "ltrace",
    "chrt",
    "taskset",
    "ionice",
    "flock",
    "watch",
    "chroot",
    "unshare",
    "nsenter",
    "firejail",
    "systemd-run",
    "setpriv",
    "prlimit",
    "runuser",
    "su",
    "valgrind",
    "torsocks",
    "proxychains",
    "proxychains4",
    "catchsegv",
    "faketime",
    "fakeroot",
    "numactl",
    "cpulimit",
    "parallel",
    "script",
    "bwrap",
    "systemd-nspawn",
    "pkexec",
    "run-parts",
    "entr",
    "ssh",
    "caffeinate",
];

/// Shells: `-c STRING` is a command line; a script file or standard input is opaque.
const SHELLS: &[&str] =
    &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "posh", "csh", "tcsh"];

fn run(words: &[Word], depth: usize, seen: &mut Seen) {
    let Some(first) = words.first() else { return };
    let args = words[1..].to_vec();
    if !first.resolved() {
        seen.runs.push(Run { program: None, args });
        return;
    }
    let program = base_name(&first.text).to_owned();
    seen.runs.push(Run { program: Some(program.clone()), args: args.clone() });
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    match program.as_str() {
        "eval" => {
            if args.iter().all(Word::resolved) {
                line(&texts.join(" "), depth + 1, seen);
            } else {
                seen.opaque.get_or_insert("`eval` of text that is not known");
            }
        }
        "source" | "." => {
            seen.opaque.get_or_insert("`source` (a script file)");
        }
        "alias" | "enable" => {
            seen.opaque.get_or_insert("`alias` or `enable` (a command under another name)");
        }
        "hash" if texts.iter().any(|t| t.starts_with('-') && t.contains('p')) => {
            seen.opaque.get_or_insert("`hash -p` (a command under another name)");
        }
        "trap" => {
            if let Some(action) = args.first().filter(|w| !w.text.starts_with('-')) {
                if action.resolved() {
                    line(&action.text, depth + 1, seen);
                } else {
                    seen.opaque.get_or_insert("`trap` with an action that is not known");
                }
            }
        }
        "find" => {
            for (at, word) in args.iter().enumerate() {
                if matches!(word.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let end = args[at + 1..]
                        .iter()
                        .position(|w| w.text == ";" || w.text == "+")
                        .map_or(args.len(), |end| at + 1 + end);
                    run(&args[at + 1..end], depth, seen);
                }
            }
        }
        "git" => {
            // `-c alias.x='!cmd'`, `-c core.pager=cmd`, `--config-env`: values may be commands.
            let mut words = texts.iter();
            while let Some(text) = words.next() {
                let value = match text.as_str() {
                    "-c" | "--config-env" => words.next().map(String::as_str),
                    t => t.strip_prefix("-c").or_else(|| t.strip_prefix("--config-env=")),
                };
                if let Some((_, command)) = value.and_then(|v| v.split_once('=')) {
                    line(command.trim_start_matches('!'), depth + 1, seen);
                }
            }
        }
        name if SHELLS.contains(&name) => shell(&args, depth, seen),
        name if RUNNERS.contains(&name) => any_word_runs(&args, depth, seen),
        name => {
            let Some((spec, assignments)) = wrapper(name) else { return };
            if !args.iter().all(Word::resolved) && name != "xargs" {
                // An unknown word may be an option that takes the next word, or the program.
                return any_word_runs(&args, depth, seen);
            }
            let scanned = match scan(&Spec::new(spec, name == "nice"), &texts, true) {
                Ok(scanned) => scanned,
                Err(_) => return any_word_runs(&args, depth, seen),
            };
            let mut rest: Vec<Word> = args[args.len() - scanned.positionals.len()..].to_vec();
            let mut split: Vec<Word> = Vec::new();
            if name == "env" {
                // `env -S 'cmd args'` splits its string into words.
                let options = &texts[..texts.len() - scanned.positionals.len()];
                let split_at = options.iter().enumerate().find_map(|(at, t)| {
                    if t == "--split-string" {
                        return Some(texts.get(at + 1).cloned().unwrap_or_default());
                    }
                    if let Some(value) = t.strip_prefix("--split-string=") {
                        return Some(value.to_owned());
                    }
                    // In a bundle (`-iS'cmd'`), after the options that take no value.
                    let cluster = t.strip_prefix('-').filter(|c| !c.starts_with('-'))?;
                    let s = cluster.find('S')?;
                    if cluster[..s].contains(['u', 'C', 'a']) {
                        return None;
                    }
                    let rest = &cluster[s + 1..];
                    Some(if rest.is_empty() {
                        texts.get(at + 1).cloned().unwrap_or_default()
                    } else {
                        rest.to_owned()
                    })
                });
                if let Some(string) = split_at {
                    let mut inner = Seen::default();
                    let commands =
                        Lexer { chars: string.chars().collect(), pos: 0, depth: depth + 1, seen: &mut inner }
                            .commands();
                    split = commands.into_iter().flatten().collect();
                    seen.runs.extend(inner.runs);
                    if let Some(why) = inner.opaque {
                        seen.opaque.get_or_insert(why);
                    }
                }
            }
            if !split.is_empty() {
                split.extend(rest);
                rest = split;
            }
            if assignments {
                while rest.first().is_some_and(|w| is_assignment(&w.text)) {
                    assignment(&rest.remove(0), depth, seen);
                }
            }
            match name {
                "timeout" if !rest.is_empty() => {
                    rest.remove(0);
                }
                "sudo" | "doas"
                    if scanned.has("-s")
                        || scanned.has("-i")
                        || scanned.has("--shell")
                        || scanned.has("--login") =>
                {
                    if rest.iter().all(Word::resolved) {
                        let text: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
                        line(&text.join(" "), depth + 1, seen);
                    } else {
                        seen.opaque.get_or_insert("a shell command that is not known");
                    }
                    return;
                }
                "xargs" => {
                    if rest.is_empty() {
                        rest.push(Word::literal("echo"));
                    }
                    // The arguments read from standard input.
                    rest.push(Word { text: UNKNOWN.to_string(), ..Word::default() });
                }
                _ => {}
            }
            run(&rest, depth, seen);
        }
    }
}

/// Short options of shells that change nothing about what runs: interactive, login, read from
/// standard input, tracing, `errexit`, `nounset`, `noexec`, restricted, privileged, `noglob`.
const PLAIN_SHELL_FLAGS: &str = "ilsxveunrpf";

/// Long options of shells that change nothing about what runs.
const PLAIN_LONG_SHELL_OPTIONS: &[&str] = &[
    "norc",
    "noprofile",
    "login",
    "posix",
    "noediting",
    "interactive",
    "restricted",
    "verbose",
    "no-config",
    "private",
    "no-rcs",
];

/// A shell's arguments: `-c STRING` (alone or in a bundle such as `-ec`) is parsed; a script
/// file or commands on standard input are opaque.
fn shell(args: &[Word], depth: usize, seen: &mut Seen) {
    let mut command_string = false;
    // Only options known to change nothing about what runs (`-i`, `-l`, `--norc`, ...): others
    // (`fish -C`, `--init-command`) may run code of their own.
    let mut plain_options = true;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if !word.resolved() {
            seen.opaque.get_or_insert("a shell argument that is not known");
            return;
        }
        if text == "--" || text == "-" {
            at += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            if matches!(long.split('=').next(), Some("rcfile" | "init-file")) {
                seen.opaque.get_or_insert("a shell reading a start-up file");
                return;
            }
            plain_options &= PLAIN_LONG_SHELL_OPTIONS.contains(&long);
        } else if let Some(cluster) = text.strip_prefix('-').or_else(|| text.strip_prefix('+')) {
            command_string |= cluster.contains('c');
            plain_options &= cluster.chars().all(|c| PLAIN_SHELL_FLAGS.contains(c) || c == 'o' || c == 'O');
            if cluster.contains('o') || cluster.contains('O') {
                at += 1;
            }
        } else {
            break;
        }
        at += 1;
    }
    match args.get(at) {
        Some(string) if command_string => {
            if string.resolved() {
                line(&string.text, depth + 1, seen);
            } else {
                seen.opaque.get_or_insert("a `-c` string that is not known");
            }
        }
        Some(_) => {
            seen.opaque.get_or_insert("a shell running a script file");
        }
        // Reading its standard input: what the command is given is not part of the line.
        None if depth == 0 && seen.given_stdin && plain_options => {}
        None => {
            seen.opaque.get_or_insert("a shell reading commands from standard input");
        }
    }
}

/// After a program that runs a command somewhere in its arguments: every later word may be the
/// program, and a word that looks like a command line (`watch 'rm -rf x'`) is parsed as one.
fn any_word_runs(args: &[Word], depth: usize, seen: &mut Seen) {
    if args.len() > MAX_RUNNER_WORDS {
        seen.opaque.get_or_insert("too many words after a program that runs others to follow");
        return;
    }
    for (at, word) in args.iter().enumerate() {
        if !word.resolved() {
            seen.runs.push(Run { program: None, args: args[at + 1..].to_vec() });
            continue;
        }
        seen.runs
            .push(Run { program: Some(base_name(&word.text).to_owned()), args: args[at + 1..].to_vec() });
        if word.text.contains([' ', ';', '|', '&', '\n', '$', '`']) {
            line(&word.text, depth + 1, seen);
        }
    }
}

/// Options known to be the same under another spelling, per program: (program, short letters,
/// long names, the one name both stand for).
const SAME_OPTIONS: &[(&str, &str, &[&str], &str)] = &[
    ("rm", "rR", &["recursive"], "recursive"),
    ("rm", "f", &["force"], "force"),
    ("rm", "v", &["verbose"], "verbose"),
    ("rm", "d", &["dir"], "dir"),
    ("rm", "i", &["interactive"], "interactive"),
    ("cp", "rR", &["recursive"], "recursive"),
    ("cp", "f", &["force"], "force"),
    ("cp", "a", &["archive"], "archive"),
    ("mv", "f", &["force"], "force"),
    ("chmod", "R", &["recursive"], "recursive"),
    ("chown", "R", &["recursive"], "recursive"),
    ("chgrp", "R", &["recursive"], "recursive"),
    ("rmdir", "p", &["parents"], "parents"),
    ("shred", "u", &["remove"], "remove"),
    ("sed", "i", &["in-place"], "in-place"),
    ("git", "f", &["force"], "force"),
    ("git", "d", &["delete"], "delete"),
];

/// A command's options as a set of names (`-rf`, `-r -f` and `--recursive --force` are the
/// same set for `rm`), and its other words in order.
fn options_and_words<'a>(
    program: &str,
    args: impl IntoIterator<Item = &'a str>,
) -> (Vec<String>, Vec<&'a str>) {
    let mut options = Vec::new();
    let mut words = Vec::new();
    let mut ended = false;
    for arg in args {
        if ended || arg == "-" || !arg.starts_with('-') {
            words.push(arg);
        } else if arg == "--" {
            ended = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            // GNU and git accept an unambiguous abbreviation (`--recur`).
            let before = options.len();
            for (p, _, longs, same) in SAME_OPTIONS {
                if *p == program && longs.iter().any(|l| l.starts_with(name)) {
                    options.push((*same).to_owned());
                }
            }
            if options.len() == before {
                options.push(format!("--{name}"));
            }
        } else {
            for c in arg[1..].chars() {
                match SAME_OPTIONS.iter().find(|(p, shorts, _, _)| *p == program && shorts.contains(c)) {
                    Some((_, _, _, same)) => options.push((*same).to_owned()),
                    None => options.push(format!("-{c}")),
                }
            }
        }
    }
    options.sort();
    options.dedup();
    (options, words)
}

/// A deny or ask pattern's command (`rm -rf` of `Bash(rm -rf:*)`): its program's base name, its
/// options as a set, its other words in order.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    program: String,
    options: Vec<String>,
    words: Vec<String>,
    /// Exact patterns want the same options and words; prefix patterns at least these.
    exact: bool,
}

impl Shape {
    /// The shape of a pattern's text; `None` when it has no words.
    pub(crate) fn new(pattern: &str, exact: bool) -> Option<Shape> {
        // Read as a command line, so quotes in the pattern are removed as in the command.
        let seen = see(pattern);
        let run = seen.runs.first()?;
        let program = run.program.clone()?;
        let (options, words) = options_and_words(&program, run.args.iter().map(|w| w.text.as_str()));
        let words = words.into_iter().map(str::to_owned).collect();
        Some(Shape { program, options, words, exact })
    }

    /// Whether `run` may be what the pattern describes: same program (or one not known), the
    /// pattern's options among the run's (a run's abbreviation of a long option counts), the
    /// pattern's other words among the run's in the same order. A run with an argument that is
    /// not known may be anything its program does.
    pub(crate) fn matches(&self, run: &Run) -> bool {
        match &run.program {
            None => return true,
            Some(program) if *program != self.program => return false,
            Some(_) => {}
        }
        if run.has_unknown_args() {
            return true;
        }
        let (options, words) = options_and_words(&self.program, run.args.iter().map(|w| w.text.as_str()));
        let has = |option: &String| {
            options.contains(option)
                || option.starts_with("--")
                    && options
                        .iter()
                        .any(|o| o.len() > 2 && o.starts_with("--") && option.starts_with(o.as_str()))
        };
        if !self.options.iter().all(has) {
            return false;
        }
        if self.exact {
            let wanted = |o: &String| {
                self.options
                    .iter()
                    .any(|p| p == o || o.len() > 2 && o.starts_with("--") && p.starts_with(o.as_str()))
            };
            return options.iter().all(wanted)
                && words.len() == self.words.len()
                && words.iter().zip(&self.words).all(|(a, b)| a == b);
        }
        let mut words = words.iter();
        self.words.iter().all(|wanted| words.any(|w| w == wanted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(command: &str) -> Vec<String> {
        let seen = see(command);
        assert_eq!(seen.opaque, None, "{command}");
        seen.runs.iter().map(|r| r.program.clone().unwrap_or_else(|| "?".to_owned())).collect()
    }

    #[test]
    fn keywords_groups_and_assignments_are_seen_through() {
        assert_eq!(programs("if true; then rm -rf x; fi"), ["true", "rm"]);
        assert_eq!(programs("while false; do rm -rf x; done"), ["false", "rm"]);
        assert_eq!(programs("until false\ndo rm x\ndone"), ["false", "rm"]);
        assert_eq!(programs("for f in a b; do rm $f; done"), ["rm"]);
        assert_eq!(programs("time rm x"), ["rm"]);
        assert_eq!(programs("coproc rm x"), ["rm"]);
        assert_eq!(programs("coproc NAME { rm x; }"), ["rm"]);
        assert_eq!(programs("! rm x"), ["rm"]);
        assert_eq!(programs("{ rm x; }"), ["rm"]);
        assert_eq!(programs("(rm x)"), ["rm"]);
        assert_eq!(programs("X+=1 A[0]=2 B=3 rm x"), ["rm"]);
        assert_eq!(programs("case $x in a) rm x;; esac"), ["rm"]);
        assert_eq!(programs("echo ${X:-$(rm x)} $((1 + $(rm y)))"), ["rm", "rm", "echo"]);
        assert_eq!(programs("f() { rm x; }; f"), ["f", "rm", "f"]);
        assert_eq!(programs("ls 2>/dev/null >out <in"), ["ls"]);
        assert_eq!(see("ls 2>/dev/null").runs[0].args, []);
    }

    #[test]
    fn wrappers_and_nested_lines_are_seen_through() {
        assert_eq!(programs("command rm x"), ["command", "rm"]);
        assert_eq!(programs("env -i -u HOME A=1 rm x"), ["env", "rm"]);
        assert_eq!(programs("env -S 'rm -rf' x"), ["env", "rm"]);
        assert_eq!(programs("env -iS'rm -rf' x"), ["env", "rm"]);
        assert_eq!(programs("env --split-string='rm -rf' x"), ["env", "rm"]);
        assert_eq!(programs("git -c alias.x='!rm -rf y' x"), ["git", "rm"]);
        assert_eq!(programs("PAGER='rm -rf x' git log"), ["rm", "git"]);
        assert_eq!(programs("env GIT_SSH_COMMAND='rm -rf x' git fetch"), ["env", "rm", "git"]);
        assert!(see("PATH=. ls").opaque.is_some());
        assert!(see("BASH_ENV=x.sh bash -c true").opaque.is_some());
        assert_eq!(see("cat < .env > out").redirections, [Word::literal(".env"), Word::literal("out")]);
        assert_eq!(programs("sudo -u root -E rm x"), ["sudo", "rm"]);
        assert_eq!(
            programs("nice -n 5 nohup timeout -s KILL 5 stdbuf -oL rm x"),
            ["nice", "nohup", "timeout", "stdbuf", "rm"]
        );
        assert_eq!(programs("bash -c 'rm -rf x'"), ["bash", "rm"]);
        assert_eq!(programs("sh -ec \"rm x\""), ["sh", "rm"]);
        assert_eq!(programs("eval rm -rf x"), ["eval", "rm"]);
        assert_eq!(programs("echo $(rm x) `rm y`"), ["rm", "rm", "echo"]);
        assert_eq!(programs("find . -exec rm {} \\;"), ["find", "rm"]);
        assert_eq!(programs("/bin/rm x"), ["rm"]);
        assert_eq!(programs("$'\\x72m' x"), ["rm"]);
        let xargs = see("ls | xargs rm");
        assert_eq!(xargs.runs[2].program.as_deref(), Some("rm"));
        assert!(xargs.runs[2].has_unknown_args());
    }

    #[test]
    fn what_cannot_be_resolved_says_so() {
        assert_eq!(see("rm${IFS}-rf x").runs[0].program, None);
        assert_eq!(see("$CMD x").runs[0].program, None);
        for line in [
            "source x.sh",
            ". x.sh",
            "bash x.sh",
            "echo rm | sh",
            "cat <<EOF\nx\nEOF",
            "eval \"$X\"",
            "bash -c \"$X\"",
        ] {
            assert!(see(line).opaque.is_some(), "{line}");
        }
        assert!(see("rm -{r,f} x").runs[0].has_unknown_args());
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    fn sees(pattern: &str, command: &str) -> bool {
        let shape = Shape::new(pattern, false).unwrap();
        let seen = see(command);
        seen.runs.iter().any(|run| shape.matches(run))
    }

    #[test]
    fn options_are_a_set_with_their_other_spellings() {
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -rfv x",
            "rm --recursive --force x",
            "rm -R --force x",
            "rm --recur --forc x",
            "rm x -rf",
            "/bin/rm -rf x",
            "rm -r x -f",
        ] {
            assert!(sees("rm -rf", line), "{line}");
        }
        for line in ["rm -r x", "rm -- -rf", "rmdir -rf x", "echo rm -rf"] {
            assert!(!sees("rm -rf", line), "{line}");
        }
        assert!(sees("git push --force", "git -C x push origin -f"));
        assert!(sees("git push", "git --no-pager push"));
        assert!(!sees("git push", "git status"));
        assert!(sees("rm -rf", "rm $FLAGS x"));
        assert!(sees("git commit -m 'a b'", "git commit -m \"a b\" -q"));
    }
}
