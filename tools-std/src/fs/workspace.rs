//! `Workspace`: the root every path argument is resolved against, and the operations used to reach it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use std::sync::OnceLock;

use tool_runtime::{PermissionKind, PermissionRequest, ToolContext, ToolError};

use tool_sandbox::{Sandbox, SandboxError, SandboxPolicy, SessionDir, lexically_normal};

use crate::fs::local::LocalOperations;
use crate::fs::ops::{FileKind, Operations, Scope, Target};
use crate::fs::stop::{self, StopOnDrop, StopSwitch};
use crate::text::{display_path, echo};

/// How many symbolic links one path may pass through, as Linux allows.
const MAX_SYMLINK_HOPS: usize = 40;
/// The longest path argument accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// The directory the file tools work in, and the [`Operations`] that reach it.
///
/// Register it as a dependency (`deps.insert(Workspace::new(root)?)`, or use
/// [`crate::dependencies`]). Every path argument is resolved beneath [`Workspace::root`]; a
/// path that leads outside it (`..`, an absolute path, a symbolic link) needs the context's
/// permission (an external-directory request), which the default policy denies. The local
/// implementation has the kernel resolve every path beneath the root's directory handle, so a
/// path that this check misjudges, or a tree that changes while a tool works, still cannot
/// reach outside.
///
/// Commands (`bash`) run in the workspace's [sandbox](Workspace::with_sandbox): by default
/// `workspace-write` (write beneath the root and the commands' own temporary directory, read
/// everywhere but the host's state, network off), enforced by the kernel, and refused where the
/// kernel cannot enforce it. A local workspace makes a [`SessionDir`] (see
/// [`Workspace::session_dir`]) for the host's state and the commands' temporary directory,
/// removed when the last clone of the workspace is dropped. With
/// an [egress](Workspace::with_egress), a sandboxed command whose network is off reaches the
/// hosts the egress allows through a proxy.
#[derive(Clone)]
pub struct Workspace {
    root: PathBuf,
    ops: Arc<dyn Operations>,
    sandbox: Arc<SandboxSlot>,
    #[cfg(feature = "egress")]
    egress: Option<tool_egress::Egress>,
    /// The egress of commands granted the network (see [`Workspace::granted_egress`]), made on
    /// first use from `egress`.
    #[cfg(feature = "egress")]
    granted: Arc<OnceLock<tool_egress::Egress>>,
    /// Whether the root is on the local file system (made by [`Workspace::new`]).
    local: bool,
    /// The checks run after an edit, by file extension.
    verifiers: Arc<Vec<crate::editing::verify::Verify>>,
    /// The host's private directory of this session (local workspaces).
    session: Option<Arc<SessionDir>>,
}

/// A sandbox policy, and the sandbox made from it on first use.
struct SandboxSlot {
    policy: SandboxPolicy,
    ready: OnceLock<Result<Arc<Sandbox>, SandboxError>>,
    /// Simple commands starting with one of these run unsandboxed.
    excluded: Vec<String>,
    /// Simple commands starting with one of these run sandboxed with the network on.
    networked: Vec<String>,
    /// Whether a call may ask to run a command unsandboxed.
    escalation: bool,
    /// The shell, resolved on first use.
    shell: OnceLock<PathBuf>,
}

impl SandboxSlot {
    fn new(policy: SandboxPolicy) -> Arc<SandboxSlot> {
        Arc::new(SandboxSlot {
            policy,
            ready: OnceLock::new(),
            excluded: Vec::new(),
            networked: Vec::new(),
            escalation: true,
            shell: OnceLock::new(),
        })
    }

    /// A new slot with this one's settings (the sandboxes are made again on first use).
    fn settings(&self) -> SandboxSlot {
        SandboxSlot {
            policy: self.policy.clone(),
            ready: OnceLock::new(),
            excluded: self.excluded.clone(),
            networked: self.networked.clone(),
            escalation: self.escalation,
            shell: OnceLock::new(),
        }
    }
}

/// `policy` with the session's temporary directory and hidden state, unless it names a
/// temporary directory of its own.
fn in_session(policy: SandboxPolicy, session: Option<&Arc<SessionDir>>) -> SandboxPolicy {
    match session {
        Some(session) if policy.temp_dir.is_none() => policy.with_session_dir(session),
        _ => policy,
    }
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace").field("root", &self.root).finish_non_exhaustive()
    }
}

/// A path argument after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// What the tool operates on: beneath the root, or outside it after the permission hook
    /// allowed it.
    pub target: Target,
    /// How to name it to the model: relative to the root when inside it, absolute otherwise.
    pub display: String,
}

impl ResolvedPath {
    /// Whether it lies inside the workspace root.
    pub fn inside(&self) -> bool {
        self.target.scope() == Scope::Workspace
    }
}

impl Workspace {
    /// A workspace on the local file system: `root` is made absolute and canonical, and opened
    /// as a directory handle that every path is resolved beneath.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("the workspace root {} is not a directory", root.display()),
            ));
        }
        let ops = LocalOperations::open(&root)?;
        // Without a session directory (no writable temporary directory), each sandbox makes a
        // temporary directory of its own.
        let session = SessionDir::create().ok().map(Arc::new);
        let sandbox = SandboxSlot::new(in_session(SandboxPolicy::workspace_write(&root), session.as_ref()));
        Ok(Workspace {
            root,
            ops: Arc::new(ops),
            sandbox,
            #[cfg(feature = "egress")]
            egress: None,
            #[cfg(feature = "egress")]
            granted: Arc::default(),
            local: true,
            verifiers: Arc::default(),
            session,
        })
    }

    /// A workspace reached through `ops` (a remote sandbox, for example), whose root is the
    /// absolute path `root` there (used to show paths and to start commands in).
    pub fn with_operations(root: impl AsRef<Path>, ops: Arc<dyn Operations>) -> io::Result<Workspace> {
        let root = root.as_ref();
        if !root.is_absolute() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the workspace root {} must be an absolute path", root.display()),
            ));
        }
        if ops.metadata(&Target::root())?.kind != FileKind::Dir {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("the workspace root {} is not a directory", root.display()),
            ));
        }
        let root = lexically_normal(root);
        let sandbox = SandboxSlot::new(SandboxPolicy::workspace_write(&root));
        Ok(Workspace {
            root,
            ops,
            sandbox,
            #[cfg(feature = "egress")]
            egress: None,
            #[cfg(feature = "egress")]
            granted: Arc::default(),
            local: false,
            verifiers: Arc::default(),
            session: None,
        })
    }

    /// The same local workspace, whose commands inherit what `filter` lets through of this
    /// process's environment (see [`LocalOperations::environment`]; by default
    /// [`EnvFilter::base`](tool_runtime::environment::EnvFilter::base)). It stays local
    /// ([`Workspace::is_local`]); a workspace reached through other operations is refused,
    /// since its commands do not run here.
    pub fn with_environment(mut self, filter: tool_runtime::environment::EnvFilter) -> io::Result<Workspace> {
        if !self.local {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only the commands of a local workspace inherit this process's environment",
            ));
        }
        self.ops = Arc::new(LocalOperations::open(&self.root)?.environment(filter));
        Ok(self)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the workspace is on the local file system ([`Workspace::new`]), where
    /// [checkpoints](crate::checkpoint) are recorded.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// The same workspace, with commands confined by `policy` (see [`tool_sandbox`]). The
    /// policy's writable roots should include the root itself
    /// (`SandboxPolicy::workspace_write(ws.root())`). Unless it names a temporary directory, the
    /// session directory's is used, and its state is hidden from commands.
    pub fn with_sandbox(mut self, policy: SandboxPolicy) -> Workspace {
        let policy = in_session(policy, self.session.as_ref());
        self.sandbox = Arc::new(SandboxSlot { policy, ..self.sandbox.settings() });
        self
    }

    /// The host's private directory of this session: `state()` for what the host keeps for
    /// itself (hidden from commands), `tmp()` for the commands' temporary directory, `shared()`
    /// for what commands read. `None` for a workspace reached through other operations, or when
    /// none could be made.
    pub fn session_dir(&self) -> Option<&Arc<SessionDir>> {
        self.session.as_ref()
    }

    /// The shell commands run with: `bash`, as an absolute path found once in this process's
    /// `PATH` without the directories commands may write (so an unsandboxed run cannot be
    /// steered to a program a sandboxed one planted), or `/bin/bash` when none is found there.
    pub fn shell(&self) -> PathBuf {
        self.sandbox
            .shell
            .get_or_init(|| {
                let policy = &self.sandbox.policy;
                let mut writable = policy.writable_roots.clone();
                writable.extend(policy.temp_dir.clone());
                writable.push(self.root.clone());
                let path = std::env::var_os("PATH").unwrap_or_default();
                crate::shell::process::resolve_shell("bash", &path, &writable)
                    .unwrap_or_else(|| PathBuf::from("/bin/bash"))
            })
            .clone()
    }

    /// The same workspace, where simple commands (no `;`, `&`, `|`, redirections, substitutions
    /// or line breaks) that start with one of `commands` (a program name, or a longer prefix such
    /// as `docker compose`; a trailing `:*` or ` *` is ignored) run unsandboxed, as Claude Code's
    /// `sandbox.excludedCommands`; and, with `escalation` false, where no call may ask to run
    /// unsandboxed (`allowUnsandboxedCommands: false`).
    pub fn with_unsandboxed_commands(mut self, commands: Vec<String>, escalation: bool) -> Workspace {
        self.sandbox = Arc::new(SandboxSlot { excluded: commands, escalation, ..self.sandbox.settings() });
        self
    }

    /// The same workspace, where simple commands that start with one of `commands` (matched as
    /// for [`Workspace::with_unsandboxed_commands`]) run in the sandbox with the network on,
    /// without asking: the settings' `sandbox.networkCommands`, for commands such as
    /// `cargo build` or `npm install` that fetch from hosts no list names. Their files stay
    /// confined; only the network is granted, to whatever they run (build scripts included),
    /// and through the egress proxy ([`Workspace::granted_egress`]): denied hosts, loopback
    /// and private addresses stay out of reach.
    pub fn with_networked_commands(mut self, commands: Vec<String>) -> Workspace {
        self.sandbox = Arc::new(SandboxSlot { networked: commands, ..self.sandbox.settings() });
        self
    }

    #[cfg(feature = "egress")]
    /// The same workspace, where a sandboxed command whose network is off gets the hosts
    /// `egress` allows instead (see [`tool_egress`]).
    ///
    /// `bash` then starts a proxy for each command (it lives as long as the command, a
    /// background session included), confines the command's TCP to the proxy's loopback port
    /// (Landlock ABI 4; UDP and other sockets stay refused), and points its clients at it with
    /// `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and their lowercase forms (and
    /// `NODE_USE_ENV_PROXY=1`, which Node needs to read them). A host no rule names
    /// is asked about through the call's permission hook as a
    /// [`PermissionKind::NetworkHost`] request, which only a person can grant (the policy's
    /// asker, or the MCP client's elicitation), and an allowed answer holds for the rest of that
    /// command; every refusal is appended to the command's result, naming the host, the rule,
    /// and how to allow it. Where the kernel cannot confine TCP to one port, commands keep the
    /// network off, and the result says why. The proxy listens on this machine: give an egress
    /// only to a workspace whose commands run here (local operations).
    ///
    /// ```no_run
    /// # fn main() -> std::io::Result<()> {
    /// use tools_std::Workspace;
    /// use tools_std::tool_egress::{Egress, EgressPolicy};
    ///
    /// let policy = EgressPolicy::new().allow_host("crates.io", "my settings").expect("a host pattern");
    /// let ws = Workspace::new(".")?.with_egress(Egress::new(policy, None));
    /// # let _ = ws; Ok(()) }
    /// ```
    pub fn with_egress(mut self, egress: tool_egress::Egress) -> Workspace {
        self.egress = Some(egress);
        self.granted = Arc::default();
        self
    }

    #[cfg(feature = "egress")]
    /// The egress of a command granted the network (the settings' `sandbox.networkCommands`, or
    /// a `sandbox: "network"` the user allowed): the workspace's egress rules (its refusals, and
    /// its secrets) and every other host besides, through a proxy like any other command's, in
    /// the command's own network namespace where the kernel has one. A denied host stays denied
    /// and loopback and private addresses stay refused; only an unsandboxed command reaches the
    /// host's network directly.
    pub fn granted_egress(&self) -> tool_egress::Egress {
        self.granted
            .get_or_init(|| {
                let policy = self.egress.as_ref().map(|e| e.policy().clone()).unwrap_or_default();
                let granted = policy
                    .allow_host("*", "the network granted to this command")
                    .expect("`*` is a host pattern");
                tool_egress::Egress::new(granted, None)
            })
            .clone()
    }

    /// The same workspace, where `edit`, `multi_edit`, `write` and `apply_patch` run the first of
    /// `verifiers` whose extension matches each file they changed (a formatter's check, a
    /// linter), and add its outcome to their result: passed, failed (exit code and the start of
    /// its output), or timed out. See [`Verify`](crate::editing::verify::Verify). Replaces any verifiers
    /// set before; an empty list turns verification off (the default).
    pub fn with_verifiers(mut self, verifiers: Vec<crate::editing::verify::Verify>) -> Workspace {
        self.verifiers = Arc::new(verifiers);
        self
    }

    /// The verifiers of [`Workspace::with_verifiers`].
    pub fn verifiers(&self) -> &[crate::editing::verify::Verify] {
        &self.verifiers
    }

    #[cfg(feature = "egress")]
    /// The egress of [`Workspace::with_egress`], if any.
    pub fn egress(&self) -> Option<&tool_egress::Egress> {
        self.egress.as_ref()
    }

    /// Whether `command` is one the workspace runs unsandboxed.
    pub fn runs_unsandboxed(&self, command: &str) -> bool {
        simple_command_starts_with(command, &self.sandbox.excluded)
    }

    /// Whether `command` is granted the network by [`Workspace::with_networked_commands`]
    /// (commands are sandboxed, and it is one of those): it then reaches the hosts of
    /// [`Workspace::granted_egress`].
    pub fn runs_networked(&self, command: &str) -> bool {
        let slot = &self.sandbox;
        slot.policy.is_enforced() && simple_command_starts_with(command, &slot.networked)
    }

    /// Whether a call may ask to run a command with more rights than the sandbox gives.
    pub fn escalation_allowed(&self) -> bool {
        self.sandbox.escalation
    }

    /// The sandbox policy commands run under.
    pub fn sandbox_policy(&self) -> &SandboxPolicy {
        &self.sandbox.policy
    }

    /// The sandbox commands run in, checked against the kernel on first use; the error says what
    /// the kernel lacks and how to opt out.
    pub fn sandbox(&self) -> Result<Arc<Sandbox>, SandboxError> {
        self.sandbox.ready.get_or_init(|| Sandbox::new(self.sandbox.policy.clone()).map(Arc::new)).clone()
    }

    /// The operations the tools use.
    pub fn operations(&self) -> &Arc<dyn Operations> {
        &self.ops
    }

    /// Resolves a path argument from the model: relative paths start at the root, symbolic
    /// links inside the root are followed (any number of hops), and a path that leads outside
    /// the root is only returned when the context's permission hook allows an external-directory
    /// request. `action` says what the tool means to do, for the person asked ("read", "write
    /// to", ...).
    ///
    /// A path inside the root is offered to the hook too, as a `Path` request with the resolved
    /// path (the default policy allows it; permission rules match it). Nothing outside the root
    /// is looked at before the permission is granted.
    pub async fn resolve(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
    ) -> Result<ResolvedPath, ToolError> {
        self.resolve_as(ctx, path, action, Last::Follow, Intent::Look).await
    }

    /// Resolves a path the tool is about to change (write, edit, create), as
    /// [`Workspace::resolve`] does, and refuses one that a symbolic link leads into a name
    /// commands may not change (git's metadata, the agents' settings and instructions, shell
    /// start-up files: tool-sandbox's `DEFAULT_PROTECTED`) when the path as named is not there:
    /// a command may have made the link (`sub -> .git/hooks`) to have the host write what the
    /// sandbox keeps it from writing. Named outright (`.git/hooks/pre-commit`), such a path is
    /// the model's choice, left to the permission rules.
    pub async fn resolve_to_change(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
    ) -> Result<ResolvedPath, ToolError> {
        self.resolve_as(ctx, path, action, Last::Follow, Intent::Change).await
    }

    /// Resolves a path argument as [`Workspace::resolve`] does, except that a symbolic link in
    /// its last component is not followed (as `lstat`, `unlink` and `O_NOFOLLOW` treat it): the
    /// result names the link itself, wherever it points, and nothing it points to is looked at.
    /// The directories before the last name are followed and confined exactly as by
    /// [`Workspace::resolve`], and the permission request names the link's own path. For
    /// operations on a name rather than on what it leads to, such as a deletion: a change, so a
    /// link before the last name may not lead into a protected name, as with
    /// [`Workspace::resolve_to_change`].
    ///
    /// A trailing `/` or `/.` does not make the last link followed here.
    pub async fn resolve_nofollow(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
    ) -> Result<ResolvedPath, ToolError> {
        self.resolve_as(ctx, path, action, Last::Keep, Intent::Change).await
    }

    async fn resolve_as(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
        last: Last,
        intent: Intent,
    ) -> Result<ResolvedPath, ToolError> {
        check_argument(path)?;
        let raw = PathBuf::from(path);
        let located = {
            let (root, raw) = (self.root.clone(), raw.clone());
            self.blocking(move |ops| locate(ops, &root, &raw, false, last))
                .await?
                .map_err(|e| path_error(path, e))?
        };
        // The name as given, for rules about a link's own name (a rule must not be passed by a
        // link to what it refuses, nor by a link that refused name leads to).
        let named_path = lexically_normal(&self.root.join(&raw));
        let outside = match located {
            Located::Inside(target) => {
                return self.granted_inside(ctx, path, action, &named_path, target, intent).await;
            }
            Located::Outside(outside) => outside,
        };
        self.ask_outside(ctx, action, &outside, &named_path).await?;
        // Granted: now follow the links outside the root too.
        let root = self.root.clone();
        let located = self
            .blocking(move |ops| locate(ops, &root, &raw, true, last))
            .await?
            .map_err(|e| path_error(path, e))?;
        // Links on the way lead elsewhere (a command may have made them, in a directory it can
        // write beside the workspace): what they lead to is asked about as itself, so that
        // rules and the workspace's bounds judge where the call would really go.
        match located {
            Located::Inside(target) => {
                self.granted_inside(ctx, path, action, &named_path, target, intent).await
            }
            Located::Outside(resolved) => {
                if resolved != outside {
                    self.ask_outside(ctx, action, &resolved, &named_path).await?;
                }
                let target = Target::outside(resolved);
                Ok(ResolvedPath { display: self.display(&target), target })
            }
        }
    }

    /// Asks for `target` inside the root, which `named` (the path as given) resolved to; for a
    /// change, refuses one a link led into a protected path or a held placeholder.
    async fn granted_inside(
        &self,
        ctx: &ToolContext,
        path: &str,
        action: &str,
        named: &Path,
        target: Target,
        intent: Intent,
    ) -> Result<ResolvedPath, ToolError> {
        if intent == Intent::Change {
            self.not_led_into_protected(path, named, &target)?;
            not_a_held_placeholder(&self.absolute(&target), &self.display(&target))?;
        }
        // Asked for every path, so that permission rules can match the resolved path.
        let resolved = self.absolute(&target);
        let description = format!("{action} {}", display_path(&resolved));
        let named = (named != resolved).then(|| named.to_path_buf());
        ctx.ask(PermissionRequest::new(PermissionKind::Path { path: resolved, named }, description)).await?;
        Ok(ResolvedPath { display: self.display(&target), target })
    }

    /// Asks for `outside`, a path outside the root, which `named` (the path as given) names.
    async fn ask_outside(
        &self,
        ctx: &ToolContext,
        action: &str,
        outside: &Path,
        named: &Path,
    ) -> Result<(), ToolError> {
        let request = PermissionRequest::new(
            PermissionKind::ExternalDirectory {
                path: outside.to_path_buf(),
                named: (named != outside).then(|| named.to_path_buf()),
            },
            match named != outside {
                true => format!(
                    "{action} {} (where {} leads), outside the workspace root {}",
                    display_path(outside),
                    display_path(named),
                    self.root.display()
                ),
                false => format!(
                    "{action} {}, outside the workspace root {}",
                    display_path(outside),
                    self.root.display()
                ),
            },
        );
        ctx.ask(request).await
    }

    /// Refuses a change of `target` that a link led into a protected path (a protected name, or
    /// any path the sandbox keeps read-only: the hooks directory git uses, the home directory's
    /// configuration, the settings files) that the path as `named` is not in.
    fn not_led_into_protected(&self, path: &str, named: &Path, target: &Target) -> Result<(), ToolError> {
        let resolved_path = self.absolute(target);
        if resolved_path == named {
            return Ok(());
        }
        let inside = |path: &Path| path.strip_prefix(&self.root).map(Path::to_path_buf).unwrap_or_default();
        // What the sandbox keeps read-only beyond the protected names, when it confines writes.
        let policy = &self.sandbox.policy;
        let protected = match policy.mode {
            tool_sandbox::SandboxMode::WorkspaceWrite => policy.checked_protected_paths().map_err(|refusal| {
                ToolError::permission_denied(format!(
                    "{path} leads through a symbolic link, and where it may lead cannot be checked now: {refusal}; \
                     nothing was changed"
                ))
            })?,
            _ => Vec::new(),
        };
        let protected_at = |path: &Path| -> Option<String> {
            let name = protected_component(&inside(path)).map(|name| name.to_string_lossy().into_owned());
            name.or_else(|| {
                let at = protected.iter().find(|p| path.starts_with(p))?;
                Some(at.strip_prefix(&self.root).unwrap_or(at).display().to_string())
            })
        };
        let Some(name) = protected_at(&resolved_path) else { return Ok(()) };
        if protected_at(named).is_some() {
            return Ok(());
        }
        let resolved = self.display(target);
        Err(ToolError::permission_denied(format!(
            "{path} leads through a symbolic link to {resolved}, inside `{name}`, which commands may not change (a \
             command may have made the link to have it written); nothing was changed. If {resolved} is what you \
             mean to change, name it as it is"
        )))
    }

    /// The absolute path `target` names.
    pub fn absolute(&self, target: &Target) -> PathBuf {
        match target.scope() {
            Scope::Workspace if target.path().as_os_str().is_empty() => self.root.clone(),
            Scope::Workspace => self.root.join(target.path()),
            Scope::Outside => target.path().to_path_buf(),
        }
    }

    /// How the model sees `target`: relative to the root when inside it (`.` for the root
    /// itself), absolute otherwise; names that are not plain text are quoted with escapes.
    pub fn display(&self, target: &Target) -> String {
        match target.scope() {
            Scope::Workspace if target.path().as_os_str().is_empty() => ".".to_owned(),
            Scope::Workspace | Scope::Outside => display_path(target.path()),
        }
    }

    /// Appends [`Workspace::display`]`(target)` to `out`.
    pub(crate) fn push_display(&self, out: &mut String, target: &Target) {
        match target.scope() {
            Scope::Workspace if target.path().as_os_str().is_empty() => out.push('.'),
            Scope::Workspace | Scope::Outside => crate::text::push_display_path(out, target.path()),
        }
    }

    /// Runs blocking file-system work on a blocking thread. When this future is dropped (its
    /// call was stopped), the work, which cannot be interrupted, changes nothing more: each change
    /// of the local operations is made before the drop returns, or not at all (see
    /// [`stop`](crate::fs::stop)).
    pub(crate) async fn blocking<T, F>(&self, work: F) -> Result<T, ToolError>
    where
        F: FnOnce(&dyn Operations) -> T + Send + 'static,
        T: Send + 'static,
    {
        let ops = self.ops.clone();
        let switch = Arc::new(StopSwitch::default());
        let _stop_on_drop = StopOnDrop(switch.clone());
        tokio::task::spawn_blocking(move || stop::under(switch, || work(ops.as_ref()))).await.map_err(|e| {
            ToolError::execution("the file-system work of this call failed unexpectedly").with_source(e)
        })
    }
}

/// Refuses what no file name can hold, before anything is resolved: a NUL, or more bytes than
/// the kernel takes. The message never repeats a huge argument whole.
fn check_argument(path: &str) -> Result<(), ToolError> {
    if path.len() > MAX_PATH_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "The path {} is {} bytes long; paths are at most {MAX_PATH_BYTES} bytes.",
            echo(path),
            path.len()
        )));
    }
    if path.contains('\0') {
        return Err(ToolError::invalid_arguments(format!(
            "The path {} contains a NUL character, which no file name can contain.",
            echo(path)
        )));
    }
    Ok(())
}

fn path_error(path: &str, error: io::Error) -> ToolError {
    let message = format!("Cannot resolve the path {}: {error}.", echo(path));
    ToolError::from_io(error).with_message(message)
}

/// What a resolved path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    /// Reading or listing it.
    Look,
    /// Changing it: a link may not lead it into a protected name.
    Change,
}

/// Refuses a change of `path` while it is a placeholder the sandbox holds for commands still
/// running: an empty directory standing for a protected name that was absent when they started.
fn not_a_held_placeholder(path: &Path, display: &str) -> Result<(), ToolError> {
    if !tool_sandbox::is_held_placeholder(path) {
        return Ok(());
    }
    // Held by jobs that may have ended since (a later command killed them): let go of those.
    crate::shell::process::forget_ended_jobs();
    if !tool_sandbox::is_held_placeholder(path) {
        return Ok(());
    }
    Err(ToolError::execution(format!(
        "{display} cannot be written yet: it did not exist when the commands still running (background \
         commands, and what commands left running) started, so it is held empty (a placeholder) for them to \
         keep from creating it. It can be written once they end: bash_stop stops a background session; a job \
         a finished command left running ends by itself or with the session."
    )))
}

/// The first component of `path` that is a protected name, if any.
fn protected_component(path: &Path) -> Option<&std::ffi::OsStr> {
    path.components()
        .map(Component::as_os_str)
        .find(|part| tool_sandbox::DEFAULT_PROTECTED.iter().any(|name| *part == std::ffi::OsStr::new(name)))
}

/// What [`locate`] does with a symbolic link in the last component of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Follow it, as `stat` and `open` do.
    Follow,
    /// Stop at the link itself, as `lstat` and `unlink` do.
    Keep,
}

/// Where a path argument leads.
#[derive(Debug, PartialEq, Eq)]
enum Located {
    /// Beneath the root.
    Inside(Target),
    /// Outside it, at this absolute path.
    Outside(PathBuf),
}

enum Part {
    Parent,
    Name(OsString),
}

fn parts(path: &Path) -> (bool, Vec<Part>) {
    let mut absolute = false;
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => parts.push(Part::Parent),
            Component::Normal(name) => parts.push(Part::Name(name.to_owned())),
        }
    }
    (absolute, parts)
}

/// Joins `path` to `root` and follows every symbolic link on the way, the way the kernel will:
/// a `..` after a name that does not exist, or after a file, is an error, as it is for the
/// kernel. Names are looked up through `ops` only beneath the root, unless `look_outside`
/// (after the user granted access outside); outside, without it, names are taken as written.
/// With [`Last::Keep`], a link that is the last name of the path is not followed.
fn locate(
    ops: &dyn Operations,
    root: &Path,
    path: &Path,
    look_outside: bool,
    last: Last,
) -> io::Result<Located> {
    let (absolute, first) = parts(path);
    let mut current = if absolute { PathBuf::from("/") } else { root.to_path_buf() };
    let mut queue: VecDeque<Part> = first.into();
    // Set once a name was not found (or was not a directory): from there on names are joined
    // as written, and a `..` is an error.
    let mut missing: Option<(io::ErrorKind, PathBuf)> = None;
    let mut hops = 0;
    while let Some(part) = queue.pop_front() {
        match part {
            Part::Parent => {
                if let Some((kind, at)) = missing {
                    let at = at.strip_prefix(root).map_or(at.clone(), Path::to_path_buf);
                    let what =
                        if kind == io::ErrorKind::NotFound { "does not exist" } else { "is not a directory" };
                    return Err(io::Error::new(
                        kind,
                        format!(
                            "{} {what}, so a `..` after it leads nowhere (the system resolves `..` after following the names before it, not by removing text)",
                            display_path(&at)
                        ),
                    ));
                }
                // `current` has no links left in it, so its parent is the real parent.
                current.pop();
            }
            Part::Name(name) => {
                let candidate = current.join(&name);
                let target = match candidate.strip_prefix(root) {
                    Ok(rel) => Some(Target::root().join(rel)),
                    Err(_) if look_outside => Some(Target::outside(candidate.clone())),
                    Err(_) => None,
                };
                let Some(target) = target.filter(|_| missing.is_none()) else {
                    current = candidate;
                    continue;
                };
                match ops.symlink_metadata(&target) {
                    Ok(info)
                        if info.kind == FileKind::Symlink && (last == Last::Follow || !queue.is_empty()) =>
                    {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidInput,
                                format!(
                                    "it passes through more than {MAX_SYMLINK_HOPS} symbolic links (a loop?)"
                                ),
                            ));
                        }
                        let link = ops.read_link(&target).map_err(|e| {
                            if e.kind() != io::ErrorKind::InvalidInput {
                                return e;
                            }
                            // No longer a link: something replaced it between the two looks.
                            io::Error::other(format!(
                                "{} changed while the path was resolved (a command may be changing it)",
                                display_path(target.path())
                            ))
                        })?;
                        let (link_absolute, link_parts) = parts(&link);
                        if link_absolute {
                            current = PathBuf::from("/");
                        }
                        for part in link_parts.into_iter().rev() {
                            queue.push_front(part);
                        }
                    }
                    Ok(info) => {
                        if info.kind != FileKind::Dir && !queue.is_empty() {
                            missing = Some((io::ErrorKind::NotADirectory, candidate.clone()));
                        }
                        current = candidate;
                    }
                    Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                        missing = Some((e.kind(), candidate.clone()));
                        current = candidate;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(match current.strip_prefix(root) {
        Ok(rel) => Located::Inside(Target::root().join(rel)),
        Err(_) => Located::Outside(current),
    })
}

/// Whether `command` is a simple command (no `;`, `&`, `|`, redirections, substitutions or
/// line breaks) that is one of `entries` or starts with one followed by a blank (a trailing
/// `:*` or ` *` of an entry is ignored).
fn simple_command_starts_with(command: &str, entries: &[String]) -> bool {
    let simple = !command.contains([';', '&', '|', '<', '>', '`', '$', '\n', '(', ')']);
    simple
        && entries.iter().any(|entry| {
            let prefix = entry.trim_end_matches(":*").trim_end_matches(" *").trim();
            !prefix.is_empty()
                && (command.trim() == prefix
                    || command.trim_start().strip_prefix(prefix).is_some_and(|rest| rest.starts_with(' ')))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    #[test]
    fn a_workspace_with_its_own_environment_stays_local() {
        let dir = TempDir::new();
        let filter = tool_runtime::environment::EnvFilter::base();
        let ws = Workspace::new(dir.path()).unwrap().with_environment(filter.clone()).unwrap();
        assert!(ws.is_local());
        let ops = Arc::new(LocalOperations::open(dir.path()).unwrap());
        let remote = Workspace::with_operations(ws.root(), ops).unwrap();
        assert!(remote.with_environment(filter).is_err());
    }

    fn located(ws: &Path, path: &str) -> io::Result<Located> {
        let ops = LocalOperations::open(ws).unwrap();
        locate(&ops, ws, Path::new(path), false, Last::Follow)
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_through_every_hop() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("ws/sub")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        symlink("../outside", root.join("ws/hop2")).unwrap();
        symlink("hop2", root.join("ws/sub/../hop1")).unwrap();
        symlink("sub", root.join("ws/inner")).unwrap();
        let ws = root.join("ws");
        // Leaving the root stops the lookup: nothing outside is looked at.
        assert_eq!(located(&ws, "hop1/file.txt").unwrap(), Located::Outside(root.join("outside/file.txt")));
        assert_eq!(located(&ws, "inner/x").unwrap(), Located::Inside(Target::root().join("sub/x")));
        assert_eq!(located(&ws, "sub/../x").unwrap(), Located::Inside(Target::root().join("x")));
        assert_eq!(located(&ws, "../ws/./sub").unwrap(), Located::Inside(Target::root().join("sub")));
        let abs = format!("{}/sub", ws.display());
        assert_eq!(located(&ws, &abs).unwrap(), Located::Inside(Target::root().join("sub")));
    }

    #[cfg(unix)]
    #[test]
    fn dot_dot_after_a_missing_name_or_a_file_is_an_error_as_for_the_kernel() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(ws.join("in.txt"), "x").unwrap();
        symlink("../outside", ws.join("link")).unwrap();
        let err = located(&ws, "nope/../link/secret.txt").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let err = located(&ws, "in.txt/x/../../link/secret.txt").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory, "{err}");
        // Names after a missing one are fine: that is how new files are created.
        assert_eq!(located(&ws, "new/dir/f").unwrap(), Located::Inside(Target::root().join("new/dir/f")));
    }

    #[cfg(unix)]
    #[test]
    fn keeping_the_last_link_names_the_link_and_still_follows_the_directories_before_it() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("ws/sub")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("ws/sub/a.txt"), "a").unwrap();
        symlink("sub/a.txt", root.join("ws/link")).unwrap();
        symlink("../outside/secret.txt", root.join("ws/out")).unwrap();
        symlink("sub", root.join("ws/dirlink")).unwrap();
        symlink("../outside", root.join("ws/outdir")).unwrap();
        symlink("a.txt", root.join("ws/sub/inner")).unwrap();
        let ws = root.join("ws");
        let kept = |path: &str| {
            let ops = LocalOperations::open(&ws).unwrap();
            locate(&ops, &ws, Path::new(path), false, Last::Keep).unwrap()
        };
        let inside = |path: &str| Located::Inside(Target::root().join(path));
        assert_eq!(kept("link"), inside("link"));
        assert_eq!(located(&ws, "link").unwrap(), inside("sub/a.txt"));
        // A link out of the root is itself inside: nothing outside is looked at.
        assert_eq!(kept("out"), inside("out"));
        assert_eq!(kept("./link/"), inside("link"));
        // The directories before the last name are followed, and a link among them still leads out.
        assert_eq!(kept("dirlink/inner"), inside("sub/inner"));
        assert_eq!(kept("outdir/x"), Located::Outside(root.join("outside/x")));
        // A `..` after the link makes it a directory on the way, which is followed.
        assert_eq!(kept("dirlink/.."), Located::Inside(Target::root()));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_loop_is_an_error_not_a_hang() {
        use std::os::unix::fs::symlink;
        let dir = TempDir::new();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        let err = located(dir.path(), "a/x").unwrap_err();
        assert!(err.to_string().contains("more than 40 symbolic links"), "{err}");
    }
}

#[cfg(test)]
mod sandbox_tests {
    use super::*;

    #[test]
    fn only_simple_commands_with_an_excluded_prefix_run_unsandboxed() {
        let dir = crate::testing::TempDir::new();
        let ws = Workspace::new(dir.path())
            .unwrap()
            .with_unsandboxed_commands(vec!["docker".into(), "cargo build:*".into()], true);
        assert!(ws.runs_unsandboxed("docker ps"));
        assert!(ws.runs_unsandboxed("docker"));
        assert!(ws.runs_unsandboxed("cargo build --release"));
        for command in [
            "dockerd",
            "cargo test",
            "docker ps; rm -rf ~",
            "docker ps && curl x",
            "docker ps | sh",
            "docker run $(cat x)",
            "docker run `id`",
            "docker ps > /etc/x",
            "docker ps\nrm -rf ~",
            "docker ps & rm x",
        ] {
            assert!(!ws.runs_unsandboxed(command), "{command:?}");
        }
        // Setting the policy afterwards keeps the list.
        let ws = ws.with_sandbox(SandboxPolicy::read_only());
        assert!(ws.runs_unsandboxed("docker ps"));
    }
}
