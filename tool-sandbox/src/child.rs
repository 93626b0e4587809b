//! The system calls: the kernel's answers for the probe, and what the child makes between
//! `fork` and `exec`. Everything the child uses is prepared before the fork; the child itself
//! only makes async-signal-safe system calls and allocates nothing.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

use seccompiler::sock_filter;

/// What the child does before `exec`, in this order.
#[derive(Debug, Default)]
pub(crate) struct ChildPlan {
    /// A mount namespace with read-only bind mounts.
    pub(crate) mounts: Option<MountPlan>,
    /// The Landlock ruleset to enforce.
    pub(crate) landlock: Option<Arc<OwnedFd>>,
    /// The seccomp program to load.
    pub(crate) seccomp: Option<Arc<Vec<sock_filter>>>,
}

/// The mounts of the child's own mount namespace.
#[derive(Debug, Default)]
pub(crate) struct MountPlan {
    /// Without `CAP_SYS_ADMIN`: the user namespace's `uid_map` and `gid_map` lines.
    pub(crate) user_namespace: Option<(CString, CString)>,
    /// Directories bound onto themselves, so that they cannot be renamed or removed.
    pub(crate) pins: Vec<CString>,
    /// Paths bound onto themselves read-only, each with the flags its mount already has (which a
    /// user namespace may not drop).
    pub(crate) read_only: Vec<(CString, libc::c_ulong)>,
    /// The working directory, entered again once the mounts are there.
    pub(crate) cwd: CString,
}

impl ChildPlan {
    /// Runs the plan in the child. Async-signal-safe: system calls on prepared data only.
    fn run(&self) -> io::Result<()> {
        if let Some(mounts) = &self.mounts {
            mounts.run()?;
        }
        if self.landlock.is_some() || self.seccomp.is_some() {
            no_new_privs()?;
        }
        if let Some(fd) = &self.landlock {
            landlock_restrict_self(fd)?;
        }
        if let Some(program) = &self.seccomp {
            seccomp_load(program)?;
        }
        Ok(())
    }
}

impl MountPlan {
    fn run(&self) -> io::Result<()> {
        match &self.user_namespace {
            None => unshare(libc::CLONE_NEWNS)?,
            Some((uid_map, gid_map)) => {
                unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)?;
                write_file(c"/proc/self/setgroups", c"deny")?;
                write_file(c"/proc/self/uid_map", uid_map)?;
                write_file(c"/proc/self/gid_map", gid_map)?;
            }
        }
        // Nothing done here may reach the parent's namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        for pin in &self.pins {
            mount(Some(pin), pin, libc::MS_BIND | libc::MS_REC)?;
        }
        for (path, flags) in &self.read_only {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
            mount(None, path, libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags)?;
        }
        // The working directory was entered before the mounts: enter it again through them, or
        // relative paths would reach the files beneath them.
        chdir(&self.cwd)
    }
}

/// Makes `command` run `plan` in its child before `exec`.
pub(crate) fn install(command: &mut std::process::Command, plan: ChildPlan) {
    // SAFETY: the closure runs in the forked child before `exec`. `ChildPlan::run` only makes
    // system calls (`unshare`, `open`/`write`/`close`, `mount`, `chdir`, `prctl`,
    // `landlock_restrict_self`, `seccomp`) on data prepared before the fork, allocates nothing
    // (`io::Error::last_os_error` holds a bare errno) and takes no lock, so it is
    // async-signal-safe as `pre_exec` requires.
    unsafe {
        command.pre_exec(move || plan.run());
    }
}

fn check(result: libc::c_long) -> io::Result<()> {
    if result == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: `unshare` takes flags only and touches no memory of ours.
    check(unsafe { libc::unshare(flags) }.into())
}

fn write_file(path: &CStr, data: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd.into())?;
    let bytes = data.to_bytes();
    // SAFETY: `bytes` is valid for `bytes.len()` bytes; `fd` was just opened and is ours.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn mount(source: Option<&CStr>, target: &CStr, flags: libc::c_ulong) -> io::Result<()> {
    let source = source.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: both strings are NUL-terminated (or null, which `mount` accepts for a remount or a
    // propagation change) and outlive the call; no file system type or data is passed.
    check(unsafe { libc::mount(source, target.as_ptr(), std::ptr::null(), flags, std::ptr::null()) }.into())
}

fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    check(unsafe { libc::chdir(path.as_ptr()) }.into())
}

fn no_new_privs() -> io::Result<()> {
    // SAFETY: `prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)` takes integers only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into())
}

fn landlock_restrict_self(ruleset: &OwnedFd) -> io::Result<()> {
    // SAFETY: the ruleset descriptor is open for the life of the plan; flags 0.
    check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) })
}

fn seccomp_load(program: &[sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        // `seccompiler::sock_filter` has the kernel's layout (`repr(C)`, same fields).
        filter: program.as_ptr().cast_mut().cast(),
    };
    // SAFETY: `fprog` points at `program`, which outlives the call; the kernel copies it.
    check(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &fprog as *const libc::sock_fprog,
        )
    })
}

/// The highest Landlock ABI the kernel offers.
pub(crate) fn landlock_abi() -> Option<u32> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    u32::try_from(abi).ok().filter(|&abi| abi > 0)
}

/// Whether seccomp filters can be installed: the kernel knows the errno action.
pub(crate) fn seccomp_available() -> bool {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads the `u32` behind the pointer, which lives on.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0 as libc::c_uint,
            &action as *const u32,
        )
    };
    rc == 0
}

/// Whether a child can make a mount namespace directly, and whether it can make a user
/// namespace: each is tried in a child of its own that then runs `true`.
pub(crate) fn namespaces_available() -> (bool, bool) {
    let try_flags = |flags: libc::c_int| {
        let mut command = std::process::Command::new("true");
        command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
        // SAFETY: the closure makes one system call (`unshare`) and allocates nothing.
        unsafe {
            command.pre_exec(move || unshare(flags));
        }
        command.status().is_ok_and(|s| s.success())
    };
    (try_flags(libc::CLONE_NEWNS), try_flags(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))
}

/// The flags of the mount `path` is on that a bind remount must keep (`nosuid`, `nodev`,
/// `noexec`, the access time flags).
pub(crate) fn locked_mount_flags(path: &CStr) -> libc::c_ulong {
    // SAFETY: `statvfs` writes a `libc::statvfs` into `buf`, which is large enough.
    let mut buf: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated; `buf` is a valid out pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut buf) } != 0 {
        return 0;
    }
    let f = buf.f_flag;
    let mut flags = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st != 0 {
            flags |= ms;
        }
    }
    flags
}

/// The user and group ids of this process.
pub(crate) fn ids() -> (u32, u32) {
    // SAFETY: neither call can fail or touch memory.
    unsafe { (libc::geteuid(), libc::getegid()) }
}
