//! A policy made ready for the kernel: checked against the probe once, then applied to each
//! command it confines.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::Arc;

use crate::policy::{BelowTop, Fallback, Network, SandboxMode, SandboxPolicy};
use crate::probe::Probe;

/// What confines a command, as it applies on this kernel: the mode, the layers, the Landlock
/// ABI, and what the policy asked for that this kernel cannot give.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxReport {
    /// The mode.
    pub mode: SandboxMode,
    /// The layers that apply: `landlock` (files), `landlock-tcp`, `landlock-scope` (signals and
    /// abstract Unix sockets), `seccomp`, `read-only-mounts` (protected paths), `own-terminals`
    /// (a mount namespace per command whose `/dev/pts` holds only its own terminals, with System V
    /// IPC of its own),
    /// `network-namespace` (a network namespace of the commands' own: only loopback, and only
    /// the proxy listening there).
    pub layers: Vec<&'static str>,
    /// The Landlock ABI in use.
    pub landlock_abi: Option<u32>,
    /// The network.
    pub network: Network,
    /// What the policy asked for that does not apply here, in words.
    pub missing: Vec<String>,
    /// What applies in a way worth knowing (the host's state inside a writable root), in words.
    pub notes: Vec<String>,
}

impl fmt::Display for SandboxReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sandbox {}", self.mode)?;
        if self.mode == SandboxMode::Off {
            return f.write_str(" (commands run unconfined)");
        }
        if let Some(abi) = self.landlock_abi {
            write!(f, ", Landlock ABI {abi}")?;
        }
        write!(f, ": {}", self.layers.join(", "))?;
        match self.network {
            Network::Off => f.write_str("; network off")?,
            Network::Proxy { port } => write!(f, "; network through the proxy on port {port}")?,
            Network::On => f.write_str("; network on")?,
        }
        for note in &self.notes {
            write!(f, "; {note}")?;
        }
        for missing in &self.missing {
            write!(f, "; NOT ENFORCED: {missing}")?;
        }
        Ok(())
    }
}

/// The requested sandbox cannot be enforced on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxError {
    mode: SandboxMode,
    missing: Vec<String>,
}

impl SandboxError {
    /// What is missing, one item each.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "The {} sandbox cannot be enforced on this system: {}. Commands are not run unconfined without \
             being asked to: pass `--sandbox off` (or set the policy's mode to off) to run them with every \
             right of this process, or choose the best-effort fallback to run them with the layers this \
             kernel has.",
            self.mode,
            self.missing.join("; ")
        )
    }
}

impl std::error::Error for SandboxError {}

/// A [`SandboxPolicy`] checked against the kernel, with its Landlock ruleset and seccomp program
/// built once, ready to confine any number of commands.
#[derive(Debug)]
pub struct Sandbox {
    policy: SandboxPolicy,
    report: SandboxReport,
    #[cfg(target_os = "linux")]
    landlock: Option<Arc<std::os::fd::OwnedFd>>,
    /// The ruleset's rules, their paths opened, for the ruleset of their own that commands with
    /// terminals of their own get.
    #[cfg(target_os = "linux")]
    landlock_rules: Option<Arc<crate::landlock_rules::Rules>>,
    #[cfg(target_os = "linux")]
    seccomp: Option<Arc<Vec<seccompiler::sock_filter>>>,
    /// The network namespace commands join.
    #[cfg(target_os = "linux")]
    namespace: Option<Arc<crate::child::NamespaceFds>>,
    /// Whether commands get a mount namespace of their own (read-only mounts, placeholders,
    /// hidden directories, their own terminals).
    mount_namespace: bool,
    /// The commands' temporary directory, when the policy named none.
    _temp: Option<Arc<crate::SessionDir>>,
}

/// A sandbox for the same policy, sharing its ruleset, filter, namespace and temporary
/// directory: what a command pays for it is the clone of a few handles.
impl Clone for Sandbox {
    fn clone(&self) -> Self {
        Sandbox {
            policy: self.policy.clone(),
            report: self.report.clone(),
            #[cfg(target_os = "linux")]
            landlock: self.landlock.clone(),
            #[cfg(target_os = "linux")]
            landlock_rules: self.landlock_rules.clone(),
            #[cfg(target_os = "linux")]
            seccomp: self.seccomp.clone(),
            #[cfg(target_os = "linux")]
            namespace: self.namespace.clone(),
            mount_namespace: self.mount_namespace,
            _temp: self._temp.clone(),
        }
    }
}

impl PartialEq for Sandbox {
    fn eq(&self, other: &Self) -> bool {
        self.policy == other.policy
    }
}

impl Eq for Sandbox {}

impl Sandbox {
    /// Checks `policy` against the kernel's [`Probe`] and prepares it, or says what is missing
    /// (unless the policy's fallback is [`Fallback::BestEffort`]).
    pub fn new(policy: SandboxPolicy) -> Result<Sandbox, SandboxError> {
        // Off: nothing to check, so the kernel is not probed (the probe starts children).
        if policy.mode == SandboxMode::Off {
            let nothing = Probe {
                landlock_abi: None,
                seccomp: false,
                mount_namespace: false,
                user_namespaces: false,
                network_namespace: false,
            };
            return Self::with_probe(policy, nothing);
        }
        Self::with_probe(policy, Probe::get())
    }

    /// As [`Sandbox::new`], against the given probe (a probe of another machine, or a test's).
    pub fn with_probe(mut policy: SandboxPolicy, probe: Probe) -> Result<Sandbox, SandboxError> {
        let mut report = SandboxReport {
            mode: policy.mode,
            layers: Vec::new(),
            landlock_abi: None,
            network: policy.network,
            missing: Vec::new(),
            notes: Vec::new(),
        };
        if policy.mode == SandboxMode::Off {
            return Ok(Sandbox::unconfined(policy, report));
        }
        // Without a temporary directory of their own, commands get one, removed with the sandbox.
        let mut temp = None;
        if policy.mode == SandboxMode::WorkspaceWrite && policy.writable_temp && policy.temp_dir.is_none() {
            match crate::SessionDir::create() {
                Ok(dir) => {
                    policy.temp_dir = Some(dir.tmp());
                    temp = Some(dir);
                }
                Err(e) => report.missing.push(format!("a temporary directory of the commands' own ({e})")),
            }
        }
        let mut refusals = Vec::new();
        match (probe.landlock_abi, policy.require_landlock_abi) {
            (None, _) => refusals.push(
                "the kernel offers no Landlock (it needs Linux 5.13 or later with Landlock enabled at boot, \
                 e.g. `lsm=landlock,...`), so file access cannot be confined"
                    .to_owned(),
            ),
            (Some(abi), Some(required)) if abi < required => refusals.push(format!(
                "Landlock ABI {required} is required, but the kernel offers ABI {abi}"
            )),
            (Some(abi), _) if abi < 4 && matches!(policy.network, Network::Proxy { .. }) => refusals.push(format!(
                "network through a proxy needs Landlock ABI 4 (TCP port rules), but the kernel offers ABI {abi}"
            )),
            _ => {}
        }
        if !probe.seccomp {
            refusals.push(
                "the kernel offers no seccomp filters, so system calls (ptrace, mount, namespaces, sockets) \
                 cannot be refused"
                    .to_owned(),
            );
        }
        if let Some(abi) = probe.landlock_abi {
            if abi < 4 && policy.network == Network::Off {
                report.missing.push(format!(
                    "TCP port rules (Landlock ABI 4; the kernel offers {abi}): the network is off through seccomp only"
                ));
            }
            if abi < 6 {
                report.missing.push(format!(
                    "signal and abstract socket scoping (Landlock ABI 6; the kernel offers {abi})"
                ));
            }
        }
        if !policy.all_unix_sockets && probe.landlock_abi < Some(9) {
            let hidden = policy.hidden_socket_dirs();
            let hidden = match (probe.can_protect_paths(), hidden.is_empty()) {
                (true, false) => format!(
                    "; the user's service sockets are hidden ({})",
                    hidden.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
                (true, true) => "; no service socket directory of the user's was found to hide".to_owned(),
                (false, _) => "; hiding the user's service sockets needs a mount namespace".to_owned(),
            };
            report.missing.push(format!(
                "Unix sockets by path: Landlock confines them from ABI 9 (the kernel offers {}), so a command \
                 can connect to any socket file it can reach{}{hidden}",
                probe.landlock_abi.map_or("none".to_owned(), |abi| abi.to_string()),
                if policy.unix_sockets.is_empty() { "" } else { ", not only those allowUnixSockets lists" },
            ));
        }
        if let Network::Proxy { port } = policy.network {
            // Until a namespace is joined (`in_network_namespace`).
            let why = match (probe.network_namespace, policy.all_unix_sockets) {
                (false, _) => {
                    "this process can make none: it needs CAP_SYS_ADMIN or unprivileged user namespaces"
                }
                (true, true) => {
                    "allowAllUnixSockets keeps commands in this machine's, where the abstract Unix sockets they \
                     may reach live"
                }
                (true, false) => "none was joined",
            };
            report.missing.push(unconfined_port(port, why));
        }
        let hidden: Vec<&PathBuf> = policy.hidden.iter().filter(|h| h.is_dir()).collect();
        // Every command gets a mount namespace where one can be made: its `/dev/pts` is its own.
        let mount_namespace = probe.can_protect_paths();
        let protect = mount_namespace
            && (policy.mode == SandboxMode::WorkspaceWrite
                || !hidden.is_empty()
                || !policy.unreadable.is_empty());
        if !mount_namespace {
            report.notes.push(
                "no pseudo-terminal but the one a command is given: without a mount namespace for a devpts \
                 instance of its own, /dev/pts is out of reach, and terminals a command makes (script, \
                 pty.fork) cannot be opened"
                    .to_owned(),
            );
        }
        if !probe.can_protect_paths() && policy.mode == SandboxMode::WorkspaceWrite {
            report.missing.push(
                "protected paths inside writable roots (.git, .claude, ...) stay writable, and absent ones can \
                 be created: read-only mounts need a mount namespace, which this process cannot create"
                    .to_owned(),
            );
        }
        let writable = policy.writable();
        for dir in &hidden {
            let inside = writable.iter().find(|r| dir.starts_with(r));
            match (probe.can_protect_paths(), inside) {
                (true, Some(root)) => report.notes.push(format!(
                    "the host's state directory {} lies inside the writable root {}: hidden from commands and \
                     read-only to them",
                    dir.display(),
                    root.display()
                )),
                (true, None) => {}
                (false, inside) => report.missing.push(format!(
                    "the host's state directory {} is readable{} by commands: hiding it needs a mount namespace",
                    dir.display(),
                    if inside.is_some() { " and writable" } else { "" }
                )),
            }
        }
        unreadable_report(&policy, &probe, &mut report, &mut refusals);
        limits_report(&policy.limits, &probe, &mut report);
        if !refusals.is_empty() && policy.fallback == Fallback::Refuse {
            return Err(SandboxError { mode: policy.mode, missing: refusals });
        }
        report.missing.extend(refusals);
        let mut sandbox = Self::build(policy, probe, report, protect, mount_namespace)?;
        sandbox._temp = temp.map(Arc::new);
        Ok(sandbox)
    }

    fn unconfined(policy: SandboxPolicy, report: SandboxReport) -> Sandbox {
        Sandbox {
            policy,
            report,
            #[cfg(target_os = "linux")]
            landlock: None,
            #[cfg(target_os = "linux")]
            landlock_rules: None,
            #[cfg(target_os = "linux")]
            seccomp: None,
            #[cfg(target_os = "linux")]
            namespace: None,
            mount_namespace: false,
            _temp: None,
        }
    }

    #[cfg(target_os = "linux")]
    fn build(
        policy: SandboxPolicy,
        probe: Probe,
        mut report: SandboxReport,
        protect: bool,
        mount_namespace: bool,
    ) -> Result<Sandbox, SandboxError> {
        let refuse = |what: String, report: &mut SandboxReport| {
            if policy.fallback == Fallback::Refuse {
                Err(SandboxError { mode: policy.mode, missing: vec![what] })
            } else {
                report.missing.push(what);
                Ok(())
            }
        };
        // With the network off, an empty network namespace is one more wall (shared by this
        // sandbox's commands; only its loopback interface, up when they may listen). It is not
        // required: seccomp already refuses every socket but Unix ones, and Landlock's TCP rules
        // every connection. Not when every Unix socket is allowed: abstract ones live in a
        // network namespace.
        let mut namespace = None;
        if policy.network == Network::Off && probe.network_namespace && !policy.all_unix_sockets {
            let made = if policy.allow_local_binding {
                crate::NetworkNamespace::loopback()
            } else {
                crate::NetworkNamespace::empty()
            };
            match made {
                Ok(made) => namespace = Some(made.fds),
                Err(e) => report.missing.push(format!("a network namespace of the commands' own ({e})")),
            }
        }
        let mut landlock = None;
        let mut landlock_rules = None;
        let mut tcp = false;
        if let Some(abi) = probe.landlock_abi {
            let built = crate::landlock_rules::rules(&policy, abi, namespace.is_some())
                .and_then(|rules| Ok((rules.build()?, rules)));
            match built {
                Ok((fd, rules)) => {
                    let enforced = rules.enforced;
                    landlock_rules = Some(Arc::new(rules));
                    report.landlock_abi = Some(enforced.abi);
                    report.layers.push("landlock");
                    if enforced.tcp {
                        report.layers.push("landlock-tcp");
                    }
                    if enforced.scopes {
                        report.layers.push("landlock-scope");
                    }
                    tcp = abi >= 4;
                    landlock = Some(Arc::new(fd));
                }
                Err(e) => refuse(e, &mut report)?,
            }
        }
        // Listening needs Internet stream sockets, which seccomp refuses with the network off;
        // they are let through only where Landlock judges their connections (and binds).
        let local_tcp = policy.network == Network::Off && policy.allow_local_binding && tcp;
        if policy.network == Network::Off && policy.allow_local_binding && !tcp {
            report.missing.push(
                "listening on TCP ports (allowLocalBinding): it needs Landlock ABI 4's TCP rules, so Internet \
                 sockets stay refused"
                    .to_owned(),
            );
        }
        let mut seccomp = None;
        if probe.seccomp {
            let network = if local_tcp { Network::Proxy { port: 0 } } else { policy.network };
            match crate::seccomp::program(network, mount_namespace) {
                Ok(program) => {
                    report.layers.push("seccomp");
                    seccomp = Some(Arc::new(program));
                }
                Err(e) => refuse(e, &mut report)?,
            }
        }
        if protect {
            report.layers.push("read-only-mounts");
        }
        if mount_namespace {
            report.layers.push("own-terminals");
        }
        if namespace.is_some() {
            report.layers.push(NAMESPACE_LAYER);
        }
        Ok(Sandbox {
            policy,
            report,
            landlock,
            landlock_rules,
            seccomp,
            namespace,
            mount_namespace,
            _temp: None,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn build(
        policy: SandboxPolicy,
        _probe: Probe,
        report: SandboxReport,
        _protect: bool,
        _mount_namespace: bool,
    ) -> Result<Sandbox, SandboxError> {
        Ok(Sandbox::unconfined(policy, report))
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// What applies.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// The same sandbox, whose commands start inside `namespace`: with
    /// [`Network::Proxy`], the one thing they can connect to is then the proxy listening in it
    /// (see [`NetworkNamespace`](crate::NetworkNamespace)), instead of the proxy's port on every
    /// address. The report names the `network-namespace` layer.
    pub fn in_network_namespace(mut self, namespace: crate::NetworkNamespace) -> Sandbox {
        if let Network::Proxy { port } = self.policy.network {
            let note = unconfined_port(port, "");
            let prefix = note.trim_end_matches("()");
            self.report.missing.retain(|m| !m.starts_with(prefix));
        }
        if !self.report.layers.contains(&NAMESPACE_LAYER) {
            self.report.layers.push(NAMESPACE_LAYER);
        }
        #[cfg(target_os = "linux")]
        {
            self.namespace = Some(namespace.fds);
            // Commands that may listen may connect to any port in there too: only the proxy and
            // their own servers are inside.
            if let (true, Some(abi)) = (self.policy.allow_local_binding, self.report.landlock_abi)
                && let Ok(rules) = crate::landlock_rules::rules(&self.policy, abi, true)
                && let Ok(fd) = rules.build()
            {
                let enforced = rules.enforced;
                self.landlock = Some(Arc::new(fd));
                self.landlock_rules = Some(Arc::new(rules));
                if !enforced.tcp {
                    self.report.layers.retain(|l| *l != "landlock-tcp");
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = namespace;
        self
    }

    /// Makes `command` start confined: its child enters the sandbox between `fork` and `exec`.
    /// `cwd` is the directory the command starts in (set it on the command too). The read-only
    /// mounts of the protected paths that exist now are prepared here, before the fork.
    /// `TMPDIR`, `TMP` and `TEMP` are set to the commands' temporary directory. Protected names
    /// that are absent stay absent only with [`Sandbox::apply_holding`].
    pub fn apply(&self, command: &mut std::process::Command, cwd: &Path) -> std::io::Result<()> {
        self.apply_with(command, cwd, &[], None, None, &self.policy.below_top(None)).map(drop)
    }

    /// As [`Sandbox::apply`], and the [placeholders](crate::PLACEHOLDERS) of the protected names
    /// that are absent are made now and bound read-only for the command: keep what this returns
    /// for as long as the command runs (dropping it removes them, if still empty, once no other
    /// command of this process holds them, and then the command could create those names).
    /// Until the command's child has made its mounts, a lock is held that this user's other
    /// processes take to remove their placeholders (the crate's documentation says more): spawn
    /// the command right away.
    pub fn apply_holding(
        &self,
        command: &mut std::process::Command,
        cwd: &Path,
    ) -> std::io::Result<Placeholders> {
        // Git is asked once per repository, first: not while the lock below is held.
        #[cfg(unix)]
        return crate::git_config::one_start(|| self.hold_and_apply(command, cwd));
        #[cfg(not(unix))]
        return self.hold_and_apply(command, cwd);
    }

    /// [`Sandbox::apply_holding`]'s work.
    fn hold_and_apply(
        &self,
        command: &mut std::process::Command,
        cwd: &Path,
    ) -> std::io::Result<Placeholders> {
        // What lies below the roots' tops, looked for once for the placeholders and the mounts.
        let below = self.policy.below_top(None);
        let wanted =
            if self.mount_namespace { wanted_placeholders(&self.policy, &below) } else { Vec::new() };
        // The command's namespace is worth knowing where none of its processes can leave it.
        #[cfg(target_os = "linux")]
        let (namespace, report) = match self.mount_namespace && self.seccomp.is_some() {
            true => crate::child::namespace_report().map(|(read, write)| (Some(read), Some(write)))?,
            false => (None, None),
        };
        #[cfg(not(target_os = "linux"))]
        let (namespace, report) = (None, None);
        // Held from deciding which protected names exist until the command's mounts are made.
        #[cfg(target_os = "linux")]
        let starting = match self.mount_namespace {
            true => crate::placeholder_lock::Lock::take(),
            false => crate::placeholder_lock::Lock::Absent,
        };
        #[cfg(target_os = "linux")]
        let locked = starting.is_held();
        #[cfg(not(target_os = "linux"))]
        let locked = false;
        let (held, found) = make_placeholders(&self.policy, wanted, locked);
        let mut placeholders = Placeholders {
            _held: held,
            found,
            #[cfg(target_os = "linux")]
            starting,
            _bound: Bound::default(),
            namespace,
            received: std::sync::OnceLock::new(),
        };
        // On an error the lock is let go of before the placeholders (their removal takes it).
        #[cfg(target_os = "linux")]
        let unlock = placeholders.starting.copy();
        #[cfg(not(target_os = "linux"))]
        let unlock = None;
        let bound = self.apply_with(command, cwd, &placeholders._held, report, unlock, &below)?;
        placeholders._bound = Bound::hold(bound);
        Ok(placeholders)
    }

    /// Installs the sandbox on `command`; `Ok` holds the paths its mounts are made on.
    fn apply_with(
        &self,
        command: &mut std::process::Command,
        cwd: &Path,
        placeholders: &[Placeholder],
        report: Option<std::os::fd::OwnedFd>,
        unlock: Option<std::os::fd::OwnedFd>,
        below: &BelowTop,
    ) -> std::io::Result<Vec<PathBuf>> {
        if self.policy.mode == SandboxMode::Off {
            return Ok(Vec::new());
        }
        if let Some(temp) =
            self.policy.temp_dir.as_ref().filter(|_| self.policy.mode == SandboxMode::WorkspaceWrite)
        {
            command.env("TMPDIR", temp).env("TMP", temp).env("TEMP", temp);
        }
        #[cfg(target_os = "linux")]
        {
            let (mounts, bound) = match self.mount_namespace {
                true => self.mount_plan(cwd, placeholders, report, unlock, below)?,
                false => (None, Vec::new()),
            };
            let landlock = match (&self.landlock_rules, &mounts, self.report.landlock_abi) {
                // With a mount namespace, the command's own terminals are granted in a ruleset of
                // its own, built from the rules opened once.
                (Some(rules), Some(_), Some(abi)) => {
                    let ruleset = rules.build().map_err(std::io::Error::other)?;
                    let terminals = crate::landlock_rules::terminal_access(abi);
                    Some(crate::child::Landlock::Own { ruleset, terminals })
                }
                _ => self.landlock.clone().map(crate::child::Landlock::Shared),
            };
            let plan = crate::child::ChildPlan {
                network: self.namespace.clone(),
                mounts,
                landlock,
                seccomp: self.seccomp.clone(),
                processes: self.policy.limits.processes,
            };
            crate::child::install(command, plan);
            Ok(bound)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (command, cwd, placeholders, report, unlock, below);
            Ok(Vec::new())
        }
    }

    /// The mounts that make the protected paths that exist read-only, pin their parents, hide
    /// the host's state and the unreadable paths (with what is read back within them), give the
    /// command terminals of its own, and the user namespace they need when this process lacks
    /// `CAP_SYS_ADMIN`; with the paths in the writable roots those mounts are made on (see
    /// [`is_held`]).
    #[cfg(target_os = "linux")]
    fn mount_plan(
        &self,
        cwd: &Path,
        placeholders: &[Placeholder],
        report: Option<std::os::fd::OwnedFd>,
        unlock: Option<std::os::fd::OwnedFd>,
        below: &BelowTop,
    ) -> std::io::Result<(Option<crate::child::MountPlan>, Vec<PathBuf>)> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
        };
        let unreadable = crate::unreadable::plan(&self.policy)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        // The other sessions' directories beside this one's are hidden too (those made later than
        // this command are not).
        let mut hidden: Vec<PathBuf> = self.policy.hidden.iter().filter(|h| h.is_dir()).cloned().collect();
        // The lock around placeholders, which no command may take and hold up.
        hidden.extend(crate::placeholder_lock::hidden_dir().map(Path::to_path_buf));
        for state in &self.policy.hidden {
            hidden.extend(crate::session_dir::other_sessions(state));
        }
        // An unreadable path or a hidden directory inside a writable root (the temporary
        // directory's, when it is one) is held where it is by its own mount, and the directories
        // above it are pinned, so that no command can move it out from under it, to have the next
        // command's mount cover a decoy (a writable root within it stays writable).
        // The directories above each placeholder are pinned too (one made where a link leads,
        // `docs/CLAUDE.md`, would go with `docs` renamed away).
        let held = placeholders.iter().map(|p| &p.path);
        let mut targets =
            protected_targets(&self.policy, below, unreadable.paths().chain(&hidden).chain(held))
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        targets.read_only.extend(placeholders.iter().map(|p| p.path.clone()));
        let socket_dirs = self.policy.hidden_socket_dirs();
        // The sockets `allowUnixSockets` names in those directories: bound back in the empty
        // directory the command sees (the first few of each).
        let mut revealed = Vec::new();
        let mut reveal = |dir: &Path, target: &Path, directory: bool| -> std::io::Result<()> {
            let within: Vec<PathBuf> = target
                .ancestors()
                .skip(1)
                .take_while(|a| a.starts_with(dir) && *a != dir)
                .map(Path::to_path_buf)
                .collect();
            revealed.push(crate::child::Revealed {
                dir: c(dir)?,
                dirs: within.iter().rev().map(|p| c(p)).collect::<Result<_, _>>()?,
                target: c(target)?,
                directory,
            });
            Ok(())
        };
        for socket in self.policy.revealed_sockets() {
            let Some(dir) = socket_dirs.iter().find(|dir| socket.starts_with(dir)) else { continue };
            reveal(dir, &socket, false)?;
        }
        for (dir, within) in &unreadable.dirs {
            if within.len() > crate::child::MAX_REVEALED {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} paths are readable again within the unreadable {} (allowRead, writable roots); at \
                         most {} can be: name fewer, or their common directory",
                        within.len(),
                        dir.display(),
                        crate::child::MAX_REVEALED
                    ),
                ));
            }
            for target in within {
                reveal(dir, target, std::fs::symlink_metadata(target).is_ok_and(|m| m.is_dir()))?;
            }
            hidden.push(dir.clone());
        }
        hidden.extend(socket_dirs);
        // Outermost first: a directory hidden within one read back is reached through it.
        hidden.sort_by(|a, b| a.components().count().cmp(&b.components().count()).then_with(|| a.cmp(b)));
        hidden.dedup();
        // Even with nothing to protect or hide: the namespace holds the commands' `/dev/shm` and
        // `/dev/pts`.
        let probe = Probe::get();
        let user_namespace = if probe.mount_namespace {
            None
        } else {
            let (uid, gid) = crate::child::ids();
            Some((c(Path::new(&format!("{uid} {uid} 1")))?, c(Path::new(&format!("{gid} {gid} 1")))?))
        };
        let mut read_only = Vec::new();
        for path in &targets.read_only {
            let path = c(path)?;
            let flags = crate::child::locked_mount_flags(&path);
            read_only.push((path, flags));
        }
        let writable = self.policy.writable();
        let bound: Vec<PathBuf> = (targets.read_only.iter())
            .chain(&targets.links)
            .chain(&targets.pins)
            .chain(&unreadable.files)
            .chain(unreadable.dirs.iter().map(|(dir, _)| dir))
            .filter(|path| writable.iter().any(|root| path.starts_with(root)))
            .cloned()
            .collect();
        let plan = crate::child::MountPlan {
            user_namespace,
            pins: targets.pins.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            read_only,
            links: targets.links.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            hidden: hidden.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            revealed,
            blanked: unreadable.files.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            blank_flags: crate::child::locked_mount_flags(crate::child::BLANK),
            shm: shared_memory(&self.policy)?,
            cwd: c(cwd)?,
            report,
            unlock,
        };
        Ok((Some(plan), bound))
    }
}

/// The report's name of the network namespace layer.
const NAMESPACE_LAYER: &str = "network-namespace";

/// What commands with a mount namespace find at `/dev/shm`: their temporary directory, bound
/// there (shared memory and semaphores of the sandbox's own, which they may write; a file
/// system of their own would need a Landlock rule on its root, which only exists once mounted);
/// without one, an empty read-only file system; the host's (readable only) when a writable root
/// lies beneath it, which a mount would hide.
#[cfg(target_os = "linux")]
fn shared_memory(policy: &SandboxPolicy) -> std::io::Result<crate::child::SharedMemory> {
    use crate::child::SharedMemory;
    use std::os::unix::ffi::OsStrExt;
    let writable = policy.writable();
    if writable.iter().any(|root| root.starts_with("/dev/shm")) {
        return Ok(SharedMemory::Host);
    }
    let Some(temp) = policy.temp_dir.as_ref().filter(|temp| writable.contains(temp)) else {
        return Ok(SharedMemory::Hidden);
    };
    let temp = std::ffi::CString::new(temp.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path holds a NUL byte"))?;
    Ok(SharedMemory::Bound(temp))
}

/// What is not enforced when commands reach a proxy's port without a network namespace of
/// their own, and `why`.
fn unconfined_port(port: u16, why: &str) -> String {
    format!(
        "the proxy alone: Landlock's TCP rule allows port {port} on every address (127.0.0.2, ::1, other \
         machines), which only a network namespace of the commands' own would close ({why})"
    )
}

/// Why no command starts where protecting its paths would take `mounts` mounts.
fn too_many_mounts(mounts: usize) -> String {
    format!(
        "holding the protected paths in the writable roots would take {mounts} mounts or more (read-only paths, \
         pinned directories, links on the way to what protected links lead to), more than the {MAX_MOUNTS} a command \
         may take: no command starts until there are fewer (links named like protected names, such as a \
         `CLAUDE.md` leading through many links or `..`, below the workspace's top; ask the user to remove them)"
    )
}

/// The read-only mounts and pinned directories that protect a policy's paths.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Targets {
    /// Bound onto themselves, so that they cannot be renamed away and replaced.
    pub(crate) pins: Vec<PathBuf>,
    /// Bound read-only.
    pub(crate) read_only: Vec<PathBuf>,
    /// Protected names that are symbolic links, each bound onto itself so that it cannot be
    /// removed or replaced (what they lead to is in `read_only` when it lies inside a writable
    /// root).
    pub(crate) links: Vec<PathBuf>,
}

/// Which paths to mount read-only and which to pin, for the protected paths beneath the
/// writable roots as the file system is now. A protected path whose parent on the way is a file
/// (a `.git` file of a worktree) protects that file instead; one that is a symbolic link is
/// held as a link (bound onto itself, not followed) and protects what it leads to as well, when
/// that lies inside a writable root; one that does not exist is skipped (see
/// [`make_placeholders`]). Of the paths `pinned`, only the directories above them are pinned:
/// each is held by a mount of its own (an unreadable path's). An `Err` says why no command may
/// start (too many protected names below a root's top).
pub(crate) fn protected_targets<'a>(
    policy: &SandboxPolicy,
    below: &BelowTop,
    pinned: impl IntoIterator<Item = &'a PathBuf>,
) -> Result<Targets, String> {
    let mut targets = Targets::default();
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Ok(targets);
    }
    let roots = policy.writable();
    let inside = |path: &Path| roots.iter().any(|r| path.starts_with(r));
    let protected = policy.protected_paths_in(below).map_err(|(_, refusal)| refusal)?;
    let protected = protected.into_iter().map(|path| (path, true));
    // A link met on the way is followed to its end (once: not the links found there in turn),
    // and what it passes is held as well: each further link bound onto itself (`CLAUDE.md` ->
    // `d/CLAUDE.md`, `d` -> `docs`: `d` replaced by a directory would take `CLAUDE.md`
    // elsewhere), what it leads to read-only, with the directories above each pinned, and each
    // directory a `..` climbs out of pinned itself.
    let mut work: Vec<(PathBuf, bool, bool)> = protected
        .chain(pinned.into_iter().map(|path| (path.clone(), false)))
        .map(|(p, r)| (p, r, true))
        .collect();
    work.reverse();
    let mut passed: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    while let Some((path, read_only, follows)) = work.pop() {
        // Counted with repeats (each path pins its root and the directories above it again):
        // a bound well past the one checked once they are counted alone, below.
        if targets.pins.len() + targets.read_only.len() + targets.links.len() + work.len() > 16 * MAX_MOUNTS {
            return Err(too_many_mounts(16 * MAX_MOUNTS));
        }
        let Some(root) = root_of(&roots, &path) else { continue };
        let Ok(rest) = path.strip_prefix(root) else { continue };
        // A writable root itself (what a protected link leads to: `.claude` -> `.`).
        if rest.as_os_str().is_empty() {
            if read_only {
                targets.read_only.push(path);
            }
            continue;
        }
        let mut dir = root.clone();
        let mut pins = vec![root.clone()];
        let mut target = None;
        let components: Vec<_> = rest.components().collect();
        for (i, part) in components.iter().enumerate() {
            let next = dir.join(part);
            let meta = match std::fs::symlink_metadata(&next) {
                Ok(meta) => meta,
                // A directory on the way this process may not search (a command's `chmod 600`
                // to hide what is beneath it from the look): read-only as a whole.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && dir != *root => {
                    target = Some(dir.clone());
                    break;
                }
                // The writable root itself may not be searched (a command's `chmod 000`): what is
                // protected beneath it cannot be found, and would go unprotected.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(format!(
                        "the writable root {} cannot be searched now ({e}), so the protected paths beneath it \
                         cannot be made read-only: no command starts until its permissions let this process \
                         search it (ask the user to restore them, `chmod u+rx` on it and the directories above)",
                        root.display()
                    ));
                }
                Err(_) => break,
            };
            let last = i + 1 == components.len();
            if meta.file_type().is_symlink() {
                passed.insert(next.clone());
                if follows {
                    let whole: PathBuf = components[i + 1..].iter().fold(next.clone(), |p, c| p.join(c));
                    let followed = follow(&whole);
                    for link in followed.links {
                        if inside(&link) && passed.insert(link.clone()) {
                            work.push((link, false, false));
                        }
                    }
                    for dir in followed.climbed.into_iter().filter(|dir| inside(dir)) {
                        targets.pins.push(dir.clone());
                        work.push((dir, false, false));
                    }
                    // What it leads to, a directory on the way that cannot be searched (as a
                    // whole), or a file on the way, read-only.
                    let ends = followed.end.into_iter().chain(followed.unsearchable).chain(followed.blocked);
                    for end in ends.filter(|e| inside(e)) {
                        work.push((end, true, false));
                    }
                    if let Some((at, why)) = followed.unresolved.filter(|(at, _)| inside(at)) {
                        return Err(format!(
                            "the protected link {} leads through {}, which cannot be followed ({why}), so what it \
                             leads to cannot be held: no command starts until the link is removed or made shorter \
                             (ask the user)",
                            next.display(),
                            at.display()
                        ));
                    }
                }
                // The link itself is bound onto itself, and the directories above it pinned.
                targets.links.push(next);
                targets.pins.append(&mut pins);
                break;
            }
            if last || !meta.is_dir() {
                target = Some(next);
                break;
            }
            pins.push(next.clone());
            dir = next;
        }
        let Some(target) = target else { continue };
        pins.retain(|p| p != &target && target.starts_with(p));
        if read_only {
            targets.read_only.push(target);
        }
        targets.pins.extend(pins);
    }
    // A writable root inside another (the workspace inside a writable home, or `/tmp`) is held
    // where it is: the directories from the outer root down to it are pinned, so that no command
    // can move it, or a directory above it, away and put a decoy (a link to another directory)
    // at its path, which the next command's mounts and the host's own work in the workspace
    // would follow.
    for inner in &roots {
        let outer =
            roots.iter().filter(|r| *r != inner && inner.starts_with(r)).min_by_key(|r| r.as_os_str().len());
        let Some(rest) = outer.and_then(|outer| inner.strip_prefix(outer).ok().map(|rest| (outer, rest)))
        else {
            continue;
        };
        let (outer, rest) = rest;
        let mut dir = outer.clone();
        targets.pins.push(outer.clone());
        for part in rest.components() {
            dir.push(part);
            // One that cannot be looked at now (a command's `chmod 000` on the way, a link put
            // there) would go unpinned: the command does not start rather.
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => targets.pins.push(dir.clone()),
                found => {
                    let what = match found {
                        Ok(_) => "is not a directory now".to_owned(),
                        Err(e) => format!("cannot be looked at ({e})"),
                    };
                    return Err(format!(
                        "{} (on the way from the writable root {} to the writable root {}) {what}, so commands \
                         could move the inner root away: no command starts until it is a directory this process \
                         can search again (ask the user to restore it, `chmod u+rx` on it)",
                        dir.display(),
                        outer.display(),
                        inner.display()
                    ));
                }
            }
        }
    }
    for list in [&mut targets.pins, &mut targets.read_only, &mut targets.links] {
        list.sort();
        list.dedup();
    }
    let mounts = targets.pins.len() + targets.read_only.len() + targets.links.len();
    if mounts > MAX_MOUNTS {
        return Err(too_many_mounts(mounts));
    }
    // A directory that is read-only, or beneath one, need not be pinned as well; and must not
    // be: a pin is a writable bind mount, which on top of a read-only one would make what is
    // beneath it writable again (`.git/modules/NAME` pinned for its `config` inside a read-only
    // `.git`).
    let read_only = targets.read_only.clone();
    targets.pins.retain(|p| !read_only.iter().any(|r| p.starts_with(r)));
    Ok(targets)
}

/// Says in `report` which paths commands cannot read; a refusal where they would read them
/// (no mount namespace), or where one is the root directory, which a mount cannot cover for a
/// process whose root it is.
fn unreadable_report(
    policy: &SandboxPolicy,
    probe: &Probe,
    report: &mut SandboxReport,
    refusals: &mut Vec<String>,
) {
    if policy.unreadable.is_empty() {
        return;
    }
    let list =
        |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if policy.unreadable.iter().any(|p| std::fs::canonicalize(p).is_ok_and(|p| p.parent().is_none())) {
        refusals.push(
            "unreadable paths (denyRead) name the root directory, which a mount cannot cover: name the \
             directories to hide (`/home`, `~`), and what to read back within them (allowRead)"
                .to_owned(),
        );
    }
    if !probe.can_protect_paths() {
        refusals.push(format!(
            "unreadable paths (denyRead: {}) would be readable: hiding them needs a mount namespace, which \
             this process cannot create",
            list(&policy.unreadable)
        ));
        return;
    }
    let mut note =
        format!("commands cannot read {} (empty in their mount namespace)", list(&policy.unreadable));
    if !policy.readable.is_empty() {
        note.push_str(&format!(", except {} within them", list(&policy.readable)));
    }
    report.notes.push(note);
}

/// Says in `report` how the policy's [`Limits`](crate::Limits) are enforced here, found by
/// making a cgroup as a command's would be made.
fn limits_report(limits: &crate::Limits, probe: &Probe, report: &mut SandboxReport) {
    if limits.processes.is_none() && limits.memory.is_none() {
        return;
    }
    // Found once per process and bounds (a sandbox is built per command that uses the proxy).
    #[cfg(target_os = "linux")]
    let (processes, memory) = {
        type Found = std::collections::HashMap<(Option<u64>, Option<u64>), (bool, bool)>;
        static FOUND: std::sync::Mutex<Option<Found>> = std::sync::Mutex::new(None);
        let key = (limits.processes, limits.memory);
        let mut found = FOUND.lock().unwrap_or_else(|p| p.into_inner());
        *found.get_or_insert_with(Found::new).entry(key).or_insert_with(|| {
            crate::process_tree::Cgroup::create()
                .map(|mut cgroup| cgroup.limit(limits.processes, limits.memory))
                .map_or((false, false), |enforced| (enforced.processes, enforced.memory))
        })
    };
    #[cfg(not(target_os = "linux"))]
    let (processes, memory) = (false, false);
    let size = |bytes: u64| match bytes {
        0..1048576 => format!("{bytes} bytes"),
        _ => format!("{} MiB", bytes / 1048576),
    };
    if let Some(max) = limits.processes {
        let user_namespace = !probe.mount_namespace && probe.user_namespaces;
        if processes {
            report.notes.push(format!("at most {max} processes per command"));
        } else if user_namespace {
            report.notes.push(format!("at most {max} processes for the commands of the session together"));
        } else {
            report.missing.push(format!(
                "a bound of {max} processes per command: this process has no pids cgroup controller \
                 to give its commands"
            ));
        }
    }
    if let Some(max) = limits.memory {
        if memory {
            report.notes.push(format!("at most {} of memory per command", size(max)));
        } else {
            report.missing.push(format!(
                "a bound of {} of memory per command: this process has no memory cgroup controller \
                 to give its commands",
                size(max)
            ));
        }
    }
}

/// The placeholders a command started by [`Sandbox::apply_holding`] holds: dropping them removes
/// each (if still an empty directory) that no other command of this process holds.
#[derive(Debug, Default)]
pub struct Placeholders {
    _held: Vec<Placeholder>,
    /// Placeholders of other processes that were there, which a command of another namespace
    /// had a mount on: looked at again when this command ends.
    found: Vec<Found>,
    /// The [lock](crate::placeholder_lock), until the command's child has made its mounts.
    #[cfg(target_os = "linux")]
    starting: crate::placeholder_lock::Lock,
    _bound: Bound,
    /// Where the command's child sends its mount namespace.
    namespace: Option<std::os::fd::OwnedFd>,
    #[cfg(target_os = "linux")]
    received: std::sync::OnceLock<Option<crate::process_tree::MountNamespace>>,
    #[cfg(not(target_os = "linux"))]
    received: std::sync::OnceLock<()>,
}

impl Placeholders {
    /// The mount namespace of the command started with these placeholders, once it has started:
    /// known where the sandbox gives each command a namespace of its own that none of its
    /// processes can leave (its seccomp filter refuses them namespaces), so that every process
    /// in it is the command's
    /// ([`Tree::in_mount_namespace`](crate::process_tree::Tree::in_mount_namespace)). Sent by
    /// the command's child before `exec`, so it is known even when the command has ended.
    #[cfg(target_os = "linux")]
    pub fn mount_namespace(&self) -> Option<crate::process_tree::MountNamespace> {
        self.received
            .get_or_init(|| {
                let fd = crate::child::receive_namespace(self.namespace.as_ref()?)?;
                crate::process_tree::MountNamespace::new(fd).ok()
            })
            .clone()
    }
}

/// An empty directory made for a protected name that was absent, so that commands cannot create
/// it: bound read-only in their mount namespace (a file for one git reads as a file: see
/// [`Kind`]). Removed when the last command of this process that holds it no longer does, if it
/// is still as it was made.
#[derive(Debug)]
pub(crate) struct Placeholder {
    pub(crate) path: PathBuf,
    /// The writable root it lies beneath.
    root: PathBuf,
    kind: Kind,
    /// Left in place when no command holds it any more (see [`GIT_PLACEHOLDERS`]).
    kept: bool,
    /// Let go of already, with the others of its command ([`let_go`]).
    released: bool,
}

/// What a placeholder is made as (ordered so that a directory comes first, and wins where a
/// path is wanted as both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// An empty directory.
    Dir,
    /// A file holding these bytes, which git reads as nothing set: an empty configuration file
    /// (one a configuration includes, `config.worktree`), or `.` in `commondir` (the common
    /// directory is the git directory itself, as without the file).
    File(&'static [u8]),
}

/// A git directory's files that name what git runs, held by placeholders where absent when git
/// writes are allowed (with them, a command could make them): `hooks/` and `info/`, `commondir`
/// (the directory git takes its configuration and hooks from), `config.worktree`. These are kept
/// once made (empty `hooks/` and `info/` are what `git init` makes; the two files mean what
/// their absence meant): from then on every process's commands find them there and protected,
/// where a placeholder one process removed while another's commands ran would take the other's
/// protection with it.
const GIT_PLACEHOLDERS: [(&str, Kind); 4] = [
    (".git/hooks", Kind::Dir),
    (".git/info", Kind::Dir),
    (".git/commondir", Kind::File(b".")),
    (".git/config.worktree", Kind::File(b"")),
];

/// Whether `path` is a placeholder that commands of this process hold: an empty directory
/// standing for a protected name that did not exist when they started, which they must not
/// create. It goes once they are gone, and the name can be written then.
pub fn is_held_placeholder(path: &Path) -> bool {
    held().lock().unwrap_or_else(|p| p.into_inner()).contains_key(path)
}

/// Whether `path` is held by the mount namespace of a command of this process that may still
/// run ([`Sandbox::apply_holding`], until what it returned is dropped): a protected path bound
/// read-only there, a placeholder, a link bound onto itself, a directory pinned above one, an
/// unreadable path. A mount is made on a path, not on what is there later: were this process to
/// remove such a path, rename it away or rename another file over it, the mount would go with
/// it in the command's namespace, and the command could then write or read what it protected.
/// Change it once the commands that hold it have ended.
pub fn is_held(path: &Path) -> bool {
    is_held_placeholder(path) || bound().lock().unwrap_or_else(|p| p.into_inner()).contains_key(path)
}

type Counts = std::sync::Mutex<HashMap<PathBuf, usize>>;

/// How many sandboxes of this process hold each placeholder.
fn held() -> &'static Counts {
    static HELD: std::sync::OnceLock<Counts> = std::sync::OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// How many commands of this process have a mount made on each path (placeholders aside).
fn bound() -> &'static Counts {
    static BOUND: std::sync::OnceLock<Counts> = std::sync::OnceLock::new();
    BOUND.get_or_init(Default::default)
}

/// The paths one command's mounts are made on, counted in [`bound`] while it is held.
#[derive(Debug, Default)]
struct Bound(Vec<PathBuf>);

impl Bound {
    fn hold(mut paths: Vec<PathBuf>) -> Bound {
        paths.sort();
        paths.dedup();
        let mut bound = bound().lock().unwrap_or_else(|p| p.into_inner());
        for path in &paths {
            *bound.entry(path.clone()).or_default() += 1;
        }
        Bound(paths)
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        let mut bound = bound().lock().unwrap_or_else(|p| p.into_inner());
        for path in &self.0 {
            release(&mut bound, path);
        }
    }
}

/// One hold of `path` fewer in `counts`; `true` when it was the last.
fn release(counts: &mut HashMap<PathBuf, usize>, path: &Path) -> bool {
    let Some(count) = counts.get_mut(path) else { return false };
    *count -= 1;
    let last = *count == 0;
    if last {
        counts.remove(path);
    }
    last
}

impl Placeholder {
    /// Holds the placeholder at `path`, beneath the writable root `root`: made now when absent,
    /// shared when this process made it already; `None` when something else is there.
    fn hold(root: &Path, path: PathBuf, kind: Kind, kept: bool) -> Option<Placeholder> {
        let make = match kind {
            Kind::Dir => BeneathOp::Make,
            Kind::File(content) => BeneathOp::MakeFile(content),
        };
        let mut held = held().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&path) {
            // Removed meanwhile (by the user): made again, or the mount would fail.
            let _ = beneath(root, &path, make);
            *count += 1;
            return Some(Placeholder { path, root: root.to_path_buf(), kind, kept, released: false });
        }
        // `mkdir` (or an exclusive create) neither follows nor replaces what is there (a link
        // planted meanwhile), and the directories above are opened from the root without
        // following a link either.
        match beneath(root, &path, make) {
            Ok(()) => {}
            // Made meanwhile by another process, for its commands: it is there now, and is
            // bound read-only for this command too.
            Err(error) if kept && error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        held.insert(path.clone(), 1);
        Some(Placeholder { path, root: root.to_path_buf(), kind, kept, released: false })
    }
}

/// What [`beneath`] does with the last name of a path.
#[derive(Clone, Copy)]
enum BeneathOp {
    /// A placeholder directory (marked).
    Make,
    /// An ordinary directory.
    MakePlain,
    Remove,
    /// A file holding these bytes, created exclusively.
    MakeFile(&'static [u8]),
    /// The file, if it is still a regular file holding these bytes.
    RemoveFile(&'static [u8]),
    /// Whether it is a placeholder of this kind left behind ([`leftover`](crate::leftover);
    /// `locked`: with the [lock](crate::placeholder_lock) held): `Ok` when it is, and removed
    /// when `remove`; `Err` when it is not (or was not removed).
    Left {
        kind: Kind,
        remove: bool,
        locked: bool,
    },
}

/// Makes (`mkdir`) or removes (`rmdir`) the directory `path`, its parent opened from `root` one
/// name at a time without following a link (a command may have replaced one with a link to
/// have the host make or remove a directory elsewhere).
#[cfg(target_os = "linux")]
fn beneath(root: &Path, path: &Path, op: BeneathOp) -> std::io::Result<()> {
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::Mode;
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a path beneath the root");
    let rest = path.strip_prefix(root).map_err(|_| invalid())?;
    let name = rest.file_name().ok_or_else(invalid)?;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut dir = open(root, flags, Mode::empty())?;
    for part in rest.parent().into_iter().flat_map(Path::components) {
        let std::path::Component::Normal(part) = part else { return Err(invalid()) };
        dir = openat(&dir, part, flags | OFlag::O_NOFOLLOW, Mode::empty())?;
    }
    match op {
        BeneathOp::Make => {
            nix::sys::stat::mkdirat(&dir, name, Mode::from_bits_truncate(0o777))?;
            if let Ok(made) = openat(&dir, name, flags | OFlag::O_NOFOLLOW, Mode::empty()) {
                crate::leftover::mark(made);
            }
        }
        BeneathOp::MakePlain => nix::sys::stat::mkdirat(&dir, name, Mode::from_bits_truncate(0o777))?,
        BeneathOp::Remove => nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::RemoveDir)?,
        BeneathOp::MakeFile(content) => {
            let create =
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let file = std::fs::File::from(openat(&dir, name, create, Mode::from_bits_truncate(0o644))?);
            std::io::Write::write_all(&mut &file, content)?;
            crate::leftover::mark(&file);
        }
        BeneathOp::Left { kind, remove, locked } => {
            let open = match kind {
                Kind::Dir => flags | OFlag::O_NOFOLLOW,
                // Not waiting on a FIFO.
                Kind::File(_) => OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            };
            let entry = openat(&dir, name, open, Mode::empty())?;
            if !crate::leftover::is_left_behind(&entry, locked) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "not a placeholder left behind",
                ));
            }
            if !remove {
                return Ok(());
            }
            return match kind {
                // Only if still empty.
                Kind::Dir => Ok(nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::RemoveDir)?),
                Kind::File(content) if holds_only(&std::fs::File::from(entry), content)? => {
                    Ok(nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?)
                }
                Kind::File(_) => {
                    Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "changed since it was made"))
                }
            };
        }
        BeneathOp::RemoveFile(content) => {
            // Opened without following a link or waiting on a FIFO, and read no further than
            // the placeholder's own length.
            let read = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
            let file = std::fs::File::from(openat(&dir, name, read, Mode::empty())?);
            if holds_only(&file, content)? {
                nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?;
            }
        }
    }
    Ok(())
}

/// Whether `file` is a regular file holding `content` and nothing else (read no further than
/// that).
#[cfg(target_os = "linux")]
fn holds_only(file: &std::fs::File, content: &[u8]) -> std::io::Result<bool> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() != content.len() as u64 {
        return Ok(false);
    }
    let mut held = Vec::with_capacity(content.len());
    std::io::Read::read_to_end(&mut std::io::Read::take(file, content.len() as u64), &mut held)?;
    Ok(held == content)
}

#[cfg(not(target_os = "linux"))]
fn beneath(_root: &Path, path: &Path, op: BeneathOp) -> std::io::Result<()> {
    match op {
        BeneathOp::Make | BeneathOp::MakePlain => std::fs::create_dir(path),
        BeneathOp::Remove => std::fs::remove_dir(path),
        BeneathOp::MakeFile(content) => {
            std::io::Write::write_all(&mut std::fs::File::create_new(path)?, content)
        }
        BeneathOp::RemoveFile(content) if std::fs::read(path)? == content => std::fs::remove_file(path),
        BeneathOp::RemoveFile(_) => Ok(()),
        // Nothing marks placeholders here.
        BeneathOp::Left { .. } => Err(std::io::ErrorKind::Unsupported.into()),
    }
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        let_go(std::slice::from_mut(self), &[]);
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        // Let go of first (its child lets go of it too, once its mounts are made).
        #[cfg(target_os = "linux")]
        {
            self.starting = crate::placeholder_lock::Lock::Absent;
        }
        let_go(&mut self._held, &self.found);
    }
}

/// Lets go of `placeholders` (each once), and removes those no command of this process holds
/// any more, unless another process's command has a mount on one: that command found it there
/// and holds it as an existing protected name, which it would stop being for that command. Such
/// a placeholder stays, for the next command of any process to remove
/// ([`leftover`](crate::leftover)). Then the placeholders of other processes that the command
/// found there (`found`) are removed the same way, if no longer held. All under the
/// [lock](crate::placeholder_lock) (taken first), so that no process is about to bind one, and
/// the lock of [`held`], so that no command of this process takes one up meanwhile. Where
/// another process keeps that lock too long, nothing is removed (the next command will).
fn let_go(placeholders: &mut [Placeholder], found: &[Found]) {
    if found.is_empty() && placeholders.iter().all(|p| p.released) {
        return;
    }
    #[cfg(target_os = "linux")]
    let lock = crate::placeholder_lock::Lock::take();
    let mut held = held().lock().unwrap_or_else(|p| p.into_inner());
    let mut last = Vec::new();
    for placeholder in placeholders.iter_mut().filter(|p| !p.released) {
        placeholder.released = true;
        if release(&mut held, &placeholder.path) && !placeholder.kept {
            last.push(&*placeholder);
        }
    }
    #[cfg(target_os = "linux")]
    {
        if matches!(lock, crate::placeholder_lock::Lock::Busy) {
            return;
        }
        let found = left_behind(found, lock.is_held(), &held);
        if last.is_empty() && found.is_empty() {
            return;
        }
        // Looked at once for all of them.
        let elsewhere = crate::process_tree::MountsElsewhere::now();
        last.retain(|placeholder| !elsewhere.has(&placeholder.path));
        remove_left(found, lock.is_held(), &elsewhere);
    }
    for placeholder in last {
        // `rmdir` removes only an empty directory, and never what a link leads to: a directory
        // above it that a command replaced with a link stops it.
        let remove = match placeholder.kind {
            Kind::Dir => BeneathOp::Remove,
            Kind::File(content) => BeneathOp::RemoveFile(content),
        };
        let _ = beneath(&placeholder.root, &placeholder.path, remove);
    }
    drop(held);
}

/// A placeholder found where a command wants one, that this process did not make.
#[derive(Debug)]
struct Found {
    root: PathBuf,
    path: PathBuf,
    kind: Kind,
}

/// Those of `found` that are placeholders left behind ([`leftover`](crate::leftover); with the
/// [lock](crate::placeholder_lock) held, `locked`, another live process's too), and that no
/// command of this process holds (`held`).
#[cfg(target_os = "linux")]
fn left_behind<'f>(found: &'f [Found], locked: bool, held: &HashMap<PathBuf, usize>) -> Vec<&'f Found> {
    let is_left = |f: &&Found| {
        !held.contains_key(&f.path)
            && beneath(&f.root, &f.path, BeneathOp::Left { kind: f.kind, remove: false, locked }).is_ok()
    };
    found.iter().filter(is_left).collect()
}

/// Removes each of `left` that no other mount namespace has a mount on (`elsewhere`), if still
/// as it was made; returns the others.
#[cfg(target_os = "linux")]
fn remove_left<'f>(
    left: Vec<&'f Found>,
    locked: bool,
    elsewhere: &crate::process_tree::MountsElsewhere,
) -> Vec<&'f Found> {
    let (kept, gone): (Vec<&Found>, Vec<&Found>) = left.into_iter().partition(|f| elsewhere.has(&f.path));
    for f in gone {
        let _ = beneath(&f.root, &f.path, BeneathOp::Left { kind: f.kind, remove: true, locked });
    }
    kept
}

/// Where a policy wants placeholders ([`placeholder_paths`], for this process's home directory).
fn wanted_placeholders(policy: &SandboxPolicy, below: &BelowTop) -> Vec<(PathBuf, Kind)> {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    placeholder_paths(policy, below, home.as_deref())
}

/// The placeholders of a policy at `paths` ([`wanted_placeholders`]):
/// [`PLACEHOLDERS`](crate::policy::PLACEHOLDERS) at each writable root, with git writes allowed
/// `.git/hooks` and `.git/info` of a repository that has none, and when the home directory is
/// writable, the directories of [`HOME_PLACEHOLDERS`](crate::policy::HOME_PLACEHOLDERS) in it.
///
/// A placeholder a process left behind there (killed before it could remove it, or leaving it
/// to another process's command that held it) is removed first, as its maker would have, and
/// made again for this command (never the git directory's, which are kept); with the
/// [lock](crate::placeholder_lock) held (`locked`), one another process made that no command
/// holds too. One that a command of another mount namespace has a mount on stays, bound for this
/// command as a protected name that exists, and is returned, to be looked at again when this
/// command ends.
fn make_placeholders(
    policy: &SandboxPolicy,
    paths: Vec<(PathBuf, Kind)>,
    locked: bool,
) -> (Vec<Placeholder>, Vec<Found>) {
    let roots = policy.writable();
    #[cfg(target_os = "linux")]
    let found = {
        let there: Vec<Found> = (paths.iter())
            .filter(|(path, _)| !is_kept(path) && std::fs::symlink_metadata(path).is_ok())
            .filter_map(|(path, kind)| {
                let root = root_of(&roots, path)?.clone();
                Some(Found { root, path: path.clone(), kind: *kind })
            })
            .collect();
        let held = held().lock().unwrap_or_else(|p| p.into_inner());
        let left = left_behind(&there, locked, &held);
        // Whether a mount is made on one elsewhere is looked at once, and only when one is found.
        let kept: Vec<PathBuf> = match left.is_empty() {
            true => Vec::new(),
            false => {
                let elsewhere = crate::process_tree::MountsElsewhere::now();
                remove_left(left, locked, &elsewhere).into_iter().map(|f| f.path.clone()).collect()
            }
        };
        drop(held);
        there.into_iter().filter(|f| kept.contains(&f.path)).collect()
    };
    #[cfg(not(target_os = "linux"))]
    let found = {
        let _ = locked;
        Vec::new()
    };
    let placeholders = absent(&roots, paths)
        .into_iter()
        .filter_map(|(path, kind)| {
            let root = root_of(&roots, &path)?;
            let kept = is_kept(&path);
            Placeholder::hold(root, path, kind, kept)
        })
        .collect();
    (placeholders, found)
}

/// Where [`make_placeholders`] wants them, for the home directory `home`, each with what it is
/// made as (those to make now are [`absent`]). Besides the names above, the
/// directory `core.hooksPath` names inside a writable root (not to be made with hooks in), and
/// as files the git configuration files a repository's configuration includes that do not exist
/// there (outside `.git`, protected as a whole): a command creating one could name a hooks
/// directory and fill it in the same command.
fn placeholder_paths(policy: &SandboxPolicy, below: &BelowTop, home: Option<&Path>) -> Vec<(PathBuf, Kind)> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Vec::new();
    }
    let mut names: Vec<(&str, Kind)> = crate::policy::PLACEHOLDERS
        .iter()
        .filter(|name| policy.protected.iter().any(|p| p == Path::new(name)))
        .map(|name| (*name, Kind::Dir))
        .collect();
    if policy.git_writes {
        names.extend(GIT_PLACEHOLDERS);
    }
    let roots = &policy.writable_roots;
    let mut paths: Vec<(PathBuf, Kind)> =
        roots.iter().flat_map(|root| names.iter().map(|(name, kind)| (root.join(name), *kind))).collect();
    #[cfg(unix)]
    for top in below.repository_tops() {
        if policy.git_writes && !roots.contains(&top) {
            paths.extend(GIT_PLACEHOLDERS.map(|(name, kind)| (top.join(name), kind)));
        }
        let git = crate::git_config::git_reads(&top, roots);
        let outside_git =
            |file: &PathBuf| !roots.iter().chain([&top]).any(|r| file.starts_with(r.join(".git")));
        // Where a directory on the way is missing too, the first one missing is held instead (a
        // command could make `tools/githooks` when `tools` is absent).
        let wanted = git.hooks.into_iter().map(|hooks| (hooks, Kind::Dir));
        let wanted = wanted.chain(git.files.into_iter().map(|file| (file, Kind::File(b""))));
        paths.extend(
            wanted.filter(|(path, _)| outside_git(path)).map(|(path, kind)| first_missing(path, kind)),
        );
    }
    // A directory missing on the way is made, as an ordinary directory that stays (`~/.config`,
    // `~/.local`, `~/.cargo`): without it the command would make `~/.config/git/config` (hooks git
    // runs outside the sandbox); held itself, it would keep the command from all of `~/.config`.
    // Not where that directory is a protected name itself (`~/.aws` for `~/.aws/config`): held.
    if let Some((home, root)) = home.and_then(|home| Some((home, root_of(roots, home)?))) {
        let dirs = crate::policy::HOME_PLACEHOLDERS.iter().map(|name| (*name, Kind::Dir));
        let files = crate::policy::HOME_FILE_PLACEHOLDERS.iter().map(|name| (*name, Kind::File(b"")));
        for (name, kind) in dirs.chain(files) {
            let path = home.join(name);
            let protected_above = Path::new(name)
                .ancestors()
                .skip(1)
                .any(|above| crate::policy::HOME_PLACEHOLDERS.iter().any(|p| Path::new(p) == above));
            if !protected_above {
                for above in Path::new(name).ancestors().skip(1).collect::<Vec<_>>().into_iter().rev() {
                    if !above.as_os_str().is_empty() && std::fs::symlink_metadata(home.join(above)).is_err() {
                        let _ = beneath(root, &home.join(above), BeneathOp::MakePlain);
                    }
                }
            }
            paths.push((path, kind));
        }
    }
    // A link on the way, the name itself included (`~/.aws` -> `dotfiles/aws`, `CLAUDE.md` ->
    // `docs/CLAUDE.md`): a command would create the name by creating what the link leads to (the
    // links are bound onto themselves), so that is held, inside the roots, as the kernel would
    // create it: from the first missing directory on the way.
    let inside = |path: &Path| roots.iter().any(|r| path.starts_with(r));
    let wanted = std::mem::take(&mut paths);
    for (path, kind) in wanted {
        let followed = follow(&path);
        if followed.links.is_empty() {
            paths.push((path, kind));
            continue;
        }
        let last = followed.missing.len().saturating_sub(1);
        paths.extend(
            (followed.missing.into_iter().enumerate())
                .filter(|(_, (at, _))| inside(at))
                .map(|(i, (at, more))| (at, if i == last && !more { kind } else { Kind::Dir })),
        );
    }
    paths.sort();
    // One placeholder per path: a directory where one is wanted as a directory and as a file.
    paths.dedup_by(|later, earlier| later.0 == earlier.0);
    paths
}

/// Those of `paths` to make placeholders at: inside a writable root of `roots`, with a directory
/// as parent, and absent (or made by this process for another command, which holds it too).
fn absent(roots: &[PathBuf], mut paths: Vec<(PathBuf, Kind)>) -> Vec<(PathBuf, Kind)> {
    paths.retain(|(path, _)| {
        let inside = roots.iter().any(|r| path.starts_with(r));
        let parent_is_dir =
            path.parent().and_then(|p| std::fs::symlink_metadata(p).ok()).is_some_and(|m| m.is_dir());
        let held = held().lock().unwrap_or_else(|p| p.into_inner()).contains_key(path);
        inside && parent_is_dir && (held || std::fs::symlink_metadata(path).is_err())
    });
    paths
}

/// The writable root of `roots` that `path` lies beneath, the deepest where they nest.
fn root_of<'r>(roots: &'r [PathBuf], path: &Path) -> Option<&'r PathBuf> {
    roots.iter().filter(|r| path.starts_with(r)).max_by_key(|r| r.as_os_str().len())
}

/// Whether the placeholder at `path` is one of the git directory's, which stay once made.
fn is_kept(path: &Path) -> bool {
    GIT_PLACEHOLDERS.iter().any(|(name, _)| path.ends_with(name))
}

/// What following the symbolic links on the way to a path finds, as the kernel follows them.
#[derive(Debug, Default, PartialEq, Eq)]
struct Followed {
    /// The links passed, in order (at most 40 are followed, as the kernel does).
    links: Vec<PathBuf>,
    /// The existing directories a `..` climbed out of: each must stay where it is (a link put in
    /// its place would take the `..` elsewhere).
    climbed: Vec<PathBuf>,
    /// Where the names missing on the way would be created, each with whether it would be a
    /// directory: a missing directory that a `..` after it climbs out of (the walk goes on as
    /// if it were there, as it is once held), and the first missing name after which no `..`
    /// comes (the walk ends there: nothing can be made beneath it once it is held). Empty
    /// when the path exists.
    missing: Vec<(PathBuf, bool)>,
    /// Where the path leads, when it exists.
    end: Option<PathBuf>,
    /// A directory on the way this process may not search (a command's `chmod 000`): what
    /// lies beneath it cannot be known.
    unsearchable: Option<PathBuf>,
    /// Something on the way that is not a directory, with names after it (the kernel stops
    /// there): it must stay what it is (a command could put a directory in its place).
    blocked: Option<PathBuf>,
    /// Where the way could not be looked at, and why (a name too long, more than
    /// [`MAX_WAY`] links or `..`): nothing can be held beyond it.
    unresolved: Option<(PathBuf, String)>,
    /// A link of `/proc` on the way other than a process's `root` and `cwd` (a descriptor,
    /// `/dev/fd/3`, `/proc/self/exe`): it leads each process that follows it to what that
    /// process holds, so where it leads this process says nothing of where it leads a command
    /// or an agent, and the way is followed no further (the protected link itself stays held).
    /// A `root` leads every process of a mount namespace to the same place, and a `cwd` is
    /// followed as this process's (whose working directory is the agent's, which starts it).
    per_process: Option<PathBuf>,
}

/// The most links, and the most `..`, [`follow`] passes on one way (the kernel follows 40 links).
const MAX_WAY: usize = 40;

/// The most mounts a command's protected paths may take (pins, read-only paths, links): past
/// it no command starts, with an error naming why, rather than one that takes minutes to set
/// up (a command can plant many protected names, each leading through many links and `..`).
const MAX_MOUNTS: usize = 2048;

/// Follows the links on the way to `path` (absolute) one name at a time, without normalizing a
/// `..` as text: it climbs out of the directory reached, as the kernel's does.
fn follow(path: &Path) -> Followed {
    use std::ffi::OsString;
    use std::path::Component;
    let mut followed = Followed::default();
    let mut at = PathBuf::from("/");
    // The names still to walk, the next one last.
    let mut names: Vec<OsString> = Vec::new();
    let push = |names: &mut Vec<OsString>, path: &Path| {
        let parts: Vec<OsString> = (path.components())
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_owned()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        names.extend(parts.into_iter().rev());
    };
    push(&mut names, path);
    while let Some(name) = names.pop() {
        if name == ".." {
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
                followed.climbed.push(at.clone());
                if followed.climbed.len() > MAX_WAY {
                    followed.unresolved = Some((at, format!("more than {MAX_WAY} `..` on the way")));
                    return followed;
                }
            }
            at.pop();
            continue;
        }
        let next = at.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(meta)
                if meta.is_symlink()
                    && is_proc(&at)
                    && !name.to_str().is_some_and(|name| PROC_LINKS_FOLLOWED.contains(&name)) =>
            {
                followed.per_process = Some(next);
                return followed;
            }
            Ok(meta) if meta.is_symlink() => {
                let target = match std::fs::read_link(&next) {
                    Ok(target) => target,
                    Err(e) => {
                        followed.unresolved = Some((next, e.to_string()));
                        return followed;
                    }
                };
                followed.links.push(next);
                if followed.links.len() > MAX_WAY {
                    // The kernel follows no further: the way ends here.
                    return followed;
                }
                if target.is_absolute() {
                    at = PathBuf::from("/");
                }
                push(&mut names, &target);
            }
            Ok(meta) if !meta.is_dir() && !names.is_empty() => {
                followed.blocked = Some(next);
                return followed;
            }
            Ok(_) => at = next,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                followed.unsearchable = Some(at);
                return followed;
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                followed.unresolved = Some((next, e.to_string()));
                return followed;
            }
            Err(_) => {
                let climbs_out = names.last().is_some_and(|n| n == "..");
                followed.missing.push((next.clone(), !names.is_empty()));
                if !climbs_out {
                    return followed;
                }
                at = next;
            }
        }
    }
    if followed.missing.is_empty() {
        followed.end = Some(at);
    }
    followed
}

/// The links of `/proc` that [`follow`] follows: to a process's directory, and from there to its
/// root and its working directory.
const PROC_LINKS_FOLLOWED: &[&str] = &["self", "thread-self", "root", "cwd"];

/// Whether `path` lies on a `proc` file system.
fn is_proc(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::fs::statfs(path).is_ok_and(|fs| fs.f_type == rustix::fs::PROC_SUPER_MAGIC)
    }
    #[cfg(not(target_os = "linux"))]
    {
        path.starts_with("/proc")
    }
}

/// `path` (made as `kind`) when its parent is a directory; else the first of its ancestors that
/// is missing, as a directory.
fn first_missing(path: PathBuf, kind: Kind) -> (PathBuf, Kind) {
    let is_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if path.parent().is_none_or(is_dir) {
        return (path, kind);
    }
    let mut at = path.as_path();
    while let Some(parent) = at.parent() {
        if is_dir(parent) {
            return (at.to_path_buf(), Kind::Dir);
        }
        if std::fs::symlink_metadata(parent).is_ok() {
            // A file or a link on the way: nothing can be made beneath it.
            break;
        }
        at = parent;
    }
    (path, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory above a placeholder that a command replaced with a link does not lead the
    /// host to make the placeholder, or remove a directory of that name, where the link leads.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_placeholder_is_made_and_removed_only_beneath_its_root_never_through_a_link() {
        let base = std::env::temp_dir().join(format!("placeholder-links-{}", std::process::id()));
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::create_dir_all(outside.join("git")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a")).unwrap();
        assert!(Placeholder::hold(&root, root.join("a/made"), Kind::Dir, false).is_none());
        assert!(!outside.join("made").exists());
        // Made in a real directory, which is then swapped for a link to where `git` exists.
        let held = Placeholder::hold(&root, root.join("b/git"), Kind::Dir, false).expect("made");
        assert!(root.join("b/git").is_dir());
        std::fs::rename(root.join("b"), root.join("b-moved")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("b")).unwrap();
        drop(held);
        assert!(outside.join("git").is_dir(), "a directory was removed through a link");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// A way through a descriptor of `/proc` (directly, or through `/dev/fd`) is followed no
    /// further: where it leads this process says nothing of where it leads a command or an
    /// agent. One through a process's `root` or `cwd` is followed to where it leads.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_way_through_a_descriptor_in_proc_is_followed_no_further() {
        let fd = format!("/proc/{}/fd/0", std::process::id());
        let followed = follow(Path::new("/proc/self/fd/0"));
        assert_eq!(followed.per_process, Some(PathBuf::from(&fd)));
        assert_eq!((followed.end, followed.missing), (None, Vec::new()));
        let base = std::env::temp_dir().join(format!("follow-proc-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("real.md"), "x").unwrap();
        std::os::unix::fs::symlink("../../dev/fd/0", base.join("CLAUDE.md")).unwrap();
        let through_root = PathBuf::from("/proc/self/root").join(base.strip_prefix("/").unwrap());
        std::os::unix::fs::symlink(through_root.join("real.md"), base.join("AGENTS.md")).unwrap();
        let (descriptor, root) = (follow(&base.join("CLAUDE.md")), follow(&base.join("AGENTS.md")));
        let cwd = follow(&PathBuf::from("/proc/thread-self/cwd/x"));
        std::fs::remove_dir_all(&base).unwrap();
        assert_eq!(descriptor.per_process, Some(PathBuf::from(&fd)), "{descriptor:?}");
        assert_eq!(descriptor.links.first(), Some(&base.join("CLAUDE.md")));
        assert!(descriptor.end.is_none() && descriptor.missing.is_empty(), "{descriptor:?}");
        assert_eq!((root.per_process, root.end), (None, Some(base.join("real.md"))), "{:?}", root.links);
        let here = std::env::current_dir().unwrap().join("x");
        assert_eq!(cwd.per_process, None);
        assert!(
            cwd.end == Some(here.clone()) || cwd.missing.first().map(|(p, _)| p) == Some(&here),
            "{cwd:?}"
        );
    }

    /// The lock around placeholders is held from deciding which protected names exist until the
    /// command's child has made its mounts: another taker waits while the command is not yet
    /// spawned, and has it once it runs (let go of by its child, the host still holding what
    /// `apply_holding` returned).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_lock_around_placeholders_is_let_go_of_by_the_commands_child_once_its_mounts_are_made() {
        use crate::placeholder_lock::Lock;
        if !Probe::get().can_protect_paths() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI can make mount namespaces");
            eprintln!("skipped: no mount namespaces here");
            return;
        }
        let root = std::env::temp_dir().join(format!("placeholder-lock-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let sandbox = Sandbox::new(SandboxPolicy::workspace_write(&root)).unwrap();
        let mut command = std::process::Command::new("sleep");
        command.arg("30").current_dir(&root);
        let held = sandbox.apply_holding(&mut command, &root).unwrap();
        assert!(root.join("CLAUDE.md").is_dir(), "no placeholder");
        let (tx, rx) = std::sync::mpsc::channel();
        let taker = std::thread::spawn(move || {
            let lock = Lock::take();
            let _ = tx.send(());
            lock.is_held()
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "taken before the spawn");
        let mut child = command.spawn().unwrap();
        let taken = taker.join().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        drop(held);
        assert!(!root.join("CLAUDE.md").exists());
        std::fs::remove_dir_all(&root).unwrap();
        assert!(taken, "the lock stayed held while the command ran");
    }

    /// A directory an ordinary user's command made unsearchable (`chmod 600`), so that what is
    /// beneath it cannot be looked at, is read-only as a whole (root searches it anyway).
    #[cfg(target_os = "linux")]
    #[test]
    fn what_cannot_be_searched_is_read_only_as_a_whole() {
        use std::os::unix::fs::PermissionsExt;
        if nix::unistd::geteuid().is_root() {
            eprintln!("skipped: root searches every directory");
            return;
        }
        let root = std::env::temp_dir().join(format!("unsearchable-{}", std::process::id()));
        std::fs::create_dir_all(root.join("vendor/lib/.git/hooks")).unwrap();
        let policy = SandboxPolicy::workspace_write(&root);
        std::fs::set_permissions(root.join("vendor"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let targets = protected_targets(&policy, &policy.below_top(None), []);
        std::fs::set_permissions(root.join("vendor"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        let targets = targets.unwrap();
        assert!(targets.read_only.contains(&root.join("vendor")), "{targets:?}");
    }

    #[test]
    fn a_writable_home_gets_placeholders_for_the_directories_of_its_configuration_that_runs_code() {
        let home = std::env::temp_dir().join(format!("sandbox-home-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        let policy = SandboxPolicy::workspace_write(&home);
        let roots = policy.writable();
        let dirs = |policy: &SandboxPolicy| -> Vec<PathBuf> {
            absent(&policy.writable(), placeholder_paths(policy, &policy.below_top(None), Some(&home)))
                .into_iter()
                .filter(|(_, kind)| *kind == Kind::Dir)
                .map(|(p, _)| p)
                .collect()
        };
        let paths = dirs(&policy);
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles/kube")).unwrap();
        std::os::unix::fs::symlink("dotfiles/kube", home.join(".kube")).unwrap();
        let files: Vec<PathBuf> =
            absent(&roots, placeholder_paths(&policy, &policy.below_top(None), Some(&home)))
                .into_iter()
                .filter(|(_, kind)| *kind == Kind::File(b""))
                .map(|(p, _)| p)
                .collect();
        for name in [".gitconfig", ".bash_aliases", ".aws/config", "dotfiles/kube/config"] {
            assert!(files.contains(&home.join(name)), "{name}: {files:?}");
        }
        assert!(!files.contains(&home.join(".bash_profile")), "bash would no longer read .profile");
        let elsewhere = dirs(&SandboxPolicy::workspace_write(home.join(".config")));
        std::fs::remove_dir_all(&home).unwrap();
        for name in [".ssh", ".config/git", ".config/systemd", "CLAUDE.md", ".git"] {
            assert!(paths.contains(&home.join(name)), "{name}: {paths:?}");
        }
        // Present already: nothing to hold. Without its parent: the parent is made (an ordinary
        // directory) and the name held.
        assert!(!paths.contains(&home.join(".local/bin")) && paths.contains(&home.join(".cargo/bin")));
        assert!(!elsewhere.contains(&home.join(".ssh")), "{elsewhere:?}");
    }
}
