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
    /// A network namespace to join (and the user namespace that owns it, when it has one).
    pub(crate) network: Option<Arc<NamespaceFds>>,
    /// A mount namespace with read-only bind mounts.
    pub(crate) mounts: Option<MountPlan>,
    /// The Landlock ruleset to enforce.
    pub(crate) landlock: Option<Landlock>,
    /// The seccomp program to load.
    pub(crate) seccomp: Option<Arc<Vec<sock_filter>>>,
    /// `RLIMIT_NPROC` to set, where the child is in a user namespace of the commands' own.
    pub(crate) processes: Option<u64>,
}

/// The Landlock ruleset of a command.
#[derive(Debug)]
pub(crate) enum Landlock {
    /// The sandbox's, shared by its commands.
    Shared(Arc<OwnedFd>),
    /// One made for this command alone, to which the child adds a rule on the `/dev/pts` it
    /// mounted, with these rights (the kernel's bits): a rule added to a shared ruleset would
    /// reach every later command.
    Own { ruleset: OwnedFd, terminals: u64 },
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
    /// Symbolic links bound onto themselves (not followed), so that they cannot be removed or
    /// replaced.
    pub(crate) links: Vec<CString>,
    /// Directories of the host's own, each covered by an empty read-only tmpfs.
    pub(crate) hidden: Vec<CString>,
    /// Sockets, files and directories bound back, alone, in a hidden directory.
    pub(crate) revealed: Vec<Revealed>,
    /// Files each covered by an empty read-only one ([`BLANK`]).
    pub(crate) blanked: Vec<CString>,
    /// The flags of [`BLANK`]'s mount, which a read-only remount of it must keep.
    pub(crate) blank_flags: libc::c_ulong,
    /// What the command finds at `/dev/shm`.
    pub(crate) shm: SharedMemory,
    /// The working directory, entered again once the mounts are there.
    pub(crate) cwd: CString,
    /// Where the child sends a descriptor of its new mount namespace, for the host to know the
    /// command's processes by ([`namespace_report`]).
    pub(crate) report: Option<OwnedFd>,
    /// The [lock around placeholders](crate::placeholder_lock), a copy of the host's descriptor:
    /// let go of once the mounts are made.
    pub(crate) unlock: Option<OwnedFd>,
}

/// A socket, file or directory that stays reachable at its own path in a hidden directory.
#[derive(Debug)]
pub(crate) struct Revealed {
    /// The hidden directory it lies in.
    pub(crate) dir: CString,
    /// The directories between `dir` and the target, outermost first, made in the empty one.
    pub(crate) dirs: Vec<CString>,
    /// The target's own path, where it is bound back (a directory with what is mounted beneath
    /// it).
    pub(crate) target: CString,
    /// Whether the target is a directory.
    pub(crate) directory: bool,
}

/// At most this many paths are bound back in one hidden directory (the child may not allocate,
/// so their descriptors are held in an array).
pub(crate) const MAX_REVEALED: usize = 16;

/// What covers an unreadable file: empty to read, and bound read-only.
pub(crate) const BLANK: &CStr = c"/dev/null";

/// What a command with a mount namespace finds at `/dev/shm`.
#[derive(Debug, Default)]
pub(crate) enum SharedMemory {
    /// The host's.
    #[default]
    Host,
    /// This directory, bound there.
    Bound(CString),
    /// An empty read-only tmpfs.
    Hidden,
}

impl ChildPlan {
    /// Runs the plan in the child. Async-signal-safe: system calls on prepared data only.
    fn run(&self) -> io::Result<()> {
        // First: a user namespace joined here owns the mount namespace made next.
        if let Some(network) = &self.network {
            network.join()?;
        }
        // The command's own `/dev/pts`, held as a path until it is granted below.
        let mut terminals = None;
        if let Some(mounts) = &self.mounts {
            terminals = mounts.run()?;
        }
        // What the command holds of the host's: its terminal, descriptors and capabilities.
        leave_terminal()?;
        close_inherited()?;
        no_core_dumps()?;
        let own_user_namespace = self.network.as_ref().is_some_and(|n| n.user.is_some())
            || self.mounts.as_ref().is_some_and(|m| m.user_namespace.is_some());
        if let Some(max) = self.processes.filter(|_| own_user_namespace) {
            // Counted per user namespace (Linux 5.14 and later): the commands' processes only.
            let limit = libc::rlimit { rlim_cur: max, rlim_max: max };
            // SAFETY: `limit` is a valid `rlimit` for the kernel to read.
            check(unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) }.into())?;
        }
        // Before the capabilities go: with `no_new_privs`, Landlock and seccomp need none.
        no_new_privs()?;
        drop_capabilities()?;
        match &self.landlock {
            Some(Landlock::Shared(ruleset)) => landlock_restrict_self(ruleset)?,
            Some(Landlock::Own { ruleset, terminals: access }) => {
                if let Some(dir) = terminals {
                    landlock_add_path_rule(ruleset, dir, *access)?;
                }
                landlock_restrict_self(ruleset)?;
            }
            None => {}
        }
        if let Some(dir) = terminals {
            // SAFETY: `dir` was opened by `mount_terminals` and is closed once.
            unsafe { libc::close(dir) };
        }
        if let Some(program) = &self.seccomp {
            seccomp_load(program)?;
        }
        Ok(())
    }
}

impl MountPlan {
    /// Makes the mounts; `Ok` holds the command's own `/dev/pts`, opened as a path, when there
    /// are terminals there to grant.
    fn run(&self) -> io::Result<Option<libc::c_int>> {
        match &self.user_namespace {
            // System V IPC (shared memory segments, message queues, semaphores) of its own: the
            // host's and other processes' are keyed by number, and no file rule reaches them.
            None => unshare(libc::CLONE_NEWNS | libc::CLONE_NEWIPC)?,
            Some((uid_map, gid_map)) => {
                unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWIPC)?;
                write_file(c"/proc/self/setgroups", c"deny")?;
                write_file(c"/proc/self/uid_map", uid_map)?;
                write_file(c"/proc/self/gid_map", gid_map)?;
            }
        }
        if let Some(report) = &self.report {
            send_namespace(report);
        }
        // Nothing done here may reach the parent's namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        mount_shared_memory(&self.shm)?;
        let terminals = mount_terminals()?;
        for pin in &self.pins {
            mount(Some(pin), pin, libc::MS_BIND | libc::MS_REC)?;
        }
        for (path, flags) in &self.read_only {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
            mount(None, path, libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags)?;
        }
        for link in &self.links {
            match bind_link(link) {
                // One removed since the plan was made holds nothing; a kernel before 5.2 holds
                // none (such a kernel has no Landlock either).
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOSYS)) => {}
                result => result?,
            }
        }
        for path in &self.hidden {
            let revealed = || self.revealed.iter().filter(|r| r.dir.as_c_str() == path.as_c_str());
            // One removed since the plan was made (another session's, ended) hides nothing.
            let mounted = if revealed().next().is_none() {
                mount_empty(path)
            } else {
                mount_revealing(path, revealed())
            };
            match mounted {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                result => result?,
            }
        }
        for path in &self.blanked {
            // One removed since the plan was made, or within a hidden directory, is out of reach.
            match mount(Some(BLANK), path, libc::MS_BIND) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                result => result?,
            }
            mount(None, path, libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | self.blank_flags)?;
        }
        // The working directory was entered before the mounts: enter it again through them, or
        // relative paths would reach the files beneath them.
        chdir(&self.cwd)?;
        if let Some(lock) = &self.unlock {
            // SAFETY: `flock` on a descriptor this plan owns.
            check(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_UN) }.into())?;
        }
        Ok(terminals)
    }
}

/// Makes `command` run `plan` in its child before `exec`.
pub(crate) fn install(command: &mut std::process::Command, plan: ChildPlan) {
    // SAFETY: the closure runs in the forked child before `exec`. `ChildPlan::run` only makes
    // system calls (`setns`, `unshare`, `open`/`write`/`close`, `fstat`, `mkdir`, `mount`,
    // `open_tree`/`move_mount`, `chdir`, `flock`, `setsid`, `ioctl`, `close_range`, `fcntl`,
    // `getrlimit`/`setrlimit`, `prctl`, `capset`, `landlock_add_rule`, `landlock_restrict_self`,
    // `seccomp`) on data prepared before the fork or on the stack,
    // allocates nothing (`io::Error::last_os_error` holds a bare errno) and takes no lock, so it
    // is async-signal-safe as `pre_exec` requires.
    unsafe {
        command.pre_exec(move || plan.run());
    }
}

/// A socket pair for [`MountPlan::report`]: the end the host reads ([`receive_namespace`]) and
/// the end the child sends on, both closed on `exec`.
pub(crate) fn namespace_report() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType};
    Ok(nix::sys::socket::socketpair(AddressFamily::Unix, SockType::Datagram, None, SockFlag::SOCK_CLOEXEC)?)
}

/// The descriptor of its mount namespace the child sent on `socket` ([`send_namespace`]), once
/// the command has started (the child sends it before `exec`); `None` when it sent none.
pub(crate) fn receive_namespace(socket: &OwnedFd) -> Option<OwnedFd> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags};
    let mut data = [0u8; 1];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let mut iov = [io::IoSliceMut::new(&mut data)];
    let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC;
    let message =
        nix::sys::socket::recvmsg::<()>(socket.as_raw_fd(), &mut iov, Some(&mut space), flags).ok()?;
    let mut received = Vec::new();
    for cmsg in message.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            received.extend(fds);
        }
    }
    // SAFETY: the kernel just installed these descriptors in this process for this message;
    // nothing else owns them.
    let mut fds =
        received.into_iter().map(|fd| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    fds.next()
}

/// Sends a descriptor of this process's mount namespace on `socket`, in the child; on failure
/// nothing, and the host then knows no namespace of the command's.
fn send_namespace(socket: &OwnedFd) {
    // SAFETY: `open` of a C string literal; the descriptor is closed below.
    let fd = unsafe { libc::open(c"/proc/self/ns/mnt".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    let _ = send(socket, &[0], &[fd]);
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
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

/// Binds the symbolic link `link` onto itself: `open_tree` and `move_mount` (Linux 5.2) take the
/// link itself where `mount` would follow it. A mount point cannot be removed or renamed over,
/// so the name keeps leading where it led.
fn bind_link(link: &CStr) -> io::Result<()> {
    let flags =
        libc::OPEN_TREE_CLONE | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: `link` is NUL-terminated and outlives the call; the kernel writes no memory of ours.
    let tree = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, link.as_ptr(), flags) };
    check(tree)?;
    let tree = tree as libc::c_int;
    // SAFETY: `tree` was just opened; the empty path and `link` are NUL-terminated. Without
    // `MOVE_MOUNT_T_SYMLINKS` the target link is not followed.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            link.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    let error = io::Error::last_os_error();
    // SAFETY: `tree` is ours and closed once.
    unsafe { libc::close(tree) };
    if moved == -1 { Err(error) } else { Ok(()) }
}

/// Mounts an empty, read-only tmpfs on `target`.
fn mount_empty(target: &CStr) -> io::Result<()> {
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let (fs, data) = (c"tmpfs", c"mode=0");
    // SAFETY: every string is NUL-terminated and outlives the call.
    check(
        unsafe { libc::mount(fs.as_ptr(), target.as_ptr(), fs.as_ptr(), flags, data.as_ptr().cast()) }.into(),
    )
}

/// Covers `target` with an empty tmpfs in which only the `revealed` paths are, each bound at its
/// own path (the directories to it searchable), then makes it read-only. Each is opened (as a
/// path only) in this mount namespace before it is covered: a bind mount takes its source from
/// the caller's own namespace only.
fn mount_revealing<'a>(target: &CStr, revealed: impl Iterator<Item = &'a Revealed>) -> io::Result<()> {
    let mut held: [(libc::c_int, Option<&Revealed>); MAX_REVEALED] = [(-1, None); MAX_REVEALED];
    for (slot, revealed) in held.iter_mut().zip(revealed) {
        // SAFETY: the path is NUL-terminated and outlives the call.
        let fd = unsafe {
            libc::open(revealed.target.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        };
        // One gone since the plan was made is not revealed.
        *slot = (fd, (fd >= 0).then_some(revealed));
    }
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let (fs, data) = (c"tmpfs", c"mode=0711");
    // SAFETY: every string is NUL-terminated and outlives the call.
    check(
        unsafe { libc::mount(fs.as_ptr(), target.as_ptr(), fs.as_ptr(), flags, data.as_ptr().cast()) }.into(),
    )?;
    for (fd, revealed) in held {
        let Some(revealed) = revealed else { continue };
        for dir in
            revealed.dirs.iter().map(CString::as_c_str).chain(revealed.directory.then_some(&*revealed.target))
        {
            // SAFETY: `dir` is NUL-terminated and outlives the call.
            if unsafe { libc::mkdir(dir.as_ptr(), 0o711) } != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
            {
                return Err(io::Error::last_os_error());
            }
        }
        if !revealed.directory {
            // SAFETY: as above; the descriptor is closed at once.
            let file = unsafe {
                libc::open(revealed.target.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o600)
            };
            if file < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `file` was just opened here.
            unsafe { libc::close(file) };
        }
        let mut path = [0u8; 32];
        // A directory with the mounts beneath it (protected paths, hidden ones).
        let recursive = if revealed.directory { libc::MS_REC } else { 0 };
        mount(Some(fd_path(fd, &mut path)), &revealed.target, libc::MS_BIND | recursive)?;
        // SAFETY: `fd` was opened above and is not used again.
        unsafe { libc::close(fd) };
    }
    mount(None, target, libc::MS_REMOUNT | libc::MS_RDONLY | flags)
}

/// `/proc/self/fd/FD`, written into `buffer` (no allocation, for the child).
fn fd_path(fd: libc::c_int, buffer: &mut [u8; 32]) -> &CStr {
    numbered_path(b"/proc/self/fd/", fd.unsigned_abs(), buffer)
}

/// `prefix` followed by `n` in decimal, written into `buffer` (no allocation, for the child).
/// `prefix` holds at most 20 bytes.
fn numbered_path<'a>(prefix: &[u8], n: u32, buffer: &'a mut [u8; 32]) -> &'a CStr {
    const PREFIX: usize = 20;
    let prefix = &prefix[..prefix.len().min(PREFIX)];
    buffer[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut count) = (n, 0);
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..count {
        buffer[prefix.len() + i] = digits[count - 1 - i];
    }
    buffer[prefix.len() + count] = 0;
    CStr::from_bytes_until_nul(&buffer[..]).unwrap_or(c"/")
}

/// Where pseudo-terminals are.
const TERMINALS: &CStr = c"/dev/pts";
/// The options of a command's own devpts instance: new terminals readable and writable by the
/// command's user (and written to by its group, as `write` does), and a `ptmx` anyone may open.
const DEVPTS_OPTIONS: &CStr = c"newinstance,ptmxmode=0666,mode=0620";
/// `UNIX98_PTY_SLAVE_MAJOR`: the device number of a pseudo-terminal is this and its index.
const TERMINAL_MAJOR: u32 = 136;

/// Gives the command a `/dev/pts` of its own, in which the host's terminals (the user's, other
/// commands') are not: only the terminals it is given as standard input, output or error, and
/// those it makes itself. Returns what was mounted there, opened as a path, for the command's
/// Landlock ruleset to grant (a rule on the host's `/dev/pts` would not reach what is mounted
/// over it; none is made); `None` when there is nothing to grant.
///
/// A command given no terminal gets a devpts instance of its own there, as containers do:
/// `/dev/ptmx` opens the instance at `pts` beside it (Linux 4.7+), so the terminals it makes
/// are there under the names `ptsname` gives. A command given one (`bash`'s terminal commands)
/// gets a read-only file system there holding that terminal alone, under its own name, so that
/// `tty` still names it. That command makes no terminal: `/dev/ptmx` finds no devpts instance
/// beside it (`ENODEV`), and one elsewhere would not do, since the kernel opens the other side of
/// a new terminal (`TIOCGPTPEER`) only in the instance at `pts` beside the `ptmx` opened, and
/// `ptsname` names it there. Where a devpts instance cannot be mounted, `/dev/pts` is empty and
/// `/dev/ptmx` answers `ENODEV` too.
fn mount_terminals() -> io::Result<Option<libc::c_int>> {
    // Opened by their names before those are covered, in this namespace: a bind mount takes its
    // source from the caller's own namespace only.
    let mut given = [(-1, 0u32); 3];
    let mut count = 0;
    for fd in 0..3 {
        let Some(index) = terminal_index(fd) else { continue };
        if given[..count].iter().any(|&(_, held)| held == index) {
            continue;
        }
        let mut buffer = [0u8; 32];
        let path = numbered_path(b"/dev/pts/", index, &mut buffer);
        let held = open_path(path);
        if held < 0 {
            continue;
        }
        if same_file(fd, held) {
            given[count] = (held, index);
            count += 1;
        } else {
            // SAFETY: `held` was opened above and is closed once.
            unsafe { libc::close(held) };
        }
    }
    let mounted = if count == 0 { own_instance() } else { given_terminals(&given[..count]) };
    for &(held, _) in &given[..count] {
        // SAFETY: each was opened above and is closed once.
        unsafe { libc::close(held) };
    }
    match mounted? {
        false => Ok(None),
        true => {
            let dir = open_path(TERMINALS);
            check(dir.into())?;
            Ok(Some(dir))
        }
    }
}

/// Mounts a devpts instance of the command's own on `/dev/pts`, or where that fails, an empty
/// file system. `Ok(true)`: the instance is there.
fn own_instance() -> io::Result<bool> {
    let fs = c"devpts";
    let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    // SAFETY: every string is NUL-terminated and outlives the call.
    let mounted = check(
        unsafe {
            libc::mount(fs.as_ptr(), TERMINALS.as_ptr(), fs.as_ptr(), flags, DEVPTS_OPTIONS.as_ptr().cast())
        }
        .into(),
    );
    match mounted {
        Ok(()) => Ok(true),
        // A host without `/dev/pts` has no terminal there to hide.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(_) => mount_empty(TERMINALS).map(|()| false),
    }
}

/// Covers `/dev/pts` with a file system holding the `given` terminals (held open as paths, each
/// with its index) under their names, then makes it read-only. `Ok(true)`: they are there.
fn given_terminals(given: &[(libc::c_int, u32)]) -> io::Result<bool> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let (fs, data) = (c"tmpfs", c"mode=0755");
    // SAFETY: every string is NUL-terminated and outlives the call.
    check(
        unsafe { libc::mount(fs.as_ptr(), TERMINALS.as_ptr(), fs.as_ptr(), flags, data.as_ptr().cast()) }
            .into(),
    )?;
    for &(held, index) in given {
        let mut name = [0u8; 32];
        let name = numbered_path(b"/dev/pts/", index, &mut name);
        // SAFETY: the path is NUL-terminated and outlives the call; the descriptor is closed at once.
        let file =
            unsafe { libc::open(name.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o600) };
        check(file.into())?;
        // SAFETY: `file` was just opened here.
        unsafe { libc::close(file) };
        let mut source = [0u8; 32];
        mount(Some(fd_path(held, &mut source)), name, libc::MS_BIND)?;
    }
    mount(None, TERMINALS, libc::MS_REMOUNT | libc::MS_RDONLY | flags)?;
    Ok(true)
}

/// `path` opened as a path only (not followed if a link), or -1.
fn open_path(path: &CStr) -> libc::c_int {
    // SAFETY: the path is NUL-terminated and outlives the call.
    unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) }
}

/// The index of the pseudo-terminal open on `fd`, if it is one.
fn terminal_index(fd: libc::c_int) -> Option<u32> {
    // SAFETY: `stat` is plain data, for which all zeroes is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out pointer; a descriptor that is not open answers `EBADF`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFCHR {
        return None;
    }
    (libc::major(st.st_rdev) == TERMINAL_MAJOR).then(|| libc::minor(st.st_rdev))
}

/// Whether the descriptors `a` and `b` name the same file.
fn same_file(a: libc::c_int, b: libc::c_int) -> bool {
    // SAFETY: `stat` is plain data, for which all zeroes is valid.
    let (mut x, mut y): (libc::stat, libc::stat) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: both are valid out pointers.
    let both = unsafe { libc::fstat(a, &mut x) == 0 && libc::fstat(b, &mut y) == 0 };
    both && x.st_dev == y.st_dev && x.st_ino == y.st_ino
}

/// Mounts what `shm` says on `/dev/shm`, where there is one: the host's shared memory and
/// semaphores are then out of the command's reach.
fn mount_shared_memory(shm: &SharedMemory) -> io::Result<()> {
    let target = c"/dev/shm";
    let mounted = match shm {
        SharedMemory::Host => return Ok(()),
        SharedMemory::Bound(dir) => mount(Some(dir), target, libc::MS_BIND),
        SharedMemory::Hidden => mount_empty(target),
    };
    match mounted {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    check(unsafe { libc::chdir(path.as_ptr()) }.into())
}

pub(crate) fn no_new_privs() -> io::Result<()> {
    // SAFETY: `prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)` takes integers only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into())
}

/// Takes the child away from the host's controlling terminal (its input, its foreground group,
/// `/dev/tty`): the child leads a new session, which has none. A child that leads a session
/// already (with a terminal of its own, taken before the plan runs) keeps it. One that leads a
/// process group (`process_group(0)`) cannot start a session: it lets go of the terminal instead
/// (`TIOCNOTTY`, which in a process that does not lead its session detaches that process alone,
/// and what it starts later).
fn leave_terminal() -> io::Result<()> {
    // SAFETY: these calls take and return integers only.
    let (pid, session, group) = unsafe { (libc::getpid(), libc::getsid(0), libc::getpgid(0)) };
    if session == pid {
        return Ok(());
    }
    if group != pid {
        // SAFETY: `setsid` takes nothing.
        return check(unsafe { libc::setsid() }.into());
    }
    // SAFETY: the path is NUL-terminated and static.
    let fd = unsafe { libc::open(c"/dev/tty".as_ptr(), libc::O_RDONLY | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if fd < 0 {
        let error = io::Error::last_os_error();
        // No controlling terminal (or no `/dev/tty` to reach one through): nothing to leave.
        return match error.raw_os_error() {
            Some(libc::ENXIO | libc::ENOENT) => Ok(()),
            _ => Err(error),
        };
    }
    // SAFETY: `fd` was just opened and is ours; `TIOCNOTTY` takes no argument.
    let detached = unsafe { libc::ioctl(fd, libc::TIOCNOTTY) };
    let error = io::Error::last_os_error();
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    if detached == -1 { Err(error) } else { Ok(()) }
}

/// Closes every descriptor above standard error of this process (a helper that shuts itself
/// in).
pub(crate) fn close_above_stderr() -> io::Result<()> {
    above_stderr(false)
}

/// Marks every descriptor above standard error close-on-exec, so that the command gets its
/// standard input, output and error and nothing else the host holds open (a descriptor that
/// whatever started the host left inheritable). Marked rather than closed: the plan still uses
/// some until `exec` (the Landlock ruleset; a cgroup a caller joins through).
fn close_inherited() -> io::Result<()> {
    above_stderr(true)
}

/// Closes, or marks close-on-exec (`mark`), every descriptor above standard error.
fn above_stderr(mark: bool) -> io::Result<()> {
    let flags = if mark { libc::CLOSE_RANGE_CLOEXEC } else { 0 };
    // SAFETY: `close_range` takes integers only.
    if unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, flags) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if !matches!(error.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) {
        return Err(error);
    }
    // Before Linux 5.9 (5.11 to mark): each descriptor below the limit, one at a time.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid `rlimit` for the kernel to fill in.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }.into())?;
    let end = libc::c_int::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
    for fd in 3..end {
        if !mark {
            // SAFETY: integers only; a descriptor that is not open answers `EBADF`, ignored.
            unsafe { libc::close(fd) };
            continue;
        }
        // SAFETY: integers only; a descriptor that is not open answers `EBADF`, which is ignored.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            // SAFETY: as above.
            check(unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) }.into())?;
        }
    }
    Ok(())
}

/// Sets the soft limit on core dumps to 0: a command that crashes leaves no copy of its memory
/// in its working directory (the workspace) unless it raises the limit again (`ulimit -c`), up
/// to the hard limit, which stays.
fn no_core_dumps() -> io::Result<()> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid `rlimit` for the kernel to fill in, then to read.
    check(unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut limit) }.into())?;
    limit.rlim_cur = 0;
    // SAFETY: as above.
    check(unsafe { libc::setrlimit(libc::RLIMIT_CORE, &limit) }.into())
}

/// `struct __user_cap_header_struct` of `capset`.
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct` of `capset`: one for capabilities 0 to 31, one for 32 to 63.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapabilitySets {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets, two `CapabilitySets`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability of the child: the bounding set, the ambient set, then the effective,
/// permitted and inheritable sets. As root (or in a user namespace, where the child holds every
/// capability until here) the command would keep them, and with them reach what Landlock and
/// seccomp do not cover: another process's environment through `/proc`, the kernel log, other
/// users' files. Emptying the bounding set needs `CAP_SETPCAP`; an ordinary user outside a user
/// namespace has none to drop, and `no_new_privs` keeps any program it runs from gaining one.
pub(crate) fn drop_capabilities() -> io::Result<()> {
    for capability in 0.. {
        // SAFETY: `prctl` with integers only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) } == 0 {
            continue;
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            // Past the last capability this kernel knows; or without `CAP_SETPCAP`.
            Some(libc::EINVAL | libc::EPERM) => break,
            _ => return Err(error),
        }
    }
    // SAFETY: `prctl` with integers only.
    let cleared = unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0)
    };
    // Before Linux 4.3 there is no ambient set (`EINVAL`).
    if cleared == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return Err(io::Error::last_os_error());
    }
    let header = CapabilityHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let none = [CapabilitySets { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: `header` and `none` have the kernel's layout for version 3 and outlive the call,
    // which only reads them.
    check(unsafe { libc::syscall(libc::SYS_capset, &header as *const CapabilityHeader, none.as_ptr()) })
}

/// `struct landlock_path_beneath_attr`, packed as the kernel has it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Adds to `ruleset` a rule granting `access` (the kernel's bits) beneath the directory open
/// (as a path) on `dir`.
fn landlock_add_path_rule(ruleset: &OwnedFd, dir: libc::c_int, access: u64) -> io::Result<()> {
    let attr = PathBeneathAttr { allowed_access: access, parent_fd: dir };
    // SAFETY: `attr` has the kernel's layout and outlives the call, which only reads it; flags 0.
    check(unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    })
}

/// Has `command`'s process enter the Landlock domain of `ruleset` before it runs (no new
/// privileges first, as the kernel requires of a process without `CAP_SYS_ADMIN`), with no
/// descriptor but its standard ones (none that whatever started the host left inheritable,
/// which the domain would not keep it from reading through `/dev/fd`).
pub(crate) fn run_in_domain(command: &mut std::process::Command, ruleset: &'static OwnedFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only makes system calls (`close_range` or `fcntl`, `prctl`,
    // `landlock_restrict_self`), which are async-signal-safe as `pre_exec` requires, on a
    // descriptor open for the life of the process.
    unsafe {
        command.pre_exec(move || {
            close_inherited()?;
            no_new_privs()?;
            landlock_restrict_self(ruleset)
        });
    }
}

fn landlock_restrict_self(ruleset: &OwnedFd) -> io::Result<()> {
    // SAFETY: the ruleset descriptor is open for the life of the plan; flags 0.
    check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) })
}

pub(crate) fn seccomp_load(program: &[sock_filter]) -> io::Result<()> {
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

/// Whether a child can make a mount namespace (with an IPC namespace) directly, and whether it
/// can make a user namespace: each is tried in a child of its own that then runs `true`.
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
    let own = libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
    (try_flags(own), try_flags(libc::CLONE_NEWUSER | own))
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

/// A network namespace made for commands, held open by its handles: `/proc/…/ns/net` of the
/// thread or process that made it, and `/proc/…/ns/user` when it was made inside a user
/// namespace of its own (a process without `CAP_SYS_ADMIN`).
#[derive(Debug)]
pub(crate) struct NamespaceFds {
    pub(crate) net: OwnedFd,
    pub(crate) user: Option<OwnedFd>,
}

impl NamespaceFds {
    /// Joins the namespaces, in the child. Async-signal-safe: two `setns` calls.
    fn join(&self) -> io::Result<()> {
        if let Some(user) = &self.user {
            // A process whose user owns the namespace has every capability in it once joined,
            // which `setns` of the network namespace below needs.
            nix::sched::setns(user, nix::sched::CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)?;
        }
        nix::sched::setns(&self.net, nix::sched::CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
    }
}

/// What making a namespace gives: its handles, and the listener made inside it when one was
/// asked for.
#[derive(Debug)]
pub(crate) struct MadeNamespace {
    pub(crate) fds: NamespaceFds,
    pub(crate) listener: Option<std::net::TcpListener>,
}

/// Where making a namespace failed, for the error's words.
const STEPS: &[&str] = &[
    "creating a user and network namespace (unshare)",
    "writing the user namespace's setgroups, uid_map or gid_map",
    "bringing the loopback interface up",
    "listening on 127.0.0.1 inside the namespace",
    "opening the namespace's handles in /proc/self/ns",
    "sending the handles back",
];

pub(crate) fn step_error(step: usize, errno: i32) -> io::Error {
    let os = io::Error::from_raw_os_error(errno);
    io::Error::new(os.kind(), format!("{}: {os}", STEPS.get(step).copied().unwrap_or("an unknown step")))
}

/// Makes a network namespace in a short-lived thread of this process (which needs
/// `CAP_SYS_ADMIN`: a thread may change its network namespace, unlike its user namespace), with
/// the loopback interface up when `up` or `listen` and, when `listen`, a socket listening on
/// `127.0.0.1:`[`PROXY_PORT`](crate::NetworkNamespace::PROXY_PORT) created inside it. The thread ends at once; the namespace lives on while a
/// handle, the listener or a process in it does.
pub(crate) fn namespace_by_thread(up: bool, listen: bool) -> io::Result<MadeNamespace> {
    let made = std::thread::Builder::new().name("tool-sandbox-netns".into()).spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
            io::Error::new(io::Error::from(e).kind(), format!("creating a network namespace (unshare): {e}"))
        })?;
        let net = OwnedFd::from(std::fs::File::open("/proc/thread-self/ns/net")?);
        if up || listen {
            loopback_up().map_err(|e| step_error(2, e.raw_os_error().unwrap_or(libc::EIO)))?;
        }
        let listener = if listen {
            Some(std::net::TcpListener::bind((
                std::net::Ipv4Addr::LOCALHOST,
                crate::NetworkNamespace::PROXY_PORT,
            ))?)
        } else {
            None
        };
        Ok(MadeNamespace { fds: NamespaceFds { net, user: None }, listener })
    })?;
    made.join().map_err(|_| io::Error::other("the thread making a network namespace panicked"))?
}

/// Makes a user namespace and a network namespace in it, in a forked helper process (a process
/// of many threads cannot enter a new user namespace), which sets them up as
/// [`namespace_by_thread`] does, sends their handles (and the listener) back over a Unix socket
/// pair, and exits.
pub(crate) fn namespace_by_helper(up: bool, listen: bool) -> io::Result<MadeNamespace> {
    use nix::sys::socket::{AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType};
    let (ours, theirs) =
        nix::sys::socket::socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)?;
    let (uid, gid) = ids();
    let uid_map = CString::new(format!("{uid} {uid} 1")).map_err(io::Error::other)?;
    let gid_map = CString::new(format!("{gid} {gid} 1")).map_err(io::Error::other)?;
    let pid = fork()?;
    if pid == 0 {
        // The child: only async-signal-safe calls on what was prepared above, then `_exit`.
        let (step, errno) = match helper(&theirs, up || listen, listen, &uid_map, &gid_map) {
            Ok(()) => exit(0),
            Err(failed) => failed,
        };
        let mut report = [0u8; 8];
        report[..4].copy_from_slice(&(step as u32).to_ne_bytes());
        report[4..].copy_from_slice(&errno.to_ne_bytes());
        let _ = send(&theirs, &report, &[]);
        exit(1);
    }
    drop(theirs);
    let mut data = [0u8; 8];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 3]);
    let received = {
        let mut iov = [io::IoSliceMut::new(&mut data)];
        nix::sys::socket::recvmsg::<()>(
            ours.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map(|msg| {
            let mut fds = Vec::new();
            for cmsg in msg.cmsgs().into_iter().flatten() {
                if let ControlMessageOwned::ScmRights(received) = cmsg {
                    fds.extend(received);
                }
            }
            (msg.bytes, fds)
        })
    };
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    let (bytes, fds) = received?;
    // SAFETY: the kernel just installed these descriptors in this process for this message;
    // nothing else owns them.
    let mut fds: std::collections::VecDeque<OwnedFd> =
        fds.into_iter().map(|fd| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }).collect();
    if bytes == 8 && fds.is_empty() {
        let step = u32::from_ne_bytes(data[..4].try_into().unwrap_or_default()) as usize;
        let errno = i32::from_ne_bytes(data[4..].try_into().unwrap_or_default());
        return Err(step_error(step, errno));
    }
    let expected = if listen { 3 } else { 2 };
    if fds.len() != expected {
        return Err(io::Error::other(format!(
            "the helper making a network namespace sent {} handles instead of {expected}",
            fds.len()
        )));
    }
    let (Some(net), Some(user)) = (fds.pop_front(), fds.pop_front()) else { unreachable!() };
    let listener = fds.pop_front().map(std::net::TcpListener::from);
    Ok(MadeNamespace { fds: NamespaceFds { net, user: Some(user) }, listener })
}

/// The helper's work, after the fork; `Err((step, errno))` names the step that failed.
fn helper(
    sock: &OwnedFd,
    up: bool,
    listen: bool,
    uid_map: &CStr,
    gid_map: &CStr,
) -> Result<(), (usize, i32)> {
    let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET).map_err(|e| (0, errno(e)))?;
    write_file(c"/proc/self/setgroups", c"deny")
        .and_then(|()| write_file(c"/proc/self/uid_map", uid_map))
        .and_then(|()| write_file(c"/proc/self/gid_map", gid_map))
        .map_err(|e| (1, errno(e)))?;
    let mut fds = [-1; 3];
    let mut count = 2;
    if up {
        loopback_up().map_err(|e| (2, errno(e)))?;
    }
    if listen {
        fds[2] = listen_on_loopback().map_err(|e| (3, errno(e)))?;
        count = 3;
    }
    fds[0] = open_read(c"/proc/self/ns/net").map_err(|e| (4, errno(e)))?;
    fds[1] = open_read(c"/proc/self/ns/user").map_err(|e| (4, errno(e)))?;
    send(sock, &[0], &fds[..count]).map_err(|e| (5, errno(e)))
}

fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: the child (0) runs `helper` and `exit` only: system calls on data prepared before
    // the fork, no allocation, no lock (async-signal-safe, as a fork of a process of many
    // threads requires).
    let pid = unsafe { libc::fork() };
    check(pid.into())?;
    Ok(pid)
}

fn exit(code: i32) -> ! {
    // SAFETY: `_exit` ends the forked helper without running this process's destructors or
    // `atexit` handlers, which belong to the parent.
    unsafe { libc::_exit(code) }
}

/// Brings the loopback interface of this thread's network namespace up (`SIOCSIFFLAGS`), as
/// `ip link set lo up` does. Async-signal-safe.
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: `socket` takes integers only.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    check(fd.into())?;
    // SAFETY: `fd` was just created and is ours alone.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: `ifreq` is plain data, for which all zeroes is valid.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: `request` is a valid `ifreq` naming the interface; the kernel writes its flags.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) }.into())?;
    // SAFETY: SIOCGIFFLAGS filled in `ifru_flags`, the union's member read and written here.
    unsafe { request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: as above; the kernel reads the flags.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &request) }.into())
}

/// A TCP socket listening on `127.0.0.1:`[`PROXY_PORT`](crate::NetworkNamespace::PROXY_PORT). Async-signal-safe.
fn listen_on_loopback() -> io::Result<libc::c_int> {
    // SAFETY: `socket` takes integers only.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    check(fd.into())?;
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: crate::NetworkNamespace::PROXY_PORT.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `addr` is a valid `sockaddr_in` of `len` bytes that outlives the call.
    check(unsafe { libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len) }.into())?;
    // SAFETY: `listen` takes integers only.
    check(unsafe { libc::listen(fd, libc::SOMAXCONN) }.into())?;
    Ok(fd)
}

fn open_read(path: &CStr) -> io::Result<libc::c_int> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(fd.into())?;
    Ok(fd)
}

/// Room for three descriptors in one `SCM_RIGHTS` message, aligned as a `cmsghdr`.
#[repr(C)]
struct Rights {
    header: libc::cmsghdr,
    fds: [libc::c_int; 3],
}

/// Sends `data` and the descriptors `fds` (at most three) over the Unix socket `sock`.
/// Async-signal-safe: the message is built on the stack.
fn send(sock: &OwnedFd, data: &[u8], fds: &[libc::c_int]) -> io::Result<()> {
    let count = fds.len().min(3);
    let mut rights = Rights {
        // SAFETY: `cmsghdr` is plain data, for which all zeroes is valid.
        header: unsafe { std::mem::zeroed() },
        fds: [-1; 3],
    };
    rights.fds[..count].copy_from_slice(&fds[..count]);
    let bytes = (count * std::mem::size_of::<libc::c_int>()) as libc::c_uint;
    // SAFETY: `CMSG_LEN` and `CMSG_SPACE` compute sizes only.
    let (len, space) = unsafe { (libc::CMSG_LEN(bytes), libc::CMSG_SPACE(bytes)) };
    rights.header.cmsg_len = len as _;
    rights.header.cmsg_level = libc::SOL_SOCKET;
    rights.header.cmsg_type = libc::SCM_RIGHTS;
    let mut iov = libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() };
    // SAFETY: `msghdr` is plain data, for which all zeroes is valid.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    if count > 0 {
        message.msg_control = (&mut rights as *mut Rights).cast();
        message.msg_controllen = space as _;
    }
    // SAFETY: `message` points at `iov` (over `data`) and `rights`, which outlive the call;
    // `CMSG_SPACE` of the descriptors' bytes fits in `Rights`, whose data starts right after the
    // aligned header, where `CMSG_DATA` puts it.
    let sent = unsafe { libc::sendmsg(sock.as_raw_fd(), &message, libc::MSG_NOSIGNAL) };
    check(sent as libc::c_long)
}
