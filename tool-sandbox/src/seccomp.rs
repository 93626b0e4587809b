//! The seccomp filter: system calls a confined command has no business making, refused with
//! `EPERM`, modes that make a file set-user-ID or set-group-ID, and Internet sockets when the
//! network is off.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

use crate::policy::Network;

/// System calls refused outright: debugging other processes and advising on their memory, the
/// kernel's administration (mounts, modules, kexec, keyrings, BPF, perf, clocks, host names, the
/// kernel log), watching other processes' file access (fanotify), hanging up the terminal,
/// namespace changes, and the interfaces that would get around the other rules (io_uring's own
/// socket and open operations, opening files by handle, the new mount API).
fn refused() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_process_madvise,
        libc::SYS_fanotify_init,
        libc::SYS_syslog,
        libc::SYS_vhangup,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_bpf,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_perf_event_open,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_userfaultfd,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_umount2]);
    calls.sort_unstable();
    calls.dedup();
    calls
}

/// System V IPC: shared memory segments, message queues and semaphores, keyed by number and
/// shared by every process of an IPC namespace.
const SYSV_IPC: &[i64] = &[
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
];

/// Every `CLONE_NEW*` flag: `unshare` and `clone` may not make namespaces (a user namespace
/// would give the command every capability inside it). `CLONE_NEWTIME` shares its bit with the
/// exit signal in `clone`, so it is only checked for `unshare`.
const NAMESPACE_FLAGS: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;
const CLONE_NEWTIME: u64 = 0x80;

fn target_arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| format!("seccomp filters are not built for the {} architecture", std::env::consts::ARCH))
}

/// Rules matching any call whose `arg` has one of `flags` set.
fn any_flag(arg: u8, flags: u64) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let mut rules = Vec::new();
    let mut bit = 1u64;
    while bit != 0 {
        if flags & bit != 0 {
            rules.push(SeccompRule::new(vec![SeccompCondition::new(
                arg,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )?])?);
        }
        bit <<= 1;
    }
    Ok(rules)
}

/// The `socket` calls refused when TCP may only reach the proxy: every family but Unix and
/// Internet sockets; every Internet socket type but `SOCK_STREAM` (the type is the low four bits
/// of the argument, the rest are flags); every protocol but 0 and `IPPROTO_TCP`.
fn proxy_socket_rules() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let arg = |index: u8, op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value as u64)
    };
    let mut rules = vec![SeccompRule::new(vec![
        arg(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
    ])?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        for kind in (0..16).filter(|&kind| kind != libc::SOCK_STREAM) {
            rules.push(SeccompRule::new(vec![
                arg(0, SeccompCmpOp::Eq, family)?,
                arg(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
            ])?);
        }
        rules.push(SeccompRule::new(vec![
            arg(0, SeccompCmpOp::Eq, family)?,
            arg(2, SeccompCmpOp::Ne, 0)?,
            arg(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
        ])?);
    }
    Ok(rules)
}

/// A condition on argument `index` of a system call.
fn arg(
    index: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(index, len, op, value)
}

/// The calls that change another process's limits, priority, I/O priority or scheduling: each
/// refused unless its process argument is 0 (the caller). A call naming the caller by its own
/// pid (or a thread of its own by its id: `pthread_setaffinity_np`) is refused too, since a
/// filter cannot know the caller's ids; programs name themselves with 0.
fn other_process_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, seccompiler::BackendError> {
    use SeccompCmpArgLen::{Dword, Qword};
    let not_self = |index: u8| arg(index, Dword, SeccompCmpOp::Ne, 0);
    let is = |index: u8, value: u64| arg(index, Dword, SeccompCmpOp::Eq, value);
    // `which` values of `setpriority` and `ioprio_set` that name every process of a user.
    const PRIO_USER: u64 = 2;
    const IOPRIO_WHO_USER: u64 = 3;
    let mut rules = vec![
        // `prlimit64(pid, resource, new, old)`: setting (`new` not null) another's limits; reading
        // them stays allowed.
        (
            libc::SYS_prlimit64,
            vec![SeccompRule::new(vec![not_self(0)?, arg(2, Qword, SeccompCmpOp::Ne, 0)?])?],
        ),
        // `setpriority(which, who, prio)`, `ioprio_set(which, who, ioprio)`: another process,
        // group or user, or with `who` 0, every process of the caller's user.
        (
            libc::SYS_setpriority,
            vec![SeccompRule::new(vec![not_self(1)?])?, SeccompRule::new(vec![is(0, PRIO_USER)?])?],
        ),
        (
            libc::SYS_ioprio_set,
            vec![SeccompRule::new(vec![not_self(1)?])?, SeccompRule::new(vec![is(0, IOPRIO_WHO_USER)?])?],
        ),
    ];
    for call in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        rules.push((call, vec![SeccompRule::new(vec![not_self(0)?])?]));
    }
    Ok(rules)
}

/// The set-user-ID and set-group-ID bits of a mode.
const SET_ID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];
/// `fchmodat2` (Linux 6.6): the same number on every architecture, as every call from 424 on.
const SYS_FCHMODAT2: i64 = 452;
/// The flags of `open` that make a file, and so use its mode: `O_CREAT`, and `O_TMPFILE`'s own
/// bit (without `O_DIRECTORY`, which it includes).
const CREATING_FLAGS: [u64; 2] = [libc::O_CREAT as u64, (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64];

/// The calls that would leave a set-user-ID or set-group-ID file behind, which other users of
/// the machine could run with the command's identity (root's, when it runs as root): `chmod`
/// and its kin with either bit in the mode; `mknod` and `open` making a file with one (a new
/// directory never gets them from its mode). Each refused with `EPERM`, as `chmod` answers an
/// owner who may not set them.
fn set_id_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, seccompiler::BackendError> {
    let has = |index: u8, bit: u64| arg(index, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit);
    // `mode` is argument `index`.
    let any_bit = |index: u8| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        SET_ID_BITS.iter().map(|&bit| SeccompRule::new(vec![has(index, bit)?])).collect()
    };
    // `flags` is argument `flags`, `mode` argument `mode`: only when the flags make a file.
    let creating = |flags: u8, mode: u8| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let mut rules = Vec::new();
        for creates in CREATING_FLAGS {
            for bit in SET_ID_BITS {
                rules.push(SeccompRule::new(vec![has(flags, creates)?, has(mode, bit)?])?);
            }
        }
        Ok(rules)
    };
    let mut rules = vec![
        (libc::SYS_fchmod, any_bit(1)?),
        (libc::SYS_fchmodat, any_bit(2)?),
        (SYS_FCHMODAT2, any_bit(2)?),
        (libc::SYS_mknodat, any_bit(2)?),
        (libc::SYS_openat, creating(2, 3)?),
    ];
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, any_bit(1)?),
        (libc::SYS_mknod, any_bit(1)?),
        (libc::SYS_creat, any_bit(1)?),
        (libc::SYS_open, creating(1, 2)?),
    ]);
    Ok(rules)
}

/// Compiles the filter for `network`, for this machine's architecture.
/// The system calls a shut-in helper makes (see [`helper_programs`]): reading and writing the
/// descriptors it has, its memory, its threads, signals to itself, time and sleep, random bytes.
fn helper_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_fcntl,
        libc::SYS_ppoll,
        libc::SYS_futex,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_sigaltstack,
        libc::SYS_tgkill,
        libc::SYS_restart_syscall,
        libc::SYS_getrandom,
        libc::SYS_gettid,
        libc::SYS_getpid,
        libc::SYS_getppid,
        libc::SYS_sched_getaffinity,
        libc::SYS_sched_yield,
        libc::SYS_set_robust_list,
        libc::SYS_rseq,
        libc::SYS_clock_nanosleep,
        libc::SYS_nanosleep,
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_gettimeofday,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.push(libc::SYS_poll);
    calls
}

/// The filters of a helper shut in by [`crate::shut_in`], which needs only the descriptors it
/// has, its memory and its threads: every other system call is refused with `EPERM` (no file
/// opened or looked at, no socket, no process, namespace or program, no other process reached,
/// no `ioctl`, no further filter), as are memory made executable, a new process (`clone`
/// without `CLONE_THREAD`, or with a namespace) and `prctl` but for a thread's name. The first
/// filter answers `clone3` with `ENOSYS`, whose arguments a filter cannot read: the C library
/// then makes its threads with `clone`. Loaded in this order (the second refuses `seccomp`).
pub(crate) fn helper_programs() -> Result<[Vec<sock_filter>; 2], String> {
    let arch = target_arch()?;
    let built = || -> Result<[Vec<sock_filter>; 2], seccompiler::BackendError> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            helper_calls().into_iter().map(|nr| (nr, Vec::new())).collect();
        let no_exec = |index: u8| {
            SeccompCondition::new(
                index,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(libc::PROT_EXEC as u64),
                0,
            )
        };
        rules.insert(libc::SYS_mmap, vec![SeccompRule::new(vec![no_exec(2)?])?]);
        rules.insert(libc::SYS_mprotect, vec![SeccompRule::new(vec![no_exec(2)?])?]);
        let thread = libc::CLONE_THREAD as u64;
        rules.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![
                SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(thread), thread)?,
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(NAMESPACE_FLAGS),
                    0,
                )?,
            ])?],
        );
        let named = [libc::PR_SET_NAME, libc::PR_GET_NAME].into_iter().map(|option| {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                option as u64,
            )?])
        });
        rules.insert(libc::SYS_prctl, named.collect::<Result<_, _>>()?);
        rules.insert(libc::SYS_clone3, Vec::new());
        let errno = |errno: i32| SeccompAction::Errno(errno as u32);
        let allowed = SeccompFilter::new(rules, errno(libc::EPERM), SeccompAction::Allow, arch)?;
        let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
        let clone3 = SeccompFilter::new(clone3, SeccompAction::Allow, errno(libc::ENOSYS), arch)?;
        Ok([BpfProgram::try_from(clone3)?, BpfProgram::try_from(allowed)?])
    };
    built().map_err(|e| format!("the seccomp filter could not be built: {e}"))
}

pub(crate) fn program(network: Network, own_ipc: bool) -> Result<Vec<sock_filter>, String> {
    let arch = target_arch()?;
    build(network, own_ipc, arch).map_err(|e| format!("the seccomp filter could not be built: {e}"))
}

fn build(
    network: Network,
    own_ipc: bool,
    arch: TargetArch,
) -> Result<Vec<sock_filter>, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused().into_iter().map(|nr| (nr, Vec::new())).collect();
    // Without an IPC namespace of its own (made with the mount namespace), a command would share
    // System V IPC with the host and every other process: refused.
    if !own_ipc {
        rules.extend(SYSV_IPC.iter().map(|&nr| (nr, Vec::new())));
    }
    rules.insert(libc::SYS_unshare, any_flag(0, NAMESPACE_FLAGS | CLONE_NEWTIME)?);
    rules.insert(libc::SYS_clone, any_flag(0, NAMESPACE_FLAGS)?);
    rules.extend(other_process_rules()?);
    rules.extend(set_id_rules()?);
    let request = |request: u64| arg(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request);
    // Pushing characters into a terminal's input: a command could type into the shell of the
    // terminal the tools were started from.
    #[allow(clippy::unnecessary_cast)] // `c_ulong` here, `c_int` on other C libraries.
    let mut ioctl: Vec<SeccompRule> = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64]
        .into_iter()
        .map(|r| SeccompRule::new(vec![request(r)?]))
        .collect::<Result<_, _>>()?;
    // Taking by force a terminal that is another session's controlling terminal (`TIOCSCTTY`
    // with 1; the kernel asks for `CAP_SYS_ADMIN` too, which commands no longer hold). With 0 it
    // takes only a terminal no session has, as `forkpty` does for the terminal it makes: allowed.
    ioctl.push(SeccompRule::new(vec![
        #[allow(clippy::unnecessary_cast)]
        request(libc::TIOCSCTTY as u64)?,
        arg(2, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)?,
    ])?);
    rules.insert(libc::SYS_ioctl, ioctl);
    let socket = match network {
        // Every family but Unix sockets: Internet, packet, netlink (as root it configures
        // interfaces), and the rest.
        Network::Off => vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
        // Only plain TCP, which Landlock judges (the proxy's port only), and Unix sockets: no
        // UDP or raw sockets, no other socket type, and no other protocol over a stream socket
        // (MPTCP and SCTP connect where Landlock's TCP rules do not look), and no other family.
        Network::Proxy { .. } => proxy_socket_rules()?,
        Network::On => Vec::new(),
    };
    if !socket.is_empty() {
        rules.insert(libc::SYS_socket, socket);
    }
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    let mut program: BpfProgram = filter.try_into()?;
    // `clone3` and `openat2` pass their flags (and `openat2` the new file's mode) in memory a
    // filter cannot read: answer ENOSYS, as a kernel without them would, so that programs fall
    // back to `clone` and `openat`, whose arguments the filter checks.
    let mut prefix = Vec::new();
    for call in [libc::SYS_clone3, libc::SYS_openat2] {
        prefix.extend([
            stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
            jump(BPF_JEQ_K, call as u32, 0, 1),
            stmt(BPF_RET_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        ]);
    }
    if arch == TargetArch::x86_64 {
        // x32 system calls carry the same architecture with bit 30 set in the number: refuse
        // them all rather than match each number twice.
        prefix.extend([
            stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
            jump(BPF_JGE_K, 0x4000_0000, 0, 1),
            stmt(BPF_RET_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ]);
    }
    // After the architecture check (three instructions, whose jump lands on the fourth), which
    // must come first: system call numbers mean nothing before it.
    program.splice(3..3, prefix);
    Ok(program)
}

/// `BPF_LD | BPF_W | BPF_ABS`.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JGE_K: u16 = 0x05 | 0x30;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_DATA_NR: u32 = 0;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_builds_for_every_network_and_both_architectures() {
        for network in [Network::Off, Network::Proxy { port: 3128 }, Network::On] {
            for (arch, own_ipc) in
                [TargetArch::x86_64, TargetArch::aarch64].into_iter().flat_map(|a| [(a, true), (a, false)])
            {
                let program = build(network, own_ipc, arch).unwrap();
                // The architecture check stays first, and kills on a foreign one.
                assert_eq!(program[2].k, libc::SECCOMP_RET_KILL_PROCESS);
                assert!(program.len() < 4096, "{}", program.len());
            }
        }
    }
}
