//! What a sandboxed command may do: the mode, its writable and readable roots, the protected
//! paths, the network and what to do when the kernel cannot enforce it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How much a command may change, in the names codex uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read everything readable, write nothing (but terminals and `/dev/null`).
    ReadOnly,
    /// Read everything readable; write only beneath the writable roots (the workspace root, the
    /// temporary directory and the roots listed), protected paths excepted.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run with every right of the process that starts them.
    Off,
}

impl SandboxMode {
    /// The mode's name, as `--sandbox` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "off" | "danger-full-access" => Ok(SandboxMode::Off),
            other => Err(format!(
                "unknown sandbox mode `{other}`; expected one of `read-only`, `workspace-write`, `off`"
            )),
        }
    }
}

/// What a sandboxed command may reach over the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Network {
    /// No Internet sockets at all (`AF_INET`, `AF_INET6` and every other family but Unix
    /// sockets are refused); Unix sockets still work.
    #[default]
    Off,
    /// Only TCP connections to this port (a local egress proxy); binding TCP ports and UDP are
    /// refused. Needs Landlock ABI 4.
    Proxy {
        /// The proxy's port.
        port: u16,
    },
    /// Unrestricted network (an escalation the user granted).
    On,
}

/// What happens when the kernel cannot enforce the requested mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Refuse to start the command, saying what is missing and how to opt out.
    #[default]
    Refuse,
    /// Apply the layers the kernel has, and say in the report which are missing.
    BestEffort,
}

/// The paths, relative to each writable root, that stay read-only beneath it by default: git's
/// hooks and configuration (which run code at the next `git` command), shell start-up files, and
/// the configuration files of agents and MCP clients.
pub const DEFAULT_PROTECTED: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".gitmodules",
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/commands",
    ".claude/agents",
];

/// What a sandboxed command may do. Build it with [`SandboxPolicy::workspace_write`],
/// [`SandboxPolicy::read_only`] or [`SandboxPolicy::off`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// Where writes are allowed in [`SandboxMode::WorkspaceWrite`] (the workspace root first).
    pub writable_roots: Vec<PathBuf>,
    /// Whether the temporary directory (`$TMPDIR`, else `/tmp`) and `/dev/shm` are writable too
    /// in [`SandboxMode::WorkspaceWrite`].
    pub writable_temp: bool,
    /// Where reads are allowed; `None` means everywhere.
    pub readable_roots: Option<Vec<PathBuf>>,
    /// Paths that stay read-only beneath the writable roots: relative ones are taken beneath
    /// each writable root, absolute ones as they are.
    pub protected: Vec<PathBuf>,
    /// The network.
    pub network: Network,
    /// What to do when a layer is missing.
    pub fallback: Fallback,
    /// Refuse unless the kernel offers at least this Landlock ABI (for tests and strict hosts).
    pub require_landlock_abi: Option<u32>,
    /// Whether commands may bind and listen on TCP ports (the settings'
    /// `sandbox.network.allowLocalBinding`; Landlock ABI 4). Inside a network namespace of
    /// their own, they may then also connect to any port there (their own servers, the proxy),
    /// since nothing else is there; without one, connecting stays limited to the proxy's port.
    /// With the network off, Internet stream sockets are then allowed, for that.
    pub allow_local_binding: bool,
    /// Unix sockets named by path that commands may connect to (`allowUnixSockets`): enforced
    /// only on kernels with Landlock ABI 9 (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`); before that,
    /// every socket file the user may write is reachable.
    pub unix_sockets: Vec<PathBuf>,
    /// Every Unix socket (`allowAllUnixSockets`): abstract sockets of processes outside the
    /// sandbox too (which Landlock ABI 6 otherwise scopes away), and no network namespace with
    /// the network off (abstract sockets live in a network namespace).
    pub all_unix_sockets: bool,
}

impl SandboxPolicy {
    /// Writes beneath `root` (and the temporary directory), reads everywhere, network off, the
    /// [default protected paths](DEFAULT_PROTECTED) read-only.
    pub fn workspace_write(root: impl Into<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec![root.into()],
            writable_temp: true,
            readable_roots: None,
            protected: DEFAULT_PROTECTED.iter().map(PathBuf::from).collect(),
            network: Network::Off,
            fallback: Fallback::Refuse,
            require_landlock_abi: None,
            allow_local_binding: false,
            unix_sockets: Vec::new(),
            all_unix_sockets: false,
        }
    }

    /// Reads everywhere, writes nowhere, network off.
    pub fn read_only() -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            writable_roots: Vec::new(),
            ..Self::workspace_write("/")
        }
    }

    /// No sandbox.
    pub fn off() -> SandboxPolicy {
        SandboxPolicy { mode: SandboxMode::Off, ..Self::read_only() }
    }

    /// The policy of `mode` for a workspace at `root`.
    pub fn for_mode(mode: SandboxMode, root: impl Into<PathBuf>) -> SandboxPolicy {
        match mode {
            SandboxMode::ReadOnly => Self::read_only(),
            SandboxMode::WorkspaceWrite => Self::workspace_write(root),
            SandboxMode::Off => Self::off(),
        }
    }

    /// Adds a writable root.
    pub fn with_writable_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.writable_roots.push(root.into());
        self
    }

    /// Adds a protected path (relative: beneath each writable root; absolute: as is).
    pub fn with_protected(mut self, path: impl Into<PathBuf>) -> Self {
        self.protected.push(path.into());
        self
    }

    /// Sets the network.
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Sets the fallback.
    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Limits reads to these roots (and what commands need to run: `/usr`, `/lib`, `/etc`, ...
    /// must be listed too).
    pub fn with_readable_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.readable_roots = Some(roots);
        self
    }

    /// Lets commands bind and listen on TCP ports (see [`SandboxPolicy::allow_local_binding`]).
    pub fn with_local_binding(mut self, allow: bool) -> Self {
        self.allow_local_binding = allow;
        self
    }

    /// Lets commands connect to the Unix socket at `path` (see [`SandboxPolicy::unix_sockets`]).
    pub fn with_unix_socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.unix_sockets.push(path.into());
        self
    }

    /// Lets commands connect to every Unix socket (see [`SandboxPolicy::all_unix_sockets`]).
    pub fn with_all_unix_sockets(mut self, allow: bool) -> Self {
        self.all_unix_sockets = allow;
        self
    }

    /// Requires at least this Landlock ABI.
    pub fn require_landlock_abi(mut self, abi: u32) -> Self {
        self.require_landlock_abi = Some(abi);
        self
    }

    /// Whether commands are confined at all.
    pub fn is_enforced(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// The directories writable under this policy (empty when read-only or off).
    pub fn writable(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let mut roots = self.writable_roots.clone();
        if self.writable_temp {
            roots.push(std::env::temp_dir());
            roots.push(PathBuf::from("/dev/shm"));
        }
        roots.retain(|r| r.exists());
        roots
    }

    /// The protected paths beneath the writable roots, made absolute.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for p in &self.protected {
            if p.is_absolute() {
                out.push(p.clone());
            } else {
                for root in &self.writable_roots {
                    out.push(root.join(p));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Whether `path` may be written under this policy (beneath a writable root and not beneath a
    /// protected path), judged on the path's text; for explaining refusals, not for enforcing.
    pub fn allows_write(&self, path: &Path) -> bool {
        match self.mode {
            SandboxMode::Off => true,
            SandboxMode::ReadOnly => path.starts_with("/dev/null"),
            SandboxMode::WorkspaceWrite => {
                self.writable().iter().any(|r| path.starts_with(r))
                    && !self.protected_paths().iter().any(|p| path.starts_with(p))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_by_their_codex_names() {
        assert_eq!("read-only".parse(), Ok(SandboxMode::ReadOnly));
        assert_eq!("workspace-write".parse(), Ok(SandboxMode::WorkspaceWrite));
        assert_eq!("danger-full-access".parse(), Ok(SandboxMode::Off));
        assert_eq!(
            "readonly".parse::<SandboxMode>(),
            Err("unknown sandbox mode `readonly`; expected one of `read-only`, `workspace-write`, `off`"
                .into())
        );
    }

    #[test]
    fn protected_paths_are_taken_beneath_each_writable_root() {
        let policy = SandboxPolicy::workspace_write("/w")
            .with_writable_root("/x")
            .with_protected("/etc/settings.json");
        let protected = policy.protected_paths();
        assert!(protected.contains(&PathBuf::from("/w/.git/hooks")));
        assert!(protected.contains(&PathBuf::from("/x/.git/config")));
        assert!(protected.contains(&PathBuf::from("/etc/settings.json")));
        assert!(!policy.allows_write(Path::new("/w/.git/hooks/pre-commit")));
        assert!(!policy.allows_write(Path::new("/etc/passwd")));
    }
}
