//! The Landlock ruleset: read where reading is allowed (devices aside), write beneath the
//! writable roots, the devices every command uses, TCP only to the proxy, and signals and
//! abstract sockets scoped to the command.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use crate::policy::{Network, SandboxPolicy};

/// Devices any command may read and write (and, for terminals, control).
const DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"];
/// The directory of devices, which a readable root above it does not open: reading a terminal
/// there is reading what the user types, and other devices (input events, sound, video, disks,
/// the kernel log) are no better.
const DEV: &str = "/dev";
/// What in `/dev` a readable root above it still covers: file systems of ordinary files.
const DEV_READABLE: &[&str] = &["/dev/shm", "/dev/mqueue", "/dev/hugepages"];

/// What the ruleset enforces, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Enforced {
    pub(crate) abi: u32,
    pub(crate) tcp: bool,
    pub(crate) scopes: bool,
}

/// The rules of a policy's Landlock ruleset, their paths opened ([`rules`]).
#[derive(Debug)]
pub(crate) struct Rules {
    handled: BitFlags<AccessFs>,
    net: BitFlags<AccessNet>,
    scope: Option<BitFlags<Scope>>,
    paths: Vec<(PathFd, BitFlags<AccessFs>)>,
    port: Option<u16>,
    pub(crate) enforced: Enforced,
}

/// The rules of the ruleset for `policy` at the kernel's ABI `kernel_abi`, refusing (rather than
/// silently dropping) any right the kernel lacks. `namespaced`: the commands run in a network
/// namespace of their own, where connecting anywhere reaches only what is inside it.
/// `/dev/pts` is not granted: the host's terminals are the user's. A command with a mount
/// namespace gets its own there, and its child adds a rule for them to its own copy of the
/// ruleset ([`terminal_access`]).
///
/// Their paths are opened here, once: [`Rules::build`] makes as many rulesets of them as needed
/// (one shared by the commands, one of its own for each command with terminals of its own),
/// without opening or listing anything again.
pub(crate) fn rules(policy: &SandboxPolicy, kernel_abi: u32, namespaced: bool) -> Result<Rules, String> {
    let abi = ABI::from(kernel_abi as i32);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    // Block and character devices made inside a writable root would open the disks and memory.
    let write = all & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let device = device_rights(abi);
    let tcp_rules = kernel_abi >= 4 && policy.network != Network::On;
    let mut net = BitFlags::<AccessNet>::EMPTY;
    if tcp_rules && !policy.allow_local_binding {
        net |= AccessNet::BindTcp;
    }
    if tcp_rules && !(namespaced && policy.allow_local_binding) {
        net |= AccessNet::ConnectTcp;
    }
    let tcp = !net.is_empty();
    let scopes = kernel_abi >= 6;
    // Abstract Unix sockets of other processes stay reachable when every Unix socket is allowed.
    let scope = if policy.all_unix_sockets { Scope::Signal.into() } else { Scope::from_all(ABI::V6) };
    let readable: Vec<PathBuf> = match &policy.readable_roots {
        None => vec![PathBuf::from("/")],
        Some(roots) => roots.clone(),
    };
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> =
        readable.iter().flat_map(|root| readable_rules(root, read, abi)).collect();
    rules.extend(policy.writable().into_iter().map(|p| (p, write)));
    rules.extend(DEVICES.iter().map(|d| (PathBuf::from(d), device & file_rights(abi))));
    // ABI 9 handles connecting to Unix sockets by path (outside the writable roots, refused):
    // the sockets listed, or all of them, are granted.
    if all.contains(AccessFs::ResolveUnix) {
        if policy.all_unix_sockets {
            rules.push((PathBuf::from("/"), AccessFs::ResolveUnix.into()));
        }
        rules.extend(policy.unix_sockets.iter().map(|p| (p.clone(), AccessFs::ResolveUnix.into())));
    }
    let paths = rules.into_iter().filter_map(|(path, access)| Some((open(&path)?, access))).collect();
    let port = match (net.contains(AccessNet::ConnectTcp), policy.network) {
        (true, Network::Proxy { port }) => Some(port),
        _ => None,
    };
    Ok(Rules {
        handled: all,
        net: if tcp { net } else { BitFlags::EMPTY },
        scope: scopes.then_some(scope),
        paths,
        port,
        enforced: Enforced { abi: kernel_abi, tcp, scopes },
    })
}

impl Rules {
    /// A new ruleset holding these rules.
    pub(crate) fn build(&self) -> Result<OwnedFd, String> {
        let fail = |e: landlock::RulesetError| format!("the Landlock ruleset could not be built: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(self.handled)
            .map_err(fail)?;
        if !self.net.is_empty() {
            ruleset = ruleset.handle_access(self.net).map_err(fail)?;
        }
        if let Some(scope) = self.scope {
            ruleset = ruleset.scope(scope).map_err(fail)?;
        }
        let mut created = ruleset.create().map_err(fail)?;
        for (fd, access) in &self.paths {
            created = created.add_rule(PathBeneath::new(fd, *access)).map_err(fail)?;
        }
        if let Some(port) = self.port {
            created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(fail)?;
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| "the kernel did not create a Landlock ruleset".to_owned())
    }
}

/// A Landlock ruleset that grants no write (but to `/dev/null`), no TCP, no signal and no
/// abstract socket beyond the process's own domain, and reads everything: the domain the host's
/// own helpers run in (git asked about a repository a command may have made). Being in a domain of its own, such a
/// helper may not reach into another process through `/proc` where the kernel asks whether it
/// may trace that process (its descriptors, its memory, its root and working directory; not its
/// environment or command line, which it may read as before): a configuration that includes
/// `/proc/<host>/fd/0` cannot have it read the host's input. Built once; `None` where the
/// kernel has no Landlock.
pub(crate) fn reader_ruleset() -> Option<&'static OwnedFd> {
    static RULESET: std::sync::OnceLock<Option<OwnedFd>> = std::sync::OnceLock::new();
    RULESET
        .get_or_init(|| {
            let abi = ABI::from(i32::try_from(crate::child::landlock_abi()?).ok()?);
            let write = AccessFs::from_write(abi);
            let created = Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(write)
                .ok()?
                // All of them, which a kernel without them leaves out (best effort): the sets of
                // its own ABI would be empty below ABI 4 and 6, which the crate refuses, and git
                // would run with no domain at all.
                .handle_access(AccessNet::from_all(ABI::V4))
                .ok()?
                .scope(Scope::from_all(ABI::V6))
                .ok()?
                .create()
                .ok()?
                // Git opens `/dev/null` for reading and writing when it starts, and stops if it
                // cannot.
                .add_rule(PathBeneath::new(PathFd::new("/dev/null").ok()?, write & AccessFs::from_file(abi)))
                .ok()?;
            created.into()
        })
        .as_ref()
}

/// Shuts this process in, for a helper that needs nothing but the descriptors it has, its
/// memory and its threads (a script's interpreter in a process of its own): closes every
/// descriptor above standard error, drops every capability, enters a Landlock domain that grants
/// no access to any file, no TCP, and no signal or abstract socket outside it (as far as the
/// kernel has Landlock), and loads a seccomp filter that refuses every other system call (no
/// file opened or looked at, no socket of any kind, no process, namespace or program, no other
/// process reached, no memory made executable). Call it first in the helper's `main`, before it
/// opens or starts anything. `Ok(false)` where the kernel has no Landlock (the rest applies all
/// the same).
pub fn shut_in() -> std::io::Result<bool> {
    crate::child::close_above_stderr()?;
    crate::child::drop_capabilities()?;
    let landlock = match crate::child::landlock_abi().and_then(|abi| i32::try_from(abi).ok()) {
        Some(abi) => {
            let status = Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(AccessFs::from_all(ABI::from(abi)))
                .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4)))
                .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI::V6)))
                .and_then(|ruleset| ruleset.create())
                .and_then(|ruleset| ruleset.restrict_self())
                .map_err(std::io::Error::other)?;
            status.ruleset != landlock::RulesetStatus::NotEnforced
        }
        None => false,
    };
    crate::child::no_new_privs()?;
    for program in crate::seccomp::helper_programs().map_err(std::io::Error::other)? {
        crate::child::seccomp_load(&program)?;
    }
    Ok(landlock)
}

/// The rules that let commands read beneath `root`: `read` on it, or where `/dev` lies beneath
/// it, listing it and reading each of its entries but the one on the way to `/dev` (and so on
/// down), and in `/dev` only [`DEV_READABLE`]. Landlock only grants, and a grant covers all
/// beneath it, so leaving `/dev` out means granting its siblings one by one: an entry made
/// beside them later (a new directory in `/`) is not readable. Symbolic links are left out: what
/// they lead to is read by its own path.
fn readable_rules(root: &Path, read: BitFlags<AccessFs>, abi: ABI) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let dev = Path::new(DEV);
    if !dev.starts_with(&root) {
        return vec![(root, read)];
    }
    let mut rules = vec![(root.clone(), read & AccessFs::ReadDir)];
    let mut dir = root;
    while dir != dev {
        let Some(next) = dev.strip_prefix(&dir).ok().and_then(|rest| rest.components().next()) else {
            break;
        };
        let next = dir.join(next);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if path == next || kind.is_symlink() {
                continue;
            }
            let rights = if kind.is_dir() { read } else { read & file_rights(abi) };
            rules.push((path, rights));
        }
        dir = next;
    }
    rules.extend(DEV_READABLE.iter().map(|d| (PathBuf::from(d), read)));
    rules
}

/// What a command may do with a device it may use: read, write and control it.
fn device_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_read(abi) | AccessFs::WriteFile | (AccessFs::from_all(abi) & AccessFs::IoctlDev)
}

/// The rights, as the kernel's bits, on the command's own `/dev/pts` (what its child mounted
/// there), at the kernel's ABI `kernel_abi`: those on any device.
pub(crate) fn terminal_access(kernel_abi: u32) -> u64 {
    device_rights(ABI::from(kernel_abi as i32)).bits()
}

/// The rights that apply to a file (not a directory): a rule on a file may only hold these.
fn file_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_file(abi)
}

/// An `O_PATH` handle on `path`, or `None` when it does not exist (a root that is not there has
/// nothing to grant).
fn open(path: &Path) -> Option<PathFd> {
    PathFd::new(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readable_root_above_dev_leaves_its_devices_out() {
        let read = AccessFs::from_read(ABI::V5);
        let rules = readable_rules(Path::new("/"), read, ABI::V5);
        let paths: Vec<&Path> = rules.iter().map(|(path, _)| path.as_path()).collect();
        // `/` itself is listed, not read; its other entries are read.
        assert_eq!(rules[0], (PathBuf::from("/"), read & AccessFs::ReadDir));
        assert!(paths.contains(&Path::new("/etc")) && paths.contains(&Path::new("/proc")), "{paths:?}");
        for path in &paths[1..] {
            let inside_dev = path.starts_with(DEV);
            assert!(!inside_dev || DEV_READABLE.iter().any(|d| path == &Path::new(d)), "{path:?}");
            assert!(*path != Path::new(DEV), "{paths:?}");
        }
        // Elsewhere a root is granted whole.
        assert_eq!(readable_rules(Path::new("/etc"), read, ABI::V5), [(PathBuf::from("/etc"), read)]);
        assert_eq!(
            readable_rules(Path::new("/dev"), read, ABI::V5)[0],
            (PathBuf::from("/dev"), read & AccessFs::ReadDir)
        );
    }
}
