//! A simple command's runs: past keywords and assignments to its program, through wrappers
//! (`env`, `sudo`, `xargs`, ...), runners and `bash -c` strings.

use super::super::options::{Spec, scan};
use super::{Lexer, MAX_RUNNER_WORDS, Run, Seen, UNKNOWN, Word, base_name, is_assignment, line};

/// Keywords that only introduce or end a command.
const LEADING: &[&str] =
    &["if", "then", "elif", "else", "fi", "while", "until", "do", "done", "esac", "!", "{", "}", "]]"];

/// A simple command's runs: past keywords and assignments, to the program and through wrappers.
pub(super) fn command(words: &[Word], depth: usize, seen: &mut Seen) {
    let mut at = 0;
    while let Some(word) = words.get(at) {
        let text = word.text.as_str();
        if LEADING.contains(&text) {
            at += 1;
        } else if text == "time" {
            at += 1;
            while words.get(at).is_some_and(|w| w.text == "-p" || w.text == "--") {
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
            // Words, not a program (their substitutions were parsed already); in `[[ ]]` a
            // quoted `'a[$(cmd)]'` is evaluated (`-eq`, `-v`).
            if words[at..].iter().any(|w| subscript_with_command(&w.text)) {
                seen.opaque.get_or_insert(SUBSCRIPT);
            }
            // `for PS4 in '$(cmd)'` assigns the loop's variable.
            if matches!(text, "for" | "select")
                && let Some(name) = words.get(at + 1)
            {
                written(name, seen);
            }
            return;
        } else if is_assignment(text) && !word.quoted_name {
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
    // Readline's key bindings, which can type commands (`"q": "rm -rf x"`).
    "INPUTRC",
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
    // Prompt strings are expanded with command substitution (`PS4` by `set -x`, `${X@P}`).
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    // An interactive shell expands the mail message (`MAILPATH='f?$(cmd)'`) before a prompt.
    "MAILPATH",
];

/// Why text holding an array subscript with a command makes a line opaque.
pub(super) const SUBSCRIPT: &str =
    "text bash may evaluate as an array subscript holding a command (`a[$(...)]`)";

/// Whether `text` holds an array subscript with a command in it (`a[$(cmd)]`): bash runs it
/// where the text is taken as a variable's name (arithmetic on a variable holding it, `test -v`,
/// `printf -v`, `read`, `declare`), even when it was quoted.
pub(super) fn subscript_with_command(text: &str) -> bool {
    // A part not known (`"${y:-a[}"'$(cmd)]'`) may be the `[`.
    // `${y@P}` expands `y` as a prompt, command substitutions too.
    text.split_once(['[', UNKNOWN])
        .is_some_and(|(_, rest)| rest.contains("$(") || rest.contains('`') || rest.contains("@P"))
}

/// An assignment before a command: its value is parsed when the variable names a command, and
/// a variable that loads code makes the line opaque.
fn assignment(word: &Word, depth: usize, seen: &mut Seen) {
    if subscript_with_command(&word.text) {
        seen.opaque.get_or_insert(SUBSCRIPT);
    }
    let Some((name, value)) = word.text.split_once('=') else { return };
    let name = name.trim_end_matches('+');
    // `PS4[0]=` writes `PS4` itself.
    let name = name.split_once('[').map_or(name, |(base, _)| base);
    // `declare P{S,}4=...` sets `PS4`: a name that brace expansion or an expansion makes may
    // be any variable.
    if name.contains(['{', UNKNOWN]) {
        seen.opaque.get_or_insert("a variable whose name an expansion makes (`declare P{S,}4=...`)");
        return;
    }
    // `BASH_ALIASES[r]=rm` defines an alias, `BASH_CMDS[r]=/bin/rm` a hashed command.
    if name.starts_with("BASH_ALIASES") || name.starts_with("BASH_CMDS") {
        seen.opaque.get_or_insert("`BASH_ALIASES` or `BASH_CMDS` (a command under another name)");
    } else if CODE_VARIABLES.contains(&name) {
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

/// A variable `name` is written (by `read`, `printf -v`, a loop, a nameref) with a value the
/// rules do not see: one that makes programs run or load code, or one whose name an expansion
/// or a glob makes (`PROMPT_COMMA[N]D`), makes the line opaque.
fn written(name: &Word, seen: &mut Seen) {
    let text = name.text.trim_end_matches('+');
    let base = text.split_once('[').map_or(text, |(base, _)| base);
    if !name.resolved() || name.glob || base.contains('{') {
        seen.opaque.get_or_insert("a variable whose name an expansion makes (`printf -v PS[4]`)");
    } else if CODE_VARIABLES.contains(&base)
        || COMMAND_VARIABLES.contains(&base)
        || base.starts_with("GIT_CONFIG_VALUE_")
        || matches!(base, "BASH_ALIASES" | "BASH_CMDS")
    {
        seen.opaque.get_or_insert(
            "a variable that makes programs run or load code, written with a value the rules do not see \
             (`read PS4`, `printf -v PS4`, a nameref)",
        );
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
    // `setarch` and its names for each architecture (util-linux).
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "uname26",
    // Others that run the command they are given.
    "sg",
    "newgrp",
    "capsh",
    "perf",
    "gdb",
    "lldb",
    "ssh-agent",
    "start-stop-daemon",
    "dbus-run-session",
    "xvfb-run",
    "chpst",
    "daemonize",
];

/// The dynamic loader, which runs the program it is given (`/lib64/ld-linux-x86-64.so.2
/// /usr/bin/curl`): `ld.so`, `ld-linux*.so.N`, `ld-musl-*.so.N`.
fn loader(program: &str) -> bool {
    program == "ld.so" || (program.starts_with("ld-") && program.contains(".so"))
}

/// Shells: `-c STRING` is a command line; a script file or standard input is opaque.
const SHELLS: &[&str] =
    &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "posh", "csh", "tcsh"];

fn run(words: &[Word], depth: usize, seen: &mut Seen) {
    let Some(first) = words.first() else { return };
    let args = words[1..].to_vec();
    // A glob names whatever it matches when the command runs (`/bin/r[m]`).
    if !first.resolved() || first.glob {
        seen.runs.push(Run { program: None, args });
        return;
    }
    if words.iter().any(|w| subscript_with_command(&w.text)) {
        seen.opaque.get_or_insert(SUBSCRIPT);
    }
    let program = base_name(&first.text).to_owned();
    seen.runs.push(Run { program: Some(program.clone()), args: args.clone() });
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    match program.as_str() {
        "eval" => {
            if args.iter().all(Word::resolved) {
                // `eval -- 'cmd'`: bash takes `--` as the end of its options.
                let text = texts.strip_prefix(&["--".to_owned()][..]).unwrap_or(&texts);
                line(&text.join(" "), depth + 1, seen);
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
        "set"
            if args.iter().enumerate().any(|(at, w)| {
                w.text.strip_prefix('-').is_some_and(|cluster| keyword_option(cluster, args.get(at + 1)))
            }) =>
        {
            seen.opaque.get_or_insert(KEYWORD);
        }
        "shopt" if texts.iter().any(|t| t == "expand_aliases") => {
            seen.opaque.get_or_insert("`shopt -s expand_aliases` (commands under other names)");
        }
        // Assignments made by builtins are seen as those before a command are.
        "export" | "declare" | "typeset" | "readonly" | "local" => {
            // A nameref (`-n`) writes, later, the variable its value names.
            let nameref = texts.iter().any(|t| t.starts_with('-') && t.contains('n'));
            for word in args.iter().filter(|w| !w.text.starts_with('-') && w.text.contains('=')) {
                // A compound value, quoted or not, is expanded by the builtin: `declare -a
                // 'x=($(cmd))'`.
                if word.text.split_once('=').is_some_and(|(_, value)| {
                    value.starts_with('(')
                        && (value.contains("$(") || value.contains('`') || value.contains("<("))
                }) {
                    seen.opaque
                        .get_or_insert("a compound value the builtin expands (`declare -a 'x=($(cmd))'`)");
                }
                assignment(word, depth, seen);
                if nameref && let Some((_, target)) = word.text.split_once('=') {
                    written(&Word { text: target.to_owned(), ..word.clone() }, seen);
                }
            }
        }
        // Callbacks bash runs: `mapfile -C`, `complete -C`, `compgen -C`; and a word list it
        // expands, command substitutions too (`compgen -W '$(cmd)'`).
        "mapfile" | "readarray" | "complete" | "compgen"
            if texts.iter().any(|t| {
                t.starts_with('-')
                    && !t.starts_with("--")
                    && (t.contains('C') || t.contains('W') && program != "mapfile")
            }) =>
        {
            seen.opaque.get_or_insert(
                "a command bash runs as a callback (`mapfile -C`, `complete -C`, `compgen -W`)",
            );
        }
        // `fc` runs commands from the history (`history -s 'cmd'; fc -s`, `fc -e 'cmd'`).
        "fc" => {
            seen.opaque.get_or_insert("`fc` (commands from the history)");
        }
        // Builtins that write the variables their words name (`read -r PS4`, `printf -v PS4`,
        // `mapfile -t PS4`, `getopts o PS4`): every word that is not an option counts.
        "read" | "mapfile" | "readarray" | "getopts" => {
            for word in &args {
                match word.text.strip_prefix('-') {
                    None => written(word, seen),
                    // In a bundle, the first option that takes a value takes the rest: `-raPS4`.
                    Some(cluster) if program == "read" && !cluster.starts_with('-') => {
                        if let Some(at) = cluster.find(|c| "adinNptu".contains(c))
                            && cluster[at..].starts_with('a')
                            && at + 1 < cluster.len()
                        {
                            written(&Word { text: cluster[at + 1..].to_owned(), ..word.clone() }, seen);
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        "printf" => {
            for (at, word) in args.iter().enumerate() {
                match word.text.strip_prefix("-v") {
                    Some("") => args.get(at + 1).into_iter().for_each(|name| written(name, seen)),
                    // `-vPS4`, the name bundled with the option.
                    Some(name) => written(&Word { text: name.to_owned(), ..word.clone() }, seen),
                    None => {}
                }
            }
        }
        "hash" if texts.iter().any(|t| t.starts_with('-') && t.contains('p')) => {
            seen.opaque.get_or_insert("`hash -p` (a command under another name)");
        }
        "trap" => {
            // `trap -- ACTION SIGNAL...`; `-l`, `-p` and `-P` only print.
            let action = match args.first() {
                Some(w) if w.text == "--" => args.get(1),
                Some(w) if w.text.starts_with('-') => None,
                first => first,
            };
            if let Some(action) = action {
                if action.resolved() {
                    line(&action.text, depth + 1, seen);
                } else {
                    seen.opaque.get_or_insert("`trap` with an action that is not known");
                }
            }
        }
        // Debuggers run the commands they are given as text (`gdb -ex 'shell id'`, `-ex '!id'`,
        // a command file), and terminal multiplexers the command lines of their sessions.
        "gdb" | "lldb"
            if texts.iter().any(|t| {
                matches!(
                    t.as_str(),
                    "-ex" | "--ex" | "-iex" | "-x" | "--command" | "-o" | "-O" | "-s" | "-S" | "--source"
                ) || t.starts_with("-eval-command")
                    || t.starts_with("--eval-command")
                    || t.starts_with("-init-eval-command")
                    || t.starts_with("--init-eval-command")
                    || t.starts_with("--one-line")
            }) =>
        {
            seen.opaque.get_or_insert("a debugger's commands (`gdb -ex 'shell ...'`)");
        }
        "tmux" | "screen" if !args.is_empty() => {
            seen.opaque.get_or_insert("a terminal multiplexer's command lines (`tmux new-session CMD`)");
        }
        "find" => {
            for (at, word) in args.iter().enumerate() {
                if matches!(word.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let end = args[at + 1..]
                        .iter()
                        .position(|w| w.text == ";" || w.text == "+")
                        .map_or(args.len(), |end| at + 1 + end);
                    let command = &args[at + 1..end];
                    match command.first() {
                        // `-exec {} \;` runs each file found: any program.
                        Some(program) if program.text.contains("{}") => {
                            seen.runs.push(Run { program: None, args: command[1..].to_vec() });
                        }
                        _ => run(command, depth, seen),
                    }
                }
            }
        }
        "git" => {
            // `-c alias.x='!cmd'`, `-c core.pager=cmd`, `--config-env`: values may be commands.
            let mut words = texts.iter();
            while let Some(text) = words.next() {
                let (value, from_environment) = match text.as_str() {
                    "-c" => (words.next().map(String::as_str), false),
                    "--config-env" => (words.next().map(String::as_str), true),
                    t => match t.strip_prefix("--config-env=") {
                        Some(value) => (Some(value), true),
                        None => (t.strip_prefix("-c"), false),
                    },
                };
                // A setting not known (`git -c "$y" x`) may be an alias or a pager.
                if value.is_some_and(|v| v.contains(UNKNOWN)) {
                    seen.opaque.get_or_insert("a git setting that is not known (`git -c \"$y\"`)");
                    continue;
                }
                let Some((key, command)) = value.and_then(|v| v.split_once('=')) else { continue };
                if from_environment {
                    // The value is the named environment variable's.
                    seen.opaque.get_or_insert("a git setting taken from the environment (`--config-env`)");
                } else if key.to_ascii_lowercase().starts_with("alias.") && !command.starts_with('!') {
                    // `alias.p=push`: a git subcommand under another name.
                    seen.opaque.get_or_insert("a git alias of a subcommand (`-c alias.p=push`)");
                } else {
                    line(command.trim_start_matches('!'), depth + 1, seen);
                }
            }
        }
        name if SHELLS.contains(&name) => shell(&args, depth, seen),
        name if RUNNERS.contains(&name) || loader(name) => any_word_runs(&args, depth, seen),
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
            if keyword_option(cluster, args.get(at + 1)) {
                seen.opaque.get_or_insert(KEYWORD);
                return;
            }
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

/// Why `set -k` makes a line opaque.
const KEYWORD: &str = "`set -k` or `set -H` (a `NAME=value` word anywhere is an assignment: `git fetch \
                       GIT_SSH_COMMAND=...`; a history expansion runs an earlier line)";

/// Whether the option cluster `cluster` (after its `-`) of `set` or a shell, followed by `next`,
/// turns on `keyword` (`-k`, `-o keyword`): every `NAME=value` word of a command is then an
/// assignment to its environment, wherever it stands; or history expansion (`-H`, `-o
/// histexpand`, `-o history`), with which a later line runs an earlier one (`!!:s/x/m/`).
fn keyword_option(cluster: &str, next: Option<&Word>) -> bool {
    let named = |w: &Word| matches!(w.text.as_str(), "keyword" | "histexpand" | "history") || !w.resolved();
    !cluster.starts_with('-')
        && (cluster.contains(['k', 'H']) || cluster.contains('o') && next.is_some_and(named))
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
pub(super) fn options_and_words<'a>(
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
