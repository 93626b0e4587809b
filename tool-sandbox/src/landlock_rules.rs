//! The Landlock ruleset: read where reading is allowed, write beneath the writable roots, the
//! devices every command uses, TCP only to the proxy, and signals and abstract sockets scoped to
//! the command.

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
/// Device directories whose entries commands may read and write: pseudo-terminals.
const DEVICE_DIRS: &[&str] = &["/dev/pts"];

/// What the ruleset enforces, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Enforced {
    pub(crate) abi: u32,
    pub(crate) tcp: bool,
    pub(crate) scopes: bool,
}

/// Builds the ruleset for `policy` at the kernel's ABI `kernel_abi`, refusing (rather than
/// silently dropping) any right the kernel lacks. `namespaced`: the commands run in a network
/// namespace of their own, where connecting anywhere reaches only what is inside it.
pub(crate) fn ruleset(
    policy: &SandboxPolicy,
    kernel_abi: u32,
    namespaced: bool,
) -> Result<(OwnedFd, Enforced), String> {
    let abi = ABI::from(kernel_abi as i32);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    // Block and character devices made inside a writable root would open the disks and memory.
    let write = all & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let device = read | AccessFs::WriteFile | (all & AccessFs::IoctlDev);
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
    let fail = |e: landlock::RulesetError| format!("the Landlock ruleset could not be built: {e}");

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(fail)?;
    if tcp {
        ruleset = ruleset.handle_access(net).map_err(fail)?;
    }
    if scopes {
        ruleset = ruleset.scope(scope).map_err(fail)?;
    }
    let mut created = ruleset.create().map_err(fail)?;
    let readable: Vec<PathBuf> = match &policy.readable_roots {
        None => vec![PathBuf::from("/")],
        Some(roots) => roots.clone(),
    };
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = readable.into_iter().map(|p| (p, read)).collect();
    rules.extend(policy.writable().into_iter().map(|p| (p, write)));
    rules.extend(DEVICES.iter().map(|d| (PathBuf::from(d), device & file_rights(abi))));
    rules.extend(DEVICE_DIRS.iter().map(|d| (PathBuf::from(d), device)));
    // ABI 9 handles connecting to Unix sockets by path (outside the writable roots, refused):
    // the sockets listed, or all of them, are granted.
    if all.contains(AccessFs::ResolveUnix) {
        if policy.all_unix_sockets {
            rules.push((PathBuf::from("/"), AccessFs::ResolveUnix.into()));
        }
        rules.extend(policy.unix_sockets.iter().map(|p| (p.clone(), AccessFs::ResolveUnix.into())));
    }
    for (path, access) in rules {
        let Some(fd) = open(&path) else { continue };
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(fail)?;
    }
    if let (true, Network::Proxy { port }) = (net.contains(AccessNet::ConnectTcp), policy.network) {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(fail)?;
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| "the kernel did not create a Landlock ruleset".to_owned())?;
    Ok((fd, Enforced { abi: kernel_abi, tcp, scopes }))
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
