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
    type Err = ParseSandboxModeError;
    fn from_str(s: &str) -> Result<Self, ParseSandboxModeError> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "off" | "danger-full-access" => Ok(SandboxMode::Off),
            other => Err(ParseSandboxModeError(other.to_owned())),
        }
    }
}

/// A sandbox mode's name that is none of them (from [`SandboxMode`]'s `FromStr`): its text
/// names it and lists the modes there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseSandboxModeError(String);

impl fmt::Display for ParseSandboxModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown sandbox mode `{}`; expected one of `read-only`, `workspace-write`, `off`", self.0)
    }
}

impl std::error::Error for ParseSandboxModeError {}

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

/// The paths, relative to each writable root, that stay read-only beneath it by default, present
/// or not: the repository's metadata (`.git` as a whole, unless
/// [git writes](SandboxPolicy::git_writes) are allowed: then [`GIT_PROTECTED`]), shell start-up
/// files, and the configuration and instructions of agents and MCP clients. The directory
/// `core.hooksPath` names and the configuration files git reads (as `git config` reports them)
/// are added where they lie inside a writable root.
pub const DEFAULT_PROTECTED: &[&str] = &[
    ".git",
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
    ".claude",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    // The project settings, instructions and skills of the other agents `tools serve` serves
    // (codex, Gemini CLI, opencode) and of Cursor: their MCP servers, hooks, plugins and
    // discovery commands run what these name, outside any sandbox, at the agent's next start.
    ".codex",
    ".agents",
    ".gemini",
    "GEMINI.md",
    ".opencode",
    "opencode.json",
    "opencode.jsonc",
    ".cursor",
    // Other agents' and editor assistants' project MCP servers, hooks and instructions (Amazon Q,
    // Kiro, Roo Code, Continue, Windsurf, Crush, Amp): read-only when present; when absent they
    // get no placeholder (each would be an empty entry of the workspace during every command).
    ".amazonq",
    ".kiro",
    ".roo",
    ".continue",
    ".windsurf",
    "crush.json",
    ".crush.json",
    "AGENT.md",
    // Editors run what these name: VS Code's tasks (`runOn: folderOpen`) and settings (the
    // interpreter, formatters), JetBrains' run configurations; ripgrep reads its options from
    // the file `RIPGREP_CONFIG_PATH` names, which may be this one.
    ".vscode",
    ".idea",
    ".zed",
    ".ripgreprc",
];

/// What stays read-only in `.git` when commands may write a repository's metadata: what git
/// reads to decide which programs to run (`*` is one name at that level).
pub const GIT_PROTECTED: &[&str] = &[
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks",
    ".git/info",
    ".git/modules/*/config",
    ".git/modules/*/config.worktree",
    ".git/modules/*/commondir",
    ".git/modules/*/hooks",
    ".git/modules/*/info",
    ".git/modules/*/worktrees/*",
    ".git/worktrees/*",
];

/// The names that cannot be created beneath a writable root when absent at the start: each
/// gets an empty directory, made by the host and bound read-only in the commands' mount
/// namespace (and removed, if still empty, when the sandbox is dropped). A directory named
/// `CLAUDE.md` cannot be made a file by a command (nor `opencode.json`, whose directory opencode
/// will not start with while a command runs: a start refused, rather than a configuration
/// planted); the other protected names, when absent, are not held (see the sandbox chapter).
pub const PLACEHOLDERS: &[&str] = &[
    ".git",
    ".claude",
    ".mcp.json",
    "CLAUDE.md",
    "AGENTS.md",
    "CLAUDE.local.md",
    "GEMINI.md",
    "opencode.json",
    "opencode.jsonc",
    ".vscode",
    ".codex",
    ".agents",
    ".gemini",
    ".opencode",
    ".cursor",
    ".zed",
];

/// The directories of [`HOME_PROTECTED`] that cannot be created when absent (empty placeholder
/// directories, as for [`PLACEHOLDERS`]); files such as `.gitconfig` are not held, since a
/// directory in their place would break the programs that read them.
pub const HOME_PLACEHOLDERS: &[&str] = &[
    ".ssh",
    ".config/git",
    ".config/systemd",
    ".config/autostart",
    ".config/environment.d",
    ".config/fish",
    ".local/bin",
    ".cargo/bin",
    ".codex",
    ".gemini",
    ".cursor",
    ".config/opencode",
    ".aws",
    ".kube",
    ".gradle",
    ".local/lib",
];

/// The files of [`HOME_PROTECTED`] that cannot be created when absent (empty placeholder files,
/// as for [`HOME_PLACEHOLDERS`]): those an empty file means to their programs what no file does.
/// Not the shell start-up files (an empty `~/.bash_profile` would keep bash from reading
/// `~/.profile`), nor `~/.vimrc` (vim reads its defaults only without one).
pub const HOME_FILE_PLACEHOLDERS: &[&str] = &[
    ".gitconfig",
    ".bash_aliases",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".aws/config",
    ".kube/config",
    ".gradle/init.gradle",
];

/// The directories where the user's own services listen on Unix sockets, those that exist now:
/// tmux's (`/tmp/tmux-UID`) and screen's servers, which run any program they are sent;
/// `$XDG_RUNTIME_DIR` (`/run/user/UID`: the D-Bus session bus, `systemd --user`, the
/// keyring, Wayland, PipeWire); ssh-agent's (`/tmp/ssh-*` of this user); X11's
/// (`/tmp/.X11-unix`). Below Landlock ABI 9 nothing else keeps a command from connecting to a
/// socket by its path: where commands get a mount namespace these are hidden from them
/// (an empty read-only tmpfs over each), unless `allowUnixSockets` names a socket in one.
pub fn service_socket_dirs() -> Vec<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let (uid, _) = crate::child::ids();
        let mut dirs = vec![
            PathBuf::from(format!("/tmp/tmux-{uid}")),
            PathBuf::from("/run/screen"),
            PathBuf::from("/var/run/screen"),
            PathBuf::from(format!("/run/user/{uid}")),
            PathBuf::from("/tmp/.X11-unix"),
        ];
        if let Some(runtime) =
            std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute())
        {
            dirs.push(runtime);
        }
        if let Ok(entries) = std::fs::read_dir("/tmp") {
            for entry in entries.flatten() {
                let ssh = entry.file_name().to_str().is_some_and(|name| name.starts_with("ssh-"));
                // `symlink_metadata`: a link planted under that name is not a directory here.
                if ssh && entry.path().symlink_metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid) {
                    dirs.push(entry.path());
                }
            }
        }
        dirs.retain(|dir| dir.symlink_metadata().is_ok_and(|m| m.is_dir()));
        dirs.sort();
        dirs.dedup();
        dirs
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

impl SandboxPolicy {
    /// The [service socket directories](service_socket_dirs) this policy hides from commands:
    /// none when every Unix socket is allowed or commands are not confined; not one that holds a
    /// socket `allowUnixSockets` names, nor one that holds or lies in a writable root.
    pub fn hidden_socket_dirs(&self) -> Vec<PathBuf> {
        if self.all_unix_sockets || !self.is_enforced() {
            return Vec::new();
        }
        let writable = self.writable();
        service_socket_dirs()
            .into_iter()
            .filter(|dir| !writable.iter().any(|root| root.starts_with(dir) || dir.starts_with(root)))
            .collect()
    }

    /// The sockets of [`SandboxPolicy::unix_sockets`] inside a [hidden](Self::hidden_socket_dirs)
    /// directory: each stays reachable at its own path, alone, in the otherwise empty
    /// directory the command sees.
    pub fn revealed_sockets(&self) -> Vec<PathBuf> {
        let hidden = self.hidden_socket_dirs();
        self.unix_sockets
            .iter()
            .filter(|socket| hidden.iter().any(|dir| socket.starts_with(dir)))
            .cloned()
            .collect()
    }
}

/// The user's configuration that runs code, relative to the home directory: read-only when the
/// home directory is, or lies beneath, a writable root. A component may be a pattern of names
/// (`python*`), matched against what is there when each command starts.
pub const HOME_PROTECTED: &[&str] = &[
    ".ssh",
    ".gitconfig",
    ".config/git",
    ".config/systemd",
    ".config/autostart",
    ".config/environment.d",
    ".config/fish",
    ".config/nvim",
    ".local/bin",
    ".local/share/applications",
    ".cargo/config",
    ".cargo/config.toml",
    ".cargo/bin",
    ".npmrc",
    ".pypirc",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".bashrc.d",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".xprofile",
    ".xinitrc",
    ".vimrc",
    ".vim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".config/tmux",
    ".oh-my-zsh/custom",
    // Python runs the `.pth` files of the user's site-packages at every start; pip reads its
    // index from its configuration; yarn runs the `yarnPath` its configuration names.
    ".local/lib/python*/site-packages",
    ".config/pip",
    ".pip",
    ".yarnrc",
    ".yarnrc.yml",
    // Credential helpers and plugins these run: `credential_process`, `exec` plugins, Docker's
    // `credsStore`, Gradle's init scripts and JVM arguments.
    ".aws/config",
    ".kube/config",
    ".docker/config.json",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".gradle/gradle.properties",
    // Coding agents' own settings (their MCP servers and hooks run commands).
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".config/opencode",
    ".cursor",
    ".config/tool-runtime",
    ".local/share/tool-runtime",
];

/// What a sandboxed command may do. Build it with [`SandboxPolicy::workspace_write`],
/// [`SandboxPolicy::read_only`] or [`SandboxPolicy::off`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// Where writes are allowed in [`SandboxMode::WorkspaceWrite`] (the workspace root first).
    pub writable_roots: Vec<PathBuf>,
    /// Whether the commands' temporary directory ([`SandboxPolicy::temp_dir`]) is writable in
    /// [`SandboxMode::WorkspaceWrite`]. The system's `/tmp` and `/dev/shm` are not, unless
    /// listed as writable roots.
    pub writable_temp: bool,
    /// The commands' own temporary directory: writable with `writable_temp`, and what `TMPDIR`,
    /// `TMP` and `TEMP` name in commands. When `None`, [`Sandbox::new`](crate::Sandbox::new)
    /// makes one of its own, removed with the sandbox.
    pub temp_dir: Option<PathBuf>,
    /// The host's own directories, which commands may neither read nor write: an empty
    /// read-only file system is mounted over each in the commands' mount namespace (where none
    /// can be made, they stay readable, and the report says so).
    pub hidden: Vec<PathBuf>,
    /// Paths commands may not read (the settings' `sandbox.filesystem.denyRead`): in the
    /// commands' mount namespace a directory is covered by an empty read-only file system, a
    /// file by an empty read-only one (`/dev/null`). The last component may be a pattern of
    /// names (`*`, `?`, `[...]`: `.env.*`), which stands for the entries of its directory it
    /// matches when each command starts (at most 256; more refuses the command). Where one lies
    /// inside a writable root, the directories above it are held too, so that no command can
    /// move it away. The sandbox cannot be made where no mount namespace can be (commands would
    /// read them).
    pub unreadable: Vec<PathBuf>,
    /// Where the links among the [unreadable](Self::unreadable) paths led when each was added
    /// ([`SandboxPolicy::with_unreadable`]): (the path as named, what it resolved to). A link
    /// inside a writable root, which a command may have made, is followed to a path outside the
    /// writable roots only as it was then: a link a command makes at a hidden name (`.env ->
    /// /usr`) hides nothing outside, where it would otherwise take from later commands what
    /// they need to run.
    pub unreadable_links: Vec<(PathBuf, PathBuf)>,
    /// Paths readable again within an [unreadable](Self::unreadable) directory (`allowRead`),
    /// each bound back at its own path. The writable roots and the temporary directory are
    /// always readable again. Of the paths named here and in `unreadable`, the deepest above a
    /// path decides: `~/.ssh` denied, `~` denied and `~/src` allowed hides `~/.ssh` and all of
    /// `~` but `~/src`; a path denied beneath `~/src` is hidden again.
    pub readable: Vec<PathBuf>,
    /// Whether commands may write a repository's metadata (`.git`): when `false` (the default)
    /// `.git` is read-only as a whole; when `true` only [`GIT_PROTECTED`] is.
    pub git_writes: bool,
    /// Where reads are allowed; `None` means everywhere.
    pub readable_roots: Option<Vec<PathBuf>>,
    /// Paths that stay read-only beneath the writable roots: relative ones are taken beneath
    /// each writable root, absolute ones as they are; a component may be a pattern of names
    /// (`*`, `.env.*`), matched against what is there when each command starts.
    pub protected: Vec<PathBuf>,
    /// How many levels of directories the relative [protected](Self::protected) paths are
    /// looked for in, each writable root's top being the first: with the default, 3, a
    /// repository checked out at `vendor/lib` (its `.git`, the hooks directory its
    /// configuration names), `packages/app/.claude` and `web/.vscode` are protected as those at
    /// the top are, since they run what they name when the user works in that directory
    /// (Anthropic's sandbox-runtime looks as deep by default). What is there when each command
    /// starts is protected, without following links; more than 1,024 such names below one
    /// root's top refuse the command (a command could make that many to leave one that was
    /// there before it unprotected). `1` looks at the top alone.
    pub protected_depth: usize,
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
    /// Bounds on each command's processes and memory (see [`Limits`]).
    pub limits: Limits,
}

/// Bounds on what one command may take of the machine, enforced by the kernel where it offers a
/// way (the `tools` settings key `sandbox.limits`).
///
/// - `processes`: processes and threads. Enforced by the `pids` controller of the command's own
///   cgroup (cgroup v2 where the controller is enabled for it, else the v1 `pids` hierarchy,
///   which needs root); without either, in a user namespace of the commands' own (an ordinary
///   user's sandbox) by `RLIMIT_NPROC`, which the kernel counts per user namespace: for the
///   commands of one session together. Outside one, `RLIMIT_NPROC` would count every process
///   of the user, the host's included, and is not used. A fork bomb then ends at the bound,
///   with `fork: Resource temporarily unavailable`, and the host goes on.
/// - `memory`: bytes of memory the command's processes use together, by the `memory`
///   controller (`memory.max` without swap, or v1's `memory.limit_in_bytes`): past it the
///   kernel reclaims, then kills a process of the command. Off by default, and not replaced
///   by `RLIMIT_AS` where no controller is there: an address-space bound counts reservations,
///   not use, and stops V8, WebAssembly, the JVM and sanitizer builds long before they use
///   that much.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// At most this many processes and threads per command.
    pub processes: Option<u64>,
    /// At most this many bytes of memory per command.
    pub memory: Option<u64>,
}

impl Limits {
    /// The processes a command may have by default.
    pub const DEFAULT_PROCESSES: u64 = 4096;

    /// No bound at all.
    pub const NONE: Limits = Limits { processes: None, memory: None };
}

impl Default for Limits {
    /// [`Limits::DEFAULT_PROCESSES`] processes, memory unbounded.
    fn default() -> Self {
        Limits { processes: Some(Self::DEFAULT_PROCESSES), memory: None }
    }
}

impl SandboxPolicy {
    /// Writes beneath `root` (and the temporary directory), reads everywhere, network off, the
    /// [default protected paths](DEFAULT_PROTECTED) read-only.
    pub fn workspace_write(root: impl Into<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec![root.into()],
            writable_temp: true,
            temp_dir: None,
            hidden: Vec::new(),
            unreadable: Vec::new(),
            unreadable_links: Vec::new(),
            readable: Vec::new(),
            git_writes: false,
            readable_roots: None,
            protected: DEFAULT_PROTECTED.iter().map(PathBuf::from).collect(),
            protected_depth: 3,
            network: Network::Off,
            fallback: Fallback::Refuse,
            require_landlock_abi: None,
            allow_local_binding: false,
            unix_sockets: Vec::new(),
            all_unix_sockets: false,
            limits: Limits::default(),
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

    /// Sets the bounds on each command's processes and memory.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a writable root.
    pub fn with_writable_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.writable_roots.push(root.into());
        self
    }

    /// Sets the commands' temporary directory (see [`SandboxPolicy::temp_dir`]).
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Hides a directory of the host's from commands (see [`SandboxPolicy::hidden`]).
    pub fn with_hidden(mut self, dir: impl Into<PathBuf>) -> Self {
        self.hidden.push(dir.into());
        self
    }

    /// Adds a path commands may not read (see [`SandboxPolicy::unreadable`]), and where it
    /// leads now when a link is on its way (see [`SandboxPolicy::unreadable_links`]).
    pub fn with_unreadable(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        for named in crate::unreadable::matching(&path, usize::MAX).unwrap_or_default() {
            if let Some(real) = crate::unreadable::through_link(&named) {
                self.unreadable_links.push((named, real));
            }
        }
        self.unreadable.push(path);
        self
    }

    /// Adds a path commands may read within an unreadable directory (see
    /// [`SandboxPolicy::readable`]).
    pub fn with_readable(mut self, path: impl Into<PathBuf>) -> Self {
        self.readable.push(path.into());
        self
    }

    /// The commands' temporary directory is the session's `tmp`, and its `state` is hidden.
    pub fn with_session_dir(self, dir: &crate::SessionDir) -> Self {
        self.with_temp_dir(dir.tmp()).with_hidden(dir.state())
    }

    /// Lets commands write a repository's metadata (see [`SandboxPolicy::git_writes`]).
    pub fn with_git_writes(mut self, allow: bool) -> Self {
        self.git_writes = allow;
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

    /// The directories writable under this policy (empty when read-only or off): the writable
    /// roots and the commands' temporary directory, less those at or beneath an absolute
    /// [protected path](Self::with_protected).
    pub fn writable(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let mut roots = self.writable_roots.clone();
        if let (true, Some(temp)) = (self.writable_temp, &self.temp_dir) {
            roots.push(temp.clone());
        }
        // A root at or beneath an absolute protected path (`denyWrite`) is not writable: a mount
        // read-only beneath a root cannot hold the root itself, nor what holds it.
        // One that cannot be looked at now (a command's `chmod 000` above it) is kept: left out,
        // what protects it would be too (see `protected_targets`, which refuses it).
        roots.retain(|r| {
            r.try_exists().unwrap_or(true)
                && !self.protected.iter().any(|p| p.is_absolute() && r.starts_with(p))
        });
        roots
    }

    /// The protected paths beneath the writable roots, made absolute: `*` expanded to the names
    /// there now, `.git` replaced by [`GIT_PROTECTED`] when git writes are allowed, those found
    /// below each root's top (see [`protected_depth`](Self::protected_depth)), the directory
    /// `core.hooksPath` names and the files git reads its configuration from (as
    /// `git config --list --show-origin` reports them) for each repository among them, and
    /// [`HOME_PROTECTED`] when the home directory is writable.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        self.protected_paths_in(&self.below_top(None)).unwrap_or_else(|(paths, _)| paths)
    }

    /// The [protected paths](Self::protected_paths), or why no command may start (more
    /// protected names below a root's top than are looked for, see
    /// [`protected_depth`](Self::protected_depth)): then the list would miss some, and what
    /// relies on it should refuse too.
    pub fn checked_protected_paths(&self) -> Result<Vec<PathBuf>, String> {
        self.protected_paths_in(&self.below_top(None)).map_err(|(_, refusal)| refusal)
    }

    /// The relative protected paths, `.git` replaced by [`GIT_PROTECTED`] when git writes are
    /// allowed.
    fn relative_protected(&self) -> Vec<&Path> {
        let mut relative: Vec<&Path> = Vec::new();
        for p in self.protected.iter().filter(|p| !p.is_absolute()) {
            if self.git_writes && p == Path::new(".git") {
                relative.extend(GIT_PROTECTED.iter().map(Path::new));
            } else {
                relative.push(p);
            }
        }
        relative
    }

    /// The [protected paths](Self::protected_paths) with the names `below` the roots' tops, or
    /// with them why no command may start: more such names than are looked for.
    pub(crate) fn protected_paths_in(
        &self,
        below: &BelowTop,
    ) -> Result<Vec<PathBuf>, (Vec<PathBuf>, String)> {
        let mut out: Vec<PathBuf> = self
            .protected
            .iter()
            .filter(|p| p.is_absolute())
            .flat_map(|p| expand(Path::new("/"), p))
            .collect();
        let relative = self.relative_protected();
        // Each pattern with the names its first component matches, built once.
        let firsts: Vec<(&Path, crate::nested::Names)> =
            relative.iter().map(|p| (*p, crate::nested::Names::first_of([*p]))).collect();
        for (root, found) in &below.roots {
            for p in &relative {
                out.extend(expand(root, p));
            }
            for entry in found {
                let (Some(dir), Some(name)) = (entry.parent(), entry.file_name()) else { continue };
                let mut named = false;
                for (p, first) in &firsts {
                    if first.matches(name) {
                        out.extend(expand(dir, p));
                        named = true;
                    }
                }
                // A directory that could not be looked into: read-only as a whole.
                if !named {
                    out.push(entry.clone());
                }
            }
        }
        #[cfg(unix)]
        for top in below.repository_tops() {
            let git = crate::git_config::git_reads(&top, &self.writable_roots);
            out.extend(git.hooks.into_iter().chain(git.files));
            // A git directory a `.git` file names is the repository's metadata as `.git` is.
            for dir in git.git_dirs {
                if self.git_writes {
                    let within = GIT_PROTECTED.iter().filter_map(|p| p.strip_prefix(".git/"));
                    out.extend(within.flat_map(|p| expand(&dir, Path::new(p))));
                } else {
                    out.push(dir);
                }
            }
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute())
            && self.writable_roots.iter().any(|r| home.starts_with(r))
        {
            out.extend(home_protected(&home));
        }
        out.sort();
        out.dedup();
        match &below.refusal {
            None => Ok(out),
            Some(refusal) => Err((out, refusal.clone())),
        }
    }

    /// The protected names below each writable root's top, as they are now: all of them
    /// (down to [`protected_depth`](Self::protected_depth) levels), or with `on_the_way_to`
    /// only those that path lies in.
    pub(crate) fn below_top(&self, on_the_way_to: Option<&Path>) -> BelowTop {
        let relative = self.relative_protected();
        let mut below = BelowTop { roots: Vec::new(), refusal: None };
        let names = crate::nested::Names::first_of(relative.iter().copied());
        for root in &self.writable_roots {
            let found = match on_the_way_to {
                _ if relative.is_empty() || self.protected_depth < 2 || self.mode != SandboxMode::WorkspaceWrite => {
                    Vec::new()
                }
                Some(path) => crate::nested::on_the_way(root, path, &names, self.protected_depth),
                None => crate::nested::below_top(root, &names, self.protected_depth).unwrap_or_else(|found| {
                    below.refusal = Some(format!(
                        "more than {} protected names (`.git`, `.claude`, `CLAUDE.md`, ...) lie below the top of \
                         {}, down to {} levels: no command starts, since a command could make that many to \
                         leave one that was there before it unprotected. Remove those a command made, or make \
                         the depth looked in smaller (`SandboxPolicy::protected_depth`)",
                        crate::nested::MAX_NESTED,
                        root.display(),
                        self.protected_depth
                    ));
                    found
                }),
            };
            below.roots.push((root.clone(), found));
        }
        below
    }

    /// Whether `path` may be written under this policy (beneath a writable root and not beneath a
    /// protected path), judged on the path's text; for explaining refusals, not for enforcing.
    pub fn allows_write(&self, path: &Path) -> bool {
        match self.mode {
            SandboxMode::Off => true,
            SandboxMode::ReadOnly => path.starts_with("/dev/null"),
            SandboxMode::WorkspaceWrite => {
                self.writable().iter().any(|r| path.starts_with(r))
                    && !(self.protected_paths_in(&self.below_top(Some(path))))
                        .unwrap_or_else(|(paths, _)| paths)
                        .iter()
                        .any(|p| path.starts_with(p))
            }
        }
    }
}

/// The protected names found below the top of each writable root (see
/// [`SandboxPolicy::protected_depth`]), looked for once per command, for its placeholders and
/// its mounts alike.
pub(crate) struct BelowTop {
    /// Each writable root, with the entries found below its top.
    roots: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Why no command may start, if it may not.
    refusal: Option<String>,
}

impl BelowTop {
    /// The tops of the repositories git may run hooks in: each writable root, and each
    /// directory below its top with a `.git`.
    /// The roots come first, then the others by the age of their `.git` (oldest first: git is
    /// asked about them within a time budget, and those a command has just made come last).
    pub(crate) fn repository_tops(&self) -> Vec<PathBuf> {
        let mut tops: Vec<PathBuf> = self.roots.iter().map(|(root, _)| root.clone()).collect();
        let mut nested: Vec<(i64, i64, &Path)> = Vec::new();
        for (_, found) in &self.roots {
            for entry in found.iter().filter(|entry| entry.file_name() == Some(std::ffi::OsStr::new(".git")))
            {
                let Some(top) = entry.parent() else { continue };
                #[cfg(unix)]
                let changed = std::fs::symlink_metadata(entry).map_or((i64::MAX, 0), |m| {
                    use std::os::unix::fs::MetadataExt;
                    (m.ctime(), m.ctime_nsec())
                });
                #[cfg(not(unix))]
                let changed = (0, 0);
                nested.push((changed.0, changed.1, top));
            }
        }
        nested.sort();
        tops.extend(nested.into_iter().map(|(_, _, top)| top.to_path_buf()));
        tops
    }
}

/// `root` joined with `pattern`, each component that is a pattern of names (`*`, `.env.*`)
/// replaced by every name there now that it matches.
/// [`HOME_PROTECTED`] in the home directory `home`, its patterns matched against what is there.
fn home_protected(home: &Path) -> Vec<PathBuf> {
    HOME_PROTECTED.iter().flat_map(|p| expand(home, Path::new(p))).collect()
}

fn expand(root: &Path, pattern: &Path) -> Vec<PathBuf> {
    let mut paths = vec![root.to_path_buf()];
    for part in pattern.components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains(['*', '?', '[']) {
            // One that is not a pattern (an unclosed `[`) matches nothing.
            let glob = globset::GlobBuilder::new(&text).literal_separator(true).build();
            let Ok(glob) = glob.map(|g| g.compile_matcher()) else { return Vec::new() };
            paths = paths
                .iter()
                .filter_map(|dir| std::fs::read_dir(dir).ok())
                .flat_map(|entries| entries.flatten().map(|e| e.path()))
                .filter(|path| path.file_name().is_some_and(|name| glob.is_match(name)))
                .collect();
        } else {
            for path in &mut paths {
                path.push(part);
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_at_or_beneath_a_protected_path_is_not_writable() {
        let dir = std::env::temp_dir().join(format!("tool-sandbox-deny-root-{}", std::process::id()));
        for sub in ["ws", "secret/sub", "other"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let policy = SandboxPolicy::workspace_write(dir.join("ws"))
            .with_writable_root(dir.join("secret/sub"))
            .with_writable_root(dir.join("other"))
            .with_protected(dir.join("secret"))
            .with_protected(dir.join("other"));
        assert_eq!(policy.writable(), [dir.join("ws")]);
        let policy = SandboxPolicy::workspace_write(dir.join("ws")).with_protected(&dir);
        assert!(policy.writable().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What runs code from a writable home directory is protected, `site-packages` of each
    /// Python version there among it (its `.pth` files run at every start of Python).
    #[test]
    fn a_writable_homes_code_is_protected_python_versions_matched() {
        let home = std::env::temp_dir().join(format!("home-protected-{}", std::process::id()));
        for dir in [".local/lib/python3.11/site-packages", ".local/lib/python3.12/site-packages", ".aws"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        let protected = home_protected(&home);
        std::fs::remove_dir_all(&home).unwrap();
        for path in [
            ".local/lib/python3.11/site-packages",
            ".local/lib/python3.12/site-packages",
            ".bash_aliases",
            ".aws/config",
            ".kube/config",
            ".gemini",
            ".bashrc",
        ] {
            assert!(protected.contains(&home.join(path)), "{path}: {protected:?}");
        }
        assert!(!protected.iter().any(|p| p.to_string_lossy().contains('*')), "{protected:?}");
    }

    #[test]
    fn modes_parse_by_their_codex_names() {
        assert_eq!("read-only".parse(), Ok(SandboxMode::ReadOnly));
        assert_eq!("workspace-write".parse(), Ok(SandboxMode::WorkspaceWrite));
        assert_eq!("danger-full-access".parse(), Ok(SandboxMode::Off));
        assert_eq!(
            "readonly".parse::<SandboxMode>().unwrap_err().to_string(),
            "unknown sandbox mode `readonly`; expected one of `read-only`, `workspace-write`, `off`"
        );
    }

    #[test]
    fn protected_paths_are_taken_beneath_each_writable_root() {
        let policy = SandboxPolicy::workspace_write("/w")
            .with_writable_root("/x")
            .with_protected("/etc/settings.json");
        let protected = policy.protected_paths();
        assert!(protected.contains(&PathBuf::from("/w/.git")));
        assert!(protected.contains(&PathBuf::from("/x/.claude")));
        assert!(protected.contains(&PathBuf::from("/w/CLAUDE.md")));
        assert!(protected.contains(&PathBuf::from("/etc/settings.json")));
        assert!(!policy.allows_write(Path::new("/w/.git/hooks/pre-commit")));
        assert!(!policy.allows_write(Path::new("/w/.git/index")));
        assert!(!policy.allows_write(Path::new("/etc/passwd")));
        assert!(!policy.allows_write(Path::new("/tmp/x")));
    }

    #[test]
    fn names_below_the_top_are_protected_to_the_depth_looked_in() {
        let root = std::env::temp_dir().join(format!("policy-below-{}", std::process::id()));
        for dir in ["vendor/lib/.git/hooks", "a/b/c/.git", "packages/app/.claude", "link-target/.claude"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(root.join("link-target"), root.join("packages/link")).unwrap();
        let policy = SandboxPolicy::workspace_write(&root);
        let protected = policy.protected_paths();
        let allowed = |path: &str| policy.allows_write(&root.join(path));
        let results = [
            allowed("vendor/lib/.git/hooks/pre-commit"),
            allowed("packages/app/.claude/settings.json"),
            allowed("vendor/lib/src/lib.rs"),
            allowed("a/b/c/.git/hooks/pre-commit"),
            allowed("packages/link/.claude/x"),
        ];
        let shallow = SandboxPolicy { protected_depth: 1, ..policy.clone() };
        let shallow_allows = shallow.allows_write(&root.join("vendor/lib/.git/config"));
        std::fs::remove_dir_all(&root).unwrap();
        assert!(protected.contains(&root.join("vendor/lib/.git")), "{protected:?}");
        assert!(protected.contains(&root.join("packages/app/.claude")), "{protected:?}");
        // Deeper than looked in, or through a link: not protected.
        assert!(!protected.iter().any(|p| p.starts_with(root.join("a/b/c"))), "{protected:?}");
        assert!(!protected.iter().any(|p| p.starts_with(root.join("packages/link"))), "{protected:?}");
        assert_eq!(results, [false, false, true, true, true]);
        assert!(shallow_allows);
    }

    #[test]
    fn with_git_writes_what_git_runs_stays_protected() {
        let dir = std::env::temp_dir().join(format!("policy-git-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git/modules/sub/hooks")).unwrap();
        std::fs::create_dir_all(dir.join(".git/worktrees/wt")).unwrap();
        std::fs::write(dir.join(".git/config"), "[core]\n\thooksPath = .husky\n").unwrap();
        let policy = SandboxPolicy::workspace_write(&dir).with_git_writes(true);
        let protected = policy.protected_paths();
        let index_writable = policy.allows_write(&dir.join(".git/index"));
        std::fs::remove_dir_all(&dir).unwrap();
        for expected in [
            ".git/config",
            ".git/commondir",
            ".git/hooks",
            ".git/modules/sub/config",
            ".git/modules/sub/hooks",
            ".git/worktrees/wt",
            ".husky",
        ] {
            assert!(protected.contains(&dir.join(expected)), "{expected}: {protected:?}");
        }
        assert!(!protected.contains(&dir.join(".git")));
        assert!(index_writable);
    }

    #[test]
    fn a_writable_home_directory_keeps_the_configuration_that_runs_code_read_only() {
        let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute()) else {
            return;
        };
        let policy = SandboxPolicy::workspace_write(&home);
        for name in
            [".ssh", ".gitconfig", ".config/git", ".config/systemd", ".local/bin", ".cargo/config.toml"]
        {
            assert!(policy.protected_paths().contains(&home.join(name)), "{name}");
        }
        let elsewhere = SandboxPolicy::workspace_write("/nonexistent-root");
        assert!(!elsewhere.protected_paths().contains(&home.join(".ssh")));
    }

    #[test]
    fn the_temporary_directory_is_the_commands_own() {
        let policy = SandboxPolicy::workspace_write("/").with_temp_dir("/proc");
        assert!(policy.writable().contains(&PathBuf::from("/proc")));
        assert!(!policy.writable().contains(&std::env::temp_dir()));
        assert!(!policy.writable().contains(&PathBuf::from("/dev/shm")));
    }
}
