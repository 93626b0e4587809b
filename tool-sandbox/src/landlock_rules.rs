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
/// silently dropping) any right the kernel lacks.
pub(crate) fn ruleset(policy: &SandboxPolicy, kernel_abi: u32) -> Result<(OwnedFd, Enforced), String> {
    let abi = ABI::from(kernel_abi as i32);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    // Block and character devices made inside a writable root would open the disks and memory.
    let write = all & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let device = read | AccessFs::WriteFile | (all & AccessFs::IoctlDev);
    let tcp = kernel_abi >= 4 && policy.network != Network::On;
    let scopes = kernel_abi >= 6;
    let fail = |e: landlock::RulesetError| format!("the Landlock ruleset could not be built: {e}");

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(fail)?;
    if tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4)).map_err(fail)?;
    }
    if scopes {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(fail)?;
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
    for (path, access) in rules {
        let Some(fd) = open(&path) else { continue };
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(fail)?;
    }
    if let (true, Network::Proxy { port }) = (tcp, policy.network) {
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
