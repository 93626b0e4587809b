//! What a command's process does between `fork` and `exec` to be found and stopped as a whole:
//! join its cgroups, lead a session of its own, adopt its orphans.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Makes the process `command` spawns join `cgroups` (each a `cgroup.procs` open for writing,
/// [`Cgroup::procs_for_joining`](super::Cgroup::procs_for_joining); at most four are joined),
/// lead a new session without a controlling terminal or, with `terminal`, with its standard
/// input as one, and, with `subreaper`, adopt the processes it orphans; interrupts
/// (`SIGINT`, `SIGQUIT`, `SIGHUP`) are reset to their default action.
///
/// The subreaper attribute survives `exec`, so the shell (and whatever it execs into) adopts
/// every process the command orphans, and the command's processes stay one tree that can be
/// found from the shell's pid. Doing this in the shell rather than in the host leaves the host's
/// own children alone: a subreaper there would adopt the orphans of every command, which then
/// could only be told apart from the application's own children by guesswork. Register it
/// before a [`Sandbox`](crate::Sandbox)'s own `pre_exec`, which then finds a session leader and
/// leaves its terminal alone.
pub fn lead_session(
    command: &mut std::process::Command,
    subreaper: bool,
    terminal: bool,
    cgroups: &[OwnedFd],
) {
    use std::os::unix::process::CommandExt;
    // A fixed array, since the child may not allocate.
    let mut joins = [-1; 4];
    for (slot, fd) in joins.iter_mut().zip(cgroups) {
        *slot = fd.as_raw_fd();
    }
    // SAFETY: the closure runs in the forked child before `exec`, where only async-signal-safe
    // calls are allowed: it makes only system calls (`write` to each cgroup's `cgroup.procs`,
    // opened by the parent and still open in the child until `exec` closes it, `prctl`,
    // `setsid`, `ioctl`, `signal`) and allocates nothing (`from_raw_os_error` does not
    // allocate). A refused `prctl` (a seccomp filter, say) is ignored: the command still runs,
    // and its processes are still found through their marker and group; only orphans that
    // dropped both are not. Without its session the command would share the host's terminal,
    // and without its terminal a terminal command would misbehave, so those errors fail the
    // spawn.
    unsafe {
        command.pre_exec(move || {
            // `0` moves the writer into each cgroup, before it can start anything.
            for fd in joins.into_iter().filter(|fd| *fd >= 0) {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if subreaper {
                let _ = libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            }
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            if terminal && libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            // Interrupts as a terminal sends them, whatever the host was started with: a host
            // started in the background of a shell without job control (or by `nohup`) ignores
            // SIGINT, SIGQUIT (or SIGHUP), and an ignored signal stays ignored across `exec`, so
            // Ctrl-C in the command's terminal would do nothing.
            for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}
