//! What a command line will run, as far as a lenient parser can tell: every simple command in
//! it (inside keywords, groups, substitutions and `bash -c` strings), seen through wrappers
//! (`env`, `sudo`, `xargs`, ...), with the parts it cannot resolve marked. Deny and ask rules
//! match against this; allow rules never do.

mod lexer;
mod runs;
mod shape;

use lexer::Lexer;
use runs::command;
pub(crate) use shape::Shape;

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
    /// A quote, an escape or an expansion comes before its first `=`: bash does not take it as
    /// an assignment (`'x=/usr/bin/rm' v` runs a program).
    pub(crate) quoted_name: bool,
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
        // An option spelled with a glob (`-[q-s]f`) is whatever it matches when the command runs.
        self.args.iter().any(|word| !word.resolved() || word.glob && word.text.starts_with('-'))
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
        assert!(see("INPUTRC=./keys bash").opaque.is_some());
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

    /// What bash runs that a reading of the line could miss: quoting inside double quotes,
    /// globs in a program or option, assignments made by builtins, callbacks and prompt
    /// strings, array subscripts, aliases and git's subcommand aliases.
    #[test]
    fn what_bash_may_run_besides_the_plain_commands_is_seen() {
        // `"$'"` is the text `$'`: the `;` after it separates commands.
        assert_eq!(programs("echo \"$'\" ; rm x ; echo '\" \\'"), ["echo", "rm", "echo"]);
        assert_eq!(see("/bin/r[m] x").runs[0].program, None);
        assert_eq!(see("/usr/bin/[r]m x").runs[0].program, None);
        assert!(see("rm -[q-s]f d").runs[0].has_unknown_args());
        assert!(!see("ls *.txt").runs[0].has_unknown_args());
        for line in [
            "export BASH_ENV=s.sh; bash -c true",
            "readonly PATH=./bin:/usr/bin; ls",
            "PS4='$(rm x)'; set -x; :",
            "X='$(rm x)'; echo ${X@P}",
            "X='a[$(rm x)]'; echo $((X))",
            "test -v 'a[$(rm x)]'",
            "mapfile -C 'rm x;:' -c 1 a <<< 1",
            "complete -C 'rm x' foo",
            "shopt -s expand_aliases\nr x",
            "BASH_ALIASES[r]=rm",
            "git -c alias.p=push p origin",
            "git --config-env=alias.p=HOME p",
        ] {
            assert!(see(line).opaque.is_some(), "{line}");
        }
        assert_eq!(programs("declare -x EDITOR='rm x;:'; git commit --amend"), ["declare", "rm", ":", "git"]);
        assert_eq!(
            programs("export GIT_EXTERNAL_DIFF='rm x; true #'; git diff a"),
            ["export", "rm", "true", "git"]
        );
        assert_eq!(programs("trap -- 'rm x' EXIT"), ["trap", "rm"]);
        assert_eq!(programs("echo ${ rm x; } ${| rm y; }"), ["rm", "rm", "echo"]);
        assert!(see("trap -p").opaque.is_none());
        assert!(see("git -c core.pager=less log").opaque.is_none());
        assert_eq!(programs("git -c alias.x='!rm -rf y' x"), ["git", "rm"]);
    }

    /// Where a substitution ends is bash's grammar, not a count of parentheses: a `case`
    /// pattern's `)` and a comment do not end it, and `$((` is arithmetic only when it closes
    /// with `))`. Subscripts holding a command are looked for in every word.
    #[test]
    fn the_end_of_a_substitution_and_words_bash_evaluates_are_not_misread() {
        for line in [
            "echo \"$(case x in x) rm victim;; esac)\"",
            "echo $(case a in a) rm h;; esac)",
            "echo \"$(echo hi # )\nrm v9\n)\"",
            "echo \"${X:-$(case a in a) rm v10;; esac)}\"",
            "cat <(case a in a) rm x;; esac)",
            "echo \"${ echo # }\nrm x; }\"",
            "A=( $(case a in a) rm x;; esac) )",
            "[[ 'a[$(rm v3)]' -eq 0 ]]; echo done",
            "read x <<< 'a[$(rm v6)]'; (( x ))",
            "set -k; git clone -q ssh://h/r c GIT_SSH_COMMAND='rm v7'",
            "set -o keyword; git fetch GIT_SSH_COMMAND='rm v7'",
            "set -ek; true",
            "bash -kc 'git fetch GIT_SSH_COMMAND=\"rm x\"'",
            "declare P{S,}4='$(rm v)'; set -x; :",
            "export GIT_EXTERNAL_D{IFF,}='rm v'; git diff a b",
            "declare -x BASH_E{NV,}=./e; bash -c :",
            "y='alias.x=!rm v'; git -c \"$y\" x",
            "git -c \"${y:-alias.x=!rm v}\" x",
            "x=${y:-a[\\$(rm v)]}; (( x ))",
            "x=\"${y:-a[}\"'$(rm v)]'; (( x ))",
            "x=\"${y:-a[\\`rm v\\`]}\"; (( x ))",
            "read x <<< \"${y:-a[\\$(rm v)]}\"; (( x ))",
            "declare -n p=PS4; p='$(rm v1) '; set -x; :",
            "x='$(rm v2)'; PS4[0]='${x@P} '; set -x; :",
            "printf -v PS4 '%s' '$(rm v1) '; set -x; :",
            "printf -vPS4 '%s' '$(rm v1) '; set -x; :",
            "read -raPS4 <<< '$(rm v2)'; set -x; :",
            "read -r PS4 <<< '$(rm v2)'; set -x; :",
            "mapfile -t PS4 <<< '$(rm v3)'; set -x; :",
            "for PS4 in '$(rm v1) '; do set -x; :; done",
            "f() { local -n r=PS4; r='$(rm v2) '; }; f; set -x; :",
            "IFS=: read -ra PS4 <<< '$(rm v3) '; set -x; :",
            "printf -v PROMPT_COMMA[N]D %s 'rm v1'",
            "read -r \"$x\"",
            "compgen -W '$(rm v)' x",
            "history -s 'rm v'; fc -s",
            "set -H -o history\nrx v\n!!:s/x/m/",
            "y='$(rm v)'; a='x[${y@P}]'; (( a ))",
            "declare -a 'x=($(rm v))'",
            "declare -A 'm=($(rm v) 1)'",
            "MAILCHECK=0 MAILPATH='mbox?$(rm v)'",
            &format!("echo {}x{}", "${a:-".repeat(3000), "}".repeat(3000)),
        ] {
            assert!(see(line).opaque.is_some(), "{line}");
        }
        // `$'\''` is a quote: the substitution, array or expansion ends where bash ends it.
        for line in [
            "echo \"$(echo $'\\'' )\" ; rm v1 ; \"\\')\"",
            "A=( $'\\'' ) ; rm v1 ; : ' ) #'",
            "echo ${x:-$'\\''} ; rm v1 ; : '}' #'",
        ] {
            assert!(programs(line).contains(&"rm".to_owned()), "{line}");
        }
        // `$((cmd) ; rm x)` is a command substitution of a subshell, then `rm`.
        assert_eq!(programs("echo \"$((echo hi) ; rm v2)\""), ["echo", "rm", "echo"]);
        assert_eq!(programs("echo $(( (1 + 2) * 3 ))"), ["echo"]);
        assert_eq!(programs("ls @($(rm x))"), ["rm", "ls"]);
        assert_eq!(programs("echo $(echo a#b) ${#X}"), ["echo", "echo"]);
        assert!(see("set -e -o pipefail; set -o; set +x").opaque.is_none());
        assert!(see("[[ -n $x && a -eq 1 ]]").opaque.is_none());
        assert_eq!(programs("eval -- 'rm v'"), ["eval", "rm"]);
        assert_eq!(programs("(( a[$(rm v)] ))"), ["rm"]);
        assert_eq!(programs("time -p -- rm v"), ["rm"]);
        // A quoted or escaped `NAME=` is a program's name, not an assignment.
        assert_eq!(programs("'x=/usr/bin/rm' v"), ["rm"]);
        assert_eq!(programs("\\x=/bin/rm v"), ["rm"]);
        // Arithmetic and a descriptor variable are not what they look like elsewhere.
        assert_eq!(programs("x=1; (( y = x << 2 )); echo $y"), ["echo"]);
        assert_eq!(programs("exec {fd}>/dev/null; echo ok"), ["exec", "echo"]);
        assert_eq!(programs("echo \"${HOME:+home is [$(whoami)]}\""), ["whoami", "echo"]);
        // A lone `[` is the `test` program, not a glob; words a builtin writes are plain names.
        assert_eq!(programs("[ -f list.txt ] && echo yes"), ["[", "echo"]);
        assert!(see("read -r line; printf -v out '%s' x; for f in a b; do echo $f; done").opaque.is_none());
    }
}
