//! Text typed into a running command (`PermissionKind::Input`): which commands run what they
//! read (shells, interpreters), and how the rules decide about it.

use crate::catalog::Subject;
use crate::rules::{Action, Because, Rules, Verdict};
use crate::shell::{continues_line, leaves_a_quote_open};

/// Shells: a line typed into one is a command line, so the command rules read it as one.
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "rbash",
    "dash",
    "ash",
    "zsh",
    "ksh",
    "mksh",
    "oksh",
    "pdksh",
    "yash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "elvish",
    "nu",
    "xonsh",
    "pwsh",
    "powershell",
];

/// Programs that run what they read, or can be told to (`:!cmd`, `\!`, `.shell`, `os.system`):
/// interpreters, REPLs, debuggers, editors and pagers, database shells, remote shells, and
/// programs that run a command per line of input.
const RUNS_INPUT: &[&str] = &[
    "python",
    "ipython",
    "pypy",
    "jython",
    "micropython",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ts-node",
    "tsx",
    "ruby",
    "irb",
    "pry",
    "jruby",
    "perl",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "r",
    "rscript",
    "julia",
    "ghci",
    "stack",
    "cabal",
    "scala",
    "amm",
    "groovysh",
    "groovy",
    "jshell",
    "kotlin",
    "kotlinc",
    "clojure",
    "clj",
    "lein",
    "bb",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "ecl",
    "ocaml",
    "utop",
    "erl",
    "iex",
    "elixir",
    "swipl",
    "gforth",
    "octave",
    "matlab",
    "maxima",
    "gdb",
    "lldb",
    "pdb",
    "sqlite",
    "psql",
    "mysql",
    "mariadb",
    "redis-cli",
    "mongo",
    "mongosh",
    "cqlsh",
    "bc",
    "dc",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "ed",
    "ex",
    "vi",
    "vim",
    "nvim",
    "view",
    "emacs",
    "nano",
    "less",
    "more",
    "most",
    "man",
    "ssh",
    "telnet",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "ftp",
    "sftp",
    "sudo",
    "su",
    "doas",
    "runuser",
    "pkexec",
    "docker",
    "podman",
    "kubectl",
    "nsenter",
    "chroot",
    "script",
    "screen",
    "tmux",
    "xargs",
    "parallel",
    "eval",
    "source",
    "exec",
    "env",
    "watch",
    "timeout",
    "nohup",
    "nice",
    "stdbuf",
    "setsid",
    "java",
    "dotnet",
    "mono",
    "osascript",
    "wsl",
    "cmd",
];

/// What reads the input of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// A plain shell (`bash`, `sh -i`, `/bin/zsh`): every line is a command line.
    Shell,
    /// A program that runs what it reads, or a command line that cannot be resolved (`$CMD`,
    /// `eval`, a glob): what it reads may run as code.
    Interpreter,
    /// Anything else (`read -r answer`, `cat > notes.txt`, a prompt).
    Other,
}

/// Who reads what is typed into a session running `command`.
pub(crate) fn reader(command: &str) -> Reader {
    let (words, unresolved) = words(command);
    let mut programs = words.iter().filter(|word| !is_assignment(word)).map(|word| program_name(word));
    let first = programs.next();
    let runs_input = |name: &str| SHELLS.contains(&name) || RUNS_INPUT.contains(&name);
    if unresolved {
        return Reader::Interpreter;
    }
    let options_only =
        words.iter().skip_while(|word| is_assignment(word)).skip(1).all(|w| w.starts_with('-'));
    // A shell given keys, prompts or start-up code of its own (`INPUTRC=./keys bash`,
    // `bash --rcfile=./rc`) may run other lines than those typed.
    let configured = words.iter().any(|word| {
        word.split_once('=').is_some_and(|(name, _)| is_assignment(word) && SETS_UP_VARIABLES.contains(&name))
            || ["--rcfile", "--init-file", "--init-command", "-C"].iter().any(|o| word.starts_with(o))
    });
    match first {
        Some(name) if SHELLS.contains(&name.as_str()) && options_only && words.len() < 8 && !configured => {
            Reader::Shell
        }
        _ if words.iter().any(|word| {
            runs_input(&program_name(word))
                || word.split_once('=').is_some_and(|(_, value)| runs_input(&program_name(value)))
        }) =>
        {
            Reader::Interpreter
        }
        _ => Reader::Other,
    }
}

/// The words of a command line with quotes and backslashes removed, split at blanks and shell
/// operators; and whether any part is resolved only when it runs (an expansion, a glob).
fn words(command: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut unresolved = false;
    for c in command.chars() {
        match c {
            '\'' | '"' | '\\' => {}
            '$' | '`' | '*' | '?' | '[' | '~' | '!' => {
                unresolved = true;
                word.push(c);
            }
            c if c.is_whitespace() || "|&;()<>{}".contains(c) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    (words, unresolved)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// A program's name without its directory and version: `/usr/bin/python3.12` is `python`.
fn program_name(word: &str) -> String {
    let base = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
    let base = base.strip_suffix(".exe").unwrap_or(&base);
    let trimmed =
        base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.').trim_end_matches(['-', '_']);
    if trimmed.is_empty() { base.to_owned() } else { trimmed.to_owned() }
}

/// Text typed into a session, and who reads it there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Typing<'a> {
    /// The command the session runs.
    pub(crate) command: &'a str,
    /// What was typed before on the line, then the new text.
    pub(crate) typed: &'a str,
    /// The programs of the session's other processes that may read it (see
    /// [`PermissionKind::Input`](tool_core::PermissionKind::Input)).
    pub(crate) readers: &'a [String],
    /// The terminal's line-editing keys were changed.
    pub(crate) keys_changed: bool,
    /// Typed into a terminal, not a pipe.
    pub(crate) terminal: bool,
    /// The command is not waiting for input now.
    pub(crate) busy: bool,
}

impl Typing<'_> {
    /// Who reads the lines: an interpreter where the command, or another program of the
    /// session, is a shell or an interpreter; else the command's reader. Whether a program
    /// may read part of a line before the session's shell or interpreter reads the rest:
    /// another program runs beside it (`head -c 5`, `bash -c 'read -n 5 x'`; the shell's own
    /// `read` is looked for in the lines themselves), or it is busy (`sleep 4 & wait; head -c
    /// 3`: what reads next is not running yet). And whether a shell is among what reads (the
    /// command names one, `exec bash`, `bash -O extglob`, or one runs in the session): then
    /// what a shell's line editor and history do to a line counts as well, whoever else reads.
    fn readers(&self) -> (Reader, bool, bool) {
        let own = reader(self.command);
        let others: Vec<Reader> = self
            .readers
            .iter()
            .map(|program| if program.is_empty() { Reader::Interpreter } else { reader(program) })
            .collect();
        // Another shell runs what it reads as the session's does, but with keys, prompts and
        // start-up files of its own (a script's `bash`, `INPUTRC=./keys bash` run by one): as
        // an interpreter's, its lines cannot be read as typed.
        let reader = if own == Reader::Interpreter || others.iter().any(|&other| other != Reader::Other) {
            Reader::Interpreter
        } else {
            own
        };
        let shell = own == Reader::Shell
            || others.contains(&Reader::Shell)
            || words(self.command).0.iter().any(|word| SHELLS.contains(&program_name(word).as_str()));
        (reader, reader != Reader::Other && (self.busy || !others.is_empty()), shell)
    }
}

/// Why a line is refused whose effect cannot be known ([`unknowable`]).
const UNKNOWABLE: &str = "keys or text whose effect on the line cannot be known (cursor or history keys, a \
                          tab, a history expansion, or a line that sets up later ones: `fc`, `bind`, `read`, \
                          `stty`, a prompt variable)";

/// Lines checked suffix by suffix ([`partly_read`]) are at most this long, and a call's such
/// lines at most [`MAX_SUFFIXED_IN_A_CALL`] characters together; past either, a line counts as
/// unknowable.
const MAX_SUFFIXED: usize = 512;
const MAX_SUFFIXED_IN_A_CALL: usize = 4096;

/// Why a line's end is checked as a command line of its own.
const AFTER_ANOTHER_LINE: &str = "a line typed after another in one call: a program the line before runs may \
                                  read part of it and leave the rest to the shell (send the line in a call of \
                                  its own)";
const KEYS: &str = "a terminal whose line-editing keys were changed (`stty kill Q`), so what a typed line \
                    becomes cannot be told (stop the session and start another)";
const BESIDE_A_PROGRAM: &str = "a line typed while another program of the session reads its input: it may read \
                                part of the line and leave the rest to the shell";

/// The answer for typing into a session (see [`Typing`]).
///
/// - The rules of `tool` without a pattern apply (`allow bash_input`, `deny bash_input`).
/// - Every line is read as a command line by the rules about commands (`Bash(...)`): a deny or
///   ask rule that matches a line applies whatever the session runs; into an interpreter, so
///   does one that matches a string literal of the line (`os.system('rm -rf x')`). Where a
///   shell reads, a line after the first of the call, and any line while another program runs
///   beside the session's command or it is busy, is also read from each of its characters on:
///   a program may read the start of it (`head -c 5`) and leave the rest to the shell.
/// - Into a plain shell, lines that the command rules allow, every one of them, are allowed,
///   and the command tools' defaults apply to its lines.
/// - Otherwise, into a shell or interpreter, while any rule about commands is in force: ask.
/// - Otherwise the tool's default.
pub(crate) fn decide_input(rules: &Rules, tool: &str, typing: &Typing<'_>) -> Verdict {
    let (reader, beside, shell_like) = typing.readers();
    let command_tools = rules.catalog().tools_with(Subject::Command);
    let mut found: Vec<Verdict> = rules.bare_verdict(tool).into_iter().collect();
    let shell = reader == Reader::Shell;
    // Into a pipe, what reads may or may not edit the lines: both ways.
    let lines = lines(typing.typed, shell);
    let piped = if typing.terminal { Vec::new() } else { piped_lines(typing.typed, shell) };
    let mut suffixed = MAX_SUFFIXED_IN_A_CALL;
    let mut allowed = None;
    let mut covered = reader == Reader::Shell && !lines.is_empty();
    for (at, line) in lines.iter().enumerate().chain(piped.iter().enumerate()) {
        // An interpreter's string literals may be handed to a shell (`os.system('rm -rf x')`).
        let strings = if reader == Reader::Interpreter { quoted(&line.edited) } else { Vec::new() };
        let partly =
            if shell_like && at > 0 { Some(AFTER_ANOTHER_LINE) } else { beside.then_some(BESIDE_A_PROGRAM) };
        for command_tool in &command_tools {
            for string in &strings {
                let verdict = rules.decide_command(command_tool, string);
                if matches!(verdict.because, Because::Rule { .. }) && verdict.action != Action::Allow {
                    found.push(verdict);
                }
            }
            // As a line editor leaves it (a terminal), and as typed (a pipe).
            for form in [&line.edited, &line.typed] {
                let verdict = rules.decide_command(command_tool, form);
                match (&verdict.because, verdict.action) {
                    (Because::Rule { .. }, Action::Allow) if line.plain => {
                        allowed.get_or_insert(verdict);
                    }
                    (_, Action::Allow) => covered = false,
                    (Because::Rule { .. }, _) => found.push(verdict),
                    // The default for commands is for command lines: a shell's lines.
                    _ if reader == Reader::Shell => found.push(verdict),
                    _ => covered = false,
                }
                if let Some(why) = partly {
                    found.extend(partly_read(rules, command_tool, form, why, &mut suffixed));
                }
            }
            // Cursor keys, history, completion: what runs cannot be known, so any rule may match.
            if unknowable(line, reader) || shell_like && unknowable(line, Reader::Shell) {
                covered = false;
                found.extend(
                    rules.strictest_refusal(command_tool).map(|verdict| as_unresolved(verdict, UNKNOWABLE)),
                );
            } else if typing.keys_changed && reader != Reader::Other {
                covered = false;
                found.extend(
                    rules.strictest_refusal(command_tool).map(|verdict| as_unresolved(verdict, KEYS)),
                );
            }
        }
    }
    if covered && let Some(verdict) = allowed {
        found.push(verdict);
    }
    if let Some(verdict) = strictest(found) {
        return verdict;
    }
    let governed = command_tools.iter().any(|command_tool| rules.has_rules_for(command_tool));
    if reader != Reader::Other && governed {
        let shown: String = typing.command.chars().take(80).collect();
        return Verdict { action: Action::Ask, because: Because::InputDefault(shown) };
    }
    rules.default_verdict(tool)
}

/// `verdict`, a rule's, as one that applies because `why` keeps what runs from being known.
fn as_unresolved(verdict: Verdict, why: &'static str) -> Verdict {
    match verdict.because {
        Because::Rule { action, text, origin } => {
            Verdict { action: verdict.action, because: Because::Unresolved { action, text, origin, why } }
        }
        _ => verdict,
    }
}

/// The deny and ask rules of `command_tool` that match `line` read from one of its characters
/// on (what a shell reads after a program took the start of the line), `why` saying so; a line
/// longer than [`MAX_SUFFIXED`], or than what is `left` of a call's, meets the strictest of them.
fn partly_read(
    rules: &Rules,
    command_tool: &str,
    line: &str,
    why: &'static str,
    left: &mut usize,
) -> Vec<Verdict> {
    let length = line.chars().count();
    if length > MAX_SUFFIXED || length > *left {
        return rules.strictest_refusal(command_tool).into_iter().map(|v| as_unresolved(v, why)).collect();
    }
    *left -= length;
    let mut found = Vec::new();
    let mut last = "";
    for (at, _) in line.char_indices().skip(1) {
        let rest = line[at..].trim();
        if rest.is_empty() || rest == last {
            continue;
        }
        last = rest;
        let verdict = rules.decide_command(command_tool, rest);
        // A cut inside quotes or a substitution leaves it open: the shell then reads on into
        // the next line, whose own ends are checked in turn.
        let cut_open =
            matches!(verdict.because, Because::Unresolved { why, .. } if why.starts_with("an unterminated"));
        if verdict.because.is_a_rule() && verdict.action != Action::Allow && !cut_open {
            found.push(as_unresolved(verdict, why));
        }
    }
    found
}

/// Whether what `line` runs, read by `reader`, cannot be known from its text: keys that move
/// the cursor or recall history, and in a shell a tab (completion) or a history expansion
/// (`!!`, `!-2`, `!$`, `^old^new`); in an interpreter a tab after the line's start, or a line
/// that only a shell's history would expand.
fn unknowable(line: &Line, reader: Reader) -> bool {
    let raw_tab = |from_start: bool| {
        let text = line.raw.trim_start_matches(|c: char| from_start && c.is_whitespace());
        text.contains('\t')
    };
    match reader {
        Reader::Other => false,
        Reader::Shell => {
            line.unresolved
                || raw_tab(false)
                || expands_history(&line.edited)
                || sets_up_later_lines(&line.edited)
        }
        Reader::Interpreter => {
            line.unresolved || raw_tab(true) || line.edited.starts_with('^') || line.edited.contains("!!")
        }
    }
}

/// Builtins with which a line changes what later lines, or keys, will run: history recalled or
/// rewritten (`fc -s`, `history -s`), key bindings that type or run commands (`bind`, `bind -x`),
/// completions that run commands, loaded builtins, shell options, sourced files. (`set -o vi`
/// needs no name here: the keys of its modes are control characters, unknowable already.)
/// The terminal's keys too (`stty kill Q`: a `Q` then ends what came before it on the line).
const SETS_UP: &[&str] = &[
    "fc", "r", "history", "bind", "complete", "compgen", "enable", "shopt", "source", ".", "stty", "tset",
    "reset",
];

/// Builtins with which the shell itself reads what is typed next, possibly part of a line
/// (`read -n 5 x`, `read -d ' '`), leaving the rest to run as a command: looked for wherever
/// the line runs them (a function's body, an `eval`'s text).
const READS_LATER_LINES: &[&str] = &["read", "mapfile", "readarray", "vared"];

/// Variables whose value the shell reads as commands, as aliases, or as how to read later lines.
const SETS_UP_VARIABLES: &[&str] = &[
    "INPUTRC",
    "histchars",
    "HISTFILE",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "BASH_ENV",
    "ENV",
    "HISTTIMEFORMAT",
    "BASH_ALIASES",
    "BASH_CMDS",
    "MAILPATH",
];

/// Words that run the command after them (`builtin fc`, `command bind`, `time history`), looked
/// past to find the program.
const RUNS_NEXT: &[&str] = &["builtin", "command", "time", "exec", "nohup", "nice", "env", "then", "do", "!"];

/// Builtins that write a variable named by an argument (`printf -v NAME`, a nameref's
/// `declare -n`; `read NAME` is one of [`READS_LATER_LINES`]): with a name that an expansion makes (`"$x"`), which variable is
/// written cannot be known.
const WRITES_NAMED: &[&str] = &["printf", "declare", "typeset", "local", "export"];

/// Whether `line` changes what later lines or keys of the session run: one of [`SETS_UP`] run,
/// bare, quoted or behind [`RUNS_NEXT`]; a name of [`SETS_UP_VARIABLES`] anywhere on the line
/// (assigned, an element, a nameref's target, `printf -v`); one of [`READS_LATER_LINES`] or
/// [`SETS_UP`] run anywhere on the line; a nameref made (`declare -n`); or a variable written whose name an expansion makes.
fn sets_up_later_lines(line: &str) -> bool {
    let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // `ENV`, a common name of projects' own variables, counts only where it is assigned.
    let names =
        line.split(|c: char| !identifier(c)).any(|word| word != "ENV" && SETS_UP_VARIABLES.contains(&word));
    let env = line.match_indices("ENV").any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = &line[at + 3..];
        !before.is_some_and(identifier) && (after.starts_with('=') || after.starts_with("+="))
    });
    // What the line runs as the command rules read it: inside functions, `eval` and
    // substitutions, through wrappers, `$'\x72ead'` decoded.
    let runs = crate::shell::see_through::see(line).runs;
    let reads = runs
        .iter()
        .filter_map(|run| run.program.as_deref())
        .any(|program| READS_LATER_LINES.contains(&program) || SETS_UP.contains(&program));
    if names || env || reads {
        return true;
    }
    // A line the parser cannot split is read word by word as a whole.
    let commands = crate::shell::simple_commands(line).unwrap_or_else(|| vec![line.to_owned()]);
    commands.iter().any(|command| {
        // The program as the shell finds it: quotes, `$'...'` and backslashes dropped, past
        // assignments and the words that run what follows them.
        let plain =
            |word: &str| word.chars().filter(|c| !matches!(c, '\'' | '"' | '\\' | '$')).collect::<String>();
        let mut words = command.split_whitespace().map(plain).skip_while(|word| word.contains('='));
        let mut program = words.next();
        while program.as_deref().is_some_and(|word| RUNS_NEXT.contains(&word)) {
            program = words.by_ref().find(|next| !next.starts_with('-'));
        }
        let Some(program) = program else { return false };
        let program = program.rsplit('/').next().unwrap_or(&program).to_owned();
        SETS_UP.contains(&program.as_str()) || writes_a_named_variable(&program, command)
    })
}

/// Whether `command`, run by `program` (one of [`WRITES_NAMED`]), makes a nameref or writes a
/// variable whose name an expansion makes: `declare -n`, `declare "$x=..."`, `printf -v "$x"`
/// (words after a redirection are its values, not names).
fn writes_a_named_variable(program: &str, command: &str) -> bool {
    if !WRITES_NAMED.contains(&program) {
        return false;
    }
    let words: Vec<&str> =
        command.split_whitespace().skip(1).take_while(|word| !word.starts_with(['<', '>'])).collect();
    let named = |word: &&str| word.split('=').next().is_some_and(|name| name.contains('$'));
    match program {
        "printf" => words.windows(2).any(|pair| pair[0] == "-v" && pair[1].contains('$')),
        _ => words.iter().any(|word| (word.starts_with('-') && word.contains('n')) || named(word)),
    }
}

/// Whether a shell's history expansion would change `line`: a `!` outside single quotes that
/// is not followed by a blank, `=`, `(` or the line's end, or a `^` that starts it.
fn expands_history(line: &str) -> bool {
    if line.starts_with('^') {
        return true;
    }
    // As bash's `history_expand` reads quotes: single quotes outside double ones hide a `!`; in
    // double quotes a `'` is a character, and a backslash escapes the next one.
    let (mut single, mut double) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '\\' if !single => {
                chars.next();
            }
            '!' if !single => {
                let inert = matches!(chars.peek(), None | Some(' ' | '\t' | '=' | '('))
                    || (double && chars.peek() == Some(&'"'));
                if !inert {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// One line of what is typed.
#[derive(Debug, PartialEq)]
struct Line {
    /// With backspaces and line kills applied, as a terminal's line editor leaves it, control
    /// characters removed.
    edited: String,
    /// As typed, control characters removed (a program reading a pipe gets them as they are).
    typed: String,
    /// No control character in it (but tabs).
    plain: bool,
    /// It holds keys whose effect on the line cannot be known: escape sequences (arrows,
    /// history), other control characters (a tab is judged by who reads it: [`unknowable`]).
    unresolved: bool,
    /// As typed, control characters and all.
    raw: String,
}

/// The lines of `typed` as a line editor makes them (a terminal's, or readline's, which `bash
/// -i` uses on a pipe too), empty ones left out: ended by newlines, carriage returns or Ctrl-D
/// at a line's start, and edited. Into a `shell`, a line ended inside quotes goes on in the
/// next, as the shell reads it.
fn lines(typed: &str, shell: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut raw = String::new();
    let mut edited = String::new();
    // An erase key took a character a line editor may take with others (a combining accent
    // with the letter before it, a wide character): what is left cannot be known.
    let mut misread = false;
    let mut push = |raw: &mut String, edited: &mut String, misread: &mut bool| {
        // (A newline is in a line only inside quotes, which it continues.)
        let typed: String = raw.chars().filter(|c| !c.is_control() || matches!(c, '\t' | '\n')).collect();
        let plain = !raw.chars().any(|c| c.is_control() && c != '\n');
        let unresolved = std::mem::take(misread)
            || raw.chars().any(|c| {
                c.is_control() && !matches!(c, '\t' | '\n' | '\u{7f}' | '\u{8}' | '\u{15}' | '\u{3}')
            });
        let line = Line {
            edited: edited.trim().to_owned(),
            typed: typed.trim().to_owned(),
            plain,
            unresolved,
            raw: raw.clone(),
        };
        if !line.typed.is_empty() || !line.edited.is_empty() || line.unresolved {
            lines.push(line);
        }
        raw.clear();
        edited.clear();
    };
    for c in typed.chars() {
        match c {
            // A backslash at the end of a line joins the next one to it, as a shell and most
            // interpreters read it: `r\` then `m -rf x` is `rm -rf x`.
            '\n' | '\r' if continues_line(&edited) || continues_line(&raw) => {
                if continues_line(&edited) {
                    edited.pop();
                }
                if continues_line(&raw) {
                    raw.pop();
                }
            }
            '\n' | '\r' if shell && leaves_a_quote_open(&edited) => {
                edited.push('\n');
                raw.push('\n');
            }
            // Ctrl-D ends the input at the start of a line only; elsewhere a line editor takes
            // it as a key (and a pipe passes it on), which makes the line unknowable.
            '\u{4}' if !edited.is_empty() => raw.push(c),
            '\n' | '\r' | '\u{4}' => push(&mut raw, &mut edited, &mut misread),
            '\u{3}' | '\u{15}' => {
                raw.push(c);
                edited.clear();
            }
            '\u{7f}' | '\u{8}' => {
                raw.push(c);
                misread |= edited.pop().is_some_and(|erased| !erased.is_ascii());
            }
            c => {
                raw.push(c);
                if !c.is_control() || c == '\t' {
                    edited.push(c);
                }
            }
        }
    }
    push(&mut raw, &mut edited, &mut misread);
    lines
}

/// The lines of `typed` as a program reading a pipe without a line editor gets them (`sh`,
/// `bash` without `-i`): ended by newlines only, every other character (a carriage return,
/// Ctrl-U, a backspace) a character of the line; a backslash before a newline, or quotes left
/// open in a `shell`, join two.
fn piped_lines(typed: &str, shell: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut push = |line: &mut String| {
        let text = line.trim_matches([' ', '\t']).to_owned();
        if !text.is_empty() {
            lines.push(Line {
                edited: text.clone(),
                typed: text,
                plain: true,
                unresolved: false,
                raw: line.clone(),
            });
        }
        line.clear();
    };
    for c in typed.chars() {
        match c {
            '\n' if continues_line(&line) => {
                line.pop();
            }
            '\n' if !(shell && leaves_a_quote_open(&line)) => push(&mut line),
            c => line.push(c),
        }
    }
    push(&mut line);
    lines
}

/// What typing `typed` into a session running `command` runs, as the rules read it: its lines as
/// a terminal's line editor leaves them (backspaces and line kills applied, backslash-newlines
/// joined), one per line; and whether keys or text whose effect cannot be known (cursor,
/// history, completion: see [`unknowable`]) are in it.
pub(crate) fn edited_lines(typing: &Typing<'_>) -> (String, bool) {
    let (reader, _, shell_like) = typing.readers();
    let shell = reader == Reader::Shell;
    let lines = lines(typing.typed, shell);
    // Into a pipe, a program without a line editor reads other lines where the text holds
    // what one would edit (`\r`, a backspace): a hook cannot be shown one command then.
    let piped_differ = !typing.terminal
        && piped_lines(typing.typed, shell)
            .iter()
            .map(|l| l.edited.as_str())
            .ne(lines.iter().map(|l| l.edited.as_str()));
    let unresolved = typing.keys_changed && reader != Reader::Other
        || piped_differ
        || lines.iter().any(|line| {
            line.unresolved || unknowable(line, reader) || shell_like && unknowable(line, Reader::Shell)
        });
    (lines.into_iter().map(|line| line.edited).collect::<Vec<_>>().join("\n"), unresolved)
}

/// The string literals of a line of code (`'...'`, `"..."`, `` `...` ``), backslash escapes
/// kept as written; an unterminated one runs to the end of the line.
fn quoted(line: &str) -> Vec<String> {
    let mut strings = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut string = String::new();
        while let Some(next) = chars.next() {
            match next {
                '\\' => string.extend(chars.next()),
                close if close == c => break,
                other => string.push(other),
            }
        }
        if !string.trim().is_empty() {
            strings.push(string);
        }
    }
    strings
}

/// The strictest verdict; among equals, the first.
fn strictest(verdicts: Vec<Verdict>) -> Option<Verdict> {
    let mut best: Option<Verdict> = None;
    for verdict in verdicts {
        if best.as_ref().is_none_or(|b| verdict.action > b.action) {
            best = Some(verdict);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ToolCatalog;

    fn edited(command: &str, typed: &str) -> (String, bool) {
        edited_lines(&Typing {
            command,
            typed,
            readers: &[],
            keys_changed: false,
            terminal: true,
            busy: false,
        })
    }

    #[test]
    fn shells_interpreters_and_the_rest() {
        for shell in ["bash", "sh", "/bin/bash --norc -i", "zsh -l", "dash"] {
            assert_eq!(reader(shell), Reader::Shell, "{shell}");
        }
        for interpreter in [
            "python3",
            "python3.12 -i",
            "/usr/local/bin/python3.12",
            "PYTHONPATH=. python3 -q",
            "cd src && node",
            "cat | python3",
            "env -i perl",
            "ruby2.7",
            "pypy3",
            "luajit-2.1",
            "bash -c 'read x; echo $x'",
            "while read -r l; do eval \"$l\"; done",
            "$SHELL",
            "/usr/bin/pyth*",
            "sudo -i",
            "ssh build-host",
            "xargs -I{} sh -c {}",
            "py\"\"thon3",
            "p\\ython3",
        ] {
            assert_eq!(reader(interpreter), Reader::Interpreter, "{interpreter}");
        }
        for other in ["read -r answer; echo got it", "cat > notes.txt", "sleep 300", "sort -u", "grep -c x"] {
            assert_eq!(reader(other), Reader::Other, "{other}");
        }
    }

    #[test]
    fn an_interpreters_string_literals_are_read_as_command_lines() {
        assert_eq!(quoted("import os; os.system('rm -rf x')"), ["rm -rf x"]);
        assert_eq!(quoted(r#"run("a \"b\"", `c`) 'open"#), [r#"a "b""#, "c", "open"]);
        assert_eq!(quoted("print(1) # '' \"  \""), Vec::<String>::new());
    }

    #[test]
    fn lines_as_a_line_editor_and_a_pipe_see_them() {
        let lines = lines("rm -rg\u{7f}f x\r\nls\u{15}pwd\n\u{1b}[A\n", true);
        let shown: Vec<(&str, &str, bool, bool)> =
            lines.iter().map(|l| (l.edited.as_str(), l.typed.as_str(), l.plain, l.unresolved)).collect();
        assert_eq!(
            shown,
            [
                ("rm -rf x", "rm -rgf x", false, false),
                ("pwd", "lspwd", false, false),
                ("[A", "[A", false, true)
            ]
        );
    }

    #[test]
    fn a_backslash_at_a_lines_end_joins_the_next_line_to_it() {
        let joined = |typed: &str| lines(typed, true).into_iter().map(|l| l.edited).collect::<Vec<_>>();
        assert_eq!(joined("r\\\nm -rf x\n"), ["rm -rf x"]);
        assert_eq!(joined("r\\\rm -rf x\r"), ["rm -rf x"]);
        assert_eq!(joined("echo a \\\\\nrm -rf x\n"), ["echo a \\\\", "rm -rf x"]);
        // A backslash typed then erased does not join.
        assert_eq!(joined("ls \\\u{7f}\nrm x\n"), ["ls", "rm x"]);
        // Nor does one in a comment, which the line's end ends.
        assert_eq!(joined("#\\\nrm v1\n"), ["#\\", "rm v1"]);
        assert_eq!(joined("echo hi # see \\\nrm v2\n"), ["echo hi # see \\", "rm v2"]);
        assert_eq!(joined("echo '#' \\\nrm v3\n"), ["echo '#' rm v3"]);
        assert_eq!(joined("echo a#\\\nb\n"), ["echo a#b"]);
        // Ctrl-D ends the input at a line's start only; elsewhere it is a key of the line
        // editor's, and an erase key after a character that is not ASCII (a combining accent
        // goes with the letter before it) leaves a line that cannot be known.
        assert!(edited("bash", "{ r\u{4}m v2; }\n").1);
        assert!(edited("bash", "#\u{301}\u{7f}rm v1\n").1);
        assert!(!edited("bash", "\u{4}").1);
        assert!(!edited("bash", "echo é\n").1);
        assert_eq!(edited("bash", "r\\\nm -rX\u{7f}f x\n"), ("rm -rf x".to_owned(), false));
        assert!(edited("bash", "rm\u{1b}[D x\n").1);
        // History expansion and completion in a shell; not in what only reads lines.
        for typed in ["^echo^rm\n", "!!:1-3\n", "echo !$\n", "rm -r\t x\n", "\"!-2\"\n"] {
            assert!(edited("bash", typed).1, "{typed:?}");
            assert!(!edited("cat", typed).1, "{typed:?}");
        }
        for typed in
            ["echo 'hi!'\n", "test a != b\n", "echo done!\n", "echo \\!x\n", "ls -la\n", "cd src && make\n"]
        {
            assert!(!edited("bash", typed).1, "{typed:?}");
        }
        // Lines that change what later lines or keys run.
        for typed in [
            "fc -s echo=\n",
            "history -s rm -rf x\n",
            "bind '\"Q\": \"rm -rf x\\n\"'\n",
            "bind -x '\"Q\": rm -rf x'\n",
            "export PROMPT_COMMAND='rm -rf x'\n",
            "histchars=%^\n",
            "ls; shopt -s histverify\n",
            ". ./env.sh\n",
            // Past wrappers and quoting, and variables written other ways than `NAME=`.
            "builtin fc -s \"echo \"=\n",
            "command fc -s\n",
            "time fc -s\n",
            "$'fc' -s\n",
            "$'history' -s rm -rf x\n",
            "builtin bind -x '\"Q\": rm -rf x'\n",
            "PROMPT_COMMAND[0]='rm -rf x'\n",
            "declare -n p=PROMPT_COMMAND\n",
            "declare -n p=q\n",
            "printf -v PROMPT_COMMAND 'rm -rf x'\n",
            "printf -v \"$x\" 'rm -rf x'\n",
            "read -r PROMPT_COMMAND <<< 'rm -rf x'\n",
            "mapfile -t PROMPT_COMMAND <<< x\n",
            "printf -v 'BASH_ALIASES[x]' 'rm -rf x'\n",
            "printf -v histchars '%%^'\n",
            "export ENV=./e.sh\n",
            // A `'` in double quotes hides no `!` from the expansion.
            "x=\"'\"; !echo:1-3 #'\n",
            // The shell reads the start of later lines itself, or its keys change.
            "read -n 5 junk\n",
            "read -r line\n",
            "f() { read -d ' ' x; }\n",
            "eval \"re\"\"ad -n 5 j\"\n",
            "eval $'\\x72ead -n 5 junk'\n",
            "$'\\x72ead' -n 5 junk\n",
            "$'read' -n 5 junk\n",
            "echo $(read -n 5 x)\n",
            "$'\\x73tty' kill Q\n",
            "stty kill Q\n",
            "command stty erase Q\n",
        ] {
            assert!(edited("bash", typed).1, "{typed:?}");
        }
        for typed in [
            "echo \"hi!\"\n",
            "git status\n",
            "printf '%s\\n' a\n",
            "git reset --hard\n",
            "cat README.md thread.rs\n",
            "echo \"read the docs\"\n",
            "export PATH=/x:$PATH\n",
            "echo $ENV; DEPLOY_ENV=prod make\n",
        ] {
            assert!(!edited("bash", typed).1, "{typed:?}");
        }
        // In an interpreter, leading indentation is not completion, nor `!=`.
        assert!(!edited("python3 -i", "\tif a != b: pass\n").1);
        assert!(edited("python3 -i", "os.sys\t\n").1);
    }

    fn typing<'a>(command: &'a str, typed: &'a str, readers: &'a [String]) -> Typing<'a> {
        Typing { command, typed, readers, keys_changed: false, terminal: true, busy: false }
    }

    /// What else of a session runs decides who reads what is typed, and where part of a line
    /// may be read by another program first, the rest of it is read as a command line too.
    #[test]
    fn programs_beside_the_shell_and_lines_after_the_first_are_read_from_each_character() {
        let catalog =
            ToolCatalog::new().subject("bash", Subject::Command).subject("bash_input", Subject::Input);
        let rules = Rules::builder("/w").catalog(catalog).allow("bash").deny("bash(rm:*)").build().unwrap();
        let decide = |typing: &Typing<'_>| decide_input(&rules, "bash_input", typing);
        let none: &[String] = &[];
        // A shell at its prompt: each line as it is.
        assert_eq!(decide(&typing("bash", "echo rm b1\n", none)).action, Action::Allow);
        // A program reading part of the input (`head -c 5`, a shell's `read -n 5`) may leave
        // `rm b1` to the shell.
        let head = ["head".to_owned()];
        let refused = decide(&typing("bash", "echo rm b1\n", &head));
        assert_eq!(refused.action, Action::Deny);
        assert!(
            refused.because.to_string().contains("another program of the session"),
            "{}",
            refused.because
        );
        // Another shell may have keys and start-up code of its own: as an interpreter, which
        // may read the start of a line too.
        assert_eq!(decide(&typing("bash", "echo hi\n", &["bash".to_owned()])).action, Action::Ask);
        assert_eq!(decide(&typing("bash", "echo rm b1\n", &["bash".to_owned()])).action, Action::Deny);
        assert_eq!(reader("INPUTRC=./ir bash"), Reader::Interpreter);
        assert_eq!(reader("bash --rcfile=./rc"), Reader::Interpreter);
        assert_eq!(reader("TERM=dumb bash"), Reader::Shell);
        assert_eq!(decide(&typing("bash", "y\n", &head)).action, Action::Allow);
        // After another line of the same call.
        let after = decide(&typing("bash", "head -c 5\necho rm b1\n", none));
        assert_eq!(after.action, Action::Deny);
        assert!(after.because.to_string().contains("in a call of its own"), "{}", after.because);
        // Whatever the line before runs: a function typed earlier (`cd() { head -c 5; }`) may
        // make `cd` read the next line.
        assert_eq!(decide(&typing("bash", "cd src\necho rm b1\n", none)).action, Action::Deny);
        assert_eq!(decide(&typing("bash", "cd src\ngit status\n", none)).action, Action::Allow);
        // A cut inside quotes leaves them open: not a refusal by itself.
        assert_eq!(decide(&typing("bash", "cd src\ngit commit -m 'a b'\n", none)).action, Action::Allow);
        // An interpreter started in the shell reads the lines: its string literals count.
        let python = ["python3.11".to_owned()];
        assert_eq!(
            decide(&typing("bash", "import os; os.system(\"rm v1\")\n", &python)).action,
            Action::Deny
        );
        assert_eq!(decide(&typing("bash", "print(1)\n", &python)).action, Action::Ask);
        // A program that could not be told counts as an interpreter.
        assert_eq!(decide(&typing("bash", "print(1)\n", &[String::new()])).action, Action::Ask);
        // Changed keys: what a line becomes cannot be known.
        let keys = Typing { keys_changed: true, ..typing("bash", "echo xQrm v1\n", none) };
        assert_eq!(decide(&keys).action, Action::Deny);
        assert!(edited_lines(&keys).1);
        // A line ended inside quotes goes on in the next, as the shell reads it.
        assert_eq!(decide(&typing("bash", "git commit -m 'first\nsecond'\n", none)).action, Action::Allow);
        assert_eq!(decide(&typing("bash", "echo \"a\n\"; rm v\n", none)).action, Action::Deny);
        assert_eq!(decide(&typing("bash", "echo $'\\''\nrm v\n", none)).action, Action::Deny);
        let piped = Typing { terminal: false, ..typing("bash", "echo 'a\nb' # it's\n", none) };
        assert_eq!(decide(&piped).action, Action::Allow);
        // A shell behind `exec` reads as an interpreter, and its lines as a shell's too.
        let exec = typing("exec bash", "read -n 5 x\necho rm v1\n", none);
        assert_eq!(decide(&exec).action, Action::Deny);
        assert!(edited_lines(&typing("bash -O extglob", "!-1\n", none)).1);
        // A line too long to read from each character counts as matching.
        let long = format!("cd src\necho {}\n", "a".repeat(MAX_SUFFIXED));
        assert_eq!(decide(&typing("bash", &long, none)).action, Action::Deny);
    }
}
