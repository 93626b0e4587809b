//! A policy made ready for the kernel: checked against the probe once, then applied to each
//! command it confines.

use std::fmt;
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::Arc;

use crate::policy::{Fallback, Network, SandboxMode, SandboxPolicy};
use crate::probe::Probe;

/// What confines a command, as it applies on this kernel: the mode, the layers, the Landlock
/// ABI, and what the policy asked for that this kernel cannot give.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxReport {
    /// The mode.
    pub mode: SandboxMode,
    /// The layers that apply: `landlock` (files), `landlock-tcp`, `landlock-scope` (signals and
    /// abstract Unix sockets), `seccomp`, `read-only-mounts` (protected paths),
    /// `network-namespace` (a network namespace of the commands' own: only loopback, and only
    /// the proxy listening there).
    pub layers: Vec<&'static str>,
    /// The Landlock ABI in use.
    pub landlock_abi: Option<u32>,
    /// The network.
    pub network: Network,
    /// What the policy asked for that does not apply here, in words.
    pub missing: Vec<String>,
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
    #[cfg(target_os = "linux")]
    seccomp: Option<Arc<Vec<seccompiler::sock_filter>>>,
    /// The network namespace commands join.
    #[cfg(target_os = "linux")]
    namespace: Option<Arc<crate::child::NamespaceFds>>,
    protect: bool,
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
        Self::with_probe(policy, Probe::get())
    }

    /// As [`Sandbox::new`], against the given probe (a probe of another machine, or a test's).
    pub fn with_probe(policy: SandboxPolicy, probe: Probe) -> Result<Sandbox, SandboxError> {
        let mut report = SandboxReport {
            mode: policy.mode,
            layers: Vec::new(),
            landlock_abi: None,
            network: policy.network,
            missing: Vec::new(),
        };
        if policy.mode == SandboxMode::Off {
            return Ok(Sandbox::unconfined(policy, report));
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
        if !policy.unix_sockets.is_empty() && !policy.all_unix_sockets && probe.landlock_abi < Some(9) {
            report.missing.push(format!(
                "Unix sockets by path limited to those listed (allowUnixSockets): it needs Landlock ABI 9 \
                 (the kernel offers {}), so every socket file this user may write can be connected to",
                probe.landlock_abi.map_or("none".to_owned(), |abi| abi.to_string())
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
        let protect = probe.can_protect_paths() && !policy.protected_paths().is_empty();
        if !probe.can_protect_paths() && policy.mode == SandboxMode::WorkspaceWrite {
            report.missing.push(
                "protected paths inside writable roots (.git/hooks, .git/config, ...) stay writable: read-only \
                 mounts need a mount namespace, which this process cannot create"
                    .to_owned(),
            );
        }
        if !refusals.is_empty() && policy.fallback == Fallback::Refuse {
            return Err(SandboxError { mode: policy.mode, missing: refusals });
        }
        report.missing.extend(refusals);
        Self::build(policy, probe, report, protect)
    }

    fn unconfined(policy: SandboxPolicy, report: SandboxReport) -> Sandbox {
        Sandbox {
            policy,
            report,
            #[cfg(target_os = "linux")]
            landlock: None,
            #[cfg(target_os = "linux")]
            seccomp: None,
            #[cfg(target_os = "linux")]
            namespace: None,
            protect: false,
        }
    }

    #[cfg(target_os = "linux")]
    fn build(
        policy: SandboxPolicy,
        probe: Probe,
        mut report: SandboxReport,
        protect: bool,
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
        let mut tcp = false;
        if let Some(abi) = probe.landlock_abi {
            match crate::landlock_rules::ruleset(&policy, abi, namespace.is_some()) {
                Ok((fd, enforced)) => {
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
            match crate::seccomp::program(network) {
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
        if namespace.is_some() {
            report.layers.push(NAMESPACE_LAYER);
        }
        Ok(Sandbox { policy, report, landlock, seccomp, namespace, protect })
    }

    #[cfg(not(target_os = "linux"))]
    fn build(
        policy: SandboxPolicy,
        _probe: Probe,
        report: SandboxReport,
        _protect: bool,
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
                && let Ok((fd, enforced)) = crate::landlock_rules::ruleset(&self.policy, abi, true)
            {
                self.landlock = Some(Arc::new(fd));
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
    pub fn apply(&self, command: &mut std::process::Command, cwd: &Path) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if self.policy.mode == SandboxMode::Off {
                return Ok(());
            }
            let mounts = if self.protect { self.mount_plan(cwd)? } else { None };
            let plan = crate::child::ChildPlan {
                network: self.namespace.clone(),
                mounts,
                landlock: self.landlock.clone(),
                seccomp: self.seccomp.clone(),
            };
            crate::child::install(command, plan);
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (command, cwd);
            Ok(())
        }
    }

    /// The mounts that make the protected paths that exist read-only, pin their parents, and
    /// the user namespace they need when this process lacks `CAP_SYS_ADMIN`.
    #[cfg(target_os = "linux")]
    fn mount_plan(&self, cwd: &Path) -> std::io::Result<Option<crate::child::MountPlan>> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
        };
        let targets = protected_targets(&self.policy);
        if targets.read_only.is_empty() {
            return Ok(None);
        }
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
        Ok(Some(crate::child::MountPlan {
            user_namespace,
            pins: targets.pins.iter().map(|p| c(p)).collect::<Result<_, _>>()?,
            read_only,
            cwd: c(cwd)?,
        }))
    }
}

/// The report's name of the network namespace layer.
const NAMESPACE_LAYER: &str = "network-namespace";

/// What is not enforced when commands reach a proxy's port without a network namespace of
/// their own, and `why`.
fn unconfined_port(port: u16, why: &str) -> String {
    format!(
        "the proxy alone: Landlock's TCP rule allows port {port} on every address (127.0.0.2, ::1, other \
         machines), which only a network namespace of the commands' own would close ({why})"
    )
}

/// The read-only mounts and pinned directories that protect a policy's paths.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Targets {
    /// Bound onto themselves, so that they cannot be renamed away and replaced.
    pub(crate) pins: Vec<PathBuf>,
    /// Bound read-only.
    pub(crate) read_only: Vec<PathBuf>,
}

/// Which paths to mount read-only and which to pin, for the protected paths beneath the
/// writable roots as the file system is now. A protected path whose parent on the way is a file
/// (a `.git` file of a worktree) protects that file instead; one that is a symbolic link
/// protects its directory (a mount would follow the link); one that does not exist is skipped.
pub(crate) fn protected_targets(policy: &SandboxPolicy) -> Targets {
    let mut targets = Targets::default();
    if policy.mode != SandboxMode::WorkspaceWrite {
        return targets;
    }
    let roots = policy.writable();
    for path in policy.protected_paths() {
        let Some(root) = roots.iter().filter(|r| path.starts_with(r)).max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let Ok(rest) = path.strip_prefix(root) else { continue };
        let mut dir = root.clone();
        let mut pins = vec![root.clone()];
        let mut target = None;
        let components: Vec<_> = rest.components().collect();
        for (i, part) in components.iter().enumerate() {
            let next = dir.join(part);
            let Ok(meta) = std::fs::symlink_metadata(&next) else { break };
            let last = i + 1 == components.len();
            if meta.file_type().is_symlink() {
                target = Some(dir.clone());
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
        targets.read_only.push(target);
        targets.pins.extend(pins);
    }
    for list in [&mut targets.pins, &mut targets.read_only] {
        list.sort();
        list.dedup();
    }
    // A directory that is read-only need not be pinned as well.
    let read_only = targets.read_only.clone();
    targets.pins.retain(|p| !read_only.contains(p));
    targets
}
