//! Telling a refusal by the sandbox from an ordinary failure, from what a command printed.

use std::path::{Path, PathBuf};

use crate::lexically_normal;
use crate::policy::{Network, SandboxMode, SandboxPolicy};

/// A refusal the sandbox most likely caused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Violation {
    /// A write (or a file creation, removal or rename) beneath `path`, which the policy keeps
    /// read-only.
    Write {
        /// The path the command named.
        path: PathBuf,
        /// Whether it is a protected path inside a writable root.
        protected: bool,
    },
    /// A read beneath `path`, which the policy hides ([`SandboxPolicy::unreadable`]).
    Read {
        /// The path the command named.
        path: PathBuf,
    },
    /// A network connection or socket.
    Network,
}

impl Violation {
    /// A sentence for the model: what was refused, and how to ask for more.
    pub fn explain(&self) -> String {
        match self {
            Violation::Write { path, protected: true } => format!(
                "[sandbox: writing to {} was refused: it is a protected path, kept read-only even inside the \
                 workspace. If the change is really needed, run the command again with `sandbox: \"escalated\"` \
                 and a `justification`, and the user will be asked.]",
                path.display()
            ),
            Violation::Write { path, protected: false } => format!(
                "[sandbox: writing to {} was refused: commands may only write inside the workspace and \
                 $TMPDIR (not the system's /tmp). Work inside the workspace, or run the command again with \
                 `sandbox: \"escalated\"` and a `justification` to ask the user.]",
                path.display()
            ),
            Violation::Read { path } => format!(
                "[sandbox: {} is hidden from commands by the settings (sandbox.filesystem.denyRead, or a deny \
                 rule on Read): commands see it empty or missing, so nothing of it can be read. Do not try to \
                 get around it; if it is needed, ask the user.]",
                path.display()
            ),
            Violation::Network => "[sandbox: commands may not open network connections of their own (where some \
                                   hosts are allowed, only through the proxy that HTTP_PROXY and ALL_PROXY name), \
                                   so this connection was refused. If the command needs the network, run it again \
                                   with `sandbox: \"network\"` and a `justification` to ask the user.]"
                .to_owned(),
        }
    }
}

const DENIED: &[&str] = &["Permission denied", "Read-only file system", "Operation not permitted"];
const NETWORK: &[&str] = &[
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "socket: Operation not permitted",
    "Failed to establish a new connection",
    "Connection refused",
    "PermissionError: [Errno 1] Operation not permitted",
    "PermissionError: [Errno 13] Permission denied",
    "connect: Permission denied",
    "Couldn't connect to server",
    "Name or service not known",
];

/// Finds the refusals in `output` that the policy explains: a line reporting `EACCES`, `EPERM`,
/// `EROFS` or `ENOENT` that names a path the policy hides, one reporting `EACCES`, `EPERM` or
/// `EROFS` that names a path it does not let commands write, or a refused socket. `cwd`
/// resolves relative paths. At most one violation per path.
pub fn detect(policy: &SandboxPolicy, cwd: &Path, output: &str) -> Vec<Violation> {
    let mut found: Vec<Violation> = Vec::new();
    if policy.mode == SandboxMode::Off {
        return found;
    }
    // Resolved (directories listed for patterns) only once a line reports a refusal.
    let hidden = std::cell::OnceCell::new();
    for line in output.lines() {
        let mut blamed = false;
        let missing = line.contains("No such file or directory");
        if missing || DENIED.iter().any(|d| line.contains(d)) {
            for candidate in paths_in(line) {
                let path = if candidate.is_absolute() { candidate } else { cwd.join(candidate) };
                let path = lexically_normal(&path);
                let violation = if hidden.get_or_init(|| Hidden::new(policy)).hides(&path) {
                    Violation::Read { path }
                } else if missing || policy.allows_write(&path) {
                    continue;
                } else {
                    let protected = policy.protected_paths().iter().any(|p| path.starts_with(p));
                    Violation::Write { path, protected }
                };
                if !found.contains(&violation) {
                    found.push(violation);
                }
                blamed = true;
                break;
            }
        }
        if !blamed
            && policy.network != Network::On
            && NETWORK.iter().any(|n| line.contains(n))
            && looks_like_network(line)
            && !found.contains(&Violation::Network)
        {
            found.push(Violation::Network);
        }
    }
    found
}

/// The policy's unreadable paths and those read back, as named and as they resolve now.
struct Hidden {
    hidden: Vec<PathBuf>,
    shown: Vec<PathBuf>,
}

impl Hidden {
    fn new(policy: &SandboxPolicy) -> Hidden {
        let both = |paths: &mut dyn Iterator<Item = &PathBuf>| -> Vec<PathBuf> {
            paths.flat_map(|p| [Some(p.clone()), std::fs::canonicalize(p).ok()]).flatten().collect()
        };
        if policy.unreadable.is_empty() {
            return Hidden { hidden: Vec::new(), shown: Vec::new() };
        }
        // A pattern matching too many entries refused the command: nothing to explain by it.
        let named = crate::unreadable::named(policy).unwrap_or_default();
        Hidden {
            hidden: both(&mut named.iter()),
            shown: both(&mut policy.readable.iter().chain(&policy.writable())),
        }
    }

    /// Whether `path` lies beneath an unreadable path and not beneath a deeper one read back;
    /// judged on the paths' text, for explaining refusals, not for enforcing.
    fn hides(&self, path: &Path) -> bool {
        let deepest = |paths: &[PathBuf]| {
            paths.iter().filter(|p| path.starts_with(p)).map(|p| p.components().count()).max()
        };
        deepest(&self.hidden).is_some_and(|hidden| deepest(&self.shown).is_none_or(|shown| shown < hidden))
    }
}

fn looks_like_network(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["connect", "socket", "resolve", "network", "host", "http", "errno"].iter().any(|w| lower.contains(w))
}

/// The path-like words of a line: quoted names first (`'x'`, `‘x’`, `"x"`), then words with a
/// slash, then the word before a colon (`bash: name: Permission denied`).
fn paths_in(line: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('‘', '’'), ('"', '"'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let word = &after[..end];
            if !word.is_empty() && !word.contains(' ') {
                out.push(PathBuf::from(word));
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for part in line.split(": ") {
        let part = part.trim();
        if !part.is_empty() && !part.contains(' ') && (part.contains('/') || part.starts_with('.')) {
            out.push(PathBuf::from(part.trim_matches(|c| c == '\'' || c == '"')));
        }
    }
    let parts: Vec<&str> = line.split(": ").collect();
    if parts.len() >= 3 {
        let word = parts[parts.len() - 2].trim();
        if !word.is_empty() && !word.contains(' ') {
            out.push(PathBuf::from(word));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> SandboxPolicy {
        let _ = std::fs::create_dir_all(std::env::temp_dir().join("ws-violation"));
        SandboxPolicy::workspace_write(std::env::temp_dir().join("ws-violation"))
            .with_fallback(crate::Fallback::BestEffort)
    }

    #[test]
    fn shell_and_coreutils_messages_name_the_path() {
        let p = policy();
        let cwd = std::env::temp_dir().join("ws-violation");
        for line in [
            "bash: line 1: /etc/evil: Permission denied",
            "cp: cannot create regular file '/etc/evil': Permission denied",
            "touch: cannot touch '/etc/evil': Permission denied",
            "mv: cannot move 'a' to '/etc/evil': Permission denied",
            "PermissionError: [Errno 13] Permission denied: '/etc/evil'",
        ] {
            assert_eq!(
                detect(&p, &cwd, line),
                vec![Violation::Write { path: PathBuf::from("/etc/evil"), protected: false }],
                "{line}"
            );
        }
    }

    #[test]
    fn relative_paths_and_protected_paths() {
        let p = policy();
        let cwd = std::env::temp_dir().join("ws-violation");
        let out = detect(&p, &cwd, "touch: cannot touch '.git/hooks/x': Read-only file system");
        assert_eq!(out, vec![Violation::Write { path: cwd.join(".git/hooks/x"), protected: true }]);
    }

    #[test]
    fn writable_paths_and_other_failures_are_not_blamed_on_the_sandbox() {
        let p = policy();
        let cwd = std::env::temp_dir().join("ws-violation");
        assert_eq!(detect(&p, &cwd, "cat: missing.txt: No such file or directory"), vec![]);
        assert_eq!(
            detect(&SandboxPolicy::off(), &cwd, "touch: cannot touch '/etc/x': Permission denied"),
            vec![]
        );
    }

    #[test]
    fn what_the_policy_hides_is_said_to_be_hidden_not_unwritable() {
        let cwd = std::env::temp_dir().join("ws-violation");
        let home = std::env::temp_dir().join("home-violation");
        let p = policy().with_unreadable(&home).with_readable(home.join("src"));
        for (line, path) in [
            (format!("cat: {}/.ssh/id: No such file or directory", home.display()), home.join(".ssh/id")),
            (
                format!("ls: cannot open directory '{}/.ssh': Permission denied", home.display()),
                home.join(".ssh"),
            ),
        ] {
            assert_eq!(detect(&p, &cwd, &line), vec![Violation::Read { path }], "{line}");
        }
        // Read back, or missing elsewhere: not the sandbox's doing.
        let line = format!("cat: {}/src/x: No such file or directory", home.display());
        assert_eq!(detect(&p, &cwd, &line), vec![]);
        assert_eq!(detect(&p, &cwd, "cat: /etc/nothing: No such file or directory"), vec![]);
        assert!(Violation::Read { path: home.join(".ssh") }.explain().contains("hidden from commands"));
    }

    #[test]
    fn refused_sockets() {
        let p = policy();
        let cwd = std::env::temp_dir();
        assert_eq!(detect(&p, &cwd, "curl: (7) Couldn't connect to server"), vec![Violation::Network]);
        assert_eq!(
            detect(&p, &cwd, "PermissionError: [Errno 1] Operation not permitted"),
            vec![Violation::Network]
        );
    }
}
