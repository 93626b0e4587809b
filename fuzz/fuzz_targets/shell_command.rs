//! The shell command readers behind the permission rules (`permissions::shell`): the strict
//! parser of [`classify`] (`Bash(read-only)`) and the lenient one that deny and ask patterns see
//! through, reached through a [`Policy`] deciding a `bash` command.
//!
//! The command line is either raw text or assembled from the shell's own pieces (quotes,
//! `$(...)`, backticks, `${...}`, `;`, `&&`, `||`, `|`, `&`, redirections, here-documents,
//! comments, keywords, wrappers such as `sudo`, `env` and `bash -c`, option spellings such as
//! `--force` and `-rf`, assignments, backslash escapes, CRLF) and the names of read-only
//! programs, so that the fuzzer reaches both parsers' corners. Checks:
//!
//! - no panic, and each input decided in bounded time (asserted: under 5 s for the whole input,
//!   far above the microseconds a line takes, so that only a hang or a blow-up trips it);
//! - [`classify`] is deterministic;
//! - a line classified read-only stops being read-only when `rm -rf x` is joined to it (by `;`,
//!   a newline, `&&`, `||`, `|`, or before it), and the rule `deny Bash(rm:*)` refuses every such
//!   line, and lines that run `rm` through a wrapper, a `-c` string or a substitution after it;
//!   the rule `deny Read(./.env)` refuses it followed by `; cat .env`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tool_runtime::hooks::{PermissionDecision, PermissionHook, PermissionKind, PermissionRequest};
use tool_runtime::permissions::shell::classify;
use tool_runtime::permissions::{Policy, Rules};

const PIECES: &[&str] = &[
    " ",
    " ",
    " ",
    "\n",
    "\r\n",
    "\t",
    ";",
    "&&",
    "||",
    "|",
    "|&",
    "&",
    "(",
    ")",
    "{ ",
    " }",
    "'",
    "\"",
    "`",
    "$(",
    "$((",
    "))",
    "${",
    "}",
    "$'",
    "$X",
    "${X:-",
    "<(",
    ">(",
    "\\",
    "\\\n",
    "\\ ",
    "#",
    "!",
    "=",
    "X=1 ",
    "X+=1 ",
    "PAGER=",
    ">",
    ">>",
    "<",
    "2>&1",
    "&>",
    "<<<",
    "<<EOF\n",
    "<<-'EOF'\n",
    "\nEOF\n",
    "*",
    "?",
    "[a]",
    "~",
    "--",
    "-",
    "-r",
    "-f",
    "-rf",
    "-fr",
    "-R",
    "--force",
    "--recursive",
    "--recur",
    "-n5",
    "-n 5",
    "--lines=5",
    "-i",
    "-e",
    "-c",
    "-exec",
    " {} \\;",
    "-delete",
    "--output=o",
    "-o",
    "-O",
    "--pre=x",
    "cat",
    "ls",
    "echo",
    "grep",
    "rg",
    "head",
    "tail",
    "wc",
    "sort",
    "find",
    "git",
    "git status",
    "git log",
    "git diff",
    "git -c x=y",
    "git -C d",
    "git branch",
    "git config",
    "date",
    "printf",
    "tree",
    "cd",
    "rm",
    "/bin/rm",
    "\\rm",
    "mv",
    "cp",
    "chmod",
    "sed -i",
    "sudo",
    "env",
    "env -S",
    "nice",
    "timeout 5",
    "xargs",
    "command",
    "exec",
    "eval",
    "bash -c",
    "sh -c",
    "source",
    ".",
    "if",
    "then",
    "fi",
    "for",
    "do",
    "done",
    "case",
    "esac",
    "in",
    "while",
    "time",
    "coproc",
    "function f",
    "f()",
    "alias",
    "a.txt",
    ".env",
    "x",
    "é",
    "\u{0}",
    "\u{201c}",
];

/// `rm` joined after a read-only line in ways it still runs; the rule `deny Bash(rm:*)` must see
/// each.
const RM_AFTER: &[&str] = &[
    "; rm -rf x",
    "\nrm -rf x",
    " && rm -rf x",
    " || rm -rf x",
    " | rm -rf x",
    "; /bin/rm -fr x",
    "; \\rm --recursive --force x",
    "; sudo rm x",
    "; env X=1 rm x",
    "; command rm x",
    "; bash -c 'rm -rf x'",
    "; echo $(rm x)",
    "; echo `rm x`",
    "; xargs rm",
    "; if true; then rm x; fi",
];

fn command(u: &mut Unstructured<'_>) -> Result<String> {
    if u.arbitrary()? {
        return u.arbitrary();
    }
    let mut text = String::new();
    for _ in 0..u.int_in_range(0..=30)? {
        if u.ratio(1, 8)? {
            text.push_str(u.arbitrary::<&str>()?);
        } else {
            text.push_str(u.choose(PIECES)?);
        }
    }
    Ok(text)
}

struct Setup {
    policy: Policy,
    runtime: tokio::runtime::Runtime,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        // A root with the file the Read rule names; never written to.
        let root: PathBuf = std::env::temp_dir().join(format!("tool-fuzz-shell-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("root");
        std::fs::write(root.join(".env"), "SECRET=1\n").expect(".env");
        let rules = Rules::builder(&root)
            .catalog(tools_std::permission_catalog())
            .deny("Bash(rm:*)")
            .deny("Read(./.env)")
            .ask("Bash(git push:*)")
            .allow("Bash(read-only)")
            .allow("Bash(npm test:*)")
            .build()
            .expect("rules");
        Setup {
            policy: Policy::new(rules),
            runtime: tokio::runtime::Builder::new_current_thread().build().expect("runtime"),
        }
    })
}

fn decide(s: &Setup, command: &str) -> PermissionDecision {
    let mut request = PermissionRequest::new(
        PermissionKind::Command { command: command.to_owned(), workdir: None },
        "run a command",
    );
    request.tool = "bash".to_owned();
    s.runtime.block_on(s.policy.decide(&request))
}

fn denied(s: &Setup, command: &str) -> bool {
    matches!(decide(s, command), PermissionDecision::Deny { .. })
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let s = setup();
    let line = command(u)?;
    let start = Instant::now();
    let class = classify(&line);
    assert_eq!(class, classify(&line), "classify is not deterministic for {line:?}");
    let _ = decide(s, &line);
    if class.is_read_only() {
        for after in RM_AFTER {
            let joined = format!("{line}{after}");
            assert!(!classify(&joined).is_read_only(), "read-only: {joined:?}");
            assert!(denied(s, &joined), "`deny Bash(rm:*)` let through {joined:?}");
        }
        for before in ["rm -rf x; ", "rm -rf x\n", "rm x && "] {
            let joined = format!("{before}{line}");
            assert!(!classify(&joined).is_read_only(), "read-only: {joined:?}");
            assert!(denied(s, &joined), "`deny Bash(rm:*)` let through {joined:?}");
        }
        let env = format!("{line}; cat .env");
        assert!(denied(s, &env), "`deny Read(./.env)` let through {env:?}");
    }
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?} for {line:?}");
    Ok(())
}
